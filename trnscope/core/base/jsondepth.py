"""JSON nested deeper than anything the tool reads: bounded instead of fatal.

msgspec, like any recursive parser, stops with ``RecursionError`` somewhere past a
thousand levels, and it cannot skip a value without descending into it.  A file may
nest anything that deep (a hostile or broken writer), so every decode of file data that
can meet such a value goes through ``decode_bounded``: values deeper than
``MAX_DEPTH`` are replaced by ``null`` (and the caller is told), the rest decodes as
usual.  No field any reader needs is nested more than a few levels.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

MAX_DEPTH = 64
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def flatten_deep(data: bytes | bytearray, max_depth: int = MAX_DEPTH) -> bytes:
    """``data`` with every array or object that opens deeper than ``max_depth``
    replaced by ``null`` (strings are skipped whole, so brackets inside them do not count)."""
    out = bytearray()
    depth = 0
    kept_to = 0
    skip_from = -1
    for token in _TOKEN.finditer(data):
        char = token.group()[:1]
        if char in (b"[", b"{"):
            depth += 1
            if depth == max_depth + 1 and skip_from < 0:
                skip_from = token.start()
        elif char in (b"]", b"}"):
            if depth == max_depth + 1 and skip_from >= 0:
                out += data[kept_to:skip_from]
                out += b"null"
                kept_to = token.end()
                skip_from = -1
            depth -= 1
    out += data[kept_to:]
    return bytes(out)


def decode_bounded(data: bytes | bytearray | str, type: Any = Any) -> tuple[Any, bool]:
    """``data`` decoded as ``type``; (value, whether values past ``MAX_DEPTH`` were
    dropped).  Raises what msgspec raises for text that is not JSON or not ``type``."""
    raw = data.encode() if isinstance(data, str) else data
    try:
        return msgspec.json.decode(raw, type=type), False
    except RecursionError:
        return msgspec.json.decode(flatten_deep(raw), type=type), True
