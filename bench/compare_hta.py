"""``trnscope diagnose`` busy/idle against HTA's temporal breakdown, on the corpus.

    python -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install holistictraceanalysis
    python bench/compare_hta.py --hta-python /tmp/hta-venv/bin/python

HTA is not a dependency of trnscope: it runs in its own environment, one trace per
folder (HTA reads every trace in a folder as one rank each), and prints its
``get_temporal_breakdown()`` as JSON; trnscope's side is ``diagnose --format json``.
Writes ``bench/out/compare_hta.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
CORPUS = (ROOT.parent.parent / "shared" / "corpus").resolve()

HTA_SIDE = r"""
import json, sys, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
analyzer = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=sys.argv[2] == "1")
df = analyzer.get_temporal_breakdown(visualize=False)
print(json.dumps(df.to_dict(orient="records"), default=float))
"""


def hta_breakdown(python: str, trace: Path, last_step: bool) -> list[dict] | str:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / trace.name).symlink_to(trace)
        run = subprocess.run(
            [python, "-c", HTA_SIDE, folder, "1" if last_step else "0"], capture_output=True, text=True, timeout=600
        )
    if run.returncode != 0:
        return (run.stderr.strip().splitlines() or ["failed"])[-1][:200]
    return json.loads(run.stdout.strip().splitlines()[-1])


def trnscope_devices(trace: Path) -> list[dict]:
    run = subprocess.run(
        [sys.executable, "-m", "trnscope", "diagnose", str(trace), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT.parent,
        timeout=600,
    )
    return json.loads(run.stdout)["devices"] if run.returncode == 0 else []


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hta-python", required=True)
    args = parser.parse_args()
    rows = []
    print("HTA with include_last_profiler_step=True; busy = span − idle")
    for trace in sorted(CORPUS.glob("*.json*")):
        # HTA's default drops the last ProfilerStep; with it kept, the spans are comparable
        hta = hta_breakdown(args.hta_python, trace, last_step=True)
        ours = trnscope_devices(trace)
        row = {
            "trace": trace.name,
            "trnscope": ours,
            "hta": hta,
            "hta_default": hta_breakdown(args.hta_python, trace, False),
        }
        rows.append(row)
        if isinstance(hta, str):
            print(f"{trace.name:42} HTA failed: {hta}")
            continue
        for rank in hta:
            kernel = rank["kernel_time(us)"]
            idle = rank["idle_time(us)"]
            busy = sum(d["busy_us"] for d in ours)
            span = max((d["span_us"] for d in ours), default=0.0)
            print(
                f"{trace.name:40} HTA span {kernel:10.1f} busy {kernel - idle:10.1f} idle {rank['idle_time_pctg']:5.1f}% | "
                f"trnscope span {span:10.1f} busy {busy:10.1f} idle "
                f"{100 * sum(d['idle_us'] for d in ours) / max(sum(d['span_us'] for d in ours), 1e-9):5.1f}%"
            )
    out = ROOT / "out"
    out.mkdir(exist_ok=True)
    (out / "compare_hta.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
