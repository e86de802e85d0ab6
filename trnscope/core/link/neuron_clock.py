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
2. **duration matching** — the profile's own executions (``ExecutionInfo``) are
   matched, in order, to the core's ``nc_exec_running`` executions by duration; one
   clock offset is then chosen that keeps every matched execution inside it;
3. **activity matching** — without execution boundaries, the one clock offset that
   puts the most of the profile's activity inside the core's executions (idle time
   inside an execution makes gaps an unreliable boundary).

The result is, per host execution, a window ``[start, end)`` in the profile's time base
and the host time of its start; nothing else in trnscope needs to know the method.
"""

from __future__ import annotations

import msgspec
import numpy as np

from trnscope.core.base.arrays import sorted_unique
from trnscope.core.formats.neuron.device import DeviceProfile
from trnscope.core.formats.neuron.tolerant import NONE

_INSIDE_ENOUGH = 0.5  # share of instructions inside execution windows that proves a time base


class Placement(msgspec.Struct):
    method: str  # "sync point" | "device timestamps" | "ExecutionInfo durations" | "activity matched to executions" | "unplaced"
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
        return _match_durations(
            (profile.exec_start, profile.exec_end), candidates, host_start, host_end, "ExecutionInfo durations"
        )
    return _match_activity(profile, candidates, host_start, host_end)


def _profile_points(profile: DeviceProfile) -> np.ndarray:
    inst = profile.instructions
    return np.concatenate([inst.start, profile.dma_start, profile.cc_start]).astype(np.int64)


def _profile_intervals(profile: DeviceProfile) -> tuple[np.ndarray, np.ndarray]:
    inst = profile.instructions
    start = np.concatenate([inst.start, profile.dma_start, profile.cc_start]).astype(np.int64)
    end = start + np.concatenate([inst.duration, profile.dma_duration, profile.cc_duration]).astype(np.int64)
    return start, end


def _match_activity(
    profile: DeviceProfile, candidates: np.ndarray, host_start: np.ndarray, host_end: np.ndarray
) -> Placement:
    """No execution boundaries in the profile: choose the clock offset that puts the
    most of its activity inside the core's executions.  Candidate offsets put the
    profile's first activity at each execution's start (device activity starts within
    a microsecond or so of it); the best is then moved as little as needed to keep
    every matched execution's activity inside it."""
    start, end = _profile_intervals(profile)
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    execs = candidates[np.argsort(host_start[candidates], kind="stable")]
    hs, he = host_start[execs], host_end[execs]
    step = max(start.size // 20_000, 1)  # score on a sample: O(executions × sample)
    sample = start[::step]
    best_offset, best_inside = 0, -1
    for k in range(execs.size):
        offset = int(hs[k] - start[0])
        at = np.searchsorted(hs, sample + offset, side="right") - 1
        inside = int(((at >= 0) & (sample + offset < he[np.maximum(at, 0)])).sum())
        if inside > best_inside:
            best_offset, best_inside = offset, inside
    # activity just outside an execution (a DMA that begins before the first
    # instruction used as the anchor) belongs to the nearest one within half the
    # shortest idle gap; the offset is moved so that every execution holds its own
    idle = hs[1:] - he[:-1]
    tolerance = int(idle[idle > 0].min()) // 2 if (idle > 0).any() else 0
    offset, low, high = best_offset, -(2**62), 2**62
    for _ in range(2):
        owner = _nearest_window(start + offset, hs, he, tolerance)
        low, high = -(2**62), 2**62
        for j in np.unique(owner[owner >= 0]).tolist():
            mine = owner == j
            low = max(low, int(hs[j] - start[mine].min()))
            high = min(high, int(he[j] - end[mine].max()))
        offset = min(max(offset, low), high) if low <= high else offset
    at = np.searchsorted(hs, start + offset, side="right") - 1
    inside = (at >= 0) & (start + offset < he[np.maximum(at, 0)])
    share = float(inside.mean()) if inside.size else 0.0
    matched = sorted_unique(at[inside])
    detail = f"{matched.size} of {execs.size} executions hold its activity, {100 * share:.1f}% of it inside them" + (
        "" if low <= high else "; no single clock offset fits every execution"
    )
    chosen = execs[matched]
    return Placement(
        "activity matched to executions",
        chosen,
        hs[matched] - offset,
        he[matched] - offset,
        matched=int(matched.size),
        detail=detail,
    )


def _nearest_window(points: np.ndarray, hs: np.ndarray, he: np.ndarray, tolerance: int) -> np.ndarray:
    """Index of the window [hs, he) each point is in, or is nearest to within
    ``tolerance``; -1 otherwise."""
    after = np.searchsorted(hs, points, side="right")
    before = after - 1
    gap_before = np.where(before >= 0, points - he[np.maximum(before, 0)] + 1, np.iinfo(np.int64).max)
    gap_before = np.where((before >= 0) & (points < he[np.maximum(before, 0)]), 0, gap_before)
    gap_after = np.where(after < hs.size, hs[np.minimum(after, hs.size - 1)] - points, np.iinfo(np.int64).max)
    owner = np.where(gap_before <= gap_after, before, after)
    distance = np.minimum(gap_before, gap_after)
    return np.where(distance <= tolerance, owner, -1)


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
    detail = f"{length} of {m} executions matched, durations within {100 * error:.1f}% (median)" + (
        "" if low <= high else "; no single clock offset fits every execution"
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
