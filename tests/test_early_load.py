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
