"""Split compare view: two or three variants side by side, with deltas."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Static

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.compare import CompareRow, Comparison
from trnscope.core.base.text import safe_text
from trnscope.core.base.units import fmt_time_short
from trnscope.tui.messages import ShowOps
from trnscope.tui.models import VARIANT_LETTERS, compare_model
from trnscope.tui.screen_base import ExplorerScreen
from trnscope.tui.vtable import VirtualTable

VIEWS = ("regions", "ops", "kernels")
VIEW_TITLES = {
    "regions": "regions (record_function ranges; device work charged to the region that launched it)",
    "ops": "ops, by largest change",
    "kernels": "device work per region (kernels aligned through what launched them)",
}


class CompareScreen(ExplorerScreen):
    BINDINGS = [
        Binding("escape", "back", "Back", tooltip="back"),
        Binding("v", "view", "View", tooltip="regions → ops → device work per region"),
        Binding("1", "side(0)", "A", tooltip="enter drills into variant A"),
        Binding("2", "side(1)", "B", tooltip="enter drills into variant B"),
        Binding("3", "side(2)", "C", tooltip="enter drills into variant C"),
        Binding("o", "open_ops", "Op table", tooltip="the op table of the chosen variant"),
    ]

    def __init__(self, comparison: Comparison, analyses: list[Analysis], root: bool = False) -> None:
        """``comparison`` is computed by the worker that loaded the variants, never on
        the UI thread."""
        super().__init__()
        self.analyses = analyses
        self.labels = comparison.labels
        self.root = root
        self.comparison = comparison
        self.view = "regions" if self.comparison.regions else "ops"
        self.side = 0

    def compose(self) -> ComposeResult:
        yield Static(id="compare-title")
        yield Static(id="compare-info")
        yield VirtualTable(id="compare")
        yield Static(id="compare-detail")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._show()
        self.query_one(VirtualTable).focus()

    def _rows(self) -> list[CompareRow]:
        return {"regions": self.comparison.regions, "ops": self.comparison.rows, "kernels": self.comparison.kernels}[
            self.view
        ]

    def _show(self) -> None:
        title = Text(no_wrap=True, overflow="ellipsis")
        for i, (label, analysis) in enumerate(zip(self.labels, self.analyses)):
            if i:
                title.append("  vs  ", style="dim")
            style = "bold reverse" if i == self.side else "bold"
            title.append(f"{VARIANT_LETTERS[i]}:{safe_text(label)}", style=style)
            if analysis.trace.synthetic:
                title.append(" SYNTHETIC", style="yellow")
        metric = "device total" if self.comparison.primary == "device_total_ns" else "CPU total"
        title.append(f"   {metric}, Δ vs A", style="dim")
        self.query_one("#compare-title", Static).update(title)
        self.query_one("#compare-info", Static).update(
            Text(
                f"{self.view}: {VIEW_TITLES[self.view]} · v switches · enter drills into {VARIANT_LETTERS[self.side]}",
                style="dim",
                no_wrap=True,
                overflow="ellipsis",
            )
        )
        view = self.query_one(VirtualTable)
        view.set_model(compare_model(self.comparison, self._rows(), view.size.width or self.app.size.width))

    def on_virtual_table_cursor_moved(self, message: VirtualTable.CursorMoved) -> None:
        rows = self._rows()
        if 0 <= message.index < len(rows):
            row = rows[message.index]
            lines = [Text(safe_text(row.key), style="bold", no_wrap=True, overflow="ellipsis")]
            for label, value, detail in zip(self.labels, row.values, row.detail or [""] * len(self.labels)):
                line = Text(no_wrap=True, overflow="ellipsis")
                line.append(f"{safe_text(label)}: ", style="bold")
                if value is None:
                    line.append("absent", style="dim")
                else:
                    line.append(
                        f"{value.calls:,} calls · CPU {fmt_time_short(value.cpu_total_ns)} · device {fmt_time_short(value.device_total_ns)}"
                    )
                if detail:
                    line.append(f" · {safe_text(detail)}", style="green")
                lines.append(line)
            joined = Text("\n").join(lines)
            joined.no_wrap, joined.overflow = True, "ellipsis"
            self.query_one("#compare-detail", Static).update(joined)

    def on_virtual_table_selected(self, message: VirtualTable.Selected) -> None:
        rows = self._rows()
        if not 0 <= message.index < len(rows):
            return
        row = rows[message.index]
        side = (
            self.side
            if row.values[self.side] is not None
            else next((i for i, v in enumerate(row.values) if v is not None), -1)
        )
        if side < 0:
            return
        analysis = self.analyses[side]
        table = analysis.op_table()
        if self.view == "kernels" or row.kind == "region":
            matches = [g for g in range(len(table)) if table.name[g] == row.key and not table.is_device[g]]
        else:
            matches = [g for g in range(len(table)) if table.name[g] == row.key and table.kind(g) == row.kind]
        if not matches:
            self.notify(f"{row.key!r} has no instances in {self.labels[side]}")
            return
        from trnscope.tui.screen_drill import DrillScreen

        self.app.push_screen(DrillScreen(analysis, table, matches[0]))

    def action_view(self) -> None:
        self.view = VIEWS[(VIEWS.index(self.view) + 1) % len(VIEWS)]
        self._show()

    def action_side(self, side: int) -> None:
        if side < len(self.analyses):
            self.side = side
            self._show()

    def action_open_ops(self) -> None:
        self.post_message(ShowOps(self.analyses[self.side]))

    def action_back(self) -> None:
        if self.root:
            self.app.exit()
        else:
            self.app.pop_screen()
