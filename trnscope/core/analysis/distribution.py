"""How a kernel's executions are spread: one written definition of each figure.

* **median, p10, p90**: percentiles of the durations with linear interpolation between
  the two nearest ranks (NumPy's default: position (n − 1)·q in the sorted durations).
* **std**: the sample standard deviation (n − 1 in the denominator); 0 for one call.
* **ratio of medians (or means) with a confidence interval**: B/A, and the 2.5th and
  97.5th percentiles of that ratio over ``BOOTSTRAP_ROUNDS`` bootstrap resamples of
  each variant's executions, drawn with a fixed seed (the same files always give the
  same interval).  A difference is *within noise* when the interval holds 1.
"""

from __future__ import annotations

import msgspec
import numpy as np

BOOTSTRAP_ROUNDS = 2000
BOOTSTRAP_SEED = 20261201
CONFIDENCE = 0.95


class Spread(msgspec.Struct):
    """The percentiles and deviation of each group (arrays aligned with the groups; NaN
    for a group without calls)."""

    median: np.ndarray  # float64 ns
    p10: np.ndarray
    p90: np.ndarray
    std: np.ndarray


def group_spread(values: np.ndarray, group: np.ndarray, groups: int) -> Spread:
    """Median, p10, p90 and std of ``values`` per group, in one sort."""
    values = np.asarray(values, dtype=np.float64)
    group = np.asarray(group, dtype=np.int64)
    order = np.lexsort((values, group))
    v, g = values[order], group[order]
    counts = np.bincount(g, minlength=groups)
    first = np.zeros(groups, dtype=np.int64)
    first[1:] = np.cumsum(counts)[:-1]

    def quantile(q: float) -> np.ndarray:
        position = (np.maximum(counts, 1) - 1) * q
        low = np.floor(position).astype(np.int64)
        high = np.minimum(low + 1, np.maximum(counts - 1, 0))
        frac = position - low
        lo_value = v[np.minimum(first + low, max(v.size - 1, 0))] if v.size else np.zeros(groups)
        hi_value = v[np.minimum(first + high, max(v.size - 1, 0))] if v.size else np.zeros(groups)
        out = lo_value + (hi_value - lo_value) * frac
        return np.where(counts > 0, out, np.nan)

    sums = np.bincount(g, weights=v, minlength=groups)
    mean = sums / np.maximum(counts, 1)
    squares = np.bincount(g, weights=(v - mean[g]) ** 2, minlength=groups) if v.size else np.zeros(groups)
    std = np.where(counts > 1, np.sqrt(squares / np.maximum(counts - 1, 1)), 0.0)
    return Spread(quantile(0.5), quantile(0.1), quantile(0.9), np.where(counts > 0, std, np.nan))


class RatioInterval(msgspec.Struct):
    ratio: float  # B / A of the statistic
    low: float
    high: float

    @property
    def within_noise(self) -> bool:
        return self.low <= 1.0 <= self.high

    @property
    def verdict(self) -> str:
        """ "within noise" where the interval holds 1, else "faster" or "slower";
        "no interval" where the baseline's resamples were all 0."""
        if self.low != self.low:
            return "no interval"
        return "within noise" if self.within_noise else "faster" if self.high < 1.0 else "slower"

    def text(self, width: int | None = None) -> str:
        """``×0.499 [0.492–0.506]``: the ratio and its interval in the same precision,
        three decimals, fewer where ``width`` is too narrow (the pane's column cut the
        interval to two while the ratio kept three)."""
        for decimals in (3, 2, 1, 0):
            shown = f"×{self.ratio:.{decimals}f} [{self.low:.{decimals}f}–{self.high:.{decimals}f}]"
            if width is None or len(shown) <= width:
                return shown
        return shown


def bootstrap_ratio(baseline: np.ndarray, other: np.ndarray, statistic: str = "median") -> RatioInterval:
    """``statistic(other) / statistic(baseline)`` and its bootstrap interval."""
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(other, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        return RatioInterval(float("nan"), float("nan"), float("nan"))
    reduce = np.median if statistic == "median" else np.mean
    if not reduce(a) or not np.isfinite(reduce(a)):  # nothing to divide by (steps of no time)
        return RatioInterval(float("nan"), float("nan"), float("nan"))
    point = float(reduce(b) / reduce(a))
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    resampled_a = reduce(a[rng.integers(0, a.size, size=(BOOTSTRAP_ROUNDS, a.size))], axis=1)
    resampled_b = reduce(b[rng.integers(0, b.size, size=(BOOTSTRAP_ROUNDS, b.size))], axis=1)
    ratios = resampled_b / np.where(resampled_a == 0, np.nan, resampled_a)
    tail = (1 - CONFIDENCE) / 2 * 100
    if np.isnan(ratios).all():  # every resample of the baseline was 0: no interval (and no warning)
        return RatioInterval(point, float("nan"), float("nan"))
    low, high = np.nanpercentile(ratios, [tail, 100 - tail])
    return RatioInterval(point, float(low), float(high))


def sparkline(values: np.ndarray, width: int) -> tuple[str, float, float]:
    """A histogram of ``values`` in ``width`` cells of block glyphs, and its range."""
    levels = " ▁▂▃▄▅▆▇█"
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0 or width <= 0:
        return "", 0.0, 0.0
    lo, hi = float(values.min()), float(values.max())
    if hi <= lo:
        hi = lo + 1.0
    counts, _ = np.histogram(values, bins=width, range=(lo, hi))
    top = max(int(counts.max()), 1)
    cells = [levels[0] if c == 0 else levels[max(1, int(np.ceil(8 * c / top)))] for c in counts.tolist()]
    return "".join(cells), lo, float(values.max())
