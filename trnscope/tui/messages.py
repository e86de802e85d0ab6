"""Messages workers post to the UI (never touch widgets from a thread)."""

from __future__ import annotations

from typing import Any

from textual.message import Message


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


class ProfileLoaded(Message):
    def __init__(self, analyses: list[Any], labels: list[str], ref: Any, compare: bool) -> None:
        super().__init__()
        self.analyses = analyses
        self.labels = labels
        self.ref = ref
        self.compare = compare


class LoadFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error
