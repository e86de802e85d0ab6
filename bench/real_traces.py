"""First open, cached reopen and peak RSS on real traces, against ``json.load``.

    python bench/real_traces.py [PATH ...] [--rounds 5] [--against REV] [--no-corpus]

Every real trace in ``../shared/corpus`` (and any PATH given) is opened the way a user
opens it: a fresh process running ``trnscope summary PATH --format json``, once with
``--no-cache`` (the first open) and once more with the index cache filled (the cached
reopen), against a fresh process running ``json.load(gzip.open(PATH))`` — which only
builds dicts.  Runs alternate (json.load, this tree, the other tree, …, in an order
shuffled each round, seeded) so that the machine's noise hits every contestant alike; the
median and the spread (min–max) of ``--rounds`` runs are reported.  Peak RSS is the
largest process of the run (the process's ``VmHWM`` or its largest decode worker's
``ru_maxrss``, written at exit by ``bench/peak/sitecustomize.py``; ``wait4``'s own
figure would include this bench's size, which Linux carries into a child at exec).

``--against REV`` runs the same commands on the tree at git revision REV (extracted with
``git archive`` into a temporary folder, run with the same interpreter and packages) in
the same rounds, so the before/after ratio comes from one run on one machine.

Both trees run from compiled bytecode (``compileall`` first), as an installed package
does, whatever ``PYTHONDONTWRITEBYTECODE`` says.  Results: ``bench/out/real_traces.json``
and a Markdown table on stdout (the README's table comes from it).
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# results go here; TRNSCOPE_BENCH_OUT moves them (the smoke test keeps bench/out as it is)
OUT = Path(os.environ.get("TRNSCOPE_BENCH_OUT") or ROOT / "bench" / "out")
CORPUS = ROOT.parent / "shared" / "corpus"
TRACE_SUFFIXES = (".json", ".json.gz")

JSON_LOAD = "import gzip, json, sys\nopener = gzip.open if sys.argv[1].endswith('.gz') else open\njson.load(opener(sys.argv[1], 'rb'))\n"


class Tree:
    """A trnscope source tree to run: this checkout, or a revision extracted from git."""

    def __init__(self, name: str, folder: Path, cache: Path) -> None:
        self.name = name
        self.folder = folder
        self.cache = cache

    def command(self, trace: Path, *extra: str) -> list[str]:
        return [sys.executable, "-m", "trnscope", "summary", str(trace), "--format", "json", *extra]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPATH"] = str(self.folder)  # before the editable install's finder
        env["TRNSCOPE_CACHE_DIR"] = str(self.cache)
        return env


# (name, command, environment or None for this one's, working directory)
Contestant = tuple[str, list[str], dict[str, str] | None, Path]

PEAK_HELPER = ROOT / "bench" / "peak"  # its sitecustomize writes the peak RSS at exit


def measure(command: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) of one process (or its largest decode worker), and the
    CPU seconds of the process and its workers (less sensitive to a noisy VM's
    scheduling than wall time)."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), str(PEAK_HELPER)) if p)
    with tempfile.TemporaryDirectory(prefix="trnscope-peak-") as folder:
        env["TRNSCOPE_BENCH_PEAK_FILE"] = str(Path(folder) / "peak")
        _started, seconds, usage = run_process(command, env, cwd)
        own, children = (int(x) for x in (Path(folder) / "peak").read_text().split())
    # KiB → MB of 10**6 bytes, the unit of the unpacked size the peak is divided by
    return seconds, max(own, children) * 1024 / 1e6, usage.ru_utime + usage.ru_stime


def run_process(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, Any]:
    """Run one process to its end: when it was launched (``time.perf_counter``), its wall
    seconds and its resource usage (``wait4``'s, its reaped workers included); a
    failure raises with the end of its stderr."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=str(cwd))
    assert process.stderr is not None
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    error = process.stderr.read()
    process.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({code}): {error.decode()[-500:]}")
    return started, seconds, usage


def unpacked_bytes(path: Path) -> int:
    if path.name.endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            return sum(len(block) for block in iter(lambda: fh.read(16 << 20), b""))
    return path.stat().st_size


def event_count(tree: Tree, trace: Path) -> int:
    result = subprocess.run(
        tree.command(trace, "--limit", "1"), capture_output=True, env=tree.env(), cwd=str(tree.folder)
    )
    return int(json.loads(result.stdout)["events"]) if result.returncode == 0 else 0


def extract(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    folder = into / f"tree-{rev[:12]}"
    folder.mkdir()
    with tempfile.TemporaryFile() as fh:
        fh.write(archive)
        fh.seek(0)
        with tarfile.open(fileobj=fh) as tar:
            tar.extractall(folder, filter="data")
    return folder


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {kb / 1024**2:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores ({model or platform.processor() or platform.machine()}){memory}, Python {platform.python_version()}"


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 4), "min": round(min(values), 4), "max": round(max(values), 4)}


def traces_to_run(paths: list[str], corpus: bool) -> list[Path]:
    found = [Path(p).resolve() for p in paths]  # (the other tree runs in its own folder)
    if corpus and CORPUS.is_dir():
        found += sorted(p for p in CORPUS.iterdir() if p.name.endswith(TRACE_SUFFIXES))
    return found


def run(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="trnscope-bench-") as scratch_dir:
        scratch = Path(scratch_dir)
        trees = [Tree("this tree", ROOT, scratch / "cache-this")]
        if args.against:
            trees.append(Tree(args.against, extract(args.against, scratch), scratch / "cache-against"))
        for tree in trees:
            compileall.compile_dir(str(tree.folder / "trnscope"), quiet=1)
        results = {"machine": machine(), "rounds": args.rounds, "against": args.against, "traces": []}
        for trace in traces_to_run(args.paths, not args.no_corpus):
            size = unpacked_bytes(trace)
            if size < args.min_mb * 1e6:
                continue
            for tree in trees:  # fill each tree's index cache for the cached reopens
                measure(tree.command(trace), tree.env(), tree.folder)
            contestants: list[Contestant] = [("json.load", [sys.executable, "-c", JSON_LOAD, str(trace)], None, ROOT)]
            for tree in trees:
                # the tree's folder is the working directory: `python -m` puts it first on sys.path
                contestants.append(
                    (f"{tree.name}: first open", tree.command(trace, "--no-cache"), tree.env(), tree.folder)
                )
                contestants.append((f"{tree.name}: cached reopen", tree.command(trace), tree.env(), tree.folder))
            times: dict[str, list[float]] = {name: [] for name, *_ in contestants}
            rss: dict[str, list[float]] = {name: [] for name, *_ in contestants}
            cpu: dict[str, list[float]] = {name: [] for name, *_ in contestants}
            for round_number in range(args.rounds):
                for name, command, env, cwd in round_order(contestants, round_number):
                    seconds, peak, cpu_seconds = measure(command, env, cwd)
                    times[name].append(seconds)
                    rss[name].append(peak)
                    cpu[name].append(cpu_seconds)
            row = {
                "trace": trace.name,
                "unpacked_mb": round(size / 1e6, 1),
                "unpacked_bytes": size,
                "events": event_count(trees[0], trace),
                "seconds": {name: spread(values) for name, values in times.items()},
                "peak_rss_mb": {name: round(max(values), 1) for name, values in rss.items()},
                "cpu_seconds": {name: spread(values) for name, values in cpu.items()},
            }
            results["traces"].append(row)
            print(one_line(row, trees), file=sys.stderr)
        return results


def round_order(contestants: list[Contestant], round_number: int) -> list[Contestant]:
    """The contestants in a new order each round: shuffled (seeded by the round, so a
    rerun repeats it) rather than rotated.  A rotation keeps every contestant behind the
    same one round after round, and what ran just before matters on this VM (whether a
    process lands on memory the host must back afresh: a 62 MB write took 151 ms the
    first time, 20 ms after), which made one tree's first opens slow in most rounds."""
    order = list(contestants)
    random.Random(round_number).shuffle(order)
    return order


def size_text(size: int) -> str:
    """A file's size in MB (10**6 bytes), or kB below 0.1 MB, where one decimal of a MB
    would print 0.0 (and a peak RSS divided by it, 343×, for a 2.4 kB file)."""
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.1f} kB"


def one_line(row: dict, trees: list[Tree]) -> str:
    s = row["seconds"]
    base = s["json.load"]["median"]
    parts = [f"{row['trace']:42s} {size_text(row['unpacked_bytes']):>9s}  json.load {base:.3f}s"]
    for tree in trees:
        first = s[f"{tree.name}: first open"]["median"]
        parts.append(f"{tree.name}: {first:.3f}s ({base / first:.2f}×)")
    return "  ".join(parts)


def markdown(results: dict) -> str:
    against = results["against"]
    head = (
        "| real trace | unpacked | events | json.load | first open | × json.load | cached reopen | peak RSS "
        "| RSS ÷ unpacked |"
    )
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    if against:
        head += f" {against}: first open | now ÷ {against} | {against}: peak RSS | CPU now ÷ {against} |"
        rule += "---:|---:|---:|---:|"
    lines = [
        f"Measured with `bench/real_traces.py` on {results['machine']}: median of {results['rounds']} alternating "
        "runs (min–max), each a fresh process (`trnscope summary PATH --format json`, first open with `--no-cache`; "
        "`json.load(gzip.open(PATH))`).",
        "",
        head,
        rule,
    ]

    def cell(value: dict) -> str:
        return f"{value['median']:.3f} s ({value['min']:.3f}–{value['max']:.3f})"

    for row in results["traces"]:
        s = row["seconds"]
        first = s["this tree: first open"]
        rss = row["peak_rss_mb"]["this tree: first open"]
        line = (
            f"| {row['trace']} | {size_text(row['unpacked_bytes'])} | {row['events']:,} | {cell(s['json.load'])} | "
            f"{cell(first)} | {s['json.load']['median'] / first['median']:.2f}× | "
            f"{cell(s['this tree: cached reopen'])} | {rss:.0f} MB | {rss * 1e6 / row['unpacked_bytes']:,.2f} |"
        )
        if against:
            old = s[f"{against}: first open"]
            cpu_now = row["cpu_seconds"]["this tree: first open"]["median"]
            cpu_old = row["cpu_seconds"][f"{against}: first open"]["median"]
            line += (
                f" {cell(old)} | {first['median'] / old['median']:.2f} | "
                f"{row['peak_rss_mb'][f'{against}: first open']:.0f} MB | {cpu_now / cpu_old:.2f} |"
            )
        lines.append(line)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", metavar="PATH", help="more traces to measure")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", metavar="REV", help="also run the tree at this git revision, alternating")
    parser.add_argument("--no-corpus", action="store_true", help="only the PATHs given")
    parser.add_argument("--min-mb", type=float, default=0.0, help="skip traces smaller than this (unpacked)")
    args = parser.parse_args()
    results = run(args)
    OUT.mkdir(parents=True, exist_ok=True)
    name = "real_traces.json" if not args.against else f"real_traces_vs_{args.against[:12]}.json"
    (OUT / name).write_text(json.dumps(results, indent=2))
    text = markdown(results)
    (OUT / name.replace(".json", ".md")).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
