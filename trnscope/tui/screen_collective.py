"""One collective across ranks: a lane per rank on a shared time axis — ``▶`` where the
rank arrived (called it), ``░`` called but not yet executing, ``█`` executing (on every
rank but the last this includes waiting for the last).  The last rank to arrive is
marked, so the straggler is seen, not read."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from trnscope.core.analysis.contracts import RanksOut
from trnscope.core.analysis.rank_view import ARRIVAL, RUNNING, WAITING, collective_lanes
from trnscope.core.base.text import safe_text
from trnscope.core.base.units import fit_time_short, fmt_time_short
from trnscope.core.formats import SourceRef
from trnscope.tui.keyhints import KeyHints
from trnscope.tui.messages import OpenRank
from trnscope.tui.panes import pane
from trnscope.tui.screen_base import ExplorerScreen
from trnscope.tui.textpanel import TextPanel
from trnscope.tui.vtable import Column, TableModel, VirtualTable

_STYLE = {RUNNING: "green", WAITING: "yellow", ARRIVAL: "bold"}


@pane("Collective lanes", order=16)
class CollectiveScreen(ExplorerScreen):
    def __init__(self, document: RanksOut, collective: int, sources: dict[int, SourceRef]) -> None:
        super().__init__()
        self.document = document
        self.collective = document.collectives[collective]
        self.sources = sources

    def warning_lines(self) -> list[str] | None:
        return list(self.document.warnings)

    def compose(self) -> ComposeResult:
        yield TextPanel(id="cl-summary")
        yield VirtualTable(id="cl-lanes")
        yield TextPanel(id="cl-legend")
        yield KeyHints()

    def on_mount(self) -> None:
        c = self.collective
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"#{c.id} {safe_text(c.name)}", style="bold")
        text.append(
            f" · step {c.step} #{c.index}{' · group ' + safe_text(c.group) if c.group else ''} · {len(c.ranks)} ranks"
            " · start skew "
            f"{fmt_time_short(c.start_skew_us * 1000)} · latency {fmt_time_short(c.latency_us * 1000)} · last rank "
            f"{c.last_rank} (+{fmt_time_short(c.lateness_us * 1000)})"
        )
        if c.problems:  # the lanes may pair two different calls: said where they are drawn
            said = "; ".join(safe_text(problem) for problem in c.problems)
            text.append(f"\n⚠ the ranks disagree about it: {said}", style="yellow")
        self.query_one("#cl-summary", Static).update(text)
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        c = self.collective
        lane_width = max(10, (self.size.width or 80) - 6 - 10 - 4)
        lanes, lo, hi = collective_lanes(c, lane_width)

        def cells(i: int) -> list[str | Text]:
            lane = lanes[i]
            drawn = Text(no_wrap=True)
            for glyph in lane.text:
                drawn.append(glyph, style=_STYLE.get(glyph, ""))
            rank = Text(str(lane.rank), style="bold red" if lane.late else "")
            return [rank, drawn, fit_time_short(c.wait_us[i] * 1000, 9)]

        columns = [
            Column("rank", "Rank", 5),
            Column(
                "lane", f"{fmt_time_short(lo * 1000)} … {fmt_time_short(hi * 1000)} (⏎ op table)", 10, "left", flex=True
            ),
            Column("wait", "Wait", 9),
        ]
        view = self.query_one("#cl-lanes", VirtualTable)
        view.set_model(TableModel(columns, len(lanes), cells))
        view.focus()
        legend = Text(
            f"{ARRIVAL} arrival  {WAITING} called, not executing  {RUNNING} executing (waiting for the last "
            "included)  red rank: arrived last · times from the job's first event",
            style="dim",
        )
        self.query_one("#cl-legend", Static).update(legend)

    def on_virtual_table_selected(self, message: VirtualTable.Selected) -> None:
        ranks = self.collective.ranks
        if not 0 <= message.index < len(ranks):
            return
        source = self.sources.get(ranks[message.index])
        if source is None:
            self.notify(f"rank {ranks[message.index]}: its trace is not known here")
            return
        self.notify(f"opening rank {ranks[message.index]}…", timeout=3)
        self.post_message(OpenRank(source))
