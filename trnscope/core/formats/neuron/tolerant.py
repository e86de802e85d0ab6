"""Reading Neuron exports that real tool versions wrote, not only the documented ones.

Public readers of real captures (``shared/reference/neuron-evidence.md`` §3, §5) show
fields that change type between versions (a list where an object was, strings where
numbers belong), ``NaN`` written by older neuron-profile releases and very large
integers.  The rules here, shared by every Neuron reader:

* a key the tool does not need never makes a file unreadable, whatever it holds;
* a needed number that is null, ``NaN``/``Infinity``, outside int64, a string that is
  not a number, a list or an object is *missing* — never 0, never clamped — and every
  missing value is counted so a warning can say how many there were.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

import msgspec

NONE = -1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# a JSON string (skipped unchanged) or a bare non-standard number token
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|(?<![\w.])(-?(?:NaN|Infinity))(?![\w.])')


def int_or_missing(value: Any) -> int:
    """``value`` as an int64, or ``NONE`` when it is not one (see the module rules)."""
    if value is None or isinstance(value, bool):
        return NONE
    if isinstance(value, int):
        return value if _INT64_MIN <= value <= _INT64_MAX else NONE
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and -9.2e18 < value < 9.2e18 else NONE
    if isinstance(value, str):
        text = value.strip()
        try:
            if text.lower().startswith(("0x", "-0x")):
                return int_or_missing(int(text, 16))
            if any(c in text for c in ".eE") and not text.lower().startswith(("nan", "inf", "-inf")):
                return int_or_missing(float(text))
            return int_or_missing(int(text))
        except ValueError:
            return NONE
    return NONE  # a list, an object, anything else


class MissingCounts:
    """How many needed values were unusable, by what was wanted (for one warning each)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def note(self, what: str, count: int = 1) -> None:
        if count:
            self.counts[what] += count

    def warnings(self, where: str) -> list[str]:
        return [f"{where}: {count:,} {what}" for what, count in sorted(self.counts.items())]


def replace_non_standard_numbers(raw: bytes) -> tuple[bytes, int]:
    """``NaN`` / ``Infinity`` / ``-Infinity`` outside strings → ``null``; how many."""
    count = 0

    def swap(match: re.Match[bytes]) -> bytes:
        nonlocal count
        if match.group(1) is None:
            return match.group(0)
        count += 1
        return b"null"

    return _TOKENS.sub(swap, raw), count


def decode_lenient(raw: bytes, typ: Any) -> tuple[Any, int]:
    """Decode ``raw`` as ``typ``; if the JSON holds ``NaN``/``Infinity`` (which msgspec,
    like the JSON standard, rejects), decode again with them as null.  Returns the
    document and how many such tokens there were.  Raises msgspec's errors otherwise."""
    try:
        return msgspec.json.decode(raw, type=typ), 0
    except msgspec.DecodeError as error:
        if "invalid character" not in str(error) and "malformed" not in str(error):
            raise
        if b"NaN" not in raw and b"Infinity" not in raw:
            raise
    cleaned, count = replace_non_standard_numbers(raw)
    return msgspec.json.decode(cleaned, type=typ), count


def items_as(items: Any, typ: type[Any], missing: MissingCounts, what: str) -> list[Any]:
    """A list whose elements should be objects of ``typ``: the ones that are, converted;
    the others counted as missing."""
    if not isinstance(items, list):
        if items is not None:
            missing.note(f"{what} list was not a list and was ignored")
        return []
    out = []
    bad = 0
    for item in items:
        if isinstance(item, dict):
            try:
                out.append(msgspec.convert(item, typ))
                continue
            except msgspec.ValidationError:
                pass
        bad += 1
    missing.note(f"{what} entries were not objects and were skipped", bad)
    return out
