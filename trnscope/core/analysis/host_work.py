"""Host work that is not an op: the DataLoader's fetches.

PyTorch wraps each ``DataLoader`` fetch in ``record_function`` under
``enumerate(DataLoader)#<iterator class>.__next__`` (torch/utils/data/dataloader.py,
``_profile_name``): an annotation, not an op, yet the host thread is busy getting the
next batch there.  The diagnosis counts it in a step's host busy time and tells the
device's idle time inside it apart (``data_loading``); the timeline draws it in the
thread's host lane.  One definition for both."""

from __future__ import annotations

import re

import numpy as np

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.name_match import names_matching
from trnscope.core.base.arrays import equals_any
from trnscope.core.model.roles import Role

DATA_LOADER = re.compile(r"^enumerate\(DataLoader\)#")
_DATA_LOADER_NEEDLES = ("enumerate(dataloader)#",)
HOST_RANGES = (int(Role.ANNOTATION), int(Role.OP))  # (a 2021 trace records the fetch as an op)


def data_loader_rows(analysis: Analysis) -> np.ndarray:
    """The host's DataLoader fetches that took time (int64 rows, in row order)."""
    trace = analysis.trace
    ev = trace.events
    named = names_matching(trace.names, DATA_LOADER, _DATA_LOADER_NEEDLES)
    if not named.any():  # most traces: no pass over every event (6 ms at 2.9 M events)
        return np.empty(0, dtype=np.int64)
    rows = np.flatnonzero(named[ev.name])
    return rows[equals_any(ev.role[rows], HOST_RANGES) & (ev.dur[rows] > 0)]
