"""Timeline pane: lanes per host thread, runtime thread, stream / NeuronCore, drawn
from precomputed interval unions — the cost of a keypress is the visible cells, not
the events."""

from __future__ import annotations

import itertools

import numpy as np
from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.timeline import (
    Lane,
    axis,
    build_lanes,
    compact_lane_labels,
    coverage,
    extent,
    glyphs,
    label_column_width,
    lane_labels,
    python_only_threads,
    under,
)
from trnscope.core.base.intervals import Union
from trnscope.core.base.text import pad_cells, plural, safe_text
from trnscope.core.base.units import fmt_share, fmt_time_short
from trnscope.tui.keyhints import KeyHints
from trnscope.tui.panes import pane
from trnscope.tui.screen_base import ExplorerScreen
from trnscope.tui.status import fit_line, with_shorter_name
from trnscope.tui.textpanel import TextPanel

_STYLE = {
    "host": "yellow",
    "annotation": "magenta",
    "python": "white",
    "runtime": "cyan",
    "device": "green",
    "engine": "blue",
}


@pane("Timeline", order=40)
class TimelineScreen(ExplorerScreen):
    BINDINGS = [
        Binding("plus,equals_sign", "zoom(0.5)", "Zoom+", key_display="+", tooltip="zoom in around the cursor"),
        Binding("minus", "zoom(2)", "Zoom-", key_display="-", tooltip="zoom out"),
        Binding("h", "pan(-1)", "◀", show=False, tooltip="pan left a quarter window"),
        Binding("l", "pan(1)", "▶", show=False, tooltip="pan right a quarter window"),
        Binding("left", "cursor(-1)", "", show=False, tooltip="move the time cursor left"),
        Binding("right", "cursor(1)", "", show=False, tooltip="move the time cursor right"),
        Binding("j,down", "lane(1)", "", show=False, tooltip="next lane"),
        Binding("k,up", "lane(-1)", "", show=False, tooltip="previous lane"),
        Binding("0", "fit", "Fit", tooltip="the whole trace"),
        Binding(
            "left_square_bracket", "step(-1)", "Step-", key_display="[", show=False, tooltip="previous ProfilerStep"
        ),
        Binding("right_square_bracket", "step(1)", "Step+", key_display="]", show=False, tooltip="next ProfilerStep"),
        Binding("n", "nested", "Nesting", show=False, tooltip="host ops: top level only ↔ one lane per depth"),
        Binding(
            "p",
            "python_threads",
            "Python",
            show=False,
            tooltip="threads with only Python frames (waits as well as work): hidden ↔ shown",
        ),
        Binding("e", "engines", "Engines", show=False, tooltip="NeuronCore engine lanes shown ↔ hidden"),
    ]

    def __init__(
        self,
        analysis: Analysis,
        highlight: np.ndarray | None = None,
        title: str = "",
        window: tuple[int, int] | None = None,
        step: int = -1,
    ) -> None:
        """``highlight``: rows to mark across lanes (an op's chain: the op, its runtime
        calls, its device work); ``window``: the time range to open on, ``step`` the
        index (in ``analysis.steps()``) of the step it is, for ``[`` and ``]``."""
        super().__init__()
        self.analysis = analysis
        self.highlight = np.asarray(highlight if highlight is not None else [], dtype=np.int64)
        self.title_text = title
        self.lanes: list[Lane] = []  # the lanes drawn (engine lanes left out when hidden)
        self.marks: list[Union | None] = []
        self.labels: list[str] = []  # each lane's label as drawn (alike ones elided where they differ)
        self.label_width = 18  # the label column's cells at the screen's width (label_column_width)
        self.short_labels: list[str] = []  # each lane's label without what every lane repeats
        self._built: list[tuple[Lane, Union | None]] = []  # every lane with its marks
        self.show_engines = True
        self.nested = False
        self.python_threads = False
        self.hidden_python: list[str] = []  # threads with only Python frames, not drawn
        self.t0, self.t1 = window if window is not None and window[1] > window[0] else (0, 0)
        self.cursor = 0  # cell
        self.lane = 0  # selected lane
        self.top = 0  # first lane shown
        self.step = step
        self.origin = analysis.span_ns[0]  # times read from the first timed event

    def compose(self) -> ComposeResult:
        yield TextPanel(id="tl-title")
        yield TextPanel(id="tl-body")
        yield TextPanel(id="tl-info")
        yield KeyHints()

    def on_mount(self) -> None:
        self.query_one("#tl-title", Static).update(Text("timeline: building lanes…", style="dim"))
        self._build()

    def _build(self) -> None:
        self.figures(self._lanes, self._ready_from, events=len(self.analysis.trace.events), group="timeline")

    def _ready_from(self, built: tuple[list[Lane], list[Union | None], list[str]]) -> None:
        lanes, marks, self.hidden_python = built
        self._ready(lanes, marks)

    def _lanes(self) -> tuple[list[Lane], list[Union | None], list[str]]:
        lanes = build_lanes(self.analysis, nested=self.nested, python_threads=self.python_threads)
        hidden = [] if self.python_threads else python_only_threads(self.analysis, self.nested)
        if not lanes and hidden:  # nothing else to draw: them (``p`` has nothing to hide then)
            lanes = build_lanes(self.analysis, nested=self.nested, python_threads=True)
            hidden = []
        marks: list[Union | None] = []
        ev = self.analysis.trace.events
        # one flag per trace row, looked up for each lane's rows: np.isin sorted every
        # lane against the highlight instead (270 ms for an op of 351,722 instances
        # over six lanes at 2.9 M events; the lookups take a few)
        # one more entry, never set: engine lanes' rows are -1 (instructions are no
        # trace rows) and must not read the last row's flag
        highlighted = np.zeros(len(ev) + 1, dtype=bool)
        highlighted[self.highlight] = True
        for lane in lanes:
            mine = lane.rows[highlighted[lane.rows]] if self.highlight.size else lane.rows[:0]
            marks.append(Union(ev.ts[mine], ev.ts[mine] + np.maximum(ev.dur[mine], 0)) if mine.size else None)
        return lanes, marks, hidden

    def _ready(self, lanes: list[Lane], marks: list[Union | None]) -> None:
        self._built = list(zip(lanes, marks))
        self._choose_lanes()
        lanes, marks = self.lanes, self.marks
        if self.t1 <= self.t0:
            self.t0, self.t1 = extent(lanes)
            if self.highlight.size:  # open on the highlighted work, with some context
                ev = self.analysis.trace.events
                a = int(ev.ts[self.highlight].min())
                b = int((ev.ts[self.highlight] + np.maximum(ev.dur[self.highlight], 0)).max())
                pad = max((b - a) // 2, 1_000)
                self.t0, self.t1 = a - pad, b + pad
                self.lane = next((i for i, m in enumerate(marks) if m is not None), 0)
            self.cursor = self._cells() // 2
        elif self.cursor == 0:  # opened on a window (a step): the cursor mid-window
            self.cursor = self._cells() // 2
        self.refresh_view()

    def on_resize(self) -> None:
        self._fit_labels()
        self.refresh_view()

    def _fit_labels(self) -> None:
        """The label column as wide as the labels need, up to a quarter of the screen:
        the CLI's rule (``label_column_width``), again after each resize."""
        width = self.size.width or self.app.size.width
        labels = [lane.label for lane in self.lanes]
        self.label_width = label_column_width(labels, width)
        self.labels = lane_labels(labels, self.label_width)

    # -- drawing ----------------------------------------------------------------
    def _cells(self) -> int:
        return max((self.size.width or self.app.size.width) - self.label_width - 1, 8)

    def _rows_visible(self) -> int:
        return max((self.size.height or self.app.size.height) - 5, 1)

    def _time_at(self, cell: int) -> int:
        return int(self.t0 + (self.t1 - self.t0) * (cell + 0.5) / self._cells())

    def _clamp(self) -> None:
        """The window stays on the trace: a step or a highlight near an end, zooming out
        and panning never show time before the first event or after the last — the
        trace's, not only the lanes' (a step whose Python ran before any op or launch
        begins before every lane's work, and that stretch is what a finding opens on)."""
        lo, hi = extent(self.lanes)
        if hi <= lo:
            return
        first, last = self.analysis.span_ns
        lo, hi = min(lo, first), max(hi, last)
        span = self.t1 - self.t0
        if span >= hi - lo:
            self.t0, self.t1 = lo, hi
        elif self.t0 < lo:
            self.t0, self.t1 = lo, lo + span
        elif self.t1 > hi:
            self.t0, self.t1 = hi - span, hi

    def refresh_view(self) -> None:
        if self.lanes and self.t1 > self.t0:
            self._clamp()
        if not self.lanes:
            return
        cells = self._cells()
        self.cursor = max(0, min(self.cursor, cells - 1))
        visible = self._rows_visible()
        self.lane = max(0, min(self.lane, len(self.lanes) - 1))
        if self.lane < self.top:
            self.top = self.lane
        elif self.lane >= self.top + visible:
            self.top = self.lane - visible + 1
        body = Text(no_wrap=True, overflow="crop")
        body.append(" " * (self.label_width + 1) + axis(self.t0, self.t1, cells, self.origin) + "\n", style="dim")
        for index in range(self.top, min(self.top + visible, len(self.lanes))):
            lane = self.lanes[index]
            label = self.labels[index]
            body.append(pad_cells(label, self.label_width), style="bold reverse" if index == self.lane else "bold")
            body.append("│", style="dim")
            shares = coverage(lane, self.t0, self.t1, cells)
            marked = self.marks[index]
            mark = coverage(lane, self.t0, self.t1, cells, only=marked) if marked is not None else None
            self._append_cells(body, glyphs(shares), _STYLE[lane.kind], mark)
            body.append("\n")
        self.query_one("#tl-body", Static).update(body)
        self._title()
        self._info()

    def _append_cells(self, body: Text, line: str, style: str, mark: np.ndarray | None) -> None:
        """One lane's cells, as runs of one look each (the lane's colour, the highlight's,
        each under the cursor or not): a span per cell made Textual style each of ~800
        cells on every key (timeline keys at 160×48, p95: 36–48 ms then, 13–20 now)."""
        look = np.zeros(len(line), dtype=np.int8) if mark is None else (mark > 0).astype(np.int8)
        if 0 <= self.cursor < len(line):
            look[self.cursor] += 2
        bounds = [0, *(np.flatnonzero(np.diff(look)) + 1).tolist(), len(line)]
        for start, end in itertools.pairwise(bounds):
            kind = int(look[start])
            piece = line[start:end]
            run_style = "bold magenta" if kind % 2 else style
            if kind >= 2:  # the cursor's one cell
                run_style += " reverse"
                piece = piece if piece != " " else "·"
            body.append(piece, style=run_style)

    def _line_width(self, panel_id: str) -> int:
        return self.query_one(panel_id, Static).size.width or self.app.size.width - 2

    def _title(self) -> None:
        pieces: list[tuple[str, str, bool]] = []
        if self.analysis.trace.synthetic:
            pieces += [(" SYNTHETIC ", "bold reverse yellow", False), (" ", "", False)]
        pieces.append(("timeline ", "bold", False))
        if self.title_text:  # a name from the file: it loses its middle before a figure is cut
            pieces += [(safe_text(self.title_text), "bold magenta", True), (" ", "", False)]
        span = self.t1 - self.t0
        pieces.append(
            (
                f"{fmt_time_short(self.t0 - self.origin)} → {fmt_time_short(self.t1 - self.origin)} · "
                f"{fmt_time_short(span / self._cells())}/col · {plural(len(self.lanes), 'lane')}",
                "dim",
                False,
            )
        )
        width = self._line_width("#tl-title")
        if self.hidden_python:
            hidden = f" · {len(self.hidden_python):,} Python-only hidden (p)"
            if sum(cell_len(text) for text, _, _ in pieces) + cell_len(hidden) > width:
                hidden = f" · +{len(self.hidden_python):,} hidden (p)"  # the title's name keeps more than "ou…"
            pieces.append((hidden, "dim", False))
        self.query_one("#tl-title", Static).update(fit_line(pieces, width))

    def _info(self) -> None:
        lane = self.lanes[self.lane]
        t = self._time_at(self.cursor)
        pieces: list[tuple[str, str, bool]] = [(f"@{fmt_time_short(t - self.origin)}  ", "bold", False)]
        label_at = len(pieces)
        pieces.append((safe_text(lane.label), _STYLE[lane.kind], True))
        pieces.append((": ", _STYLE[lane.kind], False))
        row = under(lane, t)
        if lane.kind == "engine":
            busy_now = coverage(lane, t - 1, t + 1, 1)[0] > 0
            pieces.append(("executing an instruction" if busy_now else "idle", "bold" if busy_now else "dim", False))
        elif row < 0:
            pieces.append(("idle", "dim", False))
        else:
            ev = self.analysis.trace.events
            pieces.append((safe_text(self.analysis.trace.names[int(ev.name[row])]), "bold", True))
            pieces.append((f"  {fmt_time_short(max(int(ev.dur[row]), 0))}", "dim", False))
        cells = self._cells()
        busy = coverage(lane, self.t0, self.t1, 1)[0] if cells else 0.0
        pieces.append((f"  · lane busy {fmt_share(busy, 1.0)} of the window", "dim", False))
        width = self._line_width("#tl-info")
        # the drawn label is distinct among the lanes and short: whole, at worst
        drawn = self.labels[self.lane]
        pieces = with_shorter_name(pieces, width, label_at, [self.short_labels[self.lane], drawn])
        if pieces[label_at][0] == drawn:
            pieces[label_at] = (drawn, pieces[label_at][1], False)
        self.query_one("#tl-info", Static).update(fit_line(pieces, width))

    # -- keys -----------------------------------------------------------------------

    def action_zoom(self, factor: float) -> None:
        center = self._time_at(self.cursor)
        span = max(int((self.t1 - self.t0) * factor), 100)
        share = (self.cursor + 0.5) / self._cells()
        self.t0 = int(center - span * share)
        self.t1 = self.t0 + span
        self.refresh_view()

    def action_pan(self, direction: int) -> None:
        shift = (self.t1 - self.t0) // 4 * direction
        self.t0 += shift
        self.t1 += shift
        self.refresh_view()

    def action_cursor(self, delta: int) -> None:
        cells = self._cells()
        if 0 <= self.cursor + delta < cells:
            self.cursor += delta
        else:  # at an edge: the window follows the cursor
            self.action_pan(1 if delta > 0 else -1)
            return
        self.refresh_view()

    def action_lane(self, delta: int) -> None:
        self.lane += delta
        self.refresh_view()

    def action_fit(self) -> None:
        self.t0, self.t1 = extent(self.lanes)
        self.step = -1
        self.refresh_view()

    def action_step(self, delta: int) -> None:
        steps = self.analysis.steps()
        if not steps:
            self.notify("this trace has no ProfilerStep")
            return
        self.step = (
            max(0, min(self.step + delta, len(steps) - 1)) if self.step >= 0 else (0 if delta > 0 else len(steps) - 1)
        )
        chosen = steps[self.step]
        self.t0, self.t1 = chosen.start, max(chosen.end, chosen.start + 1)
        self.notify(chosen.name, timeout=2)
        self.refresh_view()

    def action_nested(self) -> None:
        self.nested = not self.nested
        self._build()

    def action_python_threads(self) -> None:
        if not self.python_threads and not self.hidden_python:
            if any(lane.kind == "python" for lane, _ in self._built):
                self.notify("the trace has nothing else to draw: its threads with only Python frames stay")
            else:
                self.notify("no thread has only Python frames: every thread with work is drawn")
            return
        self.python_threads = not self.python_threads
        self._build()

    def _choose_lanes(self) -> None:
        chosen = [(lane, mark) for lane, mark in self._built if self.show_engines or lane.kind != "engine"]
        self.lanes = [lane for lane, _ in chosen]
        self.marks = [mark for _, mark in chosen]
        self._fit_labels()
        self.short_labels = compact_lane_labels([safe_text(lane.label) for lane in self.lanes])

    def action_engines(self) -> None:
        if not any(lane.kind == "engine" for lane, _ in self._built):
            self.notify("no engine lanes: this trace has no Neuron device profile")
            return
        selected = self.lanes[self.lane].label if self.lanes else ""
        self.show_engines = not self.show_engines
        self._choose_lanes()
        labels = [lane.label for lane in self.lanes]
        # stay on the selected lane; an engine lane hidden: on its NeuronCore
        self.lane = (
            labels.index(selected)
            if selected in labels
            else next((i for i, label in enumerate(labels) if selected.startswith(label + " ")), 0)
        )
        self.refresh_view()
