"""The base of the explorer's screens: one place where a failed background job becomes
a notification, so an exception in a worker never ends the app."""

from __future__ import annotations

from textual.screen import Screen
from textual.worker import Worker, WorkerState


class ExplorerScreen(Screen[None]):
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
