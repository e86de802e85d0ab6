"""What a newcomer met at 80×24 (issue #21): an empty table says why it is empty instead
of describing a row it no longer shows; two different names never read the same; the
drill-down numbers instances as its # column does."""

from __future__ import annotations

from pathlib import Path

from tests.tui_helpers import press, wait_loaded
from trnscope.core.base.text import distinct_elisions, elide_middle_text, plural
from trnscope.tui.app import TrnscopeApp
from trnscope.tui.screen_drill import DrillScreen
from trnscope.tui.screen_ops import OpsScreen

ROOT = Path(__file__).resolve().parent.parent
CPU_SESSION = ROOT / "sample_traces" / "cpu_rmsnorm_session"


def _detail(app: TrnscopeApp) -> str:
    return str(app.screen.query_one("#detail").render())


async def test_an_empty_table_says_why() -> None:
    app = TrnscopeApp([str(CPU_SESSION)], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        assert isinstance(app.screen, OpsScreen)
        await press(pilot, "slash")
        await pilot.press(*"zz_no_such_op")
        await press(pilot, "enter")
        assert "no row matches /zz_no_such_op/" in _detail(app)
        await press(pilot, "escape")  # clears the filter
        assert "no row matches" not in _detail(app)
        await press(pilot, "t")  # a CPU trace has no device events
        assert "no device events" in _detail(app)


async def test_drill_title_numbers_instances_like_its_column() -> None:
    app = TrnscopeApp([str(CPU_SESSION)], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "enter")
        assert isinstance(app.screen, DrillScreen)
        title = str(app.screen.query_one("#drill-title").render())
        assert "instance #" in title and "in all" in title


def test_many_look_alike_stack_keys_are_told_apart_where_each_differs() -> None:
    """Grouped by stack, thousands of keys share their start and end and are joined by
    "←" (not ASCII, one cell): each is compared with its neighbours in sorted order, not
    with every other key (xDiT's 6,532 keys took 4 s a layout).  Keys alike at their
    end were each shown where they differ from another neighbour and read the same:
    those are shown where they differ from each other."""
    import random

    from trnscope.core.base.text import cell_width, tail_within

    rng = random.Random(3)
    frame = "/app/xDiT/xfuser/model_executor/models/runner_models/base_model.py(611): profile ← "
    keys = [frame * 2 + "".join(rng.choice("ab←c") for _ in range(6)) + " ← runner.py(81): main" for _ in range(3000)]
    width = 30
    better = distinct_elisions(keys, width)
    shown = {key: better.get(i, elide_middle_text(key, width)) for i, key in enumerate(keys)}
    assert len(set(shown.values())) == len(shown)  # two different keys never read the same
    for key, form in shown.items():
        assert cell_width(form) <= width
        at = 0
        for piece in form.split("…"):  # the head, the window, the tail: the key's own text, in order
            at = key.index(piece, at) + len(piece)
    assert tail_within("abc", 5) == "abc" and tail_within("a←c", 9) == "a←c" and tail_within("漢字", 3) == "字"


def test_look_alike_names_are_elided_where_they_differ() -> None:
    names = [
        "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(Params)",
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)",
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_32x3_tn_align8>(Params)",
        "aten::mm",
    ]
    for width in (20, 30, 44):
        plain = [elide_middle_text(n, width) for n in names]
        assert len(set(plain[:3])) == 1  # the middle elision alone would make them look the same
        better = distinct_elisions(names, width)
        shown = [better.get(i, plain[i]) for i in range(len(names))]
        assert len(set(shown)) == len(names), shown
        assert all(len(s) <= width for s in shown)
    assert plural(1, "call") == "1 call" and plural(2, "lane") == "2 lanes"
