"""Open an input file as plain JSON bytes, whatever it is stored as.

Plain files are memory-mapped read-only.  Gzip files are decompressed once into the
user cache directory (``gzip_copy``: so later chunks can be re-read for lazy ``args``),
by a child process started before the rest of trnscope was imported when a command
asked for that (``inflate_ahead``); a cut or corrupt gzip stream keeps everything
decompressed before the damage and says so.  Input files are only ever opened for
reading.
"""

from __future__ import annotations

import mmap
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from trnscope.core.base.cachedir import writable_dir
from trnscope.core.base.errors import InputError
from trnscope.core.formats import inflate_ahead
from trnscope.core.formats.gzip_copy import (
    GZIP_MAGIC,
    Copy,
    Progress,
    copy_key,
    inflate,
    open_read,
    sweep_orphaned_copies,
    usable_copy,
    write_copy,
)

__all__ = ["GZIP_MAGIC", "PlainSource", "Progress", "check_readable_file", "open_plain"]


class PlainSource(msgspec.Struct):
    path: str  # what the user gave
    plain_path: str  # the plain JSON file the buffer maps ("" when held in memory)
    buffer: Any  # mmap or bytes
    file_bytes: int
    compressed: bool
    gzip_damage: str = ""  # why decompression stopped early, if it did

    def close(self) -> None:
        if isinstance(self.buffer, mmap.mmap):
            self.buffer.close()


# Sources opened before the rest of trnscope was imported (``remember_opened``: the
# command line's decode ahead), for the load that follows to take rather than open the
# file again (a read-ahead child's copy is claimed once).
_opened_ahead: list[tuple[tuple[int, int], bool, PlainSource]] = []


def remember_opened(info: os.stat_result, reuse: bool, source: PlainSource) -> None:
    """Keep ``source`` (the file ``info`` describes, opened with ``reuse``) for the next
    ``open_plain`` of that file."""
    _opened_ahead.append(((info.st_dev, info.st_ino), reuse, source))


def _take_opened(info: os.stat_result, reuse: bool) -> PlainSource | None:
    for entry in _opened_ahead:
        file_id, opened_with, source = entry
        if file_id == (info.st_dev, info.st_ino) and opened_with == reuse:
            _opened_ahead.remove(entry)
            return source
    return None


def check_readable_file(path: Path) -> os.stat_result:
    """Stat ``path`` and turn every way it can be unreadable into one clear line."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise InputError(f"no such file or directory: {path}") from None
    except PermissionError:
        raise InputError(f"permission denied: {path}") from None
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None
    mode = info.st_mode
    if stat.S_ISFIFO(mode):
        raise InputError(f"{path} is a FIFO, not a regular file; copy the trace to a file first")
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise InputError(f"{path} is a device, not a trace file")
    if stat.S_ISSOCK(mode):
        raise InputError(f"{path} is a socket, not a trace file")
    if not stat.S_ISREG(mode):
        raise InputError(f"{path} is not a regular file")
    if not os.access(path, os.R_OK):
        raise InputError(f"permission denied: {path}")
    return info


def open_plain(
    path: Path,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    *,
    reuse: bool = True,
) -> PlainSource:
    """``path`` as plain JSON bytes.  ``reuse``: a decompressed copy of a gzip file
    made earlier may be used (after its hash is checked); without it a fresh private
    copy is made and removed when the process ends (``--no-cache``)."""
    info = check_readable_file(path)
    if info.st_size == 0:
        raise InputError(f"empty file: {path}")
    opened = _take_opened(info, reuse) if _opened_ahead else None
    if opened is not None:
        return opened
    with open_read(path) as fh:
        magic = fh.read(2)
    if magic == GZIP_MAGIC:
        return _open_gzip(path, info, progress, cancelled, reuse)
    with open_read(path) as fh:
        try:
            buffer = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            buffer = fh.read()
    return PlainSource(str(path), str(path), buffer, info.st_size, compressed=False)


def _open_gzip(
    path: Path,
    info: os.stat_result,
    progress: Progress | None,
    cancelled: Callable[[], bool] | None,
    reuse: bool,
) -> PlainSource:
    size = info.st_size
    child = inflate_ahead.claim(info, keep=reuse)
    if child is not None:  # started before this process loaded the rest of trnscope
        copy = child.wait(progress, cancelled)
        if copy is not None:  # a private copy is removed at exit already (announced by the child)
            return _map_copy(path, copy, size)
    folder = writable_dir("plain")
    key = copy_key(path, keep=reuse)
    if folder is not None:
        sweep_orphaned_copies(folder)
        copy = usable_copy(folder, key) if reuse else None
        if copy is None:
            # a private copy is removed at exit from the moment it exists (write_copy)
            copy = write_copy(path, size, folder, key, os.getpid(), keep=reuse, progress=progress, cancelled=cancelled)
        if copy is not None:
            return _map_copy(path, copy, size)
    # No usable cache directory: keep the decompressed text in memory.
    parts: list[bytes] = []
    damage = inflate(path, size, parts.append, progress, cancelled)
    data = b"".join(parts)
    if not data:
        raise InputError(f"gzip file holds no data: {path}" + (f" ({damage})" if damage else ""))
    return PlainSource(str(path), "", data, size, compressed=True, gzip_damage=damage)


def _map_copy(path: Path, copy: Copy, size: int) -> PlainSource:
    target = Path(copy.path)
    if target.stat().st_size == 0:
        raise InputError(f"gzip file holds no data: {path}" + (f" ({copy.damage})" if copy.damage else ""))
    with open(target, "rb") as fh:
        buffer = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return PlainSource(str(path), str(target), buffer, size, compressed=True, gzip_damage=copy.damage)
