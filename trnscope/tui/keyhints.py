"""The key line at the bottom of every screen: the keys that work here, one line.

Textual's ``Footer`` mounts a widget per key and recomposes them (new widgets, their
styles, a layout of the screen) whenever the bindings change: on every screen
change and every change of focus.  That was 50-70 ms of each such key at 2.9 M events
(leaving the drill-down 159 → 105 ms, opening the filter 159-176 → 111-127 ms, Pilot's
own ~85 ms wait included, 160×48).  Here the line is one widget that renders one
``Text``: a change of bindings repaints one row and lays nothing out.

What it shows is what the Footer showed, in the same order: each action's first
shown binding (``show=True``) of the focused widget, its screen and the app; a key
whose action is disabled here (``check_action`` → None) dimmed; one hidden
(``check_action`` → False) left out.  Hints are whole or absent: when the line is
wider than the screen, the hints that do not fit are left out, never cut.  A click on
a hint presses its key; the mouse over a hint shows its tooltip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from rich.text import Text
from textual import events
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.screen import Screen


class Hint(NamedTuple):
    """One key's place on the line: cells [start, end)."""

    start: int
    end: int
    key: str
    enabled: bool
    tooltip: str


class KeyHints(Widget):
    COMPONENT_CLASSES = {"key-hints--key", "key-hints--description", "key-hints--disabled", "key-hints--separator"}
    DEFAULT_CSS = """
    KeyHints {
        dock: bottom;
        height: 1;
        width: 1fr;
        color: $footer-foreground;
        background: $footer-background;
    }
    KeyHints > .key-hints--key {
        color: $footer-key-foreground;
        background: $footer-key-background;
        text-style: bold;
    }
    KeyHints > .key-hints--description {
        color: $footer-description-foreground;
        background: $footer-description-background;
    }
    KeyHints > .key-hints--disabled {
        text-style: dim;
    }
    KeyHints > .key-hints--separator {
        color: $foreground 20%;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.hints: list[Hint] = []  # as last rendered

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if screen is self.screen:
            self.refresh()  # a repaint of this one row: no layout

    def shown(self) -> list[tuple[str, str, str, bool, str]]:
        """(key, key as shown, description, enabled, tooltip) of each hint, in order."""
        seen: set[str] = set()
        out = []
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            out.append((binding.key, self.app.get_key_display(binding), binding.description, enabled, tooltip or ""))
        return out

    def palette(self) -> tuple[str, str, str, bool, str] | None:
        """The command palette's key, shown at the right end as Textual's Footer does."""
        if not self.app.ENABLE_COMMAND_PALETTE:
            return None
        active = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        if active is None:
            return None
        _node, binding, enabled, _tooltip = active
        tooltip = binding.tooltip or binding.description
        return binding.key, self.app.get_key_display(binding), binding.description, enabled, tooltip

    def _piece(self, key_display: str, description: str, enabled: bool) -> Text:
        piece = Text(end="")  # (a style given here would cover the description too)
        piece.append(key_display, style=self.get_component_rich_style("key-hints--key"))
        if description:
            piece.append(" " + description, style=self.get_component_rich_style("key-hints--description"))
        if not enabled:
            piece.stylize(self.get_component_rich_style("key-hints--disabled"))
        return piece

    def render(self) -> Text:
        width = self.size.width or self.app.size.width
        palette = self.palette()
        corner = Text(end="")
        if palette is not None:
            corner.append("▏", style=self.get_component_rich_style("key-hints--separator"))
            corner.append_text(self._piece(palette[1], palette[2], palette[3]))
            corner.append(" ")
            if corner.cell_len > width:
                corner, palette = Text(end=""), None
        room = width - corner.cell_len
        line = Text(no_wrap=True, overflow="crop", end="")
        hints: list[Hint] = []
        for key, key_display, description, enabled, tooltip in self.shown():
            piece = self._piece(key_display, description, enabled)
            gap = 1 if hints else 0
            if line.cell_len + gap + piece.cell_len > room:
                continue  # whole or not at all; a shorter hint after it may still fit
            line.append(" " * gap)
            start = line.cell_len
            line.append_text(piece)
            hints.append(Hint(start, line.cell_len, key, enabled, tooltip))
        if palette is not None:
            line.append(" " * (room - line.cell_len))
            start = line.cell_len + 1  # after the separator
            line.append_text(corner)
            hints.append(Hint(start, line.cell_len - 1, palette[0], palette[3], palette[4]))  # (less its padding)
        self.hints = hints
        return line

    def hint_at(self, x: int) -> Hint | None:
        for hint in self.hints:
            if hint.start <= x < hint.end:
                return hint
        return None

    def on_mouse_move(self, event: events.MouseMove) -> None:
        hint = self.hint_at(event.x)
        self.tooltip = hint.tooltip if hint is not None and hint.tooltip else None

    def on_click(self, event: events.Click) -> None:
        hint = self.hint_at(event.x)
        if hint is None:
            return
        event.stop()
        if hint.enabled:
            self.app.simulate_key(hint.key)
        else:
            self.app.bell()
