"""The width text output is laid out for."""

from __future__ import annotations

import contextlib
import os
import sys

MIN_WIDTH = 40
MAX_WIDTH = 4000  # wider than any terminal; a timeline of more cells is slow and unreadable


def output_width() -> int:
    """Columns of the terminal, else $COLUMNS, else 160 (pipes); a $COLUMNS past
    ``MAX_WIDTH`` (or below ``MIN_WIDTH``) is clamped, and a line on stderr says so."""
    if sys.stdout.isatty():
        with contextlib.suppress(OSError):
            return max(MIN_WIDTH, min(os.get_terminal_size().columns, MAX_WIDTH))
    text = os.environ.get("COLUMNS", "").strip()
    if not text:
        return 160
    try:
        asked = int(text) if len(text) <= 12 else MAX_WIDTH + 1
    except ValueError:
        return 160
    width = max(MIN_WIDTH, min(asked, MAX_WIDTH))
    if width != asked:
        shown = text if len(text) <= 24 else text[:21] + "…"
        sys.stderr.write(f"trnscope: COLUMNS={shown} is outside {MIN_WIDTH}–{MAX_WIDTH:,}: laid out for {width:,}\n")
    return width
