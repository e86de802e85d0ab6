"""``trnscope neuron-export``: run neuron-explorer on raw Neuron captures."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trnscope.cli.sources import clear_progress_line, export_printer
from trnscope.core.base.errors import InputError
from trnscope.core.base.text import safe_text
from trnscope.core.formats.neuron.discover import find_neuron_sessions, session_files
from trnscope.core.formats.neuron.export import run_export


def cmd_export(args: argparse.Namespace) -> int:
    folder = Path(args.path)
    if not folder.is_dir():
        raise InputError(f"not a folder: {folder}")
    sessions = find_neuron_sessions(folder) or []
    targets = [Path(s.path) for s in sessions if Path(s.path).is_dir()] or [folder]
    for session in targets:
        files = session_files(session)
        if not files.has_raw:
            print(safe_text(f"{session}: no raw .pb/.ntff capture to export"))
            continue
        if not args.yes and sys.stdin.isatty():
            answer = input(f"run neuron-explorer on {session}? [y/N] ").strip().lower()
            if answer not in ("y", "yes"):
                continue
        try:
            out = run_export(files, progress=export_printer())
        finally:
            clear_progress_line()
        print(safe_text(f"{session}: Parquet export in {out}"))
    return 0
