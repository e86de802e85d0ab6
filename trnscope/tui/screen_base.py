"""The base of the explorer's panes: the back key, the analyses the warnings key
reports on, and one place where a failed background job becomes a notification (an
exception in a worker never ends the app)."""

from __future__ import annotations

from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.base.text import safe_text
from trnscope.tui.vtable import VirtualTable


class ExplorerScreen(Screen[None]):
    # inherited by every pane (Textual merges a class's BINDINGS with its bases')
    BINDINGS = [Binding("escape", "back", "Back", tooltip="back to where you came from")]

    def analyses_shown(self) -> list[Analysis]:
        """What the warnings key (w) reports on for this pane."""
        analysis = getattr(self, "analysis", None)
        return [analysis] if isinstance(analysis, Analysis) else []

    def warning_lines(self) -> list[str] | None:
        """For a pane that shows no one trace (the ranks view): the warnings the
        warnings key lists instead of the traces' own."""
        return None

    def pane_notes(self) -> list[str]:
        """What this pane itself has to say beside its traces' warnings (a comparison's
        notes); the warnings key lists them first."""
        return []

    def can_go_back(self) -> bool:
        """Whether esc has something to do here (the first pane has nothing behind it)."""
        return len(self.app.screen_stack) > 2

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # esc is offered (and shown in the footer) only where it leads somewhere
        return self.can_go_back() if action == "back" else True

    def action_back(self) -> None:
        """Back to the pane this one was opened from."""
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def on_virtual_table_columns_hidden(self, message: VirtualTable.ColumnsHidden) -> None:
        """A table too narrow for its columns leaves the last ones out rather than cut
        their figures; a pane with a line of its own says so there (the op table),
        any other says it once here, each time the set changes."""
        if message.titles:
            titles = ", ".join(safe_text(title) for title in message.titles)
            self.app.notify(f"too narrow for every column: left out {titles} (a wider terminal shows them)")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is not WorkerState.ERROR:
            return
        error = event.worker.error
        what = event.worker.group if event.worker.group != "default" else "background work"
        self.app.notify(
            f"{what} failed: {type(error).__name__}: {error} (the screen stays usable; TRNSCOPE_DEBUG=1 shows more)",
            severity="error",
            timeout=10,
        )
