"""Find the process-sessions of a Neuron profile folder, in every layout users have.

``shared/reference/neuron-evidence.md`` §1 lists the layouts real captures use; each
is accepted here, 1–4 levels below the chosen folder, never requiring the ``i-``
prefix, an EC2 id or a ``<timestamp>`` level:

* documented TorchNeuron: ``<out>/<instance>_pid_<pid>/<ts>/{trace.json, *.pb, *.ntff, *.neff}``;
* TorchNeuron April 2026: ``pytorch_trace.json`` / ``neuron_trace.json`` and
  ``framework_mapping_<ts>.json`` at the output root, pid folders without ``<ts>``;
* runtime inspect: ``<out>/<instance>_pid_<pid>/[<unix-ns>/]`` with ``<model>_vnc_<N>.ntff``;
* vLLM-neuron: NEFFs in ``<out>/neffs/`` beside the pid folders;
* explorer ≤2.30 JSON exports: the system trace under any name (it is recognised by
  content), device files ``<inst>_pid_<pid>_nc_<N>_session_<S>.json``;
* Parquet exports and ingest folders: ``profiles/global/<name>@latest`` for the system
  tables, each device profile in its own ``@latest`` folder beside it.

A *session* is a folder with runtime binaries, device traces or a system export.  It
inherits the framework traces and mapping files of the folders above it (one or two
levels): with several pid folders under one root, a framework trace is attached to the
one whose pid it records.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec

from trnscope.core.base.fs import Entry, is_dir, list_folder
from trnscope.core.base.text import natural_key
from trnscope.core.formats.sniff import head_bytes, looks_like_runtime_events

SYNTHETIC_MARKER = "SYNTHETIC.txt"
_PID_DIR = re.compile(r"^(?P<instance>.+)_pid_(?P<pid>\d+)$")
_MAX_DEPTH = 4
_FRAMEWORK_NAMES = re.compile(
    r"^(trace|pytorch_trace|neuron_trace|neuron_framework_trace_rank_\d+|.+\.pt\.trace)\.json(\.gz)?$"
)
_DEVICE_JSON_NAME = re.compile(r"(^device_profile.*|_nc_\d+_(session|model)_\d+)\.json$")
_SYSTEM_BINARIES = frozenset({"ntrace.pb", "trace_info.pb", "cpu_util.pb", "host_mem.pb"})
_PARQUET_TABLE = re.compile(r"^(?P<table>[A-Za-z]+?)(_\d+)?\.parquet$")
_PID_IN_TRACE = re.compile(rb'"pid"\s*:\s*"?(\d+)')


class NeuronSessionRef(msgspec.Struct):
    label: str
    path: str
    description: str = ""
    synthetic: bool = False


class NeuronFiles(msgspec.Struct):
    """What one process-session is made of, by role (paths as strings)."""

    folder: str
    pid: int = -1  # from the <instance>_pid_<pid> folder, -1 if none
    framework_traces: list[str] = []
    framework_inherited: bool = False  # the trace sits above the session folder
    framework_mappings: list[str] = []
    system_binaries: list[str] = []  # ntrace.pb, trace_info.pb, cpu_util.pb, host_mem.pb
    device_traces: list[str] = []  # *.ntff
    neffs: list[str] = []
    neff_root: str = ""  # the folder holding the NEFFs (the one to export)
    system_json: list[str] = []  # a Neuron Explorer system trace, any name
    device_json: list[str] = []
    parquet_system: list[str] = []  # folders holding SystemProfileEvents
    parquet_device: list[str] = []  # folders holding Instruction
    notes: list[str] = []

    @property
    def has_exports(self) -> bool:
        return bool(self.system_json or self.parquet_system or self.device_json or self.parquet_device)

    @property
    def has_raw(self) -> bool:
        return bool(self.system_binaries or self.device_traces)


def json_role(path: Path) -> str:  # noqa: C901 - one check per file role, by name then by content
    """ "framework" | "system" | "device" | "mapping" | "" for a .json(.gz) file."""
    name = path.name
    if name.startswith("framework_mapping") and name.endswith(".json"):
        return "mapping"
    if _FRAMEWORK_NAMES.match(name):
        return "framework"
    if name.startswith("system_profile") and name.endswith(".json"):
        return "system"
    if _DEVICE_JSON_NAME.search(name):
        return "device"
    try:
        head = head_bytes(path, 1 << 16)
    except OSError:
        return ""
    if looks_like_runtime_events(head):
        return "system"  # the runtime's own events (read by runtime_events)
    stripped = head.lstrip()
    if stripped[:1] == b"[":
        return "framework" if b'"ph"' in head else ""
    if stripped[:1] != b"{":
        return ""
    if b'"traceEvents"' in head:
        return "framework"
    if b'"trace_event"' in head or b'"trace_events"' in head:
        return "system"
    if b'"instruction"' in head:
        return "device"
    return ""


def parquet_tables(folder: Path, names: Iterable[str] | None = None) -> set[str]:
    """The Parquet tables exported into ``folder`` (``names``: its entries' names,
    where the caller has listed it already)."""
    if names is None:
        try:
            names = [p.name for p in folder.iterdir()]
        except OSError:
            return set()
    return {m.group("table") for name in names if (m := _PARQUET_TABLE.match(name))}


def _own(folder: Path, listing: list[Entry] | None = None) -> NeuronFiles:  # noqa: C901 - one branch per file role of a Neuron session folder
    """The files of ``folder`` itself, by role (``listing``: its entries, where the
    caller has listed it already)."""
    files = NeuronFiles(str(folder), pid=_pid_of(folder))
    entries = list_folder(folder) if listing is None else listing
    if entries is None:
        return files
    for entry in sorted(entries, key=lambda entry: entry.name):
        name = entry.name
        if name.startswith("."):
            continue
        if entry.is_dir:
            continue
        if not entry.is_file:  # FIFOs, sockets, devices: never opened
            continue
        path = entry.path
        if name in _SYSTEM_BINARIES:
            files.system_binaries.append(str(path))
        elif name.endswith(".ntff"):
            files.device_traces.append(str(path))
        elif name.endswith(".neff"):
            files.neffs.append(str(path))
        elif name.endswith((".json", ".json.gz")):
            role = json_role(path)
            target = {
                "mapping": files.framework_mappings,
                "framework": files.framework_traces,
                "system": files.system_json,
                "device": files.device_json,
            }.get(role)
            if target is not None:
                target.append(str(path))
    tables = parquet_tables(folder, (entry.name for entry in entries))
    if "SystemProfileEvents" in tables:
        files.parquet_system.append(str(folder))
    if "Instruction" in tables:
        files.parquet_device.append(str(folder))
    return files


def _pid_of(folder: Path) -> int:
    for part in (folder.name, folder.parent.name):
        match = _PID_DIR.match(part)
        if match:
            return int(match.group("pid"))
    return -1


def _below(folder: Path, depth: int = 3) -> list[Path]:
    """Sub-folders of ``folder`` up to ``depth`` levels (exports kept inside a session)."""
    out: list[Path] = []

    def walk(directory: Path, level: int) -> None:
        try:
            children = sorted(p for p in directory.iterdir() if is_dir(p) and not p.is_symlink())
        except OSError:
            return
        for child in children:
            if child.name.startswith("."):
                continue
            out.append(child)
            if level < depth:
                walk(child, level + 1)

    walk(folder, 1)
    return out


def session_files(folder: Path) -> NeuronFiles:
    """Everything that belongs to the session at ``folder``: its own files, the exports
    below it, device profiles beside a Parquet ingest folder, and the framework trace,
    mapping files and NEFFs of the folders above it."""
    files = _own(folder)
    for sub in _below(folder):
        inner = _own(sub)
        files.system_json += inner.system_json
        files.device_json += inner.device_json
        files.parquet_system += inner.parquet_system
        files.parquet_device += inner.parquet_device
        files.neffs += inner.neffs
        files.framework_mappings += [m for m in inner.framework_mappings if m not in files.framework_mappings]
    if files.parquet_system and folder.name.endswith("@latest"):
        _attach_ingest_siblings(folder, files)
    _inherit(folder, files)
    if not files.neff_root:
        files.neff_root = str(folder)
    return files


def _attach_ingest_siblings(folder: Path, files: NeuronFiles) -> None:
    """Parquet ingest (``profiles/global/<name>@latest``): each device profile has its
    own ``@latest`` folder beside the system one; DeviceProfileList names them."""
    try:
        siblings = sorted(p for p in folder.parent.iterdir() if is_dir(p) and p != folder)
    except OSError:
        return
    systems = [p for p in siblings if "SystemProfileEvents" in parquet_tables(p)]
    devices = [p for p in siblings if "Instruction" in parquet_tables(p)]
    listed = _listed_device_profiles(folder)
    if listed:
        mine = [p for p in devices if p.name.removesuffix("@latest") in listed]
    else:  # without a list, siblings are ours only when we are the one system profile there
        mine = devices if not systems else []
        if systems and devices:
            files.notes.append(
                f"{len(devices)} device profile folders beside several system profiles and no DeviceProfileList; "
                "none attached"
            )
    files.parquet_device += [str(p) for p in mine if str(p) not in files.parquet_device]


def _listed_device_profiles(folder: Path) -> set[str]:
    from trnscope.core.formats.neuron.parquet import read_table

    try:
        table = read_table(folder, "DeviceProfileList", ["device_profile_name"])
    except Exception:  # discovery never fails on a table it only peeks at
        return set()
    if table is None or "device_profile_name" not in table.schema.names:
        return set()
    return {str(v) for v in table.column("device_profile_name").to_pylist() if v}


def _inherit(folder: Path, files: NeuronFiles) -> None:
    """Framework traces, mapping files and NEFF folders one or two levels up."""
    ancestors = [folder.parent]
    if _PID_DIR.match(folder.parent.name) or (not _PID_DIR.match(folder.name) and folder.parent != folder):
        ancestors.append(folder.parent.parent)
    for ancestor in ancestors:
        if ancestor == ancestor.parent and ancestor == folder:
            break
        own = _own(ancestor)
        files.framework_mappings += [m for m in own.framework_mappings if m not in files.framework_mappings]
        if not files.neffs and (own.neffs or is_dir(ancestor / "neffs")):
            files.neff_root = str(ancestor)  # vLLM: NEFFs in <out>/neffs beside the pid folders
        if files.framework_traces or not own.framework_traces:
            continue
        pid_children = _pid_children(ancestor)
        if len(pid_children) <= 1:
            files.framework_traces = own.framework_traces
            files.framework_inherited = True
            continue
        matching = [t for t in own.framework_traces if files.pid >= 0 and files.pid in _trace_pids(Path(t))]
        if matching:
            files.framework_traces = matching
            files.framework_inherited = True
        else:
            files.notes.append(
                f"{len(own.framework_traces)} framework trace(s) in {ancestor.name}/ serve {len(pid_children)} "
                f"processes and none records pid {files.pid}; not attached"
            )


def _pid_children(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if _PID_DIR.match(p.name) and is_dir(p)]
    except OSError:
        return []


def _trace_pids(path: Path) -> set[int]:
    try:
        head = head_bytes(path, 1 << 18)
    except OSError:
        return set()
    return {int(m) for m in _PID_IN_TRACE.findall(head)}


def is_anchor(folder: Path) -> bool:
    """A folder that is a session by its own files (not by what is below or above it)."""
    own = _own(folder)
    return own.has_raw or bool(own.system_json or own.parquet_system)


def find_neuron_sessions(  # noqa: C901 - every documented capture layout is a case
    root: Path, listings: Callable[[Path], list[Entry] | None] = list_folder
) -> list[NeuronSessionRef]:
    anchors: list[Path] = []

    def walk(folder: Path, depth: int) -> None:
        listing = listings(folder)
        own = _own(folder, listing)
        if own.has_raw or own.system_json or own.parquet_system:
            if len(own.system_json) > 1 and not own.has_raw:
                anchors.extend(Path(p) for p in own.system_json)  # several exports side by side
            else:
                anchors.append(folder)
            return
        if depth >= _MAX_DEPTH:
            return
        children = sorted(
            (e for e in listing or () if e.is_real_dir and not e.name.startswith(".")),
            key=lambda e: natural_key(e.name),
        )
        for child in children:
            walk(child.path, depth + 1)

    walk(root, 0)
    if not anchors:
        own = _own(root, listings(root))
        if own.framework_mappings or (own.device_json and not own.framework_traces):
            anchors.append(root)  # framework trace + mapping only, or device profiles alone
    synthetic_root = (root / SYNTHETIC_MARKER).exists()
    sessions = []
    labels = [_label(anchor, root) for anchor in anchors]
    for anchor, label in zip(anchors, labels):
        folder = anchor if anchor.is_dir() else anchor.parent
        files = session_files(folder)
        parts = []
        if files.framework_traces:
            parts.append("framework trace" + (" (from the folder above)" if files.framework_inherited else ""))
        if files.system_json or files.parquet_system:
            parts.append("system profile")
        if files.device_json or files.parquet_device:
            parts.append("device profile")
        if files.has_raw and not files.has_exports:
            parts.append("raw .pb/.ntff (needs neuron-explorer)")
        synthetic = synthetic_root or (folder / SYNTHETIC_MARKER).exists() or _any_parent_marker(folder, root)
        sessions.append(NeuronSessionRef(label, str(anchor), ", ".join(parts), synthetic))
    return sessions


def _any_parent_marker(folder: Path, root: Path) -> bool:
    current = folder
    while current != root and root in current.parents:
        if (current / SYNTHETIC_MARKER).exists():
            return True
        current = current.parent
    return False


def _label(anchor: Path, root: Path) -> str:
    if anchor == root:
        return anchor.name
    rel = anchor.relative_to(root) if anchor.is_relative_to(root) else Path(anchor.name)
    for index, part in enumerate(rel.parts):
        match = _PID_DIR.match(part)
        if match:
            rest = rel.parts[index + 1 :]
            return f"pid {match.group('pid')}" + (f" @{rest[0]}" if rest else "")
    if anchor.is_file():
        return str(rel.with_suffix(""))
    name = str(rel)
    return name.removesuffix("@latest") if rel.parts[-1].endswith("@latest") else name
