"""Every ``TRNSCOPE_*`` environment variable, read in one place.

| variable | meaning | default |
|---|---|---|
| ``TRNSCOPE_CACHE_DIR`` | where caches live | ``$XDG_CACHE_HOME/trnscope``, else ``~/.cache/trnscope`` |
| ``TRNSCOPE_CACHE_MAX_BYTES`` | the cache's cap (bytes; 0 turns caching off) | 2 GiB |
| ``TRNSCOPE_MAX_INFLATE_RATIO`` | how many times its size a gzip file may inflate to | 100 |
| ``TRNSCOPE_DEBUG`` | ``1``: tracebacks instead of one-line errors | off |
| ``TRNSCOPE_DASK_TIMEOUT`` | seconds to wait for a Dask scheduler to answer | 30 |
| ``DASK_SCHEDULER_ADDRESS`` | Dask's own variable: ``ranks`` and ``summary --merge`` run on that scheduler | unset: a local process pool |

Each is read when asked (not at import), so a test or an embedding program may set it.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_MAX_CACHE_BYTES = 2 << 30
DEFAULT_INFLATE_RATIO = 100.0


def debug() -> bool:
    return os.environ.get("TRNSCOPE_DEBUG") == "1"


def cache_root() -> Path:
    explicit = os.environ.get("TRNSCOPE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "trnscope"


def max_cache_bytes() -> int:
    raw = os.environ.get("TRNSCOPE_CACHE_MAX_BYTES", "").strip()
    if not raw:
        return DEFAULT_MAX_CACHE_BYTES
    try:
        return max(0, int(float(raw)))
    except (ValueError, OverflowError):
        return DEFAULT_MAX_CACHE_BYTES


def max_inflate_ratio() -> float:
    """Real traces compress 5–30×; past this a gzip file is treated as a bomb."""
    try:
        return max(1.0, float(os.environ.get("TRNSCOPE_MAX_INFLATE_RATIO", "") or DEFAULT_INFLATE_RATIO))
    except (ValueError, OverflowError):
        return DEFAULT_INFLATE_RATIO


def dask_scheduler_address() -> str:
    """Dask's own variable (read by ``distributed`` too): where a cluster's scheduler is."""
    return os.environ.get("DASK_SCHEDULER_ADDRESS", "").strip()


def dask_timeout_s() -> float:
    try:
        return max(0.5, float(os.environ.get("TRNSCOPE_DASK_TIMEOUT", "") or 30.0))
    except (ValueError, OverflowError):
        return 30.0
