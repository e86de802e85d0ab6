"""The help screen's text, generated from the screens' own key bindings, so help and
keys cannot drift apart."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.markup import escape
from textual.binding import Binding, BindingType

# Keys handled outside BINDINGS (Textual's own) that help must still list.
EXTRA_KEYS: dict[str, list[tuple[str, str]]] = {
    "Everywhere": [("ctrl+p", "command palette (actions; type an op name to drill into it)")],
}
_KEY_NAMES = {
    "question_mark": "?",
    "slash": "/",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "escape": "esc",
    "pageup": "pgup",
    "pagedown": "pgdn",
}


def _keys(binding: Binding) -> str:
    if binding.key_display:
        return binding.key_display
    return "/".join(_KEY_NAMES.get(k.strip(), k.strip()) for k in binding.key.split(","))


def _bindings(bindings: Iterable[BindingType]) -> list[Binding]:
    return [b for b in bindings if isinstance(b, Binding)]


def help_lines(title: str, bindings: Iterable[BindingType]) -> list[str]:
    """One section: the title, then one line per binding (key, then what it does)."""
    rows = [(_keys(b), b.tooltip or b.description) for b in _bindings(bindings)]
    rows += EXTRA_KEYS.get(title, [])
    width = max((len(key) for key, _ in rows), default=0) + 2
    return [f"[b]{escape(title)}[/b]"] + [f"  {escape(key).ljust(width)}{escape(text)}" for key, text in rows]


def help_text(sections: Sequence[tuple[str, Iterable[BindingType]]]) -> str:
    lines: list[str] = []
    for title, bindings in sections:
        if lines:
            lines.append("")
        lines += help_lines(title, bindings)
    return "\n".join(lines) + "\n"
