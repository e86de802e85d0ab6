"""Odd and hostile inputs: any JSON number is read or counted as invalid, nesting depth
of ignored values never matters, only the top-level traceEvents is read, metadata needs
no ts, and every file-system error is one line with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.chain import chain_for
from trnscope.core.base.jsondepth import flatten_deep
from trnscope.core.formats import load_path
from trnscope.core.formats.kineto.jsonscan import top_level_array
from trnscope.core.formats.kineto.lazyargs import event_args
from trnscope.core.formats.options import NO_CACHE
from trnscope.core.model.vocab import PH_META


def _op(name: str, ts: object = 0, dur: object = 10, **extra: object) -> str:
    fields = {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1}
    text = json.dumps(fields)[:-1]
    return text + f', "ts": {ts}, "dur": {dur}' + "".join(f', "{k}": {v}' for k, v in extra.items()) + "}"


def _file(tmp_path: Path, body: str, name: str = "t.json") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


@pytest.mark.parametrize(
    "ts, dur",
    [("4.7e15", "10"), ("1e308", "10"), (str(2**70), "10"), ("0", "9" * 400), ("-1e400", "10"), ("1e-400", "1e400")],
)
def test_any_number_is_read_or_counted(tmp_path: Path, ts: str, dur: str) -> None:
    path = _file(tmp_path, '{"traceEvents": [' + _op("good") + ", " + _op("odd", ts, dur) + "]}")
    trace = load_path(path, NO_CACHE)
    names = {trace.names[int(i)] for i in trace.events.name}
    assert "good" in names
    if "odd" not in names:  # not representable: counted with a warning, never clamped
        assert trace.stats.invalid_events + trace.stats.lost_events == 1
        assert any("without a usable ts/dur" in w or "malformed" in w for w in trace.warnings)
    Analysis(trace).op_table()


def test_two_events_far_apart_on_one_thread_nest(tmp_path: Path) -> None:
    body = '{"traceEvents": [' + _op("a", 0, 10) + ", " + _op("b", "4.4e15", 10) + ", " + _op("c", "4.4e15", 5) + "]}"
    analysis = Analysis(load_path(_file(tmp_path, body), NO_CACHE))
    table = analysis.op_table()
    assert table.calls[table.find("a")] == 1 and table.calls[table.find("b")] == 1
    assert table.cpu_total[table.find("b")] == 10_000 and table.self_cpu[table.find("b")] == 5_000


def test_deeply_nested_args_do_not_fail_the_file(tmp_path: Path) -> None:
    deep = '{"x": ' * 3000 + "1" + "}" * 3000
    body = '{"traceEvents": [' + _op("deep", 0, 10, args=deep) + ", " + _op("next", 20, 10) + "]}"
    analysis = Analysis(load_path(_file(tmp_path, body), NO_CACHE))
    table = analysis.op_table()
    assert table.find("deep") >= 0 and table.find("next") >= 0
    assert any("nested deeper" in w for w in analysis.trace.warnings)
    row = int(table.instances(table.find("deep"))[0])
    assert isinstance(event_args(analysis.trace, row), dict)  # drill-down reads it too
    chain_for(analysis, "deep")


def test_flatten_deep_keeps_strings_and_shallow_values() -> None:
    data = b'[{"a": "[[[{{{", "b": [[[1]]], "c": {"d": {"e": 2}}}]'
    assert flatten_deep(data, max_depth=3) == b'[{"a": "[[[{{{", "b": [null], "c": {"d": null}}]'
    assert json.loads(flatten_deep(data, max_depth=64)) == json.loads(data)


def test_only_the_top_level_trace_events_are_read(tmp_path: Path) -> None:
    fake = '{"traceEvents": [' + _op("FAKE") + "]}"
    body = '{"deviceProperties": [' + fake + '], "distributedInfo": {"note": "\\"traceEvents\\": ["}, '
    body += '"traceEvents": [' + _op("REAL") + "]}"
    trace = load_path(_file(tmp_path, body), NO_CACHE)
    assert [trace.names[int(i)] for i in trace.events.name] == ["REAL"]
    assert top_level_array(b'{"a": [{"traceEvents": []}]}', b"traceEvents", 1) == -1


def test_a_second_top_level_trace_events_is_reported(tmp_path: Path) -> None:
    body = '{"traceEvents": [' + _op("FIRST") + '], "x": 1, "traceEvents": [' + _op("SECOND") + "]}"
    trace = load_path(_file(tmp_path, body), NO_CACHE)
    assert [trace.names[int(i)] for i in trace.events.name] == ["FIRST"]
    assert any("second top-level traceEvents" in w for w in trace.warnings)


def test_metadata_events_need_no_ts(tmp_path: Path) -> None:
    meta = '{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "trainer"}}'
    trace = load_path(_file(tmp_path, '{"traceEvents": [' + meta + ", " + _op("a", 5, 10) + "]}"), NO_CACHE)
    assert trace.stats.invalid_events == 0
    assert [t.display for t in trace.threads if t.display == "trainer"]
    assert int(trace.events.ts[trace.events.ph == 0].min()) == 0  # the origin is the op, not the metadata


def _error_line(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("trnscope: error: ") and "Traceback" not in err
    return err


def test_file_system_errors_are_one_line(capsys, tmp_path: Path) -> None:
    assert "too long" in _error_line(capsys, "summary", str(tmp_path / ("a" * 300 + ".json"))).lower()
    if Path("/proc/self/mem").exists():
        _error_line(capsys, "summary", "/proc/self/mem")
    fifo = tmp_path / "pipe.json"
    import os

    os.mkfifo(fifo)
    _error_line(capsys, "summary", str(fifo))


def test_discovery_skips_entries_it_cannot_read(capsys, tmp_path: Path) -> None:
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "t.json").write_text('{"traceEvents": [' + _op("a") + "]}")
    (tmp_path / "loop").symlink_to(tmp_path)  # a link back up is not followed
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    assert main(["summary", str(tmp_path), "--format", "json", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["ops"][0]["name"] == "a"


def test_memory_records_with_values_of_any_type(tmp_path: Path) -> None:
    """A [memory] record's bytes or device type of another type, or past int64, counts
    as missing — never an exception, never a wrapped number."""
    from trnscope.core.analysis.memory import memory_of

    def record(ts: int, args: str) -> str:
        return (
            '{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, '
            f'"ts": {ts}, "args": {args}}}'
        )

    body = ",".join(
        [
            _op("aten::empty", ts=0, dur=100),
            record(10, '{"Bytes": 64, "Device Type": 0}'),
            record(20, '{"Bytes": "64", "Device Type": 0}'),
            record(30, f'{{"Bytes": {2**70}, "Device Type": 0}}'),
            record(40, '{"Bytes": true, "Device Type": 0}'),
            record(50, '{"Bytes": 32, "Device Type": 1.5}'),
            record(60, '{"Bytes": 16, "Device Type": 0, "extra": [1, {"deep": null}]}'),
        ]
    )
    analysis = Analysis(load_path(_file(tmp_path, "[" + body + "]"), NO_CACHE))
    memory = memory_of(analysis)
    assert memory is not None and memory.records == 6
    row = int(analysis.op_table().instances(analysis.op_table().find("aten::empty"))[0])
    assert memory.of_row(row)[0] == 64 + 16  # the two well-formed CPU records


@pytest.mark.parametrize("chunk_bytes", [1 << 20, 200])  # one chunk, and a chunk every few events
def test_repeated_metadata_is_folded_into_the_last_of_its_kind(tmp_path: Path, chunk_bytes: int) -> None:
    """Some files write the same process and thread names hundreds of thousands of times
    (an HTA MTIA trace: 310,000 of its 455,739 events).  Only the last of each kind
    counts (as in the Chrome viewer); the others become no rows, and are still counted
    as events."""
    from trnscope.core.formats.kineto.loader import load_kineto
    from trnscope.core.formats.options import LoadOptions

    def meta(name: str, tid: int, value: str) -> str:
        return json.dumps({"ph": "M", "name": name, "pid": 1, "tid": tid, "args": {"name": value}})

    names = [meta("thread_name", 7, f"worker-{k}") for k in range(50)] + [meta("thread_name", 8, "other")]
    body = ", ".join([*names[:25], _op("a", 5, 10), *names[25:], _op("b", 20, 10)])
    path = _file(tmp_path, '{"traceEvents": [' + body + "]}")
    trace = load_kineto(path, LoadOptions(workers=1, use_cache=False), chunk_bytes=chunk_bytes)
    rows = trace.events
    assert trace.event_count == 53  # every event of the file is counted
    assert len(rows) == 53 - trace.stats.folded_metadata
    assert int((rows.ph == PH_META).sum()) + trace.stats.folded_metadata == 51
    # one row per kind, wherever the chunks were cut: tid 7's last, tid 8's
    assert trace.stats.folded_metadata == 49
    labels = {t.tid: t.thread_label for t in trace.threads}
    assert labels["7"] == "worker-49" and labels["8"] == "other"  # the last one written
    assert sorted(trace.names[int(i)] for i in rows.name[rows.ph == 0]) == ["a", "b"]
    assert not trace.warnings  # nothing was lost


@pytest.mark.parametrize("chunk_bytes", [1 << 20, 300])  # one chunk, and a cut inside nearly every string
def test_strings_full_of_cuts_and_a_broken_event_after_them(tmp_path: Path, chunk_bytes: int) -> None:
    """Strings that hold "}, {" (where chunks are cut) next to an event that does not
    parse: every other event loads, the broken one is counted as lost, and the search
    for where an event ends is exact (it once tried every "}, {" of the string, each
    time re-decoding the piece)."""
    from trnscope.core.formats.kineto.loader import load_kineto
    from trnscope.core.formats.options import LoadOptions

    note = json.dumps("x}, {y" * 200)
    good = [_op(f"op{i}", 100 * i, 10, args='{"note": ' + note + "}") for i in range(6)]
    broken = '{"ph": "X", "name": "broken", "ts": 250, "dur": 1, "args": {"note": ' + note + ", oops}}"
    body = ", ".join([*good[:3], broken, *good[3:]])
    path = _file(tmp_path, '{"traceEvents": [' + body + "]}")
    trace = load_kineto(path, LoadOptions(workers=1, use_cache=False), chunk_bytes=chunk_bytes)
    assert sorted(trace.names[int(i)] for i in trace.events.name) == [f"op{i}" for i in range(6)]
    assert trace.stats.lost_events == 1


def test_a_piece_cut_inside_a_string_runs_to_the_end_of_its_event() -> None:
    """The fallback's step when a piece ends inside a string (a cut whose next "{" looks
    like an event, or damage): the event's true end is found once, not by re-decoding
    the piece at every later "}, {" (``jsonscan._decode_piece``)."""
    from trnscope.core.formats.kineto import jsonscan

    note = "x}, {y" * 500
    events = [{"ph": "X", "name": f"op{i}", "ts": i, "dur": 1, "args": {"note": note}} for i in range(3)]
    text = json.dumps(events).encode()
    boundary = jsonscan.BOUNDARY.search(text, 1)  # the first "}, {": inside op0's string
    assert boundary is not None and boundary.start() < text.index(b"op1")
    inside = jsonscan.Cut(end=boundary.start() + 1, next_start=boundary.end() - 1, array_end=-1)
    decoded, cut = jsonscan._decode_piece(text, 1, inside)
    assert decoded is not None and [e.name for e in decoded.events] == ["op0"]
    assert text[cut.next_start :].startswith(b'{"ph": "X", "name": "op1"')
