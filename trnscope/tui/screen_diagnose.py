"""Diagnosis pane: devices busy / idle, steps host- or device-bound, and findings
ranked by the time they account for; Enter on a finding drills into the op it
points at, or for a finding of no op opens the timeline on its worst step."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.chain import op_group_of_row
from trnscope.core.analysis.contracts import DiagnoseOut
from trnscope.core.analysis.diagnose import WHOLE_TRACE, diagnose
from trnscope.core.base.text import safe_text
from trnscope.core.base.units import fit_time_short, fmt_share, fmt_time_short
from trnscope.tui.keyhints import KeyHints
from trnscope.tui.messages import ShowDrill, ShowTimeline
from trnscope.tui.panes import pane
from trnscope.tui.screen_base import ExplorerScreen
from trnscope.tui.textpanel import TextPanel
from trnscope.tui.vtable import Column, TableModel, VirtualTable

_SEVERITY = {"high": "bold red", "medium": "yellow", "low": "dim", "info": "cyan"}


_VIEWS = ("findings", "steps", "slowest steps")


@pane("Diagnosis", order=50)
class DiagnoseScreen(ExplorerScreen):
    BINDINGS = [
        Binding("s", "view", "Steps", tooltip="findings → steps in time order → slowest steps first"),
    ]

    def __init__(self, analysis: Analysis) -> None:
        super().__init__()
        self.analysis = analysis
        self.doc: DiagnoseOut | None = None
        self.view = "findings"
        self.step_order: list[int] = []  # indexes into doc.steps, as the steps table shows them

    def compose(self) -> ComposeResult:
        yield TextPanel(id="dg-summary")
        yield VirtualTable(id="findings")
        yield TextPanel(id="dg-detail", grow_only=True)
        yield KeyHints()

    def on_mount(self) -> None:
        self.query_one("#dg-summary", Static).update(Text("diagnosing…", style="dim"))
        self._run()

    def _run(self) -> None:
        # once per analysis: leaving the diagnosis for the timeline of a step and coming
        # back shows it again at once (diagnose() is 150-300 ms at 2.9 M events)
        self.figures(
            lambda: self.analysis.derived(("diagnosis", None), lambda: diagnose(self.analysis)),
            self._show,
            events=len(self.analysis.trace.events),
            group="diagnose",
        )

    def _show(self, doc: DiagnoseOut) -> None:
        self.doc = doc
        text = Text(no_wrap=True, overflow="ellipsis")
        if self.analysis.trace.synthetic:
            text.append(" SYNTHETIC ", style="bold reverse yellow")
            text.append(" ")
        text.append("diagnosis\n", style="bold")
        for d in doc.devices[:4]:
            text.append(
                f"{safe_text(d.device)}: busy {fmt_time_short(d.busy_us * 1000)} of "
                f"{fmt_time_short(d.span_us * 1000)}, idle {fmt_share(d.idle_us, d.span_us)}\n"
            )
        if not doc.devices:
            text.append("no device work (CPU only)\n", style="dim")
        bound = sum(1 for s in doc.steps if s.bound == "host")
        count = len(doc.steps)
        text.append(
            f"{count} step{'' if count == 1 else 's'}: {bound} host-bound, {count - bound} device-bound"
            if count
            else "no ProfilerStep: no per-step figures",
            style="dim",
        )
        self.query_one("#dg-summary", Static).update(text)
        self._show_table()

    def _show_table(self) -> None:
        if self.doc is None:
            return
        if self.view != "findings":
            self._show_steps(self.doc)
            return
        findings = self.doc.findings

        def cells(i: int) -> list[str | Text]:
            f = findings[i]
            return [
                Text(f.severity, style=_SEVERITY.get(f.severity, "")),
                fit_time_short(f.evidence_us * 1000, 9),
                f.kind,
                Text(f"{f.op} #{f.instance}" if f.op else "—", style="" if f.op else "dim"),
            ]

        columns = [
            Column("severity", "Severity", 8, "left"),
            Column("evidence", "Evidence", 9),
            Column("kind", "Finding", 16, "left"),
            Column("op", "Op (⏎ drills in)", 16, "left", flex=True),
        ]
        view = self.query_one("#findings", VirtualTable)
        view.set_model(TableModel(columns, len(findings), cells))
        view.focus()
        if not findings:
            self.query_one("#dg-detail", Static).update(Text("no finding above its threshold", style="dim"))
        else:  # now, in the frame that shows the table, not when its cursor message comes
            self._show_detail(view.current_index)

    def _show_steps(self, doc: DiagnoseOut) -> None:
        steps = doc.steps
        order = list(range(len(steps)))
        if self.view == "slowest steps":
            order.sort(key=lambda i: -steps[i].wall_us)
        self.step_order = order

        loading = any(s.data_loading_us > 0 for s in steps)  # the host fetching batches

        def cells(i: int) -> list[str | Text]:
            s = steps[order[i]]
            return [
                Text(safe_text(s.step)),
                fit_time_short(s.wall_us * 1000, 9),
                fit_time_short(s.host_busy_us * 1000, 9),
                *([fit_time_short(s.data_loading_us * 1000, 9)] if loading else []),
                fit_time_short(s.device_busy_us * 1000, 9) if doc.devices else "—",
                Text(s.bound, style="yellow" if s.bound == "host" else "green"),
            ]

        columns = [
            Column("step", "Step (⏎ timeline)", 16, "left", flex=True),
            Column("wall", "Wall", 9),
            Column("host", "Host busy", 9),
            *([Column("loading", "Loading", 9)] if loading else []),
            Column("device", "Dev busy", 9),
            Column("bound", "Bound", 6, "left"),
        ]
        view = self.query_one("#findings", VirtualTable)
        view.set_model(TableModel(columns, len(order), cells))
        view.focus()
        if order:  # the step under the cursor, in the frame that shows the table
            self._show_detail(view.current_index)
        else:
            self.query_one("#dg-detail", Static).update(Text("no steps in this trace", style="dim"))

    def action_view(self) -> None:
        self.view = _VIEWS[(_VIEWS.index(self.view) + 1) % len(_VIEWS)]
        self._show_table()

    def _open_worst_step(self, kind: str) -> None:
        """The timeline on the step with the most host time outside ops (an op-less
        finding's evidence lies in the steps: "this finding points at no op" was a dead
        end), or on the whole trace when it has no steps."""
        steps = self.doc.steps if self.doc is not None else []
        if not steps:
            self.post_message(ShowTimeline(self.analysis, title=kind))
            return
        worst = max(range(len(steps)), key=lambda k: (steps[k].wall_us - steps[k].host_busy_us, -k))
        name = steps[worst].step
        found = next(((p, s) for p, s in enumerate(self.analysis.steps()) if s.name == name), None)
        window, position = ((found[1].start, found[1].end), found[0]) if found else (None, -1)
        self.post_message(ShowTimeline(self.analysis, title=f"{kind}: {name}", window=window, step=position))

    def _step_window(self, index: int) -> tuple[tuple[int, int] | None, int]:
        """The time range of the step the steps table shows at ``index``, and its index
        in ``analysis.steps()`` (None, -1 for "whole trace": the timeline fits it)."""
        if self.doc is None or not 0 <= index < len(self.step_order):
            return None, -1
        name = self.doc.steps[self.step_order[index]].step
        for position, step in enumerate(self.analysis.steps()):
            if step.name == name:
                return (step.start, step.end), position
        return None, -1

    def on_virtual_table_cursor_moved(self, message: VirtualTable.CursorMoved) -> None:
        self._show_detail(message.index)

    def _show_detail(self, index: int) -> None:
        """The line under the table: the finding's message, or the step's figures."""
        if self.view != "findings" and self.doc is not None and 0 <= index < len(self.step_order):
            s = self.doc.steps[self.step_order[index]]
            wall = max(s.wall_us, 1e-9)
            self.query_one("#dg-detail", Static).update(
                Text(
                    f"{safe_text(s.step)}: wall {fmt_time_short(s.wall_us * 1000)}; host busy "
                    f"{fmt_share(s.host_busy_us, wall)}"
                    + (
                        f" (the ops of {safe_text(s.host_thread)}, the thread with the most)"
                        if s.step == WHOLE_TRACE and s.host_thread
                        else ""
                    )
                    + (
                        f" ({fmt_share(s.data_loading_us, wall)} fetching batches from the DataLoader)"
                        if s.data_loading_us > 0
                        else ""
                    )
                    + ", "
                    + (
                        f"device busy {fmt_share(s.device_busy_us, wall)} → {s.bound}-bound (device-bound "
                        "when the device is busy half the wall time or more, and no less than the host)"
                        if self.doc.devices
                        else f"no device work → {s.bound}-bound"
                    )
                )
            )
            return
        if self.doc is None or not 0 <= index < len(self.doc.findings):
            return
        finding = self.doc.findings[index]
        self.query_one("#dg-detail", Static).update(Text(safe_text(finding.message)))

    def on_virtual_table_selected(self, message: VirtualTable.Selected) -> None:
        if self.view != "findings":
            window, position = self._step_window(message.index)
            if self.doc is not None and 0 <= message.index < len(self.step_order):
                title = self.doc.steps[self.step_order[message.index]].step
                self.post_message(ShowTimeline(self.analysis, title=title, window=window, step=position))
            return
        if self.doc is None or not 0 <= message.index < len(self.doc.findings):
            return
        finding = self.doc.findings[message.index]
        if finding.row < 0 and finding.window_us:  # no op, one stretch of time: the timeline on it
            origin = self.analysis.span_ns[0]
            start, end = (origin + round(t * 1000) for t in finding.window_us)
            self.post_message(ShowTimeline(self.analysis, title=finding.kind, window=(start, end)))
            return
        if finding.row < 0:  # no op to drill into: the step that shows it most, on the timeline
            self._open_worst_step(finding.kind)
            return
        group = op_group_of_row(self.analysis, finding.row)
        if group is None:
            self.notify(f"{finding.op!r} is not in the op table")
            return
        self.post_message(ShowDrill(self.analysis, self.analysis.op_table(), group, row=finding.row))
