"""No key on any pane ends the explorer: seeded random walks over the keys each pane
binds at that moment (its own, its focused widget's, the app's), on real and synthetic
traces, at 80×24.  Found by hand first: enter on a row of the device-event table ended
the app with a traceback, a path no scripted test had taken."""

from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Any

import pytest
from textual.worker import WorkerCancelled
from tui_helpers import wait_loaded

from conftest import CORPUS, SAMPLES
from trnscope.tui.app import TrnscopeApp

QUITS = {"q", "ctrl+q", "ctrl+c"}  # the walk is about staying in the app
PRESSES = 90


def _bound_keys(app: TrnscopeApp) -> list[str]:
    """Every key the screen on top answers now, the first of each binding's keys."""
    keys = []
    for key, active in app.screen.active_bindings.items():
        if active.enabled and key not in QUITS:
            keys.append(key)
    return sorted(set(keys))


async def _caught_up(pilot: Any) -> None:
    """The press handled and the workers it started finished (a lighter ``settle``:
    what the walk checks is that the app still runs, not what a screen shows)."""
    app = pilot.app
    for _ in range(2):
        with contextlib.suppress(WorkerCancelled):  # an exclusive worker replaced by a newer one
            await app.workers.wait_for_complete()
        await pilot.pause()


@pytest.mark.parametrize(
    ("trace", "seed"),
    [
        (SAMPLES / "trn_synthetic_rmsnorm_session", 1),
        (CORPUS / "tracelens_h100_bert_small.json.gz", 2),
        (CORPUS / "hta_rocm_mi250_minitoy.json.gz", 3),
    ],
    ids=["trn-session", "h100", "mi250"],
)
async def test_a_random_walk_over_every_bound_key_never_ends_the_app(
    trace: Path, seed: int, isolated_cache: Path
) -> None:
    if not trace.exists():
        pytest.skip(f"{trace} is not here")
    rng = random.Random(seed)
    app = TrnscopeApp([str(trace)])
    walked: list[tuple[str, str]] = []
    panes_seen: set[str] = set()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot)
        for _ in range(PRESSES):
            keys = _bound_keys(app)
            assert keys, f"{type(app.screen).__name__} answers no key: a dead end"
            # escape half as often as the rest: the walk should get deep into panes
            key = rng.choice([k for k in keys if k != "escape"] or keys) if rng.random() > 0.12 else "escape"
            walked.append((type(app.screen).__name__, key))
            panes_seen.add(type(app.screen).__name__)
            await pilot.press(key)
            await _caught_up(pilot)
            assert app.is_running and app._exception is None, f"the app ended after {walked[-8:]}"
    # the walk reached more than the first pane (else it proves little)
    assert len(panes_seen) >= 3, panes_seen
