"""Many ranks on SYNTHETIC NCCL-style traces (``trnscope.testing.synth_ranks``), whose
every figure is known by construction: matching by Comms Id / Seq / order, the per
collective figures, mismatched sizes, a missing rank, a rank whose window opens one
collective later, imbalance, and the pure pieces (names, bus factors, the heat map and
lanes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from conftest import SAMPLES
from trnscope.cli.main import main
from trnscope.core.analysis.collectives import canonical_collective
from trnscope.core.analysis.contracts import RanksOut
from trnscope.core.analysis.rank_matching import BY_COMMS_ID, BY_ORDER, BY_SEQ
from trnscope.core.analysis.rank_view import LATE, collective_lanes, heat_map
from trnscope.core.analysis.ranks import bus_factor, reduce_ranks
from trnscope.core.formats import discover
from trnscope.core.formats.options import LoadOptions
from trnscope.core.opening.executors import ExecutorChoice
from trnscope.core.opening.ranks import analyse_ranks, rank_hints
from trnscope.testing.synth_ranks import (
    EPOCH_US,
    ISSUE_TO_KERNEL_US,
    Collective,
    RankPlan,
    message_bytes,
    write_collected,
    write_ranks,
)


def _analyse(folder: Path, workers: int = 1, step: int | None = None) -> RanksOut:
    document, _ = analyse_ranks(
        discover(folder).sources, LoadOptions(use_cache=False), ExecutorChoice(workers), step=step
    )
    return document


@pytest.mark.parametrize(("key", "level"), [("comms id", BY_COMMS_ID), ("seq", BY_SEQ), ("none", BY_ORDER)])
def test_figures_are_exact_whatever_the_key(tmp_path: Path, key: str, level: str) -> None:
    plan = RankPlan(held_back={(3, 1): 5_000}, key=key)
    write_ranks(tmp_path, plan)
    doc = _analyse(tmp_path)
    assert doc.world_size == 4 and [r.rank for r in doc.ranks] == [0, 1, 2, 3]
    assert len(doc.collectives) == plan.steps * len(plan.collectives)
    assert {c.matched_by for c in doc.collectives} == {level}
    origin = min(plan.step_start(0), plan.step_start(0))  # ProfilerStep#10 starts first
    for c in doc.collectives:
        step = c.step - plan.first_step
        spec = plan.collectives[c.index]
        arrivals = [plan.arrival(r, step, c.index) for r in range(4)]
        assert c.arrival_us == [a - origin for a in arrivals]
        assert c.start_skew_us == max(arrivals) - min(arrivals)
        assert c.latency_us == spec.latency_us
        assert c.end_skew_us == 0
        assert c.bytes == message_bytes(spec, 4)
        assert c.algo_bw_gbps == pytest.approx(c.bytes / (spec.latency_us * 1000))
        assert c.bus_bw_gbps == pytest.approx(c.algo_bw_gbps * bus_factor(spec.name, 4))
        assert c.wait_us == [max(arrivals) - a for a in arrivals]
        assert c.duration_us == [plan.end(step, c.index) - a - ISSUE_TO_KERNEL_US for a in arrivals]
        assert not c.problems
    held = next(c for c in doc.collectives if c.step == plan.first_step + 1 and c.index == 0)
    assert (held.last_rank, held.lateness_us) == (3, 5_000)
    top = doc.findings[0]
    assert (top.kind, top.rank, top.step, top.collective) == ("straggler", 3, plan.first_step + 1, held.id)
    assert top.evidence_us == 3 * 5_000  # what the three other ranks lost
    assert [f for f in doc.findings if f.kind == "straggler"] == [top]
    waits = {r.rank: {s.step: s.wait_us for s in r.steps} for r in doc.ranks}
    assert waits[0][plan.first_step + 1] == 5_000 and waits[3][plan.first_step + 1] == 0
    assert origin == EPOCH_US


def test_a_rank_late_in_every_step_is_one_straggler_finding(tmp_path: Path) -> None:
    """A DDP rank that sleeps before each backward pass was one finding per step, each
    "late in 3 steps": the list repeated it.  One finding per late rank: its worst step
    as the example, the others' loss over every step it was late as the evidence."""
    held = {(2, 0): 4_000, (2, 1): 6_000, (2, 2): 5_000}
    plan = RankPlan(held_back=held)
    write_ranks(tmp_path, plan)
    doc = _analyse(tmp_path)
    (late,) = [f for f in doc.findings if f.kind == "straggler"]
    assert (late.rank, late.step) == (2, plan.first_step + 1)  # its worst step: 6 ms
    assert late.evidence_us == 3 * (4_000 + 6_000 + 5_000)  # the three others, in every step
    assert (
        "arrived 6.000ms after" in late.message and "late in 3 steps, the others losing 45.000ms in all" in late.message
    )


@pytest.mark.parametrize(
    ("frame", "said"),
    [
        ("<built-in function sleep>", "most of it in <built-in function sleep> (5.990ms)"),
        ("\x1b]52;c;x\x07" + "f" * 500, "most of it in \x1b]52;c;x\x07ffff"),  # kept as is here, shortened:
    ],
)
def test_a_stragglers_idle_time_names_the_python_call_it_went_to(tmp_path: Path, frame: str, said: str) -> None:
    """With with_stack, a Python frame that ran no op spans the held-back time: the
    finding names it (a real DDP rank's read "most of it in <built-in function sleep>").
    A long name is shortened; the terminal's sanitiser sees the message where it is shown."""
    plan = RankPlan(held_back={(2, 1): 6_000}, idle_frames={(2, 1): frame})
    write_ranks(tmp_path, plan)
    (late,) = [f for f in _analyse(tmp_path).findings if f.kind == "straggler"]
    assert late.rank == 2 and "outside any op just before the call" in late.message
    assert said in late.message and "(Python, data loading" not in late.message
    assert len(late.message) < 600 and ("(509 characters)" in late.message) == (len(frame) > 100)


def test_a_straggler_held_back_by_its_dataloader_is_said_to_be(tmp_path: Path) -> None:
    """A fetch is an annotation: busy, so the rank looked late from "work that ran long".
    The time it spent fetching batches since its previous collective is the reason."""
    write_ranks(tmp_path, RankPlan(held_back={(2, 1): 6_000}, held_in_loader=frozenset({(2, 1)})))
    (late,) = [f for f in _analyse(tmp_path).findings if f.kind == "straggler"]
    assert late.rank == 2 and "it spent 5.990ms fetching batches from its DataLoader since its previous" in late.message


def test_a_straggler_whose_compute_ran_long_says_by_how_much(tmp_path: Path) -> None:
    """A rank whose kernels take 1.5 ms longer every step read "its work before the call
    ran long": its compute in the step against the other ranks' median says how much."""
    plan = RankPlan(extra_compute={3: 1_500}, steps=4)
    write_ranks(tmp_path, plan)
    (late,) = [f for f in _analyse(tmp_path).findings if f.kind == "straggler"]
    compute = plan.compute_us - 20 + 1_500  # the kernel's time: device compute
    assert (
        late.rank == 3
        and (f"its compute in step {late.step} took {compute / 1000:.3f}ms, 1.500ms more than the other ranks' median")
        in late.message
    )


def test_a_straggler_without_python_frames_says_what_idle_time_usually_is(tmp_path: Path) -> None:
    write_ranks(tmp_path, RankPlan(held_back={(2, 1): 6_000}))
    (late,) = [f for f in _analyse(tmp_path).findings if f.kind == "straggler"]
    assert "just before the call (Python, data loading, I/O or a sleep)" in late.message


def test_step_figures_and_overlap(tmp_path: Path) -> None:
    plan = RankPlan()
    write_ranks(tmp_path, plan)
    doc = _analyse(tmp_path)
    for r in doc.ranks:
        assert r.compute == "device"
        for s in r.steps:
            step = s.step - plan.first_step
            assert s.wall_us == plan.step_end(step) - plan.step_start(step)
            assert s.compute_us == plan.compute_us - 20  # the GEMM kernel
            comm = sum(plan.end(step, k) - plan.arrival(0, step, k) - ISSUE_TO_KERNEL_US for k in range(2))
            assert s.comm_us == comm
            assert s.overlap_pct == 0.0  # the kernels run one after the other
    assert any(f.kind == "low_overlap" for f in doc.findings)


def test_mismatched_sizes_are_said(tmp_path: Path) -> None:
    write_ranks(tmp_path, RankPlan(wrong_size={(1, 0, 0): 999}))
    doc = _analyse(tmp_path)
    first = doc.collectives[0]
    # the odd one out is named first, against what the others agree on
    spec = RankPlan().collectives[0]
    expected = f"input elements differs (rank 1: 999; 3 other ranks: {spec.nelems})"
    assert expected in first.problems, first.problems
    assert any("disagree between ranks" in w for w in doc.warnings)


@pytest.mark.parametrize(("key", "lowered"), [("none", True), ("seq", False)])
def test_a_straggler_at_a_collective_the_ranks_disagree_about_is_in_doubt(
    tmp_path: Path, key: str, lowered: bool
) -> None:
    # rank 2 is late at step 1's all-reduce; alone, that is a straggler of one severity
    plan = RankPlan(held_back={(2, 1): 5_000}, key=key)
    write_ranks(tmp_path / "agree", plan)
    agreed = next(f for f in _analyse(tmp_path / "agree").findings if f.kind == "straggler")
    assert "disagree" not in agreed.message
    # … and when that rank's call has another size, the ranks disagree about what it is
    write_ranks(tmp_path / "odd", RankPlan(held_back={(2, 1): 5_000}, key=key, wrong_size={(2, 1, 0): 999}))
    doubted = next(f for f in _analyse(tmp_path / "odd").findings if f.kind == "straggler")
    assert (doubted.rank, doubted.step, doubted.evidence_us) == (agreed.rank, agreed.step, agreed.evidence_us)
    assert "the ranks disagree about this collective (input elements differs (rank 2: 999;" in doubted.message
    severities = ["low", "medium", "high"]
    if lowered:  # matched by position only: the lateness may be between two different calls
        assert "matched by order in step these may be different calls" in doubted.message
        assert severities.index(doubted.severity) == max(severities.index(agreed.severity) - 1, 0)
    else:  # the same sequence number: the program called mismatched collectives
        assert "a mismatched call in the program" in doubted.message
        assert doubted.severity == agreed.severity


def test_a_straggler_is_shown_at_a_collective_the_ranks_agree_about(tmp_path: Path) -> None:
    # rank 1 is late at both collectives of a step, later at the first, whose sizes the
    # ranks disagree about: the finding's example is the second, which they call alike
    plan = RankPlan(key="none", late_call={(1, 1, 0): 9_000, (1, 1, 1): 6_000}, wrong_size={(1, 1, 0): 999})
    write_ranks(tmp_path, plan)
    doc = _analyse(tmp_path)
    (late,) = [f for f in doc.findings if f.kind == "straggler"]
    shown = doc.collectives[late.collective]
    assert (late.rank, shown.name, shown.problems) == (1, "all_gather", [])
    assert "and 1 more collective" in late.message and "disagree" not in late.message
    assert late.evidence_us == 3 * 9_000 + 3 * 6_000  # the three others waited at both
    # without the disagreement, the later arrival is the example
    write_ranks(tmp_path / "alike", RankPlan(key="none", late_call={(1, 1, 0): 9_000, (1, 1, 1): 6_000}))
    (alike,) = [f for f in _analyse(tmp_path / "alike").findings if f.kind == "straggler"]
    assert _analyse(tmp_path / "alike").collectives[alike.collective].name == "all_reduce"


def test_traces_of_other_runs_are_not_compared(tmp_path: Path) -> None:
    """A folder of unrelated traces read as ranks (HTA's and TraceLens's, each some job's
    rank): one was 46,639,634 s "late" at a collective.  Ranks that share no moment are
    other runs: no finding compares them, and the warnings say why."""
    from trnscope.core.analysis.rank_view import no_findings_text

    day_us = 86_400 * 10**6
    a = RankPlan(world=2, held_back={(1, 1): 5_000})
    b = RankPlan(world=2, held_back={(1, 1): 5_000}, epoch_us=EPOCH_US + 3 * day_us)
    write_ranks(tmp_path / "a", a)
    write_collected(tmp_path / "together", [(a, 0, "rank0.json"), (b, 1, "rank1.json")])
    apart = _analyse(tmp_path / "together")
    assert [f.kind for f in apart.findings if f.kind in ("straggler", "imbalance", "slow_collective")] == []
    (said,) = [w for w in apart.warnings if w.startswith("the traces share no moment")]
    assert "rank 0 ends" in said and "before rank 1 begins" in said and "3.0 days" in said
    assert "share no moment" in no_findings_text(msgspec.structs.replace(apart, findings=[]))
    # the same two ranks of one run: compared, and rank 1 held the other back
    alike = _analyse(tmp_path / "a")
    assert any(f.kind == "straggler" and f.rank == 1 for f in alike.findings)
    assert not any("share no moment" in w for w in alike.warnings)
    assert "noise floor" in no_findings_text(msgspec.structs.replace(alike, findings=[]))


def test_traces_that_name_different_world_sizes_are_said(tmp_path: Path) -> None:
    write_collected(tmp_path, [(RankPlan(world=2), 0, "rank0.json"), (RankPlan(world=4), 1, "rank1.json")])
    doc = _analyse(tmp_path)
    assert "the traces give different world sizes (2, 4): they are not all one job's ranks" in doc.warnings
    assert not any("ranks given" in w for w in doc.warnings)


def test_a_missing_rank_is_said_and_the_rest_analysed(tmp_path: Path) -> None:
    write_ranks(tmp_path, RankPlan(skip_ranks=frozenset({2}), held_back={(1, 0): 4_000}))
    doc = _analyse(tmp_path)
    assert doc.world_size == 4 and [r.rank for r in doc.ranks] == [0, 1, 3]
    assert any("3 of 4 ranks given" in w for w in doc.warnings)
    assert doc.findings[0].rank == 1 and doc.collectives[0].ranks == [0, 1, 3]
    # the median of the two others is their mean: exact in integer ns (a float of Unix ns
    # is only good to 256 ns), so the lateness is the 4 ms it was held back, to the ns
    assert doc.collectives[0].lateness_us == 4_000


def test_a_window_that_opens_one_collective_later_is_aligned(tmp_path: Path) -> None:
    plan = RankPlan(key="none", late_window=frozenset({1}), held_back={(2, 2): 3_000})
    write_ranks(tmp_path, plan)
    doc = _analyse(tmp_path)
    first_step = [c for c in doc.collectives if c.step == plan.first_step]
    assert [(c.name, c.ranks) for c in sorted(first_step, key=lambda c: c.index)] == [
        ("all_reduce", [0, 2, 3]),
        ("all_gather", [0, 1, 2, 3]),
    ]
    assert all(not c.problems for c in doc.collectives)
    assert any("aligned by name" in w for w in doc.warnings)
    assert doc.findings[0].rank == 2 and doc.findings[0].step == plan.first_step + 2


def test_imbalance_names_the_slow_computing_rank(tmp_path: Path) -> None:
    write_ranks(tmp_path, RankPlan(extra_compute={1: 1_500}, world=4))
    doc = _analyse(tmp_path)
    imbalance = [f for f in doc.findings if f.kind == "imbalance"]
    assert [f.rank for f in imbalance] == [1]
    assert imbalance[0].evidence_us == 3 * 1_500
    assert "3 of 3 steps" in imbalance[0].message


def test_pool_and_this_process_agree_and_step_filter(tmp_path: Path) -> None:
    write_ranks(tmp_path, RankPlan(held_back={(0, 2): 2_500}))
    assert _analyse(tmp_path, workers=1) == _analyse(tmp_path, workers=3)
    only = _analyse(tmp_path, step=12)
    assert {c.step for c in only.collectives} == {12} and all(len(r.steps) == 1 for r in only.ranks)
    with pytest.raises(ValueError, match="no ProfilerStep#99"):
        _analyse(tmp_path, step=99)


def test_cli_json_contract_and_a_bad_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_ranks(tmp_path, RankPlan(held_back={(3, 1): 5_000}))
    (tmp_path / "rank9.json").write_text('{"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": 1')  # cut short
    assert main(["ranks", str(tmp_path), "--format", "json", "--workers", "2", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for key in ("world_size", "ranks", "collectives", "findings", "warnings", "schema_version"):
        assert key in doc
    assert set(doc["ranks"][0]["steps"][0]) == {"step", "wall_us", "compute_us", "comm_us", "wait_us", "overlap_pct"}
    assert {"id", "name", "group", "step", "index", "bytes", "ranks", "arrival_us", "start_skew_us", "end_skew_us",
            "latency_us", "last_rank", "lateness_us", "algo_bw_gbps", "bus_bw_gbps"} <= set(doc["collectives"][0])  # fmt: skip
    assert set(doc["findings"][0]) == {
        *("kind", "severity", "message", "rank", "step", "collective", "evidence_us"),
        *("onward_collectives", "onward_us", "late_steps"),
    }
    assert doc["findings"][0]["rank"] == 3
    assert main(["ranks", str(tmp_path / "nothing-here")]) == 2
    assert "nothing-here" in capsys.readouterr().err


def test_every_rank_unreadable_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for k in range(2):
        (tmp_path / f"rank{k}.json").write_text('{"traceEvents": []}')
    assert main(["ranks", str(tmp_path)]) in (0, 2)
    err = capsys.readouterr()
    assert "Traceback" not in err.err


def test_an_unreachable_scheduler_is_one_line(tmp_path: Path) -> None:
    """(In a child process: a Dask client leaves its event-loop thread behind.)"""
    write_ranks(tmp_path, RankPlan(world=2))
    run = subprocess.run(
        [sys.executable, "-m", "trnscope", "ranks", str(tmp_path), "--scheduler", "tcp://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TRNSCOPE_DASK_TIMEOUT": "1"},
    )
    assert run.returncode == 2
    assert "Dask" in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_names_factors_and_hints() -> None:
    assert canonical_collective("c10d::allreduce_") == "all_reduce"
    assert canonical_collective("ncclDevKernel_AllGather_RING_LL(ncclDevComm*)") == "all_gather"
    assert canonical_collective("ncclKernel_ReduceScatter_RING_LL_Sum_float") == "reduce_scatter"
    assert canonical_collective("c10d::_reduce_scatter_base_") == "reduce_scatter"
    assert canonical_collective("gloo:all_gather") == "all_gather"
    assert canonical_collective("c10d::alltoall_base_") == "all_to_all"
    assert canonical_collective("aten::mm") == ""
    assert bus_factor("all_reduce", 8) == pytest.approx(14 / 8)
    assert bus_factor("all_gather", 8) == pytest.approx(7 / 8)
    assert bus_factor("broadcast", 8) == 1.0
    from trnscope.core.formats import SourceRef

    assert rank_hints([SourceRef("rank3", "a"), SourceRef("rank1", "b")]) == [3, 1]
    assert rank_hints([SourceRef("x", "a"), SourceRef("y", "b")]) == [0, 1]
    assert rank_hints([SourceRef("pid 9001", "a"), SourceRef("pid 7", "b")]) == [1, 0]


def test_heat_map_and_lanes_show_the_late_rank(tmp_path: Path) -> None:
    write_ranks(tmp_path, RankPlan(held_back={(3, 1): 5_000}))
    doc = _analyse(tmp_path)
    rows, bins = heat_map(doc, 40)
    assert bins == [[10], [11], [12]]
    late = {row.rank: row.cells for row in rows}
    assert late[3][1] == LATE and all(late[r][1] == "█" for r in (0, 1, 2))
    held = next(c for c in doc.collectives if c.step == 11 and c.index == 0)
    lanes, _, _ = collective_lanes(held, 60)
    starts = {lane.rank: lane.text.index("▶") for lane in lanes}
    assert starts[3] > 40 and all(starts[r] < 5 for r in (0, 1, 2))
    assert [lane.rank for lane in lanes if lane.late] == [3]
    assert all(len(lane.text) == 60 for lane in lanes)
    # binned when steps outnumber columns
    rows, bins = heat_map(doc, 2)
    assert len(bins) == 2 and sum(len(b) for b in bins) == 3


def test_reduce_is_independent_of_order(tmp_path: Path) -> None:
    write_ranks(tmp_path, RankPlan(held_back={(2, 0): 3_000}))
    _, summaries = analyse_ranks(discover(tmp_path).sources, LoadOptions(use_cache=False), ExecutorChoice(1))
    assert reduce_ranks(summaries) == reduce_ranks(list(reversed(summaries)))


def test_neuron_ranks_match_cc_running_across_process_folders(tmp_path: Path) -> None:
    """SYNTHETIC Neuron profile of three processes (explorer JSON export): the system
    traces' cc_running events are matched by order, and the late process is named."""
    from trnscope.testing.synth_neuron import SynthOptions, write_layout

    write_layout(
        tmp_path, "explorer_json", ranks=3, options=SynthOptions(collectives=2, collective_late=(5001, 1, 3_000_000))
    )
    doc = _analyse(tmp_path)
    assert len(doc.ranks) == 3 and len(doc.collectives) == 6
    assert all(c.ranks == [0, 1, 2] and c.latency_us == 200 for c in doc.collectives)
    late = max(doc.collectives, key=lambda c: c.start_skew_us)
    assert late.last_rank == 1
    assert late.lateness_us == pytest.approx(3_000, abs=0.2)  # the device clock's conversion: ns apart
    top = doc.findings[0]
    assert (top.kind, top.rank, top.collective) == ("straggler", 1, late.id)
    assert top.evidence_us == pytest.approx(6_000, abs=0.5)


def test_collective_tables_keep_every_call_and_join_exactly() -> None:
    from trnscope.core.analysis.collective_table import CollectiveTable
    from trnscope.core.analysis.collectives import CollectiveCall

    def call(name: str, group: str, arrival: int, nelems: int, dtype: str) -> CollectiveCall:
        return CollectiveCall(name, f"c10d::{name}", group, 3, "", 10, 0, arrival, arrival + 5, -1, -1, nelems,
                              nelems, dtype, 4, 2, 7, "[[4]]", 9)  # fmt: skip

    calls = [call("all_reduce", "0", 1 << 61, 1024, "Float"), call("all_gather", "1", 5, 10**30, "")]
    table = CollectiveTable.from_calls(calls)
    assert table.call(0) == calls[0]
    assert table.call(1).in_nelems == -1  # beyond int64: unknown, as a missing count is
    assert table.message_bytes().tolist() == [4096, -1]
    other = CollectiveTable.from_calls([call("broadcast", "0", 7, 3, "Half")])
    joined = CollectiveTable.concat([table, other])
    assert [joined.call(k).name for k in range(3)] == ["all_reduce", "all_gather", "broadcast"]
    assert joined.call(2).group == "0" and joined.call(2).dtype == "Half"
    assert len(CollectiveTable.concat([])) == 0 and len(CollectiveTable.from_calls([])) == 0


def test_json_written_in_pieces_is_the_same_document(tmp_path: Path) -> None:
    from trnscope.core.analysis.contracts import encode_bytes, encode_chunks

    write_ranks(tmp_path, RankPlan(held_back={(1, 1): 3_000}))
    doc = _analyse(tmp_path)
    doc.warnings.append("a C1 control \x9b[31m and DEL \x7f from a file name")
    whole = encode_bytes(doc)
    assert b"".join(encode_chunks(doc)) == whole
    assert b"\\u009b" in whole and b"\\u007f" in whole and b"\x9b" not in whole
    assert json.loads(whole)["collectives"][0]["ranks"] == [0, 1, 2, 3]
    doc.collectives.clear()
    assert b"".join(encode_chunks(doc)) == encode_bytes(doc)


def test_hostile_rank_numbers_and_collective_args_are_one_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ranks and world sizes no job has (2**70, "one", 10**40), sizes past int64, a
    float Seq, a list as Comms Id, escapes in a group name: an answer, never a crash."""
    write_ranks(tmp_path, RankPlan())
    for k, path in enumerate(sorted(tmp_path.glob("*.json"))):
        document = json.loads(path.read_text())
        for event in document["traceEvents"]:
            args = event.get("args")
            if isinstance(args, dict) and "Seq" in args:
                args.update(
                    [
                        {"In msg nelems": 10**30, "Out msg nelems": -5},
                        {"Seq": 1.5, "dtype": {"x": [1]}},
                        {"Comms Id": [1, 2], "Group size": "many", "Process Group Name": "\x1b[31mred\x9b"},
                        {"Seq": 10**25},
                    ][k].items()
                )
        document["distributedInfo"] = [
            {"rank": 0, "world_size": 4},
            {"rank": "one", "world_size": 10**40},
            {"rank": 2**70, "world_size": -3},
            {"rank": 3, "world_size": 4},
        ][k]
        path.write_text(json.dumps(document))
    assert main(["ranks", str(tmp_path), "--no-cache", "--format", "json"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert "\x1b" not in out and "\x9b" not in out
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2, 3]  # the file order: the traces' own are unusable
    assert doc["world_size"] == 4 and doc["collectives"]
    assert main(["ranks", str(tmp_path), "--no-cache"]) == 0


def test_a_rank_file_that_is_no_trace_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_ranks(tmp_path, RankPlan(world=4))
    (tmp_path / "rank2.json").write_text("")  # the rank died before writing anything
    (tmp_path / "rank3.json").write_text('{"traceEvents": 5}')  # cut into something else
    assert main(["ranks", str(tmp_path), "--no-cache", "--format", "json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert any("is not one and was not read" in w and "rank2" in w for w in warnings), warnings
    assert any(w.startswith("left out: rank3") for w in warnings), warnings
    assert any("2 of 4 ranks given" in w for w in warnings), warnings


def test_text_answer_fits_the_terminal_and_sizes_read_unambiguously(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from trnscope.core.base.units import fmt_size

    assert [fmt_size(v) for v in (512, 1024, 65536, 1_310_720, 1 << 40)] == [
        "512 B", "1.00 KiB", "64.0 KiB", "1.25 MiB", "1.00 TiB",
    ]  # fmt: skip
    write_ranks(tmp_path, RankPlan(held_back={(1, 1): 3_000}))
    for width in (40, 60, 80):
        monkeypatch.setenv("COLUMNS", str(width))
        assert main(["ranks", str(tmp_path), "--no-cache"]) == 0
        out = capsys.readouterr().out
        assert all(len(line) <= width for line in out.splitlines()), max(out.splitlines(), key=len)
        # the skew is never left out; what is, is named
        header = next(line for line in out.splitlines() if line.lstrip().startswith("id "))
        assert "skew" in header and ("size" in header or f"hidden at {width} columns:" in out)
    assert fmt_size(message_bytes(RankPlan().collectives[0], 4)) in out and " Kb " not in out


def test_ranks_text_of_a_profile_without_matched_collectives_reads_whole(monkeypatch, capsys) -> None:
    """The SYNTHETIC Neuron session's ranks: the headline says no collectives were
    matched (it said "0 collectives matched by —"), the device-profile warning is a whole
    sentence (it ended "…cc_running events are"), and one hidden step is "1 faster step"."""
    sample = Path(__file__).resolve().parent.parent / "sample_traces" / "trn_synthetic_rmsnorm_session"
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["ranks", str(sample), "--no-cache"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "no collectives matched;" in out and "matched by —" not in out
    assert "the system trace's cc_running events are matched instead, where the profile has them" in out
    assert "1 faster step not shown" in out and "1 faster steps" not in out


def test_bandwidths_read_in_three_digits_without_an_exponent() -> None:
    """``fmt_rate`` (bus bandwidth in ``ranks``, its pane and its findings): three
    significant digits in the unit that holds them — a figure rounding to 1,000 goes to
    the next unit (``:.3g`` wrote 999.7 GB/s as "1e+03 GB/s"), terabytes included."""
    from trnscope.core.base.units import fmt_rate

    cases = {1.04: "1.04 GB/s", 0.389: "389 MB/s", 154e-6: "154 KB/s", 2.9e3: "2.9 TB/s", 999.7: "1 TB/s"}
    cases |= {999.4: "999 GB/s", 5e6: "5,000 TB/s", 0.5e-9: "0.5 B/s"}
    assert {x: fmt_rate(x) for x in cases} == cases
    assert not any("e" in fmt_rate(10.0**k) for k in range(-12, 9))


def test_process_groups_are_read_from_pg_config_and_anything_else_is_passed_over() -> None:
    from trnscope.core.analysis.collectives import MAX_GROUPS, process_groups_of

    config = [
        {"pg_name": "0", "ranks": [0, 1, 2, 3]},
        {"pg_name": "1", "ranks": [0, 1]},
        {"pg_name": "1", "ranks": [0, 2]},  # a name given twice: the first
        {"pg_name": "3", "ranks": [0, 9]},  # a rank outside the world
        {"pg_name": "4", "ranks": [0, 0]},  # repeated
        {"pg_name": "5", "ranks": [0, True]},  # not a whole rank
        {"pg_name": "6", "ranks": "0,2"},
        {"pg_name": True, "ranks": [0, 1]},
        ["not", "a", "dict"],
        {"pg_name": "7", "ranks": []},
        {"pg_name": "8", "ranks": [2, 3]},  # rank 0 is not in it
        {"pg_name": 9, "ranks": [0, 3]},
    ]
    assert process_groups_of({"pg_config": config}, 0, 4) == {"0": [0, 1, 2, 3], "1": [0, 1], "9": [0, 3]}
    assert process_groups_of({"pg_config": config}, 0, -1) == {}  # the world size unknown
    assert process_groups_of({"pg_config": config}, -1, 4) == {}  # the rank unknown
    assert process_groups_of({"pg_config": "[0, 1]"}, 0, 4) == {}
    many = [{"pg_name": str(k), "ranks": [0, k + 1]} for k in range(500)]
    assert len(process_groups_of({"pg_config": many}, 0, 1000)) == MAX_GROUPS


def test_gloo_worker_threads_are_given_groups_only_where_their_order_can_say() -> None:
    """Worker threads by id, in equal runs, are the rank's groups in the order of their
    names; nothing where that cannot hold."""
    from types import SimpleNamespace

    import numpy as np

    from trnscope.core.analysis.collectives import _gloo_thread_groups

    def trace(info: object, tids: list[str]) -> SimpleNamespace:
        return SimpleNamespace(
            metadata={"distributedInfo": info},
            events=SimpleNamespace(thread=np.arange(len(tids))),
            threads=[SimpleNamespace(tid=t) for t in tids],
        )

    config = [
        {"pg_name": "10", "ranks": [0, 1]},
        {"pg_name": "0", "ranks": [0, 1, 2, 3]},
        {"pg_name": "3", "ranks": [2, 3]},
    ]
    info = {"backend": "gloo", "rank": 0, "world_size": 4, "pg_config": config}
    rows = np.arange(4)
    # threads 0..3 started in the order 18509, 18507, 18525, 18524: the world's two, then the pair's
    assert _gloo_thread_groups(trace(info, ["18509", "18507", "18525", "18524"]), rows) == {
        0: ("0", 4),
        1: ("0", 4),
        2: ("10", 2),
        3: ("10", 2),
    }
    assert _gloo_thread_groups(trace(info, ["5", "6", "7"]), np.arange(3)) == {}  # 3 threads for 2 groups
    assert _gloo_thread_groups(trace({**info, "backend": "nccl"}, ["1", "2"]), np.arange(2)) == {}
    assert _gloo_thread_groups(trace({**info, "rank": 2}, ["1", "2"]), np.arange(2)) == {0: ("0", 4), 1: ("3", 2)}
    named = [*config[:2], {"pg_name": "tp", "ranks": [0, 1]}]
    assert _gloo_thread_groups(trace({**info, "pg_config": named}, ["1", "2", "3"]), np.arange(3)) == {}
    assert _gloo_thread_groups(trace({**info, "pg_config": "0"}, ["1", "2"]), np.arange(2)) == {}
    assert _gloo_thread_groups(trace(info, ["a", "b"]), np.arange(2)) == {}  # ids that are no numbers
    assert _gloo_thread_groups(trace(config, ["1", "2"]), np.arange(2)) == {}  # distributedInfo not a dict


def test_a_delay_is_carried_in_the_order_collectives_could_start() -> None:
    """Rank 3 holds up the pair [2, 3] (its own lateness); then the column [1, 3], whose
    first arrival (rank 1's) came before the pair's first (rank 2's): by first arrival
    the column was met before rank 3's delay was known, and nothing was carried."""
    from types import SimpleNamespace

    import numpy as np

    from trnscope.core.analysis.ranks import _carried, _Figures

    def figures(ranks: list[int], arrival: list[int], last: int, lateness: int, own: int) -> _Figures:
        arrived = np.array(arrival, dtype=np.int64)
        return _Figures(
            ranks=np.array(ranks),
            arrival=arrived,
            wait=arrived.max() - arrived,
            duration=np.zeros(2, dtype=np.int64),
            end=arrived.max() + np.zeros(2, dtype=np.int64),
            start_skew=int(arrived.max() - arrived.min()),
            end_skew=0,
            latency=0,
            last_rank=last,
            last_row=0,
            lateness=lateness,
            own_lateness=own,
            bytes=0,
        )

    ms = 1_000_000
    column = figures([1, 3], [5 * ms, 85 * ms], last=3, lateness=80 * ms, own=0)  # first arrival 5 ms
    pair = figures([2, 3], [6 * ms, 84 * ms], last=3, lateness=78 * ms, own=78 * ms)  # first arrival 6 ms
    matched = SimpleNamespace(step=np.array([2, 2]))
    never = SimpleNamespace(threshold=lambda rank: 0)
    assert _carried([column, pair], matched, 5 * ms, never) == {(3, 2): (1, 80 * ms)}  # type: ignore[arg-type]


def test_waiting_for_a_straggler_is_not_low_overlap(tmp_path: Path) -> None:
    """Rank 3 is held back 8 ms every step: the other three wait in their first
    collective for it, 8 ms of each 20 ms step.  That wait is the straggler's finding;
    counted as communication nothing overlapped, it also read "low_overlap" on the
    median rank (exposed ≈ 8 ms a step).  What the collectives themselves took is under
    10% of the step: no low_overlap.  The same job without the straggler keeps its
    overlap figures, and its finding where the collectives are long."""
    held = {(3, step): 8_000 for step in range(3)}
    write_ranks(tmp_path / "late", RankPlan(held_back=held))
    doc = _analyse(tmp_path / "late")
    kinds = [f.kind for f in doc.findings]
    assert "straggler" in kinds and "low_overlap" not in kinds, [(f.kind, f.message) for f in doc.findings]
    assert all(s.wait_us >= 8_000 for r in doc.ranks if r.rank != 3 for s in r.steps)
    slow = (Collective(latency_us=3_000), Collective("all_gather", 1 << 18, "BFloat16", 300))
    write_ranks(tmp_path / "slow", RankPlan(held_back=held, collectives=slow))
    low = next(f for f in _analyse(tmp_path / "slow").findings if f.kind == "low_overlap")
    assert "exposed besides waiting for late ranks" in low.message


def test_a_rank_cut_short_says_so_in_the_jobs_warnings(tmp_path: Path, capsys) -> None:
    """A rank whose file ends mid-array (the job was killed while it wrote) loads what
    it can; the job's warnings say which rank lost what, as its own summary would."""
    import gzip
    import shutil

    job = tmp_path / "job"
    shutil.copytree(SAMPLES / "cuda_ddp_gloo_session", job)
    trace = job / "rank1" / "train_ddp.pt.trace.json.gz"
    whole = gzip.decompress(trace.read_bytes())
    trace.write_bytes(gzip.compress(whole[: len(whole) * 6 // 10]))
    assert main(["ranks", str(job), "--format", "json", "--no-cache", "--workers", "1"]) == 0
    document = json.loads(capsys.readouterr().out)
    said = [w for w in document["warnings"] if w.startswith("rank 1: trace is truncated")]
    assert len(said) == 1, document["warnings"]
    assert not any(w.startswith("rank 0:") for w in document["warnings"])
    assert document["ranks"][1]["warnings"][0].startswith("trace is truncated")
