"""Number formatting shared by the CLI and the TUI."""

from __future__ import annotations

import math


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


def fmt_percent(part: float, whole: float) -> str:
    if whole == 0:
        return "NaN"
    return f"{100.0 * part / whole:.2f}%"


def fmt_ratio(new: float, old: float) -> str:
    if old == 0:
        return "new" if new else ""
    if new == 0:
        return "gone"
    return f"{new / old:.2f}x"


def us(ns: float | int) -> float:
    """ns → µs rounded to the nanosecond, for JSON output."""
    value = float(ns) / 1000.0
    return round(value, 3) if math.isfinite(value) else 0.0
