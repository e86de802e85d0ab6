"""``NeuronData``: the typed Neuron layers a Neuron reader attaches to a ``Trace``."""

from __future__ import annotations

import msgspec
import numpy as np

from trnscope.core.formats.neuron.device import DeviceProfile
from trnscope.core.formats.neuron.discover import NeuronFiles
from trnscope.core.formats.neuron.executions import Executions
from trnscope.core.formats.neuron.mapping import FrameworkOp
from trnscope.core.formats.neuron.system import SystemEvents
from trnscope.core.model.trace import BackendData, Trace


class AlignmentStats(msgspec.Struct):
    executions: int = 0  # nc_exec_running rows
    aligned_by_sync_point: int = 0
    max_disagreement_ns: int = 0  # between the sync-point formula and the exported timestamp


class NeuronData(BackendData):
    folder: str
    export_format: str  # "parquet" | "json" | "none"
    system: SystemEvents | None
    profiles: list[DeviceProfile]
    mapping: dict[int, list[FrameworkOp]]
    system_row: np.ndarray  # trace row of each system event, -1 if not merged
    # one execution per logical NeuronCore run (LNC=2: its physical cores' records
    # merged; device time = their union) — see ``formats.neuron.executions``
    executions: Executions
    device_in_trace: bool  # trace.json already holds device activities (correlate_device_time)
    alignment: AlignmentStats
    files: NeuronFiles
    framework_from_system: bool = False  # ops are the system profile's framework events
    op_fwd_thread: dict[int, int] = {}  # op row → "Fwd thread id", for ops sharing a sequence number


def neuron_data(trace: Trace) -> NeuronData | None:
    """The Neuron layers of ``trace``, or None when it is not a Neuron profile."""
    return trace.backend if isinstance(trace.backend, NeuronData) else None
