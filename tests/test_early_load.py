"""``trnscope open TRACE`` starts loading before it imports the UI: the app picks the
load up (progress, cancel, errors as before), and while the UI is imported this
process leaves its decode ranges to the worker processes."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import pytest
from tui_helpers import press_until_exit, settle, wait_loaded

from conftest import SAMPLES
from trnscope.core.base import elsewhere
from trnscope.core.base.errors import TrnscopeError
from trnscope.core.opening import sources
from trnscope.core.opening.sources import Mode, OpenOptions, plan_sources
from trnscope.tui.app import ErrorScreen, LoadingScreen
from trnscope.tui.early_load import EarlyLoad, start_early_load
from trnscope.tui.launch import explorer_app
from trnscope.tui.screen_ops import OpsScreen

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TRACE = SAMPLES / "cpu_train_tiny_session" / "train_tiny.pt.trace.json.gz"


def _args(*paths: str, **overrides: object) -> argparse.Namespace:
    from trnscope.cli.arguments import build_parser

    args = build_parser().parse_args(["open", *paths, "--no-cache"])
    for key, value in overrides.items():
        setattr(args, key, value)
    return args


def test_only_one_trace_file_starts_early(tmp_path: Path) -> None:
    options = OpenOptions(use_cache=False)
    one = start_early_load(plan_sources([str(TRACE)], Mode.ONE), options)
    assert one is not None and one.source.path == str(TRACE)
    one.result(lambda *update: None)
    # a session folder: what it holds is decided by the app, as before
    assert start_early_load(plan_sources([str(TRACE.parent)], Mode.ONE), options) is None


async def test_the_app_shows_the_early_load_and_never_loads_again(monkeypatch: pytest.MonkeyPatch) -> None:
    app = explorer_app(_args(str(TRACE)))
    assert isinstance(app.early, EarlyLoad)
    early = app.early

    def no_second_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("the trace was loaded again")

    monkeypatch.setattr("trnscope.tui.app.open_source", no_second_load)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        assert isinstance(app.screen, OpsScreen)
        assert app.screen.analysis is early.result(lambda *update: None)
        assert app.early is None  # handed over once
        assert app.screen.analysis.pending == []  # the drill-down links and the cache ran after the screen


async def test_progress_before_the_app_asked_is_shown_when_it_asks() -> None:
    seen: list[tuple[object, ...]] = []
    release = threading.Event()
    real_open = sources.open_source

    def slow_open(source, options, *, progress=None, cancelled=None, **kwargs):  # type: ignore[no-untyped-def]
        progress("parse", 5, 10, 3)
        release.wait(10)
        return real_open(source, options, cancelled=cancelled)

    early_module = sys.modules["trnscope.tui.early_load"]
    original = early_module.open_source
    early_module.open_source = slow_open
    try:
        plan = plan_sources([str(TRACE)], Mode.ONE)
        early = start_early_load(plan, OpenOptions(use_cache=False))
        assert early is not None
        time.sleep(0.05)
        threading.Timer(0.05, release.set).start()
        analysis = early.result(lambda *update: seen.append(update))
    finally:
        early_module.open_source = original
    assert seen[0] == ("parse", 5, 10, 3) and len(analysis.trace.events) > 0


@pytest.mark.parametrize("key", ["escape", "q"])
async def test_escape_or_quitting_while_it_loads_stops_the_load(tmp_path: Path, key: str) -> None:
    """Esc cancels the early load; q quits, and since the app waits for its workers on
    the way out, the load is cancelled rather than run to its end (1.2–1.6 s for a
    405 MB trace here)."""
    from trnscope.testing.synth_kineto import generate

    path = tmp_path / "big.pt.trace.json"
    generate(path, 300_000, seed=2)
    app = explorer_app(_args(str(path), workers=1))
    early = app.early
    assert early is not None
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.1)
        assert isinstance(app.screen, LoadingScreen)
        await press_until_exit(pilot, key)
    assert early.cancel.is_set() and app.return_code == 0
    assert not app.analyses  # the load stopped before it finished


async def test_an_early_load_that_fails_shows_its_one_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.pt.trace.json"
    path.write_text('{"traceEvents": [{"name": "x", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}')

    def fail(*args: object, **kwargs: object) -> None:
        raise TrnscopeError("the trace said no")

    early_module = sys.modules["trnscope.tui.early_load"]
    original = early_module.open_source
    early_module.open_source = fail
    try:
        app = explorer_app(_args(str(path)))
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(100):
                await pilot.pause(0.05)
                if isinstance(app.screen, ErrorScreen):
                    break
            await settle(pilot)
            assert isinstance(app.screen, ErrorScreen)
            assert "the trace said no" in str(app.screen.query_one("#error-message").render())
    finally:
        early_module.open_source = original


def test_busy_elsewhere_holds_back_this_process_share_and_speeds_up_gil_turns() -> None:
    interval = sys.getswitchinterval()
    returned = threading.Event()
    with elsewhere.busy_elsewhere():
        assert sys.getswitchinterval() < interval
        waiter = threading.Thread(target=lambda: (elsewhere.wait_until_free(lambda: False), returned.set()))
        waiter.start()
        time.sleep(0.15)
        assert not returned.is_set()  # waits while busy
    waiter.join(5)
    assert returned.is_set() and sys.getswitchinterval() == interval
    started = time.perf_counter()
    elsewhere.wait_until_free(lambda: False)  # free: at once
    assert time.perf_counter() - started < 0.05
    with elsewhere.busy_elsewhere():
        elsewhere.wait_until_free(lambda: True)  # cancelled: returns instead of waiting


def test_a_parallel_decode_leaves_its_ranges_to_the_workers_while_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trnscope.core.formats import load_path
    from trnscope.core.formats.kineto import loader as kineto
    from trnscope.core.formats.kineto import parallel
    from trnscope.core.formats.options import NO_CACHE
    from trnscope.testing.synth_kineto import generate

    path = tmp_path / "mid.pt.trace.json"
    generate(path, 60_000, seed=3)
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 0)
    parallel.start_worker_server()
    own_claims: list[float] = []  # when this process began claiming ranges
    real_claim = parallel._decode_claimed

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        own_claims.append(time.monotonic())
        return real_claim(*args, **kwargs)

    monkeypatch.setattr(parallel, "_decode_claimed", recording)  # this process only: workers have their own
    result: dict[str, object] = {}
    loader = threading.Thread(target=lambda: result.setdefault("trace", load_path(path, NO_CACHE)))
    with elsewhere.busy_elsewhere():
        loader.start()
        time.sleep(0.5)
        busy_until = time.monotonic()
    loader.join(60)
    trace = result["trace"]
    assert own_claims and min(own_claims) >= busy_until
    assert trace.stats.workers == 2  # type: ignore[attr-defined]
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 1 << 40)
    alone = load_path(path, NO_CACHE)
    assert len(trace.events) == len(alone.events)  # type: ignore[attr-defined]


def test_ctrl_c_or_sigterm_cancels_a_load_then_does_what_it_did() -> None:
    import os
    import signal

    from trnscope.tui.launch import loads_stop_on_signals

    class StandIn:
        stops = 0

        def cancel_load(self) -> None:
            self.stops += 1

    app = StandIn()
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), loads_stop_on_signals(app):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)  # the handler runs at the next bytecode; never reached
    assert app.stops >= 1 and signal.getsignal(signal.SIGINT) is before
    terminated: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: terminated.append(signum))
    try:
        with loads_stop_on_signals(app):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
        assert terminated == [signal.SIGTERM] and app.stops >= 3  # the handler's, then on the way out
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_an_ending_signal_inside_the_apps_event_loop_closes_the_app_then_is_raised() -> None:
    # asyncio hands a callback's exception (other than KeyboardInterrupt and SystemExit)
    # to its exception handler: a SIGTERM raised there was lost, and the explorer ran on
    # until the cleanup's time limit cut it short (10 s, the private copy left behind)
    import asyncio
    import os
    import signal

    from trnscope.core.base.errors import Terminated
    from trnscope.tui.launch import loads_stop_on_signals

    loop = asyncio.new_event_loop()

    class StandIn:
        stops = closes = 0

        def cancel_load(self) -> None:
            self.stops += 1

        def close_for_signal(self) -> None:
            self.closes += 1
            loop.stop()

    def terminated(signum: int, frame: object) -> None:
        raise Terminated(signum)

    def in_a_callback() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100_000):  # the handler runs at the next bytecode, here
            pass

    app = StandIn()
    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        with loads_stop_on_signals(app) as ending:
            loop.call_soon(in_a_callback)
            gave_up = loop.call_later(5, loop.stop)  # (the app never asked to close)
            loop.run_forever()
            gave_up.cancel()
    finally:
        loop.close()
        signal.signal(signal.SIGTERM, previous)
    assert app.closes == 1 and app.stops >= 1  # (the stop on the way out)
    assert len(ending) == 1 and isinstance(ending[0], Terminated) and ending[0].signum == signal.SIGTERM


# Run in a fresh process: helpers are forked only while the process runs no other
# thread, and a test process may run some (and may have a fork server from another test).
_EXPLORER_WITH_HELPERS = r"""
import json, os, sys
from trnscope.core.formats.kineto import loader, parallel
loader.PARALLEL_MIN_BYTES = 0  # the small test trace decodes in parallel too
from trnscope.cli.arguments import build_parser
from trnscope.tui.launch import explorer_app
helpers = []
fork_ahead = parallel.fork_helpers_ahead
def recording(workers):  # the helpers' pids, before the load's decode takes them
    forked = fork_ahead(workers)
    helpers.extend(sorted(pid for pid, _ in parallel._ahead.runner.children) if forked else [])
    return forked
parallel.fork_helpers_ahead = recording
args = build_parser().parse_args(["open", sys.argv[1], *sys.argv[2:]])
app = explorer_app(args)
analysis = app.early.result(lambda *update: None)
def state(pid):  # "" once gone; "Z": ended, not yet reaped
    try:
        return open(f"/proc/{pid}/status").read().split("State:")[1].split()[0]
    except OSError:
        return ""
# a helper that sent its result and was still tearing down is reaped at the next decode
# or at exit (parallel._ending): ended, not left behind
out = {
    "helpers": helpers,
    "server": parallel._worker_server_started,
    "workers": analysis.trace.stats.workers,
    "events": len(analysis.trace.events),
    "left": [pid for pid in helpers if state(pid) and not (state(pid) == "Z" and pid in parallel._ending)],
    "ahead_after": parallel._ahead is not None,
}
print(json.dumps(out))
"""


def _explorer_run(tmp_path: Path, *extra: str) -> dict[str, object]:
    import json
    import os
    import subprocess

    env = {**os.environ, "TRNSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", _EXPLORER_WITH_HELPERS, str(tmp_path / "mid.pt.trace.json.gz"), *extra],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_one_trace_file_decodes_with_workers_forked_before_the_load_and_no_fork_server(tmp_path: Path) -> None:
    """``trnscope open TRACE``: the early load's decode workers are forked before its
    thread starts (no fork server: a plan of one trace file loads nothing else); they
    decode the trace (the same events as one process) and are gone once it is loaded.
    With the trace's index cached nothing is decoded, so none are forked."""
    import os
    import subprocess

    from trnscope.core.formats import load_path
    from trnscope.core.formats.options import NO_CACHE
    from trnscope.testing.synth_kineto import generate

    path = tmp_path / "mid.pt.trace.json.gz"
    generate(path, 60_000, seed=5)
    first = _explorer_run(tmp_path, "--workers", "3")
    assert len(first["helpers"]) == 2 and first["server"] is False  # type: ignore[arg-type]
    assert first["workers"] == 3 and not first["left"] and not first["ahead_after"]
    assert first["events"] == len(load_path(path, NO_CACHE).events)
    # once the index is stored (here by summary), it is read, not decoded
    stored = subprocess.run(
        [sys.executable, "-m", "trnscope", "summary", str(path), "--format", "json"],
        capture_output=True,
        env={**os.environ, "TRNSCOPE_CACHE_DIR": str(tmp_path / "cache")},
        timeout=120,
    )
    assert stored.returncode == 0 and any((tmp_path / "cache").rglob("*.idx"))
    cached = _explorer_run(tmp_path)
    assert cached["helpers"] == [] and cached["server"] is False and not cached["left"]


def test_helpers_no_decode_took_are_ended(tmp_path: Path) -> None:
    import multiprocessing
    import os
    import subprocess

    code = (
        "import os, sys, threading\n"
        "from trnscope.core.formats.kineto import parallel\n"
        "assert parallel.fork_helpers_ahead(3)\n"
        "assert not parallel.fork_helpers_ahead(3)  # one set at a time\n"
        "pids = [pid for pid, _ in parallel._ahead.runner.children]\n"
        "assert len(pids) == 2 and all(os.path.exists(f'/proc/{pid}') for pid in pids)\n"
        "parallel.close_helpers_ahead()\n"
        "assert parallel._ahead is None and not any(os.path.exists(f'/proc/{pid}') for pid in pids)\n"
        "assert 'multiprocessing' not in sys.modules  # no pool: the helpers wait on pipes\n"
        "threading.Thread(target=lambda: None).start()  # running, or not yet joined\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
    assert not multiprocessing.active_children()


def test_whether_a_file_decodes_in_parallel_by_its_size_or_its_gzip_trailer(tmp_path: Path) -> None:
    import gzip

    from trnscope.core.formats.kineto.loader import PARALLEL_MIN_BYTES, decodes_in_parallel

    plain = tmp_path / "big.json"
    plain.write_bytes(b" " * PARALLEL_MIN_BYTES)
    small = tmp_path / "small.json"
    small.write_bytes(b"[]")
    packed = tmp_path / "big.json.gz"
    packed.write_bytes(gzip.compress(b" " * PARALLEL_MIN_BYTES))  # a few kB that unpack to 16 MiB
    assert packed.stat().st_size < PARALLEL_MIN_BYTES // 100
    packed_small = tmp_path / "small.json.gz"
    packed_small.write_bytes(gzip.compress(b"[]"))
    assert decodes_in_parallel(plain, 2) and decodes_in_parallel(packed, 2)
    assert not decodes_in_parallel(small, 2) and not decodes_in_parallel(packed_small, 2)
    assert not decodes_in_parallel(plain, 1)  # one process
    assert not decodes_in_parallel(tmp_path / "missing.json", 2)


def test_several_traces_still_start_the_fork_server(tmp_path: Path) -> None:
    """Their loads run in the app's worker, with threads about: workers come from the
    fork server, started before the UI takes the terminal."""
    import os
    import subprocess

    code = (
        "import sys\n"
        "from trnscope.core.formats.kineto import parallel\n"
        "from trnscope.cli.arguments import build_parser\n"
        "from trnscope.tui.launch import explorer_app\n"
        "app = explorer_app(build_parser().parse_args(['open', sys.argv[1], sys.argv[1], '--no-cache']))\n"
        "print(app.early is None, parallel._worker_server_started, parallel._ahead is None)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(TRACE)], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert done.returncode == 0 and done.stdout.split() == ["True", "True", "True"], done.stderr[-2000:]
