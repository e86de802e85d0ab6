"""Load one Neuron process-session: framework trace + system profile + device profiles.

The framework trace (a Kineto trace, wherever the layout put it) is read by the
injected Kineto reader.  The system profile's runtime events and NeuronCore
executions are appended to the same columns: runtime events as ``SYSTEM_RUNTIME``
rows on their threads, executions as device rows on one lane per logical NeuronCore.
With logical cores of size 2 every execution has one ``nc_exec_running`` row per
physical core; rows that share an execution (``exec_id``, else ``flow_id``, else
overlapping rows of one model on one logical core) become one event whose interval is
their union.  Execution timestamps are moved to the host clock with the
``timestamp_sync_point`` of the same exec id and core — ``cpu + (device − device_sync)``
— where there is one.  Without a framework trace, the system profile's own framework
events are the op layer.  Device profiles stay in their own columns
(``NeuronData.profiles``); ``trnscope.core.link.neuron`` places them on the host clock
and ties everything to ops.
"""

from __future__ import annotations

import importlib.util
import itertools
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from trnscope.core.base.arrays import equals_any, split_by
from trnscope.core.base.errors import InputError
from trnscope.core.formats.neuron import device as device_mod
from trnscope.core.formats.neuron.data import AlignmentStats, NeuronData
from trnscope.core.formats.neuron.discover import (
    NeuronFiles,
    find_neuron_sessions,
    is_anchor,
    parquet_tables,
    session_files,
)
from trnscope.core.formats.neuron.executions import Executions, executions_from_cores
from trnscope.core.formats.neuron.export import cached_export, corrupt_export, discard_export, explorer_command
from trnscope.core.formats.neuron.mapping import FrameworkOp, read_mappings
from trnscope.core.formats.neuron.runtime_events import read_runtime_events
from trnscope.core.formats.neuron.system import (
    NONE,
    SOURCE_FRAMEWORK,
    SOURCE_HARDWARE,
    SOURCE_RUNTIME,
    SystemEvents,
    int_or_missing,
    read_system_json,
    read_system_parquet,
)
from trnscope.core.formats.sniff import head_bytes, looks_like_runtime_events
from trnscope.core.model.roles import Role
from trnscope.core.model.trace import EventColumns, LoadStats, ThreadInfo, Trace
from trnscope.core.model.vocab import PH_X, Interner

FrameworkReader = Callable[[Path], Trace]  # reads the framework trace of a Neuron profile
ArgsReader = Callable[[Trace, int], dict[str, Any]]  # the full args of one framework-trace row

NEURON_RUNTIME_CAT = "neuron_rt"
NEURON_HARDWARE_CAT = "neuron_hw"
NEURON_FRAMEWORK_CAT = "neuron_framework"


def _model_label(name: str, model_id: int) -> str:
    if not name:
        return f"model {model_id}" if model_id >= 0 else "NeuronCore execution"
    path = Path(name)
    generic = ("model", "graph", "file", "neff", "kernel", "compiled")  # the folder names the kernel
    label = path.parent.name if path.stem in generic and path.parent.name else path.stem
    return label or name


def _session_of(path: Path) -> tuple[Path, Path | None]:
    """(session folder, the one system JSON asked for or None)."""
    if path.is_file():
        return path.parent, path
    if is_anchor(path):
        return path, None
    inner = find_neuron_sessions(path)
    if not inner:
        raise InputError(f"{path}: no Neuron profile (trace.json + .pb/.ntff, or a Neuron Explorer export) found")
    first = Path(inner[0].path)
    return (first.parent, first) if first.is_file() else (first, None)


class _Exports(msgspec.Struct):
    """What of a profile's Neuron exports was read, and how."""

    system: SystemEvents | None
    profiles: list[device_mod.DeviceProfile]
    export_format: str  # "parquet", "json" or "none"
    corrupt: bool  # our cached export was unusable (and removed)


def _read_exports(files: NeuronFiles, use_cache: bool, prefer: str | None, warnings: list[str]) -> _Exports:  # noqa: C901 - Parquet, legacy JSON or device-only exports, with the cache's fallbacks
    """The system and device profiles: Parquet (a user's export, or neuron-explorer's in
    our cache) where pyarrow can read it, else the legacy JSON export, else device
    profiles alone."""
    system_pq = [Path(p) for p in files.parquet_system]
    device_pq = [Path(p) for p in files.parquet_device]
    export: Path | None = None
    corrupt = False
    if files.has_raw and not (files.system_json or system_pq):
        export = cached_export(files) if use_cache else None
        if export is not None:
            system_pq, device_pq = _parquet_in(export)
        elif use_cache and (broken := corrupt_export(files)) is not None:
            discard_export(broken)  # ours, and unusable
            corrupt = True
    have_pyarrow = importlib.util.find_spec("pyarrow") is not None
    use_parquet = (
        bool(system_pq) and (prefer != "json" or not files.system_json) and (have_pyarrow or not files.system_json)
    )
    if system_pq and not have_pyarrow and files.system_json:
        warnings.append(
            "pyarrow is not installed: read the legacy JSON export instead of Parquet (pip install 'trnscope[parquet]')"
        )
    if use_parquet:
        try:
            system = read_system_parquet(system_pq[0])
            listing = system.device_profiles
            return _Exports(system, [device_mod.read_device_parquet(d, listing) for d in device_pq], "parquet", corrupt)
        except InputError as error:
            if export is None:
                raise
            discard_export(export)  # ours, and unusable: the next --export writes it again
            warnings.append(f"the cached neuron-explorer export was unreadable and was removed ({error})")
            return _Exports(None, [], "none", corrupt)
    if files.system_json:
        system = read_system_file(Path(files.system_json[0]))
        device_files = [Path(p) for p in files.device_json]
        if system.device_profiles:  # several ranks' files side by side: the listed ones are ours
            listed = [p for p in device_files if p.stem in system.device_profiles or p.name in system.device_profiles]
            device_files = listed or device_files
        profiles = [device_mod.read_device_json(p, system.device_profiles) for p in device_files]
        return _Exports(system, profiles, "json", corrupt)
    if files.device_json or device_pq:
        profiles = [device_mod.read_device_json(Path(p)) for p in files.device_json] + [
            device_mod.read_device_parquet(d, {}) for d in device_pq
        ]
        warnings.append("device profiles without a system profile: no executions to place them in or link to ops")
        return _Exports(None, profiles, "json" if files.device_json else "parquet", corrupt)
    return _Exports(None, [], "none", corrupt)


def _system_to_use(
    system: SystemEvents | None, files: NeuronFiles, warmup: int, warnings: list[str]
) -> SystemEvents | None:
    """The system events of this process only, warm-ups left out when asked."""
    if system is not None and len(system) == 0:
        warnings.append(
            "the system profile holds no events (nothing was captured, or every event was unusable): "
            "no runtime requests or executions"
        )
    if system is not None and files.pid >= 0:
        system = _only_process(system, files.pid, warnings)
    if system is not None and warmup > 0:
        system = without_warmup(system, warmup, warnings)
    return system


def load_neuron(
    path: Path,
    *,
    use_cache: bool = True,
    prefer: str | None = None,
    read_framework: FrameworkReader | None = None,
    read_args: ArgsReader | None = None,
    warmup: int = 0,
) -> Trace:
    """Read a Neuron profile.  ``read_framework`` reads its framework trace (a Kineto
    trace): the Neuron backend adds layers to whatever the Kineto backend reads,
    without depending on it."""
    folder, system_file = _session_of(path)
    files = session_files(folder)
    if system_file is not None:
        files.system_json = [str(system_file)]
    warnings: list[str] = list(files.notes)
    trace = _framework_trace(files, read_framework)
    exports = _read_exports(files, use_cache, prefer, warnings)
    profiles, export_format = exports.profiles, exports.export_format
    if files.has_raw and export_format == "none":
        warnings.append(_raw_warning(files, exports.corrupt))
    system = _system_to_use(exports.system, files, warmup, warnings)
    if trace is not None and system is not None and not _same_capture(trace, system, files, warnings):
        trace = None
    if trace is None and system is None:
        if files.has_raw:
            raise InputError(f"{folder}: nothing readable yet: {_raw_warning(files, exports.corrupt)}")
        raise InputError(f"{folder}: no framework trace and no Neuron Explorer system profile to read")
    framework_from_system = trace is None
    if trace is None:
        assert system is not None
        trace = _empty_trace(folder, system)
        if system.from_runtime_events:  # a kernel benchmark: no ops is what it is, not a loss
            trace.warnings = []
    mapping = _mappings(files, warnings)
    fwd_thread = _forward_threads(trace, read_args) if mapping and not framework_from_system else {}
    data = _merge(trace, system, profiles, mapping, export_format, files, folder, framework_from_system)
    data.op_fwd_thread = fwd_thread
    trace.backend = data
    trace.format = "neuron-events" if system is not None and system.from_runtime_events else "neuron"
    trace.device_kind = "neuron"
    if not trace.device_name:
        trace.device_name = "AWS Trainium (NeuronCore)"
    profile_warnings = [w for p in profiles for w in p.warnings]
    trace.warnings = [*trace.warnings, *warnings, *(system.warnings if system else []), *profile_warnings]
    if data.alignment.max_disagreement_ns > 1000:
        trace.warnings.append(
            "NeuronCore timestamps from sync points differ from the exported ones by up to "
            f"{data.alignment.max_disagreement_ns / 1000:.1f} us"
        )
    trace.synthetic = (
        trace.synthetic
        or (folder / "SYNTHETIC.txt").exists()
        or any((p / "SYNTHETIC.txt").exists() for p in folder.parents)
    )
    return trace


def without_warmup(system: SystemEvents, warmup: int, warnings: list[str]) -> SystemEvents:
    """The system events without the first ``warmup`` executions of each kernel (model),
    in time order, and every runtime event of theirs (same exec_id)."""
    execution = names_index(system, "nc_exec_running")
    runs = np.flatnonzero((system.name == execution) & (system.exec_id != NONE))
    if execution < 0 or runs.size == 0:
        warnings.append(f"--warmup {warmup}: no executions with an exec_id here, so none could be left out")
        return system
    first_start: dict[tuple[int, int], int] = {}
    for row in runs.tolist():
        key = (int(system.model_id[row]), int(system.exec_id[row]))
        first_start[key] = min(first_start.get(key, int(system.start[row])), int(system.start[row]))
    by_model: dict[int, list[tuple[int, int]]] = {}
    for (model, exec_id), start in first_start.items():
        by_model.setdefault(model, []).append((start, exec_id))
    dropped = {e for runs_of in by_model.values() for _, e in sorted(runs_of)[:warmup]}
    keep = np.flatnonzero(~np.isin(system.exec_id, np.array(sorted(dropped), dtype=np.int64)))
    kernels = len(by_model)
    warnings.append(
        f"--warmup {warmup}: the first {warmup} execution{'s' if warmup != 1 else ''} of each of {kernels} "
        f"kernel{'s' if kernels != 1 else ''} left out ({len(dropped)} in all)"
    )
    return _take(system, keep)


def read_system_file(path: Path) -> SystemEvents:
    """A system profile in JSON: a Neuron Explorer export, or the runtime's own events
    (what NKI / nkipy benchmarks save)."""
    if looks_like_runtime_events(head_bytes(path, 1 << 16)):
        return read_runtime_events(path)
    return read_system_json(path)


def _forward_threads(trace: Trace, read_args: ArgsReader | None) -> dict[int, int]:
    """``Fwd thread id`` of the ops whose sequence number another op shares (forward and
    backward ops of one autograd node): the mapping file's thread tells them apart."""
    if read_args is None or not len(trace.events):
        return {}
    ev = trace.events
    rows = np.flatnonzero((ev.role == int(Role.OP)) & (ev.sequence >= 0))
    values, counts = np.unique(ev.sequence[rows], return_counts=True)
    shared = rows[np.isin(ev.sequence[rows], values[counts > 1])]
    out: dict[int, int] = {}
    for row in shared.tolist():
        try:
            value = read_args(trace, row).get("Fwd thread id")
        except (OSError, ValueError):
            continue
        out[row] = int_or_missing(value)
    return out


def _raw_warning(files: NeuronFiles, corrupt: bool = False) -> str:
    command = " ".join(explorer_command(Path(files.neff_root), Path("<out>")))
    if corrupt:
        return (
            "the cached Neuron Explorer export of this capture was corrupt (a Parquet part cut short or damaged) "
            f"and was removed: export again with `trnscope neuron-export {files.folder}`"
        )
    if shutil.which("neuron-explorer"):
        return (
            f"raw Neuron capture (.pb/.ntff) not converted yet: run `trnscope neuron-export {files.folder}` "
            f"(it runs `{command}`) to add runtime and device data"
        )
    return f"raw Neuron capture (.pb/.ntff) without a Neuron Explorer export; to see runtime and device data run: {command}"


def _parquet_in(folder: Path) -> tuple[list[Path], list[Path]]:
    folders = [folder, *sorted(p for p in folder.rglob("*") if p.is_dir())]
    tables = {p: parquet_tables(p) for p in folders}
    return (
        [p for p in folders if "SystemProfileEvents" in tables[p]],
        [p for p in folders if "Instruction" in tables[p]],
    )


def _mappings(files: NeuronFiles, warnings: list[str]) -> dict[int, list[FrameworkOp]]:
    try:
        return read_mappings(files.framework_mappings)
    except InputError as error:  # the rest of the capture is still worth showing
        warnings.append(f"{error}; linking goes by flow ids and time only")
        return {}


def _only_process(system: SystemEvents, pid: int, warnings: list[str]) -> SystemEvents:
    """A system profile exported for a whole output root holds every rank: keep this
    session's process (and events that name none)."""
    known = system.process[system.process != NONE]
    if known.size == 0 or not (known == pid).any() or (known == pid).all():
        return system
    keep = (system.process == pid) | (system.process == NONE)
    warnings.append(f"system profile holds {np.unique(known).size} processes; showing pid {pid}")
    return _take(system, np.flatnonzero(keep))


def _take(system: SystemEvents, rows: np.ndarray) -> SystemEvents:
    lengths = np.diff(system.flow_offsets)[rows]
    flows = np.concatenate([system.flows_of(int(r)) for r in rows.tolist()]) if rows.size else np.empty(0, np.int64)
    columns = {
        name: getattr(system, name)[rows]
        for name in SystemEvents.__struct_fields__
        if isinstance(getattr(system, name), np.ndarray) and name not in ("flow_offsets", "flow_ids")
    }
    return SystemEvents(
        **columns,
        flow_offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        flow_ids=flows.astype(np.int64),
        names=system.names,
        instance=system.instance,
        warnings=system.warnings,
        device_profiles=system.device_profiles,
        from_runtime_events=system.from_runtime_events,
    )


def _framework_trace(files: NeuronFiles, read_framework: FrameworkReader | None) -> Trace | None:
    if not files.framework_traces or read_framework is None:
        return None
    return read_framework(Path(_preferred_framework_trace(files)))


def _preferred_framework_trace(files: NeuronFiles) -> str:
    """The one of the session's framework traces it reads: ``trace.json`` first."""
    return sorted(files.framework_traces, key=lambda p: (Path(p).name != "trace.json", p))[0]


# A framework trace and a Neuron capture that are this far apart and do not overlap
# are two runs: a capture's runtime calls happen inside (or right around) its window.
UNRELATED_GAP_NS = 1_000_000_000


def _same_capture(trace: Trace, system: SystemEvents, files: NeuronFiles, warnings: list[str]) -> bool:
    """Whether the framework trace found beside (or above) the Neuron capture recorded the
    same run: their host times overlap, or come within ``UNRELATED_GAP_NS``.  A kernel
    benchmark's events JSON saved under a folder that holds some other run's trace took
    that trace's ops, steps and source name (and "launched before the capture window"
    for all its executions).  Without Unix times on both sides nothing can be told, and
    the trace is kept."""
    runtime = np.flatnonzero(system.source == SOURCE_RUNTIME)
    first, last = trace.span_ns
    if not trace.origin_is_unix or runtime.size == 0 or last <= first:
        return True
    starts = system.start[runtime]
    capture = (int(starts.min()), int((starts + np.maximum(system.duration[runtime], 0)).max()))
    framework = (trace.origin_ns + first, trace.origin_ns + last)
    gap = max(capture[0] - framework[1], framework[0] - capture[1])
    if gap <= UNRELATED_GAP_NS:
        return True
    warnings.append(
        f"framework trace {_preferred_framework_trace(files)} not attached: it ran {_utc(framework[0])} to {_utc(framework[1])}, "
        f"this capture's runtime {_utc(capture[0])} to {_utc(capture[1])} (another run)"
    )
    return False


def _utc(ns: int) -> str:
    import datetime

    try:
        moment = datetime.datetime.fromtimestamp(ns / 1e9, tz=datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return f"{ns} ns"
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _empty_trace(folder: Path, system: SystemEvents) -> Trace:
    origin = int(system.start.min()) if len(system) else 0
    has_framework = bool((system.source == SOURCE_FRAMEWORK).any())
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
            "no framework trace beside the Neuron profile: ops are the system profile's framework events"
            if has_framework
            else "no framework trace and no framework events in the system profile: no ops, executions are unlinked"
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
        if key in sync and nc_start >= 0 and key[0] >= 0:
            cpu, nc = sync[key]
            aligned = cpu + (nc_start - nc)
            if start[i] > 0:
                stats.max_disagreement_ns = max(stats.max_disagreement_ns, abs(aligned - int(start[i])))
            start[i] = aligned
            end[i] = aligned + (nc_stop - nc_start if nc_stop >= nc_start else int(system.duration[row]))
            stats.aligned_by_sync_point += 1
    return start, end


def group_executions(system: SystemEvents, rows: np.ndarray, start: np.ndarray, end: np.ndarray) -> list[list[int]]:
    """Indices into ``rows`` of each execution: the rows of one logical core that share
    an ``exec_id``, else a ``flow_id``; rows with neither join the previous execution of
    the same model on that core when they overlap it on another physical core."""
    groups: dict[tuple[int, ...], list[int]] = {}
    order = np.lexsort((start, system.nc_idx[rows], system.process[rows]))
    last_free: dict[tuple[int, int], tuple[int, ...]] = {}
    for k in order.tolist():
        row = int(rows[k])
        core = (int(system.process[row]), int(system.nc_idx[row]))
        exec_id = int(system.exec_id[row])
        flows = system.flows_of(row)
        if exec_id != NONE:
            key: tuple[int, ...] = (*core, 0, exec_id)
        elif flows.size:
            key = (*core, 1, int(flows.min()))
        else:
            previous = last_free.get(core)
            if previous is not None:
                first = int(rows[groups[previous][0]])
                members = groups[previous]
                overlaps = start[k] < max(int(end[m]) for m in members)
                other_core = int(system.pcore[row]) not in {int(system.pcore[int(rows[m])]) for m in members}
                if overlaps and other_core and system.model_id[row] == system.model_id[first]:
                    members.append(k)
                    continue
            key = (*core, 2, row)
            last_free[core] = key
        groups.setdefault(key, []).append(k)
    return sorted(groups.values(), key=lambda members: int(start[members].min()))


# -- the stages of a merge: executions found, then every kind of system event turned
# -- into rows of the trace, appended once ------------------------------------------


def find_executions(system: SystemEvents, stats: AlignmentStats) -> Executions:
    """The profile's executions: its ``nc_exec_running`` records placed on the host
    clock (``_align``) and grouped, one execution per logical core's run."""
    candidates = np.flatnonzero(
        (system.source == SOURCE_HARDWARE) & (system.name == names_index(system, "nc_exec_running"))
    )
    row_start, row_end = _align(system, candidates, stats)
    groups = group_executions(system, candidates, row_start, row_end)
    return executions_from_cores(
        system_rows=[[int(candidates[k]) for k in g] for g in groups],
        cores=[[int(system.pcore[int(candidates[k])]) for k in g] for g in groups],
        starts=[[int(row_start[k]) for k in g] for g in groups],
        ends=[[int(row_end[k]) for k in g] for g in groups],
        nc_start=np.array([_min_known(system.nc_start[candidates[g]]) for g in groups], dtype=np.int64),
        nc_stop=np.array([int(system.nc_stop[candidates[g]].max()) for g in groups], dtype=np.int64),
    )


class _RowBlock(msgspec.Struct):
    """Rows to append to the trace for one kind of system event."""

    system_rows: list[list[int]]  # the system rows each new trace row stands for
    role: np.ndarray  # uint8
    names: list[str]
    cat: str
    lanes: list[tuple[str, str, str, bool]]  # (pid, tid, label, is a device lane) of each row
    start: np.ndarray  # int64 Unix ns
    duration: np.ndarray  # int64 ns


class _Appender:
    """Appends row blocks to a trace: names, categories and lanes interned into the
    trace's own tables, every block's columns concatenated once."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.names = Interner()
        for name in trace.names:
            self.names[name]
        self.cats = Interner()
        for cat in trace.cats:
            self.cats[cat]
        self.threads = {(t.pid, t.tid): i for i, t in enumerate(trace.threads)}

    def _lane(self, pid: str, tid: str, label: str, is_device: bool) -> int:
        key = (pid, tid)
        if key not in self.threads:
            self.threads[key] = len(self.trace.threads)
            self.trace.threads.append(
                ThreadInfo(
                    pid=pid, tid=tid, process_label=label if is_device else "", thread_label=label, is_device=is_device
                )
            )
        return self.threads[key]

    def append(self, blocks: list[_RowBlock], origin: int) -> list[np.ndarray]:
        """Append every block; returns the new trace rows of each."""
        count = sum(len(b.names) for b in blocks)
        added = EventColumns(
            ph=np.full(count, PH_X, np.uint8),
            role=np.concatenate([b.role for b in blocks]).astype(np.uint8),
            name=np.array([self.names[n] for b in blocks for n in b.names], dtype=np.int32),
            cat=np.concatenate([np.full(len(b.names), self.cats[b.cat], np.int32) for b in blocks]),
            thread=np.array([self._lane(*lane) for b in blocks for lane in b.lanes], dtype=np.int32),
            ts=np.concatenate([b.start for b in blocks]).astype(np.int64) - origin,
            dur=np.concatenate([b.duration for b in blocks]).astype(np.int64),
            external_id=np.full(count, -1, np.int64),
            correlation=np.full(count, -1, np.int64),
            sequence=np.full(count, -1, np.int64),
            flow_id=np.full(count, -1, np.int64),
            flow_bind_end=np.zeros(count, bool),
            dims=np.full(count, -1, np.int32),
            stack=np.full(count, -1, np.int32),
        )
        trace = self.trace
        first = len(trace.events)
        trace.events = EventColumns.concatenate([trace.events, added])
        trace.names = list(self.names.keys())
        trace.cats = list(self.cats.keys())
        previous = trace.source_index if trace.source_index is not None else np.empty(0, np.int64)
        trace.source_index = np.concatenate([previous, np.full(count, -1, np.int64)])
        trace.stats.events = len(trace.events)
        bounds = np.cumsum([first, *(len(b.names) for b in blocks)])
        return [np.arange(lo, hi, dtype=np.int64) for lo, hi in itertools.pairwise(bounds)]


def _core_lane(system: SystemEvents, row: int) -> tuple[str, str, str, bool]:
    core = f"NC{max(int(system.nc_idx[row]), 0)}"
    return ("NeuronCore", core, core, True)


def _plain_block(system: SystemEvents, rows: np.ndarray, role: np.ndarray, cat: str, lanes: list[Any]) -> _RowBlock:
    return _RowBlock(
        system_rows=[[r] for r in rows.tolist()],
        role=role,
        names=[system.name_of(r) for r in rows.tolist()],
        cat=cat,
        lanes=lanes,
        start=system.start[rows],
        duration=system.duration[rows],
    )


def _framework_block(system: SystemEvents, framework: np.ndarray) -> _RowBlock:
    lanes = [
        (f"framework {system.process[r]}", str(system.thread[r]), f"framework {system.thread[r]}", False)
        for r in framework.tolist()
    ]
    return _plain_block(system, framework, _framework_roles(system, framework), NEURON_FRAMEWORK_CAT, lanes)


def _runtime_block(system: SystemEvents, runtime: np.ndarray) -> _RowBlock:
    lanes = [
        (str(system.process[r]), str(system.thread[r]), f"Neuron runtime {system.thread[r]}", False)
        for r in runtime.tolist()
    ]
    role = np.full(runtime.size, int(Role.SYSTEM_RUNTIME), np.uint8)
    return _plain_block(system, runtime, role, NEURON_RUNTIME_CAT, lanes)


def _execution_block(system: SystemEvents, executions: Executions, role: Role) -> _RowBlock:
    names = []
    for row in executions.system_row.tolist():
        model = system.names[int(system.model_name[row])] if system.model_name[row] >= 0 else ""
        names.append(_model_label(model, int(system.model_id[row])))
    return _RowBlock(
        system_rows=executions.members,
        role=np.full(len(executions), int(role), np.uint8),
        names=names,
        cat=NEURON_HARDWARE_CAT,
        lanes=[_core_lane(system, r) for r in executions.system_row.tolist()],
        start=executions.host_start,
        duration=executions.union,
    )


def _other_hardware_block(system: SystemEvents, rows: np.ndarray) -> _RowBlock:
    role = np.full(rows.size, int(Role.SYSTEM_HARDWARE), np.uint8)
    return _plain_block(system, rows, role, NEURON_HARDWARE_CAT, [_core_lane(system, r) for r in rows.tolist()])


def _merge(
    trace: Trace,
    system: SystemEvents | None,
    profiles: list[device_mod.DeviceProfile],
    mapping: dict[int, list[FrameworkOp]],
    export_format: str,
    files: NeuronFiles,
    folder: Path,
    framework_from_system: bool,
) -> NeuronData:
    """The system profile's events into the trace, in named stages: find the
    executions, build one block of rows per kind of event (framework events when they
    are the op layer, runtime events, executions, other hardware events), append them
    once, and remember which trace row each system row became."""
    stats = AlignmentStats()
    device_in_trace = bool(equals_any(trace.events.role, (Role.KERNEL, Role.MEMORY)).any())
    if system is None or len(system) == 0:
        return NeuronData(
            str(folder), export_format, system, profiles, mapping, np.empty(0, np.int64), Executions.empty(),
            device_in_trace, stats, files,
        )  # fmt: skip
    executions = find_executions(system, stats)
    if not trace.origin_is_unix and len(trace.events):
        trace.warnings.append(
            "framework trace has no baseTimeNanoseconds: runtime and device events are placed by their own clock only"
        )
    origin = trace.origin_ns if trace.origin_is_unix or len(trace.events) else int(system.start.min())
    hardware_name = np.array([n in ("nc_exec_running", "timestamp_sync_point") for n in system.names] or [False])
    framework = np.flatnonzero(system.source == SOURCE_FRAMEWORK) if framework_from_system else np.empty(0, np.int64)
    other_hw = np.flatnonzero((system.source == SOURCE_HARDWARE) & ~hardware_name[system.name])
    blocks = [
        _framework_block(system, framework),
        _runtime_block(system, np.flatnonzero(system.source == SOURCE_RUNTIME)),
        # executions count as kernels of their op, unless trace.json already carries the
        # device activities (correlate_device_time): then those count and these are shown
        _execution_block(system, executions, Role.SYSTEM_HARDWARE if device_in_trace else Role.KERNEL),
        _other_hardware_block(system, other_hw),
    ]
    new_rows = _Appender(trace).append(blocks, origin)
    system_row = np.full(len(system), -1, dtype=np.int64)
    for block, rows in zip(blocks, new_rows):
        for members, row in zip(block.system_rows, rows.tolist()):
            system_row[members] = row
    executions.trace_row = new_rows[2]
    return NeuronData(
        folder=str(folder),
        export_format=export_format,
        system=system,
        profiles=profiles,
        mapping=mapping,
        system_row=system_row,
        executions=executions,
        device_in_trace=device_in_trace,
        alignment=stats,
        files=files,
        framework_from_system=framework_from_system,
    )


def _framework_roles(system: SystemEvents, framework: np.ndarray) -> np.ndarray:
    """Roles of the system profile's framework events when they are the op layer: an
    event that hands work to the runtime (its flow ids reach runtime events) and runs
    inside another framework event on its thread is a dispatch call — the runtime
    layer, as ``privateuse1_runtime`` is in trace.json — so device time goes to the op
    around it, as ``key_averages()`` would charge it; every other one is an op."""
    roles = np.full(framework.size, int(Role.OP), np.uint8)
    if framework.size == 0:
        return roles
    lengths = np.diff(system.flow_offsets)
    runtime_rows = np.flatnonzero((system.source == SOURCE_RUNTIME) & (lengths > 0))
    runtime_flows = (
        set(np.concatenate([system.flows_of(int(r)) for r in runtime_rows]).tolist()) if runtime_rows.size else set()
    )
    if not runtime_flows:
        return roles
    position = {int(row): k for k, row in enumerate(framework.tolist())}
    for rows in split_by(system.thread[framework], framework).values():
        rows = rows[np.lexsort((-system.duration[rows], system.start[rows]))]
        open_ends: list[int] = []  # ends of the events enclosing the current one
        for row in rows.tolist():
            start, end = int(system.start[row]), int(system.start[row] + system.duration[row])
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            nested = bool(open_ends) and end <= open_ends[-1]
            if nested and runtime_flows.intersection(system.flows_of(row).tolist()):
                roles[position[row]] = int(Role.RUNTIME)
            open_ends.append(end)
    return roles


def names_index(system: SystemEvents, name: str) -> int:
    try:
        return system.names.index(name)
    except ValueError:
        return -2  # matches no row


def _min_known(values: np.ndarray) -> int:
    known = values[values != NONE]
    return int(known.min()) if known.size else NONE
