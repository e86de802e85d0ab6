"""The status line: what is open and how trustworthy it is, in one or two lines."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.summary import analysis_warnings
from trnscope.core.base.text import safe_text
from trnscope.core.base.units import fmt_time_short


def status_text(analysis: Analysis, extra: str = "", width: int = 200) -> Text:
    trace = analysis.trace
    report = analysis.link_report
    start, end = analysis.span_ns
    label = trace.label or Path(trace.source).name
    text = Text(no_wrap=True, overflow="ellipsis")
    if trace.synthetic:
        text.append(" SYNTHETIC ", style="bold reverse yellow")
        text.append(" ")
    text.append(safe_text(label), style="bold")
    kind = safe_text(trace.device_kind) + (
        f" · {safe_text(trace.device_name)}" if trace.device_name and width >= 110 else ""
    )
    text.append(f"  {kind}", style="cyan")
    text.append(f"  {trace.event_count:,} events  {fmt_time_short(end - start)}")
    if report.device_events:
        text.append(f"  link {100 * report.coverage:.1f}%")
    warnings = len(analysis_warnings(analysis))
    if warnings:
        text.append(f"  ⚠ {warnings}", style="yellow")
    if trace.stats.truncated:
        text.append("  TRUNCATED", style="bold red")
    if extra:
        text.append(f"  {safe_text(extra)}", style="dim")
    return text
