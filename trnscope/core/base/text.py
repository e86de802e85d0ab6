"""The one sanitiser for text that came from a file.

Names, labels, paths and error text in a trace are written by other people and other
programs; on a shared host they reach a terminal.  ``safe_text`` makes every character
that could act on a terminal or reorder what is shown visible instead: C0 and C1
controls (ESC, CSI U+009B, OSC U+009D, BEL, newlines, tabs), DEL, bidirectional and
other invisible format controls (U+202E, U+2066…), line/paragraph separators, and lone
surrogates, each as ``\\xNN`` or ``\\uNNNN``.  Every presenter passes file text through
it; markup is the presenters' concern (they never interpret it: ``rich.text.Text`` /
``markup=False``).  JSON output goes through ``json_safe`` instead: the same
characters as JSON ``\\uNNNN`` escapes, so a document printed to a terminal acts on
nothing and still decodes to the exact text.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(
    "["
    "\x00-\x1f\x7f-\x9f"  # C0, DEL, C1 (CSI, OSC, …)
    "\u00ad"  # soft hyphen (invisible)
    "\u061c"  # Arabic letter mark
    "\u180e"  # Mongolian vowel separator
    "\u200b-\u200f"  # zero-width space/joiners, LRM, RLM
    "\u2028-\u202e"  # line/paragraph separators, LRE/RLE/PDF/LRO/RLO
    "\u2060-\u206f"  # word joiner, invisible operators, LRI/RLI/FSI/PDI, deprecated format
    "\ufeff"  # BOM / zero-width no-break space
    "\ufff9-\ufffb"  # interlinear annotation
    "\ud800-\udfff"  # lone surrogates (cannot even be encoded for output)
    "]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(value: object) -> str:
    """``value`` as text that shows every character and acts on nothing."""
    text = value if isinstance(value, str) else str(value)
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape, text)


# What JSON encoders leave raw: everything above but C0 (escaped inside strings by the
# encoder; raw newlines and tabs in a document are its layout, outside strings).
_JSON_UNSAFE = re.compile("[" + _UNSAFE.pattern[1:-1].replace("\x00-\x1f", "", 1) + "]")


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_safe(document: str) -> str:
    """JSON text with every character ``safe_text`` would show escaped as ``\\uNNNN``.
    JSON encoders escape C0 controls only; C1 controls (CSI U+009B), bidi overrides and
    the rest pass through raw.  They can only occur inside strings, where the escape
    decodes back to the same character: lossless."""
    if _JSON_UNSAFE.search(document) is None:
        return document
    return _JSON_UNSAFE.sub(_json_escape, document)


def is_safe(text: str) -> bool:
    """True when ``safe_text`` would leave ``text`` unchanged."""
    return _UNSAFE.search(text) is None


def user_pattern(text: str) -> re.Pattern[str] | None:
    """A filter the user typed: a case-insensitive regex, or — when it is not a valid
    one (``aten::add(``) — the literal text.  None for an empty filter."""
    if not text:
        return None
    try:
        return re.compile(text, re.IGNORECASE)
    except re.error:
        return re.compile(re.escape(text), re.IGNORECASE)


_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders the numbers inside names as numbers: ``rank2`` before
    ``rank10``, ``pid 99`` before ``pid 299``."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in _DIGITS.split(text) if part)


def numbers_in(text: str) -> list[int]:
    return [int(part) for part in _DIGITS.findall(text)]


def shorten(text: str, limit: int = 240) -> str:
    """``text`` when it fits ``limit`` characters, else its head and tail around a note
    of how long it was: text output stays readable when a file holds a 10 MB name
    (JSON keeps the whole text)."""
    if len(text) <= limit:
        return text
    note = f"…({len(text):,} characters)…"
    keep = max(limit - len(note), 8)
    return text[: keep - keep // 3] + note + text[len(text) - keep // 3 :]


def plural(count: int, word: str, many: str = "") -> str:
    """``1 call``, ``2 calls`` (``many`` for irregular plurals)."""
    return f"{count:,} {word if count == 1 else many or word + 's'}"


def _char_cells(ch: str) -> int:
    import unicodedata  # here: only names that are not ASCII need it (not on every start)

    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """Terminal cells ``text`` takes (sanitised text: no controls): CJK and emoji take
    two, combining marks none."""
    return len(text) if text.isascii() else sum(map(_char_cells, text))


def head_within(text: str, cells: int) -> str:
    """The longest start of ``text`` that fits ``cells``."""
    if text.isascii():
        return text[: max(cells, 0)]
    used = 0
    for index, ch in enumerate(text):
        used += _char_cells(ch)
        if used > cells:
            return text[:index]
    return text


def tail_within(text: str, cells: int) -> str:
    """The longest end of ``text`` that fits ``cells``."""
    if cells <= 0:
        return ""
    if text.isascii():
        return text[len(text) - cells :]
    return head_within(text[::-1], cells)[::-1]


def pad_cells(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` cells (``str.ljust`` counts characters:
    a wide character would push the columns after it)."""
    return text + " " * max(width - cell_width(text), 0)


def elide_middle_text(text: str, width: int) -> str:
    """``text`` in ``width`` cells by dropping its middle (head two thirds, tail one
    third): long names differ at both ends more often than in the middle.  Two-cell
    characters count as two (one that would straddle a cut goes: the result may be a
    cell short)."""
    if cell_width(text) <= width:
        return text
    if width < 8:  # too narrow for a head and a tail: the head, marked as cut
        return head_within(text, width - 1) + "…" if width >= 2 else head_within(text, width)
    head = head_within(text, width - 1 - (width - 1) // 3)
    return head + "…" + tail_within(text, width - 1 - cell_width(head))  # a cell the head left goes to the tail


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


def distinct_elisions(names: list[str], width: int) -> dict[int, str]:
    """For the names whose middle-elided form (``elide_middle_text``) would read the
    same as another name's, a form that keeps where they differ: the head, an ellipsis,
    a window from just before the first differing character, an ellipsis, the tail.
    Two different rows never look the same (where ``width`` leaves room to tell).
    Each distinct name is elided once, however many rows carry it (the drill-down's
    thread column: 200,000 rows of seven threads took 1.3-1.8 s, one pass per row)."""
    out: dict[int, str] = {}
    if width < 12:
        return out
    rows_of: dict[str, list[int]] = {}
    for index, name in enumerate(names):
        rows_of.setdefault(name, []).append(index)
    groups: dict[str, list[str]] = {}
    for name in rows_of:
        if cell_width(name) > width:
            groups.setdefault(elide_middle_text(name, width), []).append(name)
    for originals in groups.values():
        if len(originals) < 2:
            continue
        for name in originals:
            shown = _where_it_differs(name, [other for other in originals if other != name], width)
            for index in rows_of[name]:
                out[index] = shown
    return out


def _where_it_differs(name: str, others: list[str], width: int) -> str:
    """``name`` in ``width`` cells: its head, a window from just before where it first
    differs from ``others``, its tail."""
    differs_at = max(_common_prefix(name, other) for other in others)
    head, tail = max(4, width // 4), max(3, width // 6)  # in cells, as the window
    window = width - head - tail - 2
    head_text, tail_text = head_within(name, head), tail_within(name, tail)
    # the window starts a quarter of its cells before the first difference, and ends
    # before the tail at the latest (all in characters that fit the cells: a wide
    # character takes two)
    before_difference = len(tail_within(name[:differs_at], window // 4))
    last_start = len(name) - len(tail_text) - len(tail_within(name[: len(name) - len(tail_text)], window))
    start = max(len(head_text), min(differs_at - before_difference, last_start))
    if start <= len(head_text) + 1:
        return head_within(name, head + window + 1) + "…" + tail_text
    return head_text + "…" + head_within(name[start:], window) + "…" + tail_text
