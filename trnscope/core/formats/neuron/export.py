"""Convert raw Neuron captures (``.pb`` / ``.ntff`` / ``.neff``) with ``neuron-explorer``.

The binaries have no published schema; the supported reader is ``neuron-explorer
view``, which writes Parquet.  We run it (when it is on PATH and the user asks) on the
folder that holds the NEFFs — the session, or the output root when the NEFFs sit in a
``neffs/`` folder beside the pid folders (vLLM) — into the user cache directory, never
into the capture folder.  A cache entry is keyed on the capture's files (names, sizes,
mtimes, ctimes), so a capture that changed is exported again; an entry that cannot be
read is removed (trnscope made it) and exported again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from trnscope.core.base.cachedir import writable_dir
from trnscope.core.base.errors import InputError, TrnscopeError
from trnscope.core.base.text import safe_text
from trnscope.core.formats.neuron.discover import NeuronFiles, find_neuron_sessions, parquet_tables, session_files
from trnscope.core.formats.neuron.parquet import table_files

DONE_MARKER = "DONE"
_KEY_FILES_LIMIT = 20_000  # files hashed into the key; a capture folder larger than this is keyed on the first ones


def explorer_command(folder: Path, output: Path) -> list[str]:
    return ["neuron-explorer", "view", "-d", str(folder), "--output-format", "parquet", "--output-file", str(output)]


def _capture_files(files: NeuronFiles) -> list[Path]:
    """The raw files the export is made from: the session's binaries and NEFFs (also
    those under the export root when NEFFs live outside the session)."""
    listed = [*files.system_binaries, *files.device_traces, *files.neffs]
    root = Path(files.neff_root or files.folder)
    if root != Path(files.folder):
        with contextlib.suppress(OSError):
            listed += [str(p) for p in sorted(root.glob("neffs/*.neff"))[:_KEY_FILES_LIMIT]]
    return [Path(p) for p in sorted(set(listed))[:_KEY_FILES_LIMIT]]


def export_key(files: NeuronFiles) -> str:
    digest = hashlib.blake2b(digest_size=12)
    digest.update(str(Path(files.neff_root or files.folder).resolve()).encode())
    for path in _capture_files(files):
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ctime_ns}\n".encode())
    return digest.hexdigest()


def export_folder_for(files: NeuronFiles) -> Path | None:
    """Where the Parquet export of this session lives in the cache (None if no cache)."""
    base = writable_dir("neuron-export")
    if base is None:
        return None
    return base / export_key(files)


def _readable(target: Path) -> bool:
    """A finished export whose SystemProfileEvents parts all open as Parquet."""
    if not (target / DONE_MARKER).is_file():
        return False
    return _readable_after_run(target)


def cached_export(files: NeuronFiles) -> Path | None:
    target = export_folder_for(files)
    return target if target is not None and _readable(target) else None


def corrupt_export(files: NeuronFiles) -> Path | None:
    """A finished export of this capture in the cache that no longer reads (a Parquet
    part cut short or damaged): it must be made again, not "converted yet"."""
    target = export_folder_for(files)
    if target is None or not (target / DONE_MARKER).is_file():
        return None
    return None if _readable_after_run(target) else target


def discard_export(target: Path) -> None:
    """Remove a cache entry trnscope wrote (it has our marker or sits in our cache)."""
    base = writable_dir("neuron-export")
    if base is not None and target.parent == base:
        shutil.rmtree(target, ignore_errors=True)


ExportProgress = Callable[[float, int], None]  # (seconds so far, bytes written so far)


def run_export(files: NeuronFiles, *, progress: ExportProgress | None = None) -> Path:
    """Run ``neuron-explorer view -d <NEFF folder> --output-format parquet --output-file OUT``."""
    executable = shutil.which("neuron-explorer")
    target = export_folder_for(files)
    if target is None:
        raise TrnscopeError("no writable cache directory for the export (set TRNSCOPE_CACHE_DIR)")
    command = explorer_command(Path(files.neff_root or files.folder), target)
    if executable is None:
        raise TrnscopeError(
            f"neuron-explorer is not on PATH; on a host with aws-neuronx-tools run: {' '.join(command)}"
        )
    if _readable(target):
        return target
    discard_export(target)  # unfinished or unreadable: ours to redo
    target.mkdir(parents=True)
    env = {**os.environ}
    env.setdefault("HOME", str(target))  # neuron-explorer needs a writable HOME
    started = time.monotonic()
    done = threading.Event()

    def ticker() -> None:
        while not done.wait(0.5):
            if progress is not None:
                progress(time.monotonic() - started, sum(p.stat().st_size for p in target.rglob("*") if p.is_file()))

    thread = threading.Thread(target=ticker, daemon=True)
    thread.start()
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    finally:
        done.set()
        thread.join()
    if result.returncode != 0:
        discard_export(target)
        raise InputError(f"neuron-explorer failed with status {result.returncode}: {_last_line(result)}")
    if not _readable_after_run(target):
        discard_export(target)
        raise InputError("neuron-explorer finished but wrote no SystemProfileEvents table; nothing to read")
    (target / DONE_MARKER).write_text(" ".join(command) + "\n")
    return target


def _readable_after_run(target: Path) -> bool:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        pq = None
    try:
        folders = [p for p in [target, *target.rglob("*")] if p.is_dir() and "SystemProfileEvents" in parquet_tables(p)]
        if not folders:
            return False
        if pq is not None:
            for part in table_files(folders[0], "SystemProfileEvents"):
                pq.read_schema(part)
        return True
    except Exception:  # a truncated or foreign file: not a usable export
        return False


def _last_line(result: subprocess.CompletedProcess[str]) -> str:
    """neuron-explorer's last meaningful line, as one clean line of text."""
    for stream in (result.stderr, result.stdout):
        lines = [line.strip() for line in (stream or "").splitlines() if line.strip()]
        if lines:
            return safe_text(lines[-1])[:300]
    return "no output"


def ensure_export(folder: Path, *, progress: ExportProgress | None = None) -> None:
    """Run neuron-explorer on every raw process-session under ``folder`` that has no
    export yet (``--export``); sessions with exports are left alone."""
    refs = find_neuron_sessions(folder)
    sessions = [Path(s.path) for s in refs if Path(s.path).is_dir()] or [folder]
    for session in sessions:
        files = session_files(session)
        if files.system_json or files.parquet_system or not files.has_raw:
            continue
        if cached_export(files) is not None:
            continue
        run_export(files, progress=progress)
