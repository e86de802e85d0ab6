"""Kineto's start/stop markers are dropped from stderr around the profiler steps that
write them; everything else written meanwhile comes through, in order."""

from __future__ import annotations

import os
import sys

from trnscope.capture.kineto_markers import QuietSteps, markers_dropped, without_markers

START = b"USDT:2026-12-04 09:11:35 17456:17456 SyncActivityProfilerHandler.cpp:52] profiler_start\n"
STOP = b"USDT:2026-12-04 09:11:35 17456:17456 SyncActivityProfilerHandler.cpp:59] profiler_stop\n"
ERROR = b"ERROR:2026-12-04 09:11:35 17456:17456 CuptiActivityApi.cpp:330] CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\n"


def test_only_the_two_markers_are_left_out() -> None:
    written = START + b"a line of the script's own\n" + ERROR + STOP + b"USDT: something else\nno newline"
    assert without_markers(written) == b"a line of the script's own\n" + ERROR + b"USDT: something else\nno newline"


def test_what_the_block_writes_reaches_stderr_in_order_without_the_markers(capfd) -> None:
    with markers_dropped():
        os.write(2, START)
        sys.stderr.write("python's own, buffered\n")
        os.write(2, ERROR)
        os.write(2, STOP)
    os.write(2, b"after the block\n")
    assert capfd.readouterr().err == "python's own, buffered\n" + ERROR.decode() + "after the block\n"


def test_the_block_gives_stderr_back_when_the_step_raises(capfd) -> None:
    try:
        with markers_dropped():
            os.write(2, START + b"said before the failure\n")
            raise RuntimeError("the step failed")
    except RuntimeError:
        pass
    os.write(2, b"stderr is stderr again\n")
    assert capfd.readouterr().err == "said before the failure\nstderr is stderr again\n"


def test_only_the_steps_that_start_and_stop_the_trace_are_spooled(capfd) -> None:
    """With wait=2, active=3: call 3 starts the trace, call 6 stops it (as PyTorch's
    schedule does, seen on torch 2.13); the markers written at any other call are not
    Kineto's and stay."""
    calls = []

    def step() -> None:
        calls.append(len(calls) + 1)
        os.write(2, START if len(calls) in (3, 6) else f"call {len(calls)} {START.decode()}".encode())

    quiet = QuietSteps(step, wait=2, active=3)
    for _ in range(7):
        quiet()
    err = capfd.readouterr().err
    assert calls == [1, 2, 3, 4, 5, 6, 7]
    assert [line.split()[1] for line in err.splitlines()] == ["1", "2", "4", "5", "7"]


def test_what_the_starting_step_wrote_follows_once_the_trace_has_stopped(capfd) -> None:
    """Reading the first spool back inside the recorded window would land in a step:
    it is written back after the stopping step, or where the block ends without one
    (a script that ended early)."""

    def step(said: bytes) -> None:
        os.write(2, said)

    said = iter([START + ERROR, b"recorded step\n", STOP + b"at the stop\n"])
    with QuietSteps(lambda: step(next(said)), wait=0, active=2) as quiet:
        for _ in range(3):
            quiet()
        os.write(2, b"after the stop\n")
    assert capfd.readouterr().err == "recorded step\n" + ERROR.decode() + "at the stop\nafter the stop\n"
    with QuietSteps(lambda: step(START + ERROR), wait=0, active=5) as quiet:
        quiet()
        os.write(2, b"the script ended\n")
    assert capfd.readouterr().err == "the script ended\n" + ERROR.decode()
