"""``trnscope ranks``: which rank held the others back, in which step, at which
collective — as text or JSON.

The traces are read by ``core.opening.ranks.analyse_ranks`` on a local process pool
(``--workers``) or a Dask cluster (``--scheduler`` / ``--scheduler-file`` /
``DASK_SCHEDULER_ADDRESS``); this module only presents the result.
"""

from __future__ import annotations

import argparse
import sys

from trnscope.cli.sources import clear_progress_line
from trnscope.cli.text_table import NumberColumn, plain_table
from trnscope.cli.textout import write_json
from trnscope.cli.width import output_width
from trnscope.core.analysis.contracts import RankOut, RanksOut
from trnscope.core.analysis.rank_view import held_back, no_findings_text, what_was_read
from trnscope.core.base.errors import TrnscopeError
from trnscope.core.base.text import plural, safe_text, shorten, wrap_words
from trnscope.core.base.units import fmt_rate, fmt_size, fmt_time_ns
from trnscope.core.formats.options import LoadOptions
from trnscope.core.opening.executors import ExecutorChoice
from trnscope.core.opening.ranks import analyse_ranks
from trnscope.core.opening.sources import Mode, plan_sources

RANKS_SHOWN = 32  # text output: more ranks than this show the latest and a count
COLLECTIVES_SHOWN = 10
STRAGGLER_MARK = "▲"
MESSAGE_LIMIT = 600


def _progress() -> object:
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        sys.stderr.write(f"\rreading ranks: {done}/{total}")
        sys.stderr.flush()

    return show


def cmd_ranks(args: argparse.Namespace) -> int:
    if args.workers is not None and args.workers < 1:
        raise TrnscopeError("--workers must be 1 or more")
    plan = plan_sources(args.paths, Mode.RANKS)
    load = LoadOptions(
        skip=tuple(args.skip), use_cache=not args.no_cache, warmup=max(0, args.warmup), op_tree=args.op_tree
    )
    choice = ExecutorChoice(workers=args.workers, scheduler=args.scheduler, scheduler_file=args.scheduler_file)
    progress = _progress()
    try:
        # only the document: the per-rank summaries are let go before it is written
        document = analyse_ranks(plan.sources, load, choice, progress if callable(progress) else None, args.step)[0]
    except ValueError as error:
        raise TrnscopeError(str(error)) from None
    finally:
        clear_progress_line()
    document.warnings[:0] = plan.notes
    if args.format == "json":
        write_json(document)
    else:
        sys.stdout.write(render_ranks(document, output_width(), choice.describe(len(plan.sources))))
    sys.stdout.flush()
    return 0


def render_ranks(doc: RanksOut, width: int, ran_on: str = "") -> str:
    lines = [*wrap_words(_headline(doc, ran_on), width, ""), ""]
    lines += _finding_lines(doc, width)
    lines.append("")
    lines += _rank_lines(doc, width)
    lines.append("")
    lines += _collective_lines(doc, width)
    if doc.warnings:
        lines.append("")
        for warning in doc.warnings:
            lines += wrap_words("warning: " + safe_text(shorten(warning, MESSAGE_LIMIT)), width, "")
    return "\n".join(lines) + "\n"


def _headline(doc: RanksOut, ran_on: str) -> str:
    kinds = sorted({r.compute for r in doc.ranks})
    world, matched = what_was_read(doc)
    read = f", read by {ran_on}" if ran_on else ""
    return (
        f"{world} ({'/'.join(kinds)} compute), {matched}; "
        f"lateness under {fmt_time_ns(doc.noise_floor_us * 1000)} is noise here{read}"
    )


def _finding_lines(doc: RanksOut, width: int) -> list[str]:
    if not doc.findings:
        return [f"findings: {no_findings_text(doc)}"]
    lines = ["findings"]
    for i, f in enumerate(doc.findings, 1):
        lines.append(f"{i}. {f.severity.upper():<6} {f.kind}: {fmt_time_ns(f.evidence_us * 1000)}")
        lines += wrap_words(safe_text(shorten(f.message, MESSAGE_LIMIT)), width - 3, "   ")
    return lines


def _step_columns(doc: RanksOut, width: int) -> tuple[list[int], int]:
    """The steps that fit beside the rank and total columns (the slowest first, shown in
    step order), and how many did not."""
    steps = sorted({s.step for r in doc.ranks for s in r.steps})
    cell = 11
    room = max(1, (width - 6 - 12 - 8) // cell)
    if len(steps) <= room:
        return steps, 0
    wall: dict[int, float] = {}
    for r in doc.ranks:
        for s in r.steps:
            wall[s.step] = max(wall.get(s.step, 0.0), s.wall_us)
    slowest = sorted(steps, key=lambda n: -wall[n])[:room]
    return sorted(slowest), len(steps) - room


def _rank_lines(doc: RanksOut, width: int) -> list[str]:
    steps, hidden = _step_columns(doc, width)
    late = held_back(doc)
    lines = wrap_words(f"wait in collectives per rank and step ({STRAGGLER_MARK}: held the others back)", width, "")
    header = f"{'rank':>5} " + "".join(f"{('step ' + str(n)) if n >= 0 else 'trace':>11}" for n in steps)
    lines.append(header + f"{'total':>12}{'last at':>8}")
    shown: list[RankOut] = doc.ranks
    if len(doc.ranks) > RANKS_SHOWN:
        shown = sorted(doc.ranks, key=lambda r: (-r.last_arrivals, r.wait_us))[:RANKS_SHOWN]
        shown.sort(key=lambda r: r.rank)
    for r in shown:
        cells = []
        by_step = {s.step: s for s in r.steps}
        for n in steps:
            s = by_step.get(n)
            text = fmt_time_ns(s.wait_us * 1000) if s else "—"
            mark = STRAGGLER_MARK if (r.rank, n) in late else " "
            cells.append(f"{text:>10}{mark}")
        lines.append(f"{r.rank:>5} " + "".join(cells) + f"{fmt_time_ns(r.wait_us * 1000):>12}{r.last_arrivals:>8}")
    notes = []
    if len(shown) < len(doc.ranks):
        notes.append(
            f"{len(doc.ranks) - len(shown):,} more ranks not shown: these {len(shown)} arrived last most often "
            "(--format json lists all)"
        )
    if hidden:
        notes.append(f"{plural(hidden, 'faster step')} not shown (--step K shows one; --format json has all)")
    notes.append("last at: how many collectives the rank arrived last at")
    for note in notes:
        lines += wrap_words(note, width - 2, "  ")
    return lines


def _collective_lines(doc: RanksOut, width: int) -> list[str]:
    worst = sorted(doc.collectives, key=lambda c: -c.start_skew_us)[:COLLECTIVES_SHOWN]
    if not worst:
        return ["no collectives matched across ranks"]
    lines = wrap_words(f"collectives with the largest start skew ({len(worst)} of {len(doc.collectives):,})", width, "")
    t = fmt_time_ns
    figures = [
        NumberColumn("id", 98, [str(c.id) for c in worst]),
        NumberColumn("step", 90, [str(c.step) if c.step >= 0 else "—" for c in worst]),
        # the group where collectives of several run (rows alike in all else: two
        # all_reduce #0 of step 1, one in each pair's group)
        *(
            [NumberColumn("group", 96, [safe_text(c.group) or "—" for c in worst])]
            if len({c.group for c in doc.collectives}) > 1
            else []
        ),
        NumberColumn("#", 60, [str(c.index) for c in worst]),
        NumberColumn("size", 70, [fmt_size(c.bytes) if c.bytes >= 0 else "—" for c in worst]),
        NumberColumn("skew", 99, [t(c.start_skew_us * 1000) for c in worst]),
        NumberColumn("latency", 80, [t(c.latency_us * 1000) for c in worst]),
        NumberColumn("last", 95, [str(c.last_rank) for c in worst]),
        NumberColumn("bus bw", 75, [fmt_rate(c.bus_bw_gbps) if c.bus_bw_gbps > 0 else "—" for c in worst]),
    ]
    if any(c.problems for c in worst):
        figures.append(NumberColumn("!", 97, ["!" if c.problems else "" for c in worst]))
    hidden: list[str] = []
    lines += plain_table(width, ("name", [c.name for c in worst], 10, 15), figures, hidden, before=1)
    legend = "skew: latest − earliest arrival; latency: the shortest duration across ranks" + (
        "; !: ranks disagree (see warnings)" if any(c.problems for c in worst) else ""
    )
    if hidden:
        legend += f"; hidden at {width} columns: {', '.join(hidden)} (--format json has all)"
    lines += wrap_words(legend, width - 2, "  ")
    return lines
