"""Decoding a large file in several processes.

The events array is cut at heuristic cuts into ranges, several per process; every
process (this one included) claims the next undecoded range from a shared queue
until none is left, so a process that meets denser events or starts late takes fewer
ranges instead of keeping the others waiting.  A range's result is kept only if the
range before it decoded exactly up to its cut (``ScanReport.stopped_at``).  Results come
back through files in shared memory (``/dev/shm``), mapped, not pickled.  Processes are
forked by this process when it runs no other thread (``_ForkedHelpers``: at the
decode in the CLI, or ahead of it, ``fork_helpers_ahead``, for the explorer's early
load, while it still ran no other thread), else they come from a fork server started
before the UI takes over stdio, through a ``concurrent.futures`` pool."""

from __future__ import annotations

import atexit
import contextlib
import mmap
import os
import pickle
import select
import signal
import struct
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import msgspec
import numpy as np

from trnscope.core.base.blas import one_blas_thread
from trnscope.core.base.elsewhere import wait_until_free
from trnscope.core.base.errors import LoadCancelled
from trnscope.core.base.fs import process_alive
from trnscope.core.base.memory import configure_memory, memory_configured
from trnscope.core.base.signals import endings_held, let_endings_through
from trnscope.core.formats.kineto import jsonscan
from trnscope.core.formats.kineto.decode import DecodedChunk, RangeResult, decode_buffer
from trnscope.core.formats.kineto.events import (
    ChunkColumns,
)
from trnscope.core.formats.source import PlainSource, Progress

if TYPE_CHECKING:  # (the pool and its modules load only where a pool is used: ~15 ms)
    from concurrent.futures import ProcessPoolExecutor

_PR_SET_PDEATHSIG = 1
_LOADER_PID_UNKNOWN = -1  # a fork server's child: its parent is the server, not the load
SPILL_PREFIX = "trnscope-range-"


def _die_with_parent() -> None:
    """Ask Linux to kill this worker when the process that started it dies (the
    load's process, or the fork server, which itself exits with the load's process)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: workers end when their pipe closes
        pass


# A worker's share of its load, set by its initializer: the ranges to claim (a pipe) and
# the last range needed, and the progress counters (two per process: bytes, events)
_shared: Any = None
_slots: Any = None


def _init_worker(slots: Any, shared: Any, memory_settings: bool, parent: int, claims_writer: Any = None) -> None:
    global _shared, _slots
    _die_with_parent()
    if claims_writer is not None:  # forked ahead, before the ranges were written: the
        claims_writer.close()  # pipe must end once the loading process closes its end
    # The parent stops workers with SIGTERM and handles Ctrl+C itself (a forked worker
    # would otherwise inherit the CLI's handlers and print tracebacks).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.getppid() != parent and parent != _LOADER_PID_UNKNOWN:
        os._exit(0)  # the parent died before the line above took effect
    _shared, _slots = shared, slots
    if memory_settings:  # as the parent was told (a fork server's child does not inherit them)
        configure_memory()
    let_endings_through()  # forked while the parent held them (see the submits below)


def sweep_spills(folder: str | None = None) -> int:
    """Remove result files that loads of processes no longer alive left behind (a load
    killed with SIGKILL cannot clean up after itself).  Returns how many."""
    folder = folder or _spill_folder()
    if folder is None:
        return 0
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        if not name.startswith(SPILL_PREFIX):
            continue
        owner = name[len(SPILL_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not process_alive(int(owner)):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))
                removed += 1
    return removed


_ARRAY_FIELDS = tuple(
    f
    for f in ChunkColumns.__struct_fields__
    if f not in ("names", "cats", "threads", "shapes", "stacks", "meta", "bad_values")
)


# one decoded chunk in a result file: start, end, repaired, its small fields, and each
# array's (field, dtype, count, offset)
SpilledChunk = tuple[int, int, bool, dict[str, Any], list[tuple[str, str, int, int]]]


class SpilledRanges(msgspec.Struct):
    """A worker's ranges with their column arrays in one file: pickling ~100 MB of
    arrays through a pipe costs more than writing them to shared memory and mapping them."""

    path: str  # "" when written into the loading process's memory file for this worker
    ranges: list[tuple[int, jsonscan.ScanReport, list[SpilledChunk]]]  # (range index, report, chunks)


def _spill_folder() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def _spill_prefix(loader_pid: int, load_token: str) -> str:
    # the loader's pid first (what sweep_spills checks for liveness), then this load's
    # token, so a stopped load removes exactly its own files and not a concurrent load's
    return f"{SPILL_PREFIX}{loader_pid}-{load_token}-"


def _remove_spills_of_load(loader_pid: int, load_token: str) -> None:
    """Remove every result file of one load.  Run once its workers are gone: a worker
    stopped while writing leaves a file no future ever names."""
    folder = _spill_folder()
    if folder is None:
        return
    prefix = _spill_prefix(loader_pid, load_token)
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))


def _open_result_file(loader_pid: int, load_token: str, memory_fd: int) -> tuple[Any, str] | None:
    """Where a worker writes its columns: the anonymous memory file the loading process
    made for it (``memfd``: freed by the kernel with the last process holding it, so a
    load killed with SIGKILL leaves nothing behind), else a named file in /dev/shm
    (named after the loading process, so what a killed load leaves is found and
    removed).  ("" as the path: the memory file.)"""
    if memory_fd >= 0:
        try:
            return open(f"/proc/{loader_pid}/fd/{memory_fd}", "r+b"), ""
        except OSError:
            pass
    import tempfile  # (here only: ~5-10 ms of the helper's start, before its first range)

    try:
        handle, path = tempfile.mkstemp(prefix=_spill_prefix(loader_pid, load_token), dir=_spill_folder())
    except OSError:
        return None
    return os.fdopen(handle, "wb"), path


_CLAIM = struct.Struct("<i")
# the pipe holds every range's index from the start, so it must not fill up:
MAX_RANGES = 4096  # 16 KiB: within any pipe's buffer (Linux 64 KiB, macOS from 16)


def _claim_next(claims: Any) -> int:
    """The next range's index from the pipe every process reads; -1 when none is left.
    A pipe and not a lock: a lock shared with a fork server's children is a named
    semaphore in /dev/shm until it is garbage-collected.  Each index was written
    before any process read, and the kernel hands every 4-byte read out whole."""
    data = os.read(claims.fileno(), _CLAIM.size)
    return _CLAIM.unpack(data)[0] if len(data) == _CLAIM.size else -1


def _decode_claimed(
    buf: Any,
    starts: list[int],
    shared: Any,
    slots: Any,
    slot: int,
    chunk_bytes: int,
    cancelled: Callable[[], bool],
    keep: Callable[[RangeResult], Any] | None = None,
) -> list[tuple[int, Any]]:
    """Claim the next range and decode it, until no range is left; progress (bytes and
    events so far) goes to this process's two slots.  Each range kept is returned as
    decoded, or as what ``keep`` made of it once decoded (a worker writes it out then).

    ``shared`` is (the pipe of ranges to claim, [last range needed]).  A range whose end
    cannot be proven (its stop cut lies inside a string) runs on to the end of the
    array, which makes every later range redundant: it lowers "last needed" at once, and
    the ranges after it are neither claimed nor finished (a file whose strings are full
    of "}, {" would otherwise be decoded once per range).  Two processes lowering it at
    once may leave the higher of their ranges: a few ranges decoded in vain, never a
    wrong trace (the kept ranges end at the first that ran on)."""
    claims, needed = shared
    decoded: list[tuple[int, Any]] = []
    bytes_before = events_before = 0
    while not cancelled():
        index = _claim_next(claims)
        if index < 0 or index > needed[0]:
            break
        start = starts[index]
        stop = starts[index + 1] if index + 1 < len(starts) else None

        def report(position: int, events: int, offset: int = bytes_before - start, seen: int = events_before) -> None:
            slots[2 * slot], slots[2 * slot + 1] = offset + position, seen + events

        def runs_to_the_end(index: int = index) -> None:
            needed[0] = min(needed[0], index)

        def redundant(index: int = index) -> bool:
            return cancelled() or index > needed[0]

        result = decode_buffer(
            buf, start, stop, chunk_bytes, progress=report, cancelled=redundant, on_stop_unproven=runs_to_the_end
        )
        # The range's own pages went as it was decoded; proving its cuts touched the
        # ranges beside it, which other processes may decode, and a touch maps a whole
        # page-cache folio: let those go too.
        end = len(buf) if stop is None else stop
        jsonscan.release(buf, max(0, start - _FOLIO_MARGIN), min(len(buf), end + _FOLIO_MARGIN))
        if index > needed[0]:  # cut short, or finished in vain
            continue
        bytes_before += end - start
        events_before += sum(len(chunk.columns.ph) for chunk in result.chunks)
        decoded.append((index, result if keep is None else keep(result)))
    return decoded


def decode_claimed_ranges(
    plain_path: str,
    starts: list[int],
    slot: int,
    chunk_bytes: int,
    loader_pid: int,
    load_token: str,
    memory_fd: int = -1,
) -> list[tuple[int, RangeResult]] | SpilledRanges:
    """Decode the ranges this worker claims (runs in a worker).  Each range's columns go
    to the result file as soon as the range is decoded, while the loading process still
    decodes its own: written all at the end, they were a tail the load waited for (26 ms
    of the 405 MB benchmark's 0.97 s decode), and the worker held every range at once."""
    import mmap

    opened = _open_result_file(loader_pid, load_token, memory_fd)
    with open(plain_path, "rb") as fh:
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        if opened is None:  # no shared memory: the results go back pickled
            return _decode_claimed(buf, starts, _shared, _slots, slot, chunk_bytes, lambda: False)
        handle, path = opened
        with handle as out:
            writer = _RangeWriter(out)
            written = _decode_claimed(buf, starts, _shared, _slots, slot, chunk_bytes, lambda: False, writer.write)
        return SpilledRanges(path, [(index, report, chunks) for index, (report, chunks) in written])
    finally:
        buf.close()


class _RangeWriter:
    """Writes decoded ranges' column arrays one after another into a worker's result file."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.offset = 0
        # one object per name (category, thread, shape, stack) across the ranges: each
        # chunk decodes its own copy of every name, and pickle writes an object it has
        # seen as a reference to it, so the loading process unpickles each name once
        # rather than once per chunk (a range's result: 2 against 5 ms on the A100 trace)
        self.seen: dict[Any, Any] = {}

    def write(self, result: RangeResult) -> tuple[jsonscan.ScanReport, list[SpilledChunk]]:
        chunks: list[SpilledChunk] = []
        for chunk in result.chunks:
            columns = chunk.columns
            specs = []
            for field in _ARRAY_FIELDS:
                array = np.ascontiguousarray(getattr(columns, field))
                self.out.write(array.data.cast("B") if array.size else b"")
                specs.append((field, array.dtype.str, array.size, self.offset))
                self.offset += array.nbytes
            same = self.seen.setdefault
            small = {
                **{
                    f: [same(value, value) for value in getattr(columns, f)]
                    for f in ("names", "cats", "threads", "shapes", "stacks")
                },
                "meta": columns.meta,
                "bad_values": columns.bad_values,
            }
            chunks.append((chunk.start, chunk.end, chunk.repaired, small, specs))
        return result.report, chunks


def _unspill(
    result: list[tuple[int, RangeResult]] | SpilledRanges, memory_fd: int = -1
) -> list[tuple[int, RangeResult]]:
    if not isinstance(result, SpilledRanges):
        return result
    import mmap

    # Mapped, not read: the worker has already touched these pages, and new memory for a
    # copy would cost more (first use of a page is the dominant cost of memory here).
    with open(memory_fd, "rb", closefd=False) if not result.path else open(result.path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        # populated up front: one call instead of a page fault per 4 KiB page
        populate = getattr(mmap, "MAP_POPULATE", 0)
        data = mmap.mmap(fh.fileno(), 0, flags=mmap.MAP_SHARED | populate, prot=mmap.PROT_READ) if size else b""
    if result.path:
        os.unlink(result.path)  # the mapping keeps the pages until it is dropped
    ranges = []
    for index, report, spilled in result.ranges:
        chunks = []
        for start, end, repaired, small, specs in spilled:
            arrays = {
                field: np.frombuffer(data, dtype=np.dtype(dtype), count=count, offset=offset)
                for field, dtype, count, offset in specs
            }
            fields: dict[str, Any] = {**arrays, **small}
            chunks.append(DecodedChunk(start, end, repaired, ChunkColumns(**fields)))
        ranges.append((index, RangeResult(chunks, report)))
    return ranges


def _discard_unread(futures: list[Any]) -> None:
    """Unlink the result files of ranges that were never read (cancelled or failed
    loads): every exit path leaves /dev/shm as it found it."""
    for future in futures:
        if future.done() and not future.cancelled() and future.exception() is None:
            result = future.result()
            if isinstance(result, SpilledRanges) and result.path:
                with contextlib.suppress(OSError):
                    os.unlink(result.path)


def _memory_file(index: int) -> int:
    """An anonymous memory file for a worker's result (-1 where there is none: not Linux)."""
    create = getattr(os, "memfd_create", None)
    if create is None or not os.path.isdir("/proc/self/fd"):
        return -1
    try:
        return int(create(f"trnscope-range-{index}"))
    except OSError:
        return -1


_worker_server_started = False


class _HelpersAhead:
    """Worker processes forked before their decode is known, and what they share with
    it: the progress slots, the pipe of ranges to claim (written and closed when the
    decode starts; each worker closed its own copy of the writing end) and the last
    range needed.  Each waits for its work on a pipe of its own (``_ForkedHelpers``)."""

    def __init__(self, helpers: int) -> None:
        self.helpers = helpers
        self.owner = os.getpid()
        self.slots = _shared_int64(2 * (helpers + 1))
        reader, writer = os.pipe()
        self.claims, self.writer = os.fdopen(reader, "rb", buffering=0), os.fdopen(writer, "wb", buffering=0)
        self.needed = _shared_int64(1)
        self.needed[0] = MAX_RANGES
        self.runner = _ForkedHelpers(self.slots, (self.claims, self.needed))
        try:
            with endings_held():  # no handler inside fork
                self.runner.fork_waiting(helpers, self.writer)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """End the workers (a decode that took them has already reaped them)."""
        self.runner.close()
        for end in (self.writer, self.claims):
            with contextlib.suppress(OSError):
                end.close()


_ahead: _HelpersAhead | None = None
_ahead_lock = threading.Lock()


def fork_helpers_ahead(workers: int) -> bool:
    """Fork the worker processes of this process's next parallel decode now, while it
    runs no other thread.  ``trnscope open TRACE`` decodes from a thread (the early
    load), whose workers would otherwise come from the fork server: a fresh interpreter
    that imports NumPy and the loader before it forks any, while this process imports
    the UI — on the 2-core VM its first worker began decoding 0.2 s after the decode
    did, and starting it took CPU the import needed.  A worker forked here starts at
    once, with everything imported.  False (nothing done) without fork, with other
    threads running, for one worker, or when helpers are already waiting;
    ``close_helpers_ahead`` ends helpers no decode took."""
    global _ahead
    helpers = workers - 1
    if helpers < 1 or not _may_fork_plainly():
        return False
    with _ahead_lock:
        if _ahead is not None:
            return False
        try:
            _ahead = _HelpersAhead(helpers)
        except (OSError, ValueError):
            return False
    atexit.register(close_helpers_ahead)  # a load that never started (an interrupted start-up)
    return True


def close_helpers_ahead() -> None:
    """End helpers that no decode took (a small or cached trace, a cancelled load)."""
    global _ahead
    with _ahead_lock:
        ahead, _ahead = _ahead, None
    if ahead is not None and ahead.owner == os.getpid():
        ahead.close()


def _take_helpers_ahead() -> _HelpersAhead | None:
    global _ahead
    with _ahead_lock:
        ahead, _ahead = _ahead, None
    if ahead is not None and ahead.owner != os.getpid():  # a child of the process that forked them
        return None
    return ahead


def pool_context() -> Any:
    """``fork`` when this process has no other thread (the CLI: children start instantly
    with everything imported); otherwise the fork server (the TUI runs threads, and
    forking a threaded process can deadlock a child), if ``start_worker_server`` got it
    going; else None (decode in this process).

    Why not start the server here: from a threaded process whose stdio a UI has taken
    over, starting it (and multiprocessing's resource tracker) fails half-way — after
    creating a named semaphore it then cannot register, which would stay in /dev/shm."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if _worker_server_started:
        return multiprocessing.get_context("forkserver")
    return None


def start_worker_server() -> None:
    """Start the fork server for parallel decoding now, while stdio is still the
    process's own: a full-screen UI replaces stdout/stderr, and starting a server
    process then fails.  Cheap when already running; harmless where unsupported."""
    global _worker_server_started
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return
    try:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["trnscope.core.formats.kineto.loader"])
        from multiprocessing import forkserver, resource_tracker

        with one_blas_thread():  # the server imports NumPy while Textual loads here
            forkserver.ensure_running()
        resource_tracker.ensure_running()  # locks of worker pools register with it
        _worker_server_started = True
    except (OSError, ValueError):
        pass


# Ranges per process, and the largest range: the last range, finished alone while the
# other processes idle, should be a small part of the work (4 MiB: ~0.02 s here); each
# range costs a cut search and a little bookkeeping.
RANGES_PER_PROCESS = 16
MAX_RANGE_BYTES = 4 << 20
# a touch maps a whole page-cache folio (up to 2 MiB on kernels with large folios)
_FOLIO_MARGIN = 4 << 20


def _split_points(buf: Any, first: int, size: int, parts: int) -> list[int]:
    points: list[int] = []
    for k in range(1, parts):
        guess = first + (size - first) * k // parts
        # the same cuts as the chunks' (a "}, {" inside a string is passed over: a range
        # starting there would be refused, and the one before it run on to the end)
        cut = jsonscan.next_cut(buf, guess)
        if cut is None or cut.next_start < 0:  # the array ends first
            break
        start = cut.next_start
        # the search mapped the page-cache folio around the cut: not this process's to keep
        jsonscan.release(buf, max(0, guess - _FOLIO_MARGIN), min(size, start + _FOLIO_MARGIN))
        if not points or start > points[-1]:
            points.append(start)
    return points


def _range_starts(buf: Any, first: int, size: int, processes: int, chunk_bytes: int) -> list[int]:
    """Where the ranges begin: several per process and none over MAX_RANGE_BYTES, but
    none much smaller than a chunk."""
    span = size - first
    wanted = max(processes * RANGES_PER_PROCESS, -(-span // MAX_RANGE_BYTES))
    parts = min(MAX_RANGES, max(processes, min(wanted, span // max(1, chunk_bytes))))
    return [first, *_split_points(buf, first, size, parts)]


def _may_fork_plainly() -> bool:
    """Whether this process may fork its helpers as it is: it runs no other thread (a
    child of a threaded process can inherit a lock some other thread held)."""
    return hasattr(os, "fork") and threading.active_count() == 1


def _shared_int64(count: int) -> Any:
    """``count`` int64 counters shared with the processes forked from here (anonymous
    shared memory, as ``multiprocessing.Array`` would be, without loading it)."""
    return memoryview(mmap.mmap(-1, 8 * count)).cast("q")


class _PoolHelpers:
    """The helper processes of a ``concurrent.futures`` pool, started by a fork server
    (for a process that runs threads)."""

    def __init__(self, executor: ProcessPoolExecutor) -> None:
        self.executor = executor
        self.futures: list[Any] = []
        self.stopped: list[Any] = []

    def start(self, work: Callable[[], Any]) -> None:
        self.futures.append(self.executor.submit(work))

    def result(self, index: int, cancelled: Callable[[], bool]) -> Any:
        while True:
            if cancelled():
                raise LoadCancelled()
            with contextlib.suppress(TimeoutError):
                return self.futures[index].result(timeout=0.1)

    def stop(self) -> None:
        """Stop every helper now rather than wait for its ranges."""
        self.stopped = list(getattr(self.executor, "_processes", {}).values())
        for process in self.stopped:
            process.terminate()

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)
        for process in self.stopped:
            # a worker that outlives its SIGTERM by a second is killed rather than let
            # it hold the load's cleanup (seen once: one stopped while still starting
            # stayed waiting for work until the cleanup was cut short at 10 s)
            process.join(timeout=1)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)
        _discard_unread(self.futures)


_JOB_SIZE = struct.Struct("<Q")
# Helpers that sent their whole result and were still ending when their decode was done:
# reaped at the next parallel decode or at exit (each exits right after its result).
_ending: list[int] = []


def reap_ended_helpers(block: bool = False) -> None:
    """Reap the helpers of earlier decodes that have ended (all of them, ``block``)."""
    for pid in list(_ending):
        try:
            done, _status = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done == pid:
            _ending.remove(pid)


atexit.register(reap_ended_helpers, True)


def _work_from(job_reader: int) -> Callable[[], Any]:
    """A helper forked ahead: its work, as ``start`` sent it (the helper ends, quietly,
    if the pipe closes without any: no decode took it)."""
    with open(job_reader, "rb", closefd=True) as source:
        head = source.read(_JOB_SIZE.size)
        if len(head) < _JOB_SIZE.size:
            os._exit(0)
        work: Callable[[], Any] = pickle.loads(source.read(_JOB_SIZE.unpack(head)[0]))
    return work


class _ForkedHelpers:
    """Helper processes forked straight from this process, each decoding at once, for
    a process that runs no other thread (the CLI; a plain fork is then safe, as the
    gzip read-ahead's is).  Without a pool, no manager or queue-feeder thread stands
    between a helper and its work (those threads need the GIL, which this process's own
    decode holds), and neither ``concurrent.futures`` nor ``multiprocessing`` is
    imported (14-17 ms of every command that decodes in parallel; `summary` 0.89-0.99x
    the time on the real traces decoded in parallel, 2.6-3.6 MB less peak memory).  A
    helper sends its result down a pipe, pickled (it comes from this same program), and
    ends with ``os._exit``; one that fails or dies leaves the load to decode in this
    process, as a pool's broken worker does."""

    def __init__(self, slots: Any, shared: Any) -> None:
        self.slots, self.shared = slots, shared
        self.children: list[tuple[int, int]] = []  # (pid, the read end of its result pipe)
        self.reaped: set[int] = set()
        self.waiting: list[int] = []  # helpers forked ahead: the writing ends of their work pipes
        self.given = 0  # how many of them have their work
        self.delivered: set[int] = set()  # helpers that sent their whole result

    def start(self, work: Callable[[], Any]) -> None:
        """``work`` for the next helper forked ahead, or for one forked now."""
        if self.given < len(self.waiting):
            job = pickle.dumps(work, protocol=pickle.HIGHEST_PROTOCOL)
            with open(self.waiting[self.given], "wb", closefd=True) as out:
                out.write(_JOB_SIZE.pack(len(job)) + job)
            self.given += 1
            return
        reader, writer = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(reader)
            self._run(lambda: work, writer, parent)
        os.close(writer)
        self.children.append((pid, reader))

    def fork_waiting(self, count: int, claims_writer: Any) -> None:
        """Fork ``count`` helpers now, before their work is known: each waits for it on
        a pipe of its own (``start`` sends it) and ends, without a result, if the pipe
        closes first.  ``claims_writer``: the ranges' pipe, still open here, which a
        helper closes on its side."""
        for _ in range(count):
            job_reader, job_writer = os.pipe()
            reader, writer = os.pipe()
            parent = os.getpid()
            pid = os.fork()
            if pid == 0:
                for end in (job_writer, reader, *self.waiting):  # (the earlier helpers' work pipes)
                    os.close(end)
                self._run(partial(_work_from, job_reader), writer, parent, claims_writer)
            os.close(job_reader)
            os.close(writer)
            self.children.append((pid, reader))
            self.waiting.append(job_writer)

    def _run(
        self, work_of: Callable[[], Callable[[], Any]], writer: int, parent: int, claims_writer: Any = None
    ) -> NoReturn:
        """The helper's whole life: never returns into the code that forked it."""
        code = 1
        try:
            try:
                _init_worker(self.slots, self.shared, memory_configured(), parent, claims_writer)
                payload = b"R" + pickle.dumps(work_of()(), protocol=pickle.HIGHEST_PROTOCOL)
                code = 0
            except BaseException as error:  # told to the loading process, which falls back
                payload = b"E" + f"{type(error).__name__}: {error}".encode(errors="replace")
            # its length first: the loading process takes the result once it has it all,
            # without waiting for the end of the pipe, which comes only once this process's
            # memory is torn down (~3 ms at the end of every parallel decode)
            view = memoryview(_JOB_SIZE.pack(len(payload)) + payload)
            while view:
                view = view[os.write(writer, view) :]
        finally:
            os._exit(code)

    def result(self, index: int, cancelled: Callable[[], bool]) -> Any:
        pid, reader = self.children[index]
        received = bytearray()
        expected = -1  # the payload's length, once its prefix has come
        while expected < 0 or len(received) < expected + _JOB_SIZE.size:
            if cancelled():
                raise LoadCancelled()
            ready, _, _ = select.select([reader], [], [], 0.1)
            if ready:
                data = os.read(reader, 1 << 20)
                if not data:
                    break
                received += data
                if expected < 0 and len(received) >= _JOB_SIZE.size:
                    expected = _JOB_SIZE.unpack_from(received)[0]
        complete = expected >= 0 and len(received) == expected + _JOB_SIZE.size
        del received[: _JOB_SIZE.size]
        if complete:  # it is ending: reaped once it has (``close``)
            self.delivered.add(pid)
        status = 0 if complete else self._reap(pid, block=True)
        if status != 0 or received[:1] != b"R":
            told = bytes(received[1:201]).decode(errors="replace") if received[:1] == b"E" else f"exit status {status}"
            raise RuntimeError(f"a decode worker failed: {told}")
        try:
            return pickle.loads(received[1:])
        except Exception as error:  # cut short (a helper whose end this process did not see)
            raise RuntimeError(f"a decode worker's result was unreadable: {error}") from None

    def _reap(self, pid: int, block: bool) -> int | None:
        """The helper's exit code once it has ended (None while it runs)."""
        if pid in self.reaped:
            return 0
        try:
            done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done, status = pid, 0
        if done != pid:
            return None
        self.reaped.add(pid)
        return os.waitstatus_to_exitcode(status)

    def stop(self) -> None:
        """Stop every helper now rather than wait for its ranges."""
        for pid, _ in self.children:
            if pid not in self.reaped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)

    def close(self) -> None:
        """Reap every helper (one forked ahead and given no work ends when its work pipe
        closes; one that outlives its SIGTERM by a second is killed) and close the pipes."""
        for job_writer in self.waiting[self.given :]:
            with contextlib.suppress(OSError):
                os.close(job_writer)
        self.given = len(self.waiting)
        for pid, reader in self.children:
            if pid in self.delivered and self._reap(pid, block=False) is None:
                _ending.append(pid)  # tearing its memory down: nothing to wait for here
                with contextlib.suppress(OSError):
                    os.close(reader)
                continue
            deadline = time.monotonic() + 1
            while self._reap(pid, block=False) is None and time.monotonic() < deadline:
                time.sleep(0.005)
            if pid not in self.reaped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self._reap(pid, block=True)
            with contextlib.suppress(OSError):
                os.close(reader)


def _claims_and_slots(ahead: _HelpersAhead | None, workers: int, ranges: int) -> tuple[int, Any, Any, Any, Any, Any]:
    """(helpers, progress slots, the pipe ranges are claimed from and its writing end,
    what the processes share, the pool's context or None) for a decode of ``ranges``."""
    if ahead is not None:  # forked already (a helper that finds no range left returns at once)
        ahead.needed[0] = ranges - 1
        return ahead.helpers, ahead.slots, ahead.claims, ahead.writer, (ahead.claims, ahead.needed), None
    helpers = min(workers, ranges) - 1  # worker processes beside this one
    if _may_fork_plainly():
        reader, write_end = os.pipe()
        claims, writer = os.fdopen(reader, "rb", buffering=0), os.fdopen(write_end, "wb", buffering=0)
        shared = (claims, _shared_int64(1))
        shared[1][0] = ranges - 1
        return helpers, _shared_int64(2 * (helpers + 1)), claims, writer, shared, None
    ctx = pool_context()
    if ctx is None:
        raise RuntimeError("no way to start worker processes from here")
    slots = ctx.Array("q", 2 * (helpers + 1), lock=False)  # per process: bytes done, events decoded
    # every range's index, for whichever process asks first (written and closed before
    # any worker reads: a reader finds the end, never a writer still open), and the
    # last range still needed (lowered when a range runs on to the end of the array)
    claims, writer = ctx.Pipe(duplex=False)
    return helpers, slots, claims, writer, (claims, ctx.Array("q", [ranges - 1], lock=False)), ctx


def _new_runner(ctx: Any, helpers: int, slots: Any, shared: Any) -> _PoolHelpers | _ForkedHelpers:
    """Helpers forked from here (``ctx`` None), or a pool's from the fork server."""
    if ctx is None:
        return _ForkedHelpers(slots, shared)
    from concurrent.futures import ProcessPoolExecutor

    parent = os.getpid() if ctx.get_start_method() == "fork" else _LOADER_PID_UNKNOWN
    return _PoolHelpers(
        ProcessPoolExecutor(
            max_workers=helpers,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(slots, shared, memory_configured(), parent),
        )
    )


class _StartedDecode:
    """A parallel decode whose helpers are at work: its ranges, the pipe they are claimed
    from, the helpers and their result files.  ``finish`` has this process claim ranges
    too and gathers every range; the command line may start one before it imports the
    analysis (``start_decode_ahead``), and the load that follows finishes it."""

    def __init__(self, buffer: Any, plain_path: str, first: int, workers: int, chunk_bytes: int) -> None:
        self.buffer, self.plain_path, self.first = buffer, plain_path, first
        self.workers, self.chunk_bytes = workers, chunk_bytes
        self.size = len(buffer)
        reap_ended_helpers()
        ahead = _take_helpers_ahead()
        try:
            starts = _range_starts(buffer, first, self.size, ahead.helpers + 1 if ahead else workers, chunk_bytes)
            if len(starts) < 2:
                raise RuntimeError("nothing to share between processes")
        except BaseException:
            if ahead is not None:
                ahead.close()
            raise
        self.starts = starts
        helpers, slots, claims, writer, shared, ctx = _claims_and_slots(ahead, workers, len(starts))
        self.helpers, self.slots, self.claims, self.shared = helpers, slots, claims, shared
        with writer:
            os.write(writer.fileno(), b"".join(_CLAIM.pack(index) for index in range(len(starts))))
        sweep_spills()
        runner = ahead.runner if ahead is not None else _new_runner(ctx, helpers, slots, shared)
        self.runner = runner
        self.memory_fds: list[int] = []
        # (os.urandom, not ``secrets``: that module loads OpenSSL's bindings, ~3 ms of a start)
        self.load_token = os.urandom(4).hex()
        self.owner = os.getpid()
        try:
            self.memory_fds = [_memory_file(slot) for slot in range(1, helpers + 1)]
            with endings_held():  # the helpers are forked now: no handler inside fork
                for slot in range(1, helpers + 1):
                    runner.start(
                        partial(
                            decode_claimed_ranges,
                            plain_path,
                            starts,
                            slot,
                            chunk_bytes,
                            os.getpid(),
                            self.load_token,
                            self.memory_fds[slot - 1],
                        )
                    )
        except BaseException:
            self.abandon()
            raise

    def matches(self, plain_path: str, first: int, size: int, workers: int, chunk_bytes: int) -> bool:
        """Whether this is the decode a load of that file, with those settings, would start."""
        return (self.plain_path, self.first, self.size, self.workers, self.chunk_bytes) == (
            plain_path,
            first,
            size,
            workers,
            chunk_bytes,
        ) and self.owner == os.getpid()

    def finish(self, progress: Progress | None, cancelled: Callable[[], bool]) -> list[RangeResult]:
        """Claim ranges here too until none is left, then take the helpers' ranges: every
        range up to the first that ran on to the end of the array."""
        done_event = threading.Event()
        first, size, slots, helpers = self.first, self.size, self.slots, self.helpers

        def report_progress() -> None:
            while not done_event.wait(0.1):
                if progress is not None:
                    values = list(slots[:])
                    progress("parse", first + sum(values[0::2]), size, sum(values[1::2]))

        reporter = threading.Thread(target=report_progress, daemon=True)
        decoded: dict[int, RangeResult] = {}
        try:
            reporter.start()  # after the workers are forked: a forked child gets no copy of a running thread
            # this process claims ranges too, waiting alone would leave a core idle; but not
            # while it is busy elsewhere (importing the UI): then the workers take them
            wait_until_free(cancelled)
            decoded.update(
                _decode_claimed(self.buffer, self.starts, self.shared, slots, 0, self.chunk_bytes, cancelled)
            )
            if cancelled():
                raise LoadCancelled()
            for slot in range(1, helpers + 1):
                decoded.update(_unspill(self.runner.result(slot - 1, cancelled), self.memory_fds[slot - 1]))
        except BaseException:
            # cancelled, interrupted (Ctrl+C, SIGTERM) or failed: stop the workers now
            # rather than wait for their ranges
            self.runner.stop()
            raise
        finally:
            done_event.set()
            self._close()
        # Keep ranges up to the first one whose end could not be proven: that range ran
        # on to the end of the array by itself, so later ranges are redundant.
        kept: list[RangeResult] = []
        starts = self.starts
        for index in range(len(starts)):
            result = decoded.get(index)
            if result is None:
                raise RuntimeError("a decode worker left a range undecoded")
            kept.append(result)
            if index + 1 < len(starts) and result.report.stopped_at != starts[index + 1]:
                break
        return kept

    def abandon(self) -> None:
        """Stop the helpers and clean up: a decode no load took (or one that failed)."""
        self.runner.stop()
        self._close()

    def _close(self) -> None:
        self.runner.close()
        for fd in self.memory_fds:  # a mapping keeps its pages; the file goes with its last holder
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.memory_fds = []
        self.claims.close()
        _remove_spills_of_load(os.getpid(), self.load_token)


# The decode ``start_decode_ahead`` began, until a load takes it (or the process ends).
_started_ahead: _StartedDecode | None = None


def start_decode_ahead(source: PlainSource, first: int, workers: int, chunk_bytes: int) -> bool:
    """Start the parallel decode of ``source``'s events array from ``first`` now, for the
    load that follows in this process to finish (``decode_in_parallel`` with the same
    file and settings takes it).  The command line calls this before it imports the
    analysis and output modules (~25 ms), which the helpers spend decoding on a core
    that would otherwise wait.  False (nothing started) where a decode would not share
    (one worker, threads running, too few ranges) or one was already started."""
    global _started_ahead
    if _started_ahead is not None or workers < 2 or not source.plain_path or not _may_fork_plainly():
        return False
    try:
        _started_ahead = _StartedDecode(source.buffer, source.plain_path, first, workers, chunk_bytes)
    except (OSError, ValueError, RuntimeError):
        return False
    atexit.register(abandon_decode_ahead)
    return True


def abandon_decode_ahead() -> None:
    """Stop a decode started ahead that no load took (the command failed first, or its
    trace's index was cached after all)."""
    global _started_ahead
    started, _started_ahead = _started_ahead, None
    if started is not None and started.owner == os.getpid():
        started.abandon()


def _take_started_ahead(source: PlainSource, first: int, workers: int, chunk_bytes: int) -> _StartedDecode | None:
    global _started_ahead
    started = _started_ahead
    if started is None:
        return None
    _started_ahead = None
    if started.matches(source.plain_path, first, len(source.buffer), workers, chunk_bytes):
        started.buffer = source.buffer  # (the same file: this load's mapping of it)
        return started
    if started.owner == os.getpid():
        started.abandon()
    return None


def decode_in_parallel(
    source: PlainSource,
    first: int,
    workers: int,
    progress: Progress | None,
    cancelled: Callable[[], bool],
    chunk_bytes: int,
) -> list[RangeResult] | None:
    """Parallel decoding (the one started ahead for this file and these settings, if
    any), or None when worker processes cannot be started here (the caller then decodes
    in this process)."""
    try:
        started = _take_started_ahead(source, first, workers, chunk_bytes) or _StartedDecode(
            source.buffer, source.plain_path, first, workers, chunk_bytes
        )
        return started.finish(progress, cancelled)
    except (OSError, ValueError, RuntimeError):  # BrokenPipeError is an OSError
        return None
