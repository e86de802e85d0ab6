"""Stand-ins for the programs trnscope runs but that only exist on Trainium hosts.

``standin_explorer`` writes an executable ``neuron-explorer`` into a folder (put it first
on PATH): it checks it is called as the documented ``view -d <folder> --output-format
parquet --output-file <out>``, logs its arguments, and writes the SYNTHETIC Parquet
export of the capture it was pointed at — or fails the way a real one does.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

_REPO = Path(__file__).resolve().parent.parent.parent


def standin_explorer(
    bin_dir: Path,
    *,
    seed_from_pid: bool = False,
    exports: dict[str, int] | None = None,
    runs: Path | None = None,
    fail: tuple[int, str] | None = None,
) -> Path:
    """The stand-in's path.  It writes the exports of ``write_exports_for(out,
    **exports)``; ``seed_from_pid``: of the rank whose ``*_pid_<N>`` folder it was
    pointed at (the layouts' fixtures are seeded N − 5000, three steps); ``runs``: a
    file counting its runs; ``fail``: (exit status, stderr text) instead of exporting.
    ``$STANDIN_LOG``, when set, receives its arguments as JSON."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "neuron-explorer"
    body = [
        f"#!{sys.executable}",
        "import json, os, sys",
        "from pathlib import Path",
        "args = sys.argv[1:]",
        'if os.environ.get("STANDIN_LOG"):',
        '    Path(os.environ["STANDIN_LOG"]).write_text(json.dumps(args))',
    ]
    if fail is not None:
        body += [f"sys.stderr.write({fail[1]!r})", f"sys.exit({fail[0]})"]
    else:
        body += [
            'assert args[0] == "view", args',
            'folder = Path(args[args.index("-d") + 1])',
            'assert args[args.index("--output-format") + 1] == "parquet", args',
            'out = Path(args[args.index("--output-file") + 1])',
            'assert (folder / "ntrace.pb").exists(), folder',
        ]
        if runs is not None:
            body += [
                f"runs = Path({str(runs)!r})",
                'runs.write_text(str(int(runs.read_text() or 0) + 1) if runs.exists() else "1")',
            ]
        body += [f"sys.path.insert(0, {str(_REPO)!r})", "from trnscope.testing.synth_neuron import write_exports_for"]
        if seed_from_pid:
            body += [
                'pid = int(folder.name.rsplit("_pid_", 1)[1])',
                "write_exports_for(out, pid=pid, seed=pid - 5000, steps=3)",
            ]
        else:
            body += [f"write_exports_for(out, **{exports or {}!r})"]
    script.write_text("\n".join(body) + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script
