"""File text into widgets: sanitised (``trnscope.core.base.text.safe_text``) and never
read as markup (a ``rich.text.Text``, not a markup string)."""

from __future__ import annotations

from rich.text import Text

from trnscope.core.base.text import is_safe, safe_text


def plain(value: object, style: str = "") -> Text:
    """File text as a Text: controls shown escaped, ``[…]`` shown as typed."""
    return Text(safe_text(value), style=style)


def safe_cell(value: str | Text) -> Text:
    """A table cell: a Text whose characters are all safe (styles kept when the text
    needs no escaping)."""
    if isinstance(value, Text):
        if is_safe(value.plain):
            return value
        return Text(safe_text(value.plain), style=value.style, no_wrap=value.no_wrap, overflow=value.overflow)
    return Text(safe_text(value))
