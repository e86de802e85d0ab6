"""Drill-down: the instances of one op, and for one instance its whole chain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.widgets import Static

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.chain import (
    chain_for_row,
    chain_is_quick,
    op_group_of_row,
    read_hop_args,
)
from trnscope.core.analysis.chain_model import Chain, context_summary, visible_hops
from trnscope.core.analysis.chain_text import render_chain_text
from trnscope.core.analysis.timeline import compact_lane_labels
from trnscope.core.base.cachedir import writable_dir
from trnscope.core.base.text import safe_text
from trnscope.core.base.units import fmt_time_short
from trnscope.tui.keyhints import KeyHints
from trnscope.tui.messages import ShowDrill, ShowTimeline
from trnscope.tui.models import (
    chain_model,
    instance_order,
    instances_model,
    shown_names,
    time_ranks,
)
from trnscope.tui.panes import pane
from trnscope.tui.screen_base import ExplorerScreen
from trnscope.tui.status import fit_line, with_shorter_name
from trnscope.tui.textpanel import TextPanel
from trnscope.tui.vtable import VirtualTable

# the hop's args shown under its figures, at most (a 2021 trace's call stack runs to
# thousands of characters), and the lines the hop's panel has (app.tcss: #hop-detail's
# max-height less its border; four lines on a short screen)
_DETAIL_CHARS = 600
_DETAIL_LINES = 6
_DETAIL_LINES_SHORT = 4  # under 32 rows: the chain above keeps the op, its runtime calls and device work
_COPY_NOTICE_HOPS = 2_000  # a copy of more hops says it has begun (it reads every hop's args)


@pane("Drill-down", order=20)
class DrillScreen(ExplorerScreen):
    BINDINGS = [
        Binding("n", "instance(1)", "Next", tooltip="next instance"),
        Binding("p", "instance(-1)", "Prev", tooltip="previous instance"),
        Binding("s", "sort_instances", "Sort", tooltip="sort instances by time / duration"),
        Binding("c", "copy", "Copy", tooltip="copy the chain as text (OSC 52; also saved to a file)"),
        Binding("tab", "app.focus_next", "Pane", tooltip="next pane"),
        Binding(
            "e", "toggle_context", "Context", tooltip="show or hide the op's parents and Python frames", show=False
        ),
        Binding("T", "timeline", "Timeline", show=False, tooltip="this instance's chain on the timeline"),
    ]

    def __init__(self, analysis: Analysis, table: Any, group: int, kind: str = "ops", row: int | None = None) -> None:
        super().__init__()
        self.analysis = analysis
        self.table = table
        self.group = group
        self.kind = kind
        self.rows = table.instances(group)
        self.sort_by = "dur"
        self.start_row = row
        self.chain: Chain | None = None
        self._chain_row = -1  # the trace row whose chain is shown or being built
        self.show_context = False  # parents and Python frames as one line until asked for
        self.shown: list[int] = []  # chain rows on screen → hop index, -1 for the context line
        self.instance_rank = time_ranks(analysis, self.rows)
        self._orders: dict[str, np.ndarray] = {}  # instance orders made so far, by sort

    def compose(self) -> ComposeResult:
        # laid out for the terminal's size from the start: classes changed after the
        # mount restyle the pane (7 ms a call at 80x24)
        body, detail = self._layout_classes()
        yield TextPanel(id="drill-title")
        with Container(id="drill-body", classes=" ".join(sorted(body))):
            yield VirtualTable(id="instances")
            yield VirtualTable(id="chain")
        yield TextPanel(id="hop-detail", grow_only=True, classes=" ".join(sorted(detail)))
        yield KeyHints()

    def on_mount(self) -> None:
        self._show_instances()
        view = self.query_one("#instances", VirtualTable)
        view.focus()
        index = view.current_index
        if index >= 0 and chain_is_quick(self.analysis, int(self.rows[index])):
            # a small chain now, in the pane's first frame: from a worker it came two
            # frames later (its message waits for the mount's layout and resizes)
            self._chain_row = int(self.rows[index])
            self._show_chain(self._chain_of(index))

    def on_resize(self) -> None:
        self._set_layout()
        self.call_after_refresh(self._title)  # fitted to the width, as the hop's lines are
        if self.chain is not None:  # (the chain's table lays its columns out itself)
            self.call_after_refresh(self._refit_hop)

    def _refit_hop(self) -> None:
        index = self.query_one("#chain", VirtualTable).cursor
        if self.chain is not None and 0 <= index < len(self.shown):
            self._show_hop(index)

    def _layout_classes(self) -> tuple[set[str], set[str]]:
        """The classes of the body and of the hop's panel at this terminal size: side by
        side when wide; on a short screen the instance list gives up rows so the chain's
        story fits, and the hop's panel keeps to four lines."""
        short = {"short"} if self.app.size.height < 32 else set()
        return {"wide" if self.app.size.width >= 140 else "narrow", *short}, short

    def _set_layout(self) -> None:
        body, detail = self._layout_classes()
        for widget, wanted in (
            (self.query_one("#drill-body", Container), body),
            (self.query_one("#hop-detail"), detail),
        ):
            for name in ("wide", "narrow", "short"):
                widget.set_class(name in wanted, name)

    def _show_instances(self) -> None:
        if self.sort_by not in self._orders:  # each order once: sorting back and forth costs nothing
            self._orders[self.sort_by] = instance_order(self.analysis, self.rows, self.sort_by, self.instance_rank)
        order = self._orders[self.sort_by]
        view = self.query_one("#instances", VirtualTable)
        keep = None
        if self.start_row is not None:
            hits = np.flatnonzero(self.rows == self.start_row)
            keep = int(hits[0]) if hits.size else None
            self.start_row = None
        elif view.current_index >= 0:
            keep = view.current_index
        view.set_model(
            instances_model(self.analysis, self.rows, order, self.sort_by, self.instance_rank), keep_index=keep
        )
        self._title()

    def _title(self) -> None:
        view = self.query_one("#instances", VirtualTable)
        index = view.current_index
        name = shown_names(self.table)[self.group]
        pieces: list[tuple[str, str, bool]] = []
        if self.analysis.trace.synthetic:
            pieces += [(" SYNTHETIC ", "bold reverse yellow", False), (" ", "", False)]
        pieces.append((safe_text(name), "bold", True))  # the name gives way, the figures stay whole
        if index >= 0:
            # the same numbering as the # column and chain --instance: #0 is the first in time
            pieces.append((f"  instance #{int(self.instance_rank[index])} · {self.rows.size:,} in all", "", False))
        pieces.append((f" · by {'duration' if self.sort_by == 'dur' else 'time'}", "dim", False))
        title = self.query_one("#drill-title", Static)
        title.update(fit_line(pieces, title.size.width or self.app.size.width))

    def on_virtual_table_cursor_moved(self, message: VirtualTable.CursorMoved) -> None:
        if message.table.id == "instances" and message.index >= 0:
            self._title()
            row = int(self.rows[message.index])
            if row != self._chain_row:  # not when sorting kept the cursor on the same instance
                self._chain_row = row
                self._build_chain(message.index)
        elif message.table.id == "chain" and self.chain is not None and 0 <= message.index < len(self.shown):
            self._show_hop(message.index)

    @work(thread=True, exclusive=True, group="chain", exit_on_error=False)
    def _build_chain(self, index: int) -> None:
        chain = self._chain_of(index)
        self.app.call_from_thread(self._show_built_chain, int(self.rows[index]), chain)

    def _show_built_chain(self, row: int, chain: Chain) -> None:
        if row == self._chain_row:  # (not the chain of an instance the cursor has left since)
            self._show_chain(chain)

    def _chain_of(self, index: int) -> Chain:
        # each hop's args when the hop is shown (a step's chain has tens of thousands)
        return chain_for_row(
            self.analysis,
            int(self.rows[index]),
            int(self.instance_rank[index]),
            int(self.rows.size),
            every_hops_args=False,
        )

    def _show_chain(self, chain: Chain) -> None:
        self.chain = chain
        self._draw_chain()

    def _draw_chain(self) -> None:
        chain = self.chain
        assert chain is not None
        view = self.query_one("#chain", VirtualTable)
        self.shown = visible_hops(chain, self.show_context)
        op_hop = next((i for i, h in enumerate(chain.hops) if h.kind == "op"), 0)
        start = self.shown.index(op_hop) if op_hop in self.shown else 0
        view.set_model(chain_model(chain, self.shown))
        view.move_to(start)
        # the op on the first line under its context: its runtime calls and device work
        # follow (after the refresh, when the table knows its new height)
        self.call_after_refresh(view.scroll_to, y=max(start - 1, 0), animate=False)
        self._show_hop(start)

    def _show_hop(self, index: int) -> None:
        chain = self.chain
        assert chain is not None
        if self.shown[index] < 0:
            context = [h for h in chain.hops if h.kind in ("parent", "python")]
            text = Text(no_wrap=False)
            text.append("context · ", style="dim")
            text.append(safe_text(context_summary(chain)), style="bold")
            text.append("  (⏎ or e shows them)\n", style="dim")
            text.append(safe_text(" › ".join(h.name for h in context[-6:]))[:600], style="cyan")
            self.query_one("#hop-detail", Static).update(text)
            return
        hop = chain.hops[self.shown[index]]
        read_hop_args(self.analysis, hop)
        # one line: the hop's and its thread's names give up their middle, not a figure
        width = self._detail_width()
        thread = safe_text(hop.thread_or_stream)
        pieces = [
            # the layer and the kind, once where they are one word ("runtime · runtime")
            (f"{hop.layer} · {hop.kind} · " if hop.kind != hop.layer else f"{hop.layer} · ", "dim", False),
            (safe_text(hop.name), "bold", True),
            (f"  at {hop.start_us:,.3f}us for {hop.dur_us:,.3f}us  [", "", False),
            (thread, "", True),
            ("]", "", False),
        ]
        # "thread 851", not "thread 85…Cor)": the thread's process is the trace's
        shorter = [*compact_lane_labels([thread]), *([safe_text(hop.short_place)] if hop.short_place else [])]
        text = fit_line(with_shorter_name(pieces, width, 3, shorter), width)
        text.no_wrap, text.overflow = False, "fold"
        text.append("\n")
        # the chain's figures before the hop's args (which can run to hundreds of
        # characters): on a short screen the figures are what must show
        g = chain.gaps
        t = fmt_time_short
        text.append(
            f"dispatch {t(g.dispatch_us * 1000)} · runtime {t(g.runtime_us * 1000)} "
            f"(own {t(g.runtime_own_us * 1000)}) · queue {t(g.queue_us * 1000)} · device {t(g.device_us * 1000)} · "
            f"host self {t(g.host_us * 1000)}",
            style="bold",
        )
        for note in chain.notes:
            text.append(f"\n{safe_text(note)}", style="yellow")
        details = {k: v for k, v in hop.details.items() if k != "category"}
        if details:
            fitted = self._args_that_fit(text, [safe_text(f"{k}: {v}") for k, v in details.items()])
            text.append("\n")
            text.append_text(fitted)
        self.query_one("#hop-detail", Static).update(text)

    def _detail_width(self) -> int:
        return max(self.query_one("#hop-detail", Static).size.width or self.app.size.width - 2, 20)

    def _args_that_fit(self, above: Text, items: list[str]) -> Text:
        """The hop's args ("key: value" each) in the lines the panel has left under
        ``above``: where they stop short, "…" says so (the panel would otherwise clip
        them unannounced).  They stop between two args, not inside one ("FLOP/s: 52.2G
        (device  …" cut a figure's unit); only a first arg too long for the room
        (a call stack, a list of shapes) is cut inside."""
        width = self._detail_width()
        max_lines = _DETAIL_LINES_SHORT if self.query_one("#hop-detail", Static).has_class("short") else _DETAIL_LINES
        console = self.app.console

        def lines(text: Text) -> int:
            return len(text.wrap(console, width))

        room = max_lines - lines(above)
        args = "  ".join(items)
        whole = Text(args[:_DETAIL_CHARS], style="cyan")
        if len(args) <= _DETAIL_CHARS and lines(whole) <= room:
            return whole
        for count in range(len(items) - 1, 0, -1):  # the most whole args that fit with " …"
            shown = "  ".join(items[:count]) + "  …"
            if len(shown) <= _DETAIL_CHARS and lines(Text(shown)) <= room:
                return Text(shown, style="cyan")
        low, high = 0, min(len(args), _DETAIL_CHARS)  # the longest start of the args that fits with " …"
        while low < high:
            middle = (low + high + 1) // 2
            if lines(Text(args[:middle] + " …")) <= room:
                low = middle
            else:
                high = middle - 1
        return Text(args[:low] + " …", style="cyan")

    def on_virtual_table_selected(self, message: VirtualTable.Selected) -> None:
        if message.table.id == "instances":
            self.query_one("#chain", VirtualTable).focus()
            return
        if message.table.id != "chain" or self.chain is None:
            return
        if self.shown[message.index] < 0:
            self.action_toggle_context()
            return
        hop = self.chain.hops[self.shown[message.index]]
        if hop.kind not in ("child", "parent") or hop.row < 0:
            return
        group = op_group_of_row(self.analysis, hop.row)
        if group is not None:
            self.post_message(ShowDrill(self.analysis, self.analysis.op_table(), group, row=hop.row))

    def action_timeline(self) -> None:
        if self.chain is None:
            return
        rows = np.array(
            [h.row for h in self.chain.hops if h.row >= 0 and h.kind not in ("parent", "python")], dtype=np.int64
        )
        self.post_message(ShowTimeline(self.analysis, rows, f"{self.chain.op} #{self.chain.instance}"))

    def action_toggle_context(self) -> None:
        if self.chain is None:
            return
        self.show_context = not self.show_context
        self._draw_chain()

    def action_instance(self, delta: int) -> None:
        view = self.query_one("#instances", VirtualTable)
        view.move_to(view.cursor + delta)

    def action_sort_instances(self) -> None:
        self.sort_by = "time" if self.sort_by == "dur" else "dur"
        self._show_instances()

    def action_copy(self) -> None:
        if self.chain is None:
            return
        if len(self.chain.hops) > _COPY_NOTICE_HOPS:  # a step's chain: its args take a moment to read
            self.notify(f"copying the chain's {len(self.chain.hops):,} hops…")
        self._copy_chain(self.chain)

    @work(thread=True, exclusive=True, group="copy", exit_on_error=False)
    def _copy_chain(self, chain: Chain) -> None:
        """The chain `trnscope chain` prints, args and all, off the UI thread: reading
        the args of a step's 38,535 hops and writing them out took ~0.8 s."""
        for hop in chain.hops:
            read_hop_args(self.analysis, hop)
        text = render_chain_text(chain)
        folder = writable_dir("clipboard")
        where = ""
        if folder is not None:
            safe = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "._-" else "_" for ch in chain.op)[:60]
            path = Path(folder) / f"chain-{safe}-{chain.instance}.txt"
            try:
                path.write_text(text)
                where = f"; saved to {path}"
            except OSError as error:
                where = f"; not saved ({safe_text(error.strerror or str(error))})"
        self.app.call_from_thread(self._copied, text, where)

    def _copied(self, text: str, where: str) -> None:
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {text.count(chr(10))} lines (OSC 52){where}")
