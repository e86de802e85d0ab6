"""``trnscope timeline``: the timeline as text, for pipes and bug reports."""

from __future__ import annotations

import argparse
import sys
import textwrap

from trnscope.cli.sources import open_sources
from trnscope.cli.width import MAX_WIDTH, MIN_WIDTH, output_width
from trnscope.core.analysis.timeline import (
    Lane,
    build_lanes,
    extent,
    label_column_width,
    parse_time,
    python_only_threads,
    render_text,
    select_lanes,
)
from trnscope.core.base.errors import InputError
from trnscope.core.base.text import safe_text
from trnscope.core.base.units import fmt_time_short
from trnscope.core.opening.sources import Mode

# lanes named in the error when --lanes matches none: enough to see how labels read
_LABELS_SHOWN = 6


def _some_labels(lanes: list[Lane]) -> str:
    """The first lanes' labels, for a --lanes pattern that matched none of them."""
    shown = ", ".join(lane.label for lane in lanes[:_LABELS_SHOWN])
    more = f" (and {len(lanes) - _LABELS_SHOWN:,} more)" if len(lanes) > _LABELS_SHOWN else ""
    return f"the lanes are: {shown}{more}"


def cmd_timeline(args: argparse.Namespace) -> int:  # noqa: C901 - argument checks (times, width, step, lanes) each with its own one-line error
    opened = open_sources(args, [args.path], Mode.ONE)
    analysis = opened.analyses[0]
    python_threads = args.python_threads
    every_lane = build_lanes(analysis, nested=args.nested, python_threads=python_threads)
    if not every_lane and python_only_threads(analysis, args.nested):  # nothing else to draw: them
        python_threads = True
        every_lane = build_lanes(analysis, nested=args.nested, python_threads=True)
    lanes = select_lanes(every_lane, args.lanes)
    if not lanes:
        if not args.lanes or not every_lane:
            raise InputError("no lane to show (the trace has no timed events)")
        raise InputError(f"no lane matches --lanes {args.lanes!r}; {_some_labels(every_lane)}")
    if args.width is not None and not MIN_WIDTH <= args.width <= MAX_WIDTH:
        raise InputError(f"--width must be between {MIN_WIDTH} and {MAX_WIDTH:,} (it was {args.width:,})")
    width = args.width or output_width()
    t0, t1 = extent(lanes)
    first, last = extent(every_lane)  # the trace's bounds, whichever lanes are shown
    origin = analysis.span_ns[0]
    if args.step is not None:
        try:
            step = analysis.steps()[analysis.step_index(args.step)]
        except IndexError as error:
            raise InputError(str(error)) from None
        t0, t1 = step.start, step.end
    try:
        if args.time_from is not None:
            t0 = origin + parse_time(args.time_from)
        if args.time_to is not None:
            t1 = origin + parse_time(args.time_to)
    except ValueError as error:
        raise InputError(str(error)) from None
    outside = t0 >= last or t1 <= first
    if t1 <= t0 and not (outside and (args.time_from is None or args.time_to is None)):
        if args.time_from is not None or args.time_to is not None:
            raise InputError("--to must be after --from")
        t1 = t0 + 1_000  # an instantaneous step: show 1 µs
    if outside:
        if t0 >= last:
            raise InputError(
                f"--from {safe_text(args.time_from)} is past the end of the trace ({fmt_time_short(last - origin)})"
            )
        raise InputError(
            f"--to {safe_text(args.time_to)} is before the start of the trace ({fmt_time_short(first - origin)})"
        )
    if t0 < first or t1 > last:  # clamped to the trace, and said so
        sys.stderr.write(
            f"trnscope: the window {fmt_time_short(t0 - origin)} → {fmt_time_short(t1 - origin)} reaches past the "
            f"trace: showing {fmt_time_short(max(t0, first) - origin)} → {fmt_time_short(min(t1, last) - origin)}\n"
        )
        t0, t1 = max(t0, first), min(t1, last)
    label_width = label_column_width([lane.label for lane in lanes], width)
    cells = width - label_width - 1
    header = (
        f"{safe_text(analysis.trace.label or analysis.trace.source)}  {fmt_time_short(t0 - origin)} → "
        f"{fmt_time_short(t1 - origin)}  {fmt_time_short((t1 - t0) / cells)}/column, ▁…█ = busy share"
    )
    lines = [header[:width], *render_text(analysis, lanes, t0, t1, width, label_width)]
    colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    out = "\n".join(safe_text(line) if not colour else _colour(line, label_width) for line in lines)
    sys.stdout.write(out + "\n")
    if not python_threads and (python_only := python_only_threads(analysis, args.nested)):
        sys.stdout.write(textwrap.fill(safe_text(_python_only_note(python_only)), width, break_long_words=True) + "\n")
    elif python_threads and not args.python_threads:
        note = "(only threads with Python frames, drawn as the trace has nothing else: they span waits as well as work)"
        sys.stdout.write(textwrap.fill(note, width) + "\n")
    sys.stdout.flush()
    opened.finish()
    return 0


def _python_only_note(labels: list[str]) -> str:
    """What the timeline leaves out unless asked (``build_lanes``)."""
    named = ", ".join(labels[:_LABELS_SHOWN]) + (
        f" and {len(labels) - _LABELS_SHOWN:,} more" if len(labels) > _LABELS_SHOWN else ""
    )
    return (
        f"(not drawn: {len(labels):,} thread{'s' if len(labels) != 1 else ''} with only Python frames, "
        f"which span waits as well as work: {named}; --python-threads draws them)"
    )


def _colour(line: str, label_width: int) -> str:
    """Busy cells in green when a terminal asks for colour (never in pipes)."""
    if len(line) <= label_width + 1 or line[label_width] != "│":
        return safe_text(line)
    head, body = safe_text(line[: label_width + 1]), line[label_width + 1 :]
    return head + "\x1b[32m" + body + "\x1b[0m"
