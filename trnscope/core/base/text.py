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
from functools import lru_cache
from itertools import pairwise

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


@lru_cache(maxsize=4096)
def _char_cells(ch: str) -> int:
    import unicodedata  # here: only names that are not ASCII need it (not on every start)

    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


# Each distinct character of a text is looked at once, not each of its characters: a
# stack key of a thousand characters with one "←" in it is otherwise a Python call per
# character (grouping xDiT by stack measured 3.3 million of them, 1.6 s).
_NOT_ASCII = re.compile("[^\x00-\x7f]")


def _one_cell_each(text: str) -> bool:
    """Whether every character of ``text`` takes one cell (then characters are cells)."""
    return text.isascii() or all(_char_cells(ch) == 1 for ch in set(_NOT_ASCII.findall(text)))


def cell_width(text: str) -> int:
    """Terminal cells ``text`` takes (sanitised text: no controls): CJK and emoji take
    two, combining marks none."""
    if text.isascii():
        return len(text)
    width = len(text)
    for ch in set(_NOT_ASCII.findall(text)):
        if (cells := _char_cells(ch)) != 1:
            width += (cells - 1) * text.count(ch)
    return width


def head_within(text: str, cells: int) -> str:
    """The longest start of ``text`` that fits ``cells``."""
    return _head(text, cells, _one_cell_each(text))


def tail_within(text: str, cells: int) -> str:
    """The longest end of ``text`` that fits ``cells``."""
    return _tail(text, cells, _one_cell_each(text))


# The helpers below take ``narrow``: whether every character of the text takes one cell,
# found once per name (any part of such a name is narrow too) and not again on each of
# the slices an elision cuts.


def _head(text: str, cells: int, narrow: bool) -> str:
    if narrow:
        return text[: max(cells, 0)]
    used = 0
    for index, ch in enumerate(text):
        used += _char_cells(ch)
        if used > cells:
            return text[:index]
    return text


def _tail(text: str, cells: int, narrow: bool) -> str:
    if cells <= 0:
        return ""
    if narrow:
        return text[max(len(text) - cells, 0) :]
    return _head(text[::-1], cells, False)[::-1]


def pad_cells(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` cells (``str.ljust`` counts characters:
    a wide character would push the columns after it)."""
    return text + " " * max(width - cell_width(text), 0)


def elide_middle_text(text: str, width: int) -> str:
    """``text`` in ``width`` cells by dropping its middle (head two thirds, tail one
    third): long names differ at both ends more often than in the middle.  Two-cell
    characters count as two (one that would straddle a cut goes: the result may be a
    cell short)."""
    narrow = _one_cell_each(text)
    return _elide_middle(text, width, narrow, len(text) if narrow else cell_width(text))


def _elide_middle(text: str, width: int, narrow: bool, cells: int) -> str:
    if cells <= width:
        return text
    if width < 8:  # too narrow for a head and a tail: the head, marked as cut
        return _head(text, width - 1, narrow) + "…" if width >= 2 else _head(text, width, narrow)
    if not narrow:
        head = _head(text, width - 1 - (width - 1) // 3, narrow)
        # a cell the head left goes to the tail
        return head + "…" + _tail(text, width - 1 - cell_width(head), narrow)
    # one cell a character: positions are cells.  Neither cut splits a number ("f32[8,
    # 256,102…" read as a shape of 102): the head's end moves right to take all of it
    # (from the tail's cells, leaving it three) or else left out of it, the tail's
    # start left to take all of it (from the head's cells) or else right past it
    end = width - 1 - (width - 1) // 3
    if _splits(text, end):
        whole = _off_a_number(text, end, +1)
        end = whole if whole != end and width - 1 - whole >= 3 else _off_a_number(text, end, -1)
    start = len(text) - (width - 1 - end)
    if _splits(text, start):
        whole = _off_a_number(text, start, -1)
        shorter = _off_a_number(text, end - (start - whole), -1)
        if whole != start and shorter >= 1:
            end, start = shorter, whole
        else:
            start = _off_a_number(text, start, +1)
    return text[:end] + "…" + text[start:]


_NUMBER_GIVES = 5  # a cut moves this far at most to keep a number whole (a longer one is cut)


def _off_a_number(text: str, cut: int, way: int) -> int:
    """``cut`` (a position between two characters of ``text``) moved ``way`` (-1: left,
    +1: right) until it splits no number, by ``_NUMBER_GIVES`` at most and never to an
    end of the text (else where it was: a head or tail of nothing tells less)."""
    moved = cut
    while _splits(text, moved):
        moved += way
        if abs(moved - cut) > _NUMBER_GIVES:
            return cut
    return moved if 0 < moved < len(text) or moved == cut else cut


def _splits(text: str, cut: int) -> bool:
    """Whether a cut at ``cut`` (between two characters) falls inside a number."""
    return 0 < cut < len(text) and _numeric(text, cut - 1) and text[cut].isdigit()


def _numeric(text: str, index: int) -> bool:
    """Whether ``text[index]`` is part of a number: a digit, or a minus sign that starts
    one ("thread -1029147072" must not read as a positive id)."""
    ch = text[index]
    return ch.isdigit() or (
        ch == "-"
        and index + 1 < len(text)
        and text[index + 1].isdigit()
        and (index == 0 or not text[index - 1].isalnum())
    )


def _common_prefix(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share from their start: a binary search on
    slices, which compare in C (a loop over characters took seconds on stack keys that
    share thousands of them)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


# how many times a group of look-alikes is elided again where the forms chosen still
# read the same (each time only the names that still do)
_TELL_APART_ROUNDS = 4


def distinct_elisions(names: list[str], width: int) -> dict[int, str]:
    """For the names whose middle-elided form (``elide_middle_text``) would read the
    same as another name's, a form that keeps where they differ: the head, an ellipsis,
    a window from just before the first differing character, an ellipsis, the tail.
    Two different names of a column never read the same (where ``width`` leaves room to
    tell): not even where their rows differ in another column, since two stacks or two
    launching ops that read the same say they are the same.  Each distinct name is
    elided once, however many rows carry it (the drill-down's thread column: 200,000
    rows of seven threads took 1.3-1.8 s, one pass per row)."""
    out: dict[int, str] = {}
    if width < 8:
        return out
    rows_of: dict[str, list[int]] = {}
    for index, name in enumerate(names):
        rows_of.setdefault(name, []).append(index)
    narrow_names: set[str] = set()
    alike_groups = _look_alike_groups(rows_of, width, narrow_names)
    if any(len(alike) > 1 for alike in alike_groups.values()):
        told = (
            _told_apart(alike_groups, width, narrow_names)
            if width >= _WINDOW_FROM
            else _cut_moved(alike_groups, width, narrow_names, rows_of)
        )
        for name, form in told.items():
            for index in rows_of[name]:
                out[index] = form
    return out


def _cuts_a_number(name: str, head_end: int, tail_start: int) -> bool:
    """Whether keeping ``name[:head_end]`` and ``name[tail_start:]`` splits a number
    ("f32[8,25…" would read as a shape of 25)."""
    return any(0 < at < len(name) and name[at - 1].isdigit() and name[at].isdigit() for at in (head_end, tail_start))


_WINDOW_FROM = 12  # the narrowest column a head, a window where names differ and a tail fit in
# more names than this reading alike in 8-11 cells are not told apart by a moved cut
# (no split of so few cells can: 200,000 took 0.9 s to find that out)
_CUT_MOVED_MOST = 64


def _cut_moved(
    alike_groups: dict[str, list[str]], width: int, narrow_names: set[str], rows_of: dict[str, list[int]]
) -> dict[str, str]:
    """Forms for names too narrow for a window (8-11 cells; ``aten::rms_norm`` and
    ``aten::_fused_rms_norm`` both read ``aten::…orm`` in a compare table's 10): the
    same head and tail with the cut moved, to the split nearest the usual one (two
    thirds head) at which every name of a group reads differently, and unlike any other
    name shown.  A group of names with wide characters, or one no split tells apart,
    keeps its middle elision."""
    # every form that may be shown: the middle elisions (a group not told apart keeps
    # its own) and the names shown whole
    shown = set(alike_groups) | {name for name in rows_of if name not in narrow_names and len(name) <= width}
    usual = width - 1 - (width - 1) // 3
    heads = sorted(range(1, width - 1), key=lambda head: (abs(head - usual), -head))
    out: dict[str, str] = {}
    for names in alike_groups.values():
        if not 2 <= len(names) <= _CUT_MOVED_MOST or not all(name in narrow_names for name in names):
            continue
        for head in heads:
            tail = width - 1 - head
            if any(_cuts_a_number(name, head, len(name) - tail) for name in names):
                continue
            forms = {name: f"{name[:head]}…{name[-tail:]}" for name in names}
            distinct = set(forms.values())
            if len(distinct) == len(names) and not distinct & shown:
                out.update(forms)
                shown |= distinct
                break
    return out


def _look_alike_groups(rows_of: dict[str, list[int]], width: int, narrow_names: set[str]) -> dict[str, list[str]]:
    """The names wider than ``width`` by their middle elision; ``narrow_names`` gets
    those of one cell a character."""
    groups: dict[str, list[str]] = {}
    for name in rows_of:
        narrow = _one_cell_each(name)
        cells = len(name) if narrow else cell_width(name)
        if cells > width:
            groups.setdefault(_elide_middle(name, width, narrow, cells), []).append(name)
            if narrow:
                narrow_names.add(name)
    return groups


def _told_apart(alike_groups: dict[str, list[str]], width: int, narrow_names: set[str]) -> dict[str, str]:
    """Forms for names (grouped by their middle elision) that tell them apart: each
    name of a group shows where it differs from the name of its group it is most alike.
    Where forms still read the same (shortened for the window, the heads and tails of
    two groups can meet; two names alike at their ends can each be shown where they
    differ from another neighbour), those names are shown where they differ from each
    other, for a few rounds; the round that left the fewest names reading alike is kept
    (a window too narrow to show two differences at once can make a round worse).
    Returns the forms of the names that were told apart."""
    forms = {name: form for form, names in alike_groups.items() for name in names}
    pending = [names for names in alike_groups.values() if len(names) > 1]
    best: dict[str, str] = {}
    fewest = len(forms) + 1
    told: set[str] = set()
    for _ in range(_TELL_APART_ROUNDS):
        for names in pending:
            # where a name first differs from all the others is where it differs from
            # its neighbours in sorted order (the longest common start with any other
            # name is with one of them): one comparison per name, not one per pair
            # (grouped by stack at 160 columns, xDiT's 6,532 stack keys took 4 s)
            ordered = sorted(names)
            shared = [_common_prefix(a, b) for a, b in pairwise(ordered)]
            for k, name in enumerate(ordered):
                differs_at = max(shared[k - 1] if k else 0, shared[k] if k < len(shared) else 0)
                forms[name] = _where_it_differs(name, differs_at, width, name in narrow_names)
                told.add(name)
        readers: dict[str, list[str]] = {}
        for name, form in forms.items():
            readers.setdefault(form, []).append(name)
        pending = [names for names in readers.values() if len(names) > 1]
        reading_alike = sum(map(len, pending))
        if reading_alike < fewest:
            best, fewest = {name: forms[name] for name in told}, reading_alike
        if not pending:
            break
    return best


def _where_it_differs(name: str, differs_at: int, width: int, narrow: bool) -> str:
    """``name`` in ``width`` cells: its head, a window from just before
    ``differs_at`` (where it first differs from the names that would read the same),
    its tail."""
    head, tail = max(4, width // 4), max(3, width // 6)  # in cells, as the window
    window = width - head - tail - 2
    head_text, tail_text = _head(name, head, narrow), _tail(name, tail, narrow)
    # the window starts a quarter of its cells before the first difference, and ends
    # before the tail at the latest (all in characters that fit the cells: a wide
    # character takes two)
    before_difference = len(_tail(name[:differs_at], window // 4, narrow))
    last_start = len(name) - len(tail_text) - len(_tail(name[: len(name) - len(tail_text)], window, narrow))
    start = max(len(head_text), min(differs_at - before_difference, last_start))
    if start <= len(head_text) + 1:
        return _head(name, head + window + 1, narrow) + "…" + tail_text
    shown = _head(name[start:], window, narrow)
    if narrow:  # the window starts and ends outside a number where it still shows the difference
        whole = max(len(head_text) + 2, _off_a_number(name, start, -1))
        moved = name[whole : whole + len(shown)]
        moved = moved[: _off_a_number(name[whole : whole + len(moved) + 1], len(moved), -1)]
        if whole <= differs_at < whole + len(moved):
            start, shown = whole, moved
    return head_text + "…" + shown + "…" + tail_text


def wrap_words(text: str, width: int, indent: str, *, cut_long_words: bool = False) -> list[str]:
    """``text`` in lines of at most ``width`` cells (20 at least; a two-cell character
    counts two), each after ``indent``; a word longer than a line stands alone, whole,
    or with ``cut_long_words`` loses its middle (a compiled graph's 52-character hash,
    a NEFF's path: never a figure)."""
    out, line, used = [], "", 0
    for word in text.split():
        cells = cell_width(word)
        if cut_long_words and cells > max(width, 20):
            word = elide_middle_text(word, max(width, 20))
            cells = cell_width(word)
        if line and used + 1 + cells > max(width, 20):
            out.append(indent + line)
            line, used = word, cells
        else:
            line, used = (f"{line} {word}", used + 1 + cells) if line else (word, cells)
    if line:
        out.append(indent + line)
    return out
