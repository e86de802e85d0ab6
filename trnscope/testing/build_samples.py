"""Rebuild the bundled SYNTHETIC Trainium sample:

    python -m trnscope.testing.build_samples [--out sample_traces]

The folder is written beside the old one and swapped in; an existing folder is only
replaced when it carries the synthetic marker this generator writes (never a folder of
someone else's).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from trnscope.core.formats.neuron.discover import SYNTHETIC_MARKER
from trnscope.testing.synth_neuron import write_synthetic_session

SESSION_NAME = "trn_synthetic_rmsnorm_session"


def build(out: Path) -> Path:
    target = out / SESSION_NAME
    if target.exists() and not (target / SYNTHETIC_MARKER).is_file():
        raise SystemExit(f"{target} exists and is not a synthetic sample written by this tool; not replacing it")
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=out))
    try:
        write_synthetic_session(staging / SESSION_NAME)
        if target.exists():
            shutil.rmtree(target)
        (staging / SESSION_NAME).rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trnscope.testing.build_samples", description=__doc__)
    parser.add_argument("--out", default="sample_traces", help="folder that holds the samples")
    args = parser.parse_args(argv)
    target = build(Path(args.out))
    sys.stdout.write(f"wrote {target} (SYNTHETIC)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
