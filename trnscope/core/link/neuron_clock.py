"""Place a device profile's instructions on the host clock.

Device profiles keep their own time base: real exports give instruction, DMA and
collective timestamps relative to the start of the device profile, and the device
clock is "not exactly synchronized" with the host (``neuron-evidence.md`` §4).  Each
profile is placed by the first method that applies:

1. **device clock** — the instructions already sit inside the executions'
   ``nc_start``/``nc_stop`` device timestamps (or do after adding the profile's
   ``first_hw_timestamp``): each execution's window is its device interval, and the
   execution (aligned by ``timestamp_sync_point`` where there is one) gives the host
   time;
2. **duration matching** — the profile's own executions (``ExecutionInfo``, else the
   instructions split at their idle gaps) are matched, in order, to the core's
   ``nc_exec_running`` executions by duration; one clock offset is then chosen that
   keeps every matched execution's instructions inside it.

The result is, per host execution, a window ``[start, end)`` in the profile's time base
and the host time of its start; nothing else in trnscope needs to know the method.
"""

from __future__ import annotations

import msgspec
import numpy as np

from trnscope.core.formats.neuron.device import DeviceProfile
from trnscope.core.formats.neuron.tolerant import NONE

_INSIDE_ENOUGH = 0.5  # share of instructions inside execution windows that proves a time base


class Placement(msgspec.Struct):
    method: str  # "sync point" | "device timestamps" | "ExecutionInfo durations" | "instruction gaps" | "unplaced"
    executions: np.ndarray  # host execution indices placed, ascending window start
    window_start: np.ndarray  # profile time base
    window_end: np.ndarray
    matched: int = 0
    median_duration_error: float = 0.0  # |profile − host| / host duration, over matched executions
    detail: str = ""


def _unplaced(detail: str) -> Placement:
    empty = np.empty(0, np.int64)
    return Placement("unplaced", empty, empty, empty, detail=detail)


def _inside_share(points: np.ndarray, start: np.ndarray, end: np.ndarray) -> float:
    if points.size == 0 or start.size == 0:
        return 0.0
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    at = np.searchsorted(s, points, side="right") - 1
    inside = (at >= 0) & (points < e[np.maximum(at, 0)])
    return float(inside.mean())


def place_profile(
    profile: DeviceProfile,
    candidates: np.ndarray,
    host_start: np.ndarray,
    host_end: np.ndarray,
    nc_start: np.ndarray,
    nc_stop: np.ndarray,
    synced: np.ndarray,
) -> Placement:
    """``candidates``: indices of the host executions this profile may cover (its core,
    its model), with their host interval, device interval (-1 unknown) and whether a
    sync point aligned them."""
    if candidates.size == 0:
        return _unplaced("no execution on this NeuronCore")
    points = _profile_points(profile)
    if points.size == 0:
        return _unplaced("the profile has no timestamps")
    known = (nc_start[candidates] != NONE) & (nc_stop[candidates] >= nc_start[candidates])
    if known.any():
        ks, ke = nc_start[candidates][known], nc_stop[candidates][known]
        for shift in (0, profile.first_hw_timestamp):
            if shift == NONE:
                continue
            if _inside_share(points + shift, ks, ke) >= _INSIDE_ENOUGH:
                chosen = candidates[known]
                order = np.argsort(ks, kind="stable")
                method = "sync point" if bool(synced[chosen].all()) else "device timestamps"
                return Placement(
                    method,
                    chosen[order],
                    ks[order] - shift,
                    ke[order] - shift,
                    matched=int(chosen.size),
                    detail="profile start + device clock" if shift else "device clock",
                )
    if profile.exec_start.size:
        windows = (profile.exec_start, profile.exec_end)
        method = "ExecutionInfo durations"
    else:
        windows = _split_at_gaps(profile, points, candidates, host_start, host_end)
        method = "instruction gaps"
    return _match_durations(windows, candidates, host_start, host_end, method)


def _profile_points(profile: DeviceProfile) -> np.ndarray:
    inst = profile.instructions
    return np.concatenate([inst.start, profile.dma_start, profile.cc_start]).astype(np.int64)


def _profile_intervals(profile: DeviceProfile) -> tuple[np.ndarray, np.ndarray]:
    inst = profile.instructions
    start = np.concatenate([inst.start, profile.dma_start, profile.cc_start]).astype(np.int64)
    end = start + np.concatenate([inst.duration, profile.dma_duration, profile.cc_duration]).astype(np.int64)
    return start, end


def _split_at_gaps(
    profile: DeviceProfile, points: np.ndarray, candidates: np.ndarray, host_start: np.ndarray, host_end: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The profile's executions, guessed: its activity split where the device was idle
    longer than half the shortest idle time between the core's host executions (at
    most one split fewer than there are executions)."""
    start, end = _profile_intervals(profile)
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    reached = np.maximum.accumulate(end)
    gaps = start[1:] - reached[:-1]
    hs, he = host_start[candidates], host_end[candidates]
    host_order = np.argsort(hs, kind="stable")
    idle = hs[host_order][1:] - he[host_order][:-1]
    most = max(candidates.size - 1, 0)
    positive = idle[idle > 0]
    if positive.size:
        cut = np.flatnonzero(gaps > positive.min() / 2)
        if cut.size > most:
            cut = np.sort(cut[np.argsort(-gaps[cut], kind="stable")[:most]])
    else:
        cut = np.sort(np.argsort(-gaps, kind="stable")[:most]) if gaps.size else np.empty(0, np.int64)
        cut = cut[gaps[cut] > 0]
    first = np.r_[0, cut + 1]
    last = np.r_[cut, start.size - 1]
    return start[first], reached[last]


def _match_durations(
    windows: tuple[np.ndarray, np.ndarray],
    candidates: np.ndarray,
    host_start: np.ndarray,
    host_end: np.ndarray,
    method: str,
) -> Placement:
    ps, pe = windows
    order = np.argsort(host_start[candidates], kind="stable")
    execs = candidates[order]
    hs, he = host_start[execs], host_end[execs]
    n, m = ps.size, execs.size
    if n == 0:
        return _unplaced("the profile has no executions")
    p_dur = np.maximum(pe - ps, 1).astype(np.float64)
    h_dur = np.maximum(he - hs, 1).astype(np.float64)
    best: tuple[float, int, int] | None = None  # (cost, profile offset, host offset)
    # slide the shorter sequence along the longer one; compare durations in log space
    for p_off, h_off in [(0, k) for k in range(m - n + 1)] + [(k, 0) for k in range(1, n - m + 1)]:
        length = min(n - p_off, m - h_off)
        if length <= 0:
            continue
        cost = float(np.mean(np.abs(np.log(p_dur[p_off : p_off + length] / h_dur[h_off : h_off + length]))))
        if best is None or cost < best[0] - 1e-12:
            best = (cost, p_off, h_off)
    assert best is not None
    _, p_off, h_off = best
    length = min(n - p_off, m - h_off)
    p_s, p_e = ps[p_off : p_off + length], pe[p_off : p_off + length]
    h_s, h_e = hs[h_off : h_off + length], he[h_off : h_off + length]
    chosen = execs[h_off : h_off + length]
    # host = profile + offset; every matched execution's activity must fit inside it
    low = int((h_s - p_s).max())
    high = int((h_e - p_e).min())
    offset = (low + high) // 2 if low <= high else int(np.median(h_s - p_s))
    error = float(np.median(np.abs((p_e - p_s) - (h_e - h_s)) / np.maximum(h_e - h_s, 1)))
    detail = (
        f"{length} of {m} executions matched, durations within {100 * error:.1f}% (median)"
        + ("" if low <= high else "; no single clock offset fits every execution")
    )
    return Placement(
        method,
        chosen,
        h_s - offset,
        h_e - offset,
        matched=int(length),
        median_duration_error=error,
        detail=detail,
    )
