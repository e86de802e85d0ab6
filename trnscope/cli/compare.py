"""``trnscope compare``: variants side by side, headless (table, CSV or JSON)."""

from __future__ import annotations

import argparse
import csv
import io
import sys
from typing import Any

import msgspec

from trnscope.cli.sources import open_sources
from trnscope.cli.width import output_width
from trnscope.core.analysis.compare import CompareRow, Comparison, compare
from trnscope.core.base.units import fmt_ratio, fmt_time_ns, us
from trnscope.core.opening.sources import Mode


def _figures(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    return {
        "calls": value.calls,
        "self_cpu_us": us(value.self_cpu_ns),
        "cpu_total_us": us(value.cpu_total_ns),
        "self_device_us": us(value.self_device_ns),
        "device_total_us": us(value.device_total_ns),
    }


def _row_json(comparison: Comparison, row: CompareRow) -> dict[str, Any]:
    values = row.metric(comparison.primary)
    base = values[0]
    return {
        "key": row.key,
        "kind": row.kind,
        "values": {label: _figures(v) for label, v in zip(comparison.labels, row.values)},
        "delta_us": {label: us(v - base) for label, v in zip(comparison.labels, values)},
        "ratio": {label: (round(v / base, 4) if base else None) for label, v in zip(comparison.labels, values)},
        "present_in": [label for label, present in zip(comparison.labels, row.present) if present],
        **({"detail": dict(zip(comparison.labels, row.detail))} if row.detail else {}),
    }


def render_json(comparison: Comparison, limit: int) -> str:
    doc = {
        "variants": comparison.labels,
        "baseline": comparison.labels[0],
        "metric": comparison.primary.replace("_ns", "_us"),
        "regions": [_row_json(comparison, r) for r in comparison.regions],
        "kernels": [_row_json(comparison, r) for r in comparison.kernels],
        "ops": [_row_json(comparison, r) for r in (comparison.rows[:limit] if limit else comparison.rows)],
    }
    return msgspec.json.format(msgspec.json.encode(doc), indent=2).decode() + "\n"


def render_csv(comparison: Comparison, limit: int) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
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
        ("region", comparison.regions),
        ("kernels", comparison.kernels),
        ("op", comparison.rows[:limit] if limit else comparison.rows),
    )
    for section, rows in sections:
        for row in rows:
            cells: list[Any] = [section, row.key, row.kind]
            for value in row.values:
                f = _figures(value)
                cells += (
                    [""] * 5
                    if f is None
                    else [f["calls"], f["self_cpu_us"], f["cpu_total_us"], f["self_device_us"], f["device_total_us"]]
                )
            values = row.metric(comparison.primary)
            cells += [us(v - values[0]) for v in values[1:]]
            cells += [round(v / values[0], 4) if values[0] else "" for v in values[1:]]
            writer.writerow(cells)
    return out.getvalue()


def render_table(comparison: Comparison, limit: int, width: int) -> str:
    from rich.console import Console
    from rich.table import Table

    console = Console(
        width=width, record=True, file=io.StringIO(), force_terminal=False, color_system=None, highlight=False
    )
    metric = "device total" if comparison.primary == "device_total_ns" else "CPU total"
    baseline = comparison.labels[0]
    marks = ["SYNTHETIC" if s else "" for s in comparison.synthetic]

    def table(title: str, rows: list[CompareRow], show_kind: bool) -> None:
        t = Table(title=title, title_justify="left", box=None, show_edge=False, header_style="bold")
        t.add_column("Name", no_wrap=True, overflow="ellipsis", max_width=48)
        if show_kind:
            t.add_column("kind", no_wrap=True)
        for label in comparison.labels:
            t.add_column(f"{label} {metric}", justify="right", no_wrap=True)
        for label in comparison.labels[1:]:
            t.add_column(f"Δ {label}", justify="right", no_wrap=True)
            t.add_column(f"×{baseline}", justify="right", no_wrap=True)
        for row in rows:
            values = row.metric(comparison.primary)
            cells = [row.key] + ([row.kind] if show_kind else [])
            cells += [fmt_time_ns(v) if p else "—" for v, p in zip(values, row.present)]
            for v in values[1:]:
                cells += [("+" if v >= values[0] else "") + fmt_time_ns(v - values[0]), fmt_ratio(v, values[0])]
            t.add_row(*cells)
        console.print(t)
        console.print()

    console.print(
        "Comparing "
        + " vs ".join(f"{label}{' (' + mark + ')' if mark else ''}" for label, mark in zip(comparison.labels, marks))
        + f"  (baseline: {baseline})"
    )
    console.print()
    if comparison.regions:
        table(
            "Regions (record_function ranges; device work charged to the region that launched it)",
            comparison.regions,
            False,
        )
    if comparison.kernels:
        t = Table(title="Device work per region", title_justify="left", box=None, show_edge=False, header_style="bold")
        t.add_column("Region", no_wrap=True)
        for label in comparison.labels:
            t.add_column(
                f"{label}", no_wrap=True, overflow="ellipsis", max_width=max(20, (width - 20) // len(comparison.labels))
            )
        for row in comparison.kernels:
            t.add_row(
                row.key,
                *[
                    f"{fmt_time_ns(v.device_total_ns)} {d}" if v is not None else "—"
                    for v, d in zip(row.values, row.detail)
                ],
            )
        console.print(t)
        console.print()
    table("Ops, by largest change", comparison.rows[:limit] if limit else comparison.rows, True)
    return console.export_text()


def cmd_compare(args: argparse.Namespace) -> int:
    opened = open_sources(args, args.paths, Mode.VARIANTS)
    for note in opened.notes:
        sys.stderr.write(f"note: {note}\n")
    comparison = compare(opened.analyses, opened.labels)
    limit = args.limit if args.limit is not None else (25 if args.format == "table" else 0)
    if args.format == "json":
        sys.stdout.write(render_json(comparison, limit))
    elif args.format == "csv":
        sys.stdout.write(render_csv(comparison, limit))
    else:
        sys.stdout.write(render_table(comparison, limit, output_width()))
    sys.stdout.flush()
    opened.finish()
    return 0
