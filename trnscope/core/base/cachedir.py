"""Where trnscope keeps what it derives from input files (never next to them)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

_SAMPLE = 1 << 20


def cache_root() -> Path:
    """``$TRNSCOPE_CACHE_DIR``, else ``$XDG_CACHE_HOME/trnscope``, else ``~/.cache/trnscope``."""
    explicit = os.environ.get("TRNSCOPE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "trnscope"


def fingerprint(path: Path) -> str:
    """Identity and content of a file: size, mtime, inode, and a hash of its first and
    last megabyte.  Any rewrite, replacement or truncation changes it."""
    stat = path.stat()
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ino}:{stat.st_dev}".encode())
    with open(path, "rb") as fh:
        digest.update(fh.read(_SAMPLE))
        if stat.st_size > _SAMPLE:
            fh.seek(max(_SAMPLE, stat.st_size - _SAMPLE))
            digest.update(fh.read(_SAMPLE))
    return digest.hexdigest()


def writable_dir(kind: str) -> Path | None:
    """``cache_root()/kind``, created; None if it cannot be created or written."""
    folder = cache_root() / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            pass
    except OSError:
        return None
    return folder


def atomic_write_bytes(target: Path, data: bytes) -> None:
    """Write through a temporary file in the same folder and rename it into place, so
    readers see the old file or the new one, never half of one."""
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


def clear_cache() -> int:
    """Remove everything under the cache root; returns bytes freed."""
    root = cache_root()
    if not root.exists():
        return 0
    freed = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    shutil.rmtree(root, ignore_errors=True)
    return freed


def cache_size() -> tuple[int, int]:
    """(files, bytes) under the cache root."""
    root = cache_root()
    if not root.exists():
        return 0, 0
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)
