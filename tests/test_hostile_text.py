"""Hostile text from a trace never acts on the terminal: every text output and every
screen shows control characters, bidi overrides and line breaks escaped, and shows
markup as typed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trnscope.cli.compare import render_csv as compare_csv
from trnscope.cli.compare import render_table as compare_table
from trnscope.cli.diagnose import render_diagnosis
from trnscope.cli.render_summary import render_csv, render_table
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.chain import chain_for
from trnscope.core.analysis.chain_text import render_chain_text
from trnscope.core.analysis.compare import compare
from trnscope.core.analysis.diagnose import diagnose
from trnscope.core.analysis.summary import build_summary
from trnscope.core.analysis.timeline import build_lanes, render_text
from trnscope.core.base.text import safe_text
from trnscope.core.formats import load_path
from trnscope.core.formats.options import NO_CACHE
from trnscope.testing import events as events_mod

# What must never reach a terminal raw (the newline only as the line break we write).
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
ESC_SEQUENCES = [
    "\x1b]0;pwned\x07",  # set the window title
    "\x1b]52;c;cm0gLXJmIH4=\x07",  # write the clipboard (OSC 52)
    "\x1b[2J\x1b[H",  # clear the screen
    "\x9b31m",  # C1 CSI
    "\x9d0;title\x9c",  # C1 OSC
    "evil\u202eexe.txt",  # right-to-left override
    "\u2066isolate\u2069",
    "line\nfake row  999  999",
    "[/bold]x",
    "[link=https://example.invalid]aten::mul[/link]",
    "[bold red]loud",
]


def _trace_with(names: list[str], thread_name: str = "main") -> bytes:
    events: list[dict] = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": thread_name}},
        events_mod.annotation("ProfilerStep#0", 0, 10_000),
    ]
    ts = 10
    for i, name in enumerate(names):
        events.append(events_mod.op(name, ts, 50, ext=i + 1))
        events.append(events_mod.launch(ts + 5, 10, correlation=100 + i))
        events.append(events_mod.kernel("k:" + name, ts + 20, 30, correlation=100 + i, ext=i + 1))
        ts += 100
    return events_mod.trace_text(events, deviceProperties=[{"name": "GPU"}]).encode()


def _outputs(path: Path, op: str) -> list[str]:
    analysis = Analysis(load_path(path, NO_CACHE))
    summary = build_summary(analysis, extra_warnings=[f"note about {op}"])
    comparison = compare([analysis, analysis], [op, op + "2"])
    return [
        render_table(summary, width=200),
        render_table(summary, width=80),
        render_csv(summary, terminal=True),
        render_csv(summary, "kernels", terminal=True),
        render_chain_text(chain_for(analysis, op)),
        compare_table(comparison, 0, 160),
        compare_csv(comparison, 0, terminal=True),
        render_diagnosis(diagnose(analysis), 100),
        "\n".join(render_text(analysis, build_lanes(analysis), *_extent(analysis), 80)),
    ]


def _extent(analysis: Analysis) -> tuple[int, int]:
    from trnscope.core.analysis.timeline import build_lanes, extent

    return extent(build_lanes(analysis))


def _assert_inert(text: str) -> None:
    found = RAW.search(text)
    assert found is None, repr(text[max(0, found.start() - 40) : found.end() + 40])


def test_known_attacks_are_shown_not_run(tmp_path: Path) -> None:
    names = [f"op{i}{s}" for i, s in enumerate(ESC_SEQUENCES)]
    path = tmp_path / "hostile.json"
    path.write_bytes(_trace_with(names, thread_name="thr\x1b[31m"))
    for name in names:
        outputs = _outputs(path, name)
        for text in outputs:
            _assert_inert(text)
        # shown visibly: the escaped form is in the table, markup is literal
        assert safe_text(name)[:20] in outputs[0] + outputs[4]
    table = _outputs(path, names[-3])[0]
    assert "[/bold]x" in table and "[link=https://example.invalid]aten::mul[/link]" in table
    assert "\\x1b]0;pwned\\x07" in table and "\\u202e" in table


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=1, max_size=24).filter(lambda s: s.strip() and not s.startswith("ProfilerStep")))
def test_any_name_through_every_text_output(tmp_path: Path, name: str) -> None:
    path = tmp_path / "any.json"
    path.write_bytes(_trace_with([name]))
    for text in _outputs(path, name):
        _assert_inert(text)


def test_error_lines_are_sanitised(capsys, tmp_path: Path) -> None:
    from trnscope.cli.main import main

    folder = tmp_path / "x\x1b]0;t\x07["
    folder.mkdir()
    bad = folder / "bold].json"  # the path reads …x<ESC>]0;t<BEL>[/bold].json
    bad.write_text("not json")
    assert main(["summary", str(bad)]) == 2
    err = capsys.readouterr().err
    _assert_inert(err.rstrip("\n"))
    assert "\\x1b]0;t\\x07[/bold]" in err


def test_csv_into_a_file_stays_exact(tmp_path: Path) -> None:
    path = tmp_path / "exact.json"
    path.write_bytes(_trace_with(["a\u202eb"]))
    summary = build_summary(Analysis(load_path(path, NO_CACHE)))
    assert "a\u202eb" in render_csv(summary, terminal=False)
    assert "a\\u202eb" in render_csv(summary, terminal=True)


async def test_screens_show_hostile_names_escaped(tmp_path: Path) -> None:
    from tui_helpers import press, wait_loaded

    from trnscope.tui.app import TrnscopeApp

    names = [f"op{i}{s}" for i, s in enumerate(ESC_SEQUENCES)]
    (tmp_path / "hostile[").mkdir()
    path = tmp_path / "hostile[" / "bold].json"  # a path with [/bold] in it
    path.write_bytes(_trace_with(names, thread_name="thr\x1b[31m"))
    app = TrnscopeApp([str(path)], theme="[/bold]")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot)
        screens = [app.export_screenshot()]
        await press(pilot, "t")  # kernel table
        screens.append(app.export_screenshot())
        await press(pilot, "t", "enter", "enter")  # drill into the first op
        screens.append(app.export_screenshot())
        await press(pilot, "w")
        screens.append(app.export_screenshot())
    for svg in screens:
        _assert_inert(svg.replace("\n", ""))
    everything = "".join(screens)
    assert "\\x1b" in everything  # shown, escaped
    assert "[/bold]" in everything  # markup shown as typed


async def test_compare_screen_shows_hostile_labels_escaped(tmp_path: Path) -> None:
    from tui_helpers import press, wait_loaded

    from trnscope.tui.app import TrnscopeApp

    names = [f"op{i}{s}" for i, s in enumerate(ESC_SEQUENCES)]
    first = tmp_path / "a\x1b]0;x\x07.json"
    second = tmp_path / "b\u202e.json"
    first.write_bytes(_trace_with(names))
    second.write_bytes(_trace_with(names[::-1]))
    app = TrnscopeApp([str(first), str(second)])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot)
        screens = [app.export_screenshot()]
        await press(pilot, "v")
        screens.append(app.export_screenshot())
    for svg in screens:
        _assert_inert(svg.replace("\n", ""))
    assert "\\x1b]0;x\\x07" in "".join(screens) and "\\u202e" in "".join(screens)


def test_json_documents_are_inert_and_exact(tmp_path: Path) -> None:
    """JSON escapes C0 controls by itself but not CSI (U+009B), OSC (U+009D) or bidi
    overrides: every document the CLI prints escapes them too (\\u009b), so a document
    shown in a terminal acts on nothing, and still decodes to the exact names."""
    from trnscope.core.analysis.contracts import chain_document, compare_document, encode

    names = [f"op{i}{s}" for i, s in enumerate(ESC_SEQUENCES)] + ["csi\x9b31m", "osc\x9d0;x\x9c", "rlo\u202eok"]
    path = tmp_path / "hostile.json"
    path.write_bytes(_trace_with(names, thread_name="thr\x9b2J"))
    analysis = Analysis(load_path(path, NO_CACHE))
    documents = [
        encode(build_summary(analysis)),
        encode(chain_document(chain_for(analysis, names[-3]))),
        encode(compare_document(compare([analysis, analysis], ["a\x9b1m", "b"]))),
        encode(diagnose(analysis)),
    ]
    for document in documents:
        _assert_inert(document.replace("\n", " "))
    summary = json.loads(documents[0])
    assert {op["name"] for op in summary["ops"]} >= set(names)  # exact after decoding
    assert json.loads(documents[2])["variants"][0] == "a\x9b1m"
