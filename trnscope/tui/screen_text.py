"""Modal text screens: the key help and the list of load/link warnings."""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.markup import escape
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.summary import analysis_warnings
from trnscope.core.base.text import safe_text


class TextScreen(ModalScreen[None]):
    """A centred, scrollable box of text; j/k scroll, Esc closes."""

    BINDINGS = [
        Binding("escape,q", "dismiss", "Close"),
        Binding("j,down", "scroll(1)", "Down", show=False),
        Binding("k,up", "scroll(-1)", "Up", show=False),
    ]

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def action_scroll(self, lines: int) -> None:
        self.query_one("#text-box", VerticalScroll).scroll_relative(y=lines, animate=False)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="text-box"):
            yield Static(hanging_lines(self.text), id="text-body")


# What a wrapped line's continuation lines up under: a help line's text after its key
# ("  pgdn/ctrl+f/space  page down"), a warning's after its mark ("  ⚠ 614 of …").
_HANG = re.compile(r"^( +(?:⚠ |\S+ {2,}))(?=\S)")


def hanging_lines(markup: str) -> RenderableType:
    """``markup``, one line per line, each wrapped under its own text rather than back at
    the box's edge: at 80 columns a warning takes two or three lines."""
    lines: list[tuple[Text, int]] = []
    for line in markup.rstrip("\n").split("\n"):
        text = Text.from_markup(line)
        hang = _HANG.match(text.plain)
        lines.append((text, hang.end() if hang is not None else 0))
    return HangingLines(lines)


class HangingLines:
    """Lines of text, each wrapped at the width it is drawn in, its continuation lines
    under the text after its hang (a number of characters: a help line's key, a
    warning's mark).  Wrapped here, line by line: a table grid per line (as this was)
    took 47 ms to draw the help at 76 columns, this 10."""

    def __init__(self, lines: list[tuple[Text, int]]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        for text, hang in self.lines:
            hang_cells = text[:hang].cell_len
            if not hang or hang_cells >= width:
                yield from text.wrap(console, width, overflow="fold")
                continue
            head, indent = text[:hang], Text(" " * hang_cells)
            for k, part in enumerate(text[hang:].wrap(console, width - hang_cells, overflow="fold")):
                yield Text.assemble(head if k == 0 else indent, part)


class HelpScreen(TextScreen):
    """The keys of every screen, from their bindings (``trnscope.tui.keyhelp``)."""

    BINDINGS = [Binding("question_mark", "dismiss", "Close")]


class WarningsScreen(TextScreen):
    BINDINGS = [Binding("w", "dismiss", "Close")]

    def __init__(
        self, analyses: list[Analysis], lines: list[str] | None = None, notes: list[str] | None = None
    ) -> None:
        """The warnings of ``analyses``, or — for a pane that shows no one trace (the
        ranks view) — the ``lines`` it gives; a pane's own ``notes`` (a comparison's:
        alignment, warm-ups, noise) first."""
        if lines is not None:
            text = "\n".join(f"  ⚠ {escape(safe_text(w))}" for w in lines) or "  no warnings"
        else:
            text = warnings_text(analyses)
        if notes:
            text = "\n".join(["[b]this view[/b]", *(f"  ⚠ {escape(safe_text(n))}" for n in notes), text])
        super().__init__(text)


def warnings_text(analyses: list[Analysis]) -> str:
    lines: list[str] = []
    for analysis in analyses:
        trace = analysis.trace
        if len(analyses) > 1:
            lines.append(f"[b]{escape(safe_text(trace.label or Path(trace.source).name))}[/b]")
        found = analysis_warnings(analysis)
        lines += [f"  ⚠ {escape(safe_text(w))}" for w in found] or [
            "  no warnings: every event loaded, every link found"
        ]
    return "\n".join(lines)
