"""The Ranks pane at 80×24: what ``open`` shows first for a folder of per-rank traces
(SYNTHETIC, ``trnscope.testing.synth_ranks``), its keys, the collective lanes, the way
into one rank's op table and back; and 512 ranks scrolling without trouble."""

from __future__ import annotations

import re
from pathlib import Path

from textual.app import App

from tests.tui_helpers import press, settle, wait_loaded
from trnscope.core.analysis.collective_table import CollectiveTable
from trnscope.core.analysis.collectives import CollectiveCall
from trnscope.core.analysis.rank_summary import RankStep, RankSteps, RankSummary
from trnscope.core.analysis.rank_view import LATE
from trnscope.core.analysis.ranks import reduce_ranks
from trnscope.core.formats import discover
from trnscope.core.formats.options import LoadOptions
from trnscope.core.opening.ranks import rank_jobs, summarize_rank
from trnscope.testing.synth_ranks import RankPlan, write_collected, write_ranks
from trnscope.tui.app import TrnscopeApp
from trnscope.tui.messages import ShowCollective
from trnscope.tui.screen_collective import CollectiveScreen
from trnscope.tui.screen_ops import OpsScreen
from trnscope.tui.screen_ranks import RanksScreen
from trnscope.tui.screen_text import HelpScreen, WarningsScreen
from trnscope.tui.vtable import VirtualTable

NO_CACHE = LoadOptions(use_cache=False)


def _table_text(screen: RanksScreen | CollectiveScreen, row: int) -> str:
    table = screen.query_one(VirtualTable)
    model = table.model
    assert model is not None
    return " ".join(c.plain if hasattr(c, "plain") else str(c) for c in model.cells(int(model.order[row])))


async def test_a_rank_folder_opens_on_the_ranks_pane_and_leads_everywhere(tmp_path: Path) -> None:
    write_ranks(tmp_path, RankPlan(world=8, held_back={(5, 1): 6_000}, skip_ranks=frozenset()))
    app = TrnscopeApp([str(tmp_path)], use_cache=False, workers=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        ranks = app.screen
        assert isinstance(ranks, RanksScreen)
        summary = str(ranks.query_one("#rk-summary").render())
        assert "8 ranks" in summary and "straggler" in summary and "rank 5" in summary
        assert re.search(r"[\d,]+ collectives matched by \S", summary)  # as the CLI's headline says it
        first = _table_text(ranks, 0)
        assert first.startswith("5 ") and LATE in first  # the rank that held the others back comes first
        detail = str(ranks.query_one("#rk-detail").render())
        assert "rank 5" in detail and re.search(r"arrived last at [\d,]+ collectives?;", detail)
        assert detail.split(" · ")[0] in ("rank 5 host compute", "rank 5 device compute")  # not "rank 5 rank5"
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen) and "ranks ↔ collectives" in app.screen.text
        await press(pilot, "escape", "w")
        assert isinstance(app.screen, WarningsScreen)
        await press(pilot, "escape", "c")
        assert _table_text(ranks, 0).split()[1] == "all_reduce"  # the largest skew first
        await press(pilot, "enter")
        lanes = app.screen
        assert isinstance(lanes, CollectiveScreen) and lanes.collective.last_rank == 5
        assert all(len(_table_text(lanes, k)) > 40 for k in range(8))
        await press(pilot, "escape")
        assert app.screen is ranks and ranks.view == "collectives"
        await press(pilot, "escape")  # esc leads from the collectives back to the ranks
        assert app.screen is ranks and ranks.view == "ranks"
        await press(pilot, "enter")
        for _ in range(100):
            await settle(pilot)
            if isinstance(app.screen, OpsScreen):
                break
        assert isinstance(app.screen, OpsScreen) and app.screen.analysis.trace.source.endswith("rank5.json")
        await press(pilot, "escape")
        assert app.screen is ranks
        await press(pilot, "escape")  # the first pane: the app stays
        assert app.screen is ranks and app.is_running


async def test_R_reaches_the_ranks_pane_from_a_selected_rank(tmp_path: Path) -> None:
    write_ranks(tmp_path, RankPlan(world=4, held_back={(2, 0): 4_000}))
    app = TrnscopeApp([str(tmp_path)], select="rank1", use_cache=False, workers=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        assert isinstance(app.screen, OpsScreen)
        await press(pilot, "R")
        for _ in range(100):
            await settle(pilot)
            if isinstance(app.screen, RanksScreen):
                break
        assert isinstance(app.screen, RanksScreen)
        assert app.screen.document.findings[0].rank == 2


async def test_a_folder_of_other_jobs_ranks_opens_its_first_trace(tmp_path: Path) -> None:
    """Each trace some job's rank 0 (a folder of traces collected from several jobs): not
    one job's ranks, so the op table of the first, as for any folder of traces."""
    write_collected(tmp_path, [(RankPlan(world=2), 0, "job_a.json"), (RankPlan(world=4), 0, "job_b.json")])
    app = TrnscopeApp([str(tmp_path)], use_cache=False, workers=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        assert isinstance(app.screen, OpsScreen)


def test_one_jobs_ranks_by_their_distributed_info(tmp_path: Path) -> None:
    import gzip
    import json

    from trnscope.core.formats.sniff import one_jobs_ranks, rank_of

    def trace(name: str, info: object, packed: bool = False) -> Path:
        text = json.dumps({"schemaVersion": 1, "distributedInfo": info, "traceEvents": []})
        path = tmp_path / (name + (".json.gz" if packed else ".json"))
        path.write_bytes(gzip.compress(text.encode()) if packed else text.encode())
        return path

    groups = [{"pg_name": "0", "pg_desc": "default_pg", "pg_size": 4, "ranks": [0, 1, 2, 3]}]  # as torch writes it
    four = [
        trace(f"r{r}", {"backend": "gloo", "rank": r, "world_size": 4, "pg_config": groups}, r % 2 == 1)
        for r in range(4)
    ]
    assert [rank_of(p) for p in four] == [(0, 4), (1, 4), (2, 4), (3, 4)]
    assert one_jobs_ranks(four)
    assert not one_jobs_ranks(four[:1])  # one trace is no job's ranks
    assert not one_jobs_ranks([four[0], trace("other0", {"rank": 0, "world_size": 4})])  # rank 0 twice
    assert not one_jobs_ranks([four[0], trace("w8", {"rank": 1, "world_size": 8})])  # another world size
    assert not one_jobs_ranks([four[0], trace("plain", None).with_suffix(".json")])  # null: not a rank's
    assert rank_of(trace("odd", {"rank": "zero", "world_size": True, "s": '}{\\"}'})) == (-1, -1)
    assert rank_of(trace("huge", {"rank": 2**70, "world_size": 2})) == (-1, 2)
    # a big job: its process groups run past 64 KB of numbers (read whole, quickly)
    groups = [{"pg_name": str(g), "pg_size": 8, "ranks": list(range(8 * g, 8 * g + 8))} for g in range(512)]
    big = trace("big", {"rank": 3, "world_size": 4096, "pg_config": [*groups, {"ranks": list(range(4096))}]})
    assert big.stat().st_size > 65_536 and rank_of(big) == (3, 4096)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"traceEvents": []}))
    assert rank_of(bare) is None


def _many(world: int, steps: int) -> list[RankSummary]:
    out = []
    for r in range(world):
        step_rows, calls = [], []
        for s in range(steps):
            t0 = 10**18 + s * 10**8
            step_rows.append(RankStep(s, t0, t0 + 90_000_000, 50_000_000, 20_000_000, 10_000_000))
            late = 30_000_000 if (r, s) == (300, 7) else (r * 7919) % 200_000
            arrival = t0 + 50_000_000 + late
            end = t0 + 50_000_000 + 30_000_000 * (s == 7) + 400_000
            calls.append(
                CollectiveCall("all_reduce", "c10d::allreduce_", "0", s, "", s, 0, arrival, arrival + 20_000,
                               arrival + 25_000, end, 1 << 20, 1 << 20, "Float", 4, world, 1_000, "", 1_000 + late)
            )  # fmt: skip
        out.append(
            RankSummary(f"rank{r}", f"rank{r}", r, world, "nccl", "cuda", "device", 10**18, 10**18 + steps * 10**8,
                        True, RankSteps.from_steps(step_rows), CollectiveTable.from_calls(calls))
        )  # fmt: skip
    return out


class _Host(App[None]):
    def __init__(self, screen: RanksScreen) -> None:
        super().__init__()
        self._first = screen

    def on_mount(self) -> None:
        self.push_screen(self._first)

    def on_show_collective(self, message: ShowCollective) -> None:  # as the app does
        self.push_screen(CollectiveScreen(message.document, message.collective, message.sources))


async def test_512_ranks_scroll_at_80x24() -> None:
    document = reduce_ranks(_many(512, 40))
    assert document.findings[0].rank == 300 and document.findings[0].step == 7
    screen = RanksScreen(document, {})
    async with _Host(screen).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert _table_text(screen, 0).startswith("300 ")
        heat = _table_text(screen, 0).split()[1]
        assert LATE in heat
        await press(pilot, "end")
        table = screen.query_one(VirtualTable)
        assert table.cursor == 511
        await press(pilot, "enter")  # no trace behind these summaries: said, not a crash
        assert app_is_alive(pilot)
        await press(pilot, "c", "enter")
        assert isinstance(pilot.app.screen, CollectiveScreen)
        await press(pilot, "end")
        assert pilot.app.screen.query_one(VirtualTable).cursor == 511


def app_is_alive(pilot: object) -> bool:
    return bool(getattr(pilot, "app").is_running)  # noqa: B009


async def test_the_lanes_of_a_collective_the_ranks_disagree_about_say_so(tmp_path: Path) -> None:
    write_ranks(tmp_path, RankPlan(world=3, key="none", wrong_size={(1, 0, 0): 999}))
    document = reduce_ranks([summarize_rank(job).summary for job in rank_jobs(discover(tmp_path).sources, NO_CACHE)])
    odd = next(c for c in document.collectives if c.problems)
    alike = next(c for c in document.collectives if not c.problems)
    async with _Host(CollectiveScreen(document, odd.id, {})).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        said = str(pilot.app.screen.query_one("#cl-summary").render())
        assert "⚠ the ranks disagree about it: input elements differs (rank 1: 999; 2 other ranks:" in said
    async with _Host(CollectiveScreen(document, alike.id, {})).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "disagree" not in str(pilot.app.screen.query_one("#cl-summary").render())


async def test_the_ranks_header_counts_the_warnings_whatever_the_width(tmp_path: Path) -> None:
    """The findings said "(see warnings)" while nothing on the pane said there were any,
    nor which key lists them; the noise floor, then the matching, give way first."""
    write_ranks(tmp_path, RankPlan(world=3, key="none", wrong_size={(1, 0, 0): 999}))
    document = reduce_ranks([summarize_rank(job).summary for job in rank_jobs(discover(tmp_path).sources, NO_CACHE)])
    count = len(document.warnings)
    assert count >= 1
    said = f"⚠ {count} (w)"
    for width, floor_shown in ((120, True), (80, None), (50, False)):
        async with _Host(RanksScreen(document, {})).run_test(size=(width, 24)) as pilot:
            await settle(pilot)
            first = str(pilot.app.screen.query_one("#rk-summary").render()).split("\n")[0]
            assert said in first and len(first) <= width, (width, first)
            if floor_shown is not None:
                assert ("noise floor" in first) is floor_shown and first.endswith("…") is not floor_shown, first
            assert re.search(r"[\d,]+ collectives", first), first  # how many stays longest
    quiet = reduce_ranks(_many(8, 4))
    async with _Host(RanksScreen(quiet, {})).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not quiet.warnings and "⚠" not in str(pilot.app.screen.query_one("#rk-summary").render())
