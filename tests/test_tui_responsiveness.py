"""What keeps keys fast: full garbage collections only while the user is idle, text
panels that re-lay out the screen only when their height changes, and a table that lays
its columns out again only for a new width.  (The speeds themselves are measured by
``bench/tui_latency.py``; these tests check the mechanisms, never a time.)"""

from __future__ import annotations

import gc
from collections.abc import Callable

import numpy as np
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from tui_helpers import settle, wait_loaded

from conftest import SAMPLES
from trnscope.tui import idle_gc
from trnscope.tui.app import TrnscopeApp
from trnscope.tui.idle_gc import IdleCollector
from trnscope.tui.textpanel import TextPanel
from trnscope.tui.vtable import Column, TableModel, VirtualTable


def record_calls(
    owner: object, method: str, note: Callable[..., object] = lambda *args, **kwargs: args
) -> list[object]:
    """The calls of ``owner.method`` from now on, each noted as ``note(*args, **kwargs)``
    (the call itself goes through as before)."""
    calls: list[object] = []
    real = getattr(owner, method)

    def recording(*args: object, **kwargs: object) -> object:
        calls.append(note(*args, **kwargs))
        return real(*args, **kwargs)

    setattr(owner, method, recording)
    return calls


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def young_collections_until_full_due(collector: IdleCollector) -> None:
    """The middle generation collected as often as Python's own rule waits for before a
    full collection (the threshold the collector saved)."""
    while gc.get_count()[2] < collector_threshold(collector):
        gc.collect(1)


def test_idle_collector_freezes_defers_and_puts_everything_back() -> None:
    before = gc.get_threshold()
    clock, busy = Clock(), [False]
    collector = IdleCollector(busy=lambda: busy[0], clock=clock)
    collector.start()
    try:
        assert gc.get_freeze_count() > 0  # what lived at start is never traversed again
        assert gc.get_threshold()[:2] == before[:2]  # the young generations as before
        assert gc.get_threshold()[2] >= idle_gc.NEVER  # Python starts no full collection itself
        gc.collect(1)
        young_collections_until_full_due(collector)
        collector.input_seen()
        assert not collector.due()  # a key just came
        clock.now += idle_gc.IDLE_S
        busy[0] = True
        assert not collector.due()  # a worker is busy
        busy[0] = False
        assert collector.due()
        collector.tick()
        assert collector.collections == 1
        assert gc.get_count()[2] == 0
        assert not collector.due()  # nothing pending any more
    finally:
        collector.stop()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_idle_collector_collects_when_overdue_even_while_keys_keep_coming() -> None:
    clock = Clock()
    collector = IdleCollector(busy=lambda: True, clock=clock)
    collector.start()
    try:
        collector.input_seen()
        young_collections_until_full_due(collector)
        assert not collector.due()
        while gc.get_count()[2] < idle_gc.OVERDUE * collector_threshold(collector):
            gc.collect(1)
        assert collector.due()
    finally:
        collector.stop()


def collector_threshold(collector: IdleCollector) -> int:
    saved = collector._saved
    assert saved is not None
    return max(saved[2], 1)


def test_the_collector_leaves_what_an_embedder_froze_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        collector = IdleCollector(busy=lambda: False)
        collector.start()
        collector.stop()
        assert gc.get_freeze_count() >= frozen > 0
    finally:
        gc.unfreeze()


def test_the_collector_is_off_before_start_and_after_stop() -> None:
    collector = IdleCollector(busy=lambda: False)
    assert not collector.started and not collector.due()
    collector.stop()  # stopping what never started changes nothing
    collector.start()
    collector.start()  # twice: still one saved setting to put back
    collector.stop()
    assert not collector.started and gc.get_freeze_count() == 0


async def test_the_explorer_runs_the_collector_and_restores_the_interpreter_on_exit() -> None:
    before = gc.get_threshold()
    app = TrnscopeApp([str(SAMPLES / "cpu_rmsnorm_session")])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        assert app.collector.started
        assert gc.get_threshold()[2] >= idle_gc.NEVER
        await pilot.press("j")
        assert app.collector._clock() - app.collector._last_input < 5  # the key was seen
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


class PanelApp(App[None]):
    CSS = """
    #panel { height: auto; min-height: 3; max-height: 6; border-top: solid red; padding: 0 1; }
    #fixed { height: 2; }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("filler")
            yield TextPanel(id="panel")
            yield TextPanel(id="fixed")


async def test_a_text_panel_lays_the_screen_out_only_when_its_height_changes() -> None:
    app = PanelApp()
    async with app.run_test(size=(40, 20)) as pilot:
        panel = app.query_one("#panel", TextPanel)
        layouts = record_calls(panel, "refresh", lambda *regions, layout=False, **kwargs: layout)

        async def show(text: str) -> bool:
            layouts.clear()
            panel.update(Text(text))
            await pilot.pause()
            return any(layouts)

        assert panel.region.height == 3  # empty: its min-height, a border and 2 lines
        assert not await show("one line")  # same height: only the panel repaints
        assert not await show("another line")
        assert not await show("two\nlines")  # still within the minimum height
        assert await show("one\ntwo\nthree\nfour")  # taller: laid out again
        assert panel.region.height == 5
        assert not await show("1\n2\n3\n4")
        assert await show("word " * 21)  # 7 words a line in 38 columns: 3 lines
        assert panel.region.height == 4
        assert await show("a\nb\nc\nd\ne\nf\ng\nh")  # capped at max-height 6
        assert panel.region.height == 6
        assert not await show("a\nb\nc\nd\ne\nf\ng")  # 7 lines: still the cap
        assert await show("short")
        assert panel.region.height == 3
        fixed = app.query_one("#fixed", TextPanel)
        fixed.update(Text("x\ny\nz"))  # a fixed height never asks for a layout
        await pilot.pause()
        assert fixed.region.height == 2
        panel.update(Text("forced"), layout=True)  # the caller may still decide
        await pilot.pause()


class TableApp(App[None]):
    CSS = "#grow { height: auto; }"

    def compose(self) -> ComposeResult:
        names = [f"op_{i}" for i in range(200)]
        model = TableModel(
            [Column("name", "name", 10, "left", flex=True), Column("n", "n", 6)],
            len(names),
            lambda i: [names[i], str(i)],
            names={"name": names.__getitem__},
        )
        with Vertical():
            yield VirtualTable(model, id="table")
            yield Static("", id="grow")


async def test_the_table_lays_its_columns_out_again_only_for_a_new_width() -> None:
    app = TableApp()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(VirtualTable)
        await pilot.pause()
        calls = record_calls(table, "_layout_columns", lambda: table.size.width)
        app.query_one("#grow", Static).update("1\n2\n3\n4")  # the table gets shorter
        await settle(pilot)
        assert table.size.height < 19 and calls == []
        await pilot.resize_terminal(80, 20)
        await settle(pilot)
        assert calls and calls[-1] == table.size.width == 80


async def test_a_rebuilt_table_arrives_with_the_detail_of_the_row_under_the_cursor() -> None:
    """Sorting, grouping and filtering show the new table and its cursor row's detail in
    one update (the rebuild makes both); the detail always describes that row."""
    from textual.widgets import Static

    from trnscope.tui.screen_ops import OpsScreen

    app = TrnscopeApp([str(SAMPLES / "cpu_rmsnorm_session")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        screen = app.screen
        assert isinstance(screen, OpsScreen)
        started = record_calls(screen, "_detail")
        view = screen.query_one("#table", VirtualTable)
        for keys in (["s"], ["b"], ["b"], ["r"], ["j", "j"], ["slash", "m", "u", "l", "enter"]):
            started.clear()
            for key in keys:
                await pilot.press(key)
            await settle(pilot)
            table = screen._table
            assert table is not None and view.current_index >= 0
            detail = str(screen.query_one("#detail", Static).render())
            assert detail.startswith(table.shown_name[view.current_index]), (keys, detail)
            if keys != ["j", "j"]:
                assert started == [], keys  # no second round trip for the detail
            else:
                assert len(started) == 2  # a cursor move: its own detail


async def test_a_grow_only_panel_keeps_its_height_for_shorter_text() -> None:
    class GrowApp(App[None]):
        CSS = "#panel { height: auto; min-height: 2; max-height: 8; }"

        def compose(self) -> ComposeResult:
            with Vertical():
                yield Static("filler")
                yield TextPanel(id="panel", grow_only=True)

    app = GrowApp()
    async with app.run_test(size=(40, 20)) as pilot:
        panel = app.query_one("#panel", TextPanel)
        panel.update(Text("a\nb\nc\nd"))
        await pilot.pause()
        assert panel.region.height == 4
        panel.update(Text("short"))  # the table above keeps its bottom edge
        await pilot.pause()
        assert panel.region.height == 4 and str(panel.render()).startswith("short")
        panel.update(Text("1\n2\n3\n4\n5\n6"))  # taller: grows
        await pilot.pause()
        assert panel.region.height == 6


async def test_filter_keystrokes_refresh_the_footer_only_when_esc_changes_meaning() -> None:
    """Each refresh of the bindings asks every binding's check_action and repaints the
    key line: only the keystroke that makes the filter non-empty (or empty again) needs
    one."""
    app = TrnscopeApp([str(SAMPLES / "cpu_rmsnorm_session")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        screen = app.screen
        refreshed = record_calls(screen, "refresh_bindings", lambda: screen.filter_text)  # type: ignore[attr-defined]
        await pilot.press("slash")
        refreshed.clear()
        for key in ("m", "u", "l"):
            await pilot.press(key)
        await settle(pilot)
        assert refreshed == ["m"]
        for _ in range(3):
            await pilot.press("backspace")
        await settle(pilot)
        assert refreshed == ["m", ""]
        assert screen.filter_text == ""  # type: ignore[attr-defined]


async def test_focus_leaving_the_table_renders_only_its_cursor_row_again() -> None:
    """Opening the filter takes the focus from the table: only the cursor row looks
    different (its blurred colour), so only it is rendered again, not every row."""
    app = TrnscopeApp([str(SAMPLES / "cpu_rmsnorm_session")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        await settle(pilot)
        table = app.screen.query_one("#table", VirtualTable)
        assert table.has_focus and table.size.height > 10
        cursor_line = table.cursor - table.scroll_offset[1] + 1
        focused = table.render_line(cursor_line)
        rendered = record_calls(table, "_render_cells", lambda values, *rest, **kw: rest[2] if len(rest) > 2 else -1)
        await pilot.press("slash")
        await settle(pilot)
        assert not table.has_focus
        rows = [index for index in rendered if index >= 0]
        assert rows == [table.current_index]  # the header aside, the cursor row alone
        assert table.render_line(cursor_line).text == focused.text
        assert list(table.render_line(cursor_line)) != list(focused)  # its blurred look


async def test_a_new_filter_of_the_same_table_keeps_the_rows_it_rendered() -> None:
    """Rows are kept by data row for as long as the model's cells are the same (a filter
    or an order of the same table and columns); another grouping renders its rows anew."""
    app = TrnscopeApp([str(SAMPLES / "cpu_rmsnorm_session")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        await settle(pilot)
        table = app.screen.query_one("#table", VirtualTable)
        shown_before = {int(i) for i in table.model.order[: table.size.height - 1]}
        rendered = record_calls(table, "_render_cells", lambda values, *rest, **kw: rest[2] if len(rest) > 2 else -1)
        await pilot.press("slash", "m")
        await settle(pilot)
        await pilot.press("escape", "escape")  # out of the filter, then clear it
        await settle(pilot)
        assert table.model.rows > len(shown_before) // 2 and app.screen.filter_text == ""  # type: ignore[attr-defined]
        again = {index for index in rendered if index >= 0} & shown_before
        assert again <= {table.current_index}, again  # only the cursor's row (its look moved)
        rendered.clear()
        await pilot.press("b")  # by input shape: other cells
        await settle(pilot)
        assert len([index for index in rendered if index >= 0]) >= min(table.model.rows, table.size.height - 1) - 1


async def test_the_same_text_again_repaints_nothing() -> None:
    app = PanelApp()
    async with app.run_test(size=(40, 20)) as pilot:
        panel = app.query_one("#panel", TextPanel)
        panel.update(Text("one", style="bold"))
        await pilot.pause()
        repaints = record_calls(panel, "refresh")
        panel.update(Text("one", style="bold"))  # equal: nothing to do
        assert repaints == []
        panel.update(Text("one", style="italic"))  # same words, another style: repainted
        assert len(repaints) == 1
        panel.update(Text("one", style="italic", no_wrap=True))  # another wrapping: repainted
        assert len(repaints) == 2
        panel.update("".join(["pla", "in"]))
        panel.update("".join(["pl", "ain"]))  # an equal string, another object: nothing
        assert len(repaints) == 3
        assert str(panel.render()) == "plain"


async def test_sorting_a_drill_downs_instances_keeps_its_chain() -> None:
    """The cursor stays on the same instance when the instances are re-sorted: its chain
    is not built again (one screen update, not two)."""
    from trnscope.tui.screen_drill import DrillScreen

    app = TrnscopeApp([str(SAMPLES / "cpu_rmsnorm_session")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DrillScreen) and screen.chain is not None
        built = record_calls(screen, "_build_chain")
        view = screen.query_one("#instances", VirtualTable)
        before = (view.current_index, screen.chain.instance)
        await pilot.press("s")
        await settle(pilot)
        assert built == [] and (view.current_index, screen.chain.instance) == before
        # by time: the inverse of the instances' time ranks, the same as sorting them
        ts = app.screen.analysis.trace.events.ts[screen.rows]  # type: ignore[attr-defined]
        assert screen.sort_by == "time"
        np.testing.assert_array_equal(view.model.order, np.argsort(ts, kind="stable"))
        await pilot.press("s", "s")  # and back and forth: each order made once
        await settle(pilot)
        assert view.model.order is screen._orders["time"] and set(screen._orders) == {"dur", "time"}
        if screen.rows.size > 1:
            await pilot.press("n")
            await settle(pilot)
            assert len(built) == 1 and screen.chain.instance != before[1]


def test_the_explorer_paints_at_120_frames_a_second_unless_told_otherwise() -> None:
    """Textual reads its frame-rate cap once, at its first import: importing the explorer
    first sets 120 (a worker's result waits 8-17 ms for its frame, not 17-33 ms); a
    user's own TEXTUAL_FPS stays."""
    import os
    import subprocess
    import sys

    script = "import trnscope.tui, textual.constants; print(textual.constants.MAX_FPS)"
    env = {k: v for k, v in os.environ.items() if k != "TEXTUAL_FPS"}

    def cap(extra: dict[str, str]) -> int:
        done = subprocess.run(
            [sys.executable, "-c", script], env={**env, **extra}, capture_output=True, text=True, check=True, timeout=60
        )
        return int(done.stdout)

    assert cap({}) == 120
    assert cap({"TEXTUAL_FPS": "30"}) == 30


async def test_a_rows_device_work_is_ranked_once_per_table(monkeypatch) -> None:
    """The detail's device-work line of a row is kept for the table it was ranked for:
    filter keystrokes that land on the same row, and a cursor coming back to a row, do
    not rank it again; a new table (another grouping) starts afresh."""
    from textual.widgets import Static

    from trnscope.tui import screen_ops

    app = TrnscopeApp([str(SAMPLES / "cpu_rmsnorm_session")])
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        screen = app.screen
        assert isinstance(screen, screen_ops.OpsScreen)
        monkeypatch.setattr(screen_ops, "_top_device_work", screen_ops._top_device_work)  # put back afterwards
        ranked = record_calls(screen_ops, "_top_device_work", lambda analysis, rows: rows.size)
        view = screen.query_one("#table", VirtualTable)
        for key in ("j", "k", "j", "k"):
            await pilot.press(key)
            await settle(pilot)
        assert len(ranked) == 1  # row 1 once; row 0 was ranked when the table was shown
        landing = view.current_index
        name = screen._table.shown_name[landing]
        typed = [ch for ch in name if ch.isalnum()][:3]
        await pilot.press("slash")
        for key in typed:  # each keystroke refilters; the row stays first, under the cursor
            await pilot.press(key)
            await settle(pilot)
        assert view.current_index == landing and screen.filter_text == "".join(typed)
        assert str(screen.query_one("#detail", Static).render()).startswith(name)
        assert len(ranked) == 1, ranked
        await pilot.press("enter", "escape", "b")
        await settle(pilot)
        assert len(ranked) == 2  # a new table (grouped by input shape): its landing row ranked for it


async def test_scrolling_sends_one_frame_not_an_animation(monkeypatch) -> None:
    """Over a slow link an animated scroll is ~50 frames for one key (end in the help:
    1.2 s); the explorer scrolls at once unless TEXTUAL_ANIMATIONS asks otherwise."""
    from textual.containers import VerticalScroll
    from tui_helpers import press

    monkeypatch.delenv("TEXTUAL_ANIMATIONS", raising=False)
    app = TrnscopeApp([str(SAMPLES / "cpu_train_tiny_session")])
    assert app.animation_level == "none"
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "question_mark")
        box = app.screen.query_one("#text-box", VerticalScroll)
        frames = record_calls(app, "_display")
        box.scroll_end()  # what end does
        await pilot.pause()
        assert box.scroll_y == box.max_scroll_y > 0 and len(frames) <= 2
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "full")
    assert TrnscopeApp([str(SAMPLES / "cpu_train_tiny_session")]).animation_level == "full"
