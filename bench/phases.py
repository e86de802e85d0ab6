"""Where a first open's time goes, on real traces, against ``json.load``'s.

    python bench/phases.py [PATH ...] [--rounds 5] [--no-corpus] [--min-mb 0]

Each round runs, in fresh processes and alternating, ``json.load(gzip.open(PATH))`` and
``trnscope summary PATH --format json --no-cache`` with ``bench/phases_hook`` on its
path, which times the steps of the run from inside it (see there).  A step's time is
from the process's launch, as this script saw it, on the clock both read:

* start-up: launch → the load begins (the interpreter, the imports, the arguments, the
  gzip read-ahead's fork);
* gunzip wait: the load waiting for the read-ahead child to finish inflating;
* decode: the JSON decoded into columns (the decode workers included);
* merge: the ranges' columns joined, strings re-interned;
* link: the host tree, device links and flows;
* times: ``key_averages``' per-event figures;
* other load: the rest of the load (opening, cutting the file into ranges, roles);
* tables: the op and kernel tables;
* print + exit: the rest, until the process was reaped.

Issue 20 asks for a first open at 3× ``json.load``'s speed: the "3× budget" column is
``json.load``'s median ÷ 3, the whole time a first open may take.  Medians of each step
over the rounds (they need not add up to the median total).  A Markdown table on stdout
and ``bench/out/phases.json``.  The hook adds a function call per timed step, nothing
measurable; its own ``sitecustomize`` import is part of start-up (under 1 ms).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from real_traces import JSON_LOAD, OUT, ROOT, machine, run_process, size_text, traces_to_run, unpacked_bytes

HOOK = ROOT / "bench" / "phases_hook"
STEPS = ("start-up", "gunzip wait", "decode", "merge", "link", "times", "other load", "tables", "print + exit")


def run_once(command: list[str], env: dict[str, str]) -> tuple[float, dict[str, float] | None]:
    """Wall seconds of one process and, when the hook is on its path and wrote them,
    its steps (seconds)."""
    with tempfile.TemporaryDirectory(prefix="trnscope-phases-") as folder:
        target = Path(folder) / "phases.json"
        launched, wall, _usage = run_process(command, {**env, "TRNSCOPE_BENCH_PHASES_FILE": str(target)}, ROOT)
        if not target.exists():
            return wall, None
        return wall, steps_of(json.loads(target.read_text()), launched, wall)


def steps_of(recorded: dict, launched: float, wall: float) -> dict[str, float]:
    """The steps of one run from the calls its hook timed."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for label, started, ended in recorded["calls"]:
        spans.setdefault(label, []).append((started, ended))

    def took(*labels: str) -> float:
        return sum(end - start for label in labels for start, end in spans.get(label, []))

    (load_start, load_end), *_ = spans["open_analysis"]
    load = load_end - load_start
    timed_in_load = took("wait", "decode_in_parallel", "decode_sequentially", "merge_ranges", "link", "event_times")
    tables = took("build_op_table", "build_kernel_table")
    return {
        "start-up": load_start - launched,
        "gunzip wait": took("wait"),
        "decode": took("decode_in_parallel", "decode_sequentially"),
        "merge": took("merge_ranges"),
        "link": took("link"),
        "times": took("event_times"),
        "other load": load - timed_in_load,
        "tables": tables,
        "print + exit": wall - (load_end - launched) - tables,
    }


def measure(trace: Path, rounds: int) -> dict:
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    hooked = {**plain, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HOOK)])}
    summary = [sys.executable, "-m", "trnscope", "summary", str(trace), "--format", "json", "--no-cache"]
    loads: list[float] = []
    opens: list[float] = []
    steps: dict[str, list[float]] = {step: [] for step in STEPS}
    for round_number in range(rounds):
        runs = [("json.load", [sys.executable, "-c", JSON_LOAD, str(trace)], plain), ("trnscope", summary, hooked)]
        for name, command, env in runs if round_number % 2 == 0 else runs[::-1]:
            wall, found = run_once(command, env)
            if name == "json.load":
                loads.append(wall)
                continue
            if found is None:
                raise RuntimeError("the phase hook wrote nothing: is bench/phases_hook on the path?")
            opens.append(wall)
            for step, seconds in found.items():
                steps[step].append(seconds)
    json_load = statistics.median(loads)
    return {
        "trace": trace.name,
        "unpacked_mb": round(unpacked_bytes(trace) / 1e6, 1),
        "unpacked_bytes": unpacked_bytes(trace),
        "json_load_s": round(json_load, 4),
        "budget_3x_s": round(json_load / 3, 4),
        "first_open_s": round(statistics.median(opens), 4),
        "steps_s": {step: round(statistics.median(values), 4) for step, values in steps.items()},
    }


def markdown(results: dict) -> str:
    lines = [
        f"Measured with `bench/phases.py` on {results['machine']}: medians of {results['rounds']} alternating runs, "
        "milliseconds (`trnscope summary PATH --format json --no-cache`; `json.load(gzip.open(PATH))`).",
        "",
        "| real trace | unpacked | json.load | 3× budget | first open | " + " | ".join(STEPS) + " |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(STEPS),
    ]
    for row in results["traces"]:
        ms = [f"{1000 * row['steps_s'][step]:.0f}" for step in STEPS]
        lines.append(
            f"| {row['trace']} | {size_text(row['unpacked_bytes'])} | {1000 * row['json_load_s']:.0f} | "
            f"{1000 * row['budget_3x_s']:.0f} | {1000 * row['first_open_s']:.0f} | " + " | ".join(ms) + " |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", metavar="PATH", help="more traces to measure")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-corpus", action="store_true", help="only the PATHs given")
    parser.add_argument("--min-mb", type=float, default=0.0, help="skip traces smaller than this (unpacked)")
    args = parser.parse_args()
    compileall.compile_dir(str(ROOT / "trnscope"), quiet=1)  # as an installed package runs
    results: dict = {"machine": machine(), "rounds": args.rounds, "traces": []}
    for trace in traces_to_run(args.paths, not args.no_corpus):
        if unpacked_bytes(trace) < args.min_mb * 1e6:
            continue
        row = measure(trace, args.rounds)
        results["traces"].append(row)
        print(
            f"{row['trace']:42s} first open {row['first_open_s']:.3f}s  3× budget {row['budget_3x_s']:.3f}s",
            file=sys.stderr,
        )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "phases.json").write_text(json.dumps(results, indent=2) + "\n")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
