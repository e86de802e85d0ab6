"""Split compare view: two or three variants side by side, with deltas."""

from __future__ import annotations

import numpy as np
from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Static

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.compare import METRICS, CompareRow, Comparison, key_matches, with_metric
from trnscope.core.analysis.compare_model import diagnosis_rows
from trnscope.core.analysis.distribution import sparkline
from trnscope.core.base.text import safe_text
from trnscope.core.base.units import fmt_time_short
from trnscope.tui.filterbox import FilterScreen
from trnscope.tui.keyhints import KeyHints
from trnscope.tui.messages import ShowDrill, ShowOps
from trnscope.tui.models import VARIANT_LETTERS, compare_model, compare_row_names, kernel_runs_model
from trnscope.tui.panes import pane
from trnscope.tui.status import fit_line
from trnscope.tui.textpanel import TextPanel
from trnscope.tui.vtable import Column, TableModel, VirtualTable, lay_out, left_out_titles, table_width_of

VIEWS = ("regions", "ops", "kernels", "diagnosis")
KERNEL_RUNS = "kernel runs"
# what each view shows, after its name on the info line ("regions: record_function …")
VIEW_TITLES = {
    KERNEL_RUNS: "each kernel's executions per variant, median ÷ A with a 95% bootstrap interval",
    "diagnosis": "which variant is best and why (trnscope diagnose per variant)",
    "regions": "record_function ranges, device work charged to the region that launched it",
    "ops": "by largest change",
    "kernels": "device work per region (kernels aligned through what launched them)",
}


@pane("Compare", order=30)
class CompareScreen(FilterScreen):
    BINDINGS = [
        Binding(
            "v",
            "view",
            "View",
            tooltip="(kernel runs →) regions → ops → device work per region → diagnosis: those with rows",
        ),
        Binding("1", "side(0)", "A", tooltip="enter drills into variant A"),
        Binding("2", "side(1)", "B", tooltip="enter drills into variant B"),
        Binding("3", "side(2)", "C", tooltip="enter drills into variant C"),
        Binding("o", "open_ops", "Op table", tooltip="the op table of the chosen variant"),
        Binding(
            "slash", "filter", "Filter", key_display="/", show=False, tooltip="filter rows by name (regex; esc clears)"
        ),
        Binding(
            "m",
            "metric",
            "Metric",
            show=False,
            tooltip="compare by: device total → self CPU → CPU total → calls → dispatch",
        ),
        Binding("p", "toggle_python", "Python", show=False, tooltip="hide/show python_function rows"),
    ]

    def __init__(self, comparison: Comparison, analyses: list[Analysis], root: bool = False) -> None:
        """``comparison`` is computed by the worker that loaded the variants, never on
        the UI thread."""
        super().__init__()
        self.analyses = analyses
        self.labels = comparison.labels
        self.root = root
        self.comparison = comparison
        # a view that can hold no row is left out of v's cycle (kernels of CPU-only
        # variants, regions of a trace without record_function ranges): a dead end
        # that only said "no rows in this view"; the ops view is always there
        present = {
            KERNEL_RUNS: bool(comparison.kernel_runs),
            "regions": bool(comparison.regions),
            "ops": True,
            "kernels": bool(comparison.kernels),
            "diagnosis": bool(comparison.diagnosis),
        }
        self.views = tuple(view for view in (KERNEL_RUNS, *VIEWS) if present[view])
        self.view = self.views[0]
        self.kernel_rows: list[tuple[int, int]] = []
        self.side = 0
        self._filter = ""
        self._shown_view = ""  # the view whose rows the table shows (its cursor's row is kept)
        self.show_python = False  # Python frames crowd the op view; p shows them
        # device and dispatch figures only where some variant ran device work: on CPU
        # traces every row read "device 0.0us · dispatch 0.0us"
        self.device_figures = any(
            value is not None and (value.device_total_ns or value.dispatch_ns)
            for row in (*comparison.rows, *comparison.regions)
            for value in row.values
        )
        self.shown_rows: list[CompareRow] = []
        self._info = ""  # the view's part of the line over the table
        self._row_names: list[str] = []  # per shown row: its name, with its kind where another row shares it

    def compose(self) -> ComposeResult:
        yield TextPanel(id="compare-title")
        yield TextPanel(id="compare-info")
        yield VirtualTable(id="compare")
        yield TextPanel(id="compare-detail")
        yield Input(placeholder="filter rows by name (regex)", id="filter")
        yield KeyHints()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self._show()
        self.query_one(VirtualTable).focus()

    def on_resize(self) -> None:
        if self.is_mounted:
            self.call_after_refresh(self._show)

    def pane_notes(self) -> list[str]:
        return list(self.comparison.notes)

    def _rows(self) -> list[CompareRow]:
        return self.shown_rows

    def _select_rows(self) -> list[CompareRow]:
        if self.view in ("diagnosis", KERNEL_RUNS):
            return []
        rows = {"regions": self.comparison.regions, "ops": self.comparison.rows, "kernels": self.comparison.kernels}[
            self.view
        ]
        if not self.show_python:
            rows = [r for r in rows if r.kind != "python"]
        return key_matches(rows, self.filter_text)

    def _show(self) -> None:
        title = Text()  # wraps: three variants' labels and the metric at 80 columns
        for i, (label, analysis) in enumerate(zip(self.labels, self.analyses)):
            if i:
                title.append("  vs  ", style="dim")
            style = "bold reverse" if i == self.side else "bold"
            title.append(f"{VARIANT_LETTERS[i]}:{safe_text(label)}", style=style)
            if analysis.trace.synthetic:
                title.append(" SYNTHETIC", style="yellow")
        metric = METRICS[self.comparison.primary]
        title.append(f"   {metric}, Δ vs A", style="dim")
        self.query_one("#compare-title", Static).update(title)
        here = self._cursor_key()
        self._shown_view = self.view
        self.shown_rows = self._select_rows()
        self._row_names = compare_row_names(self.shown_rows)
        info = f"{self.view}: {VIEW_TITLES[self.view]}"
        if self.filter_text:
            info = f"filter /{safe_text(self.filter_text)}/ · " + info
        if not self.shown_rows and self.view not in ("diagnosis", KERNEL_RUNS):
            info = ("no rows match (esc clears) · " if self.filter_text else "no rows in this view · ") + info
        self._info = info
        view = self.query_one(VirtualTable)
        detail = self.query_one("#compare-detail", Static)
        if self.view == KERNEL_RUNS:
            model, self.kernel_rows = kernel_runs_model(self.comparison)
            self._set_model(model)
            self._kernel_detail(0)
            return
        if self.view == "diagnosis":
            self._set_model(self._diagnosis_model())
            detail.update(
                Text("per variant: trnscope diagnose's figures (d on a variant's op table shows all)", style="dim")
            )
            return
        if not self.shown_rows:  # nothing shown: the detail describes nothing either
            detail.update(
                Text(
                    "the table is empty: "
                    + ("no row matches the filter" if self.filter_text else "this view has no rows"),
                    style="dim",
                )
            )
        # the row under the cursor stays under it when the same view is shown again (a
        # resize, another metric, variant or filter), by its key: it went back to the top
        keep = next((i for i, row in enumerate(self.shown_rows) if (self.view, row.key) == here), None)
        model = compare_model(self.comparison, self.shown_rows, view.size.width or self.app.size.width, self._row_names)
        self._set_model(model, keep)
        if self.shown_rows:  # the cursor row's figures with the table, in its frame (not on its cursor message)
            self._row_detail(view.current_index)

    def _set_model(self, model: TableModel, keep: int | None = None) -> None:
        """The table shows ``model``, laid out here so that the line over it names the
        columns left out in the same frame (not in a second one, on the table's message)."""
        view = self.query_one(VirtualTable)
        model.layout = lay_out(model, table_width_of(view.size.width or self.app.size.width))
        self._show_info(left_out_titles(model.columns, model.layout))
        view.set_model(model, keep)

    def _show_info(self, hidden: list[str] | None = None) -> None:
        """The line over the table: the view, its keys, the notes, and the columns the
        table's width left out (``hidden``; figures are never cut: a column goes whole,
        and says so)."""
        notes = len(self.comparison.notes)
        said = f" · w: {notes} note{'s' if notes > 1 else ''}" if notes else ""
        if hidden is None:
            hidden = self.query_one(VirtualTable).hidden_columns
        left_out = f" · {', '.join(safe_text(title) for title in hidden)} left out at this width" if hidden else ""
        self.query_one("#compare-info", Static).update(
            Text(
                f"{self._info}{left_out} · v view · m metric · enter drills into {VARIANT_LETTERS[self.side]}{said}",
                style="dim",
            )
        )

    def on_virtual_table_columns_hidden(self, message: VirtualTable.ColumnsHidden) -> None:
        message.prevent_default()  # the info line says it: not the base pane's notification too
        if self.is_mounted:
            self._show_info()

    def _cursor_key(self) -> tuple[str, str] | None:
        """(view, key) of the row under the cursor, when the table shows a view's rows."""
        index = self.query_one(VirtualTable).current_index
        if self._shown_view in ("", KERNEL_RUNS, "diagnosis") or not 0 <= index < len(self.shown_rows):
            return None
        return self._shown_view, self.shown_rows[index].key

    def _diagnosis_model(self) -> TableModel:
        d = self.comparison.diagnosis
        rows = diagnosis_rows(d, fmt_time_short, wide=False)
        # each column as wide as its widest cell ("×0.044 [0.018–1.02]" is 19): a figure
        # is never cut (the table leaves out a column that does not fit, and says so).
        # The labels take the width left over: given to the last variant's column, it
        # set that column's figures far apart from the others', and a flex column is
        # elided in its middle where the table is narrow — a figure cut
        widths = [max([cell_len(values[i]) for _, values in rows] + [1]) for i in range(len(d))]
        columns = [Column("what", "", max(cell_len(name) for name, _ in rows), "left", flex=True)] + [
            Column(f"v{i}", VARIANT_LETTERS[i], widths[i], "right") for i in range(len(d))
        ]

        def cells(i: int) -> list[str | Text]:
            return [rows[i][0], *rows[i][1]]

        return TableModel(columns, len(rows) if d else 0, cells)

    def _kernel_detail(self, index: int) -> None:
        detail = self.query_one("#compare-detail", Static)
        if not 0 <= index < len(self.kernel_rows):
            detail.update(Text("no kernel executions", style="dim"))
            return
        k, v = self.kernel_rows[index]
        row = self.comparison.kernel_runs[k]
        runs = row.runs[v]
        assert runs is not None
        width = max(20, (self.size.width or 80) - 24)
        picture, lo, hi = sparkline(np.array(runs.durations), width)
        line_width = self._detail_width()
        # one line each, so that all four fit the panel: the kernel's name gives up its
        # middle, the figures are whole
        text = fit_line(
            [
                (f"{VARIANT_LETTERS[v]} ", "bold", False),
                (safe_text(runs.name), "bold", True),
                (f" · {runs.calls:,} executions · {row.aligned_how}", "", False),
            ],
            line_width,
        )
        text.append(
            f"\nmean {fmt_time_short(runs.mean_ns)} · std {fmt_time_short(runs.std_ns)}"
            f" · min {fmt_time_short(runs.min_ns)} · max {fmt_time_short(runs.max_ns)}\n"
        )
        text.append(f"{fmt_time_short(lo):>9} ", style="dim")
        text.append(picture, style="cyan")
        text.append(f" {fmt_time_short(hi)}", style="dim")
        interval = row.median_ratio[v] if v < len(row.median_ratio) else None
        if interval is not None and interval.ratio == interval.ratio:
            verdict = interval.verdict
            text.append(
                f"\nmedian ÷ A ×{interval.ratio:.3f}, 95% bootstrap interval {interval.low:.3f}–{interval.high:.3f}: "
                f"{verdict}"
            )
        detail.update(text)

    def _detail_width(self) -> int:
        return self.query_one("#compare-detail", Static).size.width or self.app.size.width - 2

    def on_virtual_table_cursor_moved(self, message: VirtualTable.CursorMoved) -> None:
        if self.view == KERNEL_RUNS:
            self._kernel_detail(message.index)
            return
        self._row_detail(message.index)

    def _row_detail(self, index: int) -> None:
        """The line under the table: the row's figures, one line per variant."""
        rows = self._rows()
        if 0 <= index < len(rows):
            row = rows[index]
            width = self._detail_width()
            # one line per variant, so that every variant's figures fit the panel: the
            # names (the variant's, its top kernel's) give up their middle
            # the row's name as the table tells it from its twins ("X (device annotation)")
            lines = [fit_line([(safe_text(self._row_names[index]), "bold", True)], width)]
            details = row.detail or [""] * len(self.labels)
            variants: list[list[tuple[str, str, bool]]] = []
            for letter, label, value, detail in zip(VARIANT_LETTERS, self.labels, row.values, details):
                # the letter first: elided labels of two variants may read alike
                pieces = [(f"{letter} ", "bold", False), (safe_text(label), "bold", True), (": ", "bold", False)]
                if value is None:
                    pieces.append(("absent", "dim", False))
                else:
                    # device work (the kernels view, a kernel's row): no CPU time or dispatch of its own
                    if self.view == "kernels" or row.kind == "kernel":
                        figures = f"{value.calls:,} launches · device {fmt_time_short(value.device_total_ns)}"
                    else:
                        figures = f"{value.calls:,} calls · CPU {fmt_time_short(value.cpu_total_ns)}"
                        if self.device_figures:
                            figures += (
                                f" · device {fmt_time_short(value.device_total_ns)}"
                                f" · dispatch {fmt_time_short(value.dispatch_ns)}"
                            )
                    pieces.append((figures, "", False))
                if detail:
                    pieces += [(" · ", "green", False), (safe_text(detail), "green", True)]
                variants.append(pieces)
            if any(sum(cell_len(text) for text, _, _ in pieces) > width for pieces in variants):
                # the title line names the variants: elided labels ("hta_d…00" for both
                # HTA diff traces) would only take cells from the figures' detail
                variants = [[(f"{pieces[0][0].strip()}: ", "bold", False), *pieces[3:]] for pieces in variants]
            lines += [fit_line(pieces, width) for pieces in variants]
            joined = Text("\n").join(lines)
            joined.no_wrap, joined.overflow = True, "ellipsis"
            self.query_one("#compare-detail", Static).update(joined)

    def on_virtual_table_selected(self, message: VirtualTable.Selected) -> None:
        if self.view == KERNEL_RUNS:
            if 0 <= message.index < len(self.kernel_rows):
                k, v = self.kernel_rows[message.index]
                runs = self.comparison.kernel_runs[k].runs[v]
                analysis = self.analyses[v]
                table = analysis.op_table()
                groups = [g for g in range(len(table)) if runs is not None and table.name[g] == runs.name]
                if groups:
                    self.notify(f"variant {VARIANT_LETTERS[v]}: {self.labels[v]}", timeout=3)
                    self.post_message(ShowDrill(analysis, table, groups[0]))
            return
        if self.view == "diagnosis":
            self.notify("d on a variant's op table shows its whole diagnosis")
            return
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
        self.notify(f"variant {VARIANT_LETTERS[side]}: {self.labels[side]}", timeout=3)
        self.post_message(ShowDrill(analysis, table, matches[0]))

    def action_metric(self) -> None:
        keys = list(METRICS)
        following = keys[(keys.index(self.comparison.primary) + 1) % len(keys)]
        self.comparison = with_metric(self.comparison, following)
        self._show()

    def action_toggle_python(self) -> None:
        self.show_python = not self.show_python
        self._show()

    @property
    def filter_text(self) -> str:
        return self._filter

    def set_filter(self, text: str) -> None:
        self._filter = text
        self._show()

    def action_view(self) -> None:
        self.view = self.views[(self.views.index(self.view) + 1) % len(self.views)]
        self._show()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # 3/C only in a three-way compare
        if action == "side" and parameters and isinstance(parameters[0], int) and parameters[0] >= len(self.labels):
            return False
        return super().check_action(action, parameters)

    def action_side(self, side: int) -> None:
        if side < len(self.analyses):
            self.side = side
            self._show()

    def action_open_ops(self) -> None:
        self.post_message(ShowOps(self.analyses[self.side]))

    def analyses_shown(self) -> list[Analysis]:
        return self.analyses
