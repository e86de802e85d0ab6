"""``trnscope diagnose``: where the device is idle and why, as text or JSON."""

from __future__ import annotations

import argparse
import sys

from trnscope.cli.sources import open_sources
from trnscope.cli.text_table import NumberColumn, plain_table
from trnscope.cli.textout import write_json
from trnscope.cli.width import output_width
from trnscope.core.analysis.contracts import DiagnoseOut
from trnscope.core.analysis.diagnose import WHOLE_TRACE, diagnose
from trnscope.core.base.text import (
    cell_width,
    elide_middle_text,
    safe_text,
    shorten,
    wrap_words,
)
from trnscope.core.base.units import fmt_share, fmt_time_ns
from trnscope.core.opening.sources import Mode

STEPS_SHOWN = 12  # text output: more steps than this become a summary and the slowest
NAME_LIMIT = 160  # characters of an op name in text output (JSON has it whole)
NAME_WIDTH = 20  # cells of a device's or a step's name, when the terminal has room
NAME_MIN = 12  # … and on a narrow one, before a figure's column is left out
OP_MIN = 16  # cells of a finding's op beside its heading, or it goes on a line of its own
MESSAGE_LIMIT = 1200


def _step_lines(doc: DiagnoseOut, all_steps: bool, width: int, hidden: list[str]) -> list[str]:
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
    t = fmt_time_ns
    figures = [
        NumberColumn("wall", 90, [t(s.wall_us * 1000) for s in shown]),
        NumberColumn("host busy", 80, [t(s.host_busy_us * 1000) for s in shown]),
        NumberColumn("device busy", 85, [t(s.device_busy_us * 1000) if doc.devices else "—" for s in shown]),
        NumberColumn("bound", 95, [s.bound for s in shown]),
    ]
    if any(s.data_loading_us > 0 for s in shown):  # the host fetching batches: part of its busy time
        figures.insert(2, NumberColumn("loading", 75, [t(s.data_loading_us * 1000) for s in shown]))
    lines += plain_table(width, ("step", [s.step for s in shown], NAME_MIN, NAME_WIDTH), figures, hidden)
    whole = next((s for s in steps if s.step == WHOLE_TRACE and s.host_thread), None)
    if whole is not None:  # no ProfilerStep: which thread "host busy" is, said
        note = (
            f"(no ProfilerStep: host busy counts the ops of {safe_text(whole.host_thread)}, the thread with the most)"
        )
        lines += wrap_words(note, width, "")
    return lines


def render_diagnosis(doc: DiagnoseOut, width: int, all_steps: bool = False) -> str:
    lines = [elide_middle_text(f"{safe_text(doc.source)}: diagnosis", width)]
    hidden: list[str] = []
    if doc.devices:
        lines.append("")
        t = fmt_time_ns
        figures = [
            NumberColumn("span", 70, [t(d.span_us * 1000) for d in doc.devices]),
            NumberColumn("busy", 80, [t(d.busy_us * 1000) for d in doc.devices]),
            NumberColumn("idle", 85, [t(d.idle_us * 1000) for d in doc.devices]),
            NumberColumn("idle %", 90, [fmt_share(d.idle_us, d.span_us, 1) for d in doc.devices]),
        ]
        lines += plain_table(width, ("device", [d.device for d in doc.devices], NAME_MIN, NAME_WIDTH), figures, hidden)
    else:
        lines.append("no device work in this trace (CPU only)")
    lines.append("")
    if doc.steps:
        lines += _step_lines(doc, all_steps, width, hidden)
    else:
        lines.append("no ProfilerStep in this trace: no per-step figures")
    if hidden:
        lines += wrap_words(
            f"(hidden at {width} columns: {', '.join(hidden)}; set COLUMNS, or --format json)", width, ""
        )
    lines.append("")
    if not doc.findings:
        lines.append("findings: none above their thresholds")
    for i, f in enumerate(doc.findings, 1):
        head = f"{i}. {f.severity.upper():<6} {f.kind}: {fmt_time_ns(f.evidence_us * 1000)}"
        if f.op:
            # the op gives up its middle to keep the line within the terminal; on one too
            # narrow for a useful part of it, it goes to the next line
            instance = f" #{f.instance}]"
            room = width - cell_width(head) - 3 - len(instance)
            if room < min(len(f.op), OP_MIN):
                lines.append(head)
                head, room = " ", width - 4 - len(instance)
            # a name too long to read says how long it was ("…(2,000,000 characters)…")
            name = safe_text(shorten(f.op, min(room, NAME_LIMIT) if len(f.op) > NAME_LIMIT else NAME_LIMIT))
            head += f"  [{elide_middle_text(name, room)}{instance}"
        lines.append(head)
        lines += wrap_words(safe_text(shorten(f.message, MESSAGE_LIMIT)), width - 3, "   ", cut_long_words=True)
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
