"""The caches are never trusted wrongly and never grow or delete without bound: an
in-place edit, a tampered index header or a tampered decompressed copy is noticed;
``--no-cache`` leaves nothing behind; a gzip bomb stops; the cache keeps to its cap,
least recently used first; ``cache clear`` removes only trnscope's own files."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from trnscope.cli.main import main
from trnscope.core.base.cachedir import MARKER, cache_entries, clear_cache
from trnscope.core.base.errors import TrnscopeError
from trnscope.core.base.fs import process_alive
from trnscope.core.formats import SourceRef, load_path
from trnscope.core.formats.options import DEFAULT, NO_CACHE, LoadOptions
from trnscope.core.opening.open import open_analysis
from trnscope.testing.events import op, trace_text


def _trace(name: str, pad: int = 0) -> bytes:
    return trace_text([op(name, 0, 10)], pad="x" * pad).encode()


def _names(path: Path, options: LoadOptions = DEFAULT) -> list[str]:
    analysis = open_analysis(SourceRef("t", str(path)), options)
    analysis.finish()  # writes the index cache
    return [analysis.trace.names[int(i)] for i in analysis.trace.events.name]


def test_in_place_edit_with_the_same_size_and_mtime_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(_trace("before"))
    assert _names(path) == ["before"]
    assert _names(path) == ["before"]  # served from the index cache
    stat = path.stat()
    with open(path, "r+b") as fh:  # same size, same mtime afterwards: only ctime moves
        fh.write(_trace("after_"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert _names(path) == ["after_"]


def test_a_tampered_index_header_is_not_believed(tmp_path: Path, isolated_cache: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(_trace("real"))
    _names(path)
    (index,) = (isolated_cache / "index").glob("*.idx")
    data = bytearray(index.read_bytes())
    at = data.index(b"real")  # the name list lives in the header
    data[at : at + 4] = b"fake"
    index.write_bytes(bytes(data))
    assert _names(path) == ["real"]


def test_a_tampered_decompressed_copy_is_not_used(tmp_path: Path, isolated_cache: Path) -> None:
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(_trace("real")))
    assert _names(gz, NO_CACHE) == ["real"]
    load_path(gz)  # makes the reusable copy
    (copy,) = [p for p in (isolated_cache / "plain").glob("*.json") if ".nocache." not in p.name]
    copy.write_bytes(copy.read_bytes().replace(b"real", b"fake"))  # same size
    assert [load_path(gz).names[0]] == ["real"]


def test_no_cache_ignores_and_leaves_no_decompressed_copy(tmp_path: Path, isolated_cache: Path) -> None:
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(_trace("real")))
    env = {**os.environ, "TRNSCOPE_CACHE_DIR": str(isolated_cache)}
    command = [sys.executable, "-m", "trnscope", "summary", str(gz), "--no-cache", "--format", "json"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=str(REPO))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ops"][0]["name"] == "real"
    assert not list((isolated_cache / "plain").glob("*")), "a --no-cache run left a copy behind"


def test_a_gzip_bomb_stops_at_the_bound(tmp_path: Path, isolated_cache: Path, monkeypatch) -> None:
    bomb = tmp_path / "bomb.json.gz"
    head = b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}'
    bomb.write_bytes(gzip.compress(head + b" " * (48 << 20) + b"]}", compresslevel=9))
    assert bomb.stat().st_size < 200_000
    trace = load_path(bomb)
    assert (isolated_cache / "plain").exists()
    (copy,) = (isolated_cache / "plain").glob("*.json")
    assert copy.stat().st_size <= 16 << 20  # the floor: 100× this small file is less
    assert trace.names[int(trace.events.name[0])] == "a"
    assert trace.stats.truncated and any("gzip bomb" in w for w in trace.warnings)
    monkeypatch.setenv("TRNSCOPE_MAX_INFLATE_RATIO", "100000")  # asked for: the whole file
    trace = load_path(bomb, NO_CACHE)
    assert not trace.stats.truncated


def test_the_cache_keeps_to_its_cap_least_recently_used_first(
    tmp_path: Path, isolated_cache: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("TRNSCOPE_CACHE_MAX_BYTES", str(2_500_000))
    files = []
    for index in range(3):
        gz = tmp_path / f"t{index}.json.gz"
        gz.write_bytes(gzip.compress(_trace(f"op{index}", pad=1_000_000)))
        files.append(gz)
    load_path(files[0])
    load_path(files[1])
    load_path(files[0])  # used again: now the most recent
    load_path(files[2])
    kept = {Path(e.path).name for e in cache_entries() if e.path.endswith(".json")}
    total = sum(e.size for e in cache_entries())
    assert total <= 2_500_000 and len(kept) == 2
    assert main(["cache", "info"]) == 0
    assert "of a 2 MB cap" in capsys.readouterr().out


def test_clear_removes_only_trnscope_files_and_refuses_a_foreign_folder(
    tmp_path: Path, isolated_cache: Path, monkeypatch, capsys
) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(_trace("a"))
    _names(path)
    assert (isolated_cache / MARKER).exists()
    mine = isolated_cache / "index" / "notes-of-mine.txt"
    mine.write_text("keep")
    (isolated_cache / "my-project").mkdir()
    (isolated_cache / "my-project" / "data.json").write_text("{}")
    assert main(["cache", "clear"]) == 0
    assert mine.read_text() == "keep" and (isolated_cache / "my-project" / "data.json").exists()
    assert not list((isolated_cache / "index").glob("*.idx"))
    foreign = tmp_path / "home-of-user"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("years of work")
    monkeypatch.setenv("TRNSCOPE_CACHE_DIR", str(foreign))
    with pytest.raises(TrnscopeError):
        clear_cache()
    assert main(["cache", "clear"]) == 2
    assert "not created by trnscope" in capsys.readouterr().err
    assert (foreign / "thesis.tex").read_text() == "years of work"


def test_cache_max_bytes_zero_turns_caching_off(tmp_path: Path, isolated_cache: Path, monkeypatch) -> None:
    monkeypatch.setenv("TRNSCOPE_CACHE_MAX_BYTES", "0")
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(_trace("a")))
    assert _names(gz) == ["a"]  # read (decompressed in memory), index not written
    assert cache_entries() == [] and not (isolated_cache / "plain").exists()


def test_copies_of_a_killed_process_are_swept_and_no_one_elses(tmp_path: Path, isolated_cache: Path) -> None:
    """A process killed with SIGKILL runs no exit handler: its --no-cache copy (or the
    temporary file of a copy it was writing) stays in the plain cache.  The next gzip
    open removes those whose process is gone, and keeps a live process's, its own kind
    of name only."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that no longer exists (unless reused at once: then it is kept)
    alive = os.getppid()
    key = "0123456789abcdef0123456789abcdef"
    plain = isolated_cache / "plain"
    plain.mkdir(parents=True, exist_ok=True)
    orphans = [plain / f"{key}.nocache.{gone.pid}.json", plain / f".{key}.{gone.pid}.tmp"]
    kept = [
        plain / f"{key}.nocache.{alive}.json",  # a live process's copy, in use
        plain / f".{key}.{alive}.tmp",  # a copy being written
        plain / f"{key}.json",  # a shared copy
        plain / f"notes.{gone.pid}.txt",  # not a name trnscope writes
    ]
    for path in orphans + kept:
        path.write_bytes(b"x")
    trace = tmp_path / "t.json.gz"
    trace.write_bytes(gzip.compress(_trace("swept")))
    assert _names(trace, NO_CACHE) == ["swept"]
    assert all(p.exists() for p in kept)
    if process_alive(gone.pid):  # the pid was reused meanwhile: its files are rightly kept
        pytest.skip("the dead process's pid was reused")
    assert not any(p.exists() for p in orphans)
