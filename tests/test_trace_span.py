"""``Trace.span_ns`` reads its columns a slice at a time: the same answer as over the
whole columns at once, wherever the slices fall."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SAMPLES
from trnscope.core.formats.discovery import SourceRef
from trnscope.core.formats.loading import load_source
from trnscope.core.formats.options import LoadOptions
from trnscope.core.model import trace as trace_module
from trnscope.core.model.roles import Role

SAMPLE = SAMPLES / "cpu_rmsnorm_session" / "eager.pt.trace.json.gz"


def _whole_columns(trace: trace_module.Trace) -> tuple[int, int]:
    ev = trace.events
    timed = (ev.ph == 0) & (ev.role != int(Role.PROFILER))
    if not timed.any():
        return 0, 0
    starts = ev.ts[timed]
    return int(starts.min()), int((starts + np.maximum(ev.dur[timed], 0)).max())


@pytest.fixture(scope="module")
def sample() -> trace_module.Trace:
    return load_source(SourceRef("eager", str(SAMPLE)), LoadOptions(use_cache=False))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 9), st.integers(0, 2**32), st.booleans())
def test_span_by_slices_is_the_span_of_the_whole_columns(
    sample: trace_module.Trace, slice_rows: int, seed: int, none_timed: bool
) -> None:
    rng = np.random.default_rng(seed)
    n = len(sample.events)
    events = sample.events.take(np.arange(n))
    events.ts = rng.integers(-(10**12), 10**12, n)
    events.dur = rng.integers(-1, 10**9, n)
    events.ph = np.where(rng.random(n) < (0.0 if none_timed else 0.7), 0, 1).astype(np.uint8)
    events.role = rng.choice([int(Role.OP), int(Role.PROFILER), int(Role.KERNEL)], n).astype(np.uint8)
    changed = sample.__copy__()
    changed.events = events
    expected = _whole_columns(changed)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trace_module, "_SPAN_ROWS", slice_rows)
        assert changed.span_ns == expected
    assert changed.span_ns == expected  # (and at its own slice size)
