"""File-system questions that never raise: discovery walks folders other people own
(an unreadable entry, a dangling link or ``/proc`` is skipped, not fatal)."""

from __future__ import annotations

import os
from pathlib import Path


def is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def process_alive(pid: int) -> bool:
    """Whether a process with this pid exists (anyone's).  Files named after a process
    are swept only when it is gone; a reused pid keeps them, which errs on the safe side."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, another user's
    return True
