"""Results derived from one analysis, or one op table of it, computed once.

The TUI asks for an op table's extra columns (memory, FLOPs) on every sort and filter
keystroke, and the analysis keeps its tables, so the same table object comes back:
its columns — and the per-row figures they are summed from — are kept for as long as
the analysis lives.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.optable import OpTable

T = TypeVar("T")


class PerAnalysisCache(Generic[T]):
    """One result per analysis, computed once even when several threads ask at the
    same time (the TUI's table worker and the index-cache writer both want the
    [memory] records: the second waits for the first instead of reading them again)."""

    def __init__(self) -> None:
        self._results: weakref.WeakKeyDictionary[Analysis, T] = weakref.WeakKeyDictionary()
        self._computing: weakref.WeakKeyDictionary[Analysis, threading.Lock] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def known(self, analysis: Analysis) -> bool:
        """Already computed (a screen that must not wait shows what it has without it)."""
        with self._lock:
            return analysis in self._results

    def seed(self, analysis: Analysis, value: T) -> None:
        """A result known without computing it (read back from the index cache)."""
        with self._lock:
            self._results[analysis] = value

    def get(self, analysis: Analysis, compute: Callable[[Analysis], T]) -> T:
        with self._lock:
            if analysis in self._results:
                return self._results[analysis]
            guard = self._computing.setdefault(analysis, threading.Lock())
        with guard:
            with self._lock:
                if analysis in self._results:  # computed while this thread waited
                    return self._results[analysis]
            result = compute(analysis)
            with self._lock:
                self._results[analysis] = result
        return result


class PerTableCache(Generic[T]):
    def __init__(self) -> None:
        # per analysis: id(table) → (the table itself, to check identity; its result)
        self._by_analysis: weakref.WeakKeyDictionary[Analysis, dict[int, tuple[OpTable, T]]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def known(self, analysis: Analysis, table: OpTable) -> bool:
        """Already computed for this very table."""
        with self._lock:
            found = self._by_analysis.get(analysis, {}).get(id(table))
        return found is not None and found[0] is table

    def get(self, analysis: Analysis, table: OpTable, compute: Callable[[], T]) -> T:
        with self._lock:
            found = self._by_analysis.get(analysis, {}).get(id(table))
        if found is not None and found[0] is table:
            return found[1]
        result = compute()
        with self._lock:
            self._by_analysis.setdefault(analysis, {})[id(table)] = (table, result)
        return result
