"""The JSON contracts: every document ``trnscope … --format json`` writes, as msgspec
structs, in one place.

Scripts rely on these.  A key keeps its meaning once published; new keys may be added
(documented in the README, "JSON output").  ``schema_version`` changes only when a key
changes meaning or goes away.  Times are microseconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from trnscope.core.analysis.chain_model import Chain, Gaps
from trnscope.core.analysis.compare_model import CompareRow, Comparison, Figures
from trnscope.core.analysis.distribution import RatioInterval
from trnscope.core.base.text import json_safe
from trnscope.core.base.units import us

SCHEMA_VERSION = 1


# -- trnscope summary ---------------------------------------------------------------


class Totals(msgspec.Struct):
    self_cpu_us: float
    self_device_us: float
    wall_us: float
    device_share_base_us: float = 0.0  # what self device shares are of (device annotations included)


class OpOut(msgspec.Struct):
    """One op-table row: a field per column of ``trnscope.core.analysis.columns``
    (which defines each figure), plus the row's key (name, kind, shapes, stack)."""

    name: str
    input_shapes: Any
    stack: list[str] | None
    calls: int
    self_cpu_us: float
    cpu_total_us: float
    self_device_us: float
    device_total_us: float
    kind: str
    # key_averages(profile_memory=True): bytes allocated (+) and freed (−) inside the
    # op and its children / by itself; null when the trace has no [memory] records or
    # they were not asked for (summary --with memory; SummaryOut.extras says which)
    cpu_memory_bytes: int | None = None
    self_cpu_memory_bytes: int | None = None
    device_memory_bytes: int | None = None
    self_device_memory_bytes: int | None = None
    # key_averages(with_flops=True), recomputed from the trace's input shapes by
    # PyTorch's formula; null for ops it does not count, when the trace has no shapes,
    # or when not asked for (summary --with flops)
    flops: int | None = None
    # flops ÷ device total (÷ CPU total without device time); null unless every call has a count
    flops_per_s: float | None = None
    cpu_avg_us: float = 0.0  # cpu_total_us ÷ calls
    device_avg_us: float | None = None  # device_total_us ÷ calls; null without device time
    self_cpu_pct: float | None = None  # share of every row's self CPU time (null when that is 0)
    self_device_pct: float | None = None  # share of every device row's self device time


class KernelOut(msgspec.Struct):
    name: str
    calls: int
    total_us: float
    min_us: float
    max_us: float
    op: str
    # the spread of its durations (core/analysis/distribution.py); null in a merged summary
    median_us: float | None = None
    p10_us: float | None = None
    p90_us: float | None = None
    std_us: float | None = None


class LinkOut(msgspec.Struct):
    device_events: int
    linked: int
    by_external_id: int
    by_correlation: int
    by_flow: int
    unlinkable: int
    outside_ops: int
    unresolved: int
    before_window: int = 0  # of the unlinkable: those that start before the first profiled op
    # of the linked: by a runtime call of no op id, to the op around it (the kernel table
    # and drill-down count them; key_averages()' figures, so the op table, do not)
    by_enclosing_op: int = 0


class NeuronOpOut(msgspec.Struct):
    name: str
    executions: int
    device_us: float
    engines_us: dict[str, float]  # summed busy time per engine (tensor, vector, scalar, gpsimd, sync, dma, cc)


class PlacementOut(msgspec.Struct):
    """How one device profile was put on the host clock (see ``link/neuron_clock``)."""

    profile: str
    neuron_core: int
    method: str  # "sync point" | "device timestamps" | "ExecutionInfo durations" | "activity matched to executions" | "unplaced"
    executions: int
    detail: str


class NeuronOut(msgspec.Struct):
    export_format: str
    executions: int
    linked: int
    by_mapping: int
    by_flow: int
    by_time: int
    unlinked_executions: int
    executions_without_request: int
    requests_without_op: int
    instructions: int
    instructions_outside_executions: int
    profiles_without_executions: int
    aligned_by_sync_point: int
    max_clock_disagreement_us: float
    ops: list[NeuronOpOut]
    before_window: int = 0  # unlinked executions that started before the first op
    outside_ops: int = 0  # unlinked executions whose request no profiled op encloses
    physical_core_rows: int = 0  # nc_exec_running rows merged into the executions (LNC=2: 2 per execution)
    placements: list[PlacementOut] = []


class SummaryOut(msgspec.Struct):
    """``trnscope summary --format json``."""

    source: str
    device_kind: str
    totals: Totals
    ops: list[OpOut]
    kernels: list[KernelOut]
    link_coverage: float
    warnings: list[str]
    label: str = ""
    device_name: str = ""
    synthetic: bool = False
    group_by: str = "op"
    events: int = 0
    link: LinkOut | None = None
    device_label: str = "DEVICE"
    merged: list[str] = []
    neuron: NeuronOut | None = None
    schema_version: int = SCHEMA_VERSION
    step: str = ""  # the ProfilerStep the figures are limited to (--step), else ""
    # the figures computed only when asked (summary --with memory,flops): per name,
    # "computed", "not computed" (the trace has them: ask with --with) or "absent"
    extras: dict[str, str] = {}
    # how Python frames count in Self CPU (``model.op_tree``): "classic", "python",
    # "mixed" (merged traces of both), or "" for a trace without frames
    op_tree: str = ""
    # rows before --limit cut them (after --hide and --match): -1 where not known
    op_rows: int = -1
    kernel_rows: int = -1
    match: str = ""  # the name filter the rows passed (summary --match), "" for none


# -- trnscope chain -----------------------------------------------------------------


class HopOut(msgspec.Struct):
    layer: str  # framework | runtime | device
    name: str
    start_us: float  # from the start of the op instance
    dur_us: float
    thread_or_stream: str
    details: dict[str, Any]
    kind: str
    depth: int


class ChainOut(msgspec.Struct):
    """``trnscope chain --format json``."""

    op: str
    instance: int
    instances: int
    hops: list[HopOut]
    gaps: Gaps
    notes: list[str]
    schema_version: int = SCHEMA_VERSION


def chain_document(chain: Chain) -> ChainOut:
    hops = [
        HopOut(h.layer, h.name, h.start_us, h.dur_us, h.thread_or_stream, h.details, h.kind, h.depth)
        for h in chain.hops
    ]
    return ChainOut(chain.op, chain.instance, chain.instances, hops, chain.gaps, chain.notes)


# -- trnscope diagnose --------------------------------------------------------------


class DeviceOut(msgspec.Struct):
    device: str
    span_us: float
    busy_us: float
    idle_us: float
    idle_pct: float


class StepOut(msgspec.Struct):
    step: str
    wall_us: float
    host_busy_us: float
    device_busy_us: float
    bound: str  # "device" | "host"
    data_loading_us: float = 0.0  # the host's time in DataLoader fetches inside the step
    # the thread whose ops (and fetches) host busy counts: the step's own, or for the
    # whole trace of one without ProfilerStep, the thread with the most ops
    host_thread: str = ""


class FindingOut(msgspec.Struct):
    kind: str
    severity: str  # "high" | "medium" | "low" | "info"
    message: str
    op: str
    instance: int  # the op instance it points at (0-based in time order), -1 when none
    evidence_us: float
    row: int = -1  # trace row of that instance (for the TUI; not part of the contract)
    # where most of the evidence lies, [start, end] µs from the trace's start (as the
    # timeline counts), when one span of time holds it; [] otherwise
    window_us: list[float] = []


class DiagnoseOut(msgspec.Struct):
    """``trnscope diagnose --format json``."""

    source: str
    devices: list[DeviceOut]
    steps: list[StepOut]
    findings: list[FindingOut]
    schema_version: int = SCHEMA_VERSION


# -- trnscope compare ---------------------------------------------------------------


class FiguresOut(msgspec.Struct):
    calls: int  # op calls; device launches in ``kernels``
    self_cpu_us: float
    cpu_total_us: float
    self_device_us: float
    device_total_us: float
    dispatch_us: float = 0.0  # summed host dispatch: op start → its first own runtime call


class CompareRowOut(msgspec.Struct, omit_defaults=True):
    key: str
    kind: str
    values: dict[str, FiguresOut | None]  # per variant label; null where absent
    delta_us: dict[str, float]  # the compared metric minus the baseline's
    ratio: dict[str, float | None]  # the compared metric over the baseline's (null when that is 0)
    present_in: list[str]
    detail: dict[str, str] | None = None  # per variant, e.g. the kernels behind a region


class StepRatioOut(msgspec.Struct):
    """A variant's median step ÷ the baseline's, with the 95% bootstrap interval of
    their steps."""

    ratio: float
    low: float
    high: float
    verdict: str  # "faster", "slower" or "within noise" (the interval holds 1)


def _step_ratio_document(interval: RatioInterval | None) -> StepRatioOut | None:
    if interval is None or interval.ratio != interval.ratio:
        return None
    return StepRatioOut(round(interval.ratio, 6), round(interval.low, 6), round(interval.high, 6), interval.verdict)


class DiagnosisRowOut(msgspec.Struct):
    device_idle_pct: float | None  # null: no device work in that variant (CPU only)
    host_bound_steps: int
    steps: int
    dispatches_per_step: float
    top_finding: str
    median_step_us: float | None = None  # the median ProfilerStep's wall; null: no ProfilerStep
    # this variant's median step ÷ the baseline's and its 95% bootstrap interval; null
    # for the baseline and where either has fewer than three steps
    median_step_ratio: StepRatioOut | None = None


class KernelRunsOut(msgspec.Struct):
    """One variant's executions of an aligned kernel (``distribution.py`` defines each)."""

    variant: str
    name: str
    calls: int
    total_us: float
    mean_us: float
    median_us: float
    p10_us: float
    p90_us: float
    min_us: float
    max_us: float
    std_us: float


class RatioOut(msgspec.Struct):
    """A variant's statistic ÷ the baseline's, with its 95% bootstrap interval."""

    variant: str
    median_ratio: float
    median_low: float
    median_high: float
    mean_ratio: float
    mean_low: float
    mean_high: float
    within_noise: bool  # the median's interval holds 1
    verdict: str  # "faster", "slower" or "within noise"


class KernelRunRowOut(msgspec.Struct):
    aligned_by: str  # "align" (--align), "single", "name" or "position"
    runs: list[KernelRunsOut]  # the variants that have this kernel
    against_baseline: list[RatioOut]


class CompareOut(msgspec.Struct):
    """``trnscope compare --format json``."""

    variants: list[str]
    baseline: str
    metric: str  # device_total_us, self_cpu_us, cpu_total_us or dispatch_us (--metric)
    regions: list[CompareRowOut]
    kernels: list[CompareRowOut]
    ops: list[CompareRowOut]
    schema_version: int = SCHEMA_VERSION
    diagnosis: dict[str, DiagnosisRowOut] = {}  # per variant label
    kernel_runs: list[KernelRunRowOut] = []  # kernel benchmarks: executions compared
    notes: list[str] = []
    match: str = ""  # the name filter the rows passed (compare --match), "" for none


def _kernel_run_rows(comparison: Comparison) -> list[KernelRunRowOut]:
    out = []
    for row in comparison.kernel_runs:
        runs = [
            KernelRunsOut(
                label,
                r.name,
                r.calls,
                us(r.total_ns),
                us(r.mean_ns),
                us(r.median_ns),
                us(r.p10_ns),
                us(r.p90_ns),
                us(r.min_ns),
                us(r.max_ns),
                us(r.std_ns),
            )
            for label, r in zip(comparison.labels, row.runs, strict=False)
            if r is not None
        ]
        ratios = []
        for label, median, mean in zip(comparison.labels[1:], row.median_ratio[1:], row.mean_ratio[1:], strict=False):
            if median is None or mean is None:
                continue
            verdict = median.verdict
            ratios.append(
                RatioOut(
                    label,
                    round(median.ratio, 6),
                    round(median.low, 6),
                    round(median.high, 6),
                    round(mean.ratio, 6),
                    round(mean.low, 6),
                    round(mean.high, 6),
                    median.within_noise,
                    verdict,
                )
            )
        out.append(KernelRunRowOut(row.aligned_by, runs, ratios))
    return out


def figures_document(value: Figures | None) -> FiguresOut | None:
    if value is None:
        return None
    return FiguresOut(
        value.calls,
        us(value.self_cpu_ns),
        us(value.cpu_total_ns),
        us(value.self_device_ns),
        us(value.device_total_ns),
        us(value.dispatch_ns),
    )


def _row_document(comparison: Comparison, row: CompareRow) -> CompareRowOut:
    values = row.metric(comparison.primary)
    base = values[0]
    labels = comparison.labels
    return CompareRowOut(
        key=row.key,
        kind=row.kind,
        values={label: figures_document(v) for label, v in zip(labels, row.values)},
        delta_us={label: us(v - base) for label, v in zip(labels, values)},
        ratio={label: (round(v / base, 4) if base else None) for label, v in zip(labels, values)},
        present_in=[label for label, present in zip(labels, row.present) if present],
        detail=dict(zip(labels, row.detail)) if row.detail else None,
    )


def compare_document(comparison: Comparison, limit: int = 0, match: str = "") -> CompareOut:
    """``limit`` (> 0) caps every section; ``match``: the filter ``comparison`` was
    narrowed by (``compare.matching``), said in the document."""

    def cap(rows: list[CompareRow]) -> list[CompareRowOut]:
        return [_row_document(comparison, r) for r in (rows[:limit] if limit > 0 else rows)]

    return CompareOut(
        variants=comparison.labels,
        baseline=comparison.labels[0],
        metric=comparison.primary.replace("_ns", "_us"),
        regions=cap(comparison.regions),
        kernels=cap(comparison.kernels),
        ops=cap(comparison.rows),
        diagnosis={
            label: DiagnosisRowOut(
                d.device_idle_pct,
                d.host_bound_steps,
                d.steps,
                d.dispatches_per_step,
                d.top_finding,
                None if d.median_step_ns is None else us(d.median_step_ns),
                _step_ratio_document(d.step_vs_baseline),
            )
            for label, d in zip(comparison.labels, comparison.diagnosis)
        },
        kernel_runs=_kernel_run_rows(comparison),
        notes=comparison.notes,
        match=match,
    )


def encode(document: msgspec.Struct) -> str:
    """The document as indented JSON text (what the CLI writes), with every character
    that could act on a terminal escaped (``json_safe``: lossless)."""
    return encode_bytes(document).decode()


def encode_bytes(document: msgspec.Struct) -> bytes:
    """``encode`` as UTF-8 bytes.  A large document (a ``ranks`` answer over many ranks
    is ~100 MB) is never copied into a str when it is plain ASCII without DEL, which is
    all ``json_safe`` could change: the encoder escapes the C0 controls itself."""
    return _safe_bytes(msgspec.json.format(msgspec.json.encode(document), indent=2))


def _safe_bytes(data: bytes) -> bytes:
    if data.isascii() and b"\x7f" not in data:
        return data
    return json_safe(data.decode()).encode()


def _indented(data: bytes, spaces: int) -> bytes:
    """Every line but the first moved right (the first follows a key or a bracket)."""
    return data.replace(b"\n", b"\n" + b" " * spaces)


def encode_chunks(document: msgspec.Struct) -> Iterator[bytes]:
    """``encode_bytes`` in pieces, each top-level list one element at a time, so a large
    answer is never held as one buffer twice over; joined, the pieces are exactly
    ``encode_bytes(document)``."""
    if document.__struct_config__.omit_defaults or document.__struct_config__.array_like:
        yield encode_bytes(document)  # its layout is not one key per field
        return
    fields = msgspec.structs.fields(document)
    yield b"{\n"
    for n, field in enumerate(fields):
        value = getattr(document, field.name)
        key = b"  " + msgspec.json.encode(field.encode_name) + b": "
        after = b",\n" if n + 1 < len(fields) else b"\n"
        if isinstance(value, list) and value:
            yield key + b"[\n"
            for k, item in enumerate(value):
                piece = _safe_bytes(msgspec.json.format(msgspec.json.encode(item), indent=2))
                yield b"    " + _indented(piece, 4) + (b",\n" if k + 1 < len(value) else b"\n")
            yield b"  ]" + after
        else:
            yield key + _indented(_safe_bytes(msgspec.json.format(msgspec.json.encode(value), indent=2)), 2) + after
    yield b"}"


# -- trnscope ranks -----------------------------------------------------------------


class RankStepOut(msgspec.Struct):
    step: int  # N of ProfilerStep#N; -1: the whole trace (it has no steps)
    wall_us: float
    compute_us: float  # device busy (or host busy without a device), collectives excluded
    comm_us: float  # union of the collectives' executions
    wait_us: float  # summed over the step's collectives: latest arrival − own arrival
    overlap_pct: float  # share of comm that compute overlaps (HTA's definition)


class RankOut(msgspec.Struct):
    rank: int
    source: str
    label: str
    compute: str  # "device" or "host": what compute_us counts
    steps: list[RankStepOut]
    wait_us: float  # over all steps
    last_arrivals: int  # collectives this rank arrived last at (of those with several ranks)
    warnings: list[str] = []


class CollectiveOut(msgspec.Struct):
    id: int  # position in this list (by first arrival); findings point here
    name: str  # all_reduce, all_gather, …
    group: str  # process group ("" when the traces do not say)
    step: int
    index: int  # its position among the group's collectives in that step
    bytes: int  # message size (NCCL's: the larger of input and output); -1 unknown
    ranks: list[int]  # the ranks that took part, ascending; the lists below follow it
    arrival_us: list[float]  # per rank: when its call started, from the job's first event
    wait_us: list[float]  # per rank: latest arrival − own arrival
    duration_us: list[float]  # per rank: its execution (the call without one)
    end_us: list[float]  # per rank: when the collective ended there (call or execution)
    start_skew_us: float
    end_skew_us: float
    latency_us: float  # the shortest duration: the others include waiting
    last_rank: int
    lateness_us: float  # the last rank's arrival − the median arrival of the others
    algo_bw_gbps: float  # bytes ÷ latency (0 when unknown)
    bus_bw_gbps: float  # × NCCL's factor for the collective and group size
    matched_by: str  # "comms id", "group + seq" or "order in step"
    problems: list[str] = []  # disagreements between ranks (name, sizes, dtype, group size)


class RankFindingOut(msgspec.Struct):
    kind: str  # straggler | imbalance | slow_collective | low_overlap
    severity: str  # "high" | "medium" | "low"
    message: str
    rank: int  # -1 when it is about no one rank
    step: int  # -1 when it is about no one step
    collective: int  # CollectiveOut.id, -1
    evidence_us: float  # the time it accounts for (for straggler: what the other ranks lost)
    # straggler: what its delay went on to cost in the step of ``step``, through the ranks
    # it kept waiting (``ranks._carried``): the collectives and the others' wait there
    onward_collectives: int = 0
    onward_us: float = 0.0
    # straggler: every step it held the others back in (``step`` is the worst), in order
    late_steps: list[int] = []


class RanksOut(msgspec.Struct):
    """``trnscope ranks --format json``."""

    world_size: int
    ranks: list[RankOut]
    collectives: list[CollectiveOut]
    findings: list[RankFindingOut]
    warnings: list[str]
    noise_floor_us: float  # lateness below this is scheduling noise on these traces
    # the process groups the ranks are in, name → members (distributedInfo.pg_config):
    # what a collective's ``group`` names
    process_groups: dict[str, list[int]] = {}
    schema_version: int = SCHEMA_VERSION
