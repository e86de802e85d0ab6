"""Open an input file as plain JSON bytes, whatever it is stored as.

Plain files are memory-mapped read-only.  Gzip files are decompressed once into the
user cache directory (so later chunks can be re-read for lazy ``args``); a cut or
corrupt gzip stream keeps everything decompressed before the damage and says so.
Input files are only ever opened for reading.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import mmap
import os
import re
import stat
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from trnscope.core.base.cachedir import enforce_cap, fingerprint, touch, writable_dir
from trnscope.core.base.errors import InputError, LoadCancelled
from trnscope.core.base.fs import process_alive
from trnscope.core.base.settings import max_inflate_ratio

GZIP_MAGIC = b"\x1f\x8b"
_READ_BLOCK = 4 << 20

Progress = Callable[..., None]  # (phase, bytes done, bytes total[, events decoded])


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


def _open_read(path: Path) -> Any:
    try:
        return open(path, "rb")
    except PermissionError:
        raise InputError(f"permission denied: {path}") from None
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None


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
    with _open_read(path) as fh:
        magic = fh.read(2)
    if magic == GZIP_MAGIC:
        return _open_gzip(path, info.st_size, progress, cancelled, reuse)
    with _open_read(path) as fh:
        try:
            buffer = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            buffer = fh.read()
    return PlainSource(str(path), str(path), buffer, info.st_size, compressed=False)


class _GzipCacheEntry(msgspec.Struct):
    plain_bytes: int
    damage: str
    crc32: int  # of the decompressed bytes: the copy is checked before use


_INFLATE_FLOOR = 16 << 20  # tiny files may always inflate this far
_MAX_STEP = 1 << 20  # most output one decompress call returns: bounds the memory a gzip file needs here


def _inflate_limit(size: int) -> int:
    return max(_INFLATE_FLOOR, int(size * max_inflate_ratio()))


def _crc_of(path: Path) -> int:
    crc = 0
    with open(path, "rb") as fh:
        while block := fh.read(_READ_BLOCK):
            crc = zlib.crc32(block, crc)
    return crc


_PRIVATE_COPIES: list[Path] = []  # --no-cache copies of this process, removed at exit


@atexit.register
def _remove_private_copies() -> None:
    for copy in _PRIVATE_COPIES:
        with contextlib.suppress(OSError):
            copy.unlink()


# what a process that was killed (SIGKILL runs no exit handler) leaves in the plain cache:
# its --no-cache copies and the temporary file of a copy it was writing
_ORPHAN_NAMES = re.compile(r"^(?:[0-9a-f]{32}\.nocache\.(\d+)\.json|\.[0-9a-f]{32}\.(\d+)\.tmp)$")


def sweep_orphaned_copies(folder: Path) -> int:
    """Remove the copies and temporary files of processes that no longer exist (named
    after their process: trnscope's own names, in trnscope's own cache folder).  Returns
    how many."""
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    me = os.getpid()
    for name in names:
        match = _ORPHAN_NAMES.match(name)
        if match is None:
            continue
        owner = int(match.group(1) or match.group(2))
        if owner != me and not process_alive(owner):
            with contextlib.suppress(OSError):
                (folder / name).unlink()
                removed += 1
    return removed


def _open_gzip(
    path: Path, size: int, progress: Progress | None, cancelled: Callable[[], bool] | None, reuse: bool
) -> PlainSource:
    folder = writable_dir("plain")
    key = fingerprint(path)
    if folder is not None:
        sweep_orphaned_copies(folder)
        target = folder / (f"{key}.json" if reuse else f"{key}.nocache.{os.getpid()}.json")
        meta = folder / f"{key}.meta"
        entry = _read_entry(meta) if reuse else None
        usable = entry is not None and target.exists() and target.stat().st_size == entry.plain_bytes
        if usable and entry is not None and _crc_of(target) == entry.crc32:  # an edited copy is not used
            touch(target)
            return _map_cached(path, target, size, entry.damage)
        temp = folder / f".{key}.{os.getpid()}.tmp"
        try:
            crc = 0
            with open(temp, "wb") as out:

                def write_and_check(data: bytes) -> None:
                    nonlocal crc
                    out.write(data)
                    crc = zlib.crc32(data, crc)

                # a private copy (removed at exit) is never checked: no CRC for it
                damage = _inflate(path, size, write_and_check if reuse else out.write, progress, cancelled)
            os.replace(temp, target)
            if reuse:
                entry = _GzipCacheEntry(target.stat().st_size, damage, crc)
                meta.write_bytes(msgspec.json.encode(entry))
                enforce_cap(keep=target)
            else:
                _PRIVATE_COPIES.append(target)
            return _map_cached(path, target, size, damage)
        except OSError as error:
            temp.unlink(missing_ok=True)
            if error.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
                raise InputError(f"cannot decompress {path}: {error.strerror or error}") from None
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
    # No usable cache directory: keep the decompressed text in memory.
    parts: list[bytes] = []
    damage = _inflate(path, size, parts.append, progress, cancelled)
    data = b"".join(parts)
    if not data:
        raise InputError(f"gzip file holds no data: {path}" + (f" ({damage})" if damage else ""))
    return PlainSource(str(path), "", data, size, compressed=True, gzip_damage=damage)


def _read_entry(meta: Path) -> _GzipCacheEntry | None:
    try:
        return msgspec.json.decode(meta.read_bytes(), type=_GzipCacheEntry)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def _map_cached(path: Path, target: Path, size: int, damage: str) -> PlainSource:
    if target.stat().st_size == 0:
        raise InputError(f"gzip file holds no data: {path}" + (f" ({damage})" if damage else ""))
    with open(target, "rb") as fh:
        buffer = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return PlainSource(str(path), str(target), buffer, size, compressed=True, gzip_damage=damage)


def _inflate(  # noqa: C901 - gzip members, bomb limit, damage and cancellation in one streaming loop
    path: Path,
    size: int,
    write: Callable[[bytes], Any],
    progress: Progress | None,
    cancelled: Callable[[], bool] | None,
) -> str:
    """Stream-decompress every gzip member of ``path``; returns "" or what went wrong."""
    decomp = zlib.decompressobj(wbits=47)
    fed = False  # the current member has consumed input
    done = 0
    limit = _inflate_limit(size)
    written = 0
    with _open_read(path) as fh:
        while True:
            if cancelled is not None and cancelled():
                raise LoadCancelled()
            block = fh.read(_READ_BLOCK)
            if not block:
                break
            done += len(block)
            data = block
            while data:
                try:
                    # bounded: never more than the limit allows, so a bomb stops early
                    out = decomp.decompress(data, min(limit - written + 1, _MAX_STEP))
                except zlib.error as error:
                    return f"gzip data corrupt near compressed byte {done - len(data):,} ({error})"
                fed = True
                if out:
                    if written + len(out) > limit:
                        write(out[: limit - written])
                        return (
                            f"decompression stopped at {limit / 1e6:,.0f} MB, {max_inflate_ratio():g}× the compressed "
                            "size (a gzip bomb?); set TRNSCOPE_MAX_INFLATE_RATIO to allow more"
                        )
                    write(out)
                    written += len(out)
                if decomp.unconsumed_tail:
                    data = decomp.unconsumed_tail
                    continue
                if decomp.eof:
                    data = decomp.unused_data
                    decomp = zlib.decompressobj(wbits=47)
                    fed = False
                    if not data.strip(b"\x00"):
                        data = b""
                else:
                    data = b""
            if progress is not None:
                progress("decompress", done, size)
    if fed and not decomp.eof:
        tail = decomp.flush()
        if tail:
            write(tail)
        return "gzip stream ends early (file cut off)"
    return ""
