"""``trnscope summary`` output: the summary as JSON, CSV or a text table."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import msgspec

from trnscope.cli.text_table import NAME_MIN, NumberColumn, layout, print_columns
from trnscope.core.analysis.columns import OP_COLUMNS, Needs, OpColumn, Unit
from trnscope.core.analysis.contracts import OpOut, SummaryOut, encode
from trnscope.core.analysis.row_labels import distinct_names
from trnscope.core.base.text import safe_text
from trnscope.core.base.units import fit_si, fmt_bytes, fmt_share, fmt_time_ns
from trnscope.core.model import op_tree


def render_json(summary: SummaryOut) -> str:
    return encode(summary)


def _csv_value(unit: Unit, value: Any) -> Any:
    if value is None:
        return ""
    if unit is Unit.PERCENT:
        return round(float(value), 4)
    return value


def render_csv(summary: SummaryOut, which: str = "ops", terminal: bool = False) -> str:
    """CSV with a column per catalogue column (memory and FLOPs cells are empty unless
    computed: ``--with``); ``terminal``: the cells are sanitised (a file or pipe gets
    the exact text)."""
    from trnscope.cli.textout import csv_writer  # (with the csv module: not for JSON)

    out = io.StringIO()
    writer = csv_writer(out, terminal)
    if which == "kernels":
        writer.writerow(
            [
                "name",
                "calls",
                "total_us",
                "mean_us",
                "min_us",
                "max_us",
                "median_us",
                "p10_us",
                "p90_us",
                "std_us",
                "op",
            ]
        )
        for k in summary.kernels:
            spread = ["" if v is None else v for v in (k.median_us, k.p10_us, k.p90_us, k.std_us)]
            writer.writerow(
                [k.name, k.calls, k.total_us, round(k.total_us / max(k.calls, 1), 3), k.min_us, k.max_us, *spread, k.op]
            )
        return out.getvalue()
    writer.writerow(["name", "input_shapes", "stack", "kind", *(c.field for c in OP_COLUMNS)])
    for op in summary.ops:
        writer.writerow(
            [
                op.name,
                "" if op.input_shapes is None else msgspec.json.encode(op.input_shapes).decode(),
                "" if op.stack is None else " ; ".join(op.stack),
                op.kind,
                *(_csv_value(c.unit, getattr(op, c.field)) for c in OP_COLUMNS),
            ]
        )
    return out.getvalue()


def _spread_cell(value: float | None) -> str:
    return "—" if value is None else fmt_time_ns(value * 1000)


def _op_text_columns(summary: SummaryOut) -> list[tuple[str, list[str], int, int]]:
    """(header, cells, minimum width, priority) of the op table's text columns."""
    ops = summary.ops
    shapes = [
        "" if op.input_shapes is None else msgspec.json.encode(op.input_shapes).decode().replace(",", ", ")
        for op in ops
    ]
    stacks = [" ← ".join(op.stack or []) for op in ops]
    names = distinct_names(list(zip([op.name for op in ops], shapes, stacks)), [op.kind for op in ops])
    texts = [("Name", names, NAME_MIN, 100)]
    if summary.group_by == "shape":
        texts.append(("Input Shapes", shapes, 12, 95))  # grouped by shape: the shapes are the point
    if summary.group_by == "stack":
        texts.append(("Stack", stacks, 14, 95))
    return texts


def _has(summary: SummaryOut, needs: Needs) -> bool:
    """Whether the summary carries a column that needs ``needs``."""
    if needs is Needs.NOTHING:
        return True
    if needs is Needs.DEVICE:
        return summary.totals.self_device_us > 0
    if needs is Needs.MEMORY:
        return summary.extras.get("memory") == "computed" and any(op.cpu_memory_bytes is not None for op in summary.ops)
    if needs is Needs.DEVICE_MEMORY:
        return summary.extras.get("memory") == "computed" and any(op.device_memory_bytes for op in summary.ops)
    return summary.extras.get("flops") == "computed" and any(op.flops is not None for op in summary.ops)


def table_columns(summary: SummaryOut) -> list[OpColumn]:
    """The catalogue's columns this summary has values for, in catalogue order."""
    return [column for column in OP_COLUMNS if _has(summary, column.needs)]


def _not_computed(summary: SummaryOut) -> list[str]:
    return [name for name, state in summary.extras.items() if state == "not computed"]


def _not_computed_headers(summary: SummaryOut) -> list[str]:
    """The headers of the columns the trace has but that were not computed."""
    missing = set(_not_computed(summary))
    return [
        column.header(summary.device_label)
        for column in OP_COLUMNS
        if column.extra in missing and column.needs is not Needs.DEVICE_MEMORY
    ]


_TEXT_FORMAT: dict[Unit, Callable[[Any], str]] = {
    Unit.NS: lambda v: fmt_time_ns(v * 1000),  # the JSON figure is in µs
    Unit.COUNT: lambda v: f"{v:,}",
    Unit.BYTES: fmt_bytes,
    Unit.FLOPS: lambda v: fit_si(v, 8),
    Unit.RATE: lambda v: fit_si(v, 8),
    Unit.PERCENT: lambda v: f"{v:.2f}%",
}


def _text_cell(column: OpColumn, op: OpOut) -> str:
    value = getattr(op, column.field)
    return "" if value is None else _TEXT_FORMAT[column.unit](value)


# the widest cell each unit can need: how much room a column not computed yet would take
_WIDEST = {Unit.NS: 10, Unit.COUNT: 7, Unit.BYTES: 10, Unit.FLOPS: 8, Unit.RATE: 8, Unit.PERCENT: 7}


def extras_that_fit(summary: SummaryOut, width: int) -> set[str]:
    """Of the extra figures the trace has but ``summary`` lacks, those whose columns
    the text table would show at ``width``: only these are worth computing."""
    candidates = set(_not_computed(summary))
    if not candidates:
        return set()
    numbers = [NumberColumn(c.header(summary.device_label), c.priority, ["0"]) for c in table_columns(summary)]
    planned = {}
    for column in OP_COLUMNS:
        if column.extra in candidates and column.needs is not Needs.DEVICE_MEMORY:
            header = column.header(summary.device_label)
            planned[header] = column.extra
            numbers.append(NumberColumn(header, column.priority, ["0" * _WIDEST[column.unit]]))
    _texts, kept, _gone = layout(width, _op_text_columns(summary), numbers)
    return {planned[c.header] for c in kept if c.header in planned}


def _has_device_events(summary: SummaryOut) -> bool:
    """Whether the trace has a device table to speak of (a CPU trace has none)."""
    return bool(summary.link is not None and summary.link.device_events) or summary.totals.self_device_us > 0


def _rows_note(shown: int, total: int, match: str, what: str) -> str:
    """What a cut or filtered table left out: "30 of 115 ops (--limit 0 prints all)",
    "4 of 4 ops matching 'addmm'" (nothing where the table is whole)."""
    if total < 0 or (shown >= total and not match):
        return ""
    if total == 0:
        return f"no {what[:-1] if what.endswith('s') else what} matches {safe_text(repr(match))}"
    matching = f" matching {safe_text(repr(match))}" if match else ""
    return f"{shown:,} of {total:,} {what}{matching}" + (" (--limit 0 prints all)" if shown < total else "")


def render_table(summary: SummaryOut, width: int | None = None, which: str = "both") -> str:  # noqa: C901 - one section per table of the output, each laid out for the width
    """The op table (and kernel table) as text laid out for ``width`` columns: numbers
    are never cut; when they do not fit, the least important columns are left out and
    a note says which."""
    from trnscope.cli.textout import text_console

    device = summary.device_label
    width = width or 160
    console = text_console(width)
    title = safe_text(
        f"{summary.label or summary.source}  [{summary.device_kind}{' · ' + summary.device_name if summary.device_name else ''}]"
    )
    if summary.step:
        title += safe_text(f"  {summary.step} only")
    if summary.synthetic:
        title += "  SYNTHETIC"
    has_device = summary.totals.self_device_us > 0
    hidden: list[str] = []
    if which in ("both", "ops"):
        ops = summary.ops
        total_cpu = summary.totals.self_cpu_us
        total_dev = summary.totals.self_device_us
        texts = _op_text_columns(summary)
        numbers = [
            NumberColumn(column.header(device), column.priority, [_text_cell(column, op) for op in ops])
            for column in table_columns(summary)
        ]
        kept_texts, kept, gone = layout(width, texts, numbers)
        hidden += gone + _not_computed_headers(summary)
        print_columns(console, title, kept_texts, kept, len(ops))
        console.print(f"Self CPU time total: {fmt_time_ns(total_cpu * 1000)}")
        if summary.op_tree in (op_tree.CLASSIC, op_tree.PYTHON):
            console.print(f"Self CPU: {op_tree.describe(summary.op_tree)} (--op-tree)")
        if has_device:
            console.print(f"Self {device} time total: {fmt_time_ns(total_dev * 1000)}")
        console.print(f"Wall time: {fmt_time_ns(summary.totals.wall_us * 1000)}   events: {summary.events:,}")
        if note := _rows_note(len(ops), summary.op_rows, summary.match, "ops"):
            console.print(note)
    if which in ("both", "kernels") and summary.kernels:
        console.print()
        kernels = summary.kernels
        texts = [
            ("Kernel", [k.name for k in kernels], NAME_MIN, 100),
            ("Launched by", [k.op or "—" for k in kernels], 12, 50),
        ]
        numbers = [
            NumberColumn("Calls", 90, [f"{k.calls:,}" for k in kernels]),
            NumberColumn("Total", 80, [fmt_time_ns(k.total_us * 1000) for k in kernels]),
            NumberColumn("Mean", 60, [fmt_time_ns(k.total_us * 1000 / max(k.calls, 1)) for k in kernels]),
            NumberColumn("Min", 30, [fmt_time_ns(k.min_us * 1000) for k in kernels]),
            NumberColumn("Max", 40, [fmt_time_ns(k.max_us * 1000) for k in kernels]),
        ]
        if any(k.calls > 1 and k.median_us is not None for k in kernels):  # a kernel run many times: its spread
            numbers += [
                NumberColumn(title, priority, [_spread_cell(getattr(k, field)) for k in kernels])
                for title, field, priority in (
                    ("Median", "median_us", 70),
                    ("P10", "p10_us", 25),
                    ("P90", "p90_us", 26),
                    ("Std", "std_us", 20),
                )
            ]
        kept_texts, kept, gone = layout(width, texts, numbers)
        hidden += [h for h in gone if h not in hidden]
        print_columns(console, "Device events (kernels, copies)", kept_texts, kept, len(kernels))
        if note := _rows_note(len(kernels), summary.kernel_rows, summary.match, "device events"):
            console.print(note)
    elif which in ("both", "kernels") and summary.match and summary.kernel_rows == 0 and _has_device_events(summary):
        console.print(f"\nno device event matches {safe_text(repr(summary.match))}")
    if hidden:
        console.print(
            f"(hidden at {width} columns: {', '.join(hidden)}; set COLUMNS, or --format csv"
            + (f" with --with {','.join(_not_computed(summary))}" if _not_computed(summary) else "")
            + ")"
        )
    if summary.link and summary.link.device_events:
        link = summary.link
        reasons = [
            (link.before_window, "launched before the capture window"),
            (link.unlinkable - link.before_window, "with no link in the trace"),
            (link.outside_ops, "launched by runtime calls outside any op"),
            (link.unresolved, "with links that lead nowhere"),
        ]
        rest = "; ".join(f"{count:,} {why}" for count, why in reasons if count)
        if link.by_enclosing_op:
            rest = (rest + "; " if rest else "") + (
                f"{link.by_enclosing_op:,} only to the range around a launch outside any aten op (a CUDA graph's "
                "replay, a Triton kernel called directly): not in the op table's device figures, as in key_averages()"
            )
        console.print(
            f"Linked {link.linked:,} of {link.device_events:,} device events to ops "
            f"(coverage {fmt_share(summary.link_coverage, 1.0, 2)}){'; ' + rest if rest else ''}"
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
