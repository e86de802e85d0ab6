"""Messages workers post to the UI (never touch widgets from a thread)."""

from __future__ import annotations

from typing import Any, Protocol, cast

import numpy as np
from textual.app import App
from textual.message import Message

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.compare import Comparison
from trnscope.core.analysis.contracts import RanksOut
from trnscope.core.formats import SourceRef


class LoadProgress(Message):
    """A loading worker made progress."""

    def __init__(self, phase: str, done: int, total: int, label: str, events: int = 0) -> None:
        super().__init__()
        self.phase = phase
        self.done = done
        self.total = total
        self.label = label
        self.events = events

    def can_replace(self, message: Message) -> bool:  # only the latest progress matters
        return isinstance(message, LoadProgress)


class LoadFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class ShowOps(Message):
    """A screen asks the app to show the op table of one analysis."""

    def __init__(self, analysis: Analysis) -> None:
        super().__init__()
        self.analysis = analysis


class ShowDrill(Message):
    """A pane asks the app to drill into one group of a table (an op or a kernel),
    ``row`` being the instance to start on."""

    def __init__(self, analysis: Analysis, table: Any, group: int, kind: str = "ops", row: int | None = None) -> None:
        super().__init__()
        self.analysis = analysis
        self.table = table
        self.group = group
        self.kind = kind
        self.row = row


class ShowTimeline(Message):
    """A pane asks for the timeline: ``highlight`` rows marked, opened on ``window``
    (``step``: that window's index among the trace's steps)."""

    def __init__(
        self,
        analysis: Analysis,
        highlight: np.ndarray | None = None,
        title: str = "",
        window: tuple[int, int] | None = None,
        step: int = -1,
    ) -> None:
        super().__init__()
        self.analysis = analysis
        self.highlight = highlight
        self.title = title
        self.window = window
        self.step = step


class ShowDiagnosis(Message):
    def __init__(self, analysis: Analysis) -> None:
        super().__init__()
        self.analysis = analysis


class ShowCompare(Message):
    """A worker finished a comparison; the app shows it (screens never import each other)."""

    def __init__(self, comparison: Comparison, analyses: list[Analysis]) -> None:
        super().__init__()
        self.comparison = comparison
        self.analyses = analyses


class ShowRanks(Message):
    """A worker finished the ranks analysis of ``sources`` (one per rank, in the
    document's rank order); the app shows it."""

    def __init__(self, document: RanksOut, sources: dict[int, SourceRef]) -> None:
        super().__init__()
        self.document = document
        self.sources = sources


class ShowCollective(Message):
    """The ranks pane asks for one collective's lanes (one per rank)."""

    def __init__(self, document: RanksOut, collective: int, sources: dict[int, SourceRef]) -> None:
        super().__init__()
        self.document = document
        self.collective = collective
        self.sources = sources


class OpenRank(Message):
    """The ranks pane asks for one rank's op table (the app loads it in a worker)."""

    def __init__(self, source: SourceRef) -> None:
        super().__init__()
        self.source = source


class AnalysisHost(Protocol):
    """What screens may ask of the app: loading (in their worker threads) and cancelling."""

    def load_analysis(self, source: SourceRef) -> Analysis: ...

    def cancel_load(self) -> None: ...


def host(app: App[Any]) -> AnalysisHost:
    return cast(AnalysisHost, app)
