"""Snapshot tests of the explorer at 80x24 and 160x48.

Update only after reading snapshot_report.html:  pytest tests/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest
from tui_helpers import settle, wait_loaded

from conftest import CORPUS, SAMPLES, requires_corpus
from trnscope.tui.app import TrnscopeApp

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]
H100 = CORPUS / "tracelens_h100_bert_small.json.gz"
TRN = SAMPLES / "trn_synthetic_rmsnorm_session"


def make_app(*paths: str) -> TrnscopeApp:
    app = TrnscopeApp(list(paths))
    app.theme = "textual-dark"
    return app


def steps(*keys: str):  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await wait_loaded(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        filter_box = pilot.app.screen.query("#filter")
        if filter_box:
            filter_box.first().cursor_blink = False
        await settle(pilot)

    return run_before


@requires_corpus
@pytest.mark.parametrize("size", SIZES)
def test_op_table(snap_compare, size) -> None:
    assert snap_compare(make_app(str(H100)), terminal_size=size, run_before=steps())


@requires_corpus
@pytest.mark.parametrize("size", SIZES)
def test_kernel_table(snap_compare, size) -> None:
    assert snap_compare(make_app(str(H100)), terminal_size=size, run_before=steps("t"))


@requires_corpus
@pytest.mark.parametrize("size", SIZES)
def test_filter_active(snap_compare, size) -> None:
    assert snap_compare(make_app(str(H100)), terminal_size=size, run_before=steps("slash", "a", "d", "d", "m", "m"))


@requires_corpus
@pytest.mark.parametrize("size", SIZES)
def test_drill_down_cuda(snap_compare, size) -> None:
    keys = ("slash", *"^aten::addmm$", "enter", "enter", "tab")
    assert snap_compare(make_app(str(H100)), terminal_size=size, run_before=steps(*keys))


@pytest.mark.parametrize("size", SIZES)
def test_drill_down_neuron_synthetic(snap_compare, size) -> None:
    keys = ("slash", *"^aten::mul$", "enter", "enter", "tab")
    assert snap_compare(make_app(str(TRN)), terminal_size=size, run_before=steps(*keys))


@pytest.mark.parametrize("size", SIZES)
def test_compare_three_variants(snap_compare, size) -> None:
    assert snap_compare(make_app(str(TRN)), terminal_size=size, run_before=steps("c"))


@pytest.mark.parametrize("size", SIZES)
def test_help_screen(snap_compare, size) -> None:
    assert snap_compare(make_app(str(TRN)), terminal_size=size, run_before=steps("question_mark"))


@pytest.mark.parametrize("size", SIZES)
def test_load_error_screen(snap_compare, size) -> None:
    assert snap_compare(make_app("tests/data/not_a_trace.json"), terminal_size=size, run_before=steps())


@pytest.mark.parametrize("size", SIZES)
def test_timeline_neuron_synthetic(snap_compare, size) -> None:
    """The selected op (aten::mul) highlighted across the host, runtime, NeuronCore and
    engine lanes, zoomed in twice around the cursor."""
    assert snap_compare(make_app(str(TRN)), terminal_size=size, run_before=steps("T", "plus", "plus"))


@pytest.mark.parametrize("size", SIZES)
def test_diagnosis_neuron_synthetic(snap_compare, size) -> None:
    assert snap_compare(make_app(str(TRN)), terminal_size=size, run_before=steps("d"))
