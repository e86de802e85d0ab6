"""The status line: what is open and how trustworthy it is, in one or two lines."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len
from rich.text import Text

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.summary import analysis_warnings
from trnscope.core.base.text import safe_text
from trnscope.core.base.units import fmt_share, fmt_time_short
from trnscope.tui.vtable import elide_middle


def status_text(analysis: Analysis, extra: str = "", width: int = 200) -> Text:
    """The status line for a line ``width`` cells wide: the figures (events, span, link
    coverage, warnings) are never cut; a trace name too long for what is left loses its
    middle."""
    trace = analysis.trace
    report = analysis.link_report
    start, end = analysis.span_ns
    label = trace.label or Path(trace.source).name
    pieces: list[tuple[str, str, bool]] = []
    if trace.synthetic:
        pieces += [(" SYNTHETIC ", "bold reverse yellow", False), (" ", "", False)]
    pieces.append((safe_text(label), "bold", True))
    kind = safe_text(trace.device_kind) + (
        f" · {safe_text(trace.device_name)}" if trace.device_name and width >= 110 else ""
    )
    pieces.append((f"  {kind}", "cyan", False))
    pieces.append((f"  {trace.event_count:,} events  {fmt_time_short(end - start)}", "", False))
    if report.device_events:
        pieces.append((f"  link {fmt_share(report.coverage, 1.0, 1)}", "", False))
    warnings = len(analysis_warnings(analysis))
    if warnings:
        pieces.append((f"  ⚠ {warnings} (w)", "yellow", False))  # and the key that lists them
    if trace.stats.truncated:
        pieces.append(("  TRUNCATED", "bold red", False))
    if extra:
        pieces.append((f"  {safe_text(extra)}", "dim", False))
    return fit_line(pieces, width)


def fitting_parts(parts: list[tuple[str, int]], width: int, separator: str = " · ") -> str:
    """``parts`` joined, within ``width`` cells if it can be: while they do not fit,
    the part of the highest rank goes (the last such first), and a final "…" says
    that some went.  Rank 0 parts always stay; none is cut in the middle of a word or
    a figure."""
    kept = list(parts)
    dropped = False
    while True:
        text = separator.join(p for p, _ in kept) + (separator + "…" if dropped else "")
        ranks = [rank for _, rank in kept]
        if cell_len(text) <= width or max(ranks, default=0) == 0:
            return text
        worst = max(ranks)
        drop = max(i for i, rank in enumerate(ranks) if rank == worst)
        del kept[drop]
        dropped = True


def fit_line(pieces: list[tuple[str, str, bool]], width: int) -> Text:
    """One line of ``(text, style, elidable)`` pieces within ``width`` cells: the pieces
    that are not elidable (figures, labels of figures) stay whole, and the elidable ones
    (names from the file) share what is left — the shorter ones whole, the rest losing
    their middle (under 8 cells, their end).  Only when the whole pieces alone are wider
    than ``width`` is the line longer."""
    fixed = sum(cell_len(text) for text, _, elidable in pieces if not elidable)
    lengths = {i: cell_len(text) for i, (text, _, elidable) in enumerate(pieces) if elidable}
    room = max(width - fixed, 0)
    room_of: dict[int, int] = {}
    pending = sorted(lengths, key=lengths.__getitem__)
    while pending:
        share = room // len(pending)
        if lengths[pending[0]] <= share:
            room_of[pending[0]] = lengths[pending[0]]
            room -= lengths[pending.pop(0)]
            continue
        for order, i in enumerate(sorted(pending)):  # the first ones take the remainder
            room_of[i] = share + (1 if order < room - share * len(pending) else 0)
        break
    line = Text(no_wrap=True, overflow="ellipsis")
    for i, (text, style, elidable) in enumerate(pieces):
        piece = Text(text, style=style)
        if elidable and room_of[i] < lengths[i]:
            room = room_of[i]
            piece = elide_middle(piece, room) if room >= 8 else Text(text[: max(room - 1, 0)] + "…"[:room], style=style)
        line.append_text(piece)
    return line


def with_shorter_name(
    pieces: list[tuple[str, str, bool]], width: int, at: int, shorter: list[str]
) -> list[tuple[str, str, bool]]:
    """``pieces`` for ``fit_line``, with the name at ``at`` replaced by the first of its
    ``shorter`` forms (each still telling it apart: "thread 3553" for "thread 3553
    (pt_main_thread)") that fits whole, where the whole line does not fit; else by the
    last, which ``fit_line`` may still elide.  Elided, the long form can lose what tells
    it apart ("thread 3553 (pt_main_thread)" and "thread 3554 (…)" both read
    "thread 3…ead)")."""
    if not shorter or sum(cell_len(text) for text, _, _ in pieces) <= width:
        return pieces
    style = pieces[at][1]
    fixed = sum(cell_len(text) for i, (text, _, _) in enumerate(pieces) if i != at)
    choice = next(((name, False) for name in shorter if fixed + cell_len(name) <= width), (shorter[-1], True))
    return [*pieces[:at], (choice[0], style, choice[1]), *pieces[at + 1 :]]
