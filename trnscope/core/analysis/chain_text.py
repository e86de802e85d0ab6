"""One op instance's chain as plain text: ``trnscope chain`` on a terminal (laid out for
its width) and the drill-down's copy (every line whole).

A hop line is its start and duration (never cut), its layer, then the hop's name,
indented by depth, and where it ran in brackets.  Laid out for a terminal, where it
ran is told only where it changes (a chain of 25 Python frames on one thread said
``[thread 31673 (python)]`` 25 times), the indent gives way before the names (deep
Python stacks share one), and names lose their middle last; an event's arguments and
the closing figures wrap onto more lines instead of running off the edge."""

from __future__ import annotations

from trnscope.core.analysis.chain_model import Chain, context_summary, visible_hops
from trnscope.core.analysis.timeline import compact_lane_labels
from trnscope.core.base.text import cell_width, elide_middle_text, safe_text, wrap_words
from trnscope.core.base.units import fmt_time_ns

MAX_INDENT_LEVELS = 16  # deeper levels (30 Python frames) share the last indent
ARGS_LIMIT = 200  # characters of an event's arguments shown (``--format json`` has all)
_PREFIX = 37  # "start" (12), a space, "duration" (12), two spaces, the layer (9), a space
_NAME_ROOM = 30  # what a hop's name and place keep before the indent gives way
# the cells a hop's name keeps beside its place's compact form ("[GPU 3 / stream 7]"
# rather than "[pytho… 7]" beside a kernel's name six cells longer)
_NAME_WITH_PLACE = 16
_CONTEXT_LEVELS = 2  # the op's parents and Python frames, however deep, within this many levels
_PLACE_MIN = 8  # the bracketed thread or stream, elided no shorter than this
_ARGS_ROOM = 40  # an event's arguments keep this much of a line: their indent gives way first


def render_chain_text(chain: Chain, width: int | None = None, context: bool = True) -> str:
    """The chain as text, file text sanitised, one hop per line; ``width``: the
    terminal's columns (``None``: every line whole, for a copy or a file); ``context``
    False: the op's parents and Python frames as one line, as the explorer shows them
    first (a TimeSformer op sat under 30 of them, a ``capture run`` under 8 of the
    wrapper's own)."""
    lines = [_fit(f"{safe_text(chain.op)}  (instance #{chain.instance} · {chain.instances:,} in all)", width)]
    # under 100 columns the layer's column goes: the names say which layer they are, and
    # a kernel's name needs the room more
    layered = width is None or width >= 100
    fixed = _PREFIX if layered else _PREFIX - 10
    lines.append(
        f"{'start':>12} {'duration':>12}  {'layer':<9} hop" if layered else f"{'start':>12} {'duration':>12}  hop"
    )
    level = _levels(chain, None if width is None else (width - fixed - _NAME_ROOM) // 2)
    hops = chain.hops
    visible = visible_hops(chain, context)
    if visible and visible[0] < 0:  # the context folded: its line (wrapped, never cut), then the op at the left
        head = f"{'':>12} {'':>12}  " + (f"{'context':<9} " if layered else "")
        summary = f"{safe_text(context_summary(chain))}  (--context lists them)"
        under = " " * len(head)
        if width is not None and width - len(under) < _ARGS_ROOM:  # as an event's arguments: the indent gives way
            under = " " * min(len(head), max(width - _ARGS_ROOM, 2))
        wrapped = [head + summary] if width is None else _wrapped(summary, width, under)
        if len(under) == len(head):  # the layer's column says what the line is
            wrapped[0] = head + wrapped[0][len(under) :]
        lines += wrapped
        base = level[visible[1]] if len(visible) > 1 else 0
        hops = [chain.hops[i] for i in visible[1:]]
        level = [max(level[i] - base, 0) for i in visible[1:]]
    places = sorted({safe_text(h.thread_or_stream) for h in chain.hops})
    # where a place does not fit whole, the form that still tells it apart ("thread
    # 3126441" for "thread 3126441 (python3.8)", which elided read "threa…8)"; the
    # hop's own, "5 engines" for an instruction's engines)
    shorter = dict(zip(places, compact_lane_labels(places), strict=True))
    shorter |= {safe_text(h.thread_or_stream): safe_text(h.short_place) for h in chain.hops if h.short_place}
    last_place = None
    for h, depth in zip(hops, level, strict=True):
        indent = "  " * depth
        layer = f"{h.layer:<9} " if layered else ""
        prefix = f"{fmt_time_ns(h.start_us * 1000):>12} {fmt_time_ns(h.dur_us * 1000):>12}  {layer}{indent}"
        place = safe_text(h.thread_or_stream)
        told = place if width is None or place != last_place else None
        last_place = place
        lines.append(prefix + _name_and_place(safe_text(h.name), told, width, len(prefix), shorter.get(place, place)))
        shown = {k: v for k, v in h.details.items() if k != "category"}
        if shown and h.kind not in ("python", "parent", "child"):
            text = _arguments(safe_text(", ".join(f"{k}={v}" for k, v in shown.items())))
            under = " " * (fixed + 3) + indent
            if width is not None and width - len(under) < _ARGS_ROOM:
                under = " " * min(fixed + 3, max(width - _ARGS_ROOM, 2))
            lines += [under + text] if width is None else _wrapped(text, width, under)
    g = chain.gaps
    t = fmt_time_ns
    figures = [
        f"dispatch {t(g.dispatch_us * 1000)}",
        f"runtime {t(g.runtime_us * 1000)} (own {t(g.runtime_own_us * 1000)})",
        f"queue {t(g.queue_us * 1000)} (longest {t(g.queue_max_us * 1000)})",
        f"device {t(g.device_us * 1000)}",
        f"host self {t(g.host_us * 1000)}",
    ]
    lines += _joined(figures, " · ", width)
    for note in chain.notes:
        text = f"note: {safe_text(note)}"
        lines += [text] if width is None else _wrapped(text, width, "")
    return "\n".join(lines) + "\n"


def _levels(chain: Chain, most: int | None) -> list[int]:
    """Each hop's indent level.  Whole (``most`` None): its depth, up to
    ``MAX_INDENT_LEVELS``.  Laid out for a terminal: the op's context (parents, Python
    frames) goes at most ``_CONTEXT_LEVELS`` deep, the op one below it and what it ran
    at its own depth below the op, all within ``most`` levels — a 25-frame stack
    otherwise pushed the kernel's name to the edge."""
    depths = [h.depth for h in chain.hops]
    if most is None:
        return [min(d, MAX_INDENT_LEVELS) for d in depths]
    most = max(0, min(most, MAX_INDENT_LEVELS))
    op_depth = next((h.depth for h in chain.hops if h.kind == "op"), None)
    if op_depth is None:
        return [min(d, most) for d in depths]
    op_level = min(op_depth, _CONTEXT_LEVELS + 1)
    return [min(min(d, _CONTEXT_LEVELS) if d < op_depth else op_level + d - op_depth, most) for d in depths]


def _fit(text: str, width: int | None) -> str:
    return text if width is None else elide_middle_text(text, width)


def _name_and_place(name: str, place: str | None, width: int | None, used: int, short_place: str = "") -> str:
    """``name  [place]`` (or the name alone, ``place`` None) in the cells left after
    ``used``: the place gives way first to ``short_place`` (its compact form), whole
    while the name keeps ``_NAME_WITH_PLACE`` cells; then it is elided, down to
    ``_PLACE_MIN``, then the name (their middles go, never their ends)."""
    if place is None:
        return name if width is None else elide_middle_text(name, max(width - used, 8))
    if width is None or used + cell_width(name) + cell_width(place) + 4 <= width:
        return f"{name}  [{place}]"
    room = max(width - used - 4, 6)
    if short_place and cell_width(short_place) <= room - min(cell_width(name), _NAME_WITH_PLACE):
        return f"{elide_middle_text(name, room - cell_width(short_place))}  [{short_place}]"
    place = elide_middle_text(place, min(max(_PLACE_MIN, room - cell_width(name)), max(room - 8, 3)))
    return f"{elide_middle_text(name, max(room - cell_width(place), 3))}  [{place}]"


def _wrapped(text: str, width: int, under: str) -> list[str]:
    """``text`` wrapped after ``under`` into lines of ``width``; a word longer than a
    line (a NEFF's path) loses its middle."""
    return wrap_words(text, width - len(under), under, cut_long_words=True)


def _arguments(text: str) -> str:
    """An event's arguments up to ``ARGS_LIMIT`` characters, cut after a comma (never
    inside a number) and saying where the rest is."""
    if len(text) <= ARGS_LIMIT:
        return text
    cut = text.rfind(", ", 0, ARGS_LIMIT)
    return (text[:cut] if cut > 0 else text[:ARGS_LIMIT]) + " … (all of them: --format json)"


def _joined(pieces: list[str], separator: str, width: int | None) -> list[str]:
    """``pieces`` joined by ``separator`` into lines of at most ``width`` (each piece whole)."""
    if width is None:
        return [separator.join(pieces)]
    lines: list[str] = []
    for piece in pieces:
        if lines and len(lines[-1]) + len(separator) + len(piece) <= width:
            lines[-1] += separator + piece
        else:
            lines.append(piece)
    return lines
