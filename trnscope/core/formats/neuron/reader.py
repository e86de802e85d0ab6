"""Load one Neuron process-session: framework trace + system profile + device profiles.

The framework ``trace.json`` is read by the Kineto loader.  The system profile's
runtime events and NeuronCore executions are appended to the same columns (runtime
events as ``SYSTEM_RUNTIME`` rows on their threads, executions as device rows on a
``NeuronCore`` lane), with their clocks aligned: an execution's device timestamps
are moved to the host clock with the ``timestamp_sync_point`` of the same exec id and
core — ``cpu + (device − device_sync)``.  Device profiles stay in their own columns
(``NeuronData.profiles``); ``trnscope.core.link.neuron`` ties everything to ops.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from trnscope.core.base.errors import InputError
from trnscope.core.formats.neuron import device as device_mod
from trnscope.core.formats.neuron.data import AlignmentStats, NeuronData
from trnscope.core.formats.neuron.discover import NeuronFiles, classify
from trnscope.core.formats.neuron.export import explorer_command, export_folder_for
from trnscope.core.formats.neuron.mapping import FrameworkOp, read_mappings
from trnscope.core.formats.neuron.system import (
    SOURCE_HARDWARE,
    SOURCE_RUNTIME,
    SystemEvents,
    read_system_json,
    read_system_parquet,
)
from trnscope.core.model.roles import Role
from trnscope.core.model.trace import EventColumns, LoadStats, ThreadInfo, Trace
from trnscope.core.model.vocab import PH_X, Interner

FrameworkReader = Callable[[Path], Trace]  # reads the framework trace of a Neuron profile

NEURON_RUNTIME_CAT = "neuron_rt"
NEURON_HARDWARE_CAT = "neuron_hw"


def _exports_in(folder: Path) -> tuple[list[Path], list[Path], list[Path], list[Path]]:
    """(system JSONs, device JSONs, system Parquet dirs, device Parquet dirs) at or below ``folder``."""
    system_json: list[Path] = []
    device_json: list[Path] = []
    system_pq: list[Path] = []
    device_pq: list[Path] = []
    candidates = [folder, *[p for p in folder.rglob("*") if p.is_dir() and len(p.relative_to(folder).parts) <= 3]]
    for directory in candidates:
        for entry in directory.iterdir() if directory.is_dir() else []:
            if entry.is_file() and entry.name.endswith(".json"):
                if entry.name.startswith("system_profile"):
                    system_json.append(entry)
                elif entry.name.startswith("device_profile"):
                    device_json.append(entry)
        if device_mod.is_system_parquet_dir(directory):
            system_pq.append(directory)
        if device_mod.is_device_parquet_dir(directory):
            device_pq.append(directory)
    return sorted(system_json), sorted(device_json), sorted(system_pq), sorted(device_pq)


def _model_label(name: str, model_id: int) -> str:
    if not name:
        return f"model {model_id}" if model_id >= 0 else "NeuronCore execution"
    path = Path(name)
    label = path.parent.name if path.stem in ("model", "graph") and path.parent.name else path.stem
    return label or name


def load_neuron(
    path: Path,
    *,
    use_cache: bool = True,
    prefer: str | None = None,
    read_framework: FrameworkReader | None = None,
) -> Trace:
    """Read a Neuron profile folder.  ``read_framework`` reads its framework trace
    (``trace.json``, a Kineto trace): the Neuron backend adds layers to whatever the
    Kineto backend reads, without depending on it."""
    folder = path if path.is_dir() else path.parent
    files = classify(folder)
    if path.is_dir() and not files.is_session:
        # a capture-session variant or an output root: open the process-session inside
        from trnscope.core.formats.neuron.discover import find_neuron_sessions

        inner = find_neuron_sessions(folder)
        if not inner:
            raise InputError(f"{folder}: no Neuron profile (trace.json + .pb/.ntff, or a Neuron Explorer export) found")
        folder = Path(inner[0].path)
        files = classify(folder)
    system_json, device_json, system_pq, device_pq = _exports_in(folder)
    if path.is_file() and path.name.startswith("system_profile"):
        system_json = [path]
    cached_export = _cached_export(folder) if use_cache else None
    if cached_export is not None and not (system_pq or system_json):
        system_pq = [p for p in cached_export.rglob("*") if p.is_dir() and device_mod.is_system_parquet_dir(p)] or (
            [cached_export] if device_mod.is_system_parquet_dir(cached_export) else []
        )
        device_pq = [p for p in cached_export.rglob("*") if p.is_dir() and device_mod.is_device_parquet_dir(p)]
    have_pyarrow = importlib.util.find_spec("pyarrow") is not None
    use_parquet = bool(system_pq) and (prefer != "json" or not system_json) and (have_pyarrow or not system_json)
    warnings: list[str] = []
    if system_pq and not have_pyarrow and system_json:
        warnings.append(
            "pyarrow is not installed: read the legacy JSON export instead of Parquet (pip install 'trnscope[parquet]')"
        )

    trace = _framework_trace(files, read_framework)
    system: SystemEvents | None = None
    profiles: list[device_mod.DeviceProfile] = []
    export_format = "none"
    if use_parquet:
        system = read_system_parquet(system_pq[0])
        listing = device_mod.profile_list(system_pq[0])
        profiles = [device_mod.read_device_parquet(d, listing) for d in device_pq]
        export_format = "parquet"
    elif system_json:
        system = read_system_json(system_json[0])
        profiles = [device_mod.read_device_json(p) for p in device_json]
        export_format = "json"
    elif files.system_binaries or files.device_traces:
        hint = " ".join(explorer_command(folder, Path("<out>")))
        if shutil.which("neuron-explorer"):
            warnings.append(
                f"raw Neuron capture (.pb/.ntff) not converted yet: run `trnscope neuron-export {folder}` to add runtime and device data"
            )
        else:
            warnings.append(
                f"raw Neuron capture (.pb/.ntff) without a Neuron Explorer export; to see runtime and device data run: {hint}"
            )
    if trace is None and system is None:
        raise InputError(f"{folder}: no framework trace and no Neuron Explorer export to read")
    if trace is None:
        assert system is not None
        trace = _empty_trace(folder, system)
    mapping = read_mappings(files.framework_mappings)
    data = _merge(trace, system, profiles, mapping, export_format, files, folder)
    trace.backend = data
    trace.format = "neuron"
    trace.device_kind = "neuron"
    if not trace.device_name:
        trace.device_name = "AWS Trainium (NeuronCore)"
    trace.warnings = [*trace.warnings, *warnings, *(system.warnings if system else [])]
    if data.alignment.max_disagreement_ns > 1000:
        trace.warnings.append(
            f"NeuronCore timestamps from sync points differ from the exported ones by up to {data.alignment.max_disagreement_ns / 1000:.1f} us"
        )
    trace.synthetic = (
        trace.synthetic
        or (folder / "SYNTHETIC.txt").exists()
        or any((p / "SYNTHETIC.txt").exists() for p in folder.parents)
    )
    return trace


def _cached_export(folder: Path) -> Path | None:
    target = export_folder_for(folder)
    return target if target is not None and (target / "DONE").exists() else None


def _framework_trace(files: NeuronFiles, read_framework: FrameworkReader | None) -> Trace | None:
    if not files.framework_traces or read_framework is None:
        return None
    preferred = sorted(files.framework_traces, key=lambda p: (Path(p).name != "trace.json", p))
    return read_framework(Path(preferred[0]))


def _empty_trace(folder: Path, system: SystemEvents) -> Trace:
    origin = int(system.start.min()) if len(system) else 0
    return Trace(
        source=str(folder),
        format="neuron",
        device_kind="neuron",
        device_name="",
        events=EventColumns.empty(),
        names=[],
        cats=[],
        shapes=[],
        stacks=[],
        threads=[],
        chunks=[],
        origin_ns=origin,
        origin_is_unix=True,
        stats=LoadStats(path=str(folder), file_bytes=0, plain_bytes=0, compressed=False, events=0),
        warnings=[
            "no framework trace.json beside the Neuron profile: ops come from Neuron Explorer's framework events"
        ],
        source_index=np.empty(0, np.int64),
    )


def _align(system: SystemEvents, hw_rows: np.ndarray, stats: AlignmentStats) -> tuple[np.ndarray, np.ndarray]:
    """Host-clock (start, end) of hardware events, by the sync point of their exec/core."""
    start = system.start[hw_rows].copy()
    end = start + system.duration[hw_rows]
    sync_rows = np.flatnonzero((system.sync_cpu >= 0) & (system.sync_nc >= 0))
    sync = {
        (int(system.exec_id[r]), int(system.nc_idx[r])): (int(system.sync_cpu[r]), int(system.sync_nc[r]))
        for r in sync_rows.tolist()
    }
    for i, row in enumerate(hw_rows.tolist()):
        stats.executions += 1
        key = (int(system.exec_id[row]), int(system.nc_idx[row]))
        nc_start, nc_stop = int(system.nc_start[row]), int(system.nc_stop[row])
        if key in sync and nc_start >= 0:
            cpu, nc = sync[key]
            aligned = cpu + (nc_start - nc)
            if start[i] > 0:
                stats.max_disagreement_ns = max(stats.max_disagreement_ns, abs(aligned - int(start[i])))
            start[i] = aligned
            end[i] = aligned + (nc_stop - nc_start if nc_stop >= nc_start else int(system.duration[row]))
            stats.aligned_by_sync_point += 1
    return start, end


def _merge(
    trace: Trace,
    system: SystemEvents | None,
    profiles: list[device_mod.DeviceProfile],
    mapping: dict[int, list[FrameworkOp]],
    export_format: str,
    files: NeuronFiles,
    folder: Path,
) -> NeuronData:
    stats = AlignmentStats()
    empty = np.empty(0, np.int64)
    device_in_trace = bool(np.isin(trace.events.role, [int(Role.KERNEL), int(Role.MEMORY)]).any())
    if system is None or len(system) == 0:
        return NeuronData(
            str(folder),
            export_format,
            system,
            profiles,
            mapping,
            empty,
            empty,
            empty,
            empty,
            empty,
            device_in_trace,
            stats,
            files,
        )
    names = Interner()
    for name in trace.names:
        names[name]
    cats = Interner()
    for cat in trace.cats:
        cats[cat]
    threads = {(t.pid, t.tid): i for i, t in enumerate(trace.threads)}

    def thread_of(pid: str, tid: str, label: str, is_device: bool) -> int:
        key = (pid, tid)
        if key not in threads:
            threads[key] = len(trace.threads)
            trace.threads.append(
                ThreadInfo(
                    pid=pid, tid=tid, process_label=label if is_device else "", thread_label=label, is_device=is_device
                )
            )
        return threads[key]

    runtime = np.flatnonzero(system.source == SOURCE_RUNTIME)
    executions = np.flatnonzero(
        (system.source == SOURCE_HARDWARE)
        & (np.array([system.names[i] == "nc_exec_running" for i in system.name]) if len(system) else False)
    )
    other_hw = np.flatnonzero(
        (system.source == SOURCE_HARDWARE)
        & np.array(
            [system.names[i] not in ("nc_exec_running", "timestamp_sync_point") for i in system.name], dtype=bool
        )
    )
    exec_start, exec_end = _align(system, executions, stats)
    hw_rows = np.concatenate([executions, other_hw])
    hw_start = np.concatenate([exec_start, system.start[other_hw]])
    hw_end = np.concatenate([exec_end, system.start[other_hw] + system.duration[other_hw]])
    origin = trace.origin_ns if trace.origin_is_unix or len(trace.events) else int(system.start.min())
    if not trace.origin_is_unix and len(trace.events):
        trace.warnings.append(
            "framework trace has no baseTimeNanoseconds: runtime and device events are placed by their own clock only"
        )

    rt_cat = cats[NEURON_RUNTIME_CAT]
    hw_cat = cats[NEURON_HARDWARE_CAT]
    rt_threads = np.array(
        [
            thread_of(str(system.process[r]), str(system.thread[r]), f"Neuron runtime {system.thread[r]}", False)
            for r in runtime.tolist()
        ],
        dtype=np.int32,
    )
    hw_threads = np.array(
        [
            thread_of("NeuronCore", f"NC{max(int(system.nc_idx[r]), 0)}", f"NC{max(int(system.nc_idx[r]), 0)}", True)
            for r in hw_rows.tolist()
        ],
        dtype=np.int32,
    )
    hw_names = []
    for r in hw_rows.tolist():
        name = system.names[int(system.name[r])]
        if name == "nc_exec_running":
            model = system.names[int(system.model_name[r])] if system.model_name[r] >= 0 else ""
            name = _model_label(model, int(system.model_id[r]))
        hw_names.append(names[name])
    exec_role = Role.SYSTEM_HARDWARE if device_in_trace else Role.KERNEL
    roles = np.concatenate(
        [
            np.full(runtime.size, int(Role.SYSTEM_RUNTIME), np.uint8),
            np.full(executions.size, int(exec_role), np.uint8),
            np.full(other_hw.size, int(Role.SYSTEM_HARDWARE), np.uint8),
        ]
    )
    count = runtime.size + hw_rows.size
    system_index = np.concatenate([runtime, hw_rows])
    added = EventColumns(
        ph=np.full(count, PH_X, np.uint8),
        role=roles,
        name=np.concatenate(
            [
                np.array([names[system.names[int(system.name[r])]] for r in runtime.tolist()], dtype=np.int32),
                np.array(hw_names, dtype=np.int32),
            ]
        ),
        cat=np.concatenate([np.full(runtime.size, rt_cat, np.int32), np.full(hw_rows.size, hw_cat, np.int32)]),
        thread=np.concatenate([rt_threads, hw_threads]).astype(np.int32),
        ts=np.concatenate([system.start[runtime], hw_start]) - origin,
        dur=np.concatenate([system.duration[runtime], hw_end - hw_start]),
        external_id=np.full(count, -1, np.int64),
        correlation=np.full(count, -1, np.int64),
        sequence=np.full(count, -1, np.int64),
        flow_id=np.full(count, -1, np.int64),
        flow_bind_end=np.zeros(count, bool),
        dims=np.full(count, -1, np.int32),
        stack=np.full(count, -1, np.int32),
    )
    first_new = len(trace.events)
    trace.events = EventColumns.concatenate([trace.events, added])
    trace.names = list(names.keys())
    trace.cats = list(cats.keys())
    trace.source_index = np.concatenate(
        [trace.source_index if trace.source_index is not None else np.empty(0, np.int64), np.full(count, -1, np.int64)]
    )
    trace.stats.events = len(trace.events)
    system_row = np.full(len(system), -1, dtype=np.int64)
    system_row[system_index] = np.arange(first_new, first_new + count)
    exec_rows = system_row[executions]
    return NeuronData(
        folder=str(folder),
        export_format=export_format,
        system=system,
        profiles=profiles,
        mapping=mapping,
        system_row=system_row,
        exec_system=executions,
        exec_rows=exec_rows,
        exec_host_start=exec_start,
        exec_host_end=exec_end,
        device_in_trace=device_in_trace,
        alignment=stats,
        files=files,
    )
