"""FLOPs per op by PyTorch's formula (``key_averages(with_flops=True)``), recomputed
from a trace's "Input Dims" and "Concrete Inputs": hand-computed values on a
hand-built trace, the cases where PyTorch gives 0 or nothing, and the corpus.
(Exact agreement with torch itself: ``tests/test_parity_torch.py::test_parity_flops``.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import CORPUS, requires_corpus
from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.columns import flops_per_second
from trnscope.core.analysis.flops import MAX_FLOPS, UNKNOWN, conv2d_flops, flops_columns, flops_of, flops_of_trace
from trnscope.core.analysis.opfigures import figures_of
from trnscope.core.formats import load_path
from trnscope.core.formats.options import NO_CACHE
from trnscope.testing.events import kernel, launch, op


def _op(name: str, ts: float, dur: float, dims: list, concrete: list | None = None, ext: int = 0) -> dict:
    extra = {"Concrete Inputs": concrete} if concrete is not None else {}
    return op(name, ts, dur, ext=ext, **{"Input Dims": dims}, **extra)


def _device(ts: float, dur: float, correlation: int, ext: int) -> list[dict]:
    return [
        launch(ts, 1, correlation=correlation, ext=ext),
        kernel("gemm", ts + 5, dur, correlation=correlation, ext=ext),
    ]


def _hand_built(tmp_path: Path) -> Path:
    """Two addmm (one with a 10 µs kernel each), a conv2d with its concrete inputs and
    one without (a 2021-era event), an in-place add_, and an add."""
    conv_concrete = ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"]
    events = [
        _op("aten::addmm", 0, 20, [[32], [5, 16], [16, 32], [], []], ["", "", "", "1", "1"], ext=1),
        *_device(2, 10, 11, 1),
        _op("aten::addmm", 30, 20, [[32], [5, 16], [16, 32], [], []], ["", "", "", "1", "1"], ext=2),
        *_device(32, 10, 12, 2),
        _op("aten::conv2d", 60, 10, [[4, 3, 17, 19], [8, 3, 3, 3], [8], [], [], [], []], conv_concrete),
        _op("aten::conv2d", 80, 10, [[4, 3, 17, 19], [8, 3, 3, 3], [8], [], [], [], []]),
        _op("aten::add_", 100, 5, [[5, 16], [5, 16], []]),
        _op("aten::add", 110, 5, [[5, 16], [5, 16], []]),
    ]
    path = tmp_path / "flops.json"
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": [{"name": "GPU"}]}))
    return path


def test_flops_and_rates_on_a_hand_built_trace(tmp_path: Path) -> None:
    analysis = Analysis(load_path(_hand_built(tmp_path), NO_CACHE))
    table = analysis.op_table()
    columns = flops_columns(analysis, table)
    assert columns is not None
    rate = flops_per_second(figures_of(table, flops=columns)).sort_key()  # NaN: no rate
    addmm = table.find("aten::addmm")
    # 2 · (5·16 ÷ 16) · (16·32) per call, two calls; rate over the 2 × 10 µs of kernels
    assert columns.flops[addmm] == 2 * 2 * 5 * 16 * 32
    assert rate[addmm] == pytest.approx(2 * 2 * 5 * 16 * 32 / 20e-6)
    conv = table.find("aten::conv2d")
    # H_out = (17 + 2 − 2 − 1) // 2 + 1 = 9, W_out = (19 + 2 − 2 − 1) // 2 + 1 = 10
    assert columns.flops[conv] == 2 * 4 * 9 * 10 * 3 * 3 * 3 * 8
    assert columns.counted[conv] and not columns.complete[conv]  # one call has no count: no FLOP/s
    assert rate[conv] != rate[conv]  # NaN
    add = table.find("aten::add")
    assert columns.flops[add] == 80 and rate[add] == pytest.approx(80 / 5e-6)
    assert not columns.counted[table.find("aten::add_")]  # PyTorch does not count in-place add_
    per_row = flops_of_trace(analysis)
    assert per_row is not None and per_row.unknown_rows == 1 and per_row.counted_rows == 4


def test_the_cases_pytorch_gives_zero_or_nothing() -> None:
    assert flops_of("aten::mm", [[3, 0], [0, 7]]) == 0  # empty inner dimension
    assert flops_of("aten::mm", [[], [4]]) == 0
    assert flops_of("aten::bmm", [[0, 2, 3], [0, 3, 4]]) == 0  # empty batch
    assert flops_of("aten::bmm", [[2, 5, 6], [2, 6, 3]]) == 2 * 5 * 2 * 6 * 3
    assert flops_of("aten::baddbmm", [[2, 5, 3], [2, 5, 6], [2, 6, 3], [], []]) == 2 * 5 * 2 * 6 * 3
    assert flops_of("aten::mul", [[], [3, 7], [3, 7]]) == 1  # a 0-dim first input: one element
    assert flops_of("aten::relu", [[5, 16]]) == 0
    assert flops_of("aten::conv2d", [[1, 3, 8, 8], [4, 3, 3, 3]], None) == UNKNOWN  # no Concrete Inputs
    assert (
        conv2d_flops([[1, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], []], ["", "", "", "[1]", "[0, 0]", "[1, 1]", "1"])
        == 0
    )
    assert (
        conv2d_flops([[1, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], []], ["", "", "", "[1, 1]", "same", "[1, 1]", "1"])
        == 0
    )
    assert (
        conv2d_flops([[1, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], []], ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "0"])
        == 0
    )
    assert (
        conv2d_flops([[3, 8, 8], [4, 3, 3, 3], [], [], [], [], []], ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "1"])
        == 0
    )
    assert conv2d_flops(
        [[1, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], []], ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "1"]
    ) == (2 * 1 * 6 * 6 * 3 * 3 * 3 * 4)


def test_flops_in_summary_text_json_and_csv(tmp_path: Path, capsys, monkeypatch) -> None:
    path = _hand_built(tmp_path)
    monkeypatch.setenv("COLUMNS", "220")
    assert main(["summary", str(path), "--format", "json", "--no-cache", "--with", "flops"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ops = {op["name"]: op for op in doc["ops"]}
    assert ops["aten::addmm"]["flops"] == 10240 and ops["aten::addmm"]["flops_per_s"] == pytest.approx(5.12e8)
    assert ops["aten::conv2d"]["flops"] == 155520 and ops["aten::conv2d"]["flops_per_s"] is None
    assert ops["aten::add_"]["flops"] is None
    assert any("FLOPs unknown for 1 aten::conv2d" in w for w in doc["warnings"])
    assert main(["summary", str(path), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "FLOPs" in text and "FLOP/s" in text and "10.2k" in text and "512M" in text
    assert main(["summary", str(path), "--format", "csv", "--no-cache", "--with", "flops"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].endswith("flops,flops_per_s")
    assert any(r.startswith("aten::addmm,") and r.endswith(",10240,512000000.0") for r in rows)


@requires_corpus
def test_flops_on_the_corpus(capsys, monkeypatch) -> None:
    """Traces with shapes get counts; a trace without shapes has none (columns hidden);
    the 2021 trace's conv2d calls lack Concrete Inputs and are reported, not guessed."""
    monkeypatch.setenv("COLUMNS", "250")
    assert (
        main(["summary", str(CORPUS / "tracelens_h100_bert_small.json.gz"), "--format", "json", "--with", "flops"]) == 0
    )
    ops = {op["name"]: op for op in json.loads(capsys.readouterr().out)["ops"]}
    addmm = ops["aten::addmm"]
    assert addmm["flops"] > 1e9 and addmm["flops_per_s"] == pytest.approx(
        addmm["flops"] / (addmm["device_total_us"] / 1e6), rel=1e-6
    )
    assert main(["summary", str(CORPUS / "hta_cpu_only.json.gz")]) == 0
    assert "FLOP" not in capsys.readouterr().out
    assert main(["summary", str(CORPUS / "kineto_resnet50_2021.json.gz"), "--format", "json", "--with", "flops"]) == 0
    doc = json.loads(capsys.readouterr().out)
    conv = next(op for op in doc["ops"] if op["name"] == "aten::conv2d")
    assert conv["flops"] is None
    assert any("FLOPs unknown for" in w and "aten::conv2d" in w for w in doc["warnings"])
    mm = next(op for op in doc["ops"] if op["name"] == "aten::mm")
    assert mm["flops"] > 0


def test_the_drill_down_shows_the_instance_flops_and_rate(tmp_path: Path) -> None:
    from trnscope.core.analysis.chain import chain_for

    analysis = Analysis(load_path(_hand_built(tmp_path), NO_CACHE))
    op = next(h for h in chain_for(analysis, "aten::addmm", 0).hops if h.kind == "op")
    assert op.details["FLOPs"] == 5120 and op.details["FLOP/s"] == "512M (device time)"  # 5120 ÷ 10 µs
    conv = next(h for h in chain_for(analysis, "aten::conv2d", 1).hops if h.kind == "op")
    assert conv.details["FLOPs"].startswith("unknown")  # the call without Concrete Inputs
    add = next(h for h in chain_for(analysis, "aten::add", 0).hops if h.kind == "op")
    assert add.details["FLOPs"] == 80 and add.details["FLOP/s"] == "16M (CPU time)"  # 80 ÷ 5 µs


def test_hostile_sizes_give_no_count_never_an_error(tmp_path: Path) -> None:
    """Sizes are untrusted: negative, absurd (past int64 when multiplied), or not
    integers — no count, no overflow, no exception; sums past int64 stay exact."""
    huge = 1 << 40
    events = [
        _op("aten::mm", 0, 10, [[-5, 16], [16, 7]]),
        _op("aten::mm", 20, 10, [[huge, huge], [huge, huge]]),
        _op("aten::mul", 40, 10, [[2.5, 3]]),
        _op("aten::conv2d", 60, 10, [[1, 3, 2, 2], [4, 3, 5, 5]], ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "1"]),
        _op("aten::conv2d", 80, 10, [[1, 3, 8, 8], [4, 3, 3, 3]], ["", "", "", "[-1, 1]", "[0, 0]", "[1, 1]", "-2"]),
        _op(
            "aten::conv2d",
            90,
            5,
            [[huge, huge, 64, 64], [huge, huge, 3, 3]],
            ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"],
        ),
        *[_op("aten::add", 100 + 10 * k, 5, [[1 << 25, 1 << 25]]) for k in range(4)],  # 2^50 each
    ]
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps({"traceEvents": events}))
    analysis = Analysis(load_path(path, NO_CACHE))
    table = analysis.op_table()
    columns = flops_columns(analysis, table)
    assert columns is not None
    mm, conv, mul = table.find("aten::mm"), table.find("aten::conv2d"), table.find("aten::mul")
    assert columns.flops[mm] == 0 and not columns.complete[mm]  # one absurd call: no rate either
    assert columns.flops[conv] == 0 and columns.flops[mul] == 0
    assert not columns.complete[conv]  # the absurd convolution has no count
    assert int(columns.flops[table.find("aten::add")]) == 4 << 50
    assert main(["summary", str(path), "--format", "json", "--no-cache", "--with", "flops"]) == 0


def test_sums_past_int64_stay_exact(tmp_path: Path) -> None:
    events = [_op("aten::add", 10 * k, 5, [[1 << 26, 1 << 26]]) for k in range(2100)]  # 2^52 FLOPs each
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"traceEvents": events}))
    analysis = Analysis(load_path(path, NO_CACHE))
    table = analysis.op_table()
    columns = flops_columns(analysis, table)
    assert columns is not None
    rate = flops_per_second(figures_of(table, flops=columns)).sort_key()  # NaN: no rate
    add = table.find("aten::add")
    assert int(columns.flops[add]) == 2100 << 52 > 2**63  # past int64, summed as Python integers
    assert rate[add] == pytest.approx((2100 << 52) / 10.5e-3)
    assert main(["summary", str(path), "--format", "json", "--no-cache", "--with", "flops"]) == 0


_VALUES = st.recursive(
    st.one_of(st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.text(max_size=4), st.none()),
    lambda inner: st.lists(inner, max_size=5),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(["aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::conv2d", "aten::mul"]),
    dims=st.lists(_VALUES, max_size=8),
    concrete=st.one_of(st.none(), st.lists(st.one_of(st.text(max_size=12), _VALUES), max_size=8)),
)
def test_any_sizes_give_a_count_or_none_never_an_error(name: str, dims: list, concrete: list | None) -> None:
    flops = flops_of(name, dims, concrete)
    assert flops == UNKNOWN or 0 <= flops <= MAX_FLOPS


def test_sort_by_flops_and_memory_like_key_averages_sort_by(tmp_path: Path, capsys) -> None:
    """``--sort flops`` / ``flops_per_s`` (key_averages' sort_by="flops"): largest first,
    ops without a count last; a trace without counts says so (exit 2)."""
    path = _hand_built(tmp_path)
    assert main(["summary", str(path), "--format", "json", "--no-cache", "--with", "flops", "--sort", "flops"]) == 0
    names = [op["name"] for op in json.loads(capsys.readouterr().out)["ops"]]
    assert names[:3] == ["aten::conv2d", "aten::addmm", "aten::add"]  # 155,520 > 10,240 > 80
    assert (
        main(["summary", str(path), "--format", "json", "--no-cache", "--with", "flops", "--sort", "flops_per_s"]) == 0
    )
    rates = [op["flops_per_s"] for op in json.loads(capsys.readouterr().out)["ops"]]
    known = [r for r in rates if r is not None]
    assert known == sorted(known, reverse=True) and rates[: len(known)] == known  # none-valued last
    assert main(["summary", str(path), "--no-cache", "--sort", "cpu_memory"]) == 2
    assert "no [memory] records" in capsys.readouterr().err


def test_merged_summaries_add_flops_and_memory(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "ranks"
    folder.mkdir()
    trace = _hand_built(tmp_path).read_bytes()
    (folder / "rank0.json").write_bytes(trace)
    (folder / "rank1.json").write_bytes(trace)
    assert main(["summary", str(folder), "--merge", "--format", "json", "--no-cache", "--with", "flops"]) == 0
    ops = {op["name"]: op for op in json.loads(capsys.readouterr().out)["ops"]}
    assert ops["aten::addmm"]["flops"] == 2 * 10240
    assert ops["aten::addmm"]["flops_per_s"] == pytest.approx(2 * 10240 / 40e-6)  # over the 4 × 10 µs kernels
    assert ops["aten::conv2d"]["flops_per_s"] is None  # incomplete in each part
