"""Results derived from one op table of one analysis, computed once.

The TUI asks for an op table's extra columns (memory, FLOPs) on every sort and filter
keystroke, and the analysis keeps its tables, so the same table object comes back:
its columns are kept beside it for as long as the analysis lives.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.optable import OpTable

T = TypeVar("T")


class PerTableCache(Generic[T]):
    def __init__(self) -> None:
        # per analysis: id(table) → (the table itself, to check identity; its result)
        self._by_analysis: weakref.WeakKeyDictionary[Analysis, dict[int, tuple[OpTable, T]]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def get(self, analysis: Analysis, table: OpTable, compute: Callable[[], T]) -> T:
        with self._lock:
            found = self._by_analysis.get(analysis, {}).get(id(table))
        if found is not None and found[0] is table:
            return found[1]
        result = compute()
        with self._lock:
            self._by_analysis.setdefault(analysis, {})[id(table)] = (table, result)
        return result
