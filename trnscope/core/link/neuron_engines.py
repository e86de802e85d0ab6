"""Engine busy time of NeuronCore executions, from the device profiles.

Each device profile is placed on the host clock (``neuron_clock``: which executions it
covers and each one's window in the profile's own time base); its instructions are
assigned to the execution whose window holds them, and an engine's busy time in an
execution is the **union** of its instructions' active intervals — after their
semaphore waits, clipped to the execution — so it never exceeds the execution's
length.  DMA packets and collectives of a profile count as the ``dma`` and ``cc``
engines; per physical core, the union of its compute instructions.
"""

from __future__ import annotations

import msgspec
import numpy as np

from trnscope.core.base.arrays import check_lengths
from trnscope.core.base.intervals import grouped_union
from trnscope.core.formats.neuron.data import NeuronData
from trnscope.core.formats.neuron.device import COMPUTE_ENGINES, ENGINES, DeviceProfile
from trnscope.core.formats.neuron.system import NONE, SystemEvents
from trnscope.core.link.neuron_clock import Placement, place_profile


class ProfilePlacement(msgspec.Struct):
    """How one device profile was put on the host clock."""

    profile: str
    nc_idx: int
    method: str
    matched: int
    detail: str


class EngineTime(msgspec.Struct):
    """Per execution (rows as in ``NeuronData.executions``)."""

    profile: np.ndarray  # int64 index into NeuronData.profiles, -1
    window: np.ndarray  # int64 [executions, 2]: the execution in its profile's time base, -1
    busy: np.ndarray  # int64 [executions, len(ENGINES)]: union of active intervals
    count: np.ndarray  # int64 [executions, len(ENGINES)]: instructions (packets, collectives)
    core_busy: list[dict[int, int]]  # physical core → union of its compute instructions
    placements: list[ProfilePlacement]  # one per device profile (not per execution)
    instructions: int = 0  # in every profile
    instructions_outside_executions: int = 0  # in no placed execution: counted in no engine
    profiles_without_executions: int = 0

    def __post_init__(self) -> None:
        check_lengths(self, len(self.profile), skip=("placements",))

    @classmethod
    def none(cls, n: int) -> EngineTime:
        return cls(
            np.full(n, -1, np.int64),
            np.full((n, 2), -1, np.int64),
            np.zeros((n, len(ENGINES)), np.int64),
            np.zeros((n, len(ENGINES)), np.int64),
            [{} for _ in range(n)],
            [],
        )


def engine_time(data: NeuronData) -> EngineTime:
    """Place every device profile and add up its engines' busy time per execution."""
    n_exec = len(data.executions)
    out = EngineTime.none(n_exec)
    system = data.system
    for p_index, profile in enumerate(data.profiles):
        inst = profile.instructions
        out.instructions += len(inst)
        placement = _place(data, system, profile) if system is not None and n_exec else None
        if placement is None or placement.executions.size == 0:
            out.instructions_outside_executions += len(inst)
            out.profiles_without_executions += 1
            out.placements.append(
                ProfilePlacement(profile.label, profile.nc_idx, "unplaced", 0, placement.detail if placement else "")
            )
            continue
        out.placements.append(
            ProfilePlacement(profile.label, profile.nc_idx, placement.method, placement.matched, placement.detail)
        )
        out.instructions_outside_executions += _add_profile(out, p_index, profile, placement, n_exec)
    return out


def _add_profile(out: EngineTime, p_index: int, profile: DeviceProfile, placement: Placement, n_exec: int) -> int:
    """One placed profile's busy time into ``out``; returns its instructions outside
    every execution."""
    inst = profile.instructions
    execs = placement.executions
    out.profile[execs] = p_index
    out.window[execs, 0] = placement.window_start
    out.window[execs, 1] = placement.window_end
    ws, we = placement.window_start, placement.window_end
    order = np.argsort(ws, kind="stable")
    ws, we, execs = ws[order], we[order], execs[order]
    which = np.searchsorted(ws, inst.start, side="right") - 1
    inside = (which >= 0) & (inst.start < we[np.maximum(which, 0)])
    owner = execs[which[inside]]
    s = inst.start[inside]
    # active time: after the semaphore wait, clipped to the execution
    active_start = np.minimum(s + inst.wait[inside], s + inst.duration[inside])
    active_end = np.minimum(s + inst.duration[inside], we[which[inside]])
    engine = inst.engine[inside].astype(np.int64)
    engines = len(ENGINES)
    out.busy += grouped_union(owner * engines + engine, active_start, active_end, n_exec * engines).reshape(
        n_exec, engines
    )
    np.add.at(out.count, (owner, engine), 1)
    pcore = inst.pcore[inside].astype(np.int64)
    with_core = (pcore >= 0) & (engine < COMPUTE_ENGINES)
    if with_core.any():
        cores = int(pcore[with_core].max()) + 1
        per_core = grouped_union(
            owner[with_core] * cores + pcore[with_core], active_start[with_core], active_end[with_core], n_exec * cores
        ).reshape(n_exec, cores)
        for e, c in zip(*np.nonzero(per_core)):
            out.core_busy[int(e)][int(c)] = out.core_busy[int(e)].get(int(c), 0) + int(per_core[e, c])
    # DMA packets and collectives of the profile count as the "dma" / "cc" engines
    for start, duration, name in (
        (profile.dma_start, profile.dma_duration, "dma"),
        (profile.cc_start, profile.cc_duration, "cc"),
    ):
        if start.size == 0:
            continue
        at = np.searchsorted(ws, start, side="right") - 1
        within = (at >= 0) & (start < we[np.maximum(at, 0)])
        owner_e = execs[at[within]]
        ends = np.minimum(start[within] + duration[within], we[at[within]])
        engine_id = ENGINES.index(name)
        out.busy[:, engine_id] += grouped_union(owner_e, start[within], ends, n_exec)
        np.add.at(out.count[:, engine_id], owner_e, 1)
    return int((~inside).sum())


def _place(data: NeuronData, system: SystemEvents | None, profile: DeviceProfile) -> Placement:
    assert system is not None
    executions = data.executions
    cores = system.nc_idx[executions.system_row]
    models = system.model_id[executions.system_row]
    core_known = profile.nc_idx != NONE
    if not core_known and np.unique(cores).size == 1:
        core_known, core = True, int(cores[0])  # one NeuronCore in the capture: it is that one
    else:
        core = profile.nc_idx
    mask = (np.maximum(cores, 0) == max(core, 0)) if core_known else np.zeros(cores.size, dtype=bool)
    if profile.model_id != NONE:
        mask &= models == profile.model_id
    synced = np.zeros(len(executions), dtype=bool)
    if (system.sync_cpu >= 0).any():
        keys = {
            (int(system.exec_id[r]), int(system.nc_idx[r]))
            for r in np.flatnonzero((system.sync_cpu >= 0) & (system.sync_nc >= 0)).tolist()
        }
        synced = np.array(
            [(int(system.exec_id[r]), int(system.nc_idx[r])) in keys for r in executions.system_row.tolist()],
            dtype=bool,
        )
    return place_profile(
        profile,
        np.flatnonzero(mask),
        executions.host_start,
        executions.host_start + executions.span,  # the whole window the profile's activity may fall in
        executions.nc_start,
        executions.nc_stop,
        synced,
    )
