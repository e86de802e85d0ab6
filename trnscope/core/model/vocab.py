"""The model's shared vocabulary: phase codes, the "no id" marker and string interning.

Every reader writes these into the event columns, so they live with the model rather
than with any one reader.
"""

from __future__ import annotations

from typing import Any

NONE_ID = -1

# Phase codes kept in the ``ph`` column.
PH_X = 0
PH_INSTANT = 1
PH_FLOW_START = 2
PH_FLOW_END = 3
PH_FLOW_STEP = 4
PH_META = 5
PH_COUNTER = 6
PH_BEGIN = 7
PH_END = 8
PH_OTHER = 9
PH_CODES: dict[str, int] = {
    "X": PH_X,
    "i": PH_INSTANT,
    "I": PH_INSTANT,
    "s": PH_FLOW_START,
    "f": PH_FLOW_END,
    "t": PH_FLOW_STEP,
    "M": PH_META,
    "C": PH_COUNTER,
    "B": PH_BEGIN,
    "E": PH_END,
}


class Interner(dict[Any, int]):
    """value → dense int, assigned in first-seen order."""

    def __missing__(self, key: Any) -> int:
        value = len(self)
        self[key] = value
        return value

    def values_in_order(self) -> list[Any]:
        return list(self.keys())
