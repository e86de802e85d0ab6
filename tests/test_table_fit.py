"""Tables and status lines at the width they are given: figures are never cut.  A
column that does not fit is left out (and the op table's info line says so); a name
gives up its middle first."""

from __future__ import annotations

import random
from pathlib import Path

from rich.cells import cell_len
from tui_helpers import open_comparison, press, settle, wait_loaded

from conftest import SAMPLES
from trnscope.tui.app import TrnscopeApp
from trnscope.tui.screen_ops import OpsScreen
from trnscope.tui.status import fitting_parts
from trnscope.tui.vtable import FLEX_FLOOR, Column, VirtualTable, fit_columns

TRN = SAMPLES / "trn_synthetic_rmsnorm_session"


def _old_layout(columns: list[Column], width: int) -> list[int]:
    """The layout before columns could be left out: each flex column at least its own
    width, else an equal share — wider than ``width`` when the flex widths did not fit."""
    fixed = sum(c.width + 1 for c in columns if not c.flex)
    flex = [c for c in columns if c.flex]
    spare = max(width - fixed, 0)
    return [max(c.width, spare // max(len(flex), 1) - 1) if c.flex else c.width for c in columns]


def test_columns_fit_their_width_keeping_figures_whole() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        columns = [Column("name", "Name", rng.choice((12, 16, 30)), "left", flex=True)]
        columns += [
            Column(f"c{i}", f"C{i}", rng.randint(4, 12), flex=rng.random() < 0.2) for i in range(rng.randint(0, 9))
        ]
        width = rng.randint(10, 200)
        kept, widths = fit_columns(columns, width)
        assert kept == list(range(len(kept))) and kept[0] == 0  # the first ones, the first always
        assert len(widths) == len(kept)
        total = sum(w + 1 for w in widths)
        first = columns[0]
        # past the width only when the first column alone, at its narrowest, is wider
        assert total <= width or (len(kept) == 1 and min(first.width, FLEX_FLOOR) + 1 > width), (width, widths)
        for k, w in zip(kept, widths):
            column = columns[k]
            # a fixed column's figures are formatted for its width: it keeps it
            assert w == column.width if not column.flex else w >= min(column.width, FLEX_FLOOR)
        if len(kept) < len(columns):  # left out only when the next one could not fit
            grown, _ = fit_columns(columns[: len(kept) + 1], width)
            assert len(grown) == len(kept)
        old = _old_layout(columns, width)
        if sum(w + 1 for w in old) <= width:  # what fitted before is laid out as before
            assert kept == list(range(len(columns))) and widths == old


def test_parts_that_do_not_fit_go_whole_and_say_so() -> None:
    parts = [
        ("ops by stack", 0),
        ("sort Self CUDA ▼", 2),
        ("filter /aten/", 1),
        ("all 6 steps", 3),
        ("1,957/1,957 rows", 0),
    ]
    assert (
        fitting_parts(parts, 200) == "ops by stack · sort Self CUDA ▼ · filter /aten/ · all 6 steps · 1,957/1,957 rows"
    )
    assert fitting_parts(parts, 75) == "ops by stack · sort Self CUDA ▼ · filter /aten/ · 1,957/1,957 rows · …"
    assert fitting_parts(parts, 60) == "ops by stack · filter /aten/ · 1,957/1,957 rows · …"
    assert fitting_parts(parts, 40) == "ops by stack · 1,957/1,957 rows · …"
    assert fitting_parts(parts, 10) == "ops by stack · 1,957/1,957 rows · …"  # rank 0 stays, never cut inside


async def _visible_lines(view: VirtualTable) -> list[str]:
    return ["".join(s.text for s in view.render_line(y)).rstrip() for y in range(min(view.size.height, 6))]


async def test_no_figure_is_cut_at_80_columns_and_narrower_tables_say_what_they_left_out() -> None:
    """At 80×24, grouped by input shape and by stack (two name columns beside five of
    figures), every line fits the table's visible width: the vertical scroll bar takes
    the last column, and the names give up width before a figure is cut.  At 60 columns
    the columns of figures that do not fit are left out and the info line says so,
    keeping its row count whole."""
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        ops = app.screen
        assert isinstance(ops, OpsScreen)
        view = ops.query_one(VirtualTable)
        for _grouping in ("op", "shape", "stack"):
            visible = view.scrollable_content_region.width
            lines = await _visible_lines(view)
            assert all(cell_len(line) <= visible for line in lines), (ops.state.group_by, visible, lines)
            assert lines[0].endswith("NEUR tot") and view.hidden_columns == []
            await press(pilot, "b")
        await pilot.resize_terminal(60, 24)
        await settle(pilot)
        assert view.hidden_columns  # the last columns of figures
        visible = view.scrollable_content_region.width
        assert all(cell_len(line) <= visible for line in await _visible_lines(view))
        info = str(ops.query_one("#viewinfo").render())
        table = ops._table
        assert "left out at this width (o)" in info and f"{len(table):,}/{len(table):,} rows" in info
        status = str(ops.query_one("#status").render())
        assert "events" in status and "…" not in status.split("events")[1]


def test_the_status_line_elides_a_long_name_not_its_figures(tmp_path: Path) -> None:
    from trnscope.core.formats import SourceRef
    from trnscope.core.opening.open import open_analysis
    from trnscope.tui.status import status_text

    source = SAMPLES / "cpu_train_tiny_session" / "train_tiny.pt.trace.json.gz"
    long_name = tmp_path / ("graph_capture_rank_0." + "1773709742341309550" * 3 + ".pt.trace.json.gz")
    long_name.write_bytes(source.read_bytes())
    analysis = open_analysis(SourceRef(path=str(long_name), label=long_name.name))
    for width in (78, 100):
        text = status_text(analysis, width=width)
        assert text.cell_len <= width
        plain = text.plain
        assert "…" in plain.split("events")[0]  # the name lost its middle
        assert f"{analysis.trace.event_count:,} events" in plain  # the figures stayed whole


async def test_a_pane_without_an_info_line_says_once_which_columns_it_left_out() -> None:
    """The drill-down at 44 columns: its instance list leaves out the columns that do
    not fit and one notification names them (none for the layout before the first
    width, none from the op table, whose info line says it)."""
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(44, 24)) as pilot:
        await wait_loaded(pilot)
        assert not [n for n in app._notifications if "left out" in n.message]
        await press(pilot, "enter")
        instances = app.screen.query_one("#instances", VirtualTable)
        assert instances.hidden_columns
        notes = [n.message for n in app._notifications if "left out" in n.message]
        assert notes == [
            f"too narrow for every column: left out {', '.join(instances.hidden_columns)} (a wider terminal shows them)"
        ]


def test_a_line_elides_its_names_and_keeps_its_figures() -> None:
    from trnscope.tui.status import fit_line

    long_name = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>" * 2
    pieces = [("@232.6ms  ", "bold", False), ("thread 3113936 (python3.8)", "", True), (": ", "", False)]
    pieces += [(long_name, "bold", True), ("  1.06ms", "dim", False), ("  · lane busy 35% of the window", "dim", False)]
    for width in (78, 100, 158):
        text = fit_line(pieces, width)
        assert text.cell_len <= width
        assert text.plain.startswith("@232.6ms  ") and text.plain.endswith("  1.06ms  · lane busy 35% of the window")
        assert "…" in text.plain  # the kernel's name lost its middle
    assert "thread 3113936 (python3.8)" in fit_line(pieces, 158).plain  # the shorter name stays whole
    assert fit_line(pieces[:3], 80).plain == "@232.6ms  thread 3113936 (python3.8): "  # all fits: nothing elided


async def test_the_timeline_title_keeps_its_time_range_under_a_long_name() -> None:
    from trnscope.tui.screen_timeline import TimelineScreen

    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        ops = app.screen
        assert isinstance(ops, OpsScreen)
        app.push_screen(TimelineScreen(ops.analysis, title="void at::native::elementwise_kernel<128, 4>" * 4))
        await settle(pilot)
        for _ in range(50):
            title = str(app.screen.query_one("#tl-title").render())
            if "→" in title:
                break
            await pilot.pause(0.05)
        assert "…" in title and title.endswith("lanes") and " → " in title
        assert cell_len(title) <= 78


async def test_a_hops_figures_show_before_its_args_and_long_args_say_where_they_stop() -> None:
    """At 80×24 the drill-down's hop panel has six lines: the hop and the chain's
    figures (dispatch … host self) come first, the op's args after, cut with "…"
    where the panel ends rather than clipped unannounced."""
    from trnscope.tui.screen_drill import _DETAIL_LINES, DrillScreen

    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "enter")
        drill = app.screen
        assert isinstance(drill, DrillScreen) and drill.chain is not None
        index = next(i for i, hop in enumerate(drill.shown) if hop >= 0 and drill.chain.hops[hop].kind == "op")
        hop = drill.chain.hops[drill.shown[index]]
        panel = drill.query_one("#hop-detail")

        def shown_lines() -> list[str]:
            text = panel._shown  # the Text the panel was last given
            return [line.plain for line in text.wrap(app.console, panel.size.width)]

        hop.details = {"Input Dims": [[8, 256, 4096]] * 3}  # short: whole
        drill._show_hop(index)
        lines = shown_lines()
        assert any("host self" in line for line in lines) and lines[-1].endswith("4096]]")
        hop.details = {"Input Dims": [[8, 256, 4096]] * 60, "External id": 77}  # long: cut, and said
        drill._show_hop(index)
        lines = shown_lines()
        assert len(lines) <= _DETAIL_LINES and any("host self" in line for line in lines)
        assert lines[-1].endswith(" …") and "Input Dims" in " ".join(lines)
        # where whole args fit, the cut falls between two of them, never inside one
        # ("FLOP/s: 52.2G (device  …" cut a figure's unit)
        cuts_between = 0
        for extra in range(0, 300, 3):  # the panel's end sweeps through the figures
            hop.details = {"Input Dims": [[8, 256, 1024]], "Module": "m" * extra, "FLOPs": 2097152}
            hop.details["FLOP/s"] = "52.2G (device time)"
            drill._show_hop(index)
            shown = " ".join(shown_lines())
            assert "FLOP/s: 52.2G (device time)" in shown or "FLOP/s" not in shown, shown
            assert "FLOPs: 2097152" in shown or "FLOPs" not in shown, shown
            cuts_between += shown.endswith("…") and "m …" not in shown
        assert cuts_between > 10


async def test_the_hop_line_names_its_thread_by_number_where_the_whole_name_does_not_fit(
    tmp_path: Path,
) -> None:
    """TraceLens vLLM at 80 columns: the drill-down's hop line ended "[thread 85…Cor)]"."""
    from trnscope.testing.events import op, write_trace
    from trnscope.tui.screen_drill import DrillScreen

    meta = {"ph": "M", "name": "thread_name", "pid": 1, "tid": 851, "args": {"name": "thread 851 (VLLM::EngineCor)"}}
    path = write_trace(tmp_path / "t.json", [meta, op("capture_32_FULL_" + "x" * 12, 0, 58_406.933, tid=851)])
    app = TrnscopeApp([str(path)])
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "enter")
        drill = app.screen
        assert isinstance(drill, DrillScreen)
        first = drill.query_one("#hop-detail")._shown.plain.split("\n")[0]
        assert first.endswith("for 58,406.933us  [thread 851]") and cell_len(first) <= 78


def test_a_name_that_does_not_fit_gives_way_to_a_shorter_form_that_tells_it_apart() -> None:
    """The drill-down's hop line read "[thread 85…Cor)]" for TraceLens vLLM's "thread 851
    (VLLM::EngineCor)" at 80 columns: the short form goes in whole where it fits."""
    from trnscope.tui.status import fit_line, with_shorter_name

    pieces = [("framework · op · ", "dim", False), ("capture_32_FULL", "bold", True)]
    pieces += [("  at 0.000us for 58,406.933us  [", "", False), ("thread 851 (VLLM::EngineCor)", "", True)]
    pieces += [("]", "", False)]
    assert with_shorter_name(pieces, 200, 3, ["thread 851"]) == pieces  # it fits: as it is
    line = fit_line(with_shorter_name(pieces, 78, 3, ["thread 851"]), 78).plain
    assert line.endswith("[thread 851]") and len(line) <= 78 and "capture_32_FULL" in line
    # no shorter form fits whole: the last one, elided
    line = fit_line(with_shorter_name(pieces, 50, 3, ["thread 851 (VLLM)", "thread 851"]), 50).plain
    assert len(line) == 50 and "VLLM" not in line


def test_fit_line_keeps_whole_pieces_whole_within_the_width() -> None:
    from trnscope.tui.status import fit_line

    rng = random.Random(11)
    words = ["aten::addmm", "void at::native::elementwise_kernel<128, 4>", "thread 3113936 (python3.8)", "x" * 300, ""]
    for _ in range(2000):
        pieces = [
            (rng.choice(words) if elidable else f" {rng.randint(0, 10**6):,}us ", "", elidable)
            for elidable in (rng.random() < 0.5 for _ in range(rng.randint(1, 6)))
        ]
        width = rng.randint(0, 160)
        line = fit_line(pieces, width).plain
        fixed = sum(len(text) for text, _, elidable in pieces if not elidable)
        assert len(line) <= max(width, fixed), (width, pieces, line)
        position = 0
        for text, _, elidable in pieces:  # every whole piece, in order
            if not elidable:
                found = line.find(text, position)
                assert found >= 0, (text, line)
                position = found + len(text)
        if sum(len(text) for text, _, _ in pieces) <= width:  # what fits is left as it is
            assert line == "".join(text for text, _, _ in pieces)


async def test_the_comparison_detail_gives_every_variant_one_whole_line_of_figures() -> None:
    """At 80×24 the detail under a comparison has four lines: the row's name and one line
    per variant, its letter first, its figures whole; the names give up their middle, a
    variant's name all of it."""
    app = TrnscopeApp([str(TRN)])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_comparison(pilot)
        panel = screen.query_one("#compare-detail")
        for _ in range(3):
            lines = panel._shown.plain.split("\n")
            assert len(lines) == 1 + len(screen.labels) and all(cell_len(line) <= panel.size.width for line in lines)
            for letter, label, line in zip("ABC", screen.labels, lines[1:]):
                assert " calls · CPU " in line or line.endswith("absent")
                # its label whole, or none where it does not fit (the title names the
                # variants; elided, two HTA diff traces' labels both read "hta_d…00")
                assert line.split(": ")[0] in (letter, f"{letter} {label}"), (line, label)
            await press(pilot, "down")


async def test_the_comparison_diagnosis_shows_every_figure_whole_at_80_columns() -> None:
    """Three variants at 80×24: "×0.044 [0.018–1.02]" read "×0.044 [0.018–1…" in a
    16-cell column.  Each column is as wide as its widest cell."""
    from tui_helpers import ChangingFrames

    app = TrnscopeApp([str(SAMPLES / "cpu_rmsnorm_session")])
    frames = ChangingFrames(app)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_comparison(pilot)
        while screen.view != "diagnosis":
            await press(pilot, "v")
        await settle(pilot)
        cells = frames.terminal.cells
        shown = "\n".join("".join(cells.get((x, y), (" ",))[0] for x in range(80)) for y in range(24))
        model = screen.query_one(VirtualTable).model
        figures = [cell for i in range(model.size) for cell in model.cells(i)]
        assert any(str(cell).startswith("×") for cell in figures)
        assert all(str(cell) in shown for cell in figures), shown


async def test_a_comparison_detail_leaves_out_variant_names_that_do_not_fit(tmp_path: Path) -> None:
    """HTA's diff traces, ``hta_diff_control_a100`` and ``hta_diff_test_v100``: at 80
    columns both detail lines began "hta_d…00:", alike and taking the cells the top
    kernel's name needed.  A name that does not fit goes (the title names the variants)."""
    from trnscope.testing.events import kernel, launch, op, write_trace

    kernel_name = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"
    paths = []
    for stem in ("hta_diff_control_a100", "hta_diff_test_v100"):
        events = [op("aten::fill_", 0, 50, ext=1), launch(10, 5, correlation=1, ext=1)]
        events.append(kernel(kernel_name, 100, 40, correlation=1, ext=1))
        paths.append(str(write_trace(tmp_path / f"{stem}.json", events)))
    app = TrnscopeApp(paths)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_comparison(pilot)
        lines = screen.query_one("#compare-detail")._shown.plain.split("\n")
        assert [line[:3] for line in lines[1:]] == ["A: ", "B: "] and "hta_d" not in "".join(lines[1:])
        assert all(line.endswith("calls · CPU 50.0us · device 40.0us · dispatch 10.0us") for line in lines[1:])


def test_text_tables_elide_long_names_where_they_differ_not_their_ends() -> None:
    """``diagnose``'s device and step columns (20 wide): two devices whose names share
    their first 20 characters stay told apart, and the cut is marked."""
    from trnscope.cli.diagnose import render_diagnosis
    from trnscope.core.analysis.contracts import DeviceOut, DiagnoseOut, StepOut

    devices = [DeviceOut(f"python3.8 (GPU 3) / stream {n}", 1000.0, 900.0, 100.0, 10.0) for n in (21, 22)]
    steps = [StepOut(f"ProfilerStep#100000000{n}", 10.0, 5.0, 9.0, "device") for n in (1, 2)]
    text = render_diagnosis(DiagnoseOut("t", devices, steps, []), 100)
    rows = [line for line in text.splitlines() if line.startswith(("python3.8", "Profiler"))]
    assert len(rows) == 4 and len({row[:20] for row in rows}) == 4 and all("…" in row[:20] for row in rows)


def test_help_and_warning_lines_wrap_under_their_own_text() -> None:
    """The help's and the warnings' lines wrap under their text, not back at the box's
    edge (at 80 columns a warning takes two or three lines); no word is lost."""
    import io

    from rich.console import Console
    from rich.text import Text

    from trnscope.tui.screen_text import hanging_lines

    markup = (
        "[b]Everywhere[/b]\n"
        "  R       ranks: which rank held the others back, in which step, at which collective\n"
        "\n"
        "  ⚠ 614 of 15,632 device events inside the capture window carry no link to the host\n"
        "  \\[x]  a key shown in brackets, its text wrapped under the text"
    )
    console = Console(width=40, record=True, file=io.StringIO(), color_system=None)
    console.print(hanging_lines(markup))
    shown = console.export_text()
    lines = shown.splitlines()
    assert lines[0] == "Everywhere"
    assert lines[1].startswith("  R       ranks: ") and lines[2].startswith(" " * 10) and lines[2][10] != " "
    warning = next(k for k, line in enumerate(lines) if "⚠" in line)
    assert lines[warning].startswith("  ⚠ 614 of") and lines[warning + 1].startswith("    ")
    assert not lines[warning + 1].startswith("     ")
    bracket = next(k for k, line in enumerate(lines) if line.startswith("  [x]"))
    assert lines[bracket + 1].startswith(" " * 7) and lines[bracket + 1].strip()
    assert " ".join(shown.split()) == " ".join(Text.from_markup(markup).plain.split())


async def test_the_ops_that_launched_kernels_never_read_alike(tmp_path: Path) -> None:
    """The device-event table's "Launched by" at 80 columns: two ops that share their
    head (a forward and a backward) were both cut to "aten::_flash_…"; the column is
    elided as names are, where they differ."""
    from trnscope.testing.events import kernel, launch, op, write_trace

    events = []
    for k, name in enumerate(("aten::_flash_attention_forward", "aten::_flash_attention_backward")):
        t = 1000.0 * k
        events += [
            op(name, t, 100, ext=k + 1),
            launch(t + 10, 5, correlation=100 + k, ext=k + 1),
            kernel(f"flash_kernel_{k}", t + 50, 300, correlation=100 + k),
        ]
    trace = write_trace(tmp_path / "flash.json", events)
    app = TrnscopeApp([str(trace)], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "t")
        view = app.screen.query_one(VirtualTable)
        lines = await _visible_lines(view)
        header, rows = lines[0], lines[1:3]
        at = header.index("Launched by")
        launched = [row[at:].strip() for row in rows]
        assert all(cell_len(r) <= 14 for r in launched), launched
        assert len(set(launched)) == 2 and all(r.startswith("aten") for r in launched), launched


async def test_where_each_hop_ran_never_reads_alike() -> None:
    """The drill-down's "Thread / stream" column (from 120 columns): two kernels on two
    streams of one GPU were both cut to "python3 (GPU 2) / strea…"."""
    from textual.app import App, ComposeResult

    from trnscope.core.analysis.chain_model import Chain, Gaps, Hop
    from trnscope.tui.models import chain_model

    hops = [
        Hop("framework", "aten::mm", 0.0, 50.0, "thread 4163453 (python3)", kind="op"),
        Hop("device", "gemm_a", 60.0, 10.0, "python3 (GPU 2) / stream 7", kind="kernel", depth=1),
        Hop("device", "gemm_b", 61.0, 10.0, "python3 (GPU 2) / stream 13", kind="kernel", depth=1),
    ]
    chain = Chain("aten::mm", 0, 1, 0, hops, Gaps(0.0, 0.0, 20.0))

    class ChainApp(App[None]):
        def compose(self) -> ComposeResult:
            yield VirtualTable(chain_model(chain), id="chain")

    app = ChainApp()
    async with app.run_test(size=(130, 12)):
        view = app.query_one(VirtualTable)
        lines = await _visible_lines(view)
        at = lines[0].index("Thread / stream")
        where = [line[at:].strip() for line in lines[2:4]]
        assert len(set(where)) == 2 and all(cell_len(w) <= 24 for w in where), where


def test_wide_characters_are_elided_by_the_cells_they_take(tmp_path: Path, capsys, monkeypatch) -> None:
    """CJK and emoji take two cells: a name of them was cut at its end, unmarked, and
    an op and its kernel ("…" and "…_k") read the same, in the text table and the
    explorer.  Elided by cells, the middle goes and the ends stay."""
    from trnscope.cli.main import main
    from trnscope.core.base.text import cell_width, distinct_elisions, elide_middle_text, pad_cells
    from trnscope.testing.events import kernel, launch, op, write_trace

    name = "漢字テスト🙂" * 20
    for width in (9, 20, 29):
        shown = elide_middle_text(name, width)
        assert width - 1 <= cell_width(shown) <= width and "…" in shown
        assert shown.startswith("漢字") and shown.endswith("🙂")
    assert elide_middle_text(name + "_k", 29).endswith("_k")
    assert cell_width(pad_cells("漢字", 6)) == 6 and elide_middle_text("aten::mm", 20) == "aten::mm"
    alike = [name + "a" + "漢" * 10, name + "b" + "漢" * 10]
    assert len(set(distinct_elisions(alike, 29).values())) == 2

    events = [
        op(name, 0, 100, ext=1),
        launch(10, 5, correlation=7, ext=1),
        kernel(name + "_k", 50, 200, correlation=7),
    ]
    trace = write_trace(tmp_path / "wide.json", events)
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["summary", str(trace), "--no-cache"]) == 0
    table = capsys.readouterr().out.split("\n\n")[0].splitlines()
    rows = [line for line in table if line.startswith("漢")]
    assert len(rows) == 2 and rows[0].split("  ")[0] != rows[1].split("  ")[0], rows
    assert all("…" in row for row in rows)
    assert len({cell_width(row.split("…")[0]) for row in rows}) == 1  # the columns after stay aligned


def test_a_name_with_control_characters_loses_its_middle_not_its_end(tmp_path: Path, capsys, monkeypatch) -> None:
    """Elided first and sanitised after, "\\x1b" grew to four cells and the table cut
    the name's end, unmarked; sanitised first, the escapes count as what they show."""
    from trnscope.cli.main import main
    from trnscope.testing.events import op, write_trace

    trace = write_trace(tmp_path / "ctl.json", [op("\x1b[31m" * 8 + "aten::mm_tail_end", 0, 10), op("plain", 20, 5)])
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["summary", str(trace), "--no-cache"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("\\x1b"))
    assert "…" in row and row.split()[0].endswith("_tail_end") and "\x1b" not in row


async def test_names_with_control_characters_never_read_alike_in_the_explorer(tmp_path: Path) -> None:
    """Told apart on the raw text and escaped after ("\\x1b" grows to four cells),
    two names were elided again, in their middle, and read the same."""
    from trnscope.testing.events import op, write_trace

    head = "\x1b[0m" * 6
    events = [
        op(head + "aten::first_variant_of_the_op_tail", 0, 10),
        op(head + "aten::second_variant_of_the_op_tail", 20, 5),
    ]
    app = TrnscopeApp([str(write_trace(tmp_path / "ctl.json", events))], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        lines = await _visible_lines(app.screen.query_one(VirtualTable))
        names = [line.split("  ")[0] for line in lines[1:3]]
        assert len(set(names)) == 2 and all(n.startswith("\\x1b") and "…" in n for n in names), names


async def test_the_drill_down_title_fits_its_line_and_keeps_its_figures(tmp_path: Path) -> None:
    """A long op name at 80 columns: the title's end ("by duration") was cut off the
    line; the name gives way in its middle, the instance and the order stay whole."""
    from trnscope.testing.events import op, write_trace

    name = "aten::cudnn_convolution_backward_weight_with_a_very_long_name_indeed"
    trace = write_trace(tmp_path / "long.json", [op(name, 10.0 * k, 5.0 + k) for k in range(3)])
    app = TrnscopeApp([str(trace)], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "enter")
        title = app.screen.query_one("#drill-title")
        text = title.render()
        plain = str(text)
        assert cell_len(plain) <= title.size.width, plain
        assert plain.endswith("instance #2 · 3 in all · by duration") and "…" in plain, plain
        assert plain.startswith("aten::cudnn_conv") and plain.split("  instance")[0].endswith("indeed")
        await pilot.resize_terminal(140, 30)  # wider: the title is fitted again, the name whole
        await settle(pilot)
        assert str(title.render()).startswith(name + "  instance #2 · 3 in all · by duration")


def test_a_long_name_takes_the_room_of_minor_figures_in_the_text_table() -> None:
    """``layout``: at 80 columns, Python rows of a CPU trace ("<built-in method acquire
    of _thread.lock object at 0x…>") get at least ``NAME_COMFORT`` cells by leaving out
    minor figures (priority under ``MINOR``: averages, shares, FLOPs), lowest first, and
    say which; the main figures stay even if the name stays narrow, and short names
    leave every column that fits."""
    from trnscope.cli.text_table import MINOR, NAME_COMFORT, NAME_MIN, NumberColumn, layout

    def numbers() -> list[NumberColumn]:
        return [
            NumberColumn("Calls", 90, ["13"]),
            NumberColumn("Self CPU %", 40, ["18.65%"]),
            NumberColumn("Self CPU", 80, ["17.581ms"]),
            NumberColumn("CPU total", 70, ["17.581ms"]),
            NumberColumn("CPU avg", 20, ["1.352ms"]),
            NumberColumn("FLOPs", 16, ["1.82M"]),
        ]

    long_names = [f"<built-in method acquire of _thread.lock object at 0x7f0ddf4ee{i:03x}>" for i in range(3)]
    texts, kept, hidden = layout(80, [("Name", long_names, NAME_MIN, 100)], numbers())
    assert texts[0][2] >= NAME_COMFORT
    assert hidden == ["FLOPs", "CPU avg"]  # lowest priority first, and no more than needed
    assert [c.header for c in kept] == ["Calls", "Self CPU %", "Self CPU", "CPU total"]
    assert sum(c.width + 2 for c in kept) + texts[0][2] + 2 <= 80
    # short names: every column that fits stays
    texts, kept, hidden = layout(80, [("Name", ["aten::mm", "aten::addmm"], NAME_MIN, 100)], numbers())
    assert hidden == [] and len(kept) == 6
    # a tag column first (compare's variant letters): the name is the column after it
    texts, kept, hidden = layout(80, [("", ["A", "B"], 1, 100), ("Name", long_names, 12, 95)], numbers())
    assert texts[1][2] >= NAME_COMFORT and hidden == ["FLOPs", "CPU avg"]
    # only main figures left: they stay, and the name takes what is left
    main = [c for c in numbers() if c.priority >= MINOR]
    texts, kept, hidden = layout(60, [("Name", long_names, NAME_MIN, 100)], main)
    assert hidden == [] and len(kept) == 3 and NAME_MIN <= texts[0][2] < NAME_COMFORT


def test_a_name_loses_its_middle_around_its_numbers_not_through_them() -> None:
    """``elide_middle_text`` moves its cuts out of a number (up to five characters):
    "f32[8,256,102…" read as a shape of 102, "thread 424…" as thread 424.  The head
    takes the whole number where the tail keeps three cells, the tail where the head
    keeps one; the result still fits, and keeps the name's start and end."""
    import random

    from trnscope.core.base.text import elide_middle_text

    assert elide_middle_text("thread 4242 (python)", 16) == "thread 4242…hon)"
    assert elide_middle_text("ProfilerStep#1234567", 12) == "Prof…1234567"
    assert elide_middle_text("thread -1029147072", 16) == "thre…-1029147072"  # the sign is the number's
    # look-alikes shown where they differ: the window starts where the id starts
    from trnscope.core.base.text import distinct_elisions

    labels = [f"thread {tid} (python3.8){rt}" for tid in (3113936, 3126441) for rt in ("", " rt")]
    forms = distinct_elisions(labels, 16)
    assert len(set(forms.values())) == 4 and all(
        str(tid) in forms[i] for i, tid in enumerate((3113936,) * 2 + (3126441,) * 2)
    )
    assert elide_middle_text("%multiply.7 = f32[8,256,1024] multiply(%p0, %broadcast.2)", 28) == (
        "%multiply.7 = f32[…adcast.2)"
    )
    rng = random.Random(5)
    split = 0
    for _ in range(20_000):
        text = "".join(rng.choice("ab12_ ") for _ in range(rng.randint(1, 40)))
        width = rng.randint(8, 45)
        shown = elide_middle_text(text, width)
        if len(text) <= width:
            assert shown == text
            continue
        head, tail = shown.split("…")
        assert len(shown) <= width and head and tail and text.startswith(head) and text.endswith(tail)
        cut_head = head[-1].isdigit() and text[len(head)].isdigit()
        cut_tail = tail[0].isdigit() and text[len(text) - len(tail) - 1].isdigit()
        if cut_head or cut_tail:  # only a number too long to move around, or one at the very start
            run = max(len(m) for m in __import__("re").findall(r"\d+", text))
            assert run > 5 or text[0].isdigit(), (text, width, shown)
            split += 1
    assert split < 500


def test_wrapped_lines_are_measured_in_cells() -> None:
    """``wrap_words`` (diagnose's findings, ranks' warnings, the chain's arguments): a
    two-cell character counts two, so a line of CJK words fits the terminal too."""
    from trnscope.core.base.text import cell_width, wrap_words

    lines = wrap_words(" ".join(["中文参数值"] * 30), 40, "  ")
    assert len(lines) > 1 and all(cell_width(line) <= 42 for line in lines)
    assert " ".join(line.strip() for line in lines) == " ".join(["中文参数值"] * 30)


def test_diagnose_text_fits_the_terminal_and_says_what_it_left_out(monkeypatch, capsys) -> None:
    """``trnscope diagnose`` at 40, 80 and 120 columns: no line runs past the edge (a
    finding's op gives up its middle, or goes to its own line; the tables leave out
    their least important figures and say which); every finding's evidence and the
    figures kept are whole."""
    import re

    from conftest import CORPUS
    from trnscope.cli.main import main
    from trnscope.core.analysis.analysis import Analysis
    from trnscope.core.analysis.diagnose import diagnose
    from trnscope.core.base.units import fmt_time_ns
    from trnscope.core.formats import load_path

    paths = [SAMPLES / "cpu_train_tiny_session"]
    paths += [
        p for p in (CORPUS / "kineto_resnet50_2021.json.gz", CORPUS / "hta_diff_control_a100.json.gz") if p.is_file()
    ]
    for path in paths:
        doc = diagnose(Analysis(load_path(path)))
        for width in (40, 80, 120):
            monkeypatch.setenv("COLUMNS", str(width))
            assert main(["diagnose", str(path)]) == 0
            out = capsys.readouterr().out
            lines = out.splitlines()
            assert all(cell_len(line) <= width for line in lines), [line for line in lines if cell_len(line) > width]
            for finding in doc.findings:
                assert f"{finding.kind}: {fmt_time_ns(finding.evidence_us * 1000)}" in out
            header = next(line for line in lines if line.startswith("step"))
            shown = re.split(r"\s{2,}", header.strip())
            assert shown[0] == "step" and ("wall" in shown) and shown[-1] == "bound"
            left_out = {"host busy", "device busy"} - set(shown)
            assert not left_out or "(hidden at" in out
            if any(s.data_loading_us > 0 for s in doc.steps):  # the host fetching batches
                assert "loading" in shown or "loading" in out.split("(hidden at")[-1]


def test_chain_text_and_plain_tables_fit_any_width_whatever_the_names() -> None:
    """Random chains (names, places and arguments with control characters, bidi
    overrides, two-cell characters, long words; depths up to 30) and random plain
    tables: at every width from 40 to 200 no line runs past it."""
    from trnscope.cli.text_table import NumberColumn, plain_table
    from trnscope.core.analysis.chain_model import Chain, Gaps, Hop
    from trnscope.core.analysis.chain_text import render_chain_text

    rng = random.Random(11)
    alphabet = "ab12 _.:/[]()#,-中文\x1b\u202e\n\téß"

    def word(most: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, most)))

    for _ in range(300):
        width = rng.randint(40, 200)
        hops, depth = [], 0
        for _ in range(rng.randint(1, 30)):
            depth = max(0, depth + rng.choice((-1, 0, 1, 1)))
            details = {word(10): word(120) for _ in range(rng.randint(0, 4))}
            kind = rng.choice(["python", "parent", "op", "child", "runtime", "kernel", "engine"])
            layer = rng.choice(["framework", "runtime", "device"])
            hops.append(
                Hop(layer, word(150), rng.uniform(-1e7, 1e7), rng.uniform(0, 1e7), word(40), details, kind, depth)
            )
        gaps = Gaps(*(rng.uniform(0, 1e6) for _ in range(7)))
        chain = Chain(word(300), rng.randint(0, 10**6), rng.randint(1, 10**7), 0, hops, gaps, [word(200)])
        lines = render_chain_text(chain, width).splitlines()
        assert all(cell_len(line) <= width for line in lines), (width, max(lines, key=cell_len))
        rows = rng.randint(1, 8)
        figures = [
            NumberColumn(
                "h" * rng.randint(1, 8) + str(k),
                rng.randint(1, 100),
                [f"{rng.uniform(0, 1e6):.3f}ms" for _ in range(rows)],
            )
            for k in range(rng.randint(1, 8))
        ]
        hidden: list[str] = []
        table = plain_table(
            width, ("name", [word(60) for _ in range(rows)], 10, 20), figures, hidden, before=rng.randint(0, 1)
        )
        assert all(cell_len(line) <= width for line in table), (width, max(table, key=cell_len))


def test_look_alike_names_stay_apart_while_their_numbers_stay_whole() -> None:
    """Random sets of names that differ in a character or three (ids, counters): told
    apart at every width from 12 to 40 after the cuts move out of numbers, and within
    the width."""
    from trnscope.core.base.text import distinct_elisions, elide_middle_text

    rng = random.Random(3)
    for _ in range(1500):
        base = list("".join(rng.choice("ab1234_-. ") for _ in range(rng.randint(10, 60))))
        names = set()
        for _ in range(rng.randint(2, 8)):
            name = list(base)
            for _ in range(rng.randint(1, 3)):
                name[rng.randrange(len(name))] = rng.choice("0123456789xyz")
            names.add("".join(name) + rng.choice(["", " rt", "7"]))
        ordered = sorted(names)
        width = rng.randint(12, 40)
        forms = distinct_elisions(ordered, width)
        shown = [forms.get(i) or elide_middle_text(name, width) for i, name in enumerate(ordered)]
        assert len(set(shown)) == len(shown), (width, ordered, shown)
        assert all(cell_len(form) <= width for form in shown)


def test_names_alike_in_a_narrow_column_are_told_apart_by_moving_the_cut() -> None:
    """A compare table at 80 columns leaves its names 10 cells: ``aten::rms_norm`` and
    ``aten::_fused_rms_norm`` both read ``aten::…orm`` (two different rows looking the
    same).  Under 12 cells there is no room for a window where they differ; the cut
    moves instead, to where every name of the group reads differently, never inside a
    number, and never onto another name's form."""
    from trnscope.core.base.text import distinct_elisions, elide_middle_text

    names = ["aten::rms_norm", "aten::_fused_rms_norm", "aten::add"]
    assert elide_middle_text(names[0], 10) == elide_middle_text(names[1], 10) == "aten::…orm"
    forms = distinct_elisions(names, 10)
    assert forms == {0: "aten::r…rm", 1: "aten::_…rm"}
    rng = random.Random(5)
    told = 0
    for _ in range(1500):
        base = "".join(rng.choice("abc_:") for _ in range(rng.randint(12, 30)))
        names = sorted(
            {"".join(rng.choice("xy") if rng.random() < 0.15 else ch for ch in base) for _ in range(rng.randint(2, 5))}
        )
        width = rng.randint(8, 11)
        forms = distinct_elisions(names, width)
        shown = [forms.get(i) or elide_middle_text(name, width) for i, name in enumerate(names)]
        assert all(cell_len(form) <= width for form in shown)
        for i, form in forms.items():  # a moved cut: the name's own head and tail
            head, _, tail = form.partition("…")
            assert names[i].startswith(head) and names[i].endswith(tail) and len(form) == width
        told += len(forms)
        # each group the moved cut answered reads apart, from the others too
        moved = [shown[i] for i in forms]
        assert len(set(moved)) == len(moved) and not set(moved) & {s for k, s in enumerate(shown) if k not in forms}
    assert told > 500  # (the cut moved often enough to be tested)


def test_a_column_marked_drop_first_goes_before_the_names_narrow() -> None:
    """A comparison's ratio columns follow from the figures beside them: at 80 columns
    they go before the names give up their own width; the rest of the layout is as
    before."""
    name = Column("name", "Name", 24, "left", flex=True)
    figures = [Column(f"v{i}", f"V{i}", 9) for i in range(3)]
    deltas = [Column(f"d{i}", f"D{i}", 9) for i in (1, 2)]
    ratios = [Column(f"r{i}", f"R{i}", 8, drop_first=True) for i in (1, 2)]
    columns = [name, *figures, deltas[0], ratios[0], deltas[1], ratios[1]]

    def titles(kept: list[int]) -> list[str]:
        return [columns[k].title for k in kept]

    kept, widths = fit_columns(columns, 79)
    assert titles(kept) == ["Name", "V0", "V1", "V2", "D1", "D2"] and widths[0] == 28
    kept, widths = fit_columns(columns, 88)  # one ratio fits beside 24 cells of names: the last goes
    assert titles(kept) == ["Name", "V0", "V1", "V2", "D1", "R1", "D2"] and widths[0] == 28
    kept, widths = fit_columns(columns, 99)
    assert titles(kept) == [c.title for c in columns] and widths[0] == 30
    # no ratio left to give: the names share down to the floor before a figure goes
    kept, widths = fit_columns(columns, 50)
    assert titles(kept) == ["Name", "V0", "V1", "V2"] and widths[0] >= FLEX_FLOOR
    assert sum(w + 1 for w in widths) <= 50


async def test_three_variants_at_80_columns_keep_readable_distinct_names() -> None:
    """Three variants at 80×24: with every column the names had 10 cells, and two
    different rows read "## Cal…on)".  The ratio columns now go first (the info line
    says so, as ``trnscope compare`` leaves its × columns out first), the names keep 28
    cells and no two read alike; at 120 columns every column is back and nothing is
    said to be left out."""
    app = TrnscopeApp([str(SAMPLES / "cuda_attention_large_session")])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_comparison(pilot)
        while screen.view != "ops":
            await press(pilot, "v")
        view = screen.query_one(VirtualTable)
        assert view.hidden_columns == ["B÷A", "C÷A"]
        info = str(screen.query_one("#compare-info").render())
        assert "B÷A, C÷A left out at this width" in info
        lines = await _visible_lines(view)
        assert lines[0].split()[-2:] == ["ΔB", "ΔC"]
        shown = ["".join(s.text for s in view.render_line(y))[:28].rstrip() for y in range(1, view.size.height)]
        shown = [line for line in shown if line]
        assert len(set(shown)) == len(shown), shown
        assert any(line.startswith("aten::_efficient_") for line in shown), shown
        # the row under the cursor is named in the detail as the table names it
        detail = screen.query_one("#compare-detail")._shown.plain.split("\n")[0]
        assert detail == "attention (device annotation)", detail
        await pilot.resize_terminal(120, 30)
        await settle(pilot)
        assert view.hidden_columns == []
        assert "left out" not in str(screen.query_one("#compare-info").render())
