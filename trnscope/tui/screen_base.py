"""The base of the explorer's panes: the back key, the analyses the warnings key
reports on, and one place where a failed background job becomes a notification (an
exception in a worker never ends the app)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.base.text import safe_text
from trnscope.tui.vtable import VirtualTable

Figures = TypeVar("Figures")

# A pane whose figures pass over every event (the timeline's lanes, the diagnosis)
# computes them as it opens, for its first frame, up to this many events: 5-13 ms on
# the real traces of 132,000-239,000 events (2 cores).  Past it they come from a worker
# while the pane says what it is doing: from a worker they came a frame later (20-30 ms),
# after a frame of the placeholder.
AT_ONCE_EVENTS = 300_000


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

    def figures(
        self, compute: Callable[[], Figures], show: Callable[[Figures], None], *, events: int, group: str
    ) -> None:
        """``show(compute())``: at once for a trace of at most ``AT_ONCE_EVENTS`` events,
        else from a thread worker (exclusive in ``group``).  Either way a failure is a
        notification, never the end of the app."""
        if events <= AT_ONCE_EVENTS:
            try:
                figures = compute()
            except Exception as error:  # as a worker's error would be reported
                self._report_failure(group, error)
                return
            show(figures)
            return

        def in_worker() -> None:
            figures = compute()
            self.app.call_from_thread(show, figures)

        self.run_worker(in_worker, thread=True, exclusive=True, group=group, exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is not WorkerState.ERROR:
            return
        error = event.worker.error
        self._report_failure(event.worker.group, error if isinstance(error, BaseException) else Exception(str(error)))

    def _report_failure(self, group: str, error: BaseException) -> None:
        what = group if group != "default" else "background work"
        self.app.notify(
            f"{what} failed: {type(error).__name__}: {error} (the screen stays usable; TRNSCOPE_DEBUG=1 shows more)",
            severity="error",
            timeout=10,
        )
