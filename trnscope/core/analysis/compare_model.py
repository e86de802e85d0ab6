"""What a comparison of variants is: plain structs, no computation (see ``compare``).

Apart from ``compare`` so that the JSON contracts can name them without importing the
comparison code, which itself calls ``diagnose``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from trnscope.core.analysis.distribution import RatioInterval
from trnscope.core.base.units import fmt_ratio_value, fmt_share


class Figures(msgspec.Struct):
    calls: int = 0  # op calls; device launches in the per-region device view
    self_cpu_ns: int = 0
    cpu_total_ns: int = 0
    self_device_ns: int = 0
    device_total_ns: int = 0
    dispatch_ns: int = 0  # summed host dispatch: op start → its first own runtime call
    kernel_names: int = 0  # distinct device event names (per-region device view)


class CompareRow(msgspec.Struct):
    key: str
    kind: str  # op kind, or "region" / "kernels"
    values: list[Figures | None]  # one per variant; None: absent there
    detail: list[str] = []  # per variant: e.g. the kernels behind a region row

    @property
    def present(self) -> list[bool]:
        return [v is not None for v in self.values]

    def metric(self, name: str) -> list[int]:
        return [getattr(v, name) if v is not None else 0 for v in self.values]


class VariantDiagnosis(msgspec.Struct):
    """Which variant is best (its median step) and why, in a few numbers (see
    ``diagnose``)."""

    # idle share of the devices' spans (all devices together); None: no device work at
    # all (a CPU-only trace), where 0% would read as a device kept busy
    device_idle_pct: float | None
    host_bound_steps: int
    steps: int
    dispatches_per_step: float  # runtime calls that launched device work, per step
    top_finding: str = ""  # the kind of the finding that accounts for the most time
    # the median ProfilerStep's wall time (its annotation's span); None: no ProfilerStep
    median_step_ns: float | None = None
    # this variant's median step ÷ the baseline's, with the 95% bootstrap interval of
    # their steps (``distribution.bootstrap_ratio``); None for the baseline, and where
    # either variant has fewer than three steps (no spread to judge noise by)
    step_vs_baseline: RatioInterval | None = None


def idle_share_text(device_idle_pct: float | None) -> str:
    """A variant's device idle share as the comparison tables print it."""
    return "no device" if device_idle_pct is None else fmt_share(device_idle_pct, 100.0, 1)


def median_step_text(median_step_ns: float | None, fmt: Callable[[float], str]) -> str:
    """A variant's median step as the comparison tables print it (``fmt``: their time
    format); a trace without ProfilerStep has none to compare."""
    return "no steps" if median_step_ns is None else fmt(median_step_ns)


def step_ratio_text(interval: RatioInterval | None) -> str:
    """A variant's median step against the baseline's as the comparison tables print
    it, each number as ``fmt_ratio`` writes ratios: "×1.49 [1.19–2.17]",
    "×0.044 [0.018–1.02]"; "—" where there is none."""
    if interval is None or interval.ratio != interval.ratio:
        return "—"
    ratio, low, high = (fmt_ratio_value(x) for x in (interval.ratio, interval.low, interval.high))
    return f"×{ratio} [{low}–{high}]" if interval.low == interval.low else f"×{ratio}"


def step_verdict_text(interval: RatioInterval | None) -> str:
    """ "slower", "faster" or "within noise" (the interval holds 1); "—" where there is
    no interval."""
    if interval is None or interval.ratio != interval.ratio:
        return "—"
    return interval.verdict


def host_bound_text(diagnosis: VariantDiagnosis) -> str:
    """How many of a variant's steps were host-bound ("no steps" where diagnose found
    none: "0 of 0" read like a count)."""
    return f"{diagnosis.host_bound_steps:,} of {diagnosis.steps:,}" if diagnosis.steps else "no steps"


def launches_label(diagnoses: Sequence[VariantDiagnosis], per_step: str) -> str:
    """The launches row's label: ``per_step`` ("launches / step") where some variant
    has steps, else "launches" (a trace of NKI benchmark runs has none)."""
    return per_step if any(d.steps for d in diagnoses) else "launches"


def launches_text(diagnosis: VariantDiagnosis, diagnoses: Sequence[VariantDiagnosis]) -> str:
    """A variant's launches per step; without steps, its launches in the whole trace,
    said as such where another variant's figure is per step ("53 in all"; it read "53"
    per step of none)."""
    figure = per_step_text(diagnosis.dispatches_per_step)
    return f"{figure} in all" if not diagnosis.steps and any(d.steps for d in diagnoses) else figure


def diagnosis_rows(
    diagnoses: Sequence[VariantDiagnosis], fmt_time: Callable[[float], str], *, wide: bool
) -> list[tuple[str, list[str]]]:
    """The comparison's diagnosis as (label, one text per variant) rows, for the CLI
    (``wide``: the longer labels of a printed table) and the explorer (``fmt_time``:
    each one's time format)."""
    d = diagnoses
    return [
        ("median step", [median_step_text(x.median_step_ns, fmt_time) for x in d]),
        ("median step ÷ A", [step_ratio_text(x.step_vs_baseline) for x in d]),
        ("step time against A" if wide else "against A", [step_verdict_text(x.step_vs_baseline) for x in d]),
        ("device idle", [idle_share_text(x.device_idle_pct) for x in d]),
        ("host-bound steps", [host_bound_text(x) for x in d]),
        (
            launches_label(d, "device launches per step" if wide else "launches / step"),
            [launches_text(x, d) for x in d],
        ),
        ("largest finding", [x.top_finding or "—" for x in d]),
    ]


def per_step_text(launches_per_step: float) -> str:
    """A variant's launches per step as the comparison tables print it: grouped
    thousands, the two decimals it was rounded to where it has them ("1,575",
    "1,663.5"); ``:g`` printed 12,345.67 as "12345.7" and 1.5 million as "1.5e+06"."""
    return f"{launches_per_step:,.2f}".rstrip("0").rstrip(".")


class KernelRuns(msgspec.Struct):
    """One variant's executions of one kernel (ns)."""

    name: str
    calls: int
    total_ns: int
    mean_ns: float
    median_ns: float
    p10_ns: float
    p90_ns: float
    min_ns: int
    max_ns: int
    std_ns: float
    durations: list[int]  # in time order (what the bootstrap resamples)


class KernelRunRow(msgspec.Struct):
    """One aligned kernel across the variants (None: the variant has no match)."""

    runs: list[KernelRuns | None]
    median_ratio: list[RatioInterval | None]  # per variant against the baseline (None for it)
    mean_ratio: list[RatioInterval | None]
    aligned_by: str  # "align", "single", "name" or "position"

    @property
    def aligned_how(self) -> str:
        """``aligned_by`` in words, for text and screens (JSON keeps the code)."""
        return ALIGNED_HOW.get(self.aligned_by, self.aligned_by)


# How a row's kernels were put together, as a reader should see it.
ALIGNED_HOW = {
    "align": "aligned by --align",
    "single": "one kernel per variant",
    "name": "aligned by name",
    "position": "aligned by order of first execution",
}


class Comparison(msgspec.Struct):
    labels: list[str]
    rows: list[CompareRow]
    regions: list[CompareRow]
    kernels: list[CompareRow]
    primary: str  # the metric rows are sorted by
    device_label: str
    synthetic: list[bool]
    diagnosis: list[VariantDiagnosis] = []
    # kernel benchmarks: each aligned kernel's executions, distributions and ratios
    kernel_runs: list[KernelRunRow] = []
    notes: list[str] = []

    def delta(self, row: CompareRow, metric: str | None = None) -> list[int]:
        values = row.metric(metric or self.primary)
        return [v - values[0] for v in values]
