"""Helpers shared by the Pilot and snapshot tests of the explorer."""

from __future__ import annotations

from typing import Any

from trnscope.tui.app import LoadingScreen


async def wait_loaded(pilot: Any, timeout: float = 60.0) -> None:
    """Wait until the first screen after loading is up and its workers are done."""
    app = pilot.app
    waited = 0.0
    while waited < timeout:
        await pilot.pause(0.05)
        waited += 0.05
        if len(app.screen_stack) and not isinstance(app.screen, LoadingScreen) and app.screen.is_mounted:
            break
    await settle(pilot)


async def settle(pilot: Any) -> None:
    """Let thread workers finish and their results reach the screen."""
    from textual.worker import WorkerCancelled

    app = pilot.app
    for _ in range(3):
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:  # an exclusive worker replaced by a newer one (a resize)
            await pilot.pause(0.05)
            await app.workers.wait_for_complete()
        await pilot.pause(0.05)
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.05)


async def press_until_exit(pilot: Any, key: str, timeout: float = 10.0) -> None:
    """Press ``key`` and wait (up to ``timeout``) until the app has stopped running."""
    await pilot.press(key)
    waited = 0.0
    while pilot.app.is_running and waited < timeout:
        await pilot.pause(0.05)
        waited += 0.05


async def press(pilot: Any, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def palette_results(pilot: Any, timeout: float = 10.0) -> None:
    """Wait until the command palette lists results for what was typed (its search
    runs asynchronously: a fixed pause is too short on a loaded machine)."""
    from textual.command import CommandList

    waited, last, steady = 0.0, -1, 0
    while waited < timeout:
        await pilot.pause(0.1)
        waited += 0.1
        lists = pilot.app.screen.query(CommandList)
        count = lists.first().option_count if lists else 0
        steady = steady + 1 if count == last and count > 0 else 0
        last = count
        if steady >= 3:  # the same results for 0.3 s: the search has finished adding
            return
    raise AssertionError("the command palette showed no results")


class TerminalCells:
    """What a terminal shows: each cell's character and style, as frames set them (the
    model ``ChangingFrames`` and ``bench/tui_latency.py``'s "change" timing share)."""

    def __init__(self) -> None:
        self.cells: dict[tuple[int, int], tuple[str, Any]] = {}

    def apply(self, frame: Any, console: Any) -> set[int]:
        """Write one frame (a Textual compositor update) onto the cells; the rows it
        changed (none: it repainted what was there)."""
        from rich.cells import cell_len

        rows: set[int] = set()
        x = y = 0
        cells = self.cells
        for segment in frame.__rich_console__(console, console.options):
            if segment.control:
                for code in segment.control:
                    if code[0].name == "CURSOR_MOVE_TO":
                        x, y = code[1], code[2]
                continue
            if segment.text == "\n":
                x, y = 0, y + 1
                continue
            for char in segment.text:
                value = (char, segment.style)
                if cells.get((x, y)) != value:
                    cells[(x, y)] = value
                    rows.add(y)
                x += max(cell_len(char), 1)
        return rows


class ChangingFrames:
    """Counts the frames after a key press that change what a terminal shows: each
    frame the app composes is written onto a model of the screen's cells; a frame that
    repaints what is there does not count."""

    def __init__(self, app: Any) -> None:
        self.terminal = TerminalCells()
        self.changed: list[set[int]] = []  # per changing frame since ``reset``: its rows
        compose = app._display

        def display(screen: Any, renderable: Any) -> None:
            compose(screen, renderable)
            if renderable is not None:
                rows = self.terminal.apply(renderable, app.console)
                if rows:
                    self.changed.append(rows)

        app._display = display

    def reset(self) -> None:
        self.changed = []


async def open_comparison(pilot: Any) -> Any:
    """Once the first screen is up, ``c``: the comparison of the session's variants
    (a ``CompareScreen``, checked)."""
    from trnscope.tui.screen_compare import CompareScreen

    await wait_loaded(pilot)
    await press(pilot, "c")
    screen = pilot.app.screen
    assert isinstance(screen, CompareScreen)
    return screen
