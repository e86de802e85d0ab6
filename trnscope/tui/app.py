"""The Textual app: loads profiles in a worker, then shows the explorer screens.

The app is thin: it owns the loaded analyses and the loading/cancel flow; each screen
(op table, drill-down, compare) is a module of its own and gets its data from the
headless core.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Label, ProgressBar, Static
from textual.worker import WorkerState

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.chain import prepare_chains
from trnscope.core.analysis.compare import compare
from trnscope.core.base.errors import LoadCancelled, TrnscopeError
from trnscope.core.base.text import safe_text
from trnscope.core.formats import ProfileRef, SourceRef
from trnscope.core.formats.sniff import one_jobs_ranks
from trnscope.core.opening.sources import Mode, OpenOptions, is_variants_folder, open_source, plan_sources
from trnscope.tui.commands import TrnscopeCommands
from trnscope.tui.early_load import EarlyLoad
from trnscope.tui.idle_gc import CHECK_EVERY_S, IdleCollector
from trnscope.tui.keyhelp import help_text
from trnscope.tui.keyhints import KeyHints
from trnscope.tui.messages import (
    LoadFailed,
    LoadProgress,
    OpenRank,
    ShowCollective,
    ShowCompare,
    ShowDiagnosis,
    ShowDrill,
    ShowOps,
    ShowRanks,
    ShowTimeline,
    host,
)
from trnscope.tui.panes import registered_panes
from trnscope.tui.safe import plain
from trnscope.tui.screen_base import ExplorerScreen
from trnscope.tui.screen_collective import CollectiveScreen
from trnscope.tui.screen_compare import CompareScreen
from trnscope.tui.screen_diagnose import DiagnoseScreen
from trnscope.tui.screen_drill import DrillScreen
from trnscope.tui.screen_ops import OpsScreen
from trnscope.tui.screen_ranks import RanksScreen
from trnscope.tui.screen_text import HelpScreen, TextScreen, WarningsScreen
from trnscope.tui.screen_timeline import TimelineScreen
from trnscope.tui.vtable import VirtualTable


class LoadingScreen(Screen[None]):
    """Progress of the first load; Esc cancels it."""

    BINDINGS = [Binding("escape,c", "cancel", "Cancel load")]

    def __init__(self, paths: list[str]) -> None:
        super().__init__()
        self.paths = paths

    def compose(self) -> ComposeResult:
        with Vertical(id="loading-box"):
            yield Label(plain(f"Opening {', '.join(Path(p).name for p in self.paths)}"), id="loading-title")
            yield ProgressBar(total=100, show_eta=False, id="loading-bar")
            yield Label("", id="loading-status")
        yield KeyHints()

    def show(self, phase: str, done: int, total: int, label: str, events: int = 0) -> None:
        bar = self.query_one("#loading-bar", ProgressBar)
        if total:
            bar.update(total=total, progress=done)
        words = {"decompress": "decompressing", "parse": "reading events", "link": "linking"}.get(phase, phase)
        if phase == "reading ranks":  # counted in ranks, not bytes
            amount = f"{done:,} of {total:,}"
        else:
            amount = f"{done / 1e6:,.1f} of {total / 1e6:,.1f} MB" if total else ""
        if events:
            amount += f" · {events:,} events"
        self.query_one("#loading-status", Label).update(plain(f"{label}: {words} {amount}"))

    def action_cancel(self) -> None:
        host(self.app).cancel_load()


class ErrorScreen(Screen[None]):
    """What could not be opened; quitting from here exits with status 2, as the CLI does."""

    BINDINGS = [Binding("q,escape", "quit_failed", "Quit", tooltip="quit (exit status 2)")]

    def action_quit_failed(self) -> None:
        self.app.exit(return_code=2)

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        with Vertical(id="error-box"):
            yield Label("trnscope could not open this profile", id="error-title")
            yield Static(plain(self.message), id="error-message")
            yield Label("Press q to quit.", id="error-hint")
        yield KeyHints()


class TrnscopeApp(App[None]):
    """The explorer: loads in a worker, then shows the op table or the comparison."""

    TITLE = "trnscope"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {TrnscopeCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit", priority=False, tooltip="quit trnscope"),
        Binding("question_mark", "help", "Help", key_display="?", tooltip="this help"),
        Binding(
            "R",
            "ranks",
            "Ranks",
            show=False,
            tooltip="ranks: which rank held the others back, in which step, at which collective",
        ),
        Binding(
            "w",
            "warnings",
            "Warnings",
            show=False,
            tooltip="warnings (the ⚠ count): what was lost, coerced or not linked",
        ),
    ]

    def __init__(
        self,
        paths: list[str],
        *,
        select: str | None = None,
        skip: tuple[str, ...] = (),
        use_cache: bool = True,
        theme: str | None = None,
        workers: int | None = None,
        export: bool = False,
        warmup: int = 0,
        op_tree: str = "auto",
        early: EarlyLoad | None = None,
    ) -> None:
        super().__init__()
        # No animated scrolling (as TEXTUAL_ANIMATIONS=none), unless the user asks for
        # it: over a slow SSH link, end in the help scrolled in ~50 frames over 1.2 s
        # instead of one
        if "TEXTUAL_ANIMATIONS" not in os.environ:
            self.animation_level = "none"
        self.paths = paths
        self.options = OpenOptions(
            select=select,
            skip=skip,
            use_cache=use_cache,
            workers=workers,
            export=export,
            warmup=warmup,
            op_tree=op_tree,
        )
        self.requested_theme = theme
        self.early = early  # the first trace, already loading (``early_load``)
        self._cancel = early.cancel if early is not None else threading.Event()
        self._closing_for_signal = False  # (close_for_signal)
        self.ref: ProfileRef | None = None
        self.refs: list[ProfileRef] = []
        self.analyses: dict[str, Analysis] = {}
        self.labels: list[str] = []
        self.ranks: ShowRanks | None = None  # the ranks analysis, once made
        self.collector = IdleCollector(busy=self._working)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification (screens' too: ``Widget.notify`` comes here) shows its text
        as typed: messages carry file names, so they are sanitised and never markup."""
        super().notify(safe_text(message), title=safe_text(title), severity=severity, timeout=timeout, markup=False)

    def on_mount(self) -> None:
        self.collector.start()  # before the first screen: it will not live until exit
        self.set_interval(CHECK_EVERY_S, self.collector.tick)
        self.push_screen(LoadingScreen(self.paths))
        if self.requested_theme:
            name = {"ansi": "ansi-dark", "ansi-dark": "ansi-dark", "ansi-light": "ansi-light"}.get(
                self.requested_theme, self.requested_theme
            )
            if name in self.available_themes:
                self.theme = name
            else:
                self.notify(f"unknown theme {self.requested_theme!r}; using {self.theme}", severity="warning")
        self.run_worker(self._load_initial, thread=True, exclusive=True, group="load")

    def on_unmount(self) -> None:
        self.collector.stop()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.InputEvent):
            self.collector.input_seen()
        await super().on_event(event)

    def _working(self) -> bool:
        return any(worker.state is WorkerState.RUNNING for worker in self.workers)

    def exit(self, result: None = None, return_code: int = 0, message: Any = None) -> None:
        # a load still running stops first: the app waits for its workers on the way out
        self._cancel.set()
        super().exit(result, return_code, message)

    # -- loading ------------------------------------------------------------------
    def cancel_load(self) -> None:
        self._cancel.set()

    def close_for_signal(self) -> None:
        """SIGTERM, SIGHUP or Ctrl+C arrived inside the event loop (its signal handler,
        on this thread): the load stops and the app closes, without the "load cancelled"
        line, since the command's own line about the signal follows."""
        self._closing_for_signal = True
        self._cancel.set()
        asyncio.get_running_loop().call_soon_threadsafe(self.exit)

    def _progress(self, label: str) -> Any:
        def report(phase: str, done: int, total: int, events: int = 0) -> None:
            self.post_message(LoadProgress(phase, done, total, label, events))

        return report

    def load_analysis(self, source: SourceRef) -> Analysis:
        """Load (or return the loaded) analysis of one source.  Runs in a worker."""
        key = f"{source.path}::{source.label}"
        if key in self.analyses:
            return self.analyses[key]
        if self.options.export and source.kind == "neuron":
            self.post_message(LoadProgress("running neuron-explorer", 0, 0, source.label))
        early, self.early = self.early, None
        if early is not None and early.source == source:
            analysis = early.result(self._progress(source.label))  # its first table is built too
        else:
            analysis = open_source(
                source, self.options, progress=self._progress(source.label), cancelled=self._cancel.is_set
            )
            analysis.op_table()  # the first table, built off the UI thread
        # run by finish(), after the first screen: what a drill-down follows and looks up
        analysis.pending[0:0] = [analysis.prepare_drilldown, functools.partial(prepare_chains, analysis)]
        self.analyses[key] = analysis
        return analysis

    def _is_multi_rank(self) -> bool:
        """A folder of traces or a multi-process Neuron profile opened without --select:
        one trace per rank, so the ranks view comes first."""
        ref = self.ref
        if ref is None or len(self.paths) != 1 or self.options.select is not None or len(ref.sources) < 2:
            return False
        if ref.kind == "neuron":  # one process folder per rank
            return True
        # a folder of traces: ranks when they say they are one job's (a folder of unrelated
        # traces, each some job's rank 0, opens the first)
        return (
            ref.kind == "folder"
            and all(s.kind == "kineto" for s in ref.sources)
            and one_jobs_ranks([Path(s.path) for s in ref.sources])
        )

    def _make_ranks(self) -> ShowRanks:
        """Read every rank (a process pool where the fork server runs) into one ranks
        document.  Runs in a worker."""
        assert self.ref is not None
        sources = list(self.ref.sources)
        label = Path(self.ref.root).name

        def progress(done: int, total: int) -> None:
            self.post_message(LoadProgress("reading ranks", done, total, label))

        # (imported here: the per-rank map-reduce and its executors, ~13 ms of every start)
        from trnscope.core.opening.executors import ExecutorChoice
        from trnscope.core.opening.ranks import analyse_ranks

        document, _ = analyse_ranks(sources, self.options, ExecutorChoice(workers=self.options.workers), progress)
        by_path = {s.path: s for s in sources}
        by_label = {s.label: s for s in sources}
        mapped = {}
        for r in document.ranks:
            source = by_path.get(r.source) or by_label.get(r.label)
            if source is not None:
                mapped[r.rank] = source
        return ShowRanks(document, mapped)

    def _load_initial(self) -> None:
        try:
            mode = Mode.VARIANTS if len(self.paths) > 1 else Mode.ONE
            plan = plan_sources(self.paths, mode, self.options.select)
            if mode is Mode.ONE and self.options.select is None and is_variants_folder(plan.refs[0]):
                mode = Mode.VARIANTS  # kernel benchmark files: compared, as a capture session is
                plan = plan_sources(self.paths, mode)
            self.refs = plan.refs
            self.ref = plan.refs[0]
            if self._is_multi_rank():
                self.post_message(self._make_ranks())
                return
            analyses = [self.load_analysis(s) for s in plan.sources]
            if mode is Mode.VARIANTS:
                self.post_message(ShowCompare(compare(analyses, plan.labels), analyses))
            else:
                self.post_message(ShowOps(analyses[0]))
            for analysis in analyses:
                analysis.finish()  # the index cache, once the first screen is up
        except LoadCancelled:
            if not self._closing_for_signal:  # (closing already, and saying why)
                self.call_from_thread(self.exit, None, 0, "load cancelled")
        except TrnscopeError as error:
            self.post_message(LoadFailed(str(error)))
        except Exception as error:  # shown on the error screen, never a traceback
            self.post_message(LoadFailed(f"internal error: {type(error).__name__}: {error}"))

    def on_load_progress(self, message: LoadProgress) -> None:
        if isinstance(self.screen, LoadingScreen):
            self.screen.show(message.phase, message.done, message.total, message.label, message.events)

    def on_show_ops(self, message: ShowOps) -> None:
        if isinstance(self.screen, LoadingScreen):
            self.switch_screen(OpsScreen(message.analysis, self.ref))  # the variant picker lists ref's traces
        else:
            self.push_screen(OpsScreen(message.analysis))

    def on_show_compare(self, message: ShowCompare) -> None:
        self.clear_notifications()  # "loading variants…" is done
        if isinstance(self.screen, LoadingScreen):
            self.switch_screen(CompareScreen(message.comparison, message.analyses, root=True))
        else:
            self.push_screen(CompareScreen(message.comparison, message.analyses))

    def on_show_ranks(self, message: ShowRanks) -> None:
        self.ranks = message
        if isinstance(self.screen, LoadingScreen):
            self.switch_screen(RanksScreen(message.document, message.sources))
        else:
            self.clear_notifications()
            self.push_screen(RanksScreen(message.document, message.sources))

    def on_show_collective(self, message: ShowCollective) -> None:
        self.push_screen(CollectiveScreen(message.document, message.collective, message.sources))

    def on_open_rank(self, message: OpenRank) -> None:
        self.run_worker(lambda: self._open_rank(message.source), thread=True, group="open rank", exit_on_error=False)

    def _open_rank(self, source: SourceRef) -> None:
        try:
            analysis = self.load_analysis(source)
        except TrnscopeError as error:
            self.notify(f"{source.label}: {error}", severity="error")
            return
        self.post_message(ShowOps(analysis))
        analysis.finish()

    def action_ranks(self) -> None:
        """The ranks view of the folder or multi-process profile that is open."""
        if self.ranks is not None:
            if not isinstance(self.screen, RanksScreen):
                self.push_screen(RanksScreen(self.ranks.document, self.ranks.sources))
            return
        if self.ref is None or len(self.ref.sources) < 2:
            self.notify("one trace is open: the ranks view needs a folder of per-rank traces (trnscope open FOLDER)")
            return
        self.notify(f"reading {len(self.ref.sources)} ranks…", timeout=30)
        self.run_worker(self._ranks_in_worker, thread=True, group="ranks", exit_on_error=False)

    def _ranks_in_worker(self) -> None:
        try:
            self.post_message(self._make_ranks())
        except TrnscopeError as error:
            self.notify(str(error), severity="error")

    def on_show_drill(self, message: ShowDrill) -> None:
        self.push_screen(DrillScreen(message.analysis, message.table, message.group, message.kind, message.row))

    def on_show_timeline(self, message: ShowTimeline) -> None:
        self.push_screen(
            TimelineScreen(message.analysis, message.highlight, message.title, message.window, message.step)
        )

    def on_show_diagnosis(self, message: ShowDiagnosis) -> None:
        self.push_screen(DiagnoseScreen(message.analysis))

    def on_load_failed(self, message: LoadFailed) -> None:
        self.switch_screen(ErrorScreen(message.error))

    def action_help(self) -> None:
        if not isinstance(self.screen, TextScreen):
            self.push_screen(HelpScreen(help_text(help_sections())))

    def action_warnings(self) -> None:
        """What the open profile(s) lost, coerced or could not link (the status line's ⚠ count)."""
        screen = self.screen
        if isinstance(screen, ExplorerScreen):
            lines = screen.warning_lines()
            if lines is not None:
                self.push_screen(WarningsScreen([], lines, screen.pane_notes()))
                return
            analyses = screen.analyses_shown()
            if analyses:
                self.push_screen(WarningsScreen(analyses, notes=screen.pane_notes()))
                return
            self.notify("no profile on this pane")


def help_sections() -> list[tuple[str, list[BindingType]]]:
    """What the help screen (?) lists: the keys of every pane, from their own bindings
    (``trnscope.tui.panes``), so help never drifts and a new pane needs no entry here."""
    return [
        ("Everywhere", [*TrnscopeApp.BINDINGS, *ExplorerScreen.BINDINGS]),
        ("Tables (op, kernel, instances, compare, steps)", list(VirtualTable.BINDINGS)),
        *((info.title, list(vars(info.screen).get("BINDINGS", []))) for info in registered_panes()),
    ]
