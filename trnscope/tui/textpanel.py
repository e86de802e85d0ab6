"""A text panel whose updates re-lay out the screen only when its size changes.

``Static.update`` asks for a layout of the whole screen on every call (its new text might
need another height), and a layout repaints every widget: 14-20 ms of the UI thread per
call at 160x48, and the detail line under the op table, the status line, the drill-down's
hop and the timeline's three lines change on nearly every key.  A ``TextPanel`` repaints
only itself (nothing when the text is the same as before), and asks for the layout only
when its content needs another height (as Textual computes it for ``height: auto``,
within the panel's minimum and maximum) or its width follows its text (``width: auto``).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.visual import VisualType
from textual.widgets import Static


class TextPanel(Static):
    def __init__(self, *args: Any, grow_only: bool = False, **kwargs: Any) -> None:
        """``grow_only``: a shorter text leaves the panel as tall as it is (blank below)
        until something else lays the screen out: the detail under the op table, whose
        rows take 3 to 5 lines, would otherwise move the table's bottom edge (and lay
        the screen out) on every other cursor move."""
        super().__init__(*args, **kwargs)
        self.grow_only = grow_only
        self._shown: object = None  # the content of the last update

    def update(self, content: VisualType = "", *, layout: bool | None = None) -> None:
        """Show ``content``; ``layout``: True or False to decide, None (the default) to
        have it decided by whether the panel's height must change.  The same text again
        (an equal, new object) repaints nothing."""
        if layout is None and content is not self._shown and _same(content, self._shown):
            return
        self._shown = content
        super().update(content, layout=False)
        if layout if layout is not None else self._must_resize():
            self.refresh(layout=True)

    def _must_resize(self) -> bool:
        """Whether the new content needs another size than the panel has: the height its
        content takes at its width (``height: auto``), plus padding and border, within its
        minimum and maximum height, as Textual's layout will make it."""
        if not self.is_mounted or not self.size.width:  # its first layout is still to come
            return True
        styles = self.styles
        if styles.width is not None and styles.width.is_auto:  # its width follows the text
            return True
        if styles.height is not None and not styles.height.is_auto:  # a fixed or a fractional height
            return False
        container, viewport = self.container_size, self.app.size
        height = self.get_content_height(container, viewport, self.content_size.width) + styles.gutter.height
        if styles.min_height is not None:
            height = max(height, int(styles.min_height.resolve(container, viewport)))
        if styles.max_height is not None:
            height = min(height, int(styles.max_height.resolve(container, viewport)))
        return height > self.region.height if self.grow_only else height != self.region.height


def _same(content: object, shown: object) -> bool:
    """The same words with the same styles and layout settings (``Text.__eq__`` compares
    only the words and spans, not the base style or wrapping); anything but strings and
    ``Text`` is taken as new."""
    if isinstance(content, str) and isinstance(shown, str):
        return content == shown
    if not (isinstance(content, Text) and isinstance(shown, Text)):
        return False
    return (
        content.plain == shown.plain
        and content.spans == shown.spans
        and content.style == shown.style
        and (content.justify, content.overflow, content.no_wrap, content.end, content.tab_size)
        == (shown.justify, shown.overflow, shown.no_wrap, shown.end, shown.tab_size)
    )
