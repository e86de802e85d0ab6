"""Number formatting shared by the CLI and the TUI."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the annotation only: the formatters here need no NumPy
    import numpy as np


def fmt_time_ns(ns: float | int, *, blank_zero: bool = False) -> str:
    """PyTorch's table style: ``123.456us`` below a millisecond, then ms, then s."""
    if blank_zero and ns == 0:
        return ""
    us = float(ns) / 1000.0
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3f}s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def fmt_time_short(ns: float | int) -> str:
    """Compact form for narrow columns: ``12.3us``, ``4.56ms``, ``1.20s``."""
    us = float(ns) / 1000.0
    if abs(us) >= 1e6:
        return f"{us / 1e6:.2f}s"
    if abs(us) >= 1e4:
        return f"{us / 1e3:.1f}ms"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.2f}ms"
    if abs(us) >= 100:
        return f"{us:.0f}us"
    return f"{us:.1f}us"


def fit_time(ns: float | int, width: int) -> str:
    """The most precise of ``123.456us`` → ``123.5us`` → ``123us`` → ms → s forms that
    fits ``width`` cells: a number is never cut, it loses precision instead."""
    value = float(ns)
    us_ = value / 1000.0
    forms = []
    if abs(us_) < 1e3:
        forms += [f"{us_:.3f}us", f"{us_:.1f}us", f"{us_:.0f}us"]
    if abs(us_) < 1e6:
        ms = us_ / 1e3
        forms += [f"{ms:.3f}ms", f"{ms:.2f}ms", f"{ms:.1f}ms", f"{ms:.0f}ms"]
    seconds = us_ / 1e6
    forms += [f"{seconds:.3f}s", f"{seconds:.2f}s", f"{seconds:.1f}s", f"{seconds:.0f}s"]
    for form in forms:
        if len(form) <= width:
            return form
    return min(forms, key=len)


def fit_time_short(ns: float | int, width: int) -> str:
    """``fmt_time_short`` where it fits ``width``, else the most precise form that does."""
    short = fmt_time_short(ns)
    return short if len(short) <= width else fit_time(ns, width)


def fit_count(count: int, width: int) -> str:
    """``1,234,567`` → ``1234567`` → ``1.23M`` → ``1M``: whichever fits ``width``."""
    forms = [f"{count:,}", f"{count}"]
    for scale, suffix in ((1e3, "k"), (1e6, "M"), (1e9, "G")):
        if abs(count) >= scale:
            forms += [f"{count / scale:.2f}{suffix}", f"{count / scale:.1f}{suffix}", f"{count / scale:.0f}{suffix}"]
    for form in forms:
        if len(form) <= width:
            return form
    return min(forms, key=len)


def fit_si(value: float, width: int) -> str:
    """A count in SI steps, for FLOPs and FLOP/s: ``161``, ``20.7k``, ``647G``, ``1.28T``
    — the most precise form that fits ``width``."""
    forms: list[str] = []
    for scale, suffix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            forms += [f"{value / scale:.3g}{suffix}", f"{value / scale:.2g}{suffix}", f"{value / scale:.0f}{suffix}"]
            break
    else:
        forms.append(f"{value:.0f}")
    for form in forms:
        if len(form) <= width:
            return form
    return min(forms, key=len)


def fmt_bytes(count: int) -> str:
    """PyTorch's table style for memory: ``GB``, ``MB``, ``KB``, ``B`` (2-based), as
    ``key_averages().table()`` prints them since it stopped writing ``Kb`` and ``b``,
    which read as bits."""
    for limit, suffix in ((1 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "KB")):
        if abs(count) >= limit:
            return f"{count / limit:.2f} {suffix}"
    return f"{count} B"


def fmt_rate(gb_per_s: float) -> str:
    """A bandwidth in decimal units, three significant digits: ``1.04 GB/s``,
    ``389 MB/s``, ``154 KB/s``, ``2.9 TB/s`` (bytes per ns are GB/s).  A figure that
    rounds to 1,000 of a unit is told in the next (``:.3g`` wrote 999.7 GB/s as
    ``1e+03``), and past 999 TB/s in whole TB/s."""
    per_s = gb_per_s * 1e9
    for scale, suffix in ((1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "KB/s")):
        if abs(per_s) >= scale * 0.9995:  # at least 1 of this unit, in three digits
            value = per_s / scale
            return f"{value:,.0f} {suffix}" if abs(value) >= 999.5 else f"{value:.3g} {suffix}"
    return f"{per_s:.3g} B/s"


def fmt_size(count: int) -> str:
    """A message size in IEC units, at most 8 characters (``64.0 KiB``, ``1.25 MiB``,
    ``512 B``): unambiguous beside decimal bandwidths, where the op table's ``KB``
    (PyTorch's 2-based unit) could be read as 1,000 bytes.  Rounded to three digits; the JSON has the bytes."""
    for limit, suffix in ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if abs(count) >= limit:
            value = count / limit
            if abs(value) >= 1024:  # past the largest unit
                return f"{value:.0f} {suffix}"
            digits = 2 if abs(value) < 10 else 1 if abs(value) < 100 else 0
            return f"{value:.{digits}f} {suffix}"
    return f"{count} B"


def fit_bytes(count: int, width: int) -> str:
    """``fmt_bytes`` where it fits, else fewer decimals: never a cut number."""
    text = fmt_bytes(count)
    if len(text) <= width:
        return text
    value, unit = text.rsplit(" ", 1)
    for decimals in (1, 0):
        shorter = f"{float(value):.{decimals}f}{unit}"
        if len(shorter) <= width:
            return shorter
    return f"{float(value):.0f}{unit}"


def fmt_ratio(new: float, old: float) -> str:
    """``new`` ÷ ``old`` as the comparison prints it: two decimals (``1.76x``), and under
    0.1 two significant digits (a 2,000-fold drop read "0.00x", as if to nothing:
    ``0.0005x``)."""
    if old == 0:
        return "new" if new else ""
    if new == 0:
        return "gone"
    return f"{fmt_ratio_value(new / old)}x"


def fmt_ratio_value(ratio: float) -> str:
    """A ratio as ``fmt_ratio`` writes it, without the ``x``: two decimals, and under
    0.1 two significant digits."""
    if ratio == 0 or abs(ratio) >= 0.1 or not math.isfinite(ratio):
        return f"{ratio:.2f}"
    return f"{ratio:.{1 - math.floor(math.log10(abs(ratio)))}f}"


def fit_ratio(new: float, old: float, width: int) -> str:
    """``fmt_ratio`` in ``width`` cells: fewer decimals where it does not fit
    (``123.45x`` → ``123.5x`` → ``123x``, ``0.00050x`` → ``0.0005x``), SI steps past a
    hundred thousand (``1.2Mx``); never cut."""
    text = fmt_ratio(new, old)
    if len(text) <= width or text in ("new", "gone", ""):
        return text
    ratio = new / old
    if abs(ratio) >= 1e5:
        return fit_si(ratio, width - 1) + "x"
    if abs(ratio) >= 0.1:
        forms = [f"{ratio:.{d}f}x" for d in (1, 0)]
    else:  # one significant digit
        forms = [f"{ratio:.{-math.floor(math.log10(abs(ratio)))}f}x"]
    return next((form for form in forms if len(form) <= width), forms[-1])


def fmt_share(part: float, whole: float, decimals: int = 0) -> str:
    """``part`` of ``whole`` in percent with ``decimals`` decimals, but never "0%" for a
    part that is not nothing nor "100%" for one short of the whole: then as many
    decimals as tell it apart, up to two (a GPU busy 28.8 µs of 57.8 ms read "idle
    100%")."""
    if whole <= 0:
        return "—"
    pct = 100.0 * part / whole
    for places in range(min(decimals, 2), 3):
        text = f"{pct:.{places}f}"
        if (float(text) != 0 or part == 0) and (float(text) != 100 or part == whole):
            return text + "%"
    return "<0.01%" if pct < 50 else ">99.99%"


def us(ns: float | int) -> float:
    """ns → µs rounded to the nanosecond, for JSON output."""
    value = float(ns) / 1000.0
    return round(value, 3) if math.isfinite(value) else 0.0


def us_of_ns(ns: np.ndarray) -> list[float]:
    """``us`` of each whole number of ns, in one array pass: a whole ns count divided by
    1000 is already the double nearest its 3-decimal µs value, so rounding it again to
    three decimals changes nothing (tested against ``us``)."""
    return (ns.astype("int64", copy=False) / 1000.0).tolist()
