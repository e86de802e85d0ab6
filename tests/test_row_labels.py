"""Two different rows never look the same: a user annotation and its GPU-side twin
(PyTorch prints both under one name) carry their kind in every text table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.row_labels import distinct_names
from trnscope.core.formats import load_path
from trnscope.core.formats.options import NO_CACHE
from trnscope.testing.events import event, write_trace
from trnscope.tui.models import OpViewState, op_model


def test_only_shared_names_carry_their_kind() -> None:
    keys = [("step", "", ""), ("step", "", ""), ("aten::mm", "", ""), ("aten::mm", "[[2, 2]]", "")]
    kinds = ["annotation", "device_annotation", "op", "op"]
    assert distinct_names(keys, kinds) == ["step (annotation)", "step (device annotation)", "aten::mm", "aten::mm"]
    assert distinct_names([], []) == []


def _twins(tmp_path: Path) -> Path:
    """A record_function range on the CPU and its gpu_user_annotation on the GPU, both
    named capture_32_FULL, around one op that launches one kernel."""
    events = [
        event("capture_32_FULL", "user_annotation", 0, 200),
        event("aten::mm", "cpu_op", 10, 100, ext=1),
        event("cudaLaunchKernel", "cuda_runtime", 20, 10, correlation=5, ext=1),
        event("gemm_kernel", "kernel", 120, 40, tid=7, pid=0, correlation=5, ext=1),
        event("capture_32_FULL", "gpu_user_annotation", 115, 60, tid=8, pid=0),
    ]
    return write_trace(tmp_path / "twins.json", events, deviceProperties=[{"name": "GPU"}])


def test_the_text_table_tells_the_twins_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # room for whole names (a narrow table elides them, still apart)
    path = _twins(tmp_path)
    assert main(["summary", str(path), "--no-cache", "--table", "ops"]) == 0
    lines = capsys.readouterr().out.splitlines()
    named = [line.split()[0:3] for line in lines if line.startswith(("capture_32_FULL", "aten::mm"))]
    assert ["capture_32_FULL", "(annotation)"] in [n[:2] for n in named]
    assert ["capture_32_FULL", "(device", "annotation)"] in named
    assert any(n[0] == "aten::mm" and not n[1].startswith("(") for n in named)
    # the JSON keeps the name as the trace has it, and says the kind apart
    assert main(["summary", str(path), "--no-cache", "--format", "json"]) == 0
    ops = json.loads(capsys.readouterr().out)["ops"]
    assert sorted((op["name"], op["kind"]) for op in ops if op["name"] == "capture_32_FULL") == [
        ("capture_32_FULL", "annotation"),
        ("capture_32_FULL", "device_annotation"),
    ]


def test_the_tui_table_and_its_detail_tell_the_twins_apart(tmp_path: Path) -> None:
    table = Analysis(load_path(_twins(tmp_path), NO_CACHE)).op_table()
    model = op_model(table, np.arange(len(table)), OpViewState(), 120)
    shown = [str(model.cells(g)[0]) for g in range(len(table))]
    assert sorted(s for s in shown if s.startswith("capture")) == [
        "capture_32_FULL (annotation)",
        "capture_32_FULL (device annotation)",
    ]
    assert "aten::mm" in shown and len(set(shown)) == len(shown)
    assert [model.names["name"](g) for g in range(len(table))] == shown  # what the table elides by


def test_compare_tells_the_twins_apart_without_its_kind_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = _twins(tmp_path / "a"), _twins(tmp_path / "b")
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["compare", str(first), str(second), "--no-cache"]) == 0
    ops = capsys.readouterr().out.split("Ops, by largest change")[1].splitlines()
    assert "kind" in ops[1]
    names = [line.split("  ")[0].strip() for line in ops if line.startswith("capture")]
    assert sorted(names) == ["capture_32_FULL (annotation)", "capture_32_FULL (device annotation)"]
    monkeypatch.setenv("COLUMNS", "60")  # too narrow for the kind column: the names still differ
    assert main(["compare", str(first), str(second), "--no-cache"]) == 0
    out = capsys.readouterr().out
    ops = out.split("Ops, by largest change")[1].splitlines()
    assert "kind" not in ops[1] and "kind" in out.split("hidden at 60 columns")[1]
    names = [line.split("  ")[0].strip() for line in ops if line.startswith("capt")]
    assert len(names) == 2 and len(set(names)) == 2 and any("(d" in n for n in names)
    # the kind is a word from a short list: whole wherever the column is shown (at 100
    # columns HTA's A100/V100 comparison read "annot…" beside every range)
    for columns in range(66, 101, 2):
        monkeypatch.setenv("COLUMNS", str(columns))
        assert main(["compare", str(first), str(second), "--no-cache"]) == 0
        ops = capsys.readouterr().out.split("Ops, by largest change")[1].splitlines()
        if "kind" in ops[1]:
            table = ops[2 : ops.index("", 2)]
            at = ops[1].index("kind")
            kinds = {line[at:].split()[0] for line in table}
            assert kinds == {"op", "kernel", "runtime", "annotation", "device_annotation"}, (columns, kinds)


def test_a_narrow_text_cell_is_marked_as_cut() -> None:
    from trnscope.core.base.text import elide_middle_text as elide_middle

    assert elide_middle("runtime", 6) == "runti…"  # it read "runtim", as if whole
    assert elide_middle("op", 6) == "op"
    assert elide_middle("annotation", 8) == "annot…on"


async def test_the_detail_line_and_the_drill_down_title_name_the_twin(tmp_path: Path) -> None:
    from textual.widgets import Static
    from tui_helpers import press, wait_loaded

    from trnscope.tui.app import TrnscopeApp
    from trnscope.tui.screen_drill import DrillScreen
    from trnscope.tui.vtable import VirtualTable

    app = TrnscopeApp([str(_twins(tmp_path))], use_cache=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_loaded(pilot)
        screen = app.screen
        table = screen._table
        twin = table.shown_name.index("capture_32_FULL (device annotation)")
        view = screen.query_one("#table", VirtualTable)
        view.move_to(int((view.model.order == twin).nonzero()[0][0]))
        await press(pilot)
        assert str(screen.query_one("#detail", Static).render()).startswith("capture_32_FULL (device annotation)")
        await press(pilot, "enter")
        assert isinstance(app.screen, DrillScreen)
        titles = [str(w.render()) for w in app.screen.query(Static)]
        assert any("capture_32_FULL (device annotation)" in t for t in titles)


def test_a_name_that_looks_like_a_label_still_differs() -> None:
    keys = [("step", "", ""), ("step", "", ""), ("step (annotation)", "", "")]
    kinds = ["annotation", "device_annotation", "annotation"]
    labels = distinct_names(keys, kinds)
    assert labels[:2] == ["step (annotation)", "step (device annotation)"]
    assert labels[2] == "step (annotation) (annotation)" and len(set(labels)) == 3
    # alike even with their kinds (a kind spelled into a name twice over): numbered
    keys = [("a", "", ""), ("a", "", ""), ("a (op)", "", ""), ("a (op) (op)", "", "")]
    kinds = ["op", "annotation", "op", "op"]
    labels = distinct_names(keys, kinds)
    assert len(set(labels)) == 4, labels


def test_the_filter_finds_a_twin_by_its_kind(tmp_path: Path) -> None:
    from trnscope.tui.models import op_order

    table = Analysis(load_path(_twins(tmp_path), NO_CACHE)).op_table()
    shown = [table.shown_name[g] for g in op_order(table, OpViewState(filter_text="device annotation"))]
    assert shown == ["capture_32_FULL (device annotation)"]
    both = [table.shown_name[g] for g in op_order(table, OpViewState(filter_text="^capture_32_FULL$"))]
    assert sorted(both) == ["capture_32_FULL (annotation)", "capture_32_FULL (device annotation)"]


def test_the_tui_compare_table_tells_the_twins_apart_when_narrow(tmp_path: Path) -> None:
    from trnscope.core.analysis.compare import compare
    from trnscope.tui.models import compare_model

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    analyses = [Analysis(load_path(_twins(tmp_path / side), NO_CACHE)) for side in ("a", "b")]
    comparison = compare(analyses, ["a", "b"])
    model = compare_model(comparison, comparison.rows, 80)  # no kind column below 110
    assert all(column.key != "kind" for column in model.columns)
    shown = [str(model.cells(i)[0]) for i in range(len(comparison.rows))]
    assert "capture_32_FULL (annotation)" in shown and "capture_32_FULL (device annotation)" in shown
    assert len(set(shown)) == len(shown)
