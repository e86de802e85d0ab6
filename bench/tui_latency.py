"""Key press → updated screen, on the benchmark trace (about 2-3 million events), or on
real traces.

    python bench/tui_latency.py [--bytes N]
    python bench/tui_latency.py PATH [PATH ...]

With paths, each real trace gets the same presses instead of the synthetic trace, and
a Markdown table of "change" p95 per key and trace (``bench/out/tui_latency_real.json``):
the synthetic trace's few op names and shallow stacks hid what real traces cost (grouping
xDiT's 239,091 events by stack took 4 s, all of it eliding 6,532 look-alike stack keys).

Times each press from the moment it is sent until the app is idle again (its thread
workers finished and the screen refreshed), with Textual's headless Pilot: "wall".  That
includes Pilot's own waits (each press sleeps in 20 ms steps until the process looks idle:
the unbound key's ~85 ms), so it is also timed to the frames the press caused, as a
terminal would get them (composed and turned into escape sequences):

* "change": to the last frame that changed a cell of the screen — what the user waits
  for.  Each frame is replayed, after the press, onto a model of the terminal's cells
  (character and style), so a frame that repaints what is already there does not count;
* "frame": to the last frame of any kind.  Textual repaints some widgets a tick after a
  layout with what the layout's own frame already drew (scroll bars, a recomposed
  footer): those frames change nothing the user sees.  "redundant frames" counts them.

CPU is the process's (UI thread and thread workers) per press.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from common import OUT, TARGET_BYTES, ensure_trace
from tui_helpers import TerminalCells

import trnscope.tui  # noqa: F401 - before Textual, as the CLI imports it: the explorer's frame rate


async def measure(path: Path) -> dict:
    from textual.widgets import Input
    from tui_helpers import settle, wait_loaded

    from trnscope.tui.app import TrnscopeApp

    app = TrnscopeApp([str(path)])
    results: dict[str, list[float]] = {}
    cpu_ms: dict[str, list[float]] = {}
    frame_ms: dict[str, list[float]] = {}
    change_ms: dict[str, list[float]] = {}
    redundant: dict[str, int] = {}
    frames_done: list[tuple[float, Any]] = []
    terminal = TerminalCells()
    compose_frame = app._display

    def display_and_stamp(screen: Any, renderable: Any) -> None:
        """Each frame as a terminal gets it: composed, turned into the escape sequences
        the headless driver skips (``render_segments``), then time-stamped."""
        compose_frame(screen, renderable)
        if renderable is None:
            return
        if hasattr(renderable, "render_segments"):
            renderable.render_segments(app.console)
        frames_done.append((time.perf_counter(), renderable))

    app._display = display_and_stamp  # type: ignore[method-assign]

    async def idle() -> None:
        """Until every thread worker has finished and the screen has refreshed once."""
        while any(not worker.is_finished for worker in app.workers):
            await asyncio.sleep(0.0005)
        await pilot.pause()

    async def timed(label: str, *keys: str) -> None:
        await settle(pilot)
        for _stamp, frame in frames_done:  # drawn between presses (a blink, a late worker)
            terminal.apply(frame, app.console)
        del frames_done[:]
        started, cpu = time.perf_counter(), time.process_time()
        for key in keys:
            await pilot.press(key)
        await idle()
        results.setdefault(label, []).append((time.perf_counter() - started) * 1000)
        cpu_ms.setdefault(label, []).append((time.process_time() - cpu) * 1000)
        frames = list(frames_done)
        if frames:  # an unbound key draws nothing
            frame_ms.setdefault(label, []).append((frames[-1][0] - started) * 1000)
        # replayed after the press, so the timing above does not include it
        changes = [stamp for stamp, frame in frames if terminal.apply(frame, app.console)]
        redundant[label] = redundant.get(label, 0) + len(frames) - len(changes)
        if changes:
            change_ms.setdefault(label, []).append((changes[-1] - started) * 1000)
        del frames_done[:]

    async with app.run_test(size=(160, 48)) as pilot:
        started = time.perf_counter()
        await wait_loaded(pilot, timeout=600)
        load_s = time.perf_counter() - started
        screen = app.screen
        events = len(screen.analysis.trace.events)
        for _ in range(20):
            await timed("baseline: unbound key", "x")
        for _ in range(60):
            await timed("cursor move (op table)", "j")
        for _ in range(6):
            await timed("sort (op table)", "s")
        await timed("filter: open", "slash")
        for field in app.screen.query(Input):  # a blink would be a frame after the key's
            field.cursor_blink = False
        for ch in "aten::a":
            await timed("filter: keystroke", ch)
        await timed("filter: close", "enter")
        await timed("filter: clear", "escape")
        # each grouping on its own press (the first build of each: no table is cached)
        await timed("group by input shape (rebuild)", "b")
        await timed("group by stack (rebuild)", "b")
        rows = screen.query_one("#table").model.rows
        await timed("group by op", "b")
        # the op with the most instances: drill in, then walk its instances
        table = screen._table
        biggest = int(table.calls.argmax())
        view = screen.query_one("#table")
        view.move_to(int((view.model.order == biggest).nonzero()[0][0]))
        await settle(pilot)
        await timed("open drill-down", "enter")
        instances = int(app.screen.rows.size)
        for _ in range(40):
            await timed("next instance (chain rebuilt)", "n")
        for _ in range(3):
            await timed("sort instances", "s")
        await timed("back to the op table", "escape")
        # the timeline: opening builds every lane once; keys then redraw only the cells
        await timed("open timeline (build lanes)", "T")
        for _ in range(10):
            await timed("timeline: zoom in", "plus")
        for _ in range(20):
            await timed("timeline: pan", "l")
        for _ in range(40):
            await timed("timeline: cursor", "right")
        for _ in range(10):
            await timed("timeline: zoom out", "minus")
        await timed("timeline: fit", "0")
        await timed("back from the timeline", "escape")
        await timed("open diagnosis", "d")

    def p95(values: list[float]) -> float:
        return round(sorted(values)[max(0, -(-len(values) * 95 // 100) - 1)], 1)

    summary = {
        label: {
            "n": len(values),
            "median_ms": round(statistics.median(values), 1),
            "p95_ms": p95(values),
            "max_ms": round(max(values), 1),
            "cpu_median_ms": round(statistics.median(cpu_ms[label]), 1),
            "cpu_p95_ms": p95(cpu_ms[label]),
            **(
                {
                    "frame_median_ms": round(statistics.median(frame_ms[label]), 1),
                    "frame_p95_ms": p95(frame_ms[label]),
                }
                if label in frame_ms
                else {}
            ),
            **(
                {
                    "change_median_ms": round(statistics.median(change_ms[label]), 1),
                    "change_p95_ms": p95(change_ms[label]),
                }
                if label in change_ms
                else {}
            ),
            "redundant_frames": redundant.get(label, 0),
        }
        for label, values in results.items()
    }
    return {
        "events": events,
        "load_or_cache_s": round(load_s, 2),
        "op_table_rows_by_stack": rows,
        "drill_instances": instances,
        "full_gc_while_idle": getattr(getattr(app, "collector", None), "collections", None),
        "latency": summary,
    }


def real_traces_table(results: dict[str, dict]) -> str:
    """Markdown: per key, "change" p95 (ms) on each trace (— where nothing changed)."""
    names = list(results)
    keys = list(next(iter(results.values()))["latency"]) if results else []
    lines = [
        "| key | " + " | ".join(f"{name} ({results[name]['events']:,} events)" for name in names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for key in keys:
        cells = []
        for name in names:
            row = results[name]["latency"].get(key, {})
            cells.append(f"{row['change_p95_ms']:.0f}" if "change_p95_ms" in row else "—")
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*", metavar="PATH", help="real traces (instead of the synthetic one)")
    parser.add_argument("--bytes", type=int, default=TARGET_BYTES)
    args, _ = parser.parse_known_args()  # run_all passes load.py's options too
    if args.paths:
        from trnscope.core.base.memory import configure_memory
        from trnscope.core.formats.kineto.parallel import start_worker_server

        configure_memory()
        start_worker_server()
        results = {Path(path).name: asyncio.run(measure(Path(path))) for path in args.paths}
        (OUT / "tui_latency_real.json").write_text(json.dumps(results, indent=2))
        print(real_traces_table(results))
        return
    trace = ensure_trace(
        args.bytes,
        OUT / "bench_trace.json" if args.bytes == TARGET_BYTES else OUT / f"bench_trace_{args.bytes >> 20}MB.json",
    )
    from trnscope.core.base.memory import configure_memory
    from trnscope.core.formats.kineto.parallel import start_worker_server

    configure_memory()  # as the CLI entry point does before it starts the TUI
    start_worker_server()
    result = asyncio.run(measure(trace))
    (OUT / "tui_latency.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
