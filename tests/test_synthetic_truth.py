"""Op table figures equal the ground truth of generated traces, to the nanosecond."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_ops_match
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.formats import load_path
from trnscope.core.formats.options import NO_CACHE, LoadOptions


@pytest.mark.parametrize("rule", ["classic", "python"])
def test_op_table_matches_ground_truth(small_synthetic, rule: str) -> None:
    """Both rules of what Python frames are (``model.op_tree``): the classic one, which a
    trace of unknown release gets, leaves them out of the rows and of every op's Self
    CPU; the other makes them nodes and rows, as PyTorch 2.12+ does."""
    path, truth = small_synthetic
    analysis = Analysis(load_path(path, LoadOptions(op_tree=rule)))
    assert analysis.trace.op_tree == rule
    table = analysis.op_table()
    assert_ops_match(table, truth.ops_by_rule(rule))
    assert any(table.kind(g) == "python" for g in range(len(table))) == (rule == "python")
    assert truth.ops_classic["ProfilerStep*"].self_cpu_ns > truth.ops["ProfilerStep*"].self_cpu_ns
    kernels = analysis.kernel_table()
    for name, expected in truth.kernels.items():
        k = kernels.name.index(name)
        assert kernels.calls[k] == expected.calls
        assert kernels.total[k] == expected.self_device_ns
    assert analysis.link_report.linked == truth.linked_device_events


def _fork_workers(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """These tests are about decoding in ranges, not about when forking is safe: a thread
    left over from an earlier test in this worker (a UI test's executor winding down)
    would otherwise make the loader decode in-process, as it must in a threaded UI."""
    import multiprocessing

    from trnscope.core.formats.kineto import parallel

    monkeypatch.setattr(parallel, "pool_context", lambda: multiprocessing.get_context("fork"))


def test_parallel_and_sequential_decoding_agree(small_synthetic, monkeypatch) -> None:
    from trnscope.core.formats.kineto import loader as kineto

    _fork_workers(monkeypatch)
    path, _ = small_synthetic
    sequential = load_path(path, LoadOptions(workers=1, use_cache=False))
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 0)
    parallel = kineto.load_kineto(path, LoadOptions(workers=3), chunk_bytes=64 << 10)
    assert parallel.stats.workers == 3
    assert len(parallel.events) == len(sequential.events)
    assert [parallel.names[i] for i in parallel.events.name] == [sequential.names[i] for i in sequential.events.name]
    assert (parallel.events.ts == sequential.events.ts).all()
    assert (parallel.events.dur == sequential.events.dur).all()
    assert (parallel.events.external_id == sequential.events.external_id).all()


def test_processes_claim_ranges_so_a_slow_one_takes_fewer(small_synthetic, tmp_path, monkeypatch) -> None:
    """Every range is decoded exactly once, by whichever process asks first: a worker that
    is slow (here: made to sleep on each range) leaves most ranges to the others, and
    the trace is the one a sequential decode gives."""
    import os
    import time

    from trnscope.core.formats.kineto import loader as kineto
    from trnscope.core.formats.kineto import parallel

    _fork_workers(monkeypatch)
    path, _ = small_synthetic
    sequential = load_path(path, LoadOptions(workers=1, use_cache=False))
    log = tmp_path / "who-decoded-what"
    loader_pid = os.getpid()
    real = parallel.decode_buffer

    def logged(buf, start, *args, **kwargs):  # type: ignore[no-untyped-def]
        if os.getpid() != loader_pid:
            time.sleep(0.2)  # the worker is slow
        with open(log, "a") as out:
            out.write(f"{os.getpid()} {start}\n")
        return real(buf, start, *args, **kwargs)

    monkeypatch.setattr(parallel, "decode_buffer", logged)
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 0)
    loaded = kineto.load_kineto(path, LoadOptions(workers=2, use_cache=False), chunk_bytes=16 << 10)
    claims = [line.split() for line in log.read_text().splitlines()]
    starts = [int(start) for _, start in claims]
    assert len(starts) == len(set(starts)) >= 8  # several ranges per process, none decoded twice
    by_loader = sum(1 for pid, _ in claims if int(pid) == loader_pid)
    assert len(claims) - by_loader >= 1  # the worker took part
    assert by_loader > len(claims) - by_loader  # and the fast process took more
    assert len(loaded.events) == len(sequential.events)
    assert (loaded.events.ts == sequential.events.ts).all()
    assert [loaded.names[i] for i in loaded.events.name] == [sequential.names[i] for i in sequential.events.name]


@pytest.mark.parametrize("fooled", [False, True])
def test_cuts_that_land_inside_strings_cost_time_never_events(tmp_path, monkeypatch, fooled: bool) -> None:
    """Every event carries a string full of ``}, {``.  Cuts skip those (what follows
    their "{" is no event's start); and where the heuristic is fooled (here: told that
    any "{" starts an event), a range that starts inside a string is refused, the range
    before it runs on to the end and stops the later ones.  Either way the parallel load
    equals the sequential one, and the file is not decoded once per range."""
    import json
    import re

    from trnscope.core.formats.kineto import jsonscan
    from trnscope.core.formats.kineto import loader as kineto
    from trnscope.core.formats.kineto import parallel as parallel_module

    _fork_workers(monkeypatch)
    if fooled:
        monkeypatch.setattr(jsonscan, "EVENT_START", re.compile(rb"\{"))
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": f"aten::op{i % 7}",
            "pid": 1,
            "tid": 1,
            "ts": 10.0 * i,
            "dur": 5.0,
            "args": {"note": "a}, {b}, {c" * 40, "External id": i},
        }
        for i in range(3000)
    ]
    path = tmp_path / "strings_with_cuts.json"
    path.write_text(json.dumps({"traceEvents": events}))
    sequential = kineto.load_kineto(path, LoadOptions(workers=1, use_cache=False))
    log = tmp_path / "decoded-per-range"
    real = parallel_module.decode_buffer

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = real(*args, **kwargs)
        with open(log, "a") as out:
            out.write(f"{sum(len(chunk.columns.ph) for chunk in result.chunks)}\n")
        return result

    monkeypatch.setattr(parallel_module, "decode_buffer", counted)
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 0)
    parallel = kineto.load_kineto(path, LoadOptions(workers=3, use_cache=False), chunk_bytes=16 << 10)
    assert len(sequential.events) == len(parallel.events) == 3000
    # a range that ran on to the end stopped the others: the file was not decoded once
    # per range (48 ranges here; ~70,000 events decoded before)
    decoded = sum(int(n) for n in log.read_text().split())
    assert decoded <= 3 * 3000
    if not fooled:
        assert decoded == 3000  # every range began at an event: each event decoded once
    assert (parallel.events.ts == sequential.events.ts).all()
    assert (parallel.events.external_id == sequential.events.external_id).all()
    assert parallel.warnings == sequential.warnings


def test_parallel_decoding_reports_problems_of_every_range(small_synthetic, tmp_path, monkeypatch) -> None:
    from trnscope.core.formats.kineto import loader as kineto

    _fork_workers(monkeypatch)
    path, _ = small_synthetic
    data = path.read_bytes()
    early = data.index(b'"aten::linear"')  # inside the first of three ranges
    assert early < len(data) // 3
    damaged = data[:early] + b'"aten::\xfflinear"' + data[early + len(b'"aten::linear"') :]
    copy = tmp_path / "damaged.json"
    copy.write_bytes(damaged)
    sequential = kineto.load_kineto(copy, LoadOptions(workers=1))
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 0)
    parallel = kineto.load_kineto(copy, LoadOptions(workers=3), chunk_bytes=64 << 10)
    assert parallel.stats.workers == 3
    assert "invalid UTF-8 bytes in names were replaced with U+FFFD" in sequential.warnings
    assert parallel.warnings == sequential.warnings


def test_group_by_shape_and_stack(small_synthetic) -> None:
    path, truth = small_synthetic
    analysis = Analysis(load_path(path))
    by_shape = analysis.op_table("shape")
    linear = [g for g in range(len(by_shape)) if by_shape.name[g] == "aten::linear"]
    assert [by_shape.shape[g] for g in linear] == ["[[64, 1024], [1024, 1024], [1024]]"]
    assert by_shape.calls[linear[0]] == truth.ops["aten::linear"].calls
    by_stack = analysis.op_table("stack", stack_depth=2)
    stacks = {by_stack.stack[g] for g in range(len(by_stack)) if by_stack.name[g] == "aten::linear"}
    assert stacks == {
        "<built-in function linear> ← /opt/conda/envs/train/lib/python3.11/site-packages/torch/nn/modules/linear.py(125): forward"
    }


def _deep_chain(path: Path) -> Path:
    """SYNTHETIC: 600 ops each nested in the one before, Python frames at a few depths,
    and a second chain of 300 ops with no frame above them."""
    events = [
        {"name": "outer.py(1): main", "ph": "X", "ts": 0, "dur": 100_000, "pid": 1, "tid": 1, "cat": "python_function"}
    ]
    for depth in range(600):
        frame = depth in (40, 41, 200, 555)
        events.append(
            {
                "name": f"mod.py({depth}): f" if frame else f"aten::op{depth % 3}",
                "ph": "X",
                "ts": 1 + depth,
                "dur": 90_000 - 100 * depth,
                "pid": 1,
                "tid": 1,
                "cat": "python_function" if frame else "cpu_op",
            }
        )
    for depth in range(300):
        events.append(
            {"name": "aten::free", "ph": "X", "ts": 200_000 + depth, "dur": 50_000 - 100 * depth, "pid": 1, "tid": 2}
        )
    path.write_text(json.dumps({"traceEvents": events}))
    return path


@pytest.mark.parametrize("climb_passes", [None, 1, 0])
@pytest.mark.parametrize(
    "name", ["synthetic", "deep chain", "tracelens_b200_eager_stack.json.gz", "tracelens_h100_bert_small.json.gz"]
)
def test_nearest_python_frame_is_the_first_one_up_the_parent_chain(
    small_synthetic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, climb_passes: int | None
) -> None:
    """The stack key starts from each row's nearest python_function ancestor, found for
    every row at once; here it is checked row by row against a plain walk up the raw
    parents, with the rows climbing step by step, or jumping after one step or at once
    (as rows nested deeper than the climbing passes do)."""
    from conftest import CORPUS
    from trnscope.core.analysis import optable
    from trnscope.core.analysis.optable import _nearest_python_ancestor
    from trnscope.core.model.roles import Role

    if climb_passes is not None:
        monkeypatch.setattr(optable, "_CLIMB_PASSES", climb_passes)
    if name == "synthetic":
        path = small_synthetic[0]
    elif name == "deep chain":
        path = _deep_chain(tmp_path / "deep.json")
    else:
        path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{path} is not here (the corpus lives beside the checkout)")
    analysis = Analysis(load_path(path, NO_CACHE))
    trace, links = analysis.trace, analysis.links
    if name == "deep chain":
        assert int(links.depth.max()) >= 600  # far deeper than the climbing passes
    found = _nearest_python_ancestor(trace, links)
    parent = links.raw_parent.tolist()
    is_py = (trace.events.role == int(Role.PYTHON)).tolist()
    in_tree = links.in_tree.tolist()
    expected = []
    for row in range(len(trace.events)):
        above = parent[row] if in_tree[row] else -1
        while above >= 0 and not is_py[above]:
            above = parent[above]
        expected.append(above)
    assert found.tolist() == expected
    assert (found >= 0).sum() > 0


def test_a_stack_key_of_no_frames_is_refused(small_synthetic) -> None:
    from trnscope.core.analysis.optable import python_stacks

    analysis = Analysis(load_path(small_synthetic[0]))
    with pytest.raises(ValueError, match="at least one frame"):
        python_stacks(analysis.trace, analysis.links, 0)
    with pytest.raises(ValueError, match="at least one frame"):
        analysis.op_table("stack", stack_depth=-1)
