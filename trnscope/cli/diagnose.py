"""``trnscope diagnose``: where the device is idle and why, as text or JSON."""

from __future__ import annotations

import argparse
import sys

from trnscope.cli.sources import open_sources
from trnscope.cli.textout import write_json
from trnscope.cli.width import output_width
from trnscope.core.analysis.contracts import DiagnoseOut
from trnscope.core.analysis.diagnose import diagnose
from trnscope.core.base.text import elide_middle_text, pad_cells, safe_text, shorten, wrap_words
from trnscope.core.base.units import fmt_time_ns
from trnscope.core.opening.sources import Mode

STEPS_SHOWN = 12  # text output: more steps than this become a summary and the slowest
NAME_LIMIT = 160  # characters of an op name in text output (JSON has it whole)
MESSAGE_LIMIT = 1200


def _step_lines(doc: DiagnoseOut, all_steps: bool, width: int) -> list[str]:
    steps = doc.steps
    lines = []
    shown = steps
    if len(steps) > STEPS_SHOWN and not all_steps:
        walls = sorted(s.wall_us for s in steps)
        host = sum(1 for s in steps if s.bound == "host")
        summary = (
            f"{len(steps):,} steps: {host:,} host-bound, {len(steps) - host:,} device-bound; wall median "
            f"{fmt_time_ns(walls[len(walls) // 2] * 1000)} (min {fmt_time_ns(walls[0] * 1000)}, "
            f"max {fmt_time_ns(walls[-1] * 1000)}); the {STEPS_SHOWN} slowest (--all-steps lists every one):"
        )
        lines += wrap_words(summary, width, "")
        shown = sorted(steps, key=lambda s: -s.wall_us)[:STEPS_SHOWN]
    lines.append(f"{'step':<20} {'wall':>12} {'host busy':>12} {'device busy':>12}  bound")
    for s in shown:
        lines.append(
            f"{pad_cells(elide_middle_text(safe_text(s.step), 20), 20)} {fmt_time_ns(s.wall_us * 1000):>12} {fmt_time_ns(s.host_busy_us * 1000):>12} "
            f"{fmt_time_ns(s.device_busy_us * 1000) if doc.devices else '—':>12}  {s.bound}"
        )
    return lines


def render_diagnosis(doc: DiagnoseOut, width: int, all_steps: bool = False) -> str:
    lines = [f"{safe_text(doc.source)}: diagnosis"]
    if doc.devices:
        lines.append("")
        lines.append(f"{'device':<20} {'span':>12} {'busy':>12} {'idle':>12} {'idle %':>7}")
        for d in doc.devices:
            lines.append(
                f"{pad_cells(elide_middle_text(safe_text(d.device), 20), 20)} {fmt_time_ns(d.span_us * 1000):>12} {fmt_time_ns(d.busy_us * 1000):>12} "
                f"{fmt_time_ns(d.idle_us * 1000):>12} {d.idle_pct:>6.1f}%"
            )
    else:
        lines.append("no device work in this trace (CPU only)")
    lines.append("")
    if doc.steps:
        lines += _step_lines(doc, all_steps, width)
    else:
        lines.append("no ProfilerStep in this trace: no per-step figures")
    lines.append("")
    if not doc.findings:
        lines.append("findings: none above their thresholds")
    for i, f in enumerate(doc.findings, 1):
        where = f"  [{safe_text(shorten(f.op, NAME_LIMIT))} #{f.instance}]" if f.op else ""
        head = f"{i}. {f.severity.upper():<6} {f.kind}: {fmt_time_ns(f.evidence_us * 1000)}{where}"
        lines.append(head)
        lines += wrap_words(safe_text(shorten(f.message, MESSAGE_LIMIT)), width - 3, "   ")
    return "\n".join(lines) + "\n"


def cmd_diagnose(args: argparse.Namespace) -> int:
    opened = open_sources(args, [args.path], Mode.ONE)
    doc = diagnose(opened.analyses[0])
    if args.format == "json":
        write_json(doc)
    else:
        sys.stdout.write(render_diagnosis(doc, output_width(), all_steps=bool(getattr(args, "all_steps", False))))
    sys.stdout.flush()
    opened.finish()
    return 0
