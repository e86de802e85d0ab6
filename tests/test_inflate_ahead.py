"""A gzip trace decompressed by a child forked before the rest of trnscope loads
(``core.formats.inflate_ahead``): the loading process takes the child's copy over
instead of decompressing again, the copy is the same bytes, and nothing is left behind
whether the copy is claimed, cancelled, unclaimed or damaged.

Each case runs in a fresh interpreter: the child is forked only from a process that
runs no other thread and has not loaded NumPy, which a pytest worker is not."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SAMPLES
from trnscope.cli.arguments import parse_command_line, traces_read_whole

TRACE = SAMPLES / "cpu_train_tiny_session" / "train_tiny.pt.trace.json.gz"

# Runs in the fresh interpreter.  After ``start``, the parent's own ways of writing a
# copy fail loudly: a test passes only if the child's copy was the one used.
PRELUDE = """
import gzip, json, os, sys
from pathlib import Path
from trnscope.core.formats import inflate_ahead
path = Path(sys.argv[1]); keep = sys.argv[2] == "keep"; out = {}
out["started"] = inflate_ahead.start(path, keep=keep)
out["numpy_before"] = "numpy" in sys.modules
from trnscope.core.formats import source
def parent_must_not_write(*args, **kwargs):
    raise AssertionError("the parent decompressed the file itself")
source.write_copy = parent_must_not_write
source.inflate = parent_must_not_write
def leftovers():  # while this process runs: private copies and temporary files
    folder = os.environ["TRNSCOPE_CACHE_DIR"] + "/plain"
    return [n for n in os.listdir(folder) if "nocache" in n or n.endswith(".tmp")]
"""


def _run(tmp_path: Path, path: Path, keep: bool, body: str, before: str = "", **settings: str) -> dict:
    env = {**os.environ, "TRNSCOPE_CACHE_DIR": str(tmp_path / "cache"), **settings}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    script = before + PRELUDE + body + "\nprint(json.dumps(out))\n"
    result = subprocess.run(
        [sys.executable, "-c", script, str(path), "keep" if keep else "private"],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _leftovers(tmp_path: Path) -> list[str]:
    """Private copies and temporary files in the cache (kept copies are meant to stay)."""
    folder = tmp_path / "cache" / "plain"
    if not folder.is_dir():
        return []
    return sorted(name for name in os.listdir(folder) if "nocache" in name or name.endswith(".tmp"))


def _random_gzip(path: Path, megabytes: int) -> None:
    """Incompressible content: several 4 MiB blocks of compressed input, so the child
    reports progress more than once."""
    path.write_bytes(gzip.compress(os.urandom(megabytes << 20), compresslevel=1))


CLAIM = """
progress = []
plain = source.open_plain(path, lambda *update: progress.append(update), reuse=keep)
out["same_bytes"] = bytes(plain.buffer[:]) == gzip.decompress(path.read_bytes())
out["plain_exists"] = os.path.exists(plain.plain_path)
out["damage"] = plain.gzip_damage
out["last_progress"] = list(progress[-1]) if progress else None
"""


@pytest.mark.parametrize("keep", [False, True], ids=["no-cache", "cache"])
def test_the_child_writes_the_copy_the_load_uses(tmp_path: Path, keep: bool) -> None:
    path = tmp_path / "random.json.gz"
    _random_gzip(path, 9)
    out = _run(tmp_path, path, keep, CLAIM)
    assert out["started"] and not out["numpy_before"]
    assert out["same_bytes"] and out["plain_exists"] and out["damage"] == ""
    size = path.stat().st_size
    assert out["last_progress"] == ["decompress", size, size]
    assert _leftovers(tmp_path) == []
    kept = sorted(os.listdir(tmp_path / "cache" / "plain"))
    assert (len(kept) == 2) == keep  # KEY.json and KEY.meta


def test_a_kept_copy_is_checked_and_used_as_before(tmp_path: Path) -> None:
    _run(tmp_path, TRACE, True, CLAIM)
    (copy,) = (tmp_path / "cache" / "plain").glob("*.json")
    inode = copy.stat().st_ino
    # the child finds the copy there and writes nothing; the parent checks its CRC and
    # uses it (the parent's own writing fails the run)
    again = _run(tmp_path, TRACE, True, CLAIM)
    assert again["same_bytes"] and copy.stat().st_ino == inode


DAMAGED = """
plain = source.open_plain(path, reuse=keep)
out["damage"] = plain.gzip_damage
out["bytes"] = len(plain.buffer)
"""


def test_a_damaged_file_reports_the_same_damage(tmp_path: Path) -> None:
    whole = TRACE.read_bytes()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(whole[: len(whole) * 2 // 3])
    out = _run(tmp_path, path, False, DAMAGED)
    from trnscope.core.formats.source import open_plain

    here = open_plain(path, reuse=False)
    assert out["damage"] == here.gzip_damage == "gzip stream ends early (file cut off)"
    assert out["bytes"] == len(here.buffer) > 0
    assert _leftovers(tmp_path) == []


UNCLAIMED = """
import time
child = inflate_ahead._children[0]
time.sleep(0.5)  # the child has finished its private copy
inflate_ahead._stop_unclaimed()
try:
    os.waitpid(child.pid, os.WNOHANG)
    out["reaped"] = False
except ChildProcessError:
    out["reaped"] = True
out["left"] = leftovers()
"""


def test_an_unclaimed_copy_is_stopped_and_removed(tmp_path: Path) -> None:
    path = tmp_path / "random.json.gz"
    _random_gzip(path, 2)
    out = _run(tmp_path, path, False, UNCLAIMED)
    assert out["reaped"] and out["left"] == []
    assert _leftovers(tmp_path) == []


CANCELLED = """
from trnscope.core.base.errors import LoadCancelled
try:
    source.open_plain(path, cancelled=lambda: True, reuse=keep)
    out["cancelled"] = False
except LoadCancelled:
    out["cancelled"] = True
out["left"] = leftovers()
"""


def test_a_cancelled_load_stops_the_child_and_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "random.json.gz"
    _random_gzip(path, 24)
    out = _run(tmp_path, path, False, CANCELLED)
    assert out["cancelled"] and out["left"] == []


OTHER_FILE = """
other = Path(sys.argv[1] + ".other.json.gz")
other.write_bytes(path.read_bytes())
source.write_copy = source_write_copy
plain = source.open_plain(other, reuse=keep)
out["other_bytes"] = bytes(plain.buffer[:]) == gzip.decompress(other.read_bytes())
out["still_waiting"] = len(inflate_ahead._children)
"""


def test_another_file_is_read_as_always(tmp_path: Path) -> None:
    body = OTHER_FILE.replace(
        "source.write_copy = source_write_copy",
        "from trnscope.core.formats import gzip_copy\nsource.write_copy = gzip_copy.write_copy",
    )
    path = tmp_path / "t.json.gz"
    path.write_bytes(TRACE.read_bytes())
    out = _run(tmp_path, path, False, body)
    assert out["other_bytes"] and out["still_waiting"] == 1
    assert _leftovers(tmp_path) == []


REFUSALS = """
import threading
plain_file = Path(sys.argv[1] + ".plain.json")
plain_file.write_bytes(b"[]")
out["plain"] = inflate_ahead.start(plain_file, keep=keep)
fifo = Path(sys.argv[1] + ".fifo")
os.mkfifo(fifo)
out["fifo"] = inflate_ahead.start(fifo, keep=keep)  # never opened: no writer would ever come
out["folder"] = inflate_ahead.start(Path(sys.argv[1]).parent, keep=keep)
thread = threading.Thread(target=threading.Event().wait, args=(2,), daemon=True)
thread.start()
out["threaded"] = inflate_ahead.start(path, keep=keep)
"""


def test_no_child_for_plain_json_a_fifo_a_folder_or_beside_other_threads(tmp_path: Path) -> None:
    path = tmp_path / "t.json.gz"
    path.write_bytes(TRACE.read_bytes())
    out = _run(tmp_path, path, False, REFUSALS)
    assert out["started"] and out["plain"] is False and out["threaded"] is False
    assert out["fifo"] is False and out["folder"] is False


def test_the_command_line_reads_ahead_and_prints_the_same(tmp_path: Path) -> None:
    env = {**os.environ, "TRNSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "trnscope", "summary", str(TRACE), "--format", "json", "--no-cache"]
    ahead = subprocess.run(command, capture_output=True, text=True, cwd=str(REPO), env=env, timeout=120)
    assert ahead.returncode == 0, ahead.stderr
    in_process = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from trnscope.cli.main import main; sys.exit(main(sys.argv[1:]))",
            *command[3:],
        ],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env=env,
        timeout=120,
    )
    assert in_process.returncode == 0, in_process.stderr
    strip = lambda text: {k: v for k, v in json.loads(text).items() if k not in ("load_seconds",)}  # noqa: E731
    assert strip(ahead.stdout) == strip(in_process.stdout)
    assert _leftovers(tmp_path) == []


def test_parsing_loads_no_numpy() -> None:
    script = (
        "import sys\n"
        "from trnscope.cli.arguments import parse_command_line\n"
        "from trnscope.core.formats import inflate_ahead\n"
        "parse_command_line(['summary', 'x.json.gz', '--sort', 'self_cpu'])\n"
        "print('numpy' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=str(REPO), timeout=60)
    assert result.stdout.strip() == "False", result.stderr


def test_the_child_is_forked_before_msgspec_and_numpy_load(tmp_path: Path) -> None:
    """The child's head start is what the load waits for less: the console script forks it
    from ``parse_and_read_ahead``, and neither msgspec (~20 ms of imports) nor NumPy may
    load before that (they did until 2026-12-02: the fork came ~38 ms into the process,
    ~18 ms now)."""
    script = (
        "import os, sys\n"
        "loaded_at_fork = []\n"
        "real_fork = os.fork\n"
        "def fork():\n"
        "    loaded_at_fork.append(sorted(m for m in ('msgspec', 'numpy') if m in sys.modules))\n"
        "    return real_fork()\n"
        "os.fork = fork\n"
        "from trnscope.cli import parse_and_read_ahead\n"
        "parse_and_read_ahead(['summary', sys.argv[1], '--no-cache'])\n"
        "print(loaded_at_fork)\n"
    )
    env = {**os.environ, "TRNSCOPE_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, "-c", script, str(TRACE)], capture_output=True, text=True, cwd=str(REPO), env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[[]]"  # one fork, with neither loaded
    assert _leftovers(tmp_path) == []  # the unclaimed child was stopped and its copy removed


def test_the_copy_record_and_the_outcome_read_back_what_was_written() -> None:
    from trnscope.core.formats.gzip_copy import Copy, CopyRecord
    from trnscope.core.formats.inflate_ahead import Outcome

    record = CopyRecord(123_456_789_012, "gzip stream ends early (file cut off) \u00e9\n", 2**32 - 1)
    assert CopyRecord.decode(record.encode()) == record
    # the format msgspec wrote before (2026-12-01 and earlier) still reads
    assert CopyRecord.decode(b'{"plain_bytes":10,"damage":"","crc32":7}') == CopyRecord(10, "", 7)
    for damaged in (
        b"",
        b'[10, "", 7]',
        b'{"plain_bytes":true,"damage":"","crc32":7}',
        b'{"plain_bytes":10,"damage":null,"crc32":7}',
        b'{"plain_bytes":10,"damage":"","crc32":7.0}',
        b'{"plain_bytes":10,"damage":""}',
        b'{"plain_bytes":10,"damage":"","crc32":7,"more":1}',
        b"\xff\xfe",
        b"[" * 100_000,
    ):
        assert CopyRecord.decode(damaged) is None, damaged[:40]
    written = Outcome("written", Copy("/cache/plain/a b\n.json", "cut"))
    for outcome in (written, Outcome("kept"), Outcome("declined")):
        assert Outcome.decode(outcome.encode()) == outcome
    for garbage in (
        b"",
        b"null",
        b'["written", null]',
        b'["kept", ["a", "b"]]',
        b'["other", null]',
        b'["written", [1, 2]]',
    ):
        assert Outcome.decode(garbage) is None, garbage


def test_a_private_copy_is_named_without_reading_the_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under --no-cache the copy lives as long as its process: its name needs the file's
    identity, not a hash of its content (a kept copy's name keeps the content hash)."""
    from trnscope.core.base.cachedir import fingerprint
    from trnscope.core.formats import gzip_copy

    first, second = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    first.write_bytes(TRACE.read_bytes())
    second.write_bytes(TRACE.read_bytes())
    assert gzip_copy.copy_key(first, keep=True) == fingerprint(first)

    def no_reading(path: Path) -> str:
        raise AssertionError(f"{path} was read to name a private copy")

    monkeypatch.setattr(gzip_copy, "fingerprint", no_reading)
    private = gzip_copy.copy_key(first, keep=False)
    assert len(private) == 32 and private == gzip_copy.copy_key(first, keep=False)
    assert private != gzip_copy.copy_key(second, keep=False)  # the same bytes, another file


def _inflated(path: Path) -> tuple[bytes, str]:
    from trnscope.core.formats.gzip_copy import inflate

    parts: list[bytes] = []
    damage = inflate(path, path.stat().st_size, parts.append, None, None)
    return b"".join(parts), damage


def test_inflate_reads_members_padding_and_damage_wherever_its_pieces_are_cut(tmp_path: Path) -> None:
    """The compressed input is fed in 256 KiB pieces: members, zero padding after the
    last one and damage may fall across any piece boundary and read as before."""
    # incompressible members of ~700 KiB each: every boundary between them lies inside a piece
    members = [os.urandom(700 << 10) for _ in range(3)]
    joined = tmp_path / "members.json.gz"
    joined.write_bytes(b"".join(gzip.compress(m, compresslevel=1) for m in members))
    assert _inflated(joined) == (b"".join(members), "")

    padded = tmp_path / "padded.json.gz"  # padding longer than a piece, as some tools write
    padded.write_bytes(joined.read_bytes() + b"\x00" * (600 << 10))
    assert _inflated(padded) == (b"".join(members), "")

    garbage = tmp_path / "garbage.json.gz"  # padding, then bytes that are no member
    garbage.write_bytes(joined.read_bytes() + b"\x00" * (300 << 10) + b"not gzip at all" * 10)
    text, damage = _inflated(garbage)
    assert text == b"".join(members) and damage.startswith("gzip data corrupt near compressed byte")

    compressed = bytearray(joined.read_bytes())
    compressed[len(compressed) // 2 : len(compressed) // 2 + 64] = b"\xff" * 64  # inside the second member
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(bytes(compressed))
    text, damage = _inflated(broken)
    assert damage.startswith("gzip data corrupt near compressed byte") and len(text) < sum(map(len, members))
    assert text[: len(members[0])] == members[0]  # everything before the damage

    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(joined.read_bytes()[: (1 << 20) + 12345])
    text, damage = _inflated(cut)
    assert damage == "gzip stream ends early (file cut off)" and text == b"".join(members)[: len(text)]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["summary", "t.json.gz"], ["t.json.gz"]),
        (["summary", "dir", "--merge"], []),
        (["chain", "t.json.gz", "--op", "aten::mm"], ["t.json.gz"]),
        (["diagnose", "t.json.gz"], ["t.json.gz"]),
        (["timeline", "t.json.gz", "--from", "-1ms"], ["t.json.gz"]),
        (["open", "t.json.gz"], ["t.json.gz"]),
        (["open", "a.json.gz", "b.json.gz"], ["a.json.gz", "b.json.gz"]),
        (["compare", "a.json.gz", "b.json.gz", "c.json.gz"], ["a.json.gz", "b.json.gz", "c.json.gz"]),
        (["compare", "a", "b", "c", "d"], []),
        (["ranks", "folder"], []),
    ],
)
def test_which_commands_read_their_traces_whole(argv: list[str], expected: list[str]) -> None:
    assert traces_read_whole(parse_command_line(argv)) == expected


VARIANTS = """
second = Path(sys.argv[1] + ".second.json.gz")
out["second_started"] = inflate_ahead.start(second, keep=keep)
out["same_file_twice"] = inflate_ahead.start(path, keep=keep)
for name, each in (("first", path), ("second", second)):
    plain = source.open_plain(each, reuse=keep)
    out[name] = bytes(plain.buffer[:]) == gzip.decompress(each.read_bytes())
"""


def test_each_variant_has_its_child(tmp_path: Path) -> None:
    path = tmp_path / "first.json.gz"
    path.write_bytes(TRACE.read_bytes())
    (tmp_path / "first.json.gz.second.json.gz").write_bytes(gzip.compress(b'{"traceEvents": []}'))
    out = _run(tmp_path, path, False, VARIANTS)
    assert out["started"] and out["second_started"] and out["same_file_twice"] is False
    assert out["first"] and out["second"]
    assert _leftovers(tmp_path) == []


HELD = """
import signal, time
child = inflate_ahead._children[0]
time.sleep(0.05)  # the child is inflating 256 MB of zeros
os.kill(child.pid, signal.SIGTERM)
out["copy"] = child.wait(None, None) is not None
out["left"] = leftovers()
"""


def test_a_child_forked_while_interrupts_are_held_can_still_be_stopped(tmp_path: Path) -> None:
    # the console script holds SIGINT and SIGTERM while it loads its C extensions; the
    # child must not inherit that, or stopping it would wait for its whole copy
    path = tmp_path / "zeros.json.gz"
    path.write_bytes(gzip.compress(bytes(256 << 20), compresslevel=1))
    prelude = "import signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})\n"
    # all 256 MB (~0.5 s): under the default bomb limit (100x the 0.25 MB file) the copy
    # stopped at 25 MB, which a fast machine finished before the kill came
    out = _run(tmp_path, path, False, HELD, before=prelude, TRNSCOPE_MAX_INFLATE_RATIO="100000")
    assert out["copy"] is False and out["left"] == []


def test_interrupts_wait_until_the_extensions_are_loaded() -> None:
    import signal
    import threading
    import time

    from trnscope.cli import _interrupts_held

    arrived = []
    with pytest.raises(KeyboardInterrupt), _interrupts_held():
        # to this thread (the console script has no other; a pytest worker may)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        time.sleep(0.05)
        arrived.append("held")  # not interrupted inside the block
    assert arrived == ["held"]


def test_a_cache_root_another_process_creates_meanwhile_is_used(tmp_path: Path, monkeypatch) -> None:
    # compare's children on a fresh machine create the cache root together: the one that
    # found it missing and then lost the race to create it was refused, and its copy went
    # to the parent (seen once in a full test run)
    from trnscope.core.base import cachedir

    root = tmp_path / "cache"
    root.mkdir()
    monkeypatch.setenv("TRNSCOPE_CACHE_DIR", str(root))
    exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda self: False if self == root else exists(self))
    assert cachedir.writable_dir("plain") == root / "plain"


def test_the_explorer_opens_a_gzip_trace_through_the_console_script(tmp_path: Path) -> None:
    # the whole path a user takes: parse, read ahead, NumPy, the fork server, the early
    # load claiming the child's copy, the first screen, q; nothing left in the cache
    import pty
    import select
    import time

    path = tmp_path / "t.json.gz"
    path.write_bytes(TRACE.read_bytes())
    env = {**os.environ, "TRNSCOPE_CACHE_DIR": str(tmp_path / "cache"), "TERM": "xterm-256color"}
    env.update(COLUMNS="100", LINES="30")
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the explorer's process
        os.chdir(REPO)
        os.execve(sys.executable, [sys.executable, "-m", "trnscope", "open", str(path), "--no-cache"], env)
    seen, sent, started = b"", False, time.monotonic()
    try:
        while time.monotonic() - started < 90:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    data = os.read(fd, 1 << 16)
                except OSError:  # the explorer has exited: the terminal is gone
                    break
                if not data:
                    break
                seen += data
            if not sent and b"Calls" in seen:
                os.write(fd, b"q")
                sent = True
    finally:
        if not sent:
            os.kill(pid, 9)
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert sent, seen[-2000:].decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0
    assert _leftovers(tmp_path) == []


STUBBORN = """
import signal, time
from trnscope.core.formats.inflate_ahead import _Child
inflate_ahead._STOP_PATIENCE_S = 0.3
reader, writer = os.pipe()
pid = os.fork()
if pid == 0:  # deaf to SIGTERM, as a child stuck in a read can be
    os.close(reader)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.write(writer, b"ready")
    time.sleep(30)
    os._exit(0)
os.close(writer)
os.read(reader, 5)  # deaf from now on
stubborn = _Child(pid, reader, (0, 0), False)
started = time.monotonic()
stubborn.stop()
out["stopped_in"] = time.monotonic() - started
try:
    os.waitpid(pid, os.WNOHANG)
    out["reaped"] = False
except ChildProcessError:
    out["reaped"] = True
"""


def test_a_child_deaf_to_sigterm_is_killed_and_the_stop_ends(tmp_path: Path) -> None:
    out = _run(tmp_path, TRACE, False, STUBBORN)
    assert out["reaped"] and 0.25 < out["stopped_in"] < 5
