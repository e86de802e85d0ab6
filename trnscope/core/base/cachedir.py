"""Where trnscope keeps what it derives from input files (never next to them).

The cache root holds a ``CACHEDIR.TAG`` written when trnscope creates it; ``cache
clear`` refuses a root without it and removes only entries that carry trnscope's own
names (so a ``TRNSCOPE_CACHE_DIR`` pointed at a folder of the user's loses nothing).
The cache is capped (``TRNSCOPE_CACHE_MAX_BYTES``, default 2 GiB): after each write the
least recently used entries go first.

No msgspec here, and ``shutil`` and ``tempfile`` only where they are used: a command's
gzip child (``formats.inflate_ahead``) names and writes its copy with this module in the
process's first milliseconds, and every millisecond of imports before it is forked is
one the load may later wait for.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import time
from pathlib import Path
from typing import NamedTuple

try:  # BLAKE2 itself: ``hashlib`` would first load OpenSSL's bindings (~3 ms of every start)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b

from trnscope.core.base.errors import TrnscopeError
from trnscope.core.base.settings import cache_root, max_cache_bytes

_SAMPLE = 1 << 20
_MIDDLE_SAMPLES = 16
_MIDDLE_BLOCK = 64 << 10
MARKER = "CACHEDIR.TAG"
MARKER_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This directory holds trnscope's caches; `trnscope cache clear` empties it.\n"
)
# The entries trnscope writes, per kind of cache: only these are counted, evicted or cleared.
# (Patterns, compiled by ``re``'s own cache when an entry is first matched.)
_OWN_ENTRIES = {
    "plain": r"^(\.?[0-9a-f]{32}(\.json|\.meta|\.\d+\.tmp|\.nocache\.\d+\.json))$",
    "index": r"^([0-9a-f]{32}\.idx|\.idx-.*\.tmp)$",
    "neuron-export": r"^[0-9a-f]{24}$",
    "clipboard": r"^chain-[A-Za-z0-9._-]{0,60}-\d+\.txt$",
}


class CacheEntry(NamedTuple):
    """One of trnscope's own entries (a tuple, not a msgspec struct: see the module's
    docstring)."""

    path: str
    size: int
    used: float  # mtime: set on write and on each use


def name_for(text: str) -> str:
    """A file name for ``text``: 32 hex digits of its BLAKE2b hash."""
    return blake2b(text.encode(), digest_size=16).hexdigest()


def fingerprint(path: Path) -> str:
    """Identity and content of a file: size, mtime, ctime, inode and device, and a hash
    of its first and last megabyte and of blocks spread through the middle.  Any
    rewrite, replacement or truncation changes it; an in-place edit that restores size
    and mtime still changes ctime (which no user can set)."""
    stat = path.stat()
    digest = blake2b(digest_size=16)
    digest.update(f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}:{stat.st_ino}:{stat.st_dev}".encode())
    with open(path, "rb") as fh:
        digest.update(fh.read(_SAMPLE))
        if stat.st_size > 2 * _SAMPLE:
            span = stat.st_size - 2 * _SAMPLE
            for k in range(_MIDDLE_SAMPLES):
                fh.seek(_SAMPLE + span * k // _MIDDLE_SAMPLES)
                digest.update(fh.read(_MIDDLE_BLOCK))
        if stat.st_size > _SAMPLE:
            fh.seek(max(_SAMPLE, stat.st_size - _SAMPLE))
            digest.update(fh.read(_SAMPLE))
    return digest.hexdigest()


def _has_marker(root: Path) -> bool:
    try:
        return (root / MARKER).read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    except OSError:
        return False


def _ensure_root(root: Path) -> None:
    """Create the root (private to the user) and tag it, unless it is someone's folder.
    Several processes may do this at once (``compare``'s read-ahead children on a fresh
    machine): the second to create it is not refused (it was, and its copy then went to
    memory instead)."""
    if not root.exists():
        root.mkdir(parents=True, mode=0o700, exist_ok=True)
    if not _has_marker(root) and not any(p.name != MARKER for p in root.iterdir()):
        (root / MARKER).write_text(MARKER_TEXT)


def writable_dir(kind: str) -> Path | None:
    """``cache_root()/kind``, created; None if caching is off or the folder cannot be written."""
    if kind not in _OWN_ENTRIES:
        raise ValueError(f"unknown cache kind {kind!r}")
    if max_cache_bytes() == 0:
        return None
    root = cache_root()
    folder = root / kind
    try:
        _ensure_root(root)
        folder.mkdir(parents=True, exist_ok=True)
        _probe(folder)
    except OSError:
        return None
    return folder


_probes = itertools.count()  # (two threads of one process probing at once: distinct names)


def _probe(folder: Path) -> None:
    """Create and remove a file in ``folder``; OSError if it cannot be written."""
    probe = folder / f".probe-{os.getpid()}-{next(_probes)}-{time.monotonic_ns()}"
    os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    os.unlink(probe)


def atomic_write_bytes(target: Path, data: bytes) -> None:
    """Write through a temporary file in the same folder and rename it into place, so
    readers see the old file or the new one, never half of one."""
    import tempfile

    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as fh:
            fh.write(data)
        os.chmod(temp, 0o666 & ~_umask())  # mkstemp makes 0600; give it the usual mode
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def touch(path: Path) -> None:
    """Mark a cache entry as just used (least recently used entries are evicted first)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def _size(path: Path) -> int:
    if path.is_dir() and not path.is_symlink():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return path.lstat().st_size


def cache_entries() -> list[CacheEntry]:
    """trnscope's own entries under the cache root (files, and export folders as one)."""
    root = cache_root()
    entries: list[CacheEntry] = []
    for kind, pattern in _OWN_ENTRIES.items():
        folder = root / kind
        try:
            children = list(folder.iterdir())
        except OSError:
            continue
        for child in children:
            if not re.match(pattern, child.name) or child.is_symlink():
                continue
            try:
                entries.append(CacheEntry(str(child), _size(child), child.lstat().st_mtime))
            except OSError:
                continue
    return entries


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        import shutil

        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def enforce_cap(keep: Path | None = None) -> int:
    """Evict least recently used entries until the cache is within its cap; ``keep``
    (the entry just written) stays.  Returns bytes freed."""
    cap = max_cache_bytes()
    entries = sorted(cache_entries(), key=lambda e: e.used)
    total = sum(e.size for e in entries)
    freed = 0
    for entry in entries:
        if total <= cap:
            break
        if keep is not None and Path(entry.path) == keep:
            continue
        _remove(Path(entry.path))
        total -= entry.size
        freed += entry.size
    return freed


def clear_cache() -> int:
    """Remove trnscope's own entries; returns bytes freed.  Refuses a root that
    trnscope did not create (no CACHEDIR.TAG of its own)."""
    root = cache_root()
    if not root.exists():
        return 0
    if not _has_marker(root):
        raise TrnscopeError(f"{root} was not created by trnscope (it has no {MARKER} of trnscope's); not clearing it")
    freed = 0
    for entry in cache_entries():
        _remove(Path(entry.path))
        freed += entry.size
    for kind in _OWN_ENTRIES:
        with contextlib.suppress(OSError):
            (root / kind).rmdir()  # only when empty: a file of someone else's stays
    return freed


def cache_size() -> tuple[int, int]:
    """(entries, bytes) of trnscope's own entries under the cache root."""
    entries = cache_entries()
    return len(entries), sum(e.size for e in entries)
