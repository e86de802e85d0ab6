"""What is at a path: one trace, a capture session, a Neuron profile, or a folder of traces."""

from __future__ import annotations

import errno
import re
from collections.abc import Callable
from pathlib import Path

import msgspec

from trnscope.core.base.errors import InputError
from trnscope.core.base.fs import Entry, FolderListings, list_folder
from trnscope.core.base.text import natural_key, numbers_in
from trnscope.core.formats.sniff import (
    head_bytes,
    looks_like_kineto,
    looks_like_neuron_json,
    looks_like_runtime_events,
    one_jobs_ranks,
)
from trnscope.core.formats.source import check_readable_file
from trnscope.core.model.session import SESSION_FILE, ManifestTooLarge, SessionManifest, manifest_bytes, read_manifest

_TRACE_SUFFIXES = (".json", ".json.gz", ".json.tmp")
_MAX_DEPTH = 4
_PROFILES_LOOKED_INTO = 64  # subfolders of a folder searched for kernel benchmarks
_RANK_FOLDER = re.compile(r"rank\d+")  # where ``capture run`` under torchrun puts each rank's session


class SourceRef(msgspec.Struct):
    """One loadable thing: a Kineto trace file, or a Neuron process-session folder."""

    label: str
    path: str
    kind: str = "kineto"  # "kineto" | "neuron"
    description: str = ""
    synthetic: bool = False
    torch_version: str = ""  # the PyTorch that wrote it, where a capture's session.json says


class ProfileRef(msgspec.Struct):
    root: str
    kind: str  # "trace" | "session" | "neuron" | "folder" | "profiles" (a folder of sessions, benchmarks)
    sources: list[SourceRef]
    manifest: SessionManifest | None = None
    notes: list[str] = []

    def select(self, label: str | None) -> SourceRef:
        """The source labelled ``label``; a number names the label that carries that
        number (``--select 299`` → ``pid 299``, ``rank3``) before it names a position."""
        if not self.sources:
            raise InputError(f"{self.root}: nothing to open")
        if label is None:
            return self.sources[0]
        for source in self.sources:
            if source.label == label:
                return source
        if label.strip().isdigit():
            wanted = int(label)
            numbered = [s for s in self.sources if numbers_in(s.label)[-1:] == [wanted]]
            if len(numbered) == 1:
                return numbered[0]
        for index, source in enumerate(self.sources):
            if label == str(index):
                return source
        choices = ", ".join(s.label for s in self.sources)
        raise InputError(f"{self.root}: no trace labelled {label!r}; choose one of: {choices}")


def _trace_files(
    folder: Path, passed_over: list[Path] | None = None, listings: Callable[[Path], list[Entry] | None] = list_folder
) -> list[Path]:
    """The traces under ``folder`` (natural order), and in ``passed_over`` the files named
    like traces that are not (empty, cut before their events, other JSON); ``listings``
    reads a folder (a ``FolderListings`` shares its readings with another walk)."""
    found: list[Path] = []

    def walk(directory: Path, depth: int) -> None:
        entries = listings(directory)
        if entries is None:
            return
        for entry in sorted(entries, key=lambda entry: natural_key(entry.name)):
            if entry.name.startswith("."):
                continue
            try:  # an unreadable or vanishing entry is skipped, not fatal
                if entry.is_real_dir and depth < _MAX_DEPTH:
                    walk(entry.path, depth + 1)
                elif entry.is_file and entry.name.endswith(_TRACE_SUFFIXES):
                    if looks_like_kineto(entry.path):
                        found.append(entry.path)
                    elif passed_over is not None and entry.name != SESSION_FILE:
                        # (a capture's manifest is no trace, and no loss: each rank's, in a job's folder)
                        passed_over.append(entry.path)
            except OSError:
                continue

    walk(folder, 0)
    return found


def _label_for(path: Path, root: Path) -> str:
    rel = path.relative_to(root) if path.is_relative_to(root) else path
    name = str(rel)
    for suffix in (".pt.trace.json.gz", ".pt.trace.json", ".json.gz", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _check_exists(path: Path) -> None:
    """One line that names the real reason a path cannot be opened."""
    try:
        path.stat()
    except FileNotFoundError:
        dangling = path.is_symlink()
        raise InputError(f"no such file or directory: {path}" + (" (a link to nothing)" if dangling else "")) from None
    except PermissionError:
        raise InputError(f"permission denied: {path}") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise InputError(f"{path}: too many levels of symbolic links (a link loop)") from None
        raise InputError(f"cannot open {path}: {error.strerror or error}") from None


def discover(path: Path) -> ProfileRef:
    _check_exists(path)
    if path.is_dir():
        return _discover_folder(path)
    check_readable_file(path)
    if looks_like_neuron_json(path):
        return ProfileRef(str(path), "neuron", [SourceRef(path.stem, str(path), kind="neuron")])
    return ProfileRef(
        str(path),
        "trace",
        [SourceRef(_label_for(path, path.parent), str(path), torch_version=_torch_version_beside(path))],
    )


def _discover_folder(folder: Path) -> ProfileRef:
    try:
        next(iter(folder.iterdir()), None)
    except PermissionError:
        raise InputError(f"permission denied: {folder}") from None
    if (folder / SESSION_FILE).is_file():
        return _discover_session(folder)
    profiles = _profile_children(folder)
    if profiles:
        return _discover_profiles(folder, profiles)
    events = _runtime_event_files(folder)
    if events:  # kernel benchmarks' runtime events: one variant per file, named after it
        return ProfileRef(
            str(folder),
            "folder",
            [SourceRef(_label_for(p, folder), str(p), kind="neuron", synthetic=_marked_synthetic(p)) for p in events],
        )
    from trnscope.core.formats.neuron.discover import find_neuron_sessions

    listings = FolderListings()  # the two walks below read each folder once
    neuron = find_neuron_sessions(folder, listings)
    if neuron:
        return ProfileRef(
            str(folder),
            "neuron",
            [
                SourceRef(s.label, s.path, kind="neuron", description=s.description, synthetic=s.synthetic)
                for s in neuron
            ],
        )
    passed_over: list[Path] = []
    traces = _trace_files(folder, passed_over, listings)
    if not traces:
        raise InputError(
            f"{folder}: no PyTorch profiler trace (.json / .json.gz with traceEvents) found in this folder"
        )
    notes = []
    if passed_over:  # a rank's empty or cut file must not vanish from a multi-rank answer unsaid
        names = ", ".join(_label_for(p, folder) for p in passed_over[:4]) + (" …" if len(passed_over) > 4 else "")
        notes.append(
            f"{len(passed_over)} file{'s' if len(passed_over) > 1 else ''} named like a trace "
            f"{'are' if len(passed_over) > 1 else 'is'} not one and {'were' if len(passed_over) > 1 else 'was'} "
            f"not read (empty, cut before the events, or other JSON): {names}"
        )
    sources = [SourceRef(_label_for(p, folder), str(p), torch_version=_torch_version_beside(p)) for p in traces]
    return ProfileRef(str(folder), "folder", sources, notes=notes)


def _profile_children(folder: Path) -> list[Path]:
    """The subfolders of ``folder`` that are profiles of their own — capture sessions,
    folders of kernel benchmarks — when there are two or more and they are not one
    job's ranks; else none.  (``trnscope summary sample_traces`` showed a Neuron
    benchmark's kernel and offered to sum "ranks", while twelve sessions of Kineto
    traces went unnamed: the Neuron search below found only its own kind.)"""
    try:
        children = sorted(
            (entry for entry in folder.iterdir() if entry.is_dir() and not entry.name.startswith(".")),
            key=lambda entry: natural_key(entry.name),
        )
    except OSError:
        return []
    sessions, benchmarks = [], []
    for child in children:
        try:
            manifest = child / SESSION_FILE
            if manifest.is_file() and not looks_like_kineto(manifest):  # (a trace so named is a trace)
                sessions.append(child)
            # (a benchmark folder is told by its files' heads: looked for among a few
            # folders only, not in each of a 256-rank job's)
            elif len(children) <= _PROFILES_LOOKED_INTO and _runtime_event_files(child):
                benchmarks.append(child)
        except OSError:
            continue
    if len(sessions) + len(benchmarks) < 2:
        return []
    if not benchmarks:  # one job's ranks, each rank's capture a session of its own
        if all(_RANK_FOLDER.fullmatch(session.name) for session in sessions):  # capture's DIR/rank<N>
            return []
        traces = [trace for session in sessions for trace in _trace_files(session)[:1]]
        if len(traces) == len(sessions) and one_jobs_ranks(traces):
            return []
    return sorted(sessions + benchmarks, key=lambda entry: natural_key(entry.name))


def _discover_profiles(folder: Path, profiles: list[Path]) -> ProfileRef:
    """A folder of profiles: every one's traces, each labelled under its profile's name
    (``cpu_rmsnorm_session/eager``), so ``--select`` and ``compare`` reach any of them."""
    sources: list[SourceRef] = []
    notes: list[str] = []
    for child in profiles:
        try:
            ref = _discover_folder(child)
        except InputError as error:
            notes.append(str(error))
            continue
        notes += ref.notes
        sources += [msgspec.structs.replace(source, label=f"{child.name}/{source.label}") for source in ref.sources]
    if not sources:
        raise InputError(f"{folder}: none of its {len(profiles)} profiles could be read")
    return ProfileRef(str(folder), "profiles", sources, notes=notes)


def _torch_version_beside(trace: Path) -> str:
    """The PyTorch release a capture's ``session.json`` next to ``trace`` names (one
    rank's folder of a job, or a variant's trace opened on its own); empty without one."""
    manifest = trace.parent / SESSION_FILE
    if not manifest.is_file():
        return ""
    try:  # (one field: the rest, key_averages() rows included, is skipped unbuilt)
        return msgspec.json.decode(manifest_bytes(manifest), type=_TorchVersion).torch_version
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, ManifestTooLarge):
        return ""  # the session itself says what is wrong with it when opened as one


class _TorchVersion(msgspec.Struct):
    torch_version: str = ""


def _runtime_event_files(folder: Path) -> list[Path]:
    """The Neuron runtime events files right in ``folder`` when it holds nothing else a
    Neuron or Kineto reader would take (a folder of kernel benchmark results)."""
    found, other = [], False
    try:
        entries = sorted(folder.iterdir(), key=lambda entry: natural_key(entry.name))
    except OSError:
        return []
    for entry in entries:
        try:
            if entry.name.startswith(".") or not entry.is_file():
                other = other or (entry.is_dir() and not entry.name.startswith("."))
                continue
            if not entry.name.endswith((".json", ".json.gz")):
                continue
            head = head_bytes(entry, 1 << 16)
        except OSError:
            continue
        if looks_like_runtime_events(head):
            found.append(entry)
        elif b'"traceEvents"' in head or b'"trace_event' in head:
            other = True
    return [] if other else found


def _marked_synthetic(path: Path) -> bool:
    return (path.parent / "SYNTHETIC.txt").exists() or b'"synthetic"' in head_bytes(path, 4096).lower()


def _discover_session(folder: Path) -> ProfileRef:
    try:
        manifest = read_manifest(folder)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, ManifestTooLarge) as error:
        raise InputError(f"{folder / SESSION_FILE}: unreadable session manifest ({error})") from None
    sources: list[SourceRef] = []
    notes: list[str] = []
    for variant in manifest.variants:
        if variant.status != "ok":
            notes.append(f"variant {variant.label!r} failed during capture: {variant.error}")
            continue
        sources.append(
            SourceRef(
                variant.label,
                str(folder / variant.trace),
                kind=variant.trace_format,
                description=variant.description,
                synthetic=manifest.synthetic,
                torch_version=manifest.torch_version,
            )
        )
    if not sources:
        raise InputError(f"{folder}: the session has no successfully captured variant")
    return ProfileRef(str(folder), "session", sources, manifest=manifest, notes=notes)
