"""Find the process-sessions of a Neuron profile output folder.

A TorchNeuron capture writes ``<profile_output_dir>/<instance-id>_pid_<pid>/[<timestamp>/]``
per process (rank), holding the framework ``trace.json`` beside ``ntrace.pb`` /
``trace_info.pb``, ``*.ntff`` device traces and ``*.neff`` graphs; Neuron Explorer's
exports (Parquet tables, legacy JSON) may sit beside them or in a folder of their own.
We accept any of these, 1–3 levels below the chosen folder, and never require the
``i-`` prefix or an EC2 id (``shared/reference/neuron-profile-formats.md`` §3).
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from trnscope.core.base.fs import is_dir, is_file
from trnscope.core.formats.sniff import looks_like_kineto

SYNTHETIC_MARKER = "SYNTHETIC.txt"
_PID_DIR = re.compile(r"^(?P<instance>.+)_pid_(?P<pid>\d+)$")
_MAX_DEPTH = 3


class NeuronSessionRef(msgspec.Struct):
    label: str
    path: str
    description: str = ""
    synthetic: bool = False


class NeuronFiles(msgspec.Struct):
    """What one process-session folder holds, by role."""

    folder: str
    framework_traces: list[str] = []
    system_binaries: list[str] = []  # ntrace.pb, trace_info.pb, cpu_util.pb, host_mem.pb
    device_traces: list[str] = []  # *.ntff
    neffs: list[str] = []
    framework_mappings: list[str] = []
    system_json: list[str] = []  # neuron-explorer system_profile.json
    device_json: list[str] = []  # device_profile_model_<id>.json
    parquet_dirs: list[str] = []  # folders holding SystemProfileEvents*.parquet / Instruction*.parquet

    @property
    def has_exports(self) -> bool:
        return bool(self.system_json or self.device_json or self.parquet_dirs)

    @property
    def is_session(self) -> bool:
        return bool(self.system_binaries or self.device_traces or self.has_exports or self.framework_mappings)


_FRAMEWORK_NAMES = re.compile(
    r"^(trace|pytorch_trace|neuron_trace|neuron_framework_trace_rank_\d+|.+\.pt\.trace)\.json(\.gz)?$"
)
_SYSTEM_BINARIES = {"ntrace.pb", "trace_info.pb", "cpu_util.pb", "host_mem.pb"}


def classify(folder: Path) -> NeuronFiles:
    files = NeuronFiles(str(folder))
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return files
    for entry in entries:
        name = entry.name
        if is_dir(entry):
            if _is_parquet_dir(entry):
                files.parquet_dirs.append(str(entry))
            continue
        if name in _SYSTEM_BINARIES:
            files.system_binaries.append(str(entry))
        elif name.endswith(".ntff"):
            files.device_traces.append(str(entry))
        elif name.endswith(".neff"):
            files.neffs.append(str(entry))
        elif name.startswith("framework_mapping") and name.endswith(".json"):
            files.framework_mappings.append(str(entry))
        elif name == "system_profile.json" or (name.startswith("system_profile") and name.endswith(".json")):
            files.system_json.append(str(entry))
        elif name.startswith("device_profile") and name.endswith(".json"):
            files.device_json.append(str(entry))
        elif _FRAMEWORK_NAMES.match(name):
            files.framework_traces.append(str(entry))
        elif name.endswith(".parquet") and _is_parquet_dir(folder) and str(folder) not in files.parquet_dirs:
            files.parquet_dirs.append(str(folder))
    if not files.framework_traces:
        files.framework_traces = [str(p) for p in _other_kineto_jsons(folder, entries)]
    return files


def _is_parquet_dir(folder: Path) -> bool:
    try:
        return any(
            p.name.endswith(".parquet") and p.name.split("_")[0].split(".")[0] in _PARQUET_TABLES
            for p in folder.iterdir()
        )
    except OSError:
        return False


_PARQUET_TABLES = {
    "SystemProfileEvents",
    "Instruction",
    "DmaPacket",
    "DmaPacketAggregated",
    "CcOp",
    "Summary",
    "Metadata",
}


def _other_kineto_jsons(folder: Path, entries: list[Path]) -> list[Path]:
    out = []
    for entry in entries:
        if (
            is_file(entry)
            and entry.name.endswith((".json", ".json.gz"))
            and not entry.name.startswith(("system_profile", "device_profile", "framework_mapping"))
        ):
            try:
                if looks_like_kineto(entry):
                    out.append(entry)
            except OSError:
                continue
    return out


def find_neuron_sessions(root: Path) -> list[NeuronSessionRef]:
    found: list[tuple[Path, NeuronFiles]] = []

    def walk(folder: Path, depth: int) -> None:
        files = classify(folder)
        if files.is_session:
            found.append((folder, files))
            return
        if depth >= _MAX_DEPTH:
            return
        try:
            children = sorted(
                p for p in folder.iterdir() if is_dir(p) and not p.is_symlink() and not p.name.startswith(".")
            )
        except OSError:
            return
        for child in children:
            walk(child, depth + 1)

    walk(root, 0)
    synthetic_root = (root / SYNTHETIC_MARKER).exists()
    sessions = []
    for folder, files in found:
        label = _label(folder, root)
        parts = []
        if files.framework_traces:
            parts.append("framework trace")
        if files.system_json or files.parquet_dirs:
            parts.append("system profile")
        if files.device_json or files.parquet_dirs:
            parts.append("device profile")
        if files.system_binaries and not files.has_exports:
            parts.append("raw .pb/.ntff (needs neuron-explorer)")
        synthetic = synthetic_root or (folder / SYNTHETIC_MARKER).exists() or _any_parent_marker(folder, root)
        sessions.append(NeuronSessionRef(label, str(folder), ", ".join(parts), synthetic))
    return sessions


def _any_parent_marker(folder: Path, root: Path) -> bool:
    current = folder
    while current != root and root in current.parents:
        if (current / SYNTHETIC_MARKER).exists():
            return True
        current = current.parent
    return False


def _label(folder: Path, root: Path) -> str:
    if folder == root:
        return folder.name
    rel = folder.relative_to(root)
    for part in rel.parts:
        match = _PID_DIR.match(part)
        if match:
            rest = rel.parts[rel.parts.index(part) + 1 :]
            return f"pid {match.group('pid')}" + (f" @{rest[0]}" if rest else "")
    return str(rel)
