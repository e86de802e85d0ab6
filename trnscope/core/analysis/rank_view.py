"""Text pictures of a ``RanksOut``: the ranks × steps heat map and one collective's
lanes (one per rank on a shared time axis), so the late rank is seen, not read.

Plain strings and style names only (no Rich): the TUI colours them, tests read them.
"""

from __future__ import annotations

import math

import msgspec
import numpy as np

from trnscope.core.analysis.contracts import CollectiveOut, RankOut, RanksOut
from trnscope.core.base.intervals import Union, coverage_grid
from trnscope.core.base.text import plural

LEVELS = " ▁▂▃▄▅▆▇█"
LATE = "▲"  # the rank held the others back in this step (a straggler finding)
ARRIVAL = "▶"
WAITING = "░"
RUNNING = "█"


class HeatRow(msgspec.Struct):
    rank: int
    cells: str  # one glyph per column of steps
    late_steps: list[int]  # positions in ``cells`` that are LATE


def what_was_read(doc: RanksOut) -> tuple[str, str]:
    """The ranks read ("4 ranks", "3 of 8 ranks") and the collectives matched across
    them ("12 collectives matched by Comms Id", "no collectives matched"): the first
    words of the CLI's headline and of the Ranks pane."""
    given = len(doc.ranks)
    world = plural(given, "rank") if given == doc.world_size else f"{given} of {doc.world_size} ranks"
    if not doc.collectives:
        return world, "no collectives matched"
    groups = len({c.group for c in doc.collectives})
    within = f" in {groups:,} process groups" if groups > 1 else ""
    return world, f"{len(doc.collectives):,} collectives{within} matched by {doc.collectives[0].matched_by}"


def heat_steps(doc: RanksOut, columns: int) -> list[list[int]]:
    """The steps each heat-map column covers: one step a column while they fit, else
    consecutive steps binned together (the worst of a bin is shown)."""
    steps = sorted({s.step for r in doc.ranks for s in r.steps})
    if not steps or columns <= 0:
        return []
    if len(steps) <= columns:
        return [[s] for s in steps]
    bins = np.array_split(np.array(steps), columns)
    return [b.tolist() for b in bins if b.size]


def heat_map(doc: RanksOut, columns: int) -> tuple[list[HeatRow], list[list[int]]]:
    """Per rank, a glyph per column: the time it waited in that step's collectives, on
    one scale for the whole job (▁ little … █ the most any rank waited in any step), so
    a step where everyone waited stands out and the one rank that did not — the one
    they waited for — is marked ▲ (a straggler finding)."""
    bins = heat_steps(doc, columns)
    late = held_back(doc)
    wait = {(r.rank, s.step): s.wait_us for r in doc.ranks for s in r.steps}
    top = max(wait.values(), default=0.0)
    rows = []
    for r in doc.ranks:
        cells = []
        late_at = []
        for position, b in enumerate(bins):
            if any((r.rank, s) in late for s in b):
                cells.append(LATE)
                late_at.append(position)
                continue
            values = [wait[(r.rank, s)] for s in b if (r.rank, s) in wait]
            cells.append(LEVELS[_level(max(values), top)] if values else " ")
        rows.append(HeatRow(r.rank, "".join(cells), late_at))
    return rows, bins


def held_back(doc: RanksOut) -> set[tuple[int, int]]:
    """(rank, step) for every step a straggler finding's rank held the others back in:
    its worst and the others it counts ("late in N steps")."""
    return {(f.rank, step) for f in doc.findings if f.kind == "straggler" for step in (f.late_steps or [f.step])}


def _level(value: float, top: float) -> int:
    if top <= 0:
        return 1
    return max(1, min(len(LEVELS) - 1, math.ceil((len(LEVELS) - 1) * value / top)))


def lateness_order(ranks: list[RankOut], doc: RanksOut) -> list[int]:
    """Positions of ``ranks`` with the ones that held the others back first: by the
    time the others lost to them (straggler evidence), then by how often they arrived
    last, then by the least wait (a late rank waits least)."""
    lost: dict[int, float] = {}
    for f in doc.findings:
        if f.kind == "straggler":
            lost[f.rank] = lost.get(f.rank, 0.0) + f.evidence_us
    return sorted(
        range(len(ranks)), key=lambda i: (-lost.get(ranks[i].rank, 0.0), -ranks[i].last_arrivals, ranks[i].wait_us)
    )


class Lane(msgspec.Struct):
    rank: int
    text: str
    late: bool  # the last to arrive


def collective_lanes(c: CollectiveOut, width: int) -> tuple[list[Lane], float, float]:
    """One lane per rank over [first arrival, last end] (plus a margin): ``▶`` its
    arrival, ``░`` called but not yet executing, ``█`` its execution (which, on every
    rank but the last, includes waiting for the last).  Returns the lanes and the
    window in µs from the job's first event."""
    width = max(width, 10)
    arrival = np.array(c.arrival_us, dtype=np.float64)
    end = np.array(c.end_us, dtype=np.float64)
    start_exec = np.maximum(end - np.array(c.duration_us, dtype=np.float64), arrival)
    lo, hi = float(arrival.min()), float(end.max())
    margin = max(hi - lo, 1e-3) * 0.03
    lo, hi = lo - margin, hi + margin
    edges = np.linspace(lo * 1000, hi * 1000, width + 1).astype(np.int64)
    ns = (arrival * 1000).astype(np.int64), (start_exec * 1000).astype(np.int64), (end * 1000).astype(np.int64)
    unions = []
    for k in range(len(c.ranks)):
        unions.append(Union(ns[0][k : k + 1], ns[1][k : k + 1]))  # called, not yet executing
        unions.append(Union(ns[1][k : k + 1], ns[2][k : k + 1]))  # executing
    grid = coverage_grid(unions, edges)
    at = np.clip(np.searchsorted(edges, ns[0], side="right") - 1, 0, width - 1)
    lanes = []
    for k, rank in enumerate(c.ranks):
        cells = np.where(grid[2 * k + 1] > 0, RUNNING, np.where(grid[2 * k] > 0, WAITING, " "))
        cells[int(at[k])] = ARRIVAL
        lanes.append(Lane(rank, "".join(cells.tolist()), rank == c.last_rank))
    return lanes, lo, hi


NOT_ONE_RUN = "the traces share no moment"  # the reducer's warning when the traces are other runs


def no_findings_text(doc: RanksOut) -> str:
    """What an empty list of findings means: nothing above the noise floor, or nothing
    compared, the traces being other runs."""
    if any(w.startswith(NOT_ONE_RUN) for w in doc.warnings):
        return "no findings that compare ranks: the traces share no moment (see warnings)"
    return "no rank held the others back (nothing above the noise floor)"
