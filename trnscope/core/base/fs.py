"""File-system questions that never raise: discovery walks folders other people own
(an unreadable entry, a dangling link or ``/proc`` is skipped, not fatal)."""

from __future__ import annotations

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
