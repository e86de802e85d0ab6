"""Which of a trace's names a pattern matches: once per distinct name, not per event."""

from __future__ import annotations

import re

import numpy as np


def names_matching(names: list[str], pattern: re.Pattern[str], needles: tuple[str, ...]) -> np.ndarray:
    """Per name id, whether ``pattern`` finds a match in it (one entry more, False, when
    there are no names, so the result can be indexed with an empty column)."""

    def matches(name: str) -> bool:
        if name.isascii():
            lower = name.lower()
            for needle in needles:  # a loop: half the time of any() over a generator
                if needle in lower:
                    break
            else:
                return False
        return pattern.search(name) is not None

    if not names:
        return np.zeros(1, dtype=bool)
    # most names match no pattern: where no needle is anywhere in them, one scan of all
    # their text answers (0.4 ms for 7,230 names, against 4.5 ms a name at a time)
    joined = "\n".join(names)
    if joined.isascii():
        lowered = joined.lower()
        if not any(needle in lowered for needle in needles):
            return np.zeros(len(names), dtype=bool)
    return np.array([matches(name) for name in names], dtype=bool)
