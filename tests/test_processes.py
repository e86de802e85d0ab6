"""Killing a load's process leaves nothing running and nothing in /dev/shm (after the
next load); SIGTERM ends a command through its cleanup."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO
from trnscope.core.formats.kineto.parallel import SPILL_PREFIX, sweep_spills

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="parent-death signal and /dev/shm are Linux")

LOAD = """
import sys, time
from trnscope.core.formats.kineto import loader
loader.PARALLEL_MIN_BYTES = 0
print("ready", flush=True)
loader.load_kineto(__import__("pathlib").Path(sys.argv[1]), loader.LoadOptions(workers=2), chunk_bytes=1 << 16)
time.sleep(30)
"""


def _children(pid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("PPid:") and int(line.split()[1]) == pid:
                found.append(int(status.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from trnscope.testing.synth_kineto import generate

    path = tmp_path_factory.mktemp("procs") / "big.json"
    generate(path, 400_000, seed=3)
    return path


def test_workers_die_with_a_killed_parent(big_trace: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", LOAD, str(big_trace)], cwd=str(REPO), stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
    workers: list[int] = []
    deadline = time.monotonic() + 20
    while not workers and time.monotonic() < deadline:
        workers = _children(child.pid)
        time.sleep(0.02)
    assert workers, "the load never started worker processes"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers), "decode workers outlived their parent"
    sweep_spills()
    left = [n for n in os.listdir("/dev/shm") if n.startswith(f"{SPILL_PREFIX}{child.pid}-")]
    assert left == []


def test_sweep_removes_only_files_of_dead_loads(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{SPILL_PREFIX}{dead.pid}-abc"
    stale.write_bytes(b"x")
    live = tmp_path / f"{SPILL_PREFIX}{os.getpid()}-abc"
    live.write_bytes(b"x")
    other = tmp_path / "someone-elses-file"
    other.write_bytes(b"x")
    assert sweep_spills(str(tmp_path)) == 1
    assert not stale.exists() and live.exists() and other.exists()


def test_sigterm_runs_the_cleanup(big_trace: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "trnscope", "summary", str(big_trace), "--no-cache", "--workers", "2"],
        cwd=str(REPO),
        stderr=subprocess.PIPE,
    )
    # once its decode workers run, the command's SIGTERM handler is installed (a fixed
    # sleep could signal a slow-starting interpreter before that, on a loaded machine)
    deadline = time.monotonic() + 30
    while not _children(child.pid) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode in (0, 143), err
    if child.returncode == 143:
        assert b"terminated" in err and b"Traceback" not in err
    mine = [n for n in os.listdir("/dev/shm") if n.startswith(f"{SPILL_PREFIX}{child.pid}-")]
    assert mine == []  # (other tests may be loading in parallel: only this child's files count)


def test_a_stopped_load_removes_its_own_spill_files_only(monkeypatch, tmp_path: Path) -> None:
    """A worker stopped between creating its result file and returning leaves a file no
    future names: the load removes every file of its own token once its workers are
    gone, and never another load's (same process, other token) or another process's."""
    from trnscope.core.formats.kineto import parallel

    monkeypatch.setattr(parallel, "_spill_folder", lambda: str(tmp_path))
    mine = tmp_path / f"{parallel._spill_prefix(os.getpid(), 'aaaa1111')}half-written"
    concurrent = tmp_path / f"{parallel._spill_prefix(os.getpid(), 'bbbb2222')}in-use"
    other = tmp_path / f"{SPILL_PREFIX}1-aaaa1111-x"
    for path in (mine, concurrent, other):
        path.write_bytes(b"x")
    parallel._remove_spills_of_load(os.getpid(), "aaaa1111")
    assert not mine.exists() and concurrent.exists() and other.exists()
    # the token sits after the pid, so sweep_spills still finds the owner of a killed load
    assert parallel._spill_prefix(123, "t").split("-")[2] == "123"


def test_worker_results_live_in_memory_files_a_sigkill_cannot_leak(big_trace: Path) -> None:
    """Results travel in anonymous memory files (memfd) the kernel frees with their last
    holder: a load killed at any moment leaves nothing in /dev/shm, even before any
    later load sweeps it."""
    child = subprocess.Popen([sys.executable, "-c", LOAD, str(big_trace)], cwd=str(REPO), stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
    prefix = f"{SPILL_PREFIX}{child.pid}-"
    seen_named, seen_memory = False, False
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        seen_named |= any(n.startswith(prefix) for n in os.listdir("/dev/shm"))
        try:
            links = [os.readlink(p) for p in Path(f"/proc/{child.pid}/fd").iterdir()]
        except OSError:
            links = []
        seen_memory |= any("memfd:trnscope-range" in link for link in links)
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert seen_memory, "the load made no memory file for its workers"
    assert not seen_named
    time.sleep(0.5)
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(prefix)]


STUCK = """
import sys, time
import trnscope.cli.main
cli = sys.modules["trnscope.cli.main"]  # (the package exports main, the function, by that name)
cli.CLEANUP_SECONDS = 1

def stuck(args):
    try:
        print("ready", flush=True)
        time.sleep(60)
    finally:
        time.sleep(60)  # a cleanup that never ends (a lock an interrupted call held)

cli.COMMANDS["summary"] = stuck
sys.exit(cli.main(["summary", "anything.json"]))
"""


def test_a_terminated_command_ends_even_when_its_cleanup_blocks() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", STUCK], cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
    started = time.monotonic()
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 143 and b"cleanup cut short" in err, err
    assert time.monotonic() - started < 15


FORKED = """
import os, signal, sys, time
import trnscope.cli.main
cli = sys.modules["trnscope.cli.main"]
cli._HANDLER_PID = os.getpid()
signal.signal(signal.SIGTERM, cli._terminated)
pid = os.fork()
if pid == 0:  # a decode worker, before its initializer puts the default handler back
    time.sleep(30)
    os._exit(0)
time.sleep(0.2)
os.kill(pid, signal.SIGTERM)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


def test_a_worker_stopped_before_its_initializer_ends_quietly() -> None:
    done = subprocess.run([sys.executable, "-c", FORKED], cwd=str(REPO), capture_output=True, timeout=60)
    assert done.stdout.strip() == b"143" and b"Traceback" not in done.stderr, done.stderr


def test_the_command_exits_without_teardown_but_after_its_exit_handlers(tmp_path: Path) -> None:
    """``run`` ends the process with ``os._exit`` once the exit handlers ran: all the
    output still arrives through a pipe (C code's too), the --no-cache copy of a gzip
    trace is gone, and an error keeps its status."""
    import gzip
    import json

    from trnscope.testing.synth_kineto import generate

    plain = tmp_path / "t.json"
    generate(plain, 20_000, seed=5)
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes(), 1))
    cache = tmp_path / "cache"
    env = {**os.environ, "TRNSCOPE_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "trnscope", "summary", str(packed), "--no-cache", "--format", "json", "--limit", "0"],
        cwd=str(REPO),
        env=env,
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # cut output would not parse
    assert document["events"] > 0 and len(done.stdout) > 1000
    assert list((cache / "plain").glob("*.nocache.*")) == []  # the exit handler removed the private copy
    # what C code wrote sits in the C library's buffer (stdout is a pipe): still flushed
    c_output = (
        "import ctypes, sys\n"
        "ctypes.CDLL(None).printf(b'written by C\\n')\n"
        f"sys.argv = ['trnscope', 'summary', {str(packed)!r}, '--format', 'json', '--limit', '0']\n"
        "from trnscope.cli import run\n"
        "run()\n"
    )
    buffered = {k: v for k, v in env.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run([sys.executable, "-c", c_output], cwd=str(REPO), env=buffered, capture_output=True)
    assert done.returncode == 0 and b"written by C" in done.stdout, done.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "trnscope", "summary", str(tmp_path / "absent.json")],
        cwd=str(REPO),
        env=env,
        capture_output=True,
    )
    assert missing.returncode == 2 and b"no such file" in missing.stderr


_THREADS_AFTER_NUMPY = """
import os, sys
from trnscope.cli import load_numpy_with_one_blas_thread
load_numpy_with_one_blas_thread(sys.argv[1:])
import numpy
print(len(os.listdir("/proc/self/task")), os.environ.get("OPENBLAS_NUM_THREADS", "unset"))
"""


def _threads_after_numpy(*argv: str, **env: str) -> tuple[int, str]:
    clean = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    }
    done = subprocess.run(
        [sys.executable, "-c", _THREADS_AFTER_NUMPY, *argv],
        cwd=str(REPO),
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    threads, variable = done.stdout.split()
    return int(threads), variable


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="OpenBLAS starts no helper thread on one core")
def test_the_command_loads_numpy_with_one_blas_thread_and_leaves_the_environment_alone() -> None:
    """The command's process runs no OpenBLAS helper threads (they spin at start and
    take CPU from the decode) and its environment is the user's again afterwards; a
    capture (the user's workload runs in the process) and a thread count the user chose
    keep OpenBLAS's own behaviour."""
    assert _threads_after_numpy("summary", "t.json") == (1, "unset")
    captured, variable = _threads_after_numpy("capture", "run", "x.py")
    assert captured > 1 and variable == "unset"
    assert _threads_after_numpy("summary", "t.json", OPENBLAS_NUM_THREADS="2") == (2, "2")


_TEARDOWN_PROBE = """
import os, sys, types
if sys.argv[1] == "torch":
    sys.modules["torch"] = types.ModuleType("torch")  # as after `capture` ran a workload


class Probe:
    def __del__(self):  # runs only in the interpreter's teardown
        os.write(2, b"torn down")


probe = Probe()
sys.argv = ["trnscope", "summary", sys.argv[2], "--format", "json", "--limit", "0", "--no-cache"]
from trnscope.cli import run
run()
"""


def test_the_normal_exit_once_torch_is_loaded(tmp_path: Path) -> None:
    """Native runtimes loaded with torch (``capture``: Neuron's writes its profiles in C
    exit handlers) get the normal exit; other commands skip the teardown."""
    from trnscope.testing.synth_kineto import generate

    trace = tmp_path / "t.json"
    generate(trace, 2_000, seed=1)
    env = {**os.environ, "TRNSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    for loaded, torn_down in (("torch", True), ("none", False)):
        done = subprocess.run(
            [sys.executable, "-c", _TEARDOWN_PROBE, loaded, str(trace)], cwd=str(REPO), env=env, capture_output=True
        )
        assert done.returncode == 0, done.stderr
        assert (b"torn down" in done.stderr) is torn_down, (loaded, done.stderr)


@pytest.fixture(scope="module")
def big_gzip(big_trace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gzip

    path = tmp_path_factory.mktemp("procs_gz") / "big.json.gz"
    path.write_bytes(gzip.compress(big_trace.read_bytes(), compresslevel=1))
    return path


@pytest.mark.parametrize(
    ("ending", "code", "said"), [("SIGTERM", 143, b"terminated"), ("SIGHUP", 129, b"hung up")], ids=["term", "hup"]
)
def test_an_ending_signal_runs_the_cleanup_and_removes_the_private_copy(
    big_gzip: Path, tmp_path: Path, ending: str, code: int, said: bytes
) -> None:
    # SIGHUP is what an SSH session that drops sends: it used to end the process on the
    # spot, leaving the --no-cache copy of the trace in the cache folder
    env = {**os.environ, "TRNSCOPE_CACHE_DIR": str(tmp_path)}
    child = subprocess.Popen(
        [sys.executable, "-m", "trnscope", "summary", str(big_gzip), "--no-cache", "--workers", "2"],
        cwd=str(REPO),
        env=env,
        stderr=subprocess.PIPE,
    )
    # once the private copy is in place the load decodes it (the read-ahead child has
    # written it); before that the signal is held, then ends the command the same way
    plain = tmp_path / "plain"
    deadline = time.monotonic() + 30
    while child.poll() is None and time.monotonic() < deadline:
        if plain.is_dir() and any(plain.glob(f"*.nocache.{child.pid}.json")):
            break
        time.sleep(0.01)
    child.send_signal(getattr(signal, ending))
    _, err = child.communicate(timeout=60)
    assert child.returncode in (0, code), err
    if child.returncode == code:
        assert said in err and b"Traceback" not in err
    left = sorted(p.name for p in plain.iterdir()) if plain.is_dir() else []
    assert [name for name in left if "nocache" in name or name.endswith(".tmp")] == []


# On the path of a fresh interpreter: sends this process a signal the moment the console
# script first imports ``trnscope.cli`` (its first import of our code after its own).
SIGNAL_AT_FIRST_IMPORT = """
import os, signal, sys
class _SignalOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == "trnscope.cli":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), getattr(signal, os.environ["SIGNAL_AT_FIRST_IMPORT"]))
        return None
sys.meta_path.insert(0, _SignalOnImport())
"""


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
@pytest.mark.parametrize(
    ("ending", "code", "said"), [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")], ids=["int", "term"]
)
def test_a_signal_during_the_console_scripts_first_imports_ends_it_in_one_line(
    tmp_path: Path, ending: str, code: int, said: str
) -> None:
    # a Ctrl+C in the first ~40 ms landed inside the CLI package's import (typing's) and
    # printed a traceback, a SIGTERM there ended the process without a word: the console
    # script now holds them from its first line until its handlers are in place
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SIGNAL_AT_FIRST_IMPORT)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(hook), str(REPO)]),
        "SIGNAL_AT_FIRST_IMPORT": ending,
        "TRNSCOPE_CACHE_DIR": str(tmp_path / "cache"),
    }
    trace = REPO / "sample_traces" / "cpu_train_tiny_session" / "train_tiny.pt.trace.json.gz"
    done = subprocess.run(
        [sys.executable, "-m", "trnscope", "summary", str(trace), "--no-cache"],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr, done.stdout) == (code, f"trnscope: {said}\n", "")


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
def test_the_console_script_holds_exactly_the_ending_signals(monkeypatch) -> None:
    # it writes them out (importing nothing first); ``core.base.signals.ENDINGS`` is
    # what every other hold and handler uses
    import trnscope.cli
    import trnscope.console
    from trnscope.core.base.signals import ENDINGS

    seen: dict[str, object] = {}

    def run(mask_at_start: set[int]) -> None:
        seen["held"] = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        seen["restore"] = mask_at_start

    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    monkeypatch.setattr(trnscope.cli, "run", run)
    try:
        trnscope.console.main()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    assert seen["restore"] == before
    assert set(seen["held"]) - before == ENDINGS - before  # type: ignore[arg-type]


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask") or not hasattr(os, "fork"), reason="POSIX signal masks")
def test_endings_are_held_across_the_workers_fork_and_the_workers_let_them_through() -> None:
    """The decode workers are forked with Ctrl+C, SIGTERM and SIGHUP held (a handler run
    inside fork's callbacks raised into one that prints and drops it: a traceback, and
    the signal ignored); a worker lets them through once its handlers are set, so that
    stopping it with SIGTERM works."""
    from trnscope.core.base.signals import ENDINGS, endings_held
    from trnscope.core.formats.kineto import parallel

    with endings_held():
        assert signal.pthread_sigmask(signal.SIG_BLOCK, []) >= ENDINGS
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through its exit status
            try:
                parallel._init_worker(None, None, False, os.getppid())
                held = signal.pthread_sigmask(signal.SIG_BLOCK, [])
                os._exit(0 if not (ENDINGS & held) else 1)
            except BaseException:
                os._exit(2)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert not (ENDINGS & signal.pthread_sigmask(signal.SIG_BLOCK, []))


PLAIN_FORK = """
import json, os, signal, sys
from pathlib import Path
from trnscope.core.formats.kineto import loader, parallel
loader.PARALLEL_MIN_BYTES = 0
how = sys.argv[2]
if how != "works":

    def failing(*args, **kwargs):
        if how == "raises":
            raise ValueError("a decode that fails")
        os.kill(os.getpid(), signal.SIGKILL)  # a helper killed (the OOM killer)

    if how == "lingers":  # a helper whose exit takes 2 s once it has sent its result
        import time
        real_exit, loading = os._exit, os.getpid()

        class SlowExit:
            def __getattr__(self, name):
                return getattr(os, name)

            @staticmethod
            def _exit(code):
                if os.getpid() != loading:
                    time.sleep(2)
                real_exit(code)

        parallel.os = SlowExit()
    else:
        parallel.decode_claimed_ranges = failing
trace = loader.load_kineto(Path(sys.argv[1]), loader.LoadOptions(workers=2, use_cache=False), chunk_bytes=1 << 16)


def children_left():  # any child left, running or not reaped
    try:
        return os.waitpid(-1, os.WNOHANG)[0] >= 0
    except ChildProcessError:
        return False


ending = children_left()
parallel.reap_ended_helpers(block=True)  # (at the next decode, or at exit)
left = children_left()
print(json.dumps({
    "workers": trace.stats.workers,
    "events": len(trace.events),
    "ts": int(trace.events.ts.sum()),
    "pool_modules": sorted(m for m in ("multiprocessing", "concurrent.futures") if m in sys.modules),
    "children_left": left,
    "ending_after_the_load": ending,
}))
"""


def _plain_fork_load(trace: Path, how: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PLAIN_FORK, str(trace), how], cwd=str(REPO), capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("how", ["works", "raises", "killed", "lingers"])
def test_the_command_line_forks_its_decode_helpers_itself(big_trace: Path, how: str) -> None:
    """A process without other threads (the CLI) forks its decode's helpers itself: no
    pool, so neither ``concurrent.futures`` nor ``multiprocessing`` is loaded; a helper
    that fails or is killed leaves the load to decode in this process, as complete as
    ever; every helper is reaped.  The load takes a helper's result as soon as it has
    all of it, without waiting for the helper to end (a helper slow to exit is still
    running when the load is done, and reaped later)."""
    got = _plain_fork_load(big_trace, how)
    whole = got if how == "works" else _plain_fork_load(big_trace, "works")
    assert got["workers"] == (1 if how in ("raises", "killed") else 2)
    assert (got["events"], got["ts"]) == (whole["events"], whole["ts"])
    assert got["pool_modules"] == [] and not got["children_left"]
    if how == "lingers":
        assert got["ending_after_the_load"]
    if how in ("raises", "killed"):  # a failed helper is reaped before its load goes on
        assert not got["ending_after_the_load"]


DECODE_AHEAD = """
import json, os, sys, time
from pathlib import Path
from trnscope.core.formats import inflate_ahead

how, packed = sys.argv[1], Path(sys.argv[2])
keep = how == "cached"
if keep:  # a first open keeps its copy: the read-ahead of the next open declines
    assert inflate_ahead.start(packed, keep=True)
    inflate_ahead.claim(packed.stat(), keep=True).wait(None, None)
assert inflate_ahead.start(packed, keep=keep)  # as the command line does, before NumPy
from trnscope.core.formats import source
from trnscope.core.formats.kineto import loader, parallel

decodes = []  # every parallel decode started in this process
real_init = parallel._StartedDecode.__init__
parallel._StartedDecode.__init__ = lambda self, *a, **k: (decodes.append(self), real_init(self, *a, **k))[1]
deadline = time.monotonic() + 60
while time.monotonic() < deadline and not inflate_ahead.wrote_fresh_copy(packed.stat(), keep=keep):
    if how == "cached":
        time.sleep(0.5)
        break
    time.sleep(0.01)
started = loader.start_decode_ahead(packed, reuse=keep, workers=2)
helpers = list(parallel._started_ahead.runner.children) if started else []
if how == "abandoned":
    parallel.abandon_decode_ahead()
    trace = None
else:
    trace = loader.load_kineto(packed, loader.LoadOptions(workers=2, use_cache=keep))
parallel.reap_ended_helpers(block=True)
try:
    left = os.waitpid(-1, os.WNOHANG)[0] >= 0
except ChildProcessError:
    left = False
print(json.dumps({
    "started": started,
    "helpers_started_ahead": len(helpers),
    "taken": parallel._started_ahead is None and not source._opened_ahead,
    "workers": trace.stats.workers if trace else 0,
    "events": len(trace.events) if trace else 0,
    "ts": int(trace.events.ts.sum()) if trace else 0,
    "children_left": left,
    "decodes_started": len(decodes),
}))
"""


@pytest.fixture(scope="module")
def big_packed(big_trace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gzip

    packed = tmp_path_factory.mktemp("packed") / "big.json.gz"
    with open(big_trace, "rb") as plain, gzip.open(packed, "wb", compresslevel=1) as out:
        out.write(plain.read())
    return packed


def _decode_ahead(packed: Path, how: str, cache: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", DECODE_AHEAD, how, str(packed)],
        cwd=str(REPO),
        capture_output=True,
        timeout=180,
        env={**os.environ, "TRNSCOPE_CACHE_DIR": str(cache)},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_first_load_takes_over_the_decode_the_command_line_started_ahead(
    big_trace: Path, big_packed: Path, tmp_path: Path
) -> None:
    """The command line starts a first open's parallel decode before it imports the
    analysis (``loader.start_decode_ahead``): its helpers are forked then, the load that
    follows takes the opened copy and the running decode over, and reads the same
    events as a load from scratch; an unused decode is stopped and its helpers reaped."""
    from trnscope.core.formats.kineto import loader

    got = _decode_ahead(big_packed, "taken", tmp_path / "cache")
    assert got["started"] and got["helpers_started_ahead"] == 1
    assert got["taken"] and got["workers"] == 2 and not got["children_left"]
    assert got["decodes_started"] == 1  # the load started none of its own
    whole = loader.load_kineto(big_trace, loader.LoadOptions(workers=1, use_cache=False))
    assert (got["events"], got["ts"]) == (len(whole.events), int(whole.events.ts.sum()))
    unused = _decode_ahead(big_packed, "abandoned", tmp_path / "cache2")
    assert unused["started"] and not unused["children_left"]


def test_no_decode_is_started_ahead_for_a_cached_reopen(big_trace: Path, big_packed: Path, tmp_path: Path) -> None:
    """A reopen whose decompressed copy was kept (its index is then cached too) starts
    nothing ahead: the read-ahead child declines, and nothing would be decoded."""
    got = _decode_ahead(big_packed, "cached", tmp_path / "cache")
    assert not got["started"] and got["events"] and not got["children_left"]
