"""``trnscope summary`` output: the summary as JSON, CSV or a text table."""

from __future__ import annotations

import io

import msgspec

from trnscope.cli.textout import csv_writer, text_console
from trnscope.core.analysis.contracts import SummaryOut, encode
from trnscope.core.base.text import safe_text
from trnscope.core.base.units import fmt_percent, fmt_time_ns


def render_json(summary: SummaryOut) -> str:
    return encode(summary)


def render_csv(summary: SummaryOut, which: str = "ops", terminal: bool = False) -> str:
    """CSV; ``terminal``: the cells are sanitised (a file or pipe gets the exact text)."""
    out = io.StringIO()
    writer = csv_writer(out, terminal)
    if which == "kernels":
        writer.writerow(["name", "calls", "total_us", "mean_us", "min_us", "max_us", "op"])
        for k in summary.kernels:
            writer.writerow(
                [k.name, k.calls, k.total_us, round(k.total_us / max(k.calls, 1), 3), k.min_us, k.max_us, k.op]
            )
        return out.getvalue()
    writer.writerow(
        [
            "name",
            "input_shapes",
            "stack",
            "kind",
            "calls",
            "self_cpu_us",
            "cpu_total_us",
            "cpu_avg_us",
            "self_device_us",
            "device_total_us",
            "device_avg_us",
        ]
    )
    for op in summary.ops:
        calls = max(op.calls, 1)
        writer.writerow(
            [
                op.name,
                "" if op.input_shapes is None else msgspec.json.encode(op.input_shapes).decode(),
                "" if op.stack is None else " ; ".join(op.stack),
                op.kind,
                op.calls,
                op.self_cpu_us,
                op.cpu_total_us,
                round(op.cpu_total_us / calls, 3),
                op.self_device_us,
                op.device_total_us,
                round(op.device_total_us / calls, 3),
            ]
        )
    return out.getvalue()


def render_table(summary: SummaryOut, width: int | None = None, which: str = "both") -> str:
    from rich.table import Table

    device = summary.device_label
    console = text_console(width or 160)
    title = safe_text(
        f"{summary.label or summary.source}  [{summary.device_kind}{' · ' + summary.device_name if summary.device_name else ''}]"
    )
    if summary.step:
        title += safe_text(f"  {summary.step} only")
    if summary.synthetic:
        title += "  SYNTHETIC"
    has_device = summary.totals.self_device_us > 0
    if which in ("both", "ops"):
        t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None, header_style="bold")
        t.add_column("Name", overflow="ellipsis", no_wrap=True, max_width=60)
        if summary.group_by == "shape":
            t.add_column("Input Shapes", overflow="ellipsis", no_wrap=True, max_width=40)
        if summary.group_by == "stack":
            t.add_column("Stack", overflow="ellipsis", no_wrap=True, max_width=50)
        for header in ("Calls", "Self CPU %", "Self CPU", "CPU total", "CPU avg"):
            t.add_column(header, justify="right", no_wrap=True, min_width=len(header))
        if has_device:
            for header in (f"Self {device} %", f"Self {device}", f"{device} total", f"{device} avg"):
                t.add_column(header, justify="right", no_wrap=True, min_width=len(header))
        total_cpu = summary.totals.self_cpu_us
        total_dev = summary.totals.self_device_us
        for op in summary.ops:
            calls = max(op.calls, 1)
            cells = [op.name]
            if summary.group_by == "shape":
                cells.append(
                    "" if op.input_shapes is None else msgspec.json.encode(op.input_shapes).decode().replace(",", ", ")
                )
            if summary.group_by == "stack":
                cells.append(" ← ".join(op.stack or []))
            cells += [
                f"{op.calls:,}",
                fmt_percent(op.self_cpu_us, total_cpu),
                fmt_time_ns(op.self_cpu_us * 1000),
                fmt_time_ns(op.cpu_total_us * 1000),
                fmt_time_ns(op.cpu_total_us * 1000 / calls),
            ]
            if has_device:
                cells += [
                    fmt_percent(op.self_device_us, summary.totals.device_share_base_us or total_dev),
                    fmt_time_ns(op.self_device_us * 1000),
                    fmt_time_ns(op.device_total_us * 1000),
                    fmt_time_ns(op.device_total_us * 1000 / calls),
                ]
            t.add_row(*map(safe_text, cells))
        console.print(t)
        console.print(f"Self CPU time total: {fmt_time_ns(total_cpu * 1000)}")
        if has_device:
            console.print(f"Self {device} time total: {fmt_time_ns(total_dev * 1000)}")
        console.print(f"Wall time: {fmt_time_ns(summary.totals.wall_us * 1000)}   events: {summary.events:,}")
    if which in ("both", "kernels") and summary.kernels:
        console.print()
        k = Table(
            title="Device events (kernels, copies)",
            title_justify="left",
            show_edge=False,
            pad_edge=False,
            box=None,
            header_style="bold",
        )
        k.add_column("Kernel", overflow="ellipsis", no_wrap=True, max_width=70)
        for header in ("Calls", "Total", "Mean", "Min", "Max"):
            k.add_column(header, justify="right", no_wrap=True, min_width=10)
        k.add_column("Launched by", overflow="ellipsis", no_wrap=True, max_width=40)
        for row in summary.kernels:
            k.add_row(
                safe_text(row.name),
                f"{row.calls:,}",
                fmt_time_ns(row.total_us * 1000),
                fmt_time_ns(row.total_us * 1000 / max(row.calls, 1)),
                fmt_time_ns(row.min_us * 1000),
                fmt_time_ns(row.max_us * 1000),
                safe_text(row.op) or "—",
            )
        console.print(k)
    if summary.link and summary.link.device_events:
        link = summary.link
        reasons = [
            (link.unlinkable, "launched before the capture window"),
            (link.outside_ops, "launched by runtime calls outside any op"),
            (link.unresolved, "with links that lead nowhere"),
        ]
        rest = "; ".join(f"{count:,} {why}" for count, why in reasons if count)
        console.print(
            f"Linked {link.linked:,} of {link.device_events:,} device events to ops "
            f"(coverage {100 * summary.link_coverage:.2f}%){'; ' + rest if rest else ''}"
        )
    if summary.neuron is not None and summary.neuron.executions:
        n = summary.neuron
        per_core = n.physical_core_rows / n.executions if n.executions else 0
        console.print(
            f"NeuronCore executions: {n.linked:,} of {n.executions:,} linked to ops "
            f"(flow_id {n.by_flow:,}, framework_mapping {n.by_mapping:,}, time {n.by_time:,}); "
            f"{n.physical_core_rows:,} nc_exec_running rows"
            + (f", {per_core:g} per execution (one per physical core)" if per_core > 1 else "")
        )
    for warning in summary.warnings:
        console.print(f"warning: {safe_text(warning)}")
    return console.export_text()
