"""``trnscope ranks`` on REAL multi-rank traces: torch.distributed on gloo, four
processes on 127.0.0.1, rank 2 held back 80 ms before its first collective of
ProfilerStep#2.  Every figure is checked against values computed here, independently,
from the raw JSON (plain ``json``, no trnscope code); the same answer comes from this
process, a process pool, and a real Dask LocalCluster on loopback."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

pytest.importorskip("torch")

from trnscope.capture.gloo_ranks import ACTIVE_STEPS
from trnscope.cli.main import main
from trnscope.core.analysis.contracts import RanksOut, encode
from trnscope.core.formats import discover
from trnscope.core.formats.options import LoadOptions
from trnscope.core.opening.executors import ExecutorChoice
from trnscope.core.opening.ranks import analyse_ranks

pytestmark = [pytest.mark.torch, pytest.mark.slow]

HELD_RANK, HELD_STEP, HELD_MS = 2, 2, 80.0
WORLD = 4


def _recorded(out: Path, held_rank: int = HELD_RANK, layout: str = "") -> Path:
    """A real gloo job recorded into ``out`` (a process of its own: torch.distributed
    and the profiler stay out of the test process); ``layout``: "", "pairs" or "grid"."""
    code = (
        "from pathlib import Path; from trnscope.capture.gloo_ranks import record; "
        f"record(Path({str(out)!r}), {WORLD}, {held_rank}, {HELD_STEP}, {HELD_MS}"
        + (f", {layout}=True)" if layout else ")")
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=240, capture_output=True)
    assert len(list(out.glob("rank*.json"))) == WORLD
    return out


@pytest.fixture(scope="module")
def gloo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _recorded(tmp_path_factory.mktemp("gloo_ranks"))


def _events(folder: Path, rank: int) -> list[dict[str, Any]]:
    document = json.loads((folder / f"rank{rank}.json").read_text())
    assert document["distributedInfo"]["rank"] == rank
    return [e for e in document["traceEvents"] if e.get("ph") == "X"]


def _step(events: list[dict[str, Any]], number: int) -> dict[str, Any]:
    return next(e for e in events if e["name"] == f"ProfilerStep#{number}")


def _calls(events: list[dict[str, Any]], number: int) -> list[dict[str, Any]]:
    """The rank's c10d calls inside ProfilerStep#number, in time order."""
    step = _step(events, number)
    inside = [
        e
        for e in events
        if e["name"].startswith("c10d::")
        and step["ts"] <= e["ts"] < step["ts"] + step["dur"]
        and e["tid"] == step["tid"]
    ]
    return sorted(inside, key=lambda e: e["ts"])


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _length(runs: list[tuple[float, float]], lo: float, hi: float) -> float:
    return sum(max(0.0, min(e, hi) - max(s, lo)) for s, e in runs)


def _analyse(folder: Path, choice: ExecutorChoice) -> RanksOut:
    document, _ = analyse_ranks(discover(folder).sources, LoadOptions(use_cache=False), choice)
    return document


@pytest.fixture(scope="module")
def document(gloo_folder: Path) -> RanksOut:
    return _analyse(gloo_folder, ExecutorChoice(workers=2))


def test_the_held_back_rank_is_named_at_its_collective(document: RanksOut) -> None:
    top = document.findings[0]
    assert (top.kind, top.rank, top.step) == ("straggler", HELD_RANK, HELD_STEP)
    collective = document.collectives[top.collective]
    assert (collective.name, collective.step, collective.index, collective.last_rank) == (
        "all_reduce",
        HELD_STEP,
        0,
        HELD_RANK,
    )
    assert "outside any op" in top.message  # it slept: the idle gap is the evidence
    others = [f for f in document.findings if f.kind == "straggler" and f.rank != HELD_RANK]
    assert not others, [f.message for f in others]


def test_one_process_group_raises_no_doubt_about_groups(document: RanksOut) -> None:
    assert not any("process groups smaller than the job" in w for w in document.warnings)
    assert "name no process group" not in document.findings[0].message


@pytest.fixture(scope="module")
def pairs_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same job, each pair of ranks also all-reducing in a group of its own (as
    tensor parallelism does): gloo's traces do not say which group a call was in."""
    return _recorded(tmp_path_factory.mktemp("gloo_pairs"), layout="pairs")


def test_groups_the_calls_do_not_name_are_read_from_glos_worker_threads(pairs_folder: Path) -> None:
    """Matched by order in step, rank 0's pair all-reduce ([0, 1]) and rank 2's ([2, 3])
    were one "collective".  Each call's group is now read from the gloo worker thread
    that ran it, and kept because every collective so matched holds exactly its group's
    ranks (by each rank's distributedInfo.pg_config, read here independently)."""
    infos = [json.loads((pairs_folder / f"rank{r}.json").read_text())["distributedInfo"] for r in range(WORLD)]
    members = {g["pg_name"]: g["ranks"] for info in infos for g in info["pg_config"]}
    assert sorted(members.values()) == [[0, 1], [0, 1, 2, 3], [2, 3]]
    pairs = _analyse(pairs_folder, ExecutorChoice(workers=1))
    assert any("read from the gloo worker thread that ran it" in w for w in pairs.warnings)
    assert not any("process groups smaller than the job" in w for w in pairs.warnings)
    # per step: the world's all_reduce, all_gather and broadcast, and one all_reduce per pair
    assert pairs.process_groups == members  # (what the JSON names a collective's group by)
    assert len(pairs.collectives) == ACTIVE_STEPS * 5
    for c in pairs.collectives:
        assert c.ranks == members[c.group], (c.name, c.step, c.group, c.ranks)
        if len(c.ranks) == 2:
            assert c.name == "all_reduce" and c.index == 0
    from trnscope.core.analysis.rank_view import what_was_read

    assert what_was_read(pairs)[1] == f"{ACTIVE_STEPS * 5} collectives in 3 process groups matched by order in step"
    top = pairs.findings[0]
    assert (top.kind, top.rank, top.step, top.severity) == ("straggler", HELD_RANK, HELD_STEP, "high")
    assert "name no process group" not in top.message and pairs.collectives[top.collective].group == "0"


def test_worker_threads_that_do_not_hold_their_groups_ranks_are_not_believed(pairs_folder: Path) -> None:
    """The guess is checked: with rank 2's worker groups swapped (its world calls read as
    its pair's), the collectives would not hold their groups' ranks, so the calls stay
    matched by order alone and the doubt is said."""
    from trnscope.core.analysis.collective_table import TEXT_FIELDS
    from trnscope.core.analysis.ranks import reduce_ranks
    from trnscope.core.opening.ranks import rank_jobs, summarize_rank

    summaries = [
        summarize_rank(job).summary for job in rank_jobs(discover(pairs_folder).sources, LoadOptions(use_cache=False))
    ]
    assert all(s is not None for s in summaries)
    held = next(s for s in summaries if s is not None and s.rank == HELD_RANK)
    table = held.collectives
    column = TEXT_FIELDS.index("worker_group")
    world, pair = table.strings.index("0"), table.strings.index("2")
    codes = table.codes[:, column]
    table.codes[:, column] = np.where(codes == world, pair, np.where(codes == pair, world, codes))
    document = reduce_ranks([s for s in summaries if s is not None])
    warning = next(w for w in document.warnings if "process groups smaller than the job" in w)
    assert "nor did the worker threads that ran them tell the groups apart" in warning
    assert "the calls name no process group" in document.findings[0].message


@pytest.fixture(scope="module")
def grid_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four ranks all-reducing in their pair ([0, 1], [2, 3]), then in their column
    ([0, 2], [1, 3]), then as one job; rank 3 sleeps before its pair's call in step 2."""
    return _recorded(tmp_path_factory.mktemp("gloo_grid"), held_rank=3, layout="grid")


def test_a_stragglers_delay_is_followed_through_the_ranks_it_kept_waiting(grid_folder: Path) -> None:
    """Rank 3's sleep keeps rank 2 waiting at their pair's all-reduce; then rank 3 is
    late at its column's ([1, 3]) and rank 2, in turn, at its own ([0, 2]).  The finding
    names rank 3 at the pair's call and adds what the two column calls cost, which the
    raw JSON gives: each column's latest arrival less each member's."""
    grid = _analyse(grid_folder, ExecutorChoice(workers=1))
    late = next(f for f in grid.findings if f.kind == "straggler")  # (the first: a loaded host may add more)
    assert (late.rank, late.step) == (3, HELD_STEP), late.message
    assert sorted(grid.collectives[late.collective].ranks) == [2, 3]
    arrivals = {r: [c["ts"] for c in _calls(_events(grid_folder, r), HELD_STEP)] for r in range(4)}
    assert all(len(calls) == 5 for calls in arrivals.values())  # pair, column, and the job's three

    def waited(members: list[int], k: int) -> float:  # µs
        latest = max(arrivals[r][k] for r in members)
        return sum(latest - arrivals[r][k] for r in members)

    lost = re.search(r"the other ranks lost ([\d.]+)ms waiting", late.message)
    assert lost and abs(float(lost.group(1)) * 1000 - waited([2, 3], 0)) < 2
    onward = re.search(r"to (\d+) more collectives of step 2, where the others waited ([\d.]+)ms more", late.message)
    assert onward, late.message
    # at least both columns (each held up by most of the sleep); on a loaded host the
    # delay can reach the job's own collectives after them too, never more than all the
    # waits of the step but the pair's
    columns = waited([1, 3], 1) + waited([0, 2], 1)
    everything = columns + sum(waited([0, 1, 2, 3], k) for k in (2, 3, 4))
    assert waited([1, 3], 1) > HELD_MS * 1000 / 2 and waited([0, 2], 1) > HELD_MS * 1000 / 2
    assert int(onward.group(1)) >= 2 and columns - 2 <= float(onward.group(2)) * 1000 <= everything + 2, late.message
    # the same figures for a script (``--format json``)
    assert (
        late.onward_collectives == int(onward.group(1)) and abs(late.onward_us / 1000 - float(onward.group(2))) < 0.001
    )


def test_every_collective_figure_matches_the_raw_json(gloo_folder: Path, document: RanksOut) -> None:
    events = {r: _events(gloo_folder, r) for r in range(WORLD)}
    origin = min(min(e["ts"] for e in evs if e["ts"] > 0) for evs in events.values())
    del origin  # arrivals are compared as differences (the zero is trnscope's own)
    for number in (1, 2, 3):
        calls = {r: _calls(events[r], number) for r in range(WORLD)}
        assert {len(c) for c in calls.values()} == {3}  # all_reduce, all_gather, broadcast
        mine = [c for c in document.collectives if c.step == number]
        assert [c.name for c in sorted(mine, key=lambda c: c.index)] == ["all_reduce", "all_gather", "broadcast"]
        for c in mine:
            arrival = {r: calls[r][c.index]["ts"] for r in range(WORLD)}
            latest = max(arrival.values())
            last = max(arrival, key=lambda r: arrival[r])
            others = [a for r, a in arrival.items() if r != last]
            assert c.ranks == list(range(WORLD))
            assert c.last_rank == last
            assert c.start_skew_us == pytest.approx(latest - min(arrival.values()), abs=2e-3)
            assert c.lateness_us == pytest.approx(latest - statistics.median(others), abs=2e-3)
            for r in range(WORLD):
                assert c.wait_us[r] == pytest.approx(latest - arrival[r], abs=2e-3)
                assert c.arrival_us[r] - c.arrival_us[0] == pytest.approx(arrival[r] - arrival[0], abs=2e-3)
            # latency: the shortest gloo execution across ranks (the k-th gloo range of that op after the call)
            kind = {"all_reduce": "gloo:all_reduce", "all_gather": "gloo:all_gather", "broadcast": "gloo:broadcast"}
            durations = []
            for r in range(WORLD):
                runs = sorted(
                    (e for e in events[r] if e["name"] == kind[c.name] and e["ts"] >= arrival[r]), key=lambda e: e["ts"]
                )
                durations.append(runs[0]["dur"])
            assert c.latency_us == pytest.approx(min(durations), abs=2e-3)
            elements = 128 * 128 if c.name != "all_gather" else 32 * WORLD
            assert c.bytes == elements * 4


def test_per_rank_step_figures_match_the_raw_json(gloo_folder: Path, document: RanksOut) -> None:
    for rank_out in document.ranks:
        events = _events(gloo_folder, rank_out.rank)
        workers = {e["tid"] for e in events if e["name"].startswith("gloo:")}
        calls = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("c10d::")]
        ops = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "cpu_op" and e["tid"] not in workers]
        executions = [(e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("gloo:")]
        busy, in_calls, comm = _union(ops + calls), _union(calls), _union(executions)
        for s in rank_out.steps:
            step = _step(events, s.step)
            lo, hi = step["ts"], step["ts"] + step["dur"]
            assert s.wall_us == pytest.approx(step["dur"], abs=2e-3)
            compute = _length(busy, lo, hi) - _length(in_calls, lo, hi)
            assert s.compute_us == pytest.approx(compute, abs=5e-3)
            assert s.comm_us == pytest.approx(_length(comm, lo, hi), abs=5e-3)
    held = next(r for r in document.ranks if r.rank == HELD_RANK)
    others = [r for r in document.ranks if r.rank != HELD_RANK]
    held_wait = next(s.wait_us for s in held.steps if s.step == HELD_STEP)
    # everyone else waited for the held rank in that step: at least most of its sleep
    for r in others:
        wait = next(s.wait_us for s in r.steps if s.step == HELD_STEP)
        assert wait > 0.5 * HELD_MS * 1000 > held_wait


_DASK_SCRIPT = """
import json, os, subprocess, sys
from pathlib import Path
import distributed
from trnscope.core.formats import discover
from trnscope.core.formats.options import LoadOptions
from trnscope.core.opening.executors import ExecutorChoice
from trnscope.core.opening.ranks import analyse_ranks
from trnscope.core.analysis.contracts import encode

folder = Path(sys.argv[1])
sources = discover(folder).sources
load = LoadOptions(use_cache=False)
scheduler_file = folder.parent / "scheduler.json"
with distributed.LocalCluster(
    n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
    scheduler_kwargs={"scheduler_file": str(scheduler_file)},
) as cluster:
    on_dask, _ = analyse_ranks(sources, load, ExecutorChoice(scheduler=cluster.scheduler_address))
    cli = subprocess.run(
        [sys.executable, "-m", "trnscope", "ranks", str(folder), "--format", "json", "--no-cache"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "DASK_SCHEDULER_ADDRESS": cluster.scheduler_address},
    )
    by_file = subprocess.run(
        [sys.executable, "-m", "trnscope", "ranks", str(folder), "--format", "json", "--no-cache",
         "--scheduler-file", str(scheduler_file)],
        capture_output=True, text=True, timeout=120,
    )
print(json.dumps({"api": json.loads(encode(on_dask)), "cli": json.loads(cli.stdout or "null"),
                  "file": json.loads(by_file.stdout or "null"), "err": cli.stderr + by_file.stderr}))
"""


def test_one_process_a_pool_and_dask_give_the_same_document(gloo_folder: Path, document: RanksOut) -> None:
    """A real Dask LocalCluster on loopback (in a child process, so its threads do not
    outlive the test here), through the API and through the CLI with Dask's own
    DASK_SCHEDULER_ADDRESS: the same document as this process and the local pool."""
    pytest.importorskip("distributed")
    in_process = _analyse(gloo_folder, ExecutorChoice(workers=1))
    assert in_process == document
    run = subprocess.run(
        [sys.executable, "-c", _DASK_SCRIPT, str(gloo_folder)], capture_output=True, text=True, timeout=240
    )
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    expected = json.loads(encode(document))
    assert result["api"] == expected
    assert result["cli"] == expected, result["err"]
    assert result["file"] == expected, result["err"]


def test_cli_text_names_the_rank_step_and_collective(gloo_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ranks", str(gloo_folder), "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert f"rank {HELD_RANK} arrived" in out and f"all_reduce #0 of step {HELD_STEP}" in out
    assert main(["ranks", str(gloo_folder), "--step", str(HELD_STEP), "--format", "json"]) == 0
    only = json.loads(capsys.readouterr().out)
    assert {c["step"] for c in only["collectives"]} == {HELD_STEP}
    assert main(["ranks", str(gloo_folder), "--step", "99"]) == 2
    assert "no ProfilerStep#99" in capsys.readouterr().err


def test_summary_merge_runs_on_the_pool_and_keeps_exact_figures(
    gloo_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from trnscope.core.analysis.summary import merge_summary_figures, summary_document, summary_figures
    from trnscope.core.opening.open import open_analysis

    parts = [summary_figures(open_analysis(s), extras=frozenset()) for s in discover(gloo_folder).sources]
    expected = summary_document(merge_summary_figures(parts, str(gloo_folder)), limit=0)
    for workers in ("1", "3"):
        assert main(["summary", str(gloo_folder), "--merge", "--format", "json", "--workers", workers]) == 0
        got = json.loads(capsys.readouterr().out)
        assert [(o["name"], o["calls"], o["self_cpu_us"], o["cpu_total_us"]) for o in got["ops"]] == [
            (o.name, o.calls, o.self_cpu_us, o.cpu_total_us) for o in expected.ops
        ]
        assert got["totals"] == msgspec.to_builtins(expected.totals)
        assert got["merged"] == expected.merged


def test_a_recording_whose_rank_aborts_is_tried_again_on_a_fresh_port(tmp_path: Path, monkeypatch) -> None:
    """A rank aborted once in a CI run (SIGABRT: its port taken between asking and
    binding on a busy host); the recording tries again, each time on a new port, and
    gives up after ``ATTEMPTS``."""
    import torch.multiprocessing as mp

    from trnscope.capture import gloo_ranks

    ports: list[int] = []

    def spawn(fn, args, nprocs, join):  # type: ignore[no-untyped-def]
        ports.append(args[2])
        if len(ports) < 2:
            raise mp.ProcessExitedException("process 2 terminated with signal SIGABRT", 2, 1, 6, "SIGABRT")
        for rank in range(nprocs):
            (Path(args[1]) / f"rank{rank}.json").write_text("{}")

    monkeypatch.setattr(mp, "spawn", spawn)
    assert [p.name for p in gloo_ranks.record(tmp_path / "a", world=2)] == ["rank0.json", "rank1.json"]
    assert len(ports) == 2

    def always_aborts(fn, args, nprocs, join):  # type: ignore[no-untyped-def]
        ports.append(args[2])
        raise mp.ProcessExitedException("process 2 terminated with signal SIGABRT", 2, 1, 6, "SIGABRT")

    ports.clear()
    monkeypatch.setattr(mp, "spawn", always_aborts)
    with pytest.raises(mp.ProcessExitedException):
        gloo_ranks.record(tmp_path / "b", world=2)
    assert len(ports) == gloo_ranks.ATTEMPTS
