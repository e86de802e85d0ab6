"""What a file is, from its first bytes: a Kineto trace or a Neuron Explorer JSON export.

Shared by every backend's discovery, so no reader's discovery imports another's.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from trnscope.core.formats.source import GZIP_MAGIC

_PROBE_BYTES = 2 << 20


def head_bytes(path: Path, limit: int = _PROBE_BYTES) -> bytes:
    """The first ``limit`` bytes of the file's text (decompressing gzip)."""
    with open(path, "rb") as fh:
        raw = fh.read(limit)
        if raw[:2] != GZIP_MAGIC:
            return raw
        fh.seek(0)
        try:
            with gzip.GzipFile(fileobj=fh) as gz:
                return gz.read(limit)
        except (OSError, EOFError, zlib.error):
            return b""


def looks_like_kineto(path: Path) -> bool:
    head = head_bytes(path)
    stripped = head.lstrip()
    if stripped[:1] == b"[":
        return b'"ph"' in head
    return b'"traceEvents"' in head


def looks_like_rank_trace(path: Path) -> bool:
    """A trace one rank of a distributed job wrote: PyTorch puts ``distributedInfo``
    before the events, so the head says it."""
    return b'"distributedInfo"' in head_bytes(path, 256 << 10)


def looks_like_neuron_json(path: Path) -> bool:
    head = head_bytes(path, 1 << 16)
    return head.lstrip()[:1] == b"{" and (
        b'"trace_event"' in head or b'"trace_events"' in head or b'"instruction"' in head
    )
