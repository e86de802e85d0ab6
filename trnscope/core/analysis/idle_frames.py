"""Which Python call held a thread's time outside every op: one rule for the ranks'
straggler finding (the call a late rank was in since its previous collective) and the
diagnosis's ``outside_ops`` (the call a CPU trace's steps spent their op-free time in).

A frame "ran no op" when ops cover at most ``IDLE_FRAME_BUSY_SHARE`` of it; among those
holding (nearly) the most op-free time, the innermost is named: the script's own top
frames hold the same time and have few ops, ``sleep`` says why.  A frame holding a whole
``ProfilerStep`` is the training loop's own (``main``): every gap lies inside it, and it
names no cause."""

from __future__ import annotations

import numpy as np

from trnscope.core.base.intervals import Union

IDLE_FRAME_BUSY_SHARE = 0.1  # a frame "ran no op" when ops cover at most this share of it
IDLE_FRAME_CLOSE = 0.9  # frames holding this share of the most idle time any holds: the innermost is named


def ran_no_op(busy: Union, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per frame [start, end): whether the ops in ``busy`` cover at most a tenth of it."""
    return busy.covered_in(start, end) <= IDLE_FRAME_BUSY_SHARE * (end - start)


def innermost_of_most(idle: np.ndarray, lengths: np.ndarray) -> int:
    """The position of the shortest (innermost) frame among those whose ``idle`` time is
    within ``IDLE_FRAME_CLOSE`` of the most any holds (``idle`` not empty)."""
    close = np.flatnonzero(idle >= IDLE_FRAME_CLOSE * idle.max())
    return int(close[np.argmin(lengths[close])])


def holds_a_whole_step(step_start: np.ndarray, step_end: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per frame [start, end): whether it holds one of the steps [step_start, step_end)
    whole (the steps sorted by start, one after another: the first to start inside the
    frame is the first to end)."""
    if not step_start.size or not start.size:
        return np.zeros(start.size, dtype=bool)
    first = np.minimum(np.searchsorted(step_start, start), step_start.size - 1)
    return (step_start[first] >= start) & (step_end[first] <= end)
