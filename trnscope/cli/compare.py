"""``trnscope compare``: variants side by side, headless (table, CSV or JSON)."""

from __future__ import annotations

import argparse
import io
import sys
from typing import Any

from trnscope.cli.sources import open_sources
from trnscope.cli.textout import csv_writer, text_console
from trnscope.cli.width import output_width
from trnscope.core.analysis.compare import METRICS, CompareRow, Comparison, compare, with_metric
from trnscope.core.analysis.contracts import compare_document, encode, figures_document
from trnscope.core.base.text import safe_text
from trnscope.core.base.units import fmt_ratio, fmt_time_ns, us
from trnscope.core.opening.sources import Mode


def _cap(rows: list[CompareRow], limit: int) -> list[CompareRow]:
    """``--limit`` applies to every section."""
    return rows[:limit] if limit > 0 else rows


def render_json(comparison: Comparison, limit: int) -> str:
    return encode(compare_document(comparison, limit)) + "\n"


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


def render_table(comparison: Comparison, limit: int, width: int) -> str:
    from rich.table import Table

    console = text_console(width)
    metric = METRICS[comparison.primary]
    baseline = comparison.labels[0]
    marks = ["SYNTHETIC" if s else "" for s in comparison.synthetic]

    def table(title: str, rows: list[CompareRow], show_kind: bool) -> None:
        t = Table(title=title, title_justify="left", box=None, show_edge=False, header_style="bold")
        t.add_column("Name", no_wrap=True, overflow="ellipsis", max_width=48)
        if show_kind:
            t.add_column("kind", no_wrap=True)
        for label in comparison.labels:
            t.add_column(f"{safe_text(label)} {metric}", justify="right", no_wrap=True)
        for label in comparison.labels[1:]:
            t.add_column(f"Δ {safe_text(label)}", justify="right", no_wrap=True)
            t.add_column(f"×{safe_text(baseline)}", justify="right", no_wrap=True)
        for row in rows:
            values = row.metric(comparison.primary)
            cells = [safe_text(row.key)] + ([row.kind] if show_kind else [])
            cells += [fmt_time_ns(v) if p else "—" for v, p in zip(values, row.present)]
            for v in values[1:]:
                cells += [("+" if v >= values[0] else "") + fmt_time_ns(v - values[0]), fmt_ratio(v, values[0])]
            t.add_row(*cells)
        console.print(t)
        console.print()

    console.print(
        "Comparing "
        + " vs ".join(
            f"{safe_text(label)}{' (' + mark + ')' if mark else ''}" for label, mark in zip(comparison.labels, marks)
        )
        + f"  (baseline: {safe_text(baseline)})"
    )
    console.print()
    if comparison.diagnosis:
        t = Table(
            title="Diagnosis (trnscope diagnose)", title_justify="left", box=None, show_edge=False, header_style="bold"
        )
        t.add_column("", no_wrap=True)
        for label in comparison.labels:
            t.add_column(safe_text(label), justify="right", no_wrap=True)
        d = comparison.diagnosis
        t.add_row("device idle", *[f"{x.device_idle_pct:.1f}%" for x in d])
        t.add_row("host-bound steps", *[f"{x.host_bound_steps} of {x.steps}" for x in d])
        t.add_row("device launches per step", *[f"{x.dispatches_per_step:g}" for x in d])
        t.add_row("largest finding", *[x.top_finding or "—" for x in d])
        console.print(t)
        console.print()
    if comparison.regions:
        table(
            "Regions (record_function ranges; device work charged to the region that launched it)",
            _cap(comparison.regions, limit),
            False,
        )
    if comparison.kernels:
        t = Table(title="Device work per region", title_justify="left", box=None, show_edge=False, header_style="bold")
        t.add_column("Region", no_wrap=True)
        for label in comparison.labels:
            t.add_column(
                safe_text(label),
                no_wrap=True,
                overflow="ellipsis",
                max_width=max(20, (width - 20) // len(comparison.labels)),
            )
        for row in _cap(comparison.kernels, limit):
            t.add_row(
                safe_text(row.key),
                *[
                    f"{fmt_time_ns(v.device_total_ns)} {safe_text(d)}" if v is not None else "—"
                    for v, d in zip(row.values, row.detail)
                ],
            )
        console.print(t)
        console.print()
    table("Ops, by largest change", _cap(comparison.rows, limit), True)
    return console.export_text()


def cmd_compare(args: argparse.Namespace) -> int:
    opened = open_sources(args, args.paths, Mode.VARIANTS)
    for note in opened.notes:
        sys.stderr.write(f"note: {safe_text(note)}\n")
    comparison = compare(opened.analyses, opened.labels)
    if getattr(args, "metric", None):
        comparison = with_metric(comparison, f"{args.metric}_ns")
    limit = args.limit if args.limit is not None else (25 if args.format == "table" else 0)
    if args.format == "json":
        sys.stdout.write(render_json(comparison, limit))
    elif args.format == "csv":
        sys.stdout.write(render_csv(comparison, limit, terminal=sys.stdout.isatty()))
    else:
        sys.stdout.write(render_table(comparison, limit, output_width()))
    sys.stdout.flush()
    opened.finish()
    return 0
