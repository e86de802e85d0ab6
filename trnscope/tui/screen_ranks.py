"""Ranks pane: which rank held the others back, in which step, at which collective.

The top lines give the headline and the findings; the table lists the ranks, the ones
that held the others back first, with a heat map of the time each waited in each
step's collectives (▲: this rank was the one waited for); ``c`` switches the table to
the collectives, the largest start skew first.  Enter on a rank opens its op table;
Enter on a collective shows one lane per rank on a shared time axis.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from trnscope.core.analysis.contracts import CollectiveOut, RankOut, RanksOut
from trnscope.core.analysis.rank_view import LATE, heat_map, lateness_order, no_findings_text, what_was_read
from trnscope.core.base.text import plural, safe_text
from trnscope.core.base.units import fit_time_short, fmt_rate, fmt_size, fmt_time_short
from trnscope.core.formats import SourceRef
from trnscope.tui.keyhints import KeyHints
from trnscope.tui.messages import OpenRank, ShowCollective
from trnscope.tui.panes import pane
from trnscope.tui.screen_base import ExplorerScreen
from trnscope.tui.status import fitting_parts
from trnscope.tui.textpanel import TextPanel
from trnscope.tui.vtable import Column, TableModel, VirtualTable

_SEVERITY = {"high": "bold red", "medium": "yellow", "low": "dim"}
_FINDINGS_SHOWN = 3
_FIXED = 6 + 10 + 7 + 3  # rank, wait, last-at columns and the gaps


@pane("Ranks", order=15)
class RanksScreen(ExplorerScreen):
    BINDINGS = [
        Binding("c", "toggle_view", "Collectives", tooltip="ranks ↔ collectives (largest start skew first)"),
        Binding("f", "next_finding", "Finding", tooltip="show the next finding in full"),
    ]

    def __init__(self, document: RanksOut, sources: dict[int, SourceRef]) -> None:
        super().__init__()
        self.document = document
        self.sources = sources
        self.view = "ranks"
        self.rank_order = lateness_order(document.ranks, document)
        self.collective_order = sorted(
            range(len(document.collectives)), key=lambda i: -document.collectives[i].start_skew_us
        )
        self.finding = 0

    def warning_lines(self) -> list[str] | None:
        return list(self.document.warnings)

    def compose(self) -> ComposeResult:
        yield TextPanel(id="rk-summary")
        yield VirtualTable(id="rk-table")
        yield TextPanel(id="rk-detail")
        yield KeyHints()

    def on_mount(self) -> None:
        self._show_summary()
        self._show_table()

    def on_resize(self) -> None:
        self._show_summary()
        if self.view == "ranks":
            self._show_table()

    # -- the header: what was read and the findings ------------------------------------
    def _show_summary(self) -> None:
        doc = self.document
        text = Text(no_wrap=True, overflow="ellipsis")
        world, matched = what_was_read(doc)
        # the warnings' count stays whatever the width (they say what the findings
        # cannot); how the collectives were matched, the noise floor, then how many,
        # give way with a "…"
        said = f"⚠ {len(doc.warnings):,} (w)" if doc.warnings else ""  # as the op table's title says it
        width = max(self.size.width, 20) if self.size.width else 200
        floor = (f"noise floor {fmt_time_short(doc.noise_floor_us * 1000)}", 2)
        lead = [(world, 0), *([(said, 0)] if said else [])]
        line = fitting_parts([*lead, (matched, 1), floor], width)
        if matched not in line:  # too narrow for the CLI's words: how many, before how
            count, _, how = matched.partition(" matched by ")
            line = fitting_parts([*lead, (count, 1), *([(f"matched by {how}", 3)] if how else []), floor], width)
        text.append(line + "\n", style="dim")
        text.stylize("bold", 0, len(world))
        if said:
            at = line.find(said, len(world))
            text.stylize("yellow", at, at + len(said))
        if not doc.findings:
            text.append(no_findings_text(doc), style="green")
        for f in doc.findings[:_FINDINGS_SHOWN]:
            text.append(f"{f.severity:<6} ", style=_SEVERITY.get(f.severity, ""))
            text.append(f"{f.kind}: ", style="bold")
            text.append(safe_text(f.message) + "\n")
        if len(doc.findings) > _FINDINGS_SHOWN:
            text.append(f"… {len(doc.findings) - _FINDINGS_SHOWN} more (f shows each)", style="dim")
        self.query_one("#rk-summary", Static).update(text)

    # -- the table: ranks with their heat map, or collectives ------------------------
    def _show_table(self) -> None:
        if self.view == "ranks":
            self._show_ranks()
        else:
            self._show_collectives()

    def _show_ranks(self) -> None:
        doc = self.document
        ranks = doc.ranks
        order = self.rank_order
        heat_width = max(4, self.size.width - _FIXED - 2) if self.size.width else 40
        rows, bins = heat_map(doc, heat_width)
        by_rank = {row.rank: row for row in rows}

        def cells(i: int) -> list[str | Text]:
            r = ranks[order[i]]
            row = by_rank[r.rank]
            heat = Text(no_wrap=True)
            for glyph in row.cells:
                heat.append(glyph, style="bold red" if glyph == LATE else "")
            return [str(r.rank), heat, fit_time_short(r.wait_us * 1000, 9), str(r.last_arrivals)]

        first, last = (bins[0][0], bins[-1][-1]) if bins else (0, 0)
        per = "step" if all(len(b) == 1 for b in bins) else f"~{max(len(b) for b in bins)} steps"
        columns = [
            Column("rank", "Rank", 5),
            Column("heat", f"Wait per step {first}…{last} (1 col = {per})", 10, "left", flex=True),
            Column("wait", "Wait", 9),
            Column("last", "Last", 5),
        ]
        view = self.query_one("#rk-table", VirtualTable)
        view.set_model(TableModel(columns, len(order), cells))
        view.focus()
        self._detail_rank(0)

    def _show_collectives(self) -> None:
        collectives = self.document.collectives
        order = self.collective_order

        # the process group where collectives of several run (two all_reduce of step 1,
        # one in each pair's group, read alike but for their ids)
        groups = len({c.group for c in collectives}) > 1

        def cells(i: int) -> list[str | Text]:
            c = collectives[order[i]]
            name = Text(safe_text(c.name) + (" !" if c.problems else ""), style="yellow" if c.problems else "")
            return [
                str(c.id),
                name,
                str(c.step) if c.step >= 0 else "—",
                *([safe_text(c.group) or "—"] if groups else []),
                fmt_size(c.bytes) if c.bytes >= 0 else "—",
                fit_time_short(c.start_skew_us * 1000, 9),
                fit_time_short(c.latency_us * 1000, 9),
                str(c.last_rank),
            ]

        columns = [
            Column("id", "Id", 5),
            Column("name", "Collective (⏎ lanes)", 12, "left", flex=True),
            Column("step", "Step", 5),
            *(
                [Column("group", "Group", max(5, *(cell_len(safe_text(c.group)) for c in collectives)))]
                if groups
                else []
            ),
            Column("bytes", "Size", 9),
            Column("skew", "Skew", 9),
            Column("latency", "Latency", 9),
            Column("last", "Last", 5),
        ]
        view = self.query_one("#rk-table", VirtualTable)
        view.set_model(TableModel(columns, len(order), cells))
        view.focus()
        self._detail_collective(0)

    # -- the detail line --------------------------------------------------------------
    def _detail_rank(self, index: int) -> None:
        if not 0 <= index < len(self.rank_order):
            self._detail(Text("no ranks", style="dim"))
            return
        r: RankOut = self.document.ranks[self.rank_order[index]]
        walls = [s.wall_us for s in r.steps]
        text = Text(no_wrap=False)
        text.append(f"rank {r.rank} ", style="bold")
        # the trace's label where it says more than the rank ("rank2" from rank2.json does not)
        said = r.label.replace(" ", "").replace("_", "").lower() in (f"rank{r.rank}", str(r.rank))
        text.append(f"{'' if said else safe_text(r.label) + ' · '}{r.compute} compute · ")
        text.append(
            f"waited {fmt_time_short(r.wait_us * 1000)} in collectives over {len(r.steps)} steps, arrived last at "
            f"{plural(r.last_arrivals, 'collective')}; step wall {fmt_time_short(min(walls, default=0) * 1000)}–"
            f"{fmt_time_short(max(walls, default=0) * 1000)} · ⏎ its op table"
        )
        self._detail(text)

    def _detail_collective(self, index: int) -> None:
        if not 0 <= index < len(self.collective_order):
            self._detail(Text("no collectives matched across ranks", style="dim"))
            return
        c: CollectiveOut = self.document.collectives[self.collective_order[index]]
        text = Text()
        text.append(f"#{c.id} {safe_text(c.name)}", style="bold")
        text.append(
            f" step {c.step} #{c.index}{' group ' + safe_text(c.group) if c.group else ''}: last rank {c.last_rank}, "
            f"{fmt_time_short(c.lateness_us * 1000)} after the others' median; bus "
            f"{fmt_rate(c.bus_bw_gbps) if c.bus_bw_gbps > 0 else '—'} · ⏎ lanes"
        )
        for problem in c.problems[:2]:
            text.append("\n" + safe_text(problem), style="yellow")
        self._detail(text)

    def _detail(self, text: Text) -> None:
        self.query_one("#rk-detail", Static).update(text)

    # -- keys -------------------------------------------------------------------------
    def action_toggle_view(self) -> None:
        self.view = "collectives" if self.view == "ranks" else "ranks"
        self._show_table()
        self.refresh_bindings()  # esc leads back to the ranks from the collectives

    def can_go_back(self) -> bool:
        return self.view == "collectives" or super().can_go_back()

    def action_back(self) -> None:
        if self.view == "collectives":
            self.action_toggle_view()
        else:
            super().action_back()

    def action_next_finding(self) -> None:
        findings = self.document.findings
        if not findings:
            self.notify("no findings")
            return
        f = findings[self.finding % len(findings)]
        self.finding += 1
        text = Text()
        text.append(f"finding {findings.index(f) + 1} of {len(findings)} ", style="bold")
        text.append(f"{f.kind} ({f.severity}): ", style=_SEVERITY.get(f.severity, ""))
        text.append(safe_text(f.message))
        self._detail(text)

    def on_virtual_table_cursor_moved(self, message: VirtualTable.CursorMoved) -> None:
        if self.view == "ranks":
            self._detail_rank(message.index)
        else:
            self._detail_collective(message.index)

    def on_virtual_table_selected(self, message: VirtualTable.Selected) -> None:
        if self.view == "ranks":
            if not 0 <= message.index < len(self.rank_order):
                return
            rank = self.document.ranks[self.rank_order[message.index]].rank
            source = self.sources.get(rank)
            if source is None:
                self.notify(f"rank {rank}: its trace is not known here")
                return
            self.notify(f"opening rank {rank}…", timeout=3)
            self.post_message(OpenRank(source))
        elif 0 <= message.index < len(self.collective_order):
            self.post_message(ShowCollective(self.document, self.collective_order[message.index], self.sources))
