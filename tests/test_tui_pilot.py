"""Pilot tests: every key action and pane of the explorer, headless."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.widgets import Label
from tui_helpers import (
    ChangingFrames,
    open_comparison,
    palette_results,
    press,
    press_until_exit,
    settle,
    wait_loaded,
)

from conftest import CORPUS, SAMPLES, requires_corpus
from trnscope.core.base.units import fmt_time_short
from trnscope.core.model.vocab import PH_X
from trnscope.tui.app import ErrorScreen, HelpScreen, LoadingScreen, TrnscopeApp, WarningsScreen
from trnscope.tui.screen_compare import CompareScreen
from trnscope.tui.screen_drill import DrillScreen
from trnscope.tui.screen_ops import OpsScreen, PickScreen
from trnscope.tui.vtable import VirtualTable

TRN = SAMPLES / "trn_synthetic_rmsnorm_session"
CPU_SESSION = SAMPLES / "cpu_rmsnorm_session"
H100 = CORPUS / "tracelens_h100_bert_small.json.gz"


def table_names(app: TrnscopeApp) -> list[str]:
    screen = app.screen
    view = screen.query_one("#table", VirtualTable)
    table = screen._table  # type: ignore[attr-defined]
    return [table.name[int(i)] for i in view.model.order]


async def test_new_user_finds_slowest_op_follows_it_to_the_device_and_compares() -> None:
    """The issue's acceptance path, keyboard only, at 80x24, on the bundled sample."""
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        assert isinstance(app.screen, OpsScreen)
        status = str(app.screen.query_one("#status").render())
        assert "SYNTHETIC" in status and "neuron" in status
        # the slowest op by device time is at the top (kernels are device rows; ops first among host rows)
        names = table_names(app)
        assert names[0] in ("aten::mul", "MODULE_7005_mul_a", "MODULE_7006_mul_b")
        await press(pilot, "a")  # hide annotations
        top_op = next(n for n in table_names(app) if n.startswith("aten::"))
        view = app.screen.query_one("#table", VirtualTable)
        while app.screen._table.name[view.current_index] != top_op:  # type: ignore[attr-defined]
            await press(pilot, "j")
        await press(pilot, "enter")
        assert isinstance(app.screen, DrillScreen)
        chain = app.screen.chain
        assert chain is not None
        kinds = [h.kind for h in chain.hops]
        assert "execution" in kinds and "engine" in kinds and "instruction" in kinds
        assert any(h.layer == "runtime" and h.name == "nrt_execute" for h in chain.hops)
        assert chain.gaps.device_us > 0 and chain.gaps.queue_us > 0
        await press(pilot, "escape", "c")
        assert isinstance(app.screen, CompareScreen)
        comparison = app.screen.comparison
        assert comparison.labels == ["eager", "compiled", "fused"]
        region = next(r for r in comparison.regions if r.key == "rmsnorm")
        assert all(v is not None and v.device_total_ns > 0 for v in region.values)


@requires_corpus
async def test_op_table_keys_sort_filter_group_toggle() -> None:
    app = TrnscopeApp([str(H100)])
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_loaded(pilot)
        screen = app.screen
        assert isinstance(screen, OpsScreen)
        total = len(table_names(app))
        await press(pilot, "s")
        assert screen.state.sort_key == "device_total"
        await press(pilot, "S")
        assert screen.state.sort_key == "self_device"
        await press(pilot, "r")
        assert not screen.state.descending
        await press(pilot, "r")
        await press(pilot, "slash")
        assert screen.query_one("#filter").display
        for ch in "addmm":
            await press(pilot, ch)
        names = table_names(app)
        assert names and all("addmm" in n for n in names)
        await press(pilot, "enter")  # keep the filter, back to the table
        assert screen.query_one("#table").has_focus
        await press(pilot, "escape")
        assert len(table_names(app)) == total
        await press(pilot, "p")
        assert not any(n.endswith(")") and ".py(" in n for n in table_names(app))
        await press(pilot, "p", "a")
        assert "ProfilerStep*" not in table_names(app)
        await press(pilot, "a", "b")
        assert screen.state.group_by == "shape"
        assert len(table_names(app)) > total
        await press(pilot, "b")
        assert screen.state.group_by == "stack"
        await press(pilot, "b", "t")
        assert screen.state.mode == "kernels"
        assert any(n.startswith("void cutlass") for n in table_names(app))
        await press(pilot, "t", "G")
        view = screen.query_one("#table", VirtualTable)
        assert view.cursor == view.model.rows - 1
        await press(pilot, "g")
        assert view.cursor == 0
        await press(pilot, "j", "j", "k")
        assert view.cursor == 1
        await press(pilot, "pagedown")
        assert view.cursor > 1


async def test_steps_variants_help_and_palette() -> None:
    app = TrnscopeApp([str(CPU_SESSION)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        screen = app.screen
        assert isinstance(screen, OpsScreen)
        steps = screen.analysis.steps()
        assert len(steps) == 5
        # a session of several traces says which one this is and the key that picks
        assert "trace 1 of 3 (v picks)" in str(screen.query_one("#viewinfo").render())
        await press(pilot, "right_square_bracket")
        assert screen.state.step == 0
        table = screen._table
        assert table.calls[table.find("ProfilerStep*")] == 1
        await press(pilot, "left_square_bracket")
        assert screen.state.step == -1
        await press(pilot, "v")
        assert isinstance(app.screen, PickScreen)
        await press(pilot, "down", "enter")
        await settle(pilot)
        assert app.screen is screen and screen.analysis.trace.label == "compiled"
        assert "trace 2 of 3 (v picks)" in str(screen.query_one("#viewinfo").render())
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        await press(pilot, "escape")
        assert app.screen is screen
        await press(pilot, "ctrl+p")
        for ch in "drill into torchdynamo cache":  # an op of the compiled variant now shown
            await pilot.press(ch)
        await palette_results(pilot)
        await press(pilot, "down", "enter")
        await pilot.pause(0.3)
        await settle(pilot)
        assert isinstance(app.screen, DrillScreen)
        assert app.screen.table.name[app.screen.group] == "TorchDynamo Cache Lookup"


@requires_corpus
async def test_drill_down_keys() -> None:
    app = TrnscopeApp([str(H100)])
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_loaded(pilot)
        screen = app.screen
        await press(pilot, "slash")
        for ch in "^aten::addmm$":
            await pilot.press(ch)
        await press(pilot, "enter", "enter")
        drill = app.screen
        assert isinstance(drill, DrillScreen)
        assert drill.rows.size == 26
        first = drill.query_one("#instances", VirtualTable).current_index
        await press(pilot, "n")
        assert drill.query_one("#instances", VirtualTable).current_index != first
        await press(pilot, "p")
        assert drill.query_one("#instances", VirtualTable).current_index == first
        assert drill.sort_by == "dur"
        await press(pilot, "s")
        assert drill.sort_by == "time"
        chain = drill.chain
        assert chain is not None and any(h.kind == "kernel" for h in chain.hops)
        assert any(h.kind == "runtime" and "LaunchKernel" in h.name for h in chain.hops)
        await press(pilot, "tab")
        assert drill.query_one("#chain", VirtualTable).has_focus
        # enter on a child op drills into it
        chain_view = drill.query_one("#chain", VirtualTable)
        child = next((i for i, h in enumerate(drill.chain.hops) if h.kind == "child"), None)
        if child is not None:
            chain_view.move_to(drill.shown.index(child))
            await press(pilot, "enter")
            assert isinstance(app.screen, DrillScreen) and app.screen is not drill
            await press(pilot, "escape")
        assert app.screen is drill
        await press(pilot, "escape")
        assert app.screen is screen


async def test_copy_writes_chain_text(isolated_cache: Path) -> None:
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "enter", "c")
        files = list((isolated_cache / "clipboard").glob("chain-*.txt"))
        assert files and "dispatch" in files[0].read_text()


async def test_copy_that_cannot_save_says_so(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy runs in a worker: a file it cannot write is a line in its notice (the
    chain still goes to the clipboard), not a worker dying unseen."""
    notices: list[str] = []

    write_text = Path.write_text

    def refuse(self: Path, *args: Any, **kwargs: Any) -> int:
        if self.name.startswith("chain-"):
            raise OSError(28, "No space left on device")
        return write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", refuse)
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "enter")
        monkeypatch.setattr(app.screen, "notify", lambda message, **kwargs: notices.append(message))
        await press(pilot, "c")
        await settle(pilot)
        assert any(n.startswith("copied ") and "not saved (No space left on device)" in n for n in notices), notices
        assert not list((isolated_cache / "clipboard").glob("chain-*.txt"))


async def test_regrouping_elides_the_names_off_the_ui_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eliding a column of names apart passes over every name (~65 ms for a real trace's
    6,532 stack keys): a regrouping does it in its worker, and the table uses that
    layout as made, at the width it has."""
    import threading

    import trnscope.tui.vtable as vtable

    made_on: list[bool] = []
    distinct = vtable.distinct_elisions

    def recording(names: list[str], width: int) -> dict[int, str]:
        made_on.append(threading.current_thread() is threading.main_thread())
        return distinct(names, width)

    monkeypatch.setattr(vtable, "distinct_elisions", recording)
    app = TrnscopeApp([str(CPU_SESSION)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        screen = app.screen
        for grouping in ("shape", "stack", "op"):
            del made_on[:]
            await press(pilot, "b")
            assert screen.state.group_by == grouping
            view = screen.query_one("#table", VirtualTable)
            assert made_on and not any(made_on), (grouping, made_on)
            assert view.model.layout is not None and view.model.layout.table_width == view.table_width
            assert view._distinct is view.model.layout.distinct


async def test_a_small_chain_is_in_the_drill_downs_first_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain of a few hops is built when the pane mounts, so its first frame shows it;
    one that is not quick to build comes from a worker, the same chain."""
    import trnscope.tui.screen_drill as screen_drill

    built_in_worker: list[int] = []
    worker = screen_drill.DrillScreen._build_chain

    def recording(self: DrillScreen, index: int) -> object:
        built_in_worker.append(index)
        return worker(self, index)

    monkeypatch.setattr(screen_drill.DrillScreen, "_build_chain", recording)
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_loaded(pilot)
        await pilot.press("enter")
        drill = app.screen
        assert isinstance(drill, DrillScreen)
        assert drill.chain is not None and drill.query_one("#chain", VirtualTable).model.size > 0  # before any frame
        await settle(pilot)
        assert built_in_worker == []
        at_mount = drill.chain
        await press(pilot, "escape")
        monkeypatch.setattr(screen_drill, "chain_is_quick", lambda analysis, row: False)
        await pilot.press("enter")
        await settle(pilot)
        drill = app.screen
        assert isinstance(drill, DrillScreen)
        assert len(built_in_worker) == 1 and drill.chain == at_mount


async def test_resizing_the_drill_down_keeps_the_place_in_the_chain() -> None:
    """The chain's table lays its columns out for each width itself (where each hop ran,
    from 120 cells): a resize no longer redraws the chain and moves its cursor back to
    the op, and leaving out that column of context is not announced as a narrow table."""
    app = TrnscopeApp([str(TRN)])
    notices: list[str] = []
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_loaded(pilot)
        app.notify = lambda message, **kwargs: notices.append(message)  # type: ignore[method-assign]
        await press(pilot, "enter", "tab")
        drill = app.screen
        assert isinstance(drill, DrillScreen) and drill.chain is not None
        chain_view = drill.query_one("#chain", VirtualTable)
        await press(pilot, "down", "down")
        place = chain_view.cursor
        header = chain_view.render_line(0).text
        assert "Thread / stream" not in header
        await pilot.resize_terminal(260, 40)
        await settle(pilot)
        assert chain_view.size.width >= 120 and "Thread / stream" in chain_view.render_line(0).text
        assert chain_view.cursor == place
        await pilot.resize_terminal(100, 40)
        await settle(pilot)
        assert "Thread / stream" not in chain_view.render_line(0).text and chain_view.cursor == place
        assert not [n for n in notices if "left out" in n], notices


async def test_a_tables_scroll_bar_column_is_there_whatever_its_rows() -> None:
    """A table's scroll bar column is always drawn (its track when every row fits): a
    filter that leaves a few rows, or clears back to many, changes the table in one
    frame instead of two (the second, a layout for the scroll bar coming or going, was
    20-40 ms of a keystroke on a real trace)."""
    app = TrnscopeApp([str(CPU_SESSION)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        view = app.screen.query_one("#table", VirtualTable)
        assert view.model.rows > view.size.height and view.show_vertical_scrollbar
        await press(pilot, "slash", *"aten::mul", "enter")
        assert 0 < view.model.rows < view.size.height - 1
        assert view.show_vertical_scrollbar and view.scrollbar_size_vertical == 1
        await press(pilot, "escape")
        assert view.model.rows > view.size.height and view.show_vertical_scrollbar


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_each_pane_opens_in_one_changing_frame(size: tuple[int, int]) -> None:
    """What a key shows comes in one frame, not a frame of placeholders or of a layout
    for no width and then the real one a frame or two later (each such frame was 20-40
    ms of the key on a real trace, and bytes on a slow link): the drill-down with its
    chain, the timeline with its lanes, the diagnosis with its detail, the help with its
    scroll bar, the comparison and its next view with the row's figures, a filter
    keystroke that leaves a few rows, and clearing it."""
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot)
        frames = ChangingFrames(app)
        for keys in (
            ["enter"],
            ["escape"],
            ["T"],
            ["escape"],
            ["d"],
            ["escape"],
            ["question_mark"],
            ["escape"],
            ["c"],  # the comparison of the session's variants, its row's figures below it
            ["v"],
            ["escape"],
        ):
            await settle(pilot)
            frames.reset()
            await press(pilot, *keys)
            assert len(frames.changed) == 1, (keys, [sorted(rows) for rows in frames.changed])
        await press(pilot, "slash")
        for field in app.screen.query("Input"):
            field.cursor_blink = False  # a blink is a frame of its own
        await press(pilot, *"aten::mu")
        field_region = app.screen.query_one("Input").region
        typed_in = set(range(field_region.y, field_region.bottom))
        await settle(pilot)
        frames.reset()
        await press(pilot, "l")
        # (the field shows the key at once, in a frame of its own: the rows come after)
        assert len([rows for rows in frames.changed if not rows <= typed_in]) == 1, frames.changed
        await settle(pilot)
        frames.reset()
        await press(pilot, "escape")
        # the field closes at once; the rows of the whole table come after, in one frame
        assert len(frames.changed) == 2, [sorted(rows) for rows in frames.changed]


async def test_a_workers_result_for_a_row_the_cursor_left_is_not_shown() -> None:
    """A detail or a chain from a worker arrives after the cursor may have moved on (a
    thread worker cannot be stopped): the row's detail and the instance's chain shown
    are always those of the row and instance under the cursor."""
    from rich.text import Text

    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        ops = app.screen
        assert isinstance(ops, OpsScreen)
        detail = ops.query_one("#detail")
        shown = str(detail.render())
        table, here = ops._table, ops.query_one("#table", VirtualTable).current_index
        assert table is not None
        ops._show_detail(table, here + 1, Text("the detail of a row the cursor left"))
        assert str(detail.render()) == shown
        ops._show_detail(table, here, Text("this row's detail"))
        assert str(detail.render()) == "this row's detail"
        await press(pilot, "enter")
        drill = app.screen
        assert isinstance(drill, DrillScreen) and drill.chain is not None
        chain, instances = drill.chain, drill.query_one("#instances", VirtualTable)
        elsewhere = int(instances.model.order[1])  # the instance one row below the cursor
        other = drill._chain_of(elsewhere)
        drill._show_built_chain(int(drill.rows[elsewhere]), other)
        assert drill.chain is chain
        await press(pilot, "down")
        assert instances.current_index == elsewhere
        assert drill.chain is not None and drill.chain.row == other.row


async def test_the_comparison_keeps_the_row_under_the_cursor() -> None:
    """A resize, another metric or another variant redraws the comparison's table: the
    row under the cursor stays under it (it went back to the first row); another view
    starts at its first row."""
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(100, 30)) as pilot:
        compare = await open_comparison(pilot)
        while compare.view != "ops":
            await press(pilot, "v")
        view = compare.query_one(VirtualTable)
        assert len(compare.shown_rows) > 3
        await press(pilot, "down", "down", "down")
        key = compare.shown_rows[view.current_index].key
        for change in (["m"], ["2"], ["1"]):
            await press(pilot, *change)
            assert compare.shown_rows[view.current_index].key == key, change
        await pilot.resize_terminal(140, 30)
        await settle(pilot)
        assert compare.shown_rows[view.current_index].key == key
        await press(pilot, "v")
        assert view.cursor == 0


async def test_a_comparison_of_cpu_traces_gives_no_device_figures() -> None:
    """Every row of the CPU session read "device 0.0us · dispatch 0.0us": figures of
    device work no variant ran.  They are shown where some variant ran any."""
    app = TrnscopeApp([str(CPU_SESSION)])
    async with app.run_test(size=(100, 30)) as pilot:
        compare = await open_comparison(pilot)
        assert not compare.device_figures
        detail = compare.query_one("#compare-detail")._shown.plain.split("\n")[1:]
        assert len(detail) == 3 and all(" calls · CPU " in line for line in detail), detail
        assert not any("device" in line or "dispatch" in line for line in detail), detail
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(100, 30)) as pilot:
        compare = await open_comparison(pilot)
        detail = compare.query_one("#compare-detail")._shown.plain.split("\n")[1:]
        assert compare.device_figures and all(" · device " in line for line in detail), detail


async def test_compare_keys() -> None:
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(100, 30)) as pilot:
        compare = await open_comparison(pilot)
        assert compare.view == "regions"
        await press(pilot, "v")
        assert compare.view == "ops"
        await press(pilot, "v")
        assert compare.view == "kernels"
        # device work has launches and device time; it read "CPU 0.0us · dispatch 0.0us"
        detail = compare.query_one("#compare-detail")._shown.plain.split("\n")[1:]
        assert all(" launches · device " in line and "CPU" not in line for line in detail), detail
        await press(pilot, "v")
        assert compare.view == "diagnosis"
        view = compare.query_one(VirtualTable)
        rows = {view.model.cells(i)[0]: view.model.cells(i)[1:] for i in range(view.model.size)}
        assert list(rows)[:2] == ["median step", "median step ÷ A"] and len(rows) == 7
        assert rows["launches / step"] == ["6", "1", "1"]  # eager launches six NEFFs a step, the others one
        assert rows["median step ÷ A"][0] == "—" and all(cell.startswith("×") for cell in rows["median step ÷ A"][1:])
        assert rows["against A"][0] == "—" and set(rows["against A"][1:]) <= {"faster", "slower", "within noise"}
        medians = []  # each variant's ProfilerStep annotations, read from its events
        for analysis in compare.analyses:
            ev, names = analysis.trace.events, analysis.trace.names
            steps = [int(ev.dur[r]) for r in range(len(ev)) if names[int(ev.name[r])].startswith("ProfilerStep#")]
            medians.append(fmt_time_short(float(np.median(steps))))
        assert rows["median step"] == medians
        await press(pilot, "v", "v", "2")
        assert compare.side == 1
        await press(pilot, "1")
        assert compare.side == 0
        await press(pilot, "3")
        assert compare.side == 2
        await press(pilot, "enter")
        assert isinstance(app.screen, DrillScreen)
        assert app.screen.analysis.trace.label == "fused"
        await press(pilot, "escape", "o")
        assert isinstance(app.screen, OpsScreen) and app.screen.analysis.trace.label == "fused"
        await press(pilot, "escape", "escape")
        assert isinstance(app.screen, OpsScreen)


async def test_help_scrolls_at_80x24() -> None:
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        box = app.screen.query_one("#text-box")
        assert box.max_scroll_y > 0  # the help is taller than 24 lines
        await press(pilot, "j", "j", "j")
        assert box.scroll_y == 3
        await press(pilot, "k")
        assert box.scroll_y == 2
        await press(pilot, "question_mark")
        assert isinstance(app.screen, OpsScreen)


async def test_warnings_screen_lists_what_the_status_line_counts() -> None:
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        ops = app.screen
        assert isinstance(ops, OpsScreen)
        assert "⚠ 2 (w)" in str(ops.query_one("#status").render())
        await press(pilot, "w")
        assert isinstance(app.screen, WarningsScreen)
        text = app.screen.text
        assert text.count("⚠") == 2
        assert "1 of 31 NeuronCore executions started before the first profiled op" in text
        assert "device profiles placed on the host clock: 6 by sync point" in text
        await press(pilot, "w")
        assert app.screen is ops
        await press(pilot, "c")
        assert isinstance(app.screen, CompareScreen)
        await press(pilot, "w")
        assert isinstance(app.screen, WarningsScreen)
        headers = [line for line in app.screen.text.splitlines() if line.startswith("[b]")]
        assert headers == ["[b]eager[/b]", "[b]compiled[/b]", "[b]fused[/b]"]
        await press(pilot, "escape")
        assert isinstance(app.screen, CompareScreen)


async def test_several_paths_open_compare_directly(small_synthetic) -> None:
    path, _ = small_synthetic
    app = TrnscopeApp([str(path), str(path)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        assert isinstance(app.screen, CompareScreen)
        await press(pilot, "escape")
    assert app.return_code in (0, None)


async def test_bad_input_shows_error_screen(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("this is not json")
    app = TrnscopeApp([str(bad)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        assert isinstance(app.screen, ErrorScreen)
        assert "not JSON" in app.screen.message
        await press(pilot, "q")
    assert app.return_code == 2


async def test_large_trace_loads_without_blocking_the_ui(tmp_path: Path, monkeypatch) -> None:
    """While a 2M-event-class trace loads (parallel decode in worker processes), the
    loading runs off the UI thread and the screen keeps updating its progress."""
    import threading

    from trnscope.core.formats.kineto import loader as kineto
    from trnscope.core.formats.kineto.parallel import start_worker_server
    from trnscope.core.opening import sources as open_module
    from trnscope.testing.synth_kineto import generate

    path = tmp_path / "big.pt.trace.json"
    generate(path, 400_000, seed=1)
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 16 << 20)
    loading_threads: list[int] = []
    real_open = open_module.open_analysis

    def recording_open(*args, **kwargs):
        loading_threads.append(threading.get_ident())
        return real_open(*args, **kwargs)

    monkeypatch.setattr(open_module, "open_analysis", recording_open)
    start_worker_server()  # as `trnscope open` does before the UI takes the terminal
    app = TrnscopeApp([str(path)], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        ui_thread = threading.get_ident()
        await pilot.pause(0.02)
        assert isinstance(app.screen, LoadingScreen)
        progress_seen: set[str] = set()
        while isinstance(app.screen, LoadingScreen):
            progress_seen.add(str(app.screen.query_one("#loading-status", Label).render()))
            await pilot.pause(0.02)
        await settle(pilot)
        assert isinstance(app.screen, OpsScreen)
        assert len(app.screen.analysis.trace.events) > 400_000
        assert app.screen.analysis.trace.stats.workers > 1
    assert loading_threads and all(thread != ui_thread for thread in loading_threads)
    # the UI thread was free to redraw the progress while the load ran
    assert len(progress_seen) >= 2, progress_seen


@pytest.mark.parametrize("key", ["escape", "c"])
async def test_cancel_load(tmp_path: Path, key: str) -> None:
    from trnscope.testing.synth_kineto import generate

    path = tmp_path / "big.pt.trace.json"
    generate(path, 300_000, seed=2)
    app = TrnscopeApp([str(path)], use_cache=False, workers=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.1)
        assert isinstance(app.screen, LoadingScreen)
        await press_until_exit(pilot, key)
    assert app.return_code == 0


@requires_corpus
async def test_every_event_kind_reaches_a_screen() -> None:
    """Opening a 2021-era trace (different schema) works the same way."""
    app = TrnscopeApp([str(CORPUS / "kineto_resnet50_2021.json.gz")])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        assert isinstance(app.screen, OpsScreen)
        assert app.screen.analysis.trace.events.ph[0] in (PH_X, 5)


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


async def test_ansi_theme_and_unknown_theme() -> None:
    app = TrnscopeApp([str(TRN)], theme="ansi")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        assert app.theme == "ansi-dark"
    app = TrnscopeApp([str(TRN)], theme="no-such-theme")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        assert app.theme != "no-such-theme"


async def test_open_via_cli_entry_refuses_missing_path(capsys, tmp_path: Path) -> None:
    from trnscope.cli.main import main

    assert main(["open", str(tmp_path / "nope")]) == 2
    assert "no such file" in capsys.readouterr().err


def _every_pane_class() -> list[type]:
    """Every ExplorerScreen subclass the TUI defines (imported by the app), found by
    walking the class tree, not listed by hand."""
    import trnscope.tui.app  # noqa: F401 - imports every pane
    from trnscope.tui.screen_base import ExplorerScreen

    found, todo = [], [ExplorerScreen]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("trnscope.tui"):
                found.append(sub)
                todo.append(sub)
    return found


def test_help_lists_every_action_of_every_pane() -> None:
    """Help is generated from the registered panes' bindings; every concrete pane is
    registered, and every action it implements has a binding there (so it is both
    reachable by key and documented)."""
    from textual.binding import Binding

    from trnscope.tui.app import help_sections
    from trnscope.tui.filterbox import FilterScreen
    from trnscope.tui.keyhelp import help_text
    from trnscope.tui.panes import registered_panes
    from trnscope.tui.screen_base import ExplorerScreen

    sections = help_sections()
    registered = {info.screen for info in registered_panes()}
    panes = [cls for cls in _every_pane_class() if cls is not FilterScreen]
    assert panes and set(panes) == registered, set(panes) ^ registered
    bound = {
        b.action.split("(")[0].removeprefix("app.")
        for _, bindings in sections
        for b in bindings
        if isinstance(b, Binding)
    }
    for screen in (TrnscopeApp, ExplorerScreen, FilterScreen, *panes):
        actions = {name.removeprefix("action_") for name in vars(screen) if name.startswith("action_")}
        assert actions <= bound, (screen.__name__, actions - bound)
    text = help_text(sections)
    titles = [title for title, _ in sections]
    for info in registered_panes():
        assert info.title in titles
    for _, bindings in sections:
        for b in bindings:
            assert isinstance(b, Binding) and (b.tooltip or b.description) in text


async def test_palette_runs_a_screen_action_named_by_its_binding() -> None:
    """The palette's actions come from the screen's bindings (tooltips as titles)."""
    app = TrnscopeApp([str(CPU_SESSION)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        screen = app.screen
        assert isinstance(screen, OpsScreen) and screen.state.group_by == "op"
        await press(pilot, "ctrl+p")
        for ch in "group by: op":
            await pilot.press(ch)
        await palette_results(pilot)
        await press(pilot, "enter")
        await settle(pilot)
        assert app.screen is screen and screen.state.group_by == "shape"


async def test_a_failing_worker_becomes_a_notification(monkeypatch) -> None:
    """An exception in a background job is shown; the app and the screen stay usable."""
    import trnscope.tui.screen_ops as screen_ops

    def broken(*_: object) -> str:
        raise RuntimeError("boom in a worker")

    app = TrnscopeApp([str(CPU_SESSION)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        screen = app.screen
        monkeypatch.setattr(screen_ops, "_top_device_work", broken)
        await press(pilot, "j")  # the detail pane's worker runs and fails
        messages = [n.message for n in app._notifications]
        assert any("boom in a worker" in m and "failed" in m for m in messages), messages
        assert app.is_running and app.screen is screen
        monkeypatch.undo()
        await press(pilot, "s")  # still answers keys
        assert screen.state.sort_key


async def test_a_filter_that_matches_nothing_shows_no_rows() -> None:
    app = TrnscopeApp([str(CPU_SESSION)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        screen = app.screen
        assert isinstance(screen, OpsScreen)
        await press(pilot, "slash")
        for ch in "qqqzzz":
            await pilot.press(ch)
        await press(pilot, "enter")
        table = screen.query_one(VirtualTable)
        assert table.model.rows == 0 and table.current_index == -1
        assert "no rows match" in str(screen.query_one("#viewinfo").render())
        await press(pilot, "escape")  # clears the filter
        assert table.model.rows > 0


def test_compare_headers_are_short_and_distinct() -> None:
    from trnscope.core.analysis.compare import CompareRow, Comparison, Figures
    from trnscope.tui.models import compare_model

    labels = ["hta_diff_control_a100", "hta_diff_test_v100", "hta_diff_test_v100_bf16"]
    rows = [CompareRow("aten::mm", "op", [Figures(1, 10, 10, 5, 5)] * 3)]
    comparison = Comparison(labels, rows, [], [], "device_total_ns", "CUDA", [False] * 3)
    titles = [c.title for c in compare_model(comparison, rows, 120).columns]
    assert titles[titles.index("A") :] == ["A", "B", "C", "ΔB", "B÷A", "ΔC", "C÷A"]
    assert len(set(titles)) == len(titles)


async def test_quit_and_help_are_in_the_footer_at_80_columns() -> None:
    """q and ? stay visible at 80×24 on the op table and the drill-down (fewer keys
    shown, none cut)."""
    from trnscope.tui.keyhints import KeyHints

    app = TrnscopeApp([str(CPU_SESSION)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        for keys in ((), ("enter",)):
            await press(pilot, *keys)
            hints = app.screen.query_one(KeyHints)
            text = hints.render().plain
            assert "q Quit" in text and "? Help" in text, text
            assert len(text) <= 80
            # every hint drawn is whole: its key and its whole description
            every = [*hints.shown(), *filter(None, [hints.palette()])]
            shown = {key: (display, description) for key, display, description, _, _ in every}
            for hint in hints.hints:
                display, description = shown[hint.key]
                assert text[hint.start : hint.end] == f"{display} {description}".strip()


async def test_key_hints_follow_focus_and_press_their_key_on_click() -> None:
    """The key line changes with what has the focus (the filter's own keys while it
    is open), a click on a hint presses its key, and a line too narrow for every hint
    leaves whole hints out instead of cutting one."""
    from trnscope.tui.keyhints import KeyHints

    app = TrnscopeApp([str(CPU_SESSION)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        hints = app.screen.query_one(KeyHints)
        before = hints.render().plain
        await press(pilot, "slash")
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "filter"
        assert hints.render().plain != before
        await press(pilot, "escape")
        help_hint = next(h for h in hints.hints if h.key == "question_mark")
        await pilot.hover(KeyHints, offset=(help_hint.start, 0))
        await pilot.pause()
        assert hints.tooltip == help_hint.tooltip == "this help"
        await pilot.click(KeyHints, offset=(help_hint.start, 0))
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await press(pilot, "escape")
        hints = app.screen.query_one(KeyHints)
        await pilot.resize_terminal(30, 24)
        await pilot.pause()
        narrow = hints.render().plain
        assert len(narrow) <= 30 and narrow
        every = [*hints.shown(), *filter(None, [hints.palette()])]
        whole = {f"{display} {description}".strip() for _, display, description, _, _ in every}
        assert all(narrow[h.start : h.end] in whole for h in hints.hints)
        assert len(hints.hints) < len(hints.shown())


def test_long_names_lose_their_middle_not_their_end() -> None:
    from rich.text import Text

    from trnscope.tui.vtable import elide_middle

    name = "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(Params)"
    shown = elide_middle(Text(name), 40)
    assert shown.cell_len == 40 and "…" in shown.plain
    assert shown.plain.startswith("void cutlass::Kernel2<") and shown.plain.endswith("ign8>(Params)")
    assert elide_middle(Text("aten::mm"), 40).plain == "aten::mm"


@requires_corpus
@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_drill_down_first_screen_tells_the_story(size: tuple[int, int]) -> None:
    """The op, its own runtime calls and its kernel are on the first screen; its 33
    Python frames and parents are one line ("in aten::linear ← … ← 33 Python frames")
    that e (or Enter on it) expands, keeping the op in view."""
    app = TrnscopeApp([str(H100)])
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "slash", *"^aten::addmm$", "enter", "enter")
        drill = app.screen
        assert isinstance(drill, DrillScreen) and drill.chain is not None
        view = drill.query_one("#chain", VirtualTable)
        top = view.scroll_offset.y
        on_screen = [drill.shown[i] for i in range(top, min(top + view.size.height - 1, len(drill.shown)))]
        kinds = [drill.chain.hops[i].kind if i >= 0 else "context" for i in on_screen]
        assert kinds[0] == "context" and kinds[1] == "op"
        assert "runtime" in kinds and "kernel" in kinds
        line = view.model.cells(0)[3]
        assert "in aten::linear ← ProfilerStep#" in str(line) and "Python frames" in str(line)
        await press(pilot, "e")
        assert drill.show_context and len(drill.shown) == len(drill.chain.hops)
        op_row = next(i for i, h in enumerate(drill.chain.hops) if h.kind == "op")
        top = view.scroll_offset.y
        assert top <= op_row < top + view.size.height - 1  # still in view
        await press(pilot, "e")
        assert not drill.show_context


async def test_compare_filter_metric_and_python_rows() -> None:
    app = TrnscopeApp([str(SAMPLES / "cpu_rmsnorm_session")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "c")
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        await press(pilot, "v")
        assert compare.view == "ops"
        assert all(r.kind != "python" for r in compare.shown_rows)
        hidden = len(compare.shown_rows)
        await press(pilot, "p")
        assert len(compare.shown_rows) > hidden and any(r.kind == "python" for r in compare.shown_rows)
        await press(pilot, "p", "slash", *"^aten::mul$", "enter")
        assert [r.key for r in compare.shown_rows] == ["aten::mul"]
        seen = [compare.comparison.primary]
        for _ in range(5):
            await press(pilot, "m")
            seen.append(compare.comparison.primary)
        assert seen == ["cpu_total_ns", "calls", "dispatch_ns", "device_total_ns", "self_cpu_ns", "cpu_total_ns"]
        await press(pilot, "slash", *"zzz-none", "enter")
        assert compare.shown_rows == []
        assert "no rows match" in str(compare.query_one("#compare-info").render())
        await press(pilot, "escape")  # clears the filter, stays on the compare view
        assert app.screen is compare and compare.filter_text == "" and compare.shown_rows
        # CPU-only variants launch no device work: v skips the view of device work
        # per region, which could only say it is empty; the diagnosis says "no device"
        assert not compare.comparison.kernels and compare.views == ("regions", "ops", "diagnosis")
        await press(pilot, "v")
        assert compare.view == "diagnosis"
        idle = compare.query_one(VirtualTable).model.cells(3)  # under the median step and its ratio to A
        assert idle[0] == "device idle" and set(idle[1:]) == {"no device"}
        await press(pilot, "v")
        assert compare.view == "regions"


async def test_resize_lays_the_table_out_again_and_columns_can_be_chosen() -> None:
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        ops = app.screen
        assert isinstance(ops, OpsScreen)
        view = ops.query_one(VirtualTable)
        keys = lambda: [c.key for c in view.model.columns]  # noqa: E731
        assert "share" not in keys() and "cpu_avg" not in keys()
        await pilot.resize_terminal(140, 30)
        await settle(pilot)
        assert "share" in keys() and "cpu_avg" in keys()  # no key pressed
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        assert "share" in keys() and "cpu_avg" not in keys()
        # the chooser: CPU avg on, share off, at this width
        await press(pilot, "o")
        assert isinstance(app.screen, PickScreen)
        items = app.screen.items
        await press(pilot, *["down"] * next(i for i, t in enumerate(items) if "CPU avg" in t), "enter")
        await settle(pilot)
        assert isinstance(app.screen, PickScreen)  # stays open for the next toggle
        items = app.screen.items
        await press(pilot, *["down"] * next(i for i, t in enumerate(items) if "share" in t), "enter", "escape")
        assert app.screen is ops
        assert "cpu_avg" in keys() and "share" not in keys()


@requires_corpus
async def test_flops_columns_from_130_wide_or_by_the_chooser() -> None:
    """The H100 trace has input shapes: FLOPs and FLOP/s per op, as key_averages(with_flops)
    would count them; hidden at 100 columns until chosen."""
    from trnscope.core.analysis.flops import flops_columns

    app = TrnscopeApp([str(H100)])
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_loaded(pilot)
        ops = app.screen
        assert isinstance(ops, OpsScreen)
        view = ops.query_one(VirtualTable)
        keys = lambda: [c.key for c in view.model.columns]  # noqa: E731
        assert "flops" in keys() and "flops_per_s" in keys()
        table = ops._table
        columns = flops_columns(ops.analysis, table)
        assert columns is not None
        g = table.find("aten::addmm")
        cells = [str(c) for c in view.model.cells(g)]
        # 26 addmm calls: Σ 2·M·K·N over their shapes; ÷ their 197.6 µs of CUDA time
        assert columns.flops[g] == 8_029_194_240
        assert cells[keys().index("flops")] == "8.03G" and cells[keys().index("flops_per_s")] == "40.6T"
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        assert "flops" not in keys()
        await press(pilot, "o")
        assert isinstance(app.screen, PickScreen)
        items = app.screen.items
        await press(pilot, *["down"] * next(i for i, t in enumerate(items) if "FLOPs" in t), "enter")
        await settle(pilot)
        # CUDA allocations (profile_memory): device memory columns by the chooser, as
        # key_averages' "CUDA Mem"
        items = app.screen.items
        await press(pilot, *["down"] * next(i for i, t in enumerate(items) if "CUDA Mem" in t), "enter", "escape")
        await settle(pilot)
        assert "flops" in keys() and "device_memory" in keys()
        from trnscope.core.analysis.memory import memory_columns

        memory = memory_columns(ops.analysis, ops._table)
        assert memory is not None
        cells = [str(c) for c in view.model.cells(g)]
        assert cells[keys().index("device_memory")] == "13.30 MB"  # key_averages: 13.30 MB
        assert int(memory.device[g]) > 13 << 20


@requires_corpus
async def test_the_table_comes_before_its_slow_extra_columns(monkeypatch) -> None:
    """Reading every [memory] record takes seconds on a large trace: the op table is
    shown first, and its memory and FLOPs columns join it when they are ready."""
    import asyncio
    import threading

    from trnscope.tui import screen_ops
    from trnscope.tui.models import NO_EXTRAS

    release = threading.Event()
    real = screen_ops.memory_columns

    def slow_memory_columns(analysis, table, groups=None):  # type: ignore[no-untyped-def]
        release.wait(30)
        return real(analysis, table, groups)

    monkeypatch.setattr(screen_ops, "memory_columns", slow_memory_columns)
    app = TrnscopeApp([str(H100)], use_cache=False)  # a first open: the records are not read yet
    async with app.run_test(size=(140, 30)) as pilot:
        for _ in range(400):  # the table appears while the memory columns are still being read
            await pilot.pause(0.05)
            screen = app.screen
            if isinstance(screen, OpsScreen) and screen._table is not None:
                break
        ops = app.screen
        assert isinstance(ops, OpsScreen) and ops._table is not None
        assert ops._extras is NO_EXTRAS and ops.query_one(VirtualTable).model.size > 0
        release.set()
        await asyncio.sleep(0)
        await settle(pilot)
        assert ops._extras.memory is not None and ops._extras.flops is not None
        keys = [c.key for c in ops.query_one(VirtualTable).model.columns]
        assert "cpu_memory" in keys and "flops" in keys


@requires_corpus
async def test_sort_cycles_through_the_flops_and_memory_columns() -> None:
    from trnscope.core.analysis.flops import flops_columns

    app = TrnscopeApp([str(H100)])
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_loaded(pilot)
        ops = app.screen
        assert isinstance(ops, OpsScreen)
        for _ in range(20):
            if ops.state.sort_key == "flops":
                break
            await press(pilot, "s")
        assert ops.state.sort_key == "flops"
        assert "sort FLOPs ▼" in str(ops.query_one("#viewinfo").render())
        columns = flops_columns(ops.analysis, ops._table)
        assert columns is not None
        shown = [int(i) for i in ops.query_one(VirtualTable).model.order]
        assert ops._table.name[shown[0]] == "aten::addmm"  # 8.03 GFLOP: the most
        values = [int(columns.flops[g]) for g in shown]
        assert values == sorted(values, reverse=True)


@requires_corpus
async def test_unknown_flops_are_a_warning_the_status_line_counts(capsys) -> None:
    """The 2021 trace's conv2d calls have no Concrete Inputs: the warning `summary`
    prints is in the warnings screen and the status line's count too."""
    import json

    from trnscope.cli.main import main

    trace = CORPUS / "kineto_resnet50_2021.json.gz"
    assert main(["summary", str(trace), "--format", "json", "--with", "flops"]) == 0
    printed = json.loads(capsys.readouterr().out)["warnings"]
    assert any("FLOPs unknown for" in w for w in printed)
    app = TrnscopeApp([str(trace)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        ops = app.screen
        assert isinstance(ops, OpsScreen)
        assert f"⚠ {len(printed)}" in str(ops.query_one("#status").render())
        await press(pilot, "w")
        assert isinstance(app.screen, WarningsScreen)
        assert app.screen.text.count("⚠") == len(printed) and "FLOPs unknown for" in app.screen.text


async def test_help_warnings_and_back_work_on_every_pane() -> None:
    """? and w on each pane (the timeline's and the diagnosis's keys in help too), and
    esc always leads back to where the user came from — also out of a variant's op
    table opened from the compare view (which used to be a dead end)."""
    from trnscope.tui.screen_diagnose import DiagnoseScreen
    from trnscope.tui.screen_text import HelpScreen as Help
    from trnscope.tui.screen_timeline import TimelineScreen

    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        root = app.screen
        assert isinstance(root, OpsScreen)

        async def help_and_warnings(expect_in_help: str) -> None:
            pane = app.screen
            await press(pilot, "question_mark")
            assert isinstance(app.screen, Help) and expect_in_help in str(app.screen.text)
            await press(pilot, "escape")
            await press(pilot, "w")
            assert isinstance(app.screen, WarningsScreen)
            await press(pilot, "escape")
            assert app.screen is pane

        for key, kind, help_words in (
            ("T", TimelineScreen, "zoom in around the cursor"),
            ("d", DiagnoseScreen, "findings → steps in time order"),
            ("enter", DrillScreen, "next instance"),
        ):
            await press(pilot, key)
            assert isinstance(app.screen, kind), key
            await help_and_warnings(help_words)
            await press(pilot, "escape")
            assert app.screen is root, key
        # a row of the device-event table drills into that kernel's instances (its
        # title once read the op table's names and ended the app with a traceback)
        await press(pilot, "t")
        kernels = root._table
        assert root.state.mode == "kernels" and len(kernels)
        await press(pilot, "enter")
        drill = app.screen
        assert isinstance(drill, DrillScreen)
        title = str(drill.query_one("#drill-title").render())
        assert kernels.name[root.query_one("#table", VirtualTable).current_index] in title
        await help_and_warnings("next instance")
        await press(pilot, "escape")
        assert app.screen is root and root.state.mode == "kernels"
        await press(pilot, "t")
        await press(pilot, "c")
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        await help_and_warnings("the op table of the chosen variant")
        await press(pilot, "2", "o")
        variant = app.screen
        assert isinstance(variant, OpsScreen) and variant is not root
        await press(pilot, "escape")
        assert app.screen is compare
        await press(pilot, "escape")
        assert app.screen is root
        await press(pilot, "escape")  # the first pane: nothing behind it, the app stays
        assert app.screen is root and app.is_running


async def test_the_explorers_diagnosis_view_keeps_each_variants_figures_together() -> None:
    """The last variant's column took the width left over: its figures sat 40 cells
    away from the others', and as the one flex column it would be elided (a figure
    cut) in a narrow table; the labels take that width now."""
    bench = SAMPLES / "nki_synthetic_rmsnorm_benchmarks"
    app = TrnscopeApp([str(bench)])
    async with app.run_test(size=(80, 24)) as pilot:
        compare = await open_comparison(pilot)
        while compare.view != "ops":
            await press(pilot, "v")
        # a kernel's row in the ops view is device work: it read "CPU 0.0us · dispatch 0.0us"
        detail = compare.query_one("#compare-detail")._shown.plain.split("\n")[1:]
        assert detail[0].endswith("53 launches · device 7.43ms") and "CPU" not in detail[0], detail
        while compare.view != "diagnosis":
            await press(pilot, "v")
        model = compare.query_one(VirtualTable).model
        assert [c.flex for c in model.columns] == [True, False, False, False]
        rows = {model.cells(i)[0]: model.cells(i)[1:] for i in range(model.size)}
        assert rows["host-bound steps"] == ["no steps"] * 3 and rows["launches"] == ["53"] * 3


async def test_p_says_why_a_classic_trace_has_no_python_rows_and_toggles_them_under_the_other_rule() -> None:
    """A torch 2.11 capture (classic rule): frames are no op rows, and ``p`` says so and
    how to get them; the same trace under ``--op-tree python`` shows them and ``p``
    hides them."""
    session = str(SAMPLES / "cuda_rmsnorm_session")
    app = TrnscopeApp([session])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        assert not any(".py(" in name for name in table_names(app))
        await press(pilot, "p")
        messages = [n.message for n in app._notifications]
        assert any("--op-tree python" in m and "no rows here" in m for m in messages), messages
        assert not app.screen.state.hide_python
    app = TrnscopeApp([session], op_tree="python")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        assert any(".py(" in name for name in table_names(app))
        await press(pilot, "p")
        assert app.screen.state.hide_python
        assert not any(".py(" in name for name in table_names(app))
