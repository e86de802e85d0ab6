"""The explorer against hostile labels and impatient keys (Pilot, headless)."""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.widgets import OptionList
from tui_helpers import press, settle, wait_loaded

from conftest import SAMPLES
from trnscope.core.analysis.optable import OpTable
from trnscope.tui.app import TrnscopeApp
from trnscope.tui.screen_ops import OpsScreen, PickScreen
from trnscope.tui.vtable import VirtualTable

CPU_SESSION = SAMPLES / "cpu_rmsnorm_session"


def _option_texts(app: TrnscopeApp) -> list[str]:
    options = app.screen.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_markup_in_file_names_shows_as_typed_in_the_variant_picker(tmp_path: Path) -> None:
    folder = tmp_path / "variants"
    (folder / "x[").mkdir(parents=True)
    source = CPU_SESSION / "eager.pt.trace.json.gz"
    for name in ("x[/bold]y.json.gz", "[red]second[.json.gz"):  # the first is labelled by its path
        shutil.copy(source, folder / name)
    app = TrnscopeApp([str(folder)], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        assert isinstance(app.screen, OpsScreen)
        await press(pilot, "v")
        assert isinstance(app.screen, PickScreen)
        texts = " ".join(_option_texts(app))
        assert "x[/bold]y" in texts and "[red]second[" in texts
        await press(pilot, "escape")
        assert isinstance(app.screen, OpsScreen)


async def test_the_column_chooser_marks_the_chosen_columns() -> None:
    app = TrnscopeApp([str(CPU_SESSION)], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        await press(pilot, "o")
        assert isinstance(app.screen, PickScreen)
        texts = _option_texts(app)
        assert any(t.startswith("[x] ") for t in texts) and any(t.startswith("[ ] ") for t in texts)
        first_shown = next(i for i, t in enumerate(texts) if t.startswith("[x] "))
        app.screen.query_one(OptionList).highlighted = first_shown
        await press(pilot, "enter")
        assert isinstance(app.screen, PickScreen)  # stays open until esc
        assert _option_texts(app)[first_shown].startswith("[ ] ")


async def test_keys_pressed_while_the_table_rebuilds_act_on_the_new_table() -> None:
    """t, then t and o at once: the chooser waits for the op table instead of reading
    the kernel table being replaced (it used to end the app with an AttributeError)."""
    app = TrnscopeApp([str(CPU_SESSION)], use_cache=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        for keys in (("t", "t", "o"), ("t", "o"), ("s", "s", "s", "o")):
            for key in keys:
                await pilot.press(key)  # no settling between keys: the rebuild is in flight
            await settle(pilot)
            screen = app.screen
            if isinstance(screen, PickScreen):
                await press(pilot, "escape")
            ops = app.screen
            assert isinstance(ops, OpsScreen)
            assert ops.query_one("#table", VirtualTable).model is not None
            if ops.state.mode == "kernels":
                await press(pilot, "t")
        assert app.is_running
        assert isinstance(app.screen, OpsScreen) and isinstance(app.screen._table, OpTable)


async def test_a_large_trace_in_an_embedded_ui_leaves_nothing_in_dev_shm(tmp_path: Path, monkeypatch) -> None:
    """Without the worker server started before the UI took stdio (embedded use), the
    load decodes in its own process; nothing half-made (a named semaphore) stays behind.

    Only this process's own files count: the named semaphores it creates are recorded as
    they are named (the other xdist worker's pools make theirs in /dev/shm at the same
    time, which a before/after listing counted as this test's)."""
    import gc
    import multiprocessing.synchronize
    import os

    from trnscope.core.formats.kineto import loader as kineto
    from trnscope.testing.synth_kineto import generate

    if not os.path.isdir("/dev/shm"):
        return
    named: list[str] = []
    make_name = multiprocessing.synchronize.SemLock._make_name

    def recorded() -> str:
        name = make_name()
        named.append(name)
        return name

    monkeypatch.setattr(multiprocessing.synchronize.SemLock, "_make_name", staticmethod(recorded))
    path = tmp_path / "big.pt.trace.json"
    generate(path, 60_000, seed=5)
    original = kineto.PARALLEL_MIN_BYTES
    kineto.PARALLEL_MIN_BYTES = 0
    try:
        app = TrnscopeApp([str(path)], use_cache=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_loaded(pilot)
            assert isinstance(app.screen, OpsScreen)
    finally:
        kineto.PARALLEL_MIN_BYTES = original
    from trnscope.core.formats.kineto.parallel import SPILL_PREFIX

    gc.collect()  # a pool's queue locks are unlinked when collected
    left = set(os.listdir("/dev/shm"))
    assert [name for name in named if "sem." + name.lstrip("/") in left] == []
    assert [name for name in left if name.startswith(f"{SPILL_PREFIX}{os.getpid()}-")] == []
