"""What a comparison of variants is: plain structs, no computation (see ``compare``).

Apart from ``compare`` so that the JSON contracts can name them without importing the
comparison code, which itself calls ``diagnose``.
"""

from __future__ import annotations

import msgspec


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
    """Which variant is best and why, in three numbers (see ``diagnose``)."""

    device_idle_pct: float  # idle share of the devices' spans (all devices together)
    host_bound_steps: int
    steps: int
    dispatches_per_step: float  # runtime calls that launched device work, per step
    top_finding: str = ""  # the kind of the finding that accounts for the most time


class Comparison(msgspec.Struct):
    labels: list[str]
    rows: list[CompareRow]
    regions: list[CompareRow]
    kernels: list[CompareRow]
    primary: str  # the metric rows are sorted by
    device_label: str
    synthetic: list[bool]
    diagnosis: list[VariantDiagnosis] = []

    def delta(self, row: CompareRow, metric: str | None = None) -> list[int]:
        values = row.metric(metric or self.primary)
        return [v - values[0] for v in values]
