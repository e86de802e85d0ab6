"""Convert raw Neuron captures (``.pb`` / ``.ntff`` / ``.neff``) with ``neuron-explorer``.

The binaries have no published schema; the supported reader is ``neuron-explorer
view``, which writes Parquet.  We run it (when it is on PATH and the user agrees)
into the user cache directory — never into the capture folder — and read the result
from there on later opens.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from trnscope.core.base.cachedir import writable_dir
from trnscope.core.base.errors import InputError, TrnscopeError
from trnscope.core.formats.neuron.discover import classify, find_neuron_sessions


def explorer_command(folder: Path, output: Path) -> list[str]:
    return ["neuron-explorer", "view", "-d", str(folder), "--output-format", "parquet", "--output-file", str(output)]


def export_folder_for(folder: Path) -> Path | None:
    """Where the Parquet export of ``folder`` lives in the cache (None if no cache)."""
    base = writable_dir("neuron-export")
    if base is None:
        return None
    stat = folder.stat()
    key = hashlib.blake2b(f"{folder.resolve()}:{stat.st_mtime_ns}:{stat.st_ino}".encode(), digest_size=12).hexdigest()
    return base / key


def run_export(folder: Path, *, echo: bool = True) -> Path:
    """Run ``neuron-explorer view -d FOLDER --output-format parquet --output-file OUT``."""
    executable = shutil.which("neuron-explorer")
    target = export_folder_for(folder)
    if target is None:
        raise TrnscopeError("no writable cache directory for the export (set TRNSCOPE_CACHE_DIR)")
    command = explorer_command(folder, target)
    if executable is None:
        raise TrnscopeError(
            f"neuron-explorer is not on PATH; on a host with aws-neuronx-tools run: {' '.join(command)}"
        )
    if (target / "DONE").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    env = {**os.environ}
    env.setdefault("HOME", str(target))  # neuron-explorer needs a writable HOME
    started = time.monotonic()
    done = threading.Event()

    def ticker() -> None:
        while not done.wait(0.5):
            if echo:
                size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
                sys.stderr.write(f"\rneuron-explorer: {time.monotonic() - started:5.1f}s, {size / 1e6:.1f} MB written")
                sys.stderr.flush()

    thread = threading.Thread(target=ticker, daemon=True)
    thread.start()
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env)
    finally:
        done.set()
        thread.join()
        if echo:
            sys.stderr.write("\r\033[K")
    if result.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        last = (result.stderr or result.stdout or "").strip().splitlines()[-1:] or ["no output"]
        raise InputError(f"neuron-explorer failed with status {result.returncode}: {last[0]}")
    (target / "DONE").write_text(" ".join(command) + "\n")
    return target


def ensure_export(folder: Path, *, echo: bool = True) -> None:
    """Run neuron-explorer on every raw process-session under ``folder`` that has no
    export yet (``--export``); sessions with exports are left alone."""
    sessions = [Path(s.path) for s in find_neuron_sessions(folder)] or [folder]
    for session in sessions:
        files = classify(session)
        if files.has_exports or not (files.system_binaries or files.device_traces):
            continue
        target = export_folder_for(session)
        if target is not None and (target / "DONE").exists():
            continue
        run_export(session, echo=echo)
