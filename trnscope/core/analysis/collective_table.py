"""A rank's collective calls as columns: what a rank summary carries back to the parent.

A ``CollectiveCall`` is convenient while one trace is read, but as a Python object it
costs ~800 bytes; 256 ranks × 2,000 collectives held that way took 400 MB in the parent
before any figure was computed.  As columns (17 int64 and 8 int32 per call, strings
interned once per table) the same calls take ~160 bytes each, pickle as a handful of
buffers, and the reducer (``analysis.ranks``) works on them with NumPy.

``concat`` joins many ranks' tables into one, re-coding their strings into one table:
the reducer's view of every call of the job.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from trnscope.core.analysis.collectives import CollectiveCall

TEXT_FIELDS = ("name", "op", "group", "comms_id", "dtype", "dims", "idle_frame", "worker_group")
INT_FIELDS = (
    "seq",
    "step",
    "ordinal",
    "arrival_ns",
    "call_end_ns",
    "exec_start_ns",
    "exec_end_ns",
    "in_nelems",
    "out_nelems",
    "element_bytes",
    "group_size",
    "idle_before_ns",
    "since_previous_ns",
    "step_thread_idle_ns",
    "idle_frame_ns",
    "loading_ns",
    "worker_group_size",
)
_INT_COLUMN = {name: k for k, name in enumerate(INT_FIELDS)}
_TEXT_COLUMN = {name: k for k, name in enumerate(TEXT_FIELDS)}
_INT64_MAX = (1 << 63) - 1
UNKNOWN = -1  # what a number that int64 cannot hold becomes (as "unknown" in a call)


def _int64(value: int) -> int:
    return value if -_INT64_MAX <= value <= _INT64_MAX else UNKNOWN


class CollectiveTable(msgspec.Struct):
    """Calls as rows: ``numbers[:, k]`` is ``INT_FIELDS[k]``, ``codes[:, k]`` indexes
    ``strings`` for ``TEXT_FIELDS[k]``.  Rows keep the order the calls were given in."""

    strings: list[str]
    codes: np.ndarray  # int32 (n, len(TEXT_FIELDS))
    numbers: np.ndarray  # int64 (n, len(INT_FIELDS))

    @classmethod
    def from_calls(cls, calls: Sequence[CollectiveCall]) -> CollectiveTable:
        strings: dict[str, int] = {}
        codes = np.array(
            [[strings.setdefault(getattr(c, f), len(strings)) for f in TEXT_FIELDS] for c in calls],
            dtype=np.int32,
        ).reshape(len(calls), len(TEXT_FIELDS))
        numbers = np.array([[_int64(getattr(c, f)) for f in INT_FIELDS] for c in calls], dtype=np.int64).reshape(
            len(calls), len(INT_FIELDS)
        )
        return cls(list(strings), codes, numbers)

    @classmethod
    def concat(cls, tables: Sequence[CollectiveTable]) -> CollectiveTable:
        """One table of all rows, strings re-coded into one list."""
        strings: dict[str, int] = {}
        codes = []
        for table in tables:
            recode = np.array([strings.setdefault(s, len(strings)) for s in table.strings] or [0], dtype=np.int32)
            codes.append(recode[table.codes])
        return cls(
            list(strings),
            np.concatenate(codes) if codes else np.zeros((0, len(TEXT_FIELDS)), np.int32),
            np.concatenate([t.numbers for t in tables]) if tables else np.zeros((0, len(INT_FIELDS)), np.int64),
        )

    def __len__(self) -> int:
        return int(self.numbers.shape[0])

    def ints(self, field: str) -> np.ndarray:
        return self.numbers[:, _INT_COLUMN[field]]

    def code(self, field: str) -> np.ndarray:
        return self.codes[:, _TEXT_COLUMN[field]]

    def text(self, field: str, row: int) -> str:
        return self.strings[int(self.codes[row, _TEXT_COLUMN[field]])]

    def take(self, rows: np.ndarray) -> CollectiveTable:
        return CollectiveTable(self.strings, self.codes[rows], self.numbers[rows])

    def call(self, row: int) -> CollectiveCall:
        """One row as the object it was made from."""
        values: dict[str, object] = {f: self.text(f, row) for f in TEXT_FIELDS}
        values.update({f: int(self.numbers[row, k]) for f, k in _INT_COLUMN.items()})
        return CollectiveCall(**values)  # type: ignore[arg-type]

    def calls(self) -> list[CollectiveCall]:
        return [self.call(k) for k in range(len(self))]

    def with_worker_groups(self) -> CollectiveTable:
        """The same calls, each that names no process group given the one its gloo
        worker thread serves (``CollectiveCall.worker_group``), and that group's size."""
        blank = self.strings.index("") if "" in self.strings else -1
        group, worker = _TEXT_COLUMN["group"], _TEXT_COLUMN["worker_group"]
        take = (self.codes[:, group] == blank) & (self.codes[:, worker] != blank)
        codes, numbers = self.codes.copy(), self.numbers.copy()
        codes[take, group] = self.codes[take, worker]
        numbers[take, _INT_COLUMN["group_size"]] = self.numbers[take, _INT_COLUMN["worker_group_size"]]
        return CollectiveTable(self.strings, codes, numbers)

    def has_worker_groups(self) -> bool:
        blank = self.strings.index("") if "" in self.strings else -1
        return bool((self.codes[:, _TEXT_COLUMN["worker_group"]] != blank).any())

    # -- the derived figures of ``CollectiveCall``, for every row at once ---------------

    def end_ns(self) -> np.ndarray:
        return np.maximum(self.ints("call_end_ns"), self.ints("exec_end_ns"))

    def duration_ns(self) -> np.ndarray:
        executed = self.ints("exec_start_ns") >= 0
        return np.where(
            executed,
            self.ints("exec_end_ns") - self.ints("exec_start_ns"),
            self.ints("call_end_ns") - self.ints("arrival_ns"),
        )

    def message_bytes(self) -> np.ndarray:
        """``CollectiveCall.message_bytes``; -1 also where the product overflows int64."""
        count = np.maximum(self.ints("in_nelems"), self.ints("out_nelems"))
        element = self.ints("element_bytes")
        fits = (element > 0) & (count >= 0) & (count <= _INT64_MAX // np.maximum(element, 1))
        return np.where(fits, count * np.where(fits, element, 0), -1)
