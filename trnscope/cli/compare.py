"""``trnscope compare``: variants side by side, headless (table, CSV or JSON)."""

from __future__ import annotations

import argparse
import io
import sys
from typing import Any

from trnscope.cli.sources import open_sources
from trnscope.cli.text_table import NAME_COMFORT, NAME_MIN, NumberColumn, layout, print_columns
from trnscope.cli.textout import csv_writer, text_console
from trnscope.cli.width import output_width
from trnscope.core.analysis.compare import METRICS, CompareRow, Comparison, compare, matching, with_metric
from trnscope.core.analysis.compare_model import diagnosis_rows
from trnscope.core.analysis.contracts import compare_document, encode, figures_document
from trnscope.core.analysis.distribution import RatioInterval
from trnscope.core.analysis.row_labels import distinct_names
from trnscope.core.base.errors import TrnscopeError
from trnscope.core.base.text import elide_middle_text, safe_text, wrap_words
from trnscope.core.base.units import fmt_ratio, fmt_time_ns, us
from trnscope.core.opening.sources import Mode


def _cap(rows: list[CompareRow], limit: int) -> list[CompareRow]:
    """``--limit`` applies to every section."""
    return rows[:limit] if limit > 0 else rows


def render_json(comparison: Comparison, limit: int, match: str = "") -> str:
    return encode(compare_document(comparison, limit, match)) + "\n"


def render_csv(comparison: Comparison, limit: int, terminal: bool = False) -> str:
    out = io.StringIO()
    writer = csv_writer(out, terminal)
    header = ["section", "key", "kind"]
    for label in comparison.labels:
        header += [
            f"{label}:calls",
            f"{label}:self_cpu_us",
            f"{label}:cpu_total_us",
            f"{label}:self_device_us",
            f"{label}:device_total_us",
        ]
    header += [f"{label}:delta_us" for label in comparison.labels[1:]] + [
        f"{label}:ratio" for label in comparison.labels[1:]
    ]
    writer.writerow(header)
    sections = (
        ("region", _cap(comparison.regions, limit)),
        ("kernels", _cap(comparison.kernels, limit)),
        ("op", _cap(comparison.rows, limit)),
    )
    for section, rows in sections:
        for row in rows:
            cells: list[Any] = [section, row.key, row.kind]
            for value in row.values:
                f = figures_document(value)
                cells += (
                    [""] * 5
                    if f is None
                    else [f.calls, f.self_cpu_us, f.cpu_total_us, f.self_device_us, f.device_total_us]
                )
            values = row.metric(comparison.primary)
            cells += [us(v - values[0]) for v in values[1:]]
            cells += [round(v / values[0], 4) if values[0] else "" for v in values[1:]]
            writer.writerow(cells)
    return out.getvalue()


LETTERS = "ABC"


def variant_legend(comparison: Comparison) -> list[str]:
    """``A = eager (baseline)``, one line per variant: columns are headed by the letter,
    so a long trace name never pushes a number off the line."""
    out = []
    for letter, label, synthetic in zip(LETTERS, comparison.labels, comparison.synthetic, strict=False):
        marks = [m for m, on in (("baseline", letter == "A"), ("SYNTHETIC", synthetic)) if on]
        out.append(f"{letter} = {safe_text(label)}" + (f"  ({', '.join(marks)})" if marks else ""))
    return out


def _time_or_dash(value: float | None) -> str:
    return "—" if value is None else fmt_time_ns(value)


def _rows_table(
    console: Any, title: str, comparison: Comparison, rows: list[CompareRow], width: int, show_kind: bool
) -> list[str]:
    """One section of aligned rows: the metric per variant, then Δ and × against A; a
    row missing from a variant shows — there and in its Δ and ×.  Returns the hidden
    columns."""
    metric = METRICS[comparison.primary]
    count = comparison.primary == "calls"
    letters = LETTERS[: len(comparison.labels)]
    # a narrow table drops the kind column first: twins still differ by their names
    texts = [("Name", distinct_names([(row.key,) for row in rows], [row.kind for row in rows]), NAME_MIN, 100)]
    if show_kind:
        kinds = [row.kind for row in rows]
        # a word from a short list ("annotation", "kernel"): whole, or the column goes
        texts.append(("kind", kinds, max((len(kind) for kind in kinds), default=4), 45))

    def cell(value: int) -> str:
        return f"{value:,}" if count else fmt_time_ns(value)

    numbers = [
        NumberColumn(
            f"{letter} {metric}" if k == 0 else letter,
            90 - k,
            [cell(row.metric(comparison.primary)[k]) if row.present[k] else "—" for row in rows],
        )
        for k, letter in enumerate(letters)
    ]
    for k, letter in enumerate(letters[1:], start=1):
        deltas, ratios = [], []
        for row in rows:
            values = row.metric(comparison.primary)
            if row.present[0] and row.present[k]:
                delta = values[k] - values[0]
                deltas.append(("+" if delta >= 0 else "-") + cell(abs(delta)))
                ratios.append(fmt_ratio(values[k], values[0]) or "—")
            else:
                deltas.append("new" if row.present[k] else "gone" if row.present[0] else "—")
                ratios.append("—")
        numbers.append(NumberColumn(f"Δ{letter}", 60 - k, deltas))
        numbers.append(NumberColumn(f"×{letter}", 40 - k, ratios))
    kept_texts, kept, gone = layout(width, texts, numbers)
    print_columns(console, title, kept_texts, kept, len(rows))
    console.print()
    return gone


def _verdict(interval: RatioInterval | None) -> str:
    if interval is None or interval.ratio != interval.ratio:
        return "—"
    return interval.verdict


def _ratio_text(interval: RatioInterval | None) -> str:
    if interval is None or interval.ratio != interval.ratio:
        return "—"
    return interval.text()


def _kernel_runs_lines(comparison: Comparison, width: int, console: Any) -> list[str]:
    """Each aligned kernel: every variant's distribution, then each variant against A."""
    hidden: list[str] = []
    for index, row in enumerate(comparison.kernel_runs):
        letters = [LETTERS[k] for k, runs in enumerate(row.runs) if runs is not None]
        present = [runs for runs in row.runs if runs is not None]
        texts = [("", letters, 1, 100), ("Kernel", [safe_text(r.name) for r in present], 12, 95)]
        numbers = [
            NumberColumn("Calls", 90, [f"{r.calls:,}" for r in present]),
            NumberColumn("Median", 89, [fmt_time_ns(r.median_ns) for r in present]),
            NumberColumn("Mean", 80, [fmt_time_ns(r.mean_ns) for r in present]),
            NumberColumn("P10", 60, [fmt_time_ns(r.p10_ns) for r in present]),
            NumberColumn("P90", 61, [fmt_time_ns(r.p90_ns) for r in present]),
            NumberColumn("Std", 45, [fmt_time_ns(r.std_ns) for r in present]),  # P10–P90 say the spread too
            NumberColumn("Min", 30, [fmt_time_ns(r.min_ns) for r in present]),
            NumberColumn("Max", 31, [fmt_time_ns(r.max_ns) for r in present]),
        ]
        kept_texts, kept, gone = layout(width, texts, numbers)
        hidden += [h for h in gone if h not in hidden]
        title = "Kernel executions" + (f" #{index + 1}" if len(comparison.kernel_runs) > 1 else "")
        title += f" ({row.aligned_how}; each execution's device time)"
        print_columns(console, title, kept_texts, kept, len(present))
        for k in range(1, len(row.runs)):
            if row.runs[k] is None or row.runs[0] is None:
                continue
            median, mean = row.median_ratio[k], row.mean_ratio[k]
            line = f"  {LETTERS[k]} vs A: median {_ratio_text(median)}, mean {_ratio_text(mean)} → {_verdict(median)}"
            for piece in wrap_words(line, width, "  ") or [line]:
                console.print(piece)
        console.print()
    if comparison.kernel_runs:
        legend = "ratio: the variant's statistic ÷ A's [95% bootstrap interval, fixed seed]; within noise: it holds 1"
        for line in wrap_words(legend, width, "  "):
            console.print(line)
        console.print()
    return hidden


# Python frames wrap whole steps: ranked by change, the wrappers (the script's own
# frames, the capture harness's) would fill the ops table ahead of any op; the
# explorer's compare view hides them too (p shows them there).
DEFAULT_HIDE = ("python",)


def render_table(comparison: Comparison, limit: int, width: int, hide: tuple[str, ...] = (), match: str = "") -> str:
    console = text_console(width)
    for line in variant_legend(comparison):
        console.print(line)
    console.print()
    hidden: list[str] = []
    hidden += _kernel_runs_lines(comparison, width, console)
    if comparison.diagnosis and not comparison.kernel_runs:
        hidden += _diagnosis_table(console, comparison, width)
    if comparison.regions:
        hidden += _rows_table(
            console,
            "Regions (record_function ranges; device work charged to the region that launched it)",
            comparison,
            _cap(comparison.regions, limit),
            width,
            False,
        )
    if comparison.kernels:
        hidden += _device_work_table(console, comparison, _cap(comparison.kernels, limit), width)
    shown = [row for row in comparison.rows if row.kind not in hide]
    only_kernels = comparison.kernel_runs and all(row.kind == "kernel" for row in comparison.rows)
    if not only_kernels:  # a kernel benchmark's "ops" are its kernels, compared above
        hidden += _rows_table(console, "Ops, by largest change", comparison, _cap(shown, limit), width, True)
    _left_out(console, comparison, shown, limit, hide, not only_kernels, match)
    if hidden:
        unique = list(dict.fromkeys(hidden))
        console.print(f"(hidden at {width} columns: {', '.join(unique)}; set COLUMNS, or --format csv / json)")
    for note in comparison.notes:
        for line in wrap_words("note: " + safe_text(note), width, ""):
            console.print(line)
    return console.export_text()


def _diagnosis_table(console: Any, comparison: Comparison, width: int) -> list[str]:
    """Each variant's diagnosis figures (``trnscope diagnose``'s), side by side; the
    columns left out at this width."""
    rows = diagnosis_rows(comparison.diagnosis, fmt_time_ns, wide=True)
    rows_named = [label for label, _ in rows]
    texts = [("Diagnosis", rows_named, 24, 100)]
    numbers = [
        NumberColumn(letter, 90 - k, [values[k] for _, values in rows])
        for k, letter in enumerate(LETTERS[: len(comparison.diagnosis)])
    ]
    kept_texts, kept, gone = layout(width, texts, numbers)
    print_columns(console, "", kept_texts, kept, len(rows_named))
    console.print()
    return gone


def _left_out(
    console: Any,
    comparison: Comparison,
    shown: list[CompareRow],
    limit: int,
    hide: tuple[str, ...],
    ops_printed: bool,
    match: str = "",
) -> None:
    """What rows the tables left out: cut by ``--limit``, of a hidden kind, or not
    matching ``--match``."""
    if cut := _rows_cut(comparison, shown, limit, ops_printed):  # rows left out say so, as columns do
        console.print(cut)
    if match:
        console.print(f"(only rows whose name matches {safe_text(repr(match))}: --match)")
    if len(shown) < len(comparison.rows):
        kinds = sorted({row.kind for row in comparison.rows if row.kind in hide})
        console.print(
            f"({len(comparison.rows) - len(shown):,} {'/'.join(kinds)} rows hidden"
            f"{', as in the explorer' if hide == DEFAULT_HIDE else ''}: --hide none shows them)"
        )


def _rows_cut(comparison: Comparison, ops: list[CompareRow], limit: int, ops_printed: bool) -> str:
    """The note on the tables ``--limit`` cut: "(rows shown: regions 25 of 35, ops 25
    of 433, …)", or "" where none was."""
    cut = [
        f"{what} {limit:,} of {len(rows):,}"
        for what, rows, printed in (
            ("regions", comparison.regions, True),
            ("device work", comparison.kernels, True),
            ("ops", ops, ops_printed),
        )
        if printed and 0 < limit < len(rows)
    ]
    return f"(rows shown: {', '.join(cut)}, the largest changes first; --limit 0 prints all)" if cut else ""


def _device_work_table(console: Any, comparison: Comparison, rows: list[CompareRow], width: int) -> list[str]:
    """Per region, each variant's device time and the kernels behind it.  The time is a
    number, never cut: a variant's column is at least as wide as its longest time, and
    only the kernels' text after it loses its middle (or goes, where only the time
    fits); a column that cannot hold its times is left out and said so."""
    texts = [("Region", [safe_text(row.key) for row in rows], NAME_MIN, 100)]
    times: list[list[str]] = []
    details: list[list[str]] = []
    for k, letter in enumerate(LETTERS[: len(comparison.labels)]):
        values = [row.values[k] for row in rows]
        times.append([fmt_time_ns(value.device_total_ns) if value else "—" for value in values])
        details.append(
            [safe_text(row.detail[k]) if value and k < len(row.detail) else "" for row, value in zip(rows, values)]
        )
        cells = [f"{time} {detail}".strip() for time, detail in zip(times[k], details[k])]
        texts.append((letter, cells, max(len(letter), *map(len, times[k])), 90 - k))
    kept_texts, _, gone = layout(width, texts, [])
    # the variants share their columns' room evenly (the layout gives spare room to the
    # first column first: A's kernels got all of it, B's none), and a long region name
    # keeps NAME_COMFORT cells when the kernels behind it need the rest (at 80 columns
    # HTA's "## all2all_data:permute_sparse_features ##" took 42 cells and every
    # variant's kernels were left out)
    letters = [header for header, _cells, _width in kept_texts[1:]]
    minimums = [texts[LETTERS.index(letter) + 1][2] for letter in letters]
    room = sum(column_width for _h, _c, column_width in kept_texts[1:])
    region_header, region_cells, region_width = kept_texts[0]
    given = room + max(region_width - NAME_COMFORT, 0)
    readable = letters and given // len(letters) - max(minimums) - 1 >= _KERNELS_READABLE
    if readable and any(any(details[LETTERS.index(letter)]) for letter in letters) and region_width > NAME_COMFORT:
        room, region_width = given, NAME_COMFORT
    shares = _even_split(room, minimums)
    fitted: list[tuple[str, list[str], int]] = [(region_header, region_cells, region_width)]
    for letter, share in zip(letters, shares):
        k = LETTERS.index(letter)
        fitted.append((letter, [_time_then_text(t, d, share) for t, d in zip(times[k], details[k])], share))
    print_columns(console, "Device work per region (the kernels behind it)", fitted, [], len(rows))
    console.print()
    return gone


def _even_split(total: int, minimums: list[int]) -> list[int]:
    """``total`` cells over columns that need at least ``minimums``: the narrowest
    widened first, a cell at a time, so they end as even as their minimums allow."""
    widths = list(minimums)
    for _ in range(max(total - sum(widths), 0)):
        widths[widths.index(min(widths))] += 1
    return widths


_KERNELS_READABLE = 24  # cells of kernel text worth a shorter region name ("5 kernels: ncclKernel_…")


def _time_then_text(time: str, text: str, width: int) -> str:
    """``time``, whole, then as much of ``text`` as fits ``width`` (its middle elided;
    none of it where fewer than twelve cells are left: "100 k…" tells nothing)."""
    room = width - len(time) - 1
    if not text or room < 12:
        return time
    return f"{time} {elide_middle_text(text, room)}"


def _align_pairs(args: argparse.Namespace) -> list[tuple[str, str]]:
    pairs = []
    for item in getattr(args, "align", []) or []:
        base, sep, other = item.partition("=")
        if not sep or not base or not other:
            raise TrnscopeError(f"--align {item!r}: give BASELINE_KERNEL=OTHER_KERNEL")
        pairs.append((base, other))
    return pairs


def cmd_compare(args: argparse.Namespace) -> int:
    opened = open_sources(args, args.paths, Mode.VARIANTS)
    for note in opened.notes:
        sys.stderr.write(f"note: {safe_text(note)}\n")
    comparison = compare(opened.analyses, opened.labels, _align_pairs(args))
    if getattr(args, "metric", None):
        comparison = with_metric(comparison, "calls" if args.metric == "calls" else f"{args.metric}_ns")
    if args.match:
        comparison = matching(comparison, args.match)
    limit = args.limit if args.limit is not None else (25 if args.format == "table" else 0)
    if limit < 0:
        raise TrnscopeError("--limit must be 0 (no limit) or more")
    asked = tuple(h.strip() for item in getattr(args, "hide", []) or [] for h in item.split(",") if h.strip())
    hide = DEFAULT_HIDE if not asked else tuple(h for h in asked if h != "none")
    if args.format == "json":
        sys.stdout.write(render_json(comparison, limit, args.match or ""))
    elif args.format == "csv":
        sys.stdout.write(render_csv(comparison, limit, terminal=sys.stdout.isatty()))
    else:
        sys.stdout.write(render_table(comparison, limit, output_width(), hide, args.match or ""))
    sys.stdout.flush()
    opened.finish()
    return 0
