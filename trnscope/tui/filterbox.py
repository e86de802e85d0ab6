"""The ``/`` filter of a table screen, one behaviour everywhere: ``/`` shows the box with
the current text, every keystroke applies it, Enter hides an empty box and returns to
the table, and ``clear_filter`` (on Esc) empties it."""

from __future__ import annotations

from textual.widgets import Input

from trnscope.tui.screen_base import ExplorerScreen
from trnscope.tui.vtable import VirtualTable


class FilterScreen(ExplorerScreen):
    """A screen that composes ``Input(id="filter")`` and one ``VirtualTable``;
    subclasses implement ``filter_text`` (read) and ``set_filter`` (store and redraw)."""

    @property
    def filter_text(self) -> str:
        raise NotImplementedError

    def set_filter(self, text: str) -> None:
        raise NotImplementedError

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.value = self.filter_text
        box.focus()
        self.refresh_bindings()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            had_text = bool(self.filter_text)
            self.set_filter(event.value)
            if had_text != bool(event.value):
                # what esc does changed (it clears a filter, else goes back): the key
                # line says so.  Not on every keystroke: a refresh of the bindings asks
                # every binding's check_action and repaints the key line
                self.refresh_bindings()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            event.input.display = bool(self.filter_text)
            self.query_one(VirtualTable).focus()

    def can_go_back(self) -> bool:
        return bool(self.filter_text) or self.query_one("#filter", Input).display or super().can_go_back()

    def action_back(self) -> None:
        if self.clear_filter():  # esc clears the filter first, then goes back
            return
        super().action_back()

    def clear_filter(self) -> bool:
        """Empty and hide the box; False when there was nothing to clear."""
        box = self.query_one("#filter", Input)
        if not (box.display or self.filter_text):
            return False
        box.value = ""
        box.display = False
        self.set_filter("")
        self.query_one(VirtualTable).focus()
        self.refresh_bindings()
        return True
