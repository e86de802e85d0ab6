"""Text tables laid out for a width: numbers are never cut — whole columns go, least
important first, and the caller says which; text columns lose their middle (where two
long names differ least), never their end.  ``summary`` and ``compare`` print through
this."""

from __future__ import annotations

from typing import Any

from trnscope.core.base.text import (
    cell_width,
    distinct_elisions,
    elide_middle_text,
    head_within,
    pad_cells,
    safe_text,
    wrap_words,
)


class NumberColumn:
    """A right-aligned column of the text table: its header, how much it matters when
    the width runs out (lower goes first) and its cells."""

    def __init__(self, header: str, priority: int, cells: list[str]) -> None:
        self.header = header
        self.priority = priority
        self.cells = cells

    @property
    def width(self) -> int:
        return max([len(self.header), *(len(c) for c in self.cells)])


NAME_MIN = 18  # the name column never gets narrower than this
# … and a long name gets at least this much before a minor figure keeps its column: at
# 80 columns a CPU trace's Python rows read "<built-in me…ee200>" beside a "CPU avg"
# anyone can divide out; now they read "<built-in method acquire…f0ddf4ee200>"
NAME_COMFORT = 32
MINOR = 50  # number columns below this priority make way for the name (Self CPU %, avg, memory, FLOPs)
TAG_MAX = 8  # a text column this narrow at least is a tag (a variant's letter), not the name
GAP = 2


def layout(
    width: int, text_columns: list[tuple[str, list[str], int, int]], numbers: list[NumberColumn]
) -> tuple[list[tuple[str, list[str], int]], list[NumberColumn], list[str]]:
    """Columns that fit ``width``.  Numbers are never cut, so whole columns go, least
    important first (text columns after the first have a priority too); text columns
    (name, shapes, launching op) get their minimum, then what is left — the first one
    first — and lose their middle when still too narrow.  A long name squeezed under
    ``NAME_COMFORT`` takes the room of minor figures (priority under ``MINOR``) too.
    Returns the kept text columns with their widths, the kept number columns and the
    headers of the hidden ones."""
    kept_numbers = list(numbers)
    kept_texts = list(text_columns)
    hidden: list[str] = []

    def needed() -> int:
        return sum(c.width + GAP for c in kept_numbers) + sum(t[2] + GAP for t in kept_texts)

    def longest(header: str, cells: list[str]) -> int:
        return max([len(header), *(cell_width(safe_text(c)) for c in cells)])

    while needed() > width:
        candidates: list[tuple[int, str]] = [(c.priority, c.header) for c in kept_numbers]
        candidates += [(t[3], t[0]) for t in kept_texts[1:]]
        if not candidates:
            break
        _, header = min(candidates)
        hidden.append(header)
        kept_numbers = [c for c in kept_numbers if c.header != header]
        kept_texts = [t for t in kept_texts if t[0] != header or t is kept_texts[0]]
    # the name: the first text column wider than a tag (compare's variant letters come first)
    named = [t for t in kept_texts if t[2] >= TAG_MAX] or kept_texts
    if named:
        name, cells, name_min, _priority = named[0]
        wanted = min(NAME_COMFORT, longest(name, cells))
        while name_min + max(width - needed(), 0) < wanted:
            minor = [c for c in kept_numbers if c.priority < MINOR]
            if not minor:
                break
            least = min(minor, key=lambda c: c.priority)
            hidden.append(least.header)
            kept_numbers.remove(least)
    spare = width - needed()
    out = []
    for header, cells, min_w, _priority in kept_texts:
        longest_cell = longest(header, cells)
        extra = max(min(longest_cell - min_w, spare), 0)
        spare -= extra
        out.append((header, cells, min_w + extra))
    kept_numbers.sort(key=lambda c: numbers.index(c))
    return out, kept_numbers, hidden


def print_columns(
    console: Any, title: str, texts: list[tuple[str, list[str], int]], numbers: list[NumberColumn], rows: int
) -> None:
    from rich.table import Table

    # Rich lays out the title and the header; the rows, of cells already fitted to
    # their columns, are joined here as Rich's table would (no edge, two spaces between
    # columns): Rich rendered a table of 7,800 rows in 2 s, cell by cell
    # the title on lines of its own, wrapped at the output's width: as the table's title
    # Rich wrapped it at the table's (a narrow table split a one-line title in two) and
    # padded it with spaces to the table's width
    lines = [title] if cell_width(title) <= console.width else wrap_words(title, console.width, "")
    for line in lines if title else []:
        console.print(line, markup=False, highlight=False, style="italic")
    t = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for header, _cells, width in texts:
        t.add_column(header, no_wrap=True, width=width, overflow="crop")
    for column in numbers:
        t.add_column(column.header, justify="right", no_wrap=True, width=column.width)
    console.print(t)
    if not rows:
        return
    # sanitised first (an escaped control takes four cells), then elided in cells; two
    # different rows never look the same: look-alikes are elided where they differ
    shown = [[safe_text(cell) for cell in cells] for _h, cells, _w in texts]
    distinct = [distinct_elisions(cells, width) for cells, (_h, _c, width) in zip(shown, texts)]
    text_widths = [width for _h, _c, width in texts]
    number_widths = [column.width for column in numbers]  # (each a pass over its cells)
    lines = []
    for i in range(rows):
        cells = [
            d.get(i) or elide_middle_text(cells[i], width) for cells, width, d in zip(shown, text_widths, distinct)
        ]
        parts = [pad_cells(head_within(text, width), width) for text, width in zip(cells, text_widths)]
        parts += [safe_text(c.cells[i]).rjust(width) for c, width in zip(numbers, number_widths)]
        lines.append("  ".join(parts))
    console.print("\n".join(lines), soft_wrap=True)


def plain_table(
    width: int,
    name: tuple[str, list[str], int, int],
    figures: list[NumberColumn],
    hidden: list[str],
    *,
    before: int = 0,
) -> list[str]:
    """A table as lines of plain text (``diagnose``'s devices and steps, ``ranks``'
    collectives): ``name`` is (header, cells, fewest cells, most cells), shown after the
    first ``before`` figures; the figures that fit beside it stay, the least important
    left out first and named in ``hidden``.  No line runs past ``width``, no figure is
    cut, and two different names never read the same."""
    header, cells, fewest, most = name
    texts, kept, gone = layout(width, [(header, [c[:most] for c in cells], fewest, 100)], figures)
    hidden += [h for h in gone if h not in hidden]
    name_width = min(texts[0][2], most)
    shown = [safe_text(c) for c in cells]
    distinct = distinct_elisions(shown, name_width)
    first = [c for c in kept if figures.index(c) < before]
    rest = [c for c in kept if figures.index(c) >= before]

    def line(name_cell: str, row: int | None) -> str:
        def cell(c: NumberColumn) -> str:
            return (c.header if row is None else c.cells[row]).rjust(c.width)

        return "  ".join([*map(cell, first), pad_cells(name_cell, name_width), *map(cell, rest)]).rstrip()

    lines = [line(header, None)]
    lines += [line(distinct.get(i) or elide_middle_text(text, name_width), i) for i, text in enumerate(shown)]
    return lines
