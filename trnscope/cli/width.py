"""The width text output is laid out for."""

from __future__ import annotations

import contextlib
import os
import sys


def output_width() -> int:
    """Columns of the terminal, else $COLUMNS, else 160 (pipes)."""
    if sys.stdout.isatty():
        with contextlib.suppress(OSError):
            return os.get_terminal_size().columns
    try:
        return max(40, int(os.environ.get("COLUMNS", "160")))
    except ValueError:
        return 160
