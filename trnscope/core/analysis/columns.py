"""The op table's columns, each defined once.

Every presenter of an op table — ``summary`` as text, CSV and JSON, merged summaries,
the TUI's table, its sort keys and column chooser, ``--sort``'s choices — takes its
columns from ``OP_COLUMNS``.  A column says:

* ``key`` — its name everywhere a user types one (``--sort self_cpu``, the chooser);
* ``title`` / ``short_title`` — the text table's header and the TUI's narrower one
  (``{device}`` is the device label, ``{dev}`` its first four letters);
* ``unit`` — what its numbers are, which fixes how each presenter writes them;
* ``values`` — how they come from the table's exact figures (``OpFigures``);
* ``needs`` — what the trace must hold for it to exist (device time, ``[memory]``
  records, input shapes of ops PyTorch counts);
* ``priority`` — lower goes first when the width runs out; ``tui_shown`` — whether the
  TUI shows it by default always, from 130 columns, or only when chosen;
* ``field`` — the ``OpOut`` field (JSON) and the CSV header that carry it.

A new column is one entry here plus one ``OpOut`` field; ``tests/test_columns.py``
checks that every output carries every column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from trnscope.core.analysis.opfigures import OpFigures


class Unit(StrEnum):
    NS = "ns"  # a time (JSON and CSV: microseconds)
    COUNT = "count"
    BYTES = "bytes"
    FLOPS = "flops"
    RATE = "flop/s"
    PERCENT = "%"


class Needs(StrEnum):
    NOTHING = "nothing"
    DEVICE = "device"  # device time in the table
    MEMORY = "memory"  # [memory] records (profile_memory=True)
    DEVICE_MEMORY = "device_memory"  # [memory] records of device allocations
    FLOPS = "flops"  # input shapes of an op PyTorch counts (record_shapes=True)


# What each kind of extra figure is called where a user asks for it (summary --with).
EXTRAS = {Needs.MEMORY: "memory", Needs.FLOPS: "flops"}
ALL_EXTRAS = frozenset(EXTRAS.values())


class Values:
    """A column's values per group, and which groups have one (an empty cell otherwise)."""

    __slots__ = ("present", "values")

    def __init__(self, values: np.ndarray, present: np.ndarray | None = None) -> None:
        self.values = values
        self.present = present

    def has(self, group: int) -> bool:
        return self.present is None or bool(self.present[group])

    def sort_key(self) -> np.ndarray:
        """float64, NaN where there is no value (sorted last in either direction)."""
        out = np.asarray(self.values, dtype=np.float64)
        if self.present is not None:
            out = np.where(self.present, out, np.nan)
        return out


@dataclass(frozen=True)
class OpColumn:
    key: str
    title: str
    short_title: str
    unit: Unit
    values: Callable[[OpFigures], Values]
    field: str  # OpOut field, CSV header
    needs: Needs = Needs.NOTHING
    priority: int = 50
    tui_width: int = 9
    tui_shown: str = "always"  # always | wide | chosen
    sortable: bool = True
    descending: bool = True  # the natural sort direction

    def header(self, device_label: str) -> str:
        return self.title.format(device=device_label)

    def tui_header(self, device_label: str) -> str:
        return self.short_title.format(dev=device_label[:4])

    @property
    def extra(self) -> str | None:
        """The extra figure (summary --with) this column needs computed, if any."""
        return EXTRAS.get(Needs.MEMORY if self.needs is Needs.DEVICE_MEMORY else self.needs)


def _per_call(total: np.ndarray, calls: np.ndarray) -> np.ndarray:
    return np.asarray(total, dtype=np.float64) / np.maximum(np.asarray(calls, dtype=np.float64), 1.0)


def _share(part: np.ndarray, whole: int) -> Values:
    if not whole:
        return Values(np.zeros(len(part)), np.zeros(len(part), dtype=bool))
    return Values(100.0 * np.asarray(part, dtype=np.float64) / whole)


def _device_share(f: OpFigures) -> Values:
    share = _share(f.self_device, f.device_share_base or f.total_self_device)
    return Values(share.values, (f.self_device != 0) if share.present is None else share.present)


def _device_time(values: np.ndarray) -> Values:
    # an op without device time shows an empty cell, not 0
    return Values(values, np.asarray(values) != 0)


def _memory(field: str) -> Callable[[OpFigures], Values]:
    def values(f: OpFigures) -> Values:
        if f.memory is None:
            return Values(np.zeros(len(f), dtype=np.int64), np.zeros(len(f), dtype=bool))
        return Values(getattr(f.memory, field))

    return values


def _flops(f: OpFigures) -> Values:
    if f.flops is None:
        return Values(np.zeros(len(f), dtype=np.int64), np.zeros(len(f), dtype=bool))
    return Values(f.flops.flops, f.flops.counted)


def flops_per_second(f: OpFigures) -> Values:
    """FLOPs ÷ device total, or ÷ CPU total where the op has no device time; only where
    every instance has a count."""
    if f.flops is None:
        return Values(np.zeros(len(f)), np.zeros(len(f), dtype=bool))
    seconds = np.where(f.device_total > 0, f.device_total, f.cpu_total).astype(np.float64) / 1e9
    defined = f.flops.complete & (seconds > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(defined, np.asarray(f.flops.flops, dtype=np.float64) / np.where(defined, seconds, 1.0), 0.0)
    return Values(rate, defined)


OP_COLUMNS: tuple[OpColumn, ...] = (
    OpColumn("calls", "Calls", "Calls", Unit.COUNT, lambda f: Values(f.calls), "calls", priority=90, tui_width=7),
    OpColumn(
        "self_cpu_pct",
        "Self CPU %",
        "CPU %",
        Unit.PERCENT,
        lambda f: _share(f.self_cpu, f.total_self_cpu),
        "self_cpu_pct",
        priority=40,
        tui_width=6,
        tui_shown="wide",
        sortable=False,
    ),
    OpColumn("self_cpu", "Self CPU", "Self CPU", Unit.NS, lambda f: Values(f.self_cpu), "self_cpu_us", priority=80),
    OpColumn(
        "cpu_total",
        "CPU total",
        "CPU tot",
        Unit.NS,
        lambda f: Values(f.cpu_total),
        "cpu_total_us",
        priority=70,
        tui_width=8,
    ),
    OpColumn(
        "cpu_avg",
        "CPU avg",
        "CPU avg",
        Unit.NS,
        lambda f: Values(_per_call(f.cpu_total, f.calls)),
        "cpu_avg_us",
        priority=20,
        tui_width=8,
        tui_shown="wide",
    ),
    OpColumn(
        "self_device_pct",
        "Self {device} %",
        "{dev} %",
        Unit.PERCENT,
        _device_share,
        "self_device_pct",
        Needs.DEVICE,
        priority=30,
        tui_width=6,
        tui_shown="wide",
        sortable=False,
    ),
    OpColumn(
        "self_device",
        "Self {device}",
        "Self {dev}",
        Unit.NS,
        lambda f: _device_time(f.self_device),
        "self_device_us",
        Needs.DEVICE,
        priority=85,
        tui_width=10,
    ),
    OpColumn(
        "device_total",
        "{device} total",
        "{dev} tot",
        Unit.NS,
        lambda f: _device_time(f.device_total),
        "device_total_us",
        Needs.DEVICE,
        priority=75,
        tui_width=10,
    ),
    OpColumn(
        "device_avg",
        "{device} avg",
        "{dev} avg",
        Unit.NS,
        lambda f: Values(_per_call(f.device_total, f.calls), f.device_total != 0),
        "device_avg_us",
        Needs.DEVICE,
        priority=10,
        tui_shown="wide",
    ),
    OpColumn(
        "cpu_memory",
        "CPU Mem",
        "CPU Mem",
        Unit.BYTES,
        _memory("cpu"),
        "cpu_memory_bytes",
        Needs.MEMORY,
        priority=15,
        tui_width=10,
        tui_shown="wide",
    ),
    OpColumn(
        "self_cpu_memory",
        "Self CPU Mem",
        "Self Mem",
        Unit.BYTES,
        _memory("self_cpu"),
        "self_cpu_memory_bytes",
        Needs.MEMORY,
        priority=14,
        tui_width=10,
        tui_shown="wide",
    ),
    OpColumn(
        "device_memory",
        "{device} Mem",
        "{dev} Mem",
        Unit.BYTES,
        _memory("device"),
        "device_memory_bytes",
        Needs.DEVICE_MEMORY,
        priority=13,
        tui_width=10,
        tui_shown="chosen",
    ),
    OpColumn(
        "self_device_memory",
        "Self {device} Mem",
        "S {dev} Mem",
        Unit.BYTES,
        _memory("self_device"),
        "self_device_memory_bytes",
        Needs.DEVICE_MEMORY,
        priority=12,
        tui_width=11,
        tui_shown="chosen",
    ),
    OpColumn(
        "flops", "FLOPs", "FLOPs", Unit.FLOPS, _flops, "flops", Needs.FLOPS, priority=16, tui_width=7, tui_shown="wide"
    ),
    OpColumn(
        "flops_per_s",
        "FLOP/s",
        "FLOP/s",
        Unit.RATE,
        flops_per_second,
        "flops_per_s",
        Needs.FLOPS,
        priority=15,
        tui_width=7,
        tui_shown="wide",
    ),
)
COLUMNS_BY_KEY = {column.key: column for column in OP_COLUMNS}
# sorting by name (A→Z) besides the number columns
NAME_SORT = "name"
SORT_KEYS: tuple[str, ...] = (*(c.key for c in OP_COLUMNS if c.sortable), NAME_SORT)


def has_what(figures: OpFigures, needs: Needs) -> bool:
    """Whether these figures hold what a column needs (the extras: once computed)."""
    if needs is Needs.NOTHING:
        return True
    if needs is Needs.DEVICE:
        return figures.has_device_time
    if needs is Needs.MEMORY:
        return figures.memory is not None
    if needs is Needs.DEVICE_MEMORY:
        memory = figures.memory
        return memory is not None and bool(memory.device.any() or memory.self_device.any())
    return figures.flops is not None and bool(figures.flops.counted.any())


def sort_title(key: str, device_label: str = "device") -> str:
    if key == NAME_SORT:
        return "name"
    column = COLUMNS_BY_KEY.get(key)
    return column.header(device_label) if column is not None else key
