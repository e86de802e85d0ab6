"""The decompressed copy of a gzip trace, in the cache folder.

A gzip trace is decompressed once into ``cache_root()/plain`` so that decode workers can
map it and later reads of one event's ``args`` can seek in it.  With the cache in use
the copy is kept (``KEY.json``, with ``KEY.meta`` recording its size, CRC and damage)
and reused after its CRC is checked; with ``--no-cache`` it is private to the process
that owns it (``KEY.nocache.PID.json``) and removed when that process ends.  Copies and
temporary files of processes that no longer exist (a SIGKILL runs no exit handler) are
swept.  Nothing here imports NumPy or msgspec: a child process forked in the command's
first milliseconds, before either is loaded, writes copies with it (``inflate_ahead``;
msgspec's import alone is ~20 ms, which the child would otherwise wait for).  The record
is three fields of JSON, read and written with the standard library's ``json``.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import os
import re
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from trnscope.core.base.cachedir import enforce_cap, fingerprint, name_for, touch
from trnscope.core.base.errors import InputError, LoadCancelled
from trnscope.core.base.fs import process_alive
from trnscope.core.base.settings import max_inflate_ratio

GZIP_MAGIC = b"\x1f\x8b"
_READ_BLOCK = 4 << 20
_INFLATE_FLOOR = 16 << 20  # tiny files may always inflate this far
_MAX_STEP = 1 << 20  # most output one decompress call returns: bounds the memory a gzip file needs here
# Compressed input is fed in pieces of this size: a call that stops at ``_MAX_STEP`` of
# output returns the rest of its input as a new ``unconsumed_tail`` (a copy), so a whole
# 4 MiB block fed at once was copied again for every MiB of output — some 100 MB of
# copies for a 62 MB trace (xDiT's gunzip: 76 → 53 ms without its writes).
_FEED = 256 << 10

Progress = Callable[..., None]  # (phase, bytes done, bytes total[, events decoded])


class CopyRecord(NamedTuple):
    """``KEY.meta``: what a kept copy must be to be used.  (Tuples here, not msgspec
    structs: see the module's docstring.)"""

    plain_bytes: int
    damage: str
    crc32: int  # of the decompressed bytes: the copy is checked before use

    def encode(self) -> bytes:
        return json.dumps(self._asdict(), separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> CopyRecord | None:
        """The record in ``data``, or None for anything but exactly its three fields
        with their types (a hand-edited or damaged record is not used)."""
        try:
            fields = json.loads(data)
        except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
            return None
        if not isinstance(fields, dict) or set(fields) != set(cls._fields):
            return None
        size, damage, crc = fields["plain_bytes"], fields["damage"], fields["crc32"]
        if type(size) is not int or type(crc) is not int or not isinstance(damage, str):
            return None
        return cls(size, damage, crc)


class Copy(NamedTuple):
    """A decompressed copy on disk, and why decompression stopped early ("" if it did not)."""

    path: str
    damage: str


def open_read(path: Path) -> Any:
    try:
        return open(path, "rb")
    except PermissionError:
        raise InputError(f"permission denied: {path}") from None
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None


def _inflate_limit(size: int) -> int:
    return max(_INFLATE_FLOOR, int(size * max_inflate_ratio()))


def _crc_of(path: Path) -> int:
    crc = 0
    with open(path, "rb") as fh:
        while block := fh.read(_READ_BLOCK):
            crc = zlib.crc32(block, crc)
    return crc


_PRIVATE_COPIES: list[Path] = []  # --no-cache copies of this process, removed at exit


def keep_until_exit(copy: Path) -> None:
    """A private copy of this process: removed when it exits."""
    _PRIVATE_COPIES.append(copy)


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


def _record_path(folder: Path, key: str) -> Path:
    return folder / f"{key}.meta"


def _read_record(meta: Path) -> CopyRecord | None:
    try:
        return CopyRecord.decode(meta.read_bytes())
    except OSError:
        return None


def _recorded(folder: Path, key: str) -> tuple[Path, CopyRecord] | None:
    """The kept copy and its record, when a copy of the recorded size is there."""
    target = folder / f"{key}.json"
    record = _read_record(_record_path(folder, key))
    try:
        if record is not None and target.stat().st_size == record.plain_bytes:
            return target, record
    except OSError:
        pass
    return None


def is_recorded(folder: Path, key: str) -> bool:
    """Whether a kept copy of the recorded size exists (not yet checked against its CRC)."""
    return _recorded(folder, key) is not None


def usable_copy(folder: Path, key: str) -> Copy | None:
    """The kept copy, if it is there and its CRC matches its record (an edited copy is
    not used); marked as just used."""
    found = _recorded(folder, key)
    if found is None:
        return None
    target, record = found
    if _crc_of(target) != record.crc32:
        return None
    touch(target)
    return Copy(str(target), record.damage)


def copy_key(path: Path, *, keep: bool) -> str:
    """The name of ``path``'s copy: for a kept copy, the file's identity and content
    (``fingerprint``: a later open must not reuse it for another file); for a private
    copy, which lives only as long as its process, the file's identity alone (no reads,
    no hashing of its content under ``--no-cache``)."""
    if keep:
        return fingerprint(path)
    info = path.stat()
    return name_for(f"{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}")


def copy_paths(folder: Path, key: str, owner: int, *, keep: bool) -> tuple[Path, Path]:
    """Where a copy goes and the temporary file it is written through: a kept copy, or
    one private to ``owner``, the process that removes it."""
    target = folder / (f"{key}.json" if keep else f"{key}.nocache.{owner}.json")
    return target, folder / f".{key}.{owner}.tmp"


def write_copy(
    path: Path,
    size: int,
    folder: Path,
    key: str,
    owner: int,
    *,
    keep: bool,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Copy | None:
    """Decompress ``path`` into the folder: a kept copy with its record (``keep``), else
    a private copy named after ``owner``, the process that removes it.  None when the
    folder has no room (the caller keeps the text in memory instead)."""
    target, temp = copy_paths(folder, key, owner, keep=keep)
    try:
        crc = 0
        with open(temp, "wb") as out:

            def write_and_check(data: bytes) -> None:
                nonlocal crc
                out.write(data)
                crc = zlib.crc32(data, crc)

            # a private copy (removed at exit) is never checked: no CRC for it
            damage = inflate(path, size, write_and_check if keep else out.write, progress, cancelled)
        if not keep and owner == os.getpid():
            # removed at exit from the moment it exists: a SIGTERM between the rename
            # and the caller taking the copy would otherwise leave it behind
            keep_until_exit(target)
        os.replace(temp, target)
        if keep:
            record = CopyRecord(target.stat().st_size, damage, crc)
            _record_path(folder, key).write_bytes(record.encode())
            enforce_cap(keep=target)
        return Copy(str(target), damage)
    except OSError as error:
        temp.unlink(missing_ok=True)
        if error.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
            raise InputError(f"cannot decompress {path}: {error.strerror or error}") from None
        return None
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def inflate(  # noqa: C901 - gzip members, bomb limit, damage and cancellation in one streaming loop
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
    with open_read(path) as fh:
        while True:
            if cancelled is not None and cancelled():
                raise LoadCancelled()
            block = fh.read(_READ_BLOCK)
            if not block:
                break
            block_start, done = done, done + len(block)
            for piece_start in range(0, len(block), _FEED):
                data = block[piece_start : piece_start + _FEED]
                piece_end = block_start + piece_start + len(data)
                if not fed and not data.strip(b"\x00"):
                    continue  # zeros after the last member (padding): not a member
                while data:
                    try:
                        # bounded: never more than the limit allows, so a bomb stops early
                        out = decomp.decompress(data, min(limit - written + 1, _MAX_STEP))
                    except zlib.error as error:
                        return f"gzip data corrupt near compressed byte {piece_end - len(data):,} ({error})"
                    fed = True
                    if out:
                        if written + len(out) > limit:
                            write(out[: limit - written])
                            return (
                                f"decompression stopped at {limit / 1e6:,.0f} MB, {max_inflate_ratio():g}× the "
                                "compressed size (a gzip bomb?); set TRNSCOPE_MAX_INFLATE_RATIO to allow more"
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
