"""TorchNeuron's ``framework_mapping_<YYYYMMDD_HHMMSS_mmm>.json``.

``{"version": 1, "data": [{"nrta_seq_id": N, "framework_op_exec_ids":
[{"seq_nr": S, "th_id": T, "stream_id": K}, ...]}]}`` — per asynchronous runtime
submission, the PyTorch ops (autograd sequence number and PyTorch's internal thread
index) that submitted it.  Fused submissions list several ops.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from trnscope.core.base.errors import InputError


class FrameworkOp(msgspec.Struct):
    seq_nr: int
    th_id: int = 0
    stream_id: int = 0


class MappingEntry(msgspec.Struct):
    nrta_seq_id: int
    framework_op_exec_ids: list[FrameworkOp] = []


class MappingFile(msgspec.Struct):
    version: int = 1
    data: list[MappingEntry] = []


def read_mappings(paths: list[str]) -> dict[int, list[FrameworkOp]]:
    mapping: dict[int, list[FrameworkOp]] = {}
    for path in sorted(paths):
        try:
            doc = msgspec.json.decode(Path(path).read_bytes(), type=MappingFile)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as error:
            raise InputError(f"{path}: unreadable framework mapping ({error})") from None
        for entry in doc.data:
            mapping.setdefault(entry.nrta_seq_id, []).extend(entry.framework_op_exec_ids)
    return mapping
