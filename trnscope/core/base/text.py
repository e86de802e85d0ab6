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
