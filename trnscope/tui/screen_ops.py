"""The op table screen: key_averages() as a live, sortable, filterable table."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.columns import COLUMNS_BY_KEY, sort_title
from trnscope.core.analysis.compare import compare
from trnscope.core.analysis.flops import flops_columns, flops_columns_ready
from trnscope.core.analysis.memory import memory_columns, memory_columns_ready
from trnscope.core.analysis.optable import KernelTable, OpTable
from trnscope.core.base.arrays import unique_inverse
from trnscope.core.base.text import elide_middle_text, plural, safe_text
from trnscope.core.base.units import fmt_share, fmt_time_short
from trnscope.core.formats import ProfileRef, SourceRef
from trnscope.core.model import op_tree
from trnscope.core.opening.sources import distinct_labels
from trnscope.tui.filterbox import FilterScreen
from trnscope.tui.keyhints import KeyHints
from trnscope.tui.messages import ShowCompare, ShowDiagnosis, ShowDrill, ShowTimeline, host
from trnscope.tui.models import (
    KERNEL_SORT_KEYS,
    NO_EXTRAS,
    OpExtras,
    OpViewState,
    default_sort_of,
    kernel_model,
    kernel_order,
    op_columns,
    op_model,
    op_order,
    op_sort_keys,
    shown_names,
)
from trnscope.tui.panes import pane
from trnscope.tui.safe import plain
from trnscope.tui.status import fitting_parts, status_text
from trnscope.tui.textpanel import TextPanel
from trnscope.tui.vtable import TableModel, VirtualTable, lay_out, table_width_of

GROUPS = ("op", "shape", "stack")
KERNEL_SORT_TITLES = {"total": "total", "calls": "calls", "mean": "mean", "max": "max", "min": "min", "name": "name"}


class PickScreen(ModalScreen[int | None]):
    """Pick one item of a list (variant, rank, step)."""

    BINDINGS = [Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, title: str, items: list[str], current: int = 0) -> None:
        super().__init__()
        self.title_text = title
        self.items = items
        self.current = current

    def compose(self) -> ComposeResult:
        # labels come from file and folder names: Text, never markup ("[/bold]" stays as typed)
        yield Static(plain(self.title_text), id="pick-title")
        yield OptionList(*[Option(plain(item)) for item in self.items], id="pick-list")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = max(0, min(self.current, len(self.items) - 1))
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option_index)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


@pane("Op table", order=10)
class OpsScreen(FilterScreen):
    # The footer shows the keys a first-time user needs and leaves room for q and ? at
    # 80 columns; every key is in help (?) and in the command palette.
    BINDINGS = [
        Binding("slash", "filter", "Filter", key_display="/", tooltip="filter by name (regex; esc clears)"),
        Binding("s", "sort(1)", "Sort", tooltip="sort by the next column"),
        Binding("b", "group", "Group", show=False, tooltip="group by: op → input shape → stack"),
        Binding("t", "toggle_mode", "Kernels", tooltip="switch op table ↔ kernel (device event) table"),
        Binding("c", "compare", "Compare", tooltip="compare the variants of this session"),
        Binding("v", "variant", "Variant", show=False, tooltip="pick a variant / rank"),
        Binding(
            "left_square_bracket",
            "step(-1)",
            "Step-",
            key_display="[",
            show=False,
            tooltip="previous ProfilerStep (all steps first)",
        ),
        Binding("right_square_bracket", "step(1)", "Step+", key_display="]", show=False, tooltip="next ProfilerStep"),
        Binding(
            "p",
            "toggle_python",
            "Python",
            show=False,
            tooltip="hide/show python_function rows (rows under --op-tree python: PyTorch 2.12+'s rule)",
        ),
        Binding(
            "a",
            "toggle_annotations",
            "Annot.",
            show=False,
            tooltip="hide/show annotations (record_function, ProfilerStep)",
        ),
        Binding("r", "reverse", "Reverse", show=False, tooltip="reverse the sort"),
        Binding("S", "sort(-1)", "Sort back", show=False, tooltip="sort by the previous column"),
        Binding("o", "columns", "Columns", show=False, tooltip="choose the columns shown (esc when done)"),
        Binding("T", "timeline", "Timeline", show=False, tooltip="timeline: lanes per thread, stream, NeuronCore"),
        Binding("d", "diagnose", "Diagnose", show=False, tooltip="why is it slow: idle devices, bound steps, findings"),
    ]

    def __init__(self, analysis: Analysis, ref: ProfileRef | None = None) -> None:
        super().__init__()
        self.analysis = analysis
        self.ref = ref
        self.state = OpViewState()
        self._table: Any = None
        self._shown_state: OpViewState | None = None  # the state the shown table was built for
        self._after_rebuild: list[Any] = []  # actions pressed while a rebuild was on its way
        self._viewinfo_counts: tuple[int, int] | None = None  # (rows shown, rows in all) the info line says
        self._detail_shown: tuple[Any, int] | None = None  # (table, row) whose detail a rebuild showed
        self._extras = NO_EXTRAS  # memory and FLOPs columns of the shown op table, when the trace has them
        # the device-work line of rows of one table (the last one asked about), by row
        self._device_work_lines: tuple[Any, dict[int, str]] = (None, {})
        self._device_work_lock = threading.Lock()

    def compose(self) -> ComposeResult:
        yield TextPanel(id="status")
        yield TextPanel(id="viewinfo")
        yield VirtualTable(id="table")
        yield TextPanel(id="detail", grow_only=True)
        yield Input(placeholder="filter ops by name (regex)", id="filter")
        yield KeyHints()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self._show_status()
        self.query_one(VirtualTable).focus()
        self.rebuild()

    def on_resize(self) -> None:
        # columns are chosen by width (breakpoints): lay the table out again at once; the
        # status and info lines fit their parts to the new width
        if self._table is not None:
            self.rebuild()
            self._show_status()

    def action_timeline(self) -> None:
        highlight = None
        title = ""
        table = self._table
        index = self.query_one(VirtualTable).current_index
        if isinstance(table, OpTable) and index >= 0:
            rows = table.instances(index)
            highlight = np.concatenate([rows, self.analysis.device_work(rows)])
            title = table.shown_name[index]
        self.post_message(ShowTimeline(self.analysis, highlight, title))

    def action_diagnose(self) -> None:
        self.post_message(ShowDiagnosis(self.analysis))

    def _rebuilding(self, action: Any) -> bool:
        """True (and ``action`` queued to run on the new table) while the table on screen
        is not yet the one the current state asks for: a key pressed during a rebuild
        acts on the table it was meant for, never on the one being replaced."""
        if self._shown_state is not None and self._shown_state.__dict__ == self.state.__dict__:
            return False
        self._after_rebuild.append(action)
        return True

    def action_columns(self) -> None:
        if self._rebuilding(self.action_columns):
            return
        if not isinstance(self._table, OpTable):
            self.notify("the column chooser is for the op table")
            return
        width = self.query_one(VirtualTable).size.width or self.app.size.width
        choices = op_columns(self._table, width, self._extras)
        items = [
            f"[{'x' if self.state.columns.get(key, default) else ' '}] {column.title}"
            for key, column, default in choices
        ]

        def chosen(index: int | None) -> None:
            if index is None:
                return
            key, _column, default = choices[index]
            self.state.columns[key] = not self.state.columns.get(key, default)
            self.rebuild()
            self.call_after_refresh(self.action_columns)  # stay in the chooser until esc

        self.app.push_screen(PickScreen("columns (enter toggles, esc when done)", items), chosen)

    # -- building the table off the UI thread -------------------------------------
    @work(thread=True, exclusive=True, group="table", exit_on_error=False)
    def rebuild(self, keep: str | None = None) -> None:
        state = OpViewState(**{**self.state.__dict__, "columns": dict(self.state.columns)})
        table: OpTable | KernelTable

        def show(extras: OpExtras, keep: str | None) -> None:
            # the table's model, laid out, and the landing row's detail: made here
            self.app.call_from_thread(
                self._apply,
                table,
                order,
                state,
                keep,
                extras,
                self._landing_detail(table, order, keep),
                self._model_of(table, order, state, extras),
            )

        if state.mode == "kernels":
            table = self.analysis.kernel_table(state.step)
            order = kernel_order(table, state)
            extras = NO_EXTRAS
        else:
            table = self.analysis.op_table(state.group_by, step=state.step)
            sorted_by = COLUMNS_BY_KEY.get(state.sort_key)
            if sorted_by is not None and sorted_by.extra:  # sorted by a memory / FLOPs column: those first
                extras = self._extras_of(table)
                order = op_order(table, state, extras)
            else:
                order = op_order(table, state)
                if not (memory_columns_ready(self.analysis) and flops_columns_ready(self.analysis)):
                    # the first time, these read every [memory] record and every counted
                    # op's shapes (seconds on a large trace): the table now, its extra
                    # columns when they are ready.  Later tables only sum figures per
                    # row already known: one screen update, not two
                    show(NO_EXTRAS, keep)
                    keep = None  # the cursor is placed; the second apply keeps it where the user is
                extras = self._extras_of(table)
        show(extras, keep)

    def _model_of(
        self, table: OpTable | KernelTable, order: np.ndarray, state: OpViewState, extras: OpExtras
    ) -> TableModel:
        """The table's model, its columns laid out here in the worker for the width the
        table has now (a model of other cells: a regrouping elides every name of its
        name columns, ~65 ms for a real trace's stack keys; a new filter or order keeps
        the layout the table has)."""
        view = self.query_one(VirtualTable)
        width = view.size.width or self.app.size.width
        model = (
            op_model(table, order, state, width, extras)
            if isinstance(table, OpTable)
            else kernel_model(table, order, state, width)
        )
        if model.cells_key is None or model.cells_key != view.model.cells_key:
            model.layout = lay_out(model, table_width_of(width))
        return model

    def _landing_detail(
        self, table: OpTable | KernelTable, order: np.ndarray, keep: str | None
    ) -> tuple[int, Text] | None:
        """The row the cursor will land on when ``_apply`` shows ``table`` and that row's
        detail, made here so that the table and its detail reach the screen together
        (one frame, not a second after another thread's round trip)."""
        wanted = _row_named(table, keep or self._selected_name())
        landing = (
            wanted if wanted is not None and bool((order == wanted).any()) else (int(order[0]) if len(order) else -1)
        )
        return (landing, self._detail_text(table, landing)) if landing >= 0 else None

    def _extras_of(self, table: OpTable) -> OpExtras:
        # each None when the trace lacks [memory] records / shapes of counted ops
        groups = table.row_groups(len(self.analysis.trace.events))  # made once for both
        return OpExtras(memory_columns(self.analysis, table, groups), flops_columns(self.analysis, table, groups))

    def _apply(
        self,
        table: Any,
        order: np.ndarray,
        state: OpViewState,
        keep: str | None,
        extras: OpExtras,
        detail: tuple[int, Text] | None,
        model: TableModel,
    ) -> None:
        if state.__dict__ != self.state.__dict__:
            return  # a newer request is on its way
        view = self.query_one(VirtualTable)
        previous = self._selected_name()
        self._table = table
        self._extras = extras
        view.set_model(model, _row_named(table, keep or previous))
        if detail is not None and view.current_index == detail[0]:
            self.query_one("#detail", Static).update(detail[1])
            self._detail_shown = (table, detail[0])
        self._shown_state = state
        self._show_viewinfo(len(order), len(table))
        if not len(order):  # an empty table: the detail says why instead of describing a hidden row
            self.query_one("#detail", Static).update(Text(self._why_empty(table), style="dim"))
        queued, self._after_rebuild = self._after_rebuild, []
        for action in queued:
            action()
        if extras is not NO_EXTRAS:
            self._show_status()  # what computing them found (unknown FLOPs) counts as a warning

    def _selected_name(self) -> str | None:
        if self._table is None:
            return None
        index = self.query_one(VirtualTable).current_index
        if index < 0:
            return None
        return shown_names(self._table)[index]

    def _show_status(self) -> None:
        # (the line's own width: the screen's, less its padding)
        self.query_one("#status", Static).update(status_text(self.analysis, width=self.app.size.width - 2))

    def on_virtual_table_columns_hidden(self, message: VirtualTable.ColumnsHidden) -> None:
        message.prevent_default()  # the info line says it: not the base pane's notification too
        if self._viewinfo_counts is not None:  # (the first table's info is still to come)
            self._show_viewinfo(*self._viewinfo_counts)

    def _show_viewinfo(self, shown: int, total: int) -> None:
        self._viewinfo_counts = (shown, total)
        s = self.state
        # (text, rank): on a narrow screen the parts of the highest rank go first; the
        # grouping, the columns left out and the row count always stay, never cut
        parts = [(f"{'device events' if s.mode == 'kernels' else 'ops by ' + s.group_by}", 0)]
        hidden = self.query_one(VirtualTable).hidden_columns
        if hidden:  # figures are never cut: a column that does not fit is left out, and said so
            parts.append((f"{plural(len(hidden), 'column')} left out at this width (o)", 0))
        if isinstance(self._table, OpTable):
            title = sort_title(s.sort_key or default_sort_of(self._table), self._table.device_label)
        else:
            title = KERNEL_SORT_TITLES.get(s.sort_key or "total", s.sort_key)
        parts.append((f"sort {title} {'▼' if s.descending else '▲'}", 2))
        if s.filter_text:
            parts.append((f"filter /{safe_text(s.filter_text)}/", 1))
        steps = self.analysis.steps()
        step = (
            f"step {safe_text(steps[s.step].name)}"
            if s.step >= 0
            else ((f"all {len(steps)} steps" if len(steps) > 1 else "1 step") if steps else "whole trace")
        )
        parts.append((step, 3))
        sources = self._sources()
        if len(sources) > 1:  # a folder or session of several: which one this is, and the key that picks
            at = next((i for i, src in enumerate(sources) if src.label == self.analysis.trace.label), 0)
            parts.append((f"trace {at + 1} of {len(sources)} (v picks)", 1))
        if s.hide_python:
            parts.append(("python hidden", 4))
        if s.hide_annotations:
            parts.append(("annotations hidden", 4))
        parts.append((f"{shown:,}/{total:,} rows" if shown or not s.filter_text else "no rows match (esc clears)", 0))
        info = self.query_one("#viewinfo", Static)
        width = info.size.width or self.app.size.width - 2
        info.update(Text(fitting_parts(parts, width), style="dim", no_wrap=True, overflow="ellipsis"))

    def _why_empty(self, table: OpTable | KernelTable) -> str:
        s = self.state
        if s.filter_text:
            return f"no row matches /{safe_text(s.filter_text)}/ (esc clears the filter)"
        if s.mode == "kernels" and not len(table):
            return "this trace has no device events (CPU only): t goes back to the op table"
        if s.step >= 0:
            return "nothing in this step: [ and ] move between steps"
        return "no rows: python or annotation rows are hidden (p, a)" if s.hide_python or s.hide_annotations else ""

    # -- detail line --------------------------------------------------------------
    def on_virtual_table_cursor_moved(self, message: VirtualTable.CursorMoved) -> None:
        if message.table.id != "table" or self._table is None or message.index < 0:
            return
        shown, self._detail_shown = self._detail_shown, None
        if shown is not None and shown[0] is self._table and shown[1] == message.index:
            return  # the rebuild that placed the cursor here showed this row's detail already
        self._detail(message.index)

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def _detail(self, group: int) -> None:
        table = self._table
        if table is not None:
            self.app.call_from_thread(self._show_detail, table, group, self._detail_text(table, group))

    def _show_detail(self, table: OpTable | KernelTable, group: int, text: Text) -> None:
        # (a worker's detail of a row the cursor has left since, or of a table since
        # replaced, is not shown over the detail of the row the cursor is on)
        if table is self._table and self.query_one(VirtualTable).current_index == group:
            self.query_one("#detail", Static).update(text)

    def _detail_text(self, table: OpTable | KernelTable, group: int) -> Text:  # noqa: C901 - one line per figure the detail shows, each only when the row has it
        """What the detail under the table says about row ``group`` (off the UI thread:
        the device work under a row of many instances takes a while to rank)."""
        text = Text()  # wraps: the full name, shape and stack of the row (the table may elide them)
        if isinstance(table, KernelTable):
            text.append(safe_text(table.name[group]), style="bold")
            text.append(
                f"\n{plural(int(table.calls[group]), 'call')} · total {fmt_time_short(table.total[group])} · mean {fmt_time_short(table.mean[group])}"
            )
            spread = table.spread
            if spread is not None and int(table.calls[group]) > 1:
                text.append(
                    f" · median {fmt_time_short(spread.median[group])} · p10 {fmt_time_short(spread.p10[group])}"
                    f" · p90 {fmt_time_short(spread.p90[group])} · std {fmt_time_short(spread.std[group])}"
                )
            if table.top_op[group]:
                text.append(
                    f" · launched by {safe_text(table.top_op[group])} ({fmt_share(float(table.top_op_share[group]), 1.0)} of its time)"
                )
            if table.unattributed[group]:
                text.append(f" · {fmt_time_short(table.unattributed[group])} unlinked", style="yellow")
        else:
            text.append(safe_text(table.shown_name[group]), style="bold")
            if table.shape[group]:
                text.append(f"  {safe_text(table.shape[group])}", style="dim")
            if table.stack[group]:
                text.append(f"\nstack: {safe_text(table.stack[group])}", style="dim")
            text.append(
                f"\n{plural(int(table.calls[group]), 'call')} · self CPU {fmt_time_short(table.self_cpu[group])} · CPU total {fmt_time_short(table.cpu_total[group])}"
            )
            if table.device_total[group]:
                text.append(
                    f" · self {table.device_label} {fmt_time_short(table.self_device[group])} · {table.device_label} total {fmt_time_short(table.device_total[group])}"
                )
            if table.self_cpu[group] < 0:
                text.append(
                    "\nself CPU below zero: PyTorch subtracts its children's time, and a child that outlived its "
                    "parent (async, other thread) takes more than the parent had — key_averages() shows the same",
                    style="yellow",
                )
            elif table.device_total[group] > self.analysis.wall_ns > 0:
                text.append(
                    "\ndevice total above the wall time: kernels on several streams run at once, and totals add "
                    "each kernel's time (as key_averages() does)",
                    style="dim",
                )
            kernels = self._device_work_line(table, group)
            if kernels:
                text.append("\n" + safe_text(kernels), style="green")
        return text

    def _device_work_line(self, table: OpTable, group: int) -> str:
        """``_top_device_work`` of a row, kept for the rows of the last table asked about:
        a filter keystroke, a re-sort or a cursor coming back lands on a row whose device
        work was ranked already (10 ms for a row of 351,722 instances at 2.9 M events).
        Only one table's lines are kept, so no table outlives its screen's use of it."""
        with self._device_work_lock:
            owner, lines = self._device_work_lines
            if owner is not table:
                lines = {}
                self._device_work_lines = (table, lines)
            found = lines.get(group)
        if found is None:
            found = _top_device_work(self.analysis, table.instances(group))
            with self._device_work_lock:
                if self._device_work_lines[0] is table:
                    lines[group] = found
        return found

    # -- actions ------------------------------------------------------------------
    @property
    def filter_text(self) -> str:
        return self.state.filter_text

    def set_filter(self, text: str) -> None:
        self.state.filter_text = text
        self.rebuild()

    def action_sort(self, step: int) -> None:
        if self._rebuilding(lambda: self.action_sort(step)):
            return
        keys: list[str] = list(KERNEL_SORT_KEYS)
        if isinstance(self._table, OpTable):
            keys = op_sort_keys(self._table, self._extras)  # the columns this table has, left to right
        current = self.state.sort_key or (default_sort_of(self._table) if isinstance(self._table, OpTable) else keys[0])
        index = keys.index(current) if current in keys else 0
        self.state.sort_key = keys[(index + step) % len(keys)]
        self.state.descending = self.state.sort_key != "name"
        self.rebuild()

    def action_reverse(self) -> None:
        self.state.descending = not self.state.descending
        self.rebuild()

    def action_group(self) -> None:
        if self.state.mode == "kernels":
            self.notify("group-by applies to the op table (t switches back)")
            return
        self.state.group_by = GROUPS[(GROUPS.index(self.state.group_by) + 1) % len(GROUPS)]
        self.rebuild()

    def action_toggle_mode(self) -> None:
        self.state.mode = "kernels" if self.state.mode == "ops" else "ops"
        self.state.sort_key = ""
        self.state.descending = True
        self.rebuild()

    def action_toggle_python(self) -> None:
        if self.analysis.op_tree_rule == op_tree.CLASSIC and self.state.mode == "ops":
            # classic rule with frames in the trace: they are no rows to show or hide
            self.notify(
                f"{op_tree.describe(op_tree.CLASSIC)}, so they are no rows here; "
                "trnscope open --op-tree python makes them rows, as PyTorch 2.12+ does"
            )
            return
        self.state.hide_python = not self.state.hide_python
        self.rebuild()

    def action_toggle_annotations(self) -> None:
        self.state.hide_annotations = not self.state.hide_annotations
        self.rebuild()

    def action_step(self, delta: int) -> None:
        steps = self.analysis.steps()
        if not steps:
            self.notify("this trace has no ProfilerStep ranges")
            return
        self.state.step = (self.state.step + 1 + delta) % (len(steps) + 1) - 1
        self.rebuild()

    def on_virtual_table_selected(self, message: VirtualTable.Selected) -> None:
        if message.table.id != "table" or self._table is None:
            return
        kind = "kernels" if isinstance(self._table, KernelTable) else "ops"
        self.post_message(ShowDrill(self.analysis, self._table, message.index, kind=kind))

    # -- variants and compare -----------------------------------------------------
    def _sources(self) -> list[SourceRef]:
        return list(self.ref.sources) if self.ref is not None else []

    def action_variant(self) -> None:
        sources = self._sources()
        if len(sources) < 2:
            self.notify("only one trace here")
            return
        labels = [f"{s.label}  {s.description}".strip() for s in sources]
        current = next((i for i, s in enumerate(sources) if s.label == self.analysis.trace.label), 0)

        def chosen(index: int | None) -> None:
            if index is not None and sources[index].label != self.analysis.trace.label:
                self._switch_variant(sources[index])

        self.app.push_screen(PickScreen("Variant / rank", labels, current), chosen)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _switch_variant(self, source: Any) -> None:
        self.app.call_from_thread(self.notify, f"loading {source.label}…")
        try:
            analysis = host(self.app).load_analysis(source)
        except Exception as error:  # shown to the user, the screen stays usable
            self.app.call_from_thread(self.notify, f"cannot load {source.label}: {error}", severity="error")
            return
        self.app.call_from_thread(self._use_analysis, analysis)
        analysis.finish()

    def _use_analysis(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.state.step = -1
        self._show_status()
        self.rebuild()

    def action_compare(self) -> None:
        sources = self._sources()
        if len(sources) < 2:
            self.notify("compare needs a session with variants, or open several traces")
            return
        self._load_compare(sources[:3])

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _load_compare(self, sources: list[Any]) -> None:
        self.app.call_from_thread(self.notify, "loading variants…")
        try:
            analyses = [host(self.app).load_analysis(s) for s in sources]
            comparison = compare(analyses, distinct_labels([s.label for s in sources], [s.path for s in sources]))
        except Exception as error:
            self.app.call_from_thread(self.notify, f"cannot compare: {error}", severity="error")
            return
        self.post_message(ShowCompare(comparison, analyses))
        for analysis in analyses:
            analysis.finish()


def _row_named(table: OpTable | KernelTable, name: str | None) -> int | None:
    """The row shown under ``name`` (a kind after it tells twins apart), else the first
    row of that name (a name another screen asked for)."""
    if name is None:
        return None
    shown = shown_names(table)
    matches = [i for i, n in enumerate(shown) if n == name] or [i for i, n in enumerate(table.name) if n == name]
    return matches[0] if matches else None


def _top_device_work(analysis: Analysis, rows: np.ndarray) -> str:
    """The device events an op's instances launched (themselves or their children)."""
    chosen = analysis.device_work(rows)
    if chosen.size == 0:
        return ""
    ev = analysis.trace.events
    names, inverse = unique_inverse(ev.name[chosen])
    totals = np.bincount(inverse, weights=np.maximum(ev.dur[chosen], 0).astype(np.float64))
    order = np.argsort(-totals)[:3]
    # a long kernel name loses its middle (templated names differ at both ends), not its end
    parts = [f"{elide_middle_text(analysis.trace.names[int(names[k])], 48)} {fmt_time_short(totals[k])}" for k in order]
    more = f" (+{names.size - 3} more)" if names.size > 3 else ""
    return "device: " + " · ".join(parts) + more
