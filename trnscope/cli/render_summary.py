"""``trnscope summary`` output: the summary as JSON, CSV or a text table."""

from __future__ import annotations

import io
from typing import Any

import msgspec

from trnscope.cli.textout import csv_writer, text_console
from trnscope.core.analysis.contracts import SummaryOut, encode
from trnscope.core.base.text import safe_text
from trnscope.core.base.units import fit_si, fmt_bytes, fmt_percent, fmt_time_ns


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
            "flops",
            "flops_per_s",
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
                "" if op.flops is None else op.flops,
                "" if op.flops_per_s is None else op.flops_per_s,
            ]
        )
    return out.getvalue()


class _NumberColumn:
    """A right-aligned column of the text table: its header, how much it matters when
    the width runs out (lower goes first) and its cells."""

    def __init__(self, header: str, priority: int, cells: list[str]) -> None:
        self.header = header
        self.priority = priority
        self.cells = cells

    @property
    def width(self) -> int:
        return max([len(self.header), *(len(c) for c in self.cells)])


_NAME_MIN = 18  # the name column never gets narrower than this
_GAP = 2


def _layout(
    width: int, text_columns: list[tuple[str, list[str], int, int]], numbers: list[_NumberColumn]
) -> tuple[list[tuple[str, list[str], int]], list[_NumberColumn], list[str]]:
    """Columns that fit ``width``.  Numbers are never cut, so whole columns go, least
    important first (text columns after the first have a priority too); text columns
    (name, shapes, launching op) get their minimum, then what is left — the first one
    first — and lose their middle when still too narrow.  Returns the kept text columns
    with their widths, the kept number columns and the headers of the hidden ones."""
    kept_numbers = list(numbers)
    kept_texts = list(text_columns)
    hidden: list[str] = []

    def needed() -> int:
        return sum(c.width + _GAP for c in kept_numbers) + sum(t[2] + _GAP for t in kept_texts)

    while needed() > width:
        candidates: list[tuple[int, str]] = [(c.priority, c.header) for c in kept_numbers]
        candidates += [(t[3], t[0]) for t in kept_texts[1:]]
        if not candidates:
            break
        _, header = min(candidates)
        hidden.append(header)
        kept_numbers = [c for c in kept_numbers if c.header != header]
        kept_texts = [t for t in kept_texts if t[0] != header or t is kept_texts[0]]
    spare = width - needed()
    out = []
    for header, cells, min_w, _priority in kept_texts:
        longest = max([len(header), *(len(c) for c in cells)])
        extra = max(min(longest - min_w, spare), 0)
        spare -= extra
        out.append((header, cells, min_w + extra))
    kept_numbers.sort(key=lambda c: numbers.index(c))
    return out, kept_numbers, hidden


def _elide_middle(text: str, width: int) -> str:
    if len(text) <= width or width < 8:
        return text[:width]
    tail = (width - 1) // 3
    return text[: width - 1 - tail] + "…" + text[len(text) - tail :]


def _print_columns(
    console: Any, title: str, texts: list[tuple[str, list[str], int]], numbers: list[_NumberColumn], rows: int
) -> None:
    from rich.table import Table

    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None, header_style="bold")
    for header, _cells, width in texts:
        t.add_column(header, no_wrap=True, width=width, overflow="crop")
    for column in numbers:
        t.add_column(column.header, justify="right", no_wrap=True, width=column.width)
    for i in range(rows):
        t.add_row(
            *[safe_text(_elide_middle(cells[i], width)) for _h, cells, width in texts],
            *[safe_text(c.cells[i]) for c in numbers],
        )
    console.print(t)


def render_table(summary: SummaryOut, width: int | None = None, which: str = "both") -> str:
    """The op table (and kernel table) as text laid out for ``width`` columns: numbers
    are never cut; when they do not fit, the least important columns are left out and
    a note says which."""
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
        calls = [max(op.calls, 1) for op in ops]
        texts = [("Name", [op.name for op in ops], _NAME_MIN, 100)]
        if summary.group_by == "shape":
            texts.append(
                (
                    "Input Shapes",
                    [
                        ""
                        if op.input_shapes is None
                        else msgspec.json.encode(op.input_shapes).decode().replace(",", ", ")
                        for op in ops
                    ],
                    12,
                    95,  # grouped by shape: the shapes are the point
                )
            )
        if summary.group_by == "stack":
            texts.append(("Stack", [" ← ".join(op.stack or []) for op in ops], 14, 95))
        numbers = [
            _NumberColumn("Calls", 90, [f"{op.calls:,}" for op in ops]),
            _NumberColumn("Self CPU %", 40, [fmt_percent(op.self_cpu_us, total_cpu) for op in ops]),
            _NumberColumn("Self CPU", 80, [fmt_time_ns(op.self_cpu_us * 1000) for op in ops]),
            _NumberColumn("CPU total", 70, [fmt_time_ns(op.cpu_total_us * 1000) for op in ops]),
            _NumberColumn("CPU avg", 20, [fmt_time_ns(op.cpu_total_us * 1000 / c) for op, c in zip(ops, calls)]),
        ]
        if has_device:
            base = summary.totals.device_share_base_us or total_dev
            numbers += [
                _NumberColumn(f"Self {device} %", 30, [fmt_percent(op.self_device_us, base) for op in ops]),
                _NumberColumn(f"Self {device}", 85, [fmt_time_ns(op.self_device_us * 1000) for op in ops]),
                _NumberColumn(f"{device} total", 75, [fmt_time_ns(op.device_total_us * 1000) for op in ops]),
                _NumberColumn(
                    f"{device} avg", 10, [fmt_time_ns(op.device_total_us * 1000 / c) for op, c in zip(ops, calls)]
                ),
            ]
        if ops and ops[0].cpu_memory_bytes is not None:  # the trace has [memory] records
            numbers += [
                _NumberColumn("CPU Mem", 15, [fmt_bytes(op.cpu_memory_bytes or 0) for op in ops]),
                _NumberColumn("Self CPU Mem", 14, [fmt_bytes(op.self_cpu_memory_bytes or 0) for op in ops]),
            ]
            if any(op.device_memory_bytes for op in ops):
                numbers += [
                    _NumberColumn(f"{device} Mem", 13, [fmt_bytes(op.device_memory_bytes or 0) for op in ops]),
                    _NumberColumn(
                        f"Self {device} Mem", 12, [fmt_bytes(op.self_device_memory_bytes or 0) for op in ops]
                    ),
                ]
        if any(op.flops is not None for op in ops):  # the trace has shapes of ops PyTorch counts
            numbers += [
                _NumberColumn("FLOPs", 16, [fit_si(op.flops, 8) if op.flops is not None else "" for op in ops]),
                _NumberColumn(
                    "FLOP/s", 15, [fit_si(op.flops_per_s, 8) if op.flops_per_s is not None else "" for op in ops]
                ),
            ]
        kept_texts, kept, gone = _layout(width, texts, numbers)
        hidden += gone
        _print_columns(console, title, kept_texts, kept, len(ops))
        console.print(f"Self CPU time total: {fmt_time_ns(total_cpu * 1000)}")
        if has_device:
            console.print(f"Self {device} time total: {fmt_time_ns(total_dev * 1000)}")
        console.print(f"Wall time: {fmt_time_ns(summary.totals.wall_us * 1000)}   events: {summary.events:,}")
    if which in ("both", "kernels") and summary.kernels:
        console.print()
        kernels = summary.kernels
        texts = [
            ("Kernel", [k.name for k in kernels], _NAME_MIN, 100),
            ("Launched by", [k.op or "—" for k in kernels], 12, 50),
        ]
        numbers = [
            _NumberColumn("Calls", 90, [f"{k.calls:,}" for k in kernels]),
            _NumberColumn("Total", 80, [fmt_time_ns(k.total_us * 1000) for k in kernels]),
            _NumberColumn("Mean", 60, [fmt_time_ns(k.total_us * 1000 / max(k.calls, 1)) for k in kernels]),
            _NumberColumn("Min", 30, [fmt_time_ns(k.min_us * 1000) for k in kernels]),
            _NumberColumn("Max", 40, [fmt_time_ns(k.max_us * 1000) for k in kernels]),
        ]
        kept_texts, kept, gone = _layout(width, texts, numbers)
        hidden += [h for h in gone if h not in hidden]
        _print_columns(console, "Device events (kernels, copies)", kept_texts, kept, len(kernels))
    if hidden:
        console.print(f"(hidden at {width} columns: {', '.join(hidden)}; set COLUMNS or use --format csv)")
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
