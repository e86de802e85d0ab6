"""A virtual table: renders only the visible rows of columnar data.

Textual's DataTable measures every cell and rebuilds row offsets on change, which
stops scaling near 10^4 rows.  This widget draws each visible line on demand from
a ``TableModel`` (rows addressed through an index permutation that sort/filter
workers compute off the UI thread), caches the rendered strips, and refreshes only
the two lines a cursor move touches.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from trnscope.core.base.text import cell_width, distinct_elisions, head_within, safe_text, tail_within
from trnscope.tui.safe import safe_cell

MAX_DISTINCT_ROWS = 200_000  # past this, names elide by their middle only (a resize must stay quick)
# A flex column (names, shapes, stacks: elided in their middle) gives up width down to
# this before a column of figures is left out; figures are never cut.
FLEX_FLOOR = 10


def fit_columns(columns: Sequence[Column], width: int) -> tuple[list[int], list[int]]:
    """Which columns a table ``width`` cells wide shows, and each one's width: every
    column with its separating space, within ``width``.  A fixed column keeps its width
    (its figures are formatted to fit it); flex columns share what is left, each at
    least its own width while they can, down to ``FLEX_FLOOR``.  When even that does
    not fit, the last columns are left out (models order their columns by importance),
    never the first.  A column marked ``drop_first`` (a figure that others imply) goes,
    the last such first, before a flex column gives up any of its own width."""
    kept = [k for k, column in enumerate(columns) if width >= column.shown_from]
    while True:
        optional = [k for k in kept if columns[k].drop_first]
        widths = _flex_widths(columns, kept, width, shrink=not optional)
        if widths is not None or len(kept) == 1:
            return kept, widths if widths is not None else [columns[kept[0]].width]
        kept.remove(optional[-1] if optional else kept[-1])


def _flex_widths(columns: Sequence[Column], kept: list[int], width: int, shrink: bool = True) -> list[int] | None:
    """Each kept column's width, or None when they do not fit: flex columns at their
    own width at least, or (``shrink``) down to ``FLEX_FLOOR``."""
    fixed = sum(columns[k].width + 1 for k in kept if not columns[k].flex)
    flex = [k for k in kept if columns[k].flex]
    spare = width - fixed
    if not flex:
        return [columns[k].width for k in kept] if spare >= 0 else None
    share = spare // len(flex) - 1
    wanted = {k: max(columns[k].width, share) for k in flex}
    if sum(wanted.values()) + len(flex) > spare:  # their own widths do not all fit: share down to the floor
        if not shrink:
            return None
        room = spare - len(flex)
        wanted = {k: min(columns[k].width, FLEX_FLOOR) for k in flex}
        if sum(wanted.values()) > room:
            return None
        left = room - sum(wanted.values())
        while left:  # one cell at a time to each column still short of its own width
            short = [k for k in flex if wanted[k] < columns[k].width]
            for k in short[:left]:
                wanted[k] += 1
            left -= min(len(short), left)
            if not short:
                break
    return [wanted.get(k, columns[k].width) for k in kept]


@dataclass
class Column:
    key: str
    title: str
    width: int = 10  # fixed width; for the flex column, its minimum
    align: str = "right"  # "left" | "right"
    flex: bool = False
    # the table width from which the column is part of the layout at all: a column of
    # context that would only take room from the names in a narrower table (not "left
    # out for want of width": it is not in a narrow table's design)
    shown_from: int = 0
    # left out before a flex column narrows below its own width (``fit_columns``): a
    # figure the others imply, such as a comparison's ratio beside its difference
    drop_first: bool = False


def elide_middle(text: Text, width: int) -> Text:
    """``text`` cut to ``width`` cells by dropping its middle: long names (templated
    kernels, Python frames) differ at both ends, so both stay visible.  Styles kept."""
    if text.cell_len <= width or width < 8:
        return text
    plain = text.plain
    # in characters that fit the cells (a wide character takes two; a cell the head
    # leaves goes to the tail)
    head = head_within(plain, width - 1 - (width - 1) // 3)
    tail = len(tail_within(plain, width - 1 - cell_width(head)))
    return Text.assemble(text[: len(head)], "…", text[len(plain) - tail :], no_wrap=True)


# ``order`` left out: every data row, in data order.  (An empty order given on purpose,
# a filter that matches nothing, shows no rows.)
_ALL_ROWS = np.empty(0, np.int64)


@dataclass
class TableModel:
    """What the table shows.  ``cells(index)`` returns one string (or Text) per column
    for data row ``index``; ``order`` maps display rows to data rows."""

    columns: list[Column]
    size: int
    cells: Callable[[int], Sequence[str | Text]]
    order: np.ndarray = field(default_factory=lambda: _ALL_ROWS)
    row_style: Callable[[int], str] | None = None  # extra style for a data row ("dim", "bold", …)
    sort_key: str = ""
    sort_descending: bool = True
    # the full text of a column of names per data row, by column key: such a column is
    # elided in its middle, and texts that would elide alike are elided where they
    # differ instead (core.base.text.distinct_elisions); every flex column is elided in
    # its middle too
    names: dict[str, Callable[[int], str]] = field(default_factory=dict)
    # what the cells of a data row depend on (the data, the columns, the width), when
    # the model's maker can say: a new model with the same key shows each data row as
    # the last one did — a new filter or order of the same table — and the table keeps
    # the rows it has rendered, and its elisions.  None: nothing is kept.
    cells_key: Hashable | None = None
    # the columns laid out ahead, off the UI thread (``lay_out``): used when made for
    # the width the table has when the model is set, else laid out again there
    layout: ColumnLayout | None = None

    def __post_init__(self) -> None:
        if self.order is _ALL_ROWS:
            self.order = np.arange(self.size, dtype=np.int64)

    @property
    def rows(self) -> int:
        return int(self.order.size)


@dataclass(frozen=True)
class ColumnLayout:
    """Which columns a table of one width shows, each one's width, and the names of
    its name columns as elided where they differ from a look-alike."""

    table_width: int
    shown: list[int]
    widths: list[int]
    distinct: dict[tuple[str, int], str]


def lay_out(model: TableModel, table_width: int) -> ColumnLayout:
    """The layout of ``model``'s columns in ``table_width`` cells: pure, so a worker can
    make it ahead of ``set_model`` (``TableModel.layout``) — eliding a real trace's 6,532
    stack keys apart takes ~65 ms that the UI thread need not wait through."""
    columns = model.columns
    shown, widths = fit_columns(columns, table_width) if columns else ([], [])
    distinct: dict[tuple[str, int], str] = {}
    if model.size <= MAX_DISTINCT_ROWS:
        for k, width in zip(shown, widths):
            column = columns[k]
            text_of = model.names.get(column.key)
            if text_of is not None:  # (as drawn: sanitised, an escaped control takes four cells)
                found = distinct_elisions(_sanitised([text_of(i) for i in range(model.size)]), width)
                distinct.update({(column.key, i): text for i, text in found.items()})
    return ColumnLayout(table_width, shown, widths, distinct)


def left_out_titles(columns: Sequence[Column], layout: ColumnLayout) -> list[str]:
    """The titles of the columns ``layout`` leaves out for want of width (not those
    that are no part of a table this narrow: ``Column.shown_from``)."""
    shown = set(layout.shown)
    return [
        column.title for k, column in enumerate(columns) if k not in shown and layout.table_width >= column.shown_from
    ]


def _sanitised(texts: list[str]) -> list[str]:
    """``safe_text`` of each text, each distinct text once (a stack column repeats each
    stack key on the rows of every op it calls: 19,464 rows of 6,532 keys on xDiT)."""
    done: dict[str, str] = {}
    out = []
    for text in texts:
        shown = done.get(text)
        if shown is None:
            shown = done[text] = safe_text(text)
        out.append(shown)
    return out


def table_width_of(widget_width: int) -> int:
    """The cells the columns of a table this wide may use: its width less the vertical
    scroll bar's column (always drawn: the layout does not change with the number of
    rows)."""
    return max(widget_width - 1, 10)


class VirtualTable(ScrollView, can_focus=True):
    """Keyboard-driven table over a ``TableModel``."""

    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", show=False, tooltip="move up"),
        Binding("down,j", "cursor_down", "Down", show=False, tooltip="move down"),
        Binding("pageup,ctrl+b", "page_up", "Page up", show=False, tooltip="page up"),
        Binding("pagedown,ctrl+f,space", "page_down", "Page down", show=False, tooltip="page down"),
        Binding("home,g", "first", "Top", show=False, tooltip="first row"),
        Binding("end,G", "last", "Bottom", show=False, tooltip="last row"),
        Binding("enter", "select", "Open", show=True, tooltip="open the row: drill into the op / instance"),
    ]

    COMPONENT_CLASSES = {"vtable--header", "vtable--cursor", "vtable--cursor-blur", "vtable--odd"}

    DEFAULT_CSS = """
    VirtualTable {
        height: 1fr;
        overflow-x: hidden;
        /* the scroll bar's column always drawn (a track when every row fits), as the
           columns are laid out without it: a new row count needs no second layout
           (and frame) for a scroll bar coming or going */
        overflow-y: scroll;
        background: $surface;
        scrollbar-size-vertical: 1;
    }
    VirtualTable > .vtable--header {
        text-style: bold;
        background: $panel;
        color: $text;
    }
    VirtualTable > .vtable--cursor {
        background: $accent;
        color: $text;
    }
    VirtualTable > .vtable--cursor-blur {
        background: $panel-lighten-1;
    }
    VirtualTable > .vtable--odd {
        background: $surface;
    }
    """

    cursor: reactive[int] = reactive(0, init=False)

    class CursorMoved(Message):
        def __init__(self, table: VirtualTable, row: int, index: int) -> None:
            super().__init__()
            self.table = table
            self.row = row  # display row
            self.index = index  # data row (-1 when empty)

        @property
        def control(self) -> VirtualTable:
            return self.table

    class ColumnsHidden(Message):
        """The columns left out for want of width changed (``titles``: now left out)."""

        def __init__(self, table: VirtualTable, titles: list[str]) -> None:
            super().__init__()
            self.table = table
            self.titles = titles

        @property
        def control(self) -> VirtualTable:
            return self.table

    class Selected(Message):
        def __init__(self, table: VirtualTable, row: int, index: int) -> None:
            super().__init__()
            self.table = table
            self.row = row
            self.index = index

        @property
        def control(self) -> VirtualTable:
            return self.table

    def __init__(
        self,
        model: TableModel | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.model = model or TableModel([], 0, lambda _: [])
        self._cache: LRUCache[tuple[int, bool, bool, int, int], Strip] = LRUCache(512)
        self._version = 0
        self._widths: list[int] = []  # per shown column
        self._shown: list[int] = []  # the model's columns that fit, by position
        self.hidden_columns: list[str] = []  # titles of the columns left out for want of width
        self._laid_out_for = -1  # the width the columns were laid out for
        self._distinct: dict[tuple[str, int], str] = {}

    # -- data ---------------------------------------------------------------------
    def set_model(self, model: TableModel, keep_index: int | None = None) -> None:
        """Show a new model; keep the cursor on data row ``keep_index`` if still shown."""
        same_cells = model.cells_key is not None and model.cells_key == self.model.cells_key
        self.model = model
        if not (same_cells and self._laid_out_for == self.size.width):
            self._version += 1
            self._cache.clear()
            self._layout_columns()
        target = 0
        if keep_index is not None and model.rows:
            hits = np.flatnonzero(model.order == keep_index)
            target = int(hits[0]) if hits.size else 0
        self.virtual_size = Size(self.size.width, model.rows + 1)
        self.set_reactive(VirtualTable.cursor, min(target, max(model.rows - 1, 0)))
        self._scroll_cursor_into_view(animate=False)
        self.refresh()
        self.post_message(self.CursorMoved(self, self.cursor, self.current_index))

    def set_order(self, order: np.ndarray, keep_index: int | None = None) -> None:
        self.model.order = order
        self.set_model(self.model, keep_index)

    @property
    def current_index(self) -> int:
        if not self.model.rows or self.cursor >= self.model.rows:
            return -1
        return int(self.model.order[self.cursor])

    def refresh_rows(self) -> None:
        self._version += 1
        self._cache.clear()
        self.refresh()

    # -- layout -------------------------------------------------------------------
    @property
    def table_width(self) -> int:
        """The cells the columns may use (``table_width_of`` the widget's width)."""
        return table_width_of(self.size.width)

    def _layout_columns(self) -> None:
        self._laid_out_for = self.size.width
        columns = self.model.columns
        ahead = self.model.layout
        layout = (
            ahead
            if ahead is not None and ahead.table_width == self.table_width
            else lay_out(self.model, self.table_width)
        )
        self._shown, self._widths, self._distinct = layout.shown, layout.widths, layout.distinct
        hidden = left_out_titles(columns, layout)
        if hidden != self.hidden_columns:
            self.hidden_columns = hidden
            if self.size.width:  # (not before the first layout gives it a width)
                self.post_message(self.ColumnsHidden(self, hidden))

    def on_resize(self) -> None:
        # only a new width lays the columns out again (and re-elides every name): the
        # height changes whenever the detail line below takes another line or two
        if self.size.width != self._laid_out_for:
            self._layout_columns()
            self._cache.clear()
        self.virtual_size = Size(self.size.width, self.model.rows + 1)
        self._scroll_cursor_into_view(animate=False)

    # -- rendering ----------------------------------------------------------------
    def _cell_text(self, value: str | Text, width: int, align: str, middle: bool = False) -> Text:
        text = safe_cell(value)  # file text: controls escaped, never markup
        if middle:
            text = elide_middle(text, width)
        text.truncate(width, overflow="ellipsis")
        if align == "right":
            text.align("right", width)
        else:
            text.pad_right(width - text.cell_len)
        return text

    def _render_cells(
        self, values: Sequence[str | Text], style: Style, over: Style | None = None, index: int = -1
    ) -> Strip:
        line = Text(no_wrap=True, overflow="crop")
        columns = self.model.columns
        for k, width in zip(self._shown, self._widths):
            value, column = values[k], columns[k]
            middle = column.flex or column.key in self.model.names
            if middle and index >= 0:
                value = self._distinct.get((column.key, index), value)  # elided where it differs from a look-alike
            line.append_text(self._cell_text(value, width, column.align, middle=middle))
            line.append(" ")
        line.truncate(self.size.width, pad=True)
        line.stylize_before(style)  # the row style under the cells' own styles
        if over is not None:
            line.stylize(over)  # the cursor wins over cell colours, so it stays readable
        segments = list(line.render(self.app.console))
        return Strip(segments, self.size.width)

    def _header(self) -> Strip:
        style = self.get_component_rich_style("vtable--header")
        titles: list[str | Text] = []
        for column in self.model.columns:
            title = column.title
            if column.key == self.model.sort_key:
                title = f"{title}{'▼' if self.model.sort_descending else '▲'}"
            titles.append(title)
        return self._render_cells(titles, style)

    def render_line(self, y: int) -> Strip:
        if self._laid_out_for != self.size.width:
            # a model set before the first layout (a pane's mount) was laid out for no
            # width: lay it out for this one before drawing, rather than drawing a frame
            # of the few columns that fit ten cells and correcting it on the resize
            self._layout_columns()
            self._cache.clear()
        if y == 0:
            return self._header()
        _, scroll_y = self.scroll_offset
        row = scroll_y + y - 1
        width = self.size.width
        if row >= self.model.rows:
            return Strip([Segment(" " * width, self.rich_style)], width)
        is_cursor = row == self.cursor
        index = int(self.model.order[row])
        # by data row, not by place: a new filter or order of the same cells finds the
        # rows it already rendered.  Focus changes only the cursor row's look: the other
        # rows stay when the filter takes the focus or gives it back (all 40 rows:
        # 15-20 ms at 160×48)
        key = (index, is_cursor, is_cursor and self.has_focus, width, self._version)
        cached = self._cache.get(key)
        if cached is not None:  # before the style: computing it costs more than the lookup
            return cached
        base = self.rich_style
        style = base
        if self.model.row_style is not None:
            extra = self.model.row_style(index)
            if extra:
                style = style + Style.parse(extra)
        over = (
            self.get_component_rich_style("vtable--cursor" if self.has_focus else "vtable--cursor-blur")
            if is_cursor
            else None
        )
        strip = self._render_cells(self.model.cells(index), style, over, index)
        self._cache[key] = strip
        return strip

    # -- cursor -------------------------------------------------------------------
    def _scroll_cursor_into_view(self, animate: bool = False) -> None:
        if not self.size.height:
            # not laid out yet (a model set as its pane mounts): the cursor on the
            # second row, the row before it above as context, whatever the height the
            # layout gives (with no height every row but the first was out of view:
            # the op of a drill-down's chain went to the top, its context line out of
            # view, for a frame); ``on_resize`` keeps the cursor in view once laid out
            self.scroll_to(y=max(self.cursor - 1, 0), animate=False, immediate=True)
            return
        height = max(self.size.height - 1, 1)
        _, top = self.scroll_offset
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=animate, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=animate, immediate=True)

    def watch_cursor(self, old: int, new: int) -> None:
        _, top = self.scroll_offset
        self._scroll_cursor_into_view()
        _, new_top = self.scroll_offset
        if new_top == top:
            for row in (old, new):
                self.refresh_line(row - top + 1)
        self.post_message(self.CursorMoved(self, new, self.current_index))

    def move_to(self, row: int) -> None:
        if self.model.rows:
            self.cursor = max(0, min(row, self.model.rows - 1))

    def action_cursor_up(self) -> None:
        self.move_to(self.cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_to(self.cursor + 1)

    def action_page_up(self) -> None:
        self.move_to(self.cursor - max(self.size.height - 2, 1))

    def action_page_down(self) -> None:
        self.move_to(self.cursor + max(self.size.height - 2, 1))

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(self.model.rows - 1)

    def action_select(self) -> None:
        if self.model.rows:
            self.post_message(self.Selected(self, self.cursor, self.current_index))

    # A repaint, not a new render of every row: the cache key of the cursor row holds
    # the focus, and no other row looks different (see render_line).
    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    async def on_click(self, event: object) -> None:
        y = getattr(event, "y", 0)
        if y >= 1:
            _, top = self.scroll_offset
            self.move_to(top + y - 1)
