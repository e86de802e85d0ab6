"""One trace plus everything derived from it, computed once and cached."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

import msgspec
import numpy as np

from trnscope.core.analysis.optable import (
    EventTimes,
    GroupBy,
    KernelTable,
    OpKeys,
    OpTable,
    build_kernel_table,
    build_op_table,
    event_times,
    op_keys,
    python_stacks,
)
from trnscope.core.base import settings
from trnscope.core.base.arrays import equals_any, index_by, values_of_keys
from trnscope.core.link.linker import LinkReport, Links, forward_links, link
from trnscope.core.model.roles import Role, is_profiler_step
from trnscope.core.model.trace import Trace
from trnscope.core.model.vocab import PH_X

if TYPE_CHECKING:
    from trnscope.core.formats.neuron.data import NeuronData
    from trnscope.core.link.neuron import NeuronLinks

T = TypeVar("T")


class Step(msgspec.Struct, frozen=True):
    name: str
    row: int
    start: int
    end: int


class Analysis:
    """Tables, steps and chains of one trace.  Thread-safe: the TUI builds tables in
    worker threads while the UI reads finished ones."""

    def __init__(self, trace: Trace, links: Links | None = None, times: EventTimes | None = None) -> None:
        self.trace = trace
        self.links = links if links is not None else link(trace)
        # backend links: a backend whose data adds device layers links them here
        self.neuron_data: NeuronData | None = None
        self.neuron: NeuronLinks | None = None
        if trace.backend is not None:  # the Neuron modules only for a trace that has one
            from trnscope.core.formats.neuron.data import neuron_data
            from trnscope.core.link.neuron import link_neuron

            self.neuron_data = neuron_data(trace)
            if self.neuron_data is not None:
                self.neuron = link_neuron(trace, self.neuron_data, self.links)
        self.times: EventTimes = times if times is not None else event_times(trace, self.links)
        self._lock = threading.Lock()
        self._op_tables: dict[tuple[str, int, int], OpTable] = {}
        # shared by every grouping of a step / every step grouped by stack at one depth
        self._op_keys: dict[int, OpKeys] = {}
        self._stack_ids: dict[int, tuple[np.ndarray, list[str]]] = {}
        self._kernel_tables: dict[int, KernelTable] = {}
        self._steps: list[Step] | None = None
        self._derived: dict[tuple[str, object], object] = {}
        self.pending: list[Callable[[], object]] = []  # deferred work, e.g. writing the index cache

    def finish(self) -> None:
        """Run deferred work (call once the first result has been shown).  It only
        speeds up later opens, so a failure here never fails the command."""
        while self.pending:
            task = self.pending.pop(0)
            try:
                task()
            except Exception:
                if settings.debug():
                    raise

    def prepare_drilldown(self) -> None:
        """Links only the drill-down follows (forward op of each backward op): a UI
        asks for them after its first screen, so they are ready when an op is opened;
        a command that never drills down never computes them."""
        forward_links(self.trace, self.links)

    @property
    def link_report(self) -> LinkReport:
        return self.links.report

    def steps(self) -> list[Step]:
        """ProfilerStep#N ranges (or, failing those, top-level annotations)."""
        if self._steps is None:
            ev = self.trace.events
            annotation = (ev.role == int(Role.ANNOTATION)) & (ev.ph == PH_X)
            step_name = np.array([is_profiler_step(n) for n in self.trace.names] or [False], dtype=bool)
            rows = np.flatnonzero(annotation & step_name[ev.name])
            rows = rows[np.argsort(ev.ts[rows], kind="stable")]
            self._steps = [
                Step(self.trace.names[int(ev.name[r])], int(r), int(ev.ts[r]), int(ev.ts[r] + max(ev.dur[r], 0)))
                for r in rows.tolist()
            ]
        return self._steps

    def profiler_step_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``ProfilerStep`` ranges' starts and ends (ns), by start."""
        steps = self.steps()
        return (
            np.array([step.start for step in steps], dtype=np.int64),
            np.array([step.end for step in steps], dtype=np.int64),
        )

    def window_mask(self, start: int, end: int) -> np.ndarray:
        """Rows that belong to [start, end): host events by their start, device events
        by the start of the op that launched them (or their own start if unlinked)."""
        ev = self.trace.events
        anchor = ev.ts.copy()
        device = self.links.device_op >= 0
        anchor[device] = ev.ts[self.links.device_op[device]]
        return (anchor >= start) & (anchor < end)

    def step_index(self, number: int) -> int:
        """The position in ``steps()`` of ``ProfilerStep#<number>`` (the name the TUI
        shows); for a trace without ProfilerSteps, of its ``number``-th top-level range."""
        steps = self.steps()
        for index, step in enumerate(steps):
            if step.name == f"ProfilerStep#{number}":
                return index
        if steps and not any(is_profiler_step(s.name) for s in steps) and 0 <= number < len(steps):
            return number
        names = ", ".join(s.name for s in steps[:8]) + (" …" if len(steps) > 8 else "")
        raise IndexError(
            f"no ProfilerStep#{number} in this trace" + (f" (it has {names})" if steps else " (it has no steps)")
        )

    def _step_mask(self, step: int) -> np.ndarray | None:
        if step < 0:
            return None
        steps = self.steps()
        if step >= len(steps):
            raise IndexError(f"step {step} out of range (trace has {len(steps)} steps)")
        chosen = steps[step]
        return self.window_mask(chosen.start, chosen.end)

    def op_table(self, group_by: GroupBy | str = GroupBy.OP, stack_depth: int = 5, step: int = -1) -> OpTable:
        key = (str(GroupBy(group_by)), stack_depth if GroupBy(group_by) is GroupBy.STACK else 0, step)
        with self._lock:
            cached = self._op_tables.get(key)
        if cached is not None:
            return cached
        with self._lock:
            keys = self._op_keys.get(step)
            stack_ids = self._stack_ids.get(stack_depth)
        if keys is None:
            keys = op_keys(self.trace, self.times, self._step_mask(step))
        if stack_ids is None and GroupBy(group_by) is GroupBy.STACK:
            stack_ids = python_stacks(self.trace, self.links, stack_depth)
        table = build_op_table(
            self.trace, self.links, group_by, stack_depth, times=self.times, keys=keys, stack_ids=stack_ids
        )
        with self._lock:
            self._op_tables[key] = table
            self._op_keys[step] = keys
            if stack_ids is not None:
                self._stack_ids[stack_depth] = stack_ids
        return table

    def kernel_table(self, step: int = -1) -> KernelTable:
        with self._lock:
            cached = self._kernel_tables.get(step)
        if cached is not None:
            return cached
        table = build_kernel_table(self.trace, self.links, self._step_mask(step))
        with self._lock:
            self._kernel_tables[step] = table
        return table

    def device_work(self, op_rows: np.ndarray) -> np.ndarray:
        """Kernel / copy rows launched by these op rows, or — for ops that launch nothing
        themselves (aten::linear) — by their direct children."""
        links = self.links

        def build() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
            launched = (links.device_op >= 0) & equals_any(self.trace.events.role, (Role.KERNEL, Role.MEMORY))
            owner = np.where(launched, links.device_op, -1)
            return index_by(owner), index_by(np.where(launched, links.raw_parent[np.maximum(owner, 0)], -1))

        (owners, by_owner), (parents, by_parent) = self.derived(("device work by op", None), build)
        found = values_of_keys(owners, by_owner, op_rows).astype(np.int64)
        return found if found.size else values_of_keys(parents, by_parent, op_rows).astype(np.int64)

    def derived(self, key: tuple[str, object], build: Callable[[], T]) -> T:
        """What ``build`` makes of this trace, made once per ``key`` (a pane's data
        that the user may open again: the timeline's lanes).  Two threads asking at once
        may both build it; the first kept is the one every later caller gets."""
        with self._lock:
            if key in self._derived:
                return cast(T, self._derived[key])
        made = build()
        with self._lock:
            return cast(T, self._derived.setdefault(key, made))

    @functools.cached_property
    def op_tree_rule(self) -> str:
        """The rule the op table's Self CPU follows (``model.op_tree``): "classic" or
        "python" where the trace has Python frames, "" where it has none (both rules
        then give the same figures)."""
        has_frames = bool((self.trace.events.role == int(Role.PYTHON)).any())
        return self.trace.op_tree if has_frames else ""

    @functools.cached_property
    def span_ns(self) -> tuple[int, int]:
        """``Trace.span_ns``, computed once: a pass over every event (18 ms at 2.9 M
        events) that the status line and the detail pane would otherwise repeat on every
        key press.  The events do not change once an Analysis holds them."""
        return self.trace.span_ns

    @property
    def wall_ns(self) -> int:
        start, end = self.span_ns
        return end - start
