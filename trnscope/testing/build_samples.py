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
NKI_NAME = "nki_synthetic_rmsnorm_benchmarks"
SYNTHETIC_NOTE = (
    "SYNTHETIC: written by trnscope.testing.build_samples from neuron-evidence.md §8 (no real runtime events "
    "file is public). Three NKI RMSNorm kernel variants as their benchmarks would save them.\n"
)


def write_nki_benchmarks(folder: Path) -> None:
    """Three kernel variants' runtime events: a baseline (LNC=2, device clock, warm-ups
    kept), a tiled one 8% faster, a fused one twice as fast (host clock, the form
    re-serialised by an alignment harness)."""
    from trnscope.testing.synth_nrt_events import write_benchmark

    folder.mkdir(parents=True)
    (folder / SYNTHETIC_MARKER).write_text(SYNTHETIC_NOTE)
    write_benchmark(folder / "rmsnorm_baseline.json", kernel="rmsnorm_baseline", median_us=124, lnc=2, warmup=3,
                    executions=50, seed=11)  # fmt: skip
    write_benchmark(folder / "rmsnorm_tiled.json", kernel="rmsnorm_tiled", median_us=114, lnc=2, warmup=3,
                    executions=50, seed=12)  # fmt: skip
    write_benchmark(folder / "rmsnorm_fused.json", kernel="rmsnorm_fused", median_us=62, lnc=2, warmup=3,
                    executions=50, seed=13, clock="host", pretty=True)  # fmt: skip


def _swap_in(out: Path, name: str, write: object) -> Path:
    target = out / name
    if target.exists() and not (target / SYNTHETIC_MARKER).is_file():
        raise SystemExit(f"{target} exists and is not a synthetic sample written by this tool; not replacing it")
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=out))
    try:
        write(staging / name)  # type: ignore[operator]
        if target.exists():
            shutil.rmtree(target)
        (staging / name).rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def build(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    _swap_in(out, NKI_NAME, write_nki_benchmarks)
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
