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
    if looks_like_runtime_events(head):
        return True
    return head.lstrip()[:1] == b"{" and (
        b'"trace_event"' in head or b'"trace_events"' in head or b'"instruction"' in head
    )


def looks_like_runtime_events(head: bytes) -> bool:
    """The head of a Neuron runtime events file (NKI / nkipy / nrtpy benchmarks): an
    ``{"events": [...]}`` envelope, a bare list of events, or a kernel profile holding
    them as text under ``"events_json"``."""
    if b'"traceEvents"' in head:
        return False
    if b'"events_json"' in head:
        return True
    return b'"event_type"' in head and (b'"tracking_id"' in head or b'"phase"' in head)
