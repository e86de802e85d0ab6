"""``NeuronData``: the typed Neuron layers a Neuron reader attaches to a ``Trace``."""

from __future__ import annotations

import msgspec
import numpy as np

from trnscope.core.formats.neuron.device import DeviceProfile
from trnscope.core.formats.neuron.discover import NeuronFiles
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
    # one execution per logical NeuronCore: the nc_exec_running rows of its physical
    # cores (LNC=2) are merged into one device event whose interval is their union
    exec_system: np.ndarray  # representative system row of each execution, in row order
    exec_rows: np.ndarray  # trace row of each execution
    exec_host_start: np.ndarray  # Unix ns, aligned
    exec_host_end: np.ndarray
    device_in_trace: bool  # trace.json already holds device activities (correlate_device_time)
    alignment: AlignmentStats
    files: NeuronFiles
    exec_members: list[list[int]] = []  # system rows of each execution (one per physical core)
    exec_core_busy: list[dict[int, int]] = []  # physical core → ns that core ran the execution
    exec_nc_start: np.ndarray = np.empty(0, np.int64)  # device clock (nc_start_timestamp_ns), -1
    exec_nc_stop: np.ndarray = np.empty(0, np.int64)
    framework_from_system: bool = False  # ops are the system profile's framework events
    op_fwd_thread: dict[int, int] = {}  # op row → "Fwd thread id", for ops sharing a sequence number


def neuron_data(trace: Trace) -> NeuronData | None:
    """The Neuron layers of ``trace``, or None when it is not a Neuron profile."""
    return trace.backend if isinstance(trace.backend, NeuronData) else None
