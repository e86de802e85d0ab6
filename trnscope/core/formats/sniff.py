"""What a file is, from its first bytes: a Kineto trace or a Neuron Explorer JSON export.

Shared by every backend's discovery, so no reader's discovery imports another's.
"""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

import msgspec

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


_DISTRIBUTED_INFO = re.compile(rb'"distributedInfo"\s*:\s*\{')
_JSON_SPECIAL = re.compile(rb'[{}"\\]')


def _object_from(text: bytes, start: int) -> bytes | None:
    """The JSON object that opens at ``text[start]`` (``{``), found by its braces
    outside strings; None when it does not close within ``text``.  Only the bytes that
    can open or close something are visited: a big job's process groups are long lists
    of numbers."""
    depth, quoted, escaped_until = 0, False, -1
    for found in _JSON_SPECIAL.finditer(text, start):
        at = found.start()
        if at < escaped_until:
            continue
        byte = text[at]
        if quoted:
            if byte == 0x5C:  # a backslash: the next byte is taken as it is
                escaped_until = at + 2
            elif byte == 0x22:
                quoted = False
        elif byte == 0x22:
            quoted = True
        elif byte == 0x7B:
            depth += 1
        elif byte == 0x7D:
            depth -= 1
            if depth == 0:
                return text[start : at + 1]
    return None


def rank_of(path: Path) -> tuple[int, int] | None:
    """(rank, world size) from the head's ``distributedInfo`` (PyTorch writes it before
    the events), -1 for what it leaves out or cannot mean; None when the head has none."""
    head = head_bytes(path, 256 << 10)
    match = _DISTRIBUTED_INFO.search(head)
    if match is None:
        return None
    text = _object_from(head, match.end() - 1)
    try:
        info = msgspec.json.decode(text) if text is not None else None
    except msgspec.DecodeError:
        info = None
    if not isinstance(info, dict):
        return (-1, -1)

    def whole(value: object) -> int:
        # (past 2**24 no job's rank: as ``rank_summary.MAX_RANKS`` reads it)
        return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 24 else -1

    return whole(info.get("rank")), whole(info.get("world_size"))


def one_jobs_ranks(paths: list[Path], probe: int = 64) -> bool:
    """Whether these traces read as the ranks of one job: each names itself a rank, they
    agree on the world size and no two claim the same rank (the first ``probe`` of them
    are read).  A folder of unrelated traces, each its own job's rank 0, is not."""
    infos = [rank_of(path) for path in paths[:probe]]
    if len(infos) < 2 or any(info is None for info in infos):
        return False
    known = [info for info in infos if info is not None]
    ranks = [rank for rank, _ in known if rank >= 0]
    worlds = {world for _, world in known if world >= 0}
    return len(worlds) <= 1 and len(ranks) == len(set(ranks))


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
