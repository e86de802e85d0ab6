"""Many ranks: match each collective across the ranks' summaries, measure who arrived
late and what it cost the others, and name the rank that held them back.

Input: one ``RankSummary`` per rank (``rank_summary``), built wherever the trace lies.
Nothing here reads a trace, so the parent of a process pool or a Dask client holds only
these summaries.  Output: the ``RanksOut`` contract.

**Matching** (``rank_matching``) uses the best key every rank's calls carry: ``Comms Id`` (when unique per
call on every rank); else the process group and its sequence number ``Seq``; else the
process group, the ProfilerStep and the call's position among that group's calls in the
step.  In the last case a rank whose list for a step is shorter (its profiling window
opened one collective later) is aligned by the names of its calls, from the end in the
first step it has and from the start elsewhere.

**Per collective**: arrival = the start of the call on each rank; start skew = latest −
earliest arrival; end skew the same for ends; latency = the shortest duration across
ranks (the others include waiting); algorithm bandwidth = bytes ÷ latency; bus
bandwidth = that × NCCL's factor (all-reduce 2(n−1)/n; all-gather, reduce-scatter,
all-to-all (n−1)/n; others 1); the last rank's lateness = its arrival − the median
arrival of the others; each rank's wait = latest arrival − own arrival.

**Findings** (``straggler``, ``imbalance``, ``slow_collective``, ``low_overlap``) are
judged against the spread of these traces themselves.  A rank's *blame* at a collective
is the lateness it caused itself: the smaller of its lateness and the extra time it
spent since its previous collective (a rank held up by a collective that ended late for
it is not the cause).  The noise floor is the largest of 1 ms (5 ms when compute is the
host's own: CPU-only jobs), six robust standard deviations (1.4826 × MAD) of every
rank's arrival against the others', and — for one rank — three times the 90th
percentile of the blame at collectives other ranks were last at; so a busy host's
ms-scale jitter is not a straggler and one late arrival among quiet ones is.  What a
straggler's delay cost further on in its step, through the ranks it kept waiting, is
``_carried``'s.  Step time rises on every rank when one is late, so no finding is
ever drawn from step time alone.
"""

from __future__ import annotations

import statistics
from collections import Counter

import msgspec
import numpy as np

from trnscope.core.analysis.collective_table import CollectiveTable
from trnscope.core.analysis.collectives import NO_STEP, CollectiveCall
from trnscope.core.analysis.contracts import (
    CollectiveOut,
    RankFindingOut,
    RankOut,
    RanksOut,
    RankStepOut,
)
from trnscope.core.analysis.rank_matching import BY_ORDER, Matched, group_ids, match_collectives
from trnscope.core.analysis.rank_summary import RankSummary
from trnscope.core.analysis.rank_view import NOT_ONE_RUN
from trnscope.core.base.arrays import medians_without_each
from trnscope.core.base.text import shorten
from trnscope.core.base.units import fmt_rate, fmt_share, fmt_time_ns, us

NOISE_FLOOR_NS = 1_000_000  # 1 ms: below this, lateness is a busy host's scheduling noise
# where compute is the host's own (CPU-only jobs: gloo), Python and the OS scheduler
# move every arrival by milliseconds; 5 ms is the least lateness that means anything
HOST_NOISE_FLOOR_NS = 5_000_000
NOISE_SIGMAS = 6.0
STANDS_OUT = 3.0  # a straggler's blame against the 90th percentile of the other ranks' blame
IMBALANCE_SHARE = 0.10  # compute longer than the step's median by this share …
IMBALANCE_STEPS = 2 / 3  # … in at least this share of the steps
SLOW_BANDWIDTH = 0.5  # bus bandwidth below this share of the same collective's median
LOW_OVERLAP_PCT = 30.0
LOW_OVERLAP_COMM_SHARE = 0.10
MAX_FINDINGS_PER_KIND = 8
FRAME_NAME_LIMIT = 120  # characters of a Python frame's name in a finding


class _Figures(msgspec.Struct):
    """One collective's figures in integer ns, before rounding.  The arrays are per
    member, by ascending rank (views into the reducer's columns)."""

    ranks: np.ndarray
    arrival: np.ndarray
    wait: np.ndarray
    duration: np.ndarray
    end: np.ndarray
    start_skew: int
    end_skew: int
    latency: int
    last_rank: int
    last_row: int  # the last rank's call, a row of ``Matched.calls``
    lateness: int
    own_lateness: int  # of the lateness, what the last rank spent itself since its previous collective
    bytes: int

    @property
    def blame(self) -> int:
        """The lateness the last rank caused itself: the smaller of its lateness and the
        extra time it spent since its previous collective against the others' median."""
        return min(self.lateness, self.own_lateness)


def bus_factor(name: str, ranks: int) -> float:
    if ranks <= 1:
        return 1.0
    if name == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if name in ("all_gather", "reduce_scatter", "all_to_all"):
        return (ranks - 1) / ranks
    return 1.0


def _unique(keys: list[object]) -> bool:
    return len(set(keys)) == len(keys)


def _median_excess(value: int, others: np.ndarray) -> int:
    """``value`` − the median of ``others``, exactly (the median of an even count is the
    mean of the middle two; the result is truncated towards zero, as ``int()`` does)."""
    ordered = np.sort(others)
    m = ordered.size
    twice = 2 * value - int(ordered[(m - 1) // 2]) - int(ordered[m // 2])
    half = abs(twice) // 2
    return half if twice >= 0 else -half


def _mode(values: np.ndarray) -> int:
    """The most common value; ties go to the one met first (as ``Counter.most_common``)."""
    _, first, counts = np.unique(values, return_index=True, return_counts=True)
    return int(values[first[counts == counts.max()].min()])


class _Columns(msgspec.Struct):
    """The matched calls' figures, one entry per member row (``Matched.rows`` order)."""

    rank: np.ndarray
    arrival: np.ndarray
    end: np.ndarray
    duration: np.ndarray
    spent: np.ndarray
    message_bytes: np.ndarray
    wait: np.ndarray


def _columns(matched: Matched) -> _Columns:
    calls, rows = matched.calls, matched.rows
    arrival = calls.ints("arrival_ns")[rows]
    sizes = np.diff(matched.bounds)
    latest = np.repeat(np.maximum.reduceat(arrival, matched.bounds[:-1]), sizes) if rows.size else arrival
    return _Columns(
        rank=matched.rank[rows],
        arrival=arrival,
        end=calls.end_ns()[rows],
        duration=np.maximum(calls.duration_ns()[rows], 0),
        spent=calls.ints("since_previous_ns")[rows],
        message_bytes=calls.message_bytes()[rows],
        wait=latest - arrival,
    )


def _figures(matched: Matched, columns: _Columns, instance: int) -> _Figures:
    lo, hi = int(matched.bounds[instance]), int(matched.bounds[instance + 1])
    arrival = columns.arrival[lo:hi]
    ends = columns.end[lo:hi]
    duration = columns.duration[lo:hi]
    last = int(np.argmax(arrival))
    latest = int(arrival[last])
    others = np.delete(arrival, last)
    lateness = _median_excess(latest, others) if others.size else 0
    spent = columns.spent[lo:hi]
    others_spent = np.delete(spent, last)
    if spent[last] >= 0 and others_spent.size and (others_spent >= 0).all():
        own = _median_excess(int(spent[last]), others_spent)
    else:
        own = lateness  # no previous collective to tell: all of it
    sizes = columns.message_bytes[lo:hi]
    sizes = sizes[sizes >= 0]
    return _Figures(
        ranks=columns.rank[lo:hi],
        arrival=arrival,
        wait=columns.wait[lo:hi],
        duration=duration,
        end=ends,
        start_skew=latest - int(arrival.min()),
        end_skew=int(ends.max()) - int(ends.min()),
        latency=int(duration.min()),
        last_rank=int(columns.rank[lo + last]),
        last_row=int(matched.rows[lo + last]),
        lateness=lateness,
        own_lateness=own,
        bytes=_mode(sizes) if sizes.size else -1,
    )


_PROBLEM_FIELDS = (
    ("name", "name"),
    ("input elements", "in_nelems"),
    ("output elements", "out_nelems"),
    ("dtype", "dtype"),
    ("group size", "group_size"),
)


def _compared(calls: CollectiveTable, field: str) -> tuple[np.ndarray, np.ndarray]:
    """(values, which calls count) for one of the fields ranks must agree on: sizes of
    all-to-all vary by rank, and unknown values (-1, "") are no disagreement."""
    if field in ("name", "dtype"):
        codes = calls.code(field)
        empty = calls.strings.index("") if "" in calls.strings else -1
        return codes.astype(np.int64), codes != empty if field == "dtype" else np.ones(codes.size, dtype=bool)
    values = calls.ints(field)
    counted = values >= 0
    if field != "group_size":
        counted &= calls.code("name") != (calls.strings.index("all_to_all") if "all_to_all" in calls.strings else -1)
    return values, counted


class _Agreement:
    """The compared fields of every member (``Matched.rows`` order), read once: whether
    each collective's ranks disagree, and in what, for the few that do."""

    def __init__(self, matched: Matched) -> None:
        self._matched = matched
        self._fields: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for _, field in _PROBLEM_FIELDS:
            values, counted = _compared(matched.calls, field)
            self._fields[field] = (values[matched.rows], counted[matched.rows])

    def disagreeing(self) -> np.ndarray:
        """Per instance: whether its ranks disagree on any compared field."""
        matched = self._matched
        out = np.zeros(len(matched), dtype=bool)
        if matched.rows.size == 0:
            return out
        starts = matched.bounds[:-1]
        big = np.iinfo(np.int64).max
        for values, counted in self._fields.values():
            highest = np.maximum.reduceat(np.where(counted, values, -big), starts)
            lowest = np.minimum.reduceat(np.where(counted, values, big), starts)
            out |= (highest != -big) & (highest != lowest)
        return out

    def problems(self, instance: int) -> list[str]:
        """Where the ranks disagree about what this collective is."""
        matched = self._matched
        lo, hi = int(matched.bounds[instance]), int(matched.bounds[instance + 1])
        ranks = matched.rank[matched.rows[lo:hi]].tolist()
        problems = []
        for label, field in _PROBLEM_FIELDS:
            values, counted = self._fields[field]
            mine, known = values[lo:hi], counted[lo:hi]
            if np.unique(mine[known]).size < 2:
                continue
            # the odd ones out first: against 255 ranks that agree, the one that does not
            common = _mode(mine[known])
            odd = [(r, v) for r, v, k in zip(ranks, mine.tolist(), known.tolist(), strict=True) if k and v != common]
            agreeing = int(known.sum()) - len(odd)

            def shown(value: int, texts: bool = field in ("name", "dtype")) -> str:
                return matched.calls.strings[value] if texts else str(value)

            if agreeing <= len(odd):  # no majority: every rank's value, in rank order
                odd = list(zip(ranks, mine.tolist(), strict=True))
            listed = ", ".join(f"rank {r}: {shown(v)}" for r, v in odd[:4]) + (" …" if len(odd) > 4 else "")
            if agreeing > len(odd):
                listed += f"; {agreeing} other rank{'' if agreeing == 1 else 's'}: {shown(common)}"
            problems.append(f"{label} differs ({listed})")
        return problems


def _bandwidths(name: str, figures: _Figures, group_size: int) -> tuple[float, float]:
    if figures.bytes <= 0 or figures.latency <= 0:
        return 0.0, 0.0
    algo = figures.bytes / figures.latency  # bytes per ns = GB/s
    n = group_size if group_size > 0 else len(figures.ranks)
    return round(algo, 9), round(algo * bus_factor(name, n), 9)  # GB/s to the byte per second


def arrival_deviations(matched: Matched, columns: _Columns) -> list[int]:
    """For every rank at every collective of three ranks or more: how much later than
    the others' median it arrived, counting only what it spent itself since its previous
    collective (the same measure as a straggler's blame).  Their spread is the jitter of
    these hosts."""
    out: list[int] = []
    for lo, hi in zip(matched.bounds[:-1].tolist(), matched.bounds[1:].tolist(), strict=True):
        if hi - lo < 3:
            continue
        arrival = columns.arrival[lo:hi]
        relative = (arrival - arrival.min()).astype(np.float64)  # exact in float64
        late = relative - medians_without_each(relative)
        spent = columns.spent[lo:hi].astype(np.float64)
        if (spent >= 0).all():
            late = np.minimum(late, spent - medians_without_each(spent))
        out.extend(late.astype(np.int64).tolist())
    return out


def noise_floor(deviations: list[int], host_compute: bool = False) -> int:
    """Lateness below this is noise on these traces: 1 ms, or six robust standard
    deviations (1.4826 × MAD) of every rank's arrival against the others' when the
    hosts are noisier (a busy host's scheduling jitter is milliseconds)."""
    least = HOST_NOISE_FLOOR_NS if host_compute else NOISE_FLOOR_NS
    if len(deviations) < 3:
        return least
    values = np.array(deviations, dtype=np.float64)
    median = float(np.median(values))
    mad = float(np.median(np.abs(values - median)))
    return int(max(least, median + NOISE_SIGMAS * 1.4826 * mad))


def _resolve_ranks(summaries: list[RankSummary], warnings: list[str]) -> list[int]:
    """The rank of each summary: the trace's own (distributedInfo), else the one the
    opening layer read from the file name, else the order — whichever is distinct."""
    ranks = [s.rank for s in summaries]
    if all(r >= 0 for r in ranks) and _unique(list(ranks)):
        return ranks
    if any(r >= 0 for r in ranks):
        warnings.append("the traces' ranks are missing or repeated; ranks are numbered in file order")
    return list(range(len(summaries)))


def only_step(summaries: list[RankSummary], step: int) -> list[RankSummary]:
    """The summaries limited to ProfilerStep#``step`` (its figures and collectives)."""
    out = []
    for summary in summaries:
        steps = summary.steps.only(step)
        table = summary.collectives
        calls = table.take(np.flatnonzero(table.ints("step") == step))
        out.append(msgspec.structs.replace(summary, steps=steps, collectives=calls))
    if not any(s.steps for s in out):
        present = sorted({s.step for r in summaries for s in r.steps if s.step != NO_STEP})
        listed = ", ".join(str(n) for n in present[:12]) + (" …" if len(present) > 12 else "")
        raise ValueError(f"no ProfilerStep#{step} on any rank" + (f" (steps: {listed})" if listed else " (no steps)"))
    return out


def reduce_ranks(summaries: list[RankSummary], step: int | None = None) -> RanksOut:
    """The ``ranks`` document of these per-rank summaries (any order); with ``step``,
    of ProfilerStep#``step`` only."""
    if step is not None:
        summaries = only_step(summaries, step)
    warnings: list[str] = []
    ranks = _resolve_ranks(summaries, warnings)
    order = sorted(range(len(summaries)), key=lambda p: ranks[p])
    summaries = [summaries[p] for p in order]
    ranks = [ranks[p] for p in order]
    for rank, summary in zip(ranks, summaries, strict=True):
        warnings.extend(f"rank {rank}: {w}" for w in summary.warnings)
    if not all(s.clock_is_unix for s in summaries):
        warnings.append("some traces do not give absolute times: arrivals across ranks assume one shared clock")
    world = max([s.world_size for s in summaries] + [len(summaries)])
    worlds = sorted({s.world_size for s in summaries if s.world_size > 0})
    if len(worlds) > 1:
        listed = ", ".join(f"{w:,}" for w in worlds[:6]) + (" …" if len(worlds) > 6 else "")
        warnings.append(f"the traces give different world sizes ({listed}): they are not all one job's ranks")
    elif world > len(summaries):
        warnings.append(f"{len(summaries)} of {world} ranks given: figures cover those only")
    origin = min((s.start_ns for s in summaries), default=0)
    tables = [s.collectives for s in summaries]
    said: list[str] = []
    matched = match_collectives(tables, ranks, said)
    groups_unnamed = False
    if matched.level == BY_ORDER and _subgroups(summaries):
        by_workers = _by_worker_groups(summaries, tables, ranks)
        if by_workers is not None:
            matched, said = by_workers
        else:
            tried = any(table.has_worker_groups() for table in tables)
            groups_unnamed = _unnamed_subgroups(summaries, said, tried)
    warnings += said
    columns = _columns(matched)
    figures = [_figures(matched, columns, i) for i in range(len(matched))]
    host_only = all(summary.compute_kind == "host" for summary in summaries)
    floor = noise_floor(arrival_deviations(matched, columns), host_only)
    agreement = _Agreement(matched)
    disagree = agreement.disagreeing()
    collectives = [
        _collective_out(matched, k, f, origin, agreement.problems(k) if disagree[k] else [])
        for k, f in enumerate(figures)
    ]
    mismatched = sum(1 for c in collectives if c.problems)
    if mismatched:
        example = next(c for c in collectives if c.problems)
        warnings.append(
            f"{mismatched} collectives disagree between ranks (e.g. #{example.id} {example.name}: {example.problems[0]})"
        )
    partial = [c for c in collectives if len(c.ranks) < len(summaries) and c.name != "send" and c.name != "recv"]
    if partial and matched.level != BY_ORDER:
        warnings.append(f"{len(partial)} collectives were not seen on every rank given")
    rank_out = _rank_outputs(summaries, ranks, matched, columns, figures)
    apart = _not_one_run(summaries, ranks, warnings)
    findings = _findings(
        summaries, ranks, matched, figures, collectives, floor, across_ranks=not apart, groups_unnamed=groups_unnamed
    )
    return RanksOut(
        world_size=world,
        ranks=rank_out,
        collectives=collectives,
        findings=findings,
        warnings=warnings,
        noise_floor_us=us(floor),
        process_groups=_process_groups(summaries),
    )


def _us_list(ns: np.ndarray) -> list[float]:
    """``us`` of each value (ns → µs to the nanosecond), in one pass."""
    return np.round(ns / 1000.0, 3).tolist()


def _collective_out(matched: Matched, k: int, f: _Figures, origin: int, problems: list[str]) -> CollectiveOut:
    calls, rows = matched.calls, matched.members(k)
    names = calls.code("name")[rows]
    sizes = calls.ints("group_size")[rows]
    sizes = sizes[sizes > 0]
    algo, bus = _bandwidths(calls.text("name", int(rows[0])), f, int(sizes.max()) if sizes.size else -1)
    return CollectiveOut(
        id=k,
        name=calls.strings[_mode(names)],
        group=matched.group[k],
        step=int(matched.step[k]),
        index=int(matched.index[k]),
        bytes=f.bytes,
        ranks=f.ranks.tolist(),
        arrival_us=_us_list(f.arrival - origin),
        wait_us=_us_list(f.wait),
        duration_us=_us_list(f.duration),
        end_us=_us_list(f.end - origin),
        start_skew_us=us(f.start_skew),
        end_skew_us=us(f.end_skew),
        latency_us=us(f.latency),
        last_rank=f.last_rank,
        lateness_us=us(f.lateness),
        algo_bw_gbps=algo,
        bus_bw_gbps=bus,
        matched_by=matched.level,
        problems=problems,
    )


def _rank_outputs(
    summaries: list[RankSummary], ranks: list[int], matched: Matched, columns: _Columns, figures: list[_Figures]
) -> list[RankOut]:
    # each rank's wait, summed per step of its own calls
    call_step = matched.calls.ints("step")[matched.rows]
    pair = group_ids(columns.rank, call_step)
    pair_wait = np.zeros(int(pair.max(initial=-1)) + 1, dtype=np.int64)
    np.add.at(pair_wait, pair, columns.wait)
    first = np.unique(pair, return_index=True)[1]
    pair_rank, pair_step = columns.rank[first], call_step[first]
    last: Counter[int] = Counter(f.last_rank for f in figures if len(f.ranks) > 1 and f.start_skew > 0)
    out = []
    for rank, summary in zip(ranks, summaries, strict=True):
        mine = pair_rank == rank
        wait = dict(zip(pair_step[mine].tolist(), pair_wait[mine].tolist(), strict=True))
        steps = [
            RankStepOut(
                step=s.step,
                wall_us=us(s.wall_ns),
                compute_us=us(s.compute_ns),
                comm_us=us(s.comm_ns),
                wait_us=us(wait.get(s.step, 0)),
                overlap_pct=round(100.0 * s.overlap_ns / s.comm_ns, 2) if s.comm_ns else 0.0,
            )
            for s in summary.steps
        ]
        out.append(
            RankOut(
                rank=rank,
                source=summary.source,
                label=summary.label,
                compute=summary.compute_kind,
                steps=steps,
                wait_us=us(sum(wait.values())),
                last_arrivals=last.get(rank, 0),
                warnings=summary.warnings,
            )
        )
    return out


_LOWER = {"high": "medium", "medium": "low", "low": "low"}  # a finding the data leaves in doubt


def _severity(evidence: int, total: int) -> str:
    share = evidence / total if total else 0.0
    return "high" if share >= 0.2 else "medium" if share >= 0.05 else "low"


def _step_rank_time(summaries: list[RankSummary], step: int) -> int:
    """Rank-time of one step summed over ranks (what a straggler's cost is a share of)."""
    return sum(int(r.steps.column("wall_ns")[r.steps.column("step") == step].sum()) for r in summaries)


def _collective_label(c: CollectiveOut) -> str:
    where = f"step {c.step}" if c.step != NO_STEP else "the trace"
    return f"{c.name} #{c.index} of {where}" + (f" (group {c.group})" if c.group else "")


_DAY_NS = 86_400 * 10**9


def _not_one_run(summaries: list[RankSummary], ranks: list[int], warnings: list[str]) -> bool:
    """Whether the traces share no moment on one clock: ranks of one job record the same
    steps at the same time, so traces that do not overlap at all are other runs (or hosts
    whose clocks are far apart), and comparing their arrivals means nothing."""
    if len(summaries) < 2 or not all(s.clock_is_unix for s in summaries):
        return False
    late = max(range(len(summaries)), key=lambda p: summaries[p].start_ns)
    early = min(range(len(summaries)), key=lambda p: summaries[p].end_ns)
    gap = summaries[late].start_ns - summaries[early].end_ns
    if gap <= 0:
        return False
    apart = fmt_time_ns(gap) if gap < 2 * _DAY_NS else f"{gap / _DAY_NS:,.1f} days"
    warnings.append(
        f"{NOT_ONE_RUN}: rank {ranks[early]} ends {apart} before rank {ranks[late]} begins — "
        "not one run, or clocks far apart; findings that compare ranks (stragglers, imbalance, slow collectives) "
        "are left out"
    )
    return True


def _process_groups(summaries: list[RankSummary]) -> dict[str, list[int]]:
    """Every rank's groups together, name → members (each rank lists its own groups),
    in the order of their names (numbers as numbers)."""
    members: dict[str, set[int]] = {}
    for summary in summaries:
        for name, group in summary.process_groups.items():
            members.setdefault(name, set()).update(group)
    order = sorted(members, key=lambda name: (not name.isdigit(), int(name) if name.isdigit() else 0, name))
    return {name: sorted(members[name]) for name in order}


def _subgroups(summaries: list[RankSummary]) -> list[list[int]]:
    """The members of the process groups smaller than the job that the ranks are in."""
    groups: list[list[int]] = []
    for summary in summaries:
        world = max(summary.world_size, len(summaries))
        groups += [m for m in summary.process_groups.values() if len(m) < world and m not in groups]
    return groups


def _by_worker_groups(
    summaries: list[RankSummary], tables: list[CollectiveTable], ranks: list[int]
) -> tuple[Matched, list[str]] | None:
    """gloo's calls name no process group: matched again with the group each call's
    worker thread serves (``collectives._gloo_thread_groups``), kept only if every
    collective so matched holds exactly its group's ranks (those given), by every
    rank's ``pg_config``; else None."""
    if not any(table.has_worker_groups() for table in tables):
        return None
    said: list[str] = []
    matched = match_collectives([table.with_worker_groups() for table in tables], ranks, said)
    members = {name: set(group) for name, group in _process_groups(summaries).items()}
    given = set(ranks)
    for k in range(len(matched)):
        expected = members.get(matched.group[k])
        if expected is None or set(matched.rank[matched.members(k)].tolist()) != expected & given:
            return None
    said.append(
        "gloo's calls name no process group: each call's was read from the gloo worker thread that ran it (gloo "
        "starts a group's threads as the group is made), and every collective so matched holds exactly its "
        "group's ranks"
    )
    return matched, said


def _unnamed_subgroups(summaries: list[RankSummary], warnings: list[str], tried: bool = False) -> bool:
    """Says in ``warnings`` that the ranks run collectives in process groups smaller
    than the job while their calls name no group (gloo records none), and, with
    ``tried``, that the worker threads did not tell the groups apart either."""
    groups = _subgroups(summaries)
    if not groups:
        return False
    examples = " and ".join(
        "ranks " + ", ".join(str(r) for r in g[:6]) + (" …" if len(g) > 6 else "") for g in groups[:2]
    )
    backends = sorted({s.backend for s in summaries if s.backend})
    records = f"{backends[0]} records none" if len(backends) == 1 else "the traces record none"
    threads = "; nor did the worker threads that ran them tell the groups apart" if tried else ""
    warnings.append(
        f"the ranks also run collectives in process groups smaller than the job (e.g. {examples}), and their "
        f"calls do not name their group ({records}{threads}): matched by order in step, calls of different groups "
        "may be taken as one collective, and its skew and waits then mix them"
    )
    return True


def _findings(
    summaries: list[RankSummary],
    ranks: list[int],
    matched: Matched,
    figures: list[_Figures],
    collectives: list[CollectiveOut],
    floor: int,
    *,
    across_ranks: bool = True,
    groups_unnamed: bool = False,
) -> list[RankFindingOut]:
    findings: list[RankFindingOut] = []
    if across_ranks:
        findings += _stragglers(summaries, ranks, matched, figures, collectives, floor, groups_unnamed)
        findings += _imbalance(summaries, ranks, floor)
        findings += _slow_collectives(figures, collectives, floor)
    findings += _low_overlap(summaries, ranks, _waits(figures))
    rank_of_severity = {"high": 0, "medium": 1, "low": 2}
    findings.sort(key=lambda f: (rank_of_severity.get(f.severity, 3), -f.evidence_us))
    return findings


def _stragglers(
    summaries: list[RankSummary],
    ranks: list[int],
    matched: Matched,
    figures: list[_Figures],
    collectives: list[CollectiveOut],
    floor: int,
    groups_unnamed: bool = False,
) -> list[RankFindingOut]:
    """One finding per late rank: its worst step (what the others lost in it, at its
    worst collective there) and, where it was late in more, how many and what the
    others lost in all of them.  (One per rank and step repeated a rank that is late
    every step: a DDP rank that sleeps before its backward pass filled the list.)"""
    worst: dict[tuple[int, int], tuple[int, int, int]] = {}  # → (collective, lost, count)
    stands_out = _StandsOut(figures)
    for k, f in enumerate(figures):
        if len(f.ranks) < 2 or f.blame < max(floor, stands_out.threshold(f.last_rank)):
            continue
        lost = int(f.wait.sum())
        key = (f.last_rank, int(matched.step[k]))
        previous = worst.get(key)
        if previous is None:
            worst[key] = (k, lost, 1)
        else:
            # the example is the latest arrival at a collective the ranks agree on: one
            # they disagree about may pair different calls
            best = max(k, previous[0], key=lambda j: (not collectives[j].problems, figures[j].lateness))
            worst[key] = (best, previous[1] + lost, previous[2] + 1)
    carried = _carried(figures, matched, floor, stands_out)
    per_rank: dict[int, list[tuple[int, int, int, int]]] = {}  # rank → [(lost, step, collective, count)]
    for (rank, step), (k, lost, count) in worst.items():
        per_rank.setdefault(rank, []).append((lost, step, k, count))
    compute = {
        (rank, step): value
        for rank, summary in zip(ranks, summaries, strict=True)
        for step, value in zip(
            summary.steps.column("step").tolist(), summary.steps.column("compute_ns").tolist(), strict=True
        )
    }
    out = []
    for rank, steps in per_rank.items():
        steps.sort(key=lambda item: (-item[0], item[1]))
        lost, step, k, count = steps[0]
        total = sum(item[0] for item in steps)
        f, c = figures[k], collectives[k]
        why = _why_late(matched.calls.call(f.last_row), f, _longer_compute(compute, rank, step, f.lateness))
        more = f" and {count - 1} more collective{'s' if count > 2 else ''}" if count > 1 else ""
        often = f"; late in {len(steps)} steps, the others losing {fmt_time_ns(total)} in all" if len(steps) > 1 else ""
        held, waited = carried.get((rank, step), (0, 0))
        onward = _onward(held, waited, step)
        doubt, lower = _doubt(c, matched.level, groups_unnamed)
        severity = _severity(lost, _step_rank_time(summaries, step))
        severity = _LOWER[severity] if lower else severity
        out.append(
            RankFindingOut(
                kind="straggler",
                severity=severity,
                message=(
                    f"rank {rank} arrived {fmt_time_ns(f.lateness)} after the others' median at "
                    f"{_collective_label(c)}{more}; the other ranks lost {fmt_time_ns(lost)} waiting{why}{onward}{often}"
                    f"{doubt}"
                ),
                rank=rank,
                step=step,
                collective=c.id,
                evidence_us=us(total),
                onward_collectives=held,
                onward_us=us(waited),
                late_steps=sorted(item[1] for item in steps),
            )
        )
    out.sort(key=lambda finding: -finding.evidence_us)
    return out[:MAX_FINDINGS_PER_KIND]


def _onward(held: int, waited: int, step: int) -> str:
    """ "; its delay went on … to 2 more collectives of step 2, where the others waited
    132.685ms more" (``_carried``'s figures: collectives, ns), else ""."""
    if not held:
        return ""
    return (
        f"; its delay went on, through the ranks it kept waiting, to {held} more collective"
        f"{'s' if held > 1 else ''} of step {step}, where the others waited {fmt_time_ns(waited)} more"
    )


def _doubt(collective: CollectiveOut, level: str, groups_unnamed: bool) -> tuple[str, bool]:
    """What may make a straggler finding wrong, said, and whether that lowers its
    severity: ranks that disagree about the collective (matched by order in step, two
    different calls may have been paired), or calls that name no process group where
    several run."""
    if collective.problems:
        doubt = f"; but the ranks disagree about this collective ({collective.problems[0]})"
        if level == BY_ORDER:
            # paired by position only: the lateness may be two different calls' distance
            return doubt + ", so matched by order in step these may be different calls (see warnings)", True
        return doubt + ": a mismatched call in the program", False
    if groups_unnamed:
        # the others' waits may be at a call of another process group, taken as this one
        return (
            "; but the calls name no process group, so this collective may join calls of different groups (see warnings)",
            True,
        )
    return "", False


def _carried(
    figures: list[_Figures], matched: Matched, floor: int, stands_out: _StandsOut
) -> dict[tuple[int, int], tuple[int, int]]:
    """(rank, step) → (collectives, ns the others waited there) that a straggler's own
    lateness went on to cost in its step, besides the collectives it was late at by
    its own doing: a rank kept waiting is late in turn at its next collective (its
    blame there is small: it spent no extra time of its own), and so on.  Each rank
    carries the straggler whose delay it last waited for (the straggler carries its
    own); a collective whose last rank's lateness is not its own is charged to the
    straggler that rank carries.  Lateness and waits under ``floor`` carry nothing.
    (With the tensor-parallel pair [2, 3] waiting for rank 3's sleep, then the pairs
    [1, 3] and [0, 2] of data parallelism: 78.7 ms lost at the first collective, and
    133 ms more at the two after it.)"""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    carriers: dict[int, dict[int, int]] = {}  # step → rank → the straggler whose delay it carries
    # in the order the collectives could start (their last arrival): a delay reaches a
    # collective through one that started before it.  (By first arrival, rank 1 at its
    # column's call could come before rank 2 at the pair's, which rank 3 held up first.)
    by_start = sorted(
        range(len(figures)), key=lambda j: int(figures[j].arrival.max()) if figures[j].arrival.size else 0
    )
    for k in by_start:
        f = figures[k]
        if len(f.ranks) < 2 or f.lateness < floor:
            continue
        step = int(matched.step[k])
        carrier = carriers.setdefault(step, {})
        own = f.blame >= max(floor, stands_out.threshold(f.last_rank))
        root = f.last_rank if own else carrier.get(f.last_rank)
        if root is None:
            continue
        carrier[f.last_rank] = root
        for waiting, wait in zip(f.ranks.tolist(), f.wait.tolist(), strict=True):
            if waiting != f.last_rank and wait >= floor:
                carrier[waiting] = root
        if not own:
            held, waited = out.get((root, step), (0, 0))
            out[(root, step)] = (held + 1, waited + int(f.wait.sum()))
    return out


class _StandsOut:
    """How late a rank must be to stand out: three times the 90th percentile of the
    blame at the collectives other ranks were last at.  On a busy host every rank is
    now and then a few ms late; that is the others' noise, and a straggler must clear it.
    (Collectives this rank was last at are left out, so a rank late at every step
    is not hidden by its own lateness.)  Computed once per rank asked about."""

    def __init__(self, figures: list[_Figures]) -> None:
        shared = [f for f in figures if len(f.ranks) > 1]
        self._blame = np.array([f.blame for f in shared], dtype=np.int64)
        self._last = np.array([f.last_rank for f in shared], dtype=np.int64)
        self._known: dict[int, int] = {}

    def threshold(self, rank: int) -> int:
        if rank not in self._known:
            others = self._blame[self._last != rank]
            self._known[rank] = (
                0 if others.size < 3 else int(STANDS_OUT * float(np.percentile(np.maximum(others, 0), 90)))
            )
        return self._known[rank]


def _longer_compute(compute: dict[tuple[int, int], int], rank: int, step: int, lateness: int) -> str:
    """ " — its compute in step 11 took 3.500ms, 1.500ms more than the other ranks'
    median" where that excess explains at least half its lateness, else ""."""
    mine = compute.get((rank, step))
    others = [value for (r, s), value in compute.items() if s == step and r != rank]
    if mine is None or not others:
        return ""
    excess = mine - int(statistics.median(others))
    if excess < lateness // 2:
        return ""
    return (
        f" — its compute in step {step} took {fmt_time_ns(mine)}, {fmt_time_ns(excess)} more than the other ranks' "
        "median (see its op table)"
    )


def _why_late(call: CollectiveCall, f: _Figures, longer_compute: str = "") -> str:
    """What the late rank did before the call, when the trace shows it: idle on the
    calling thread just before it, else fetching batches from the DataLoader, else idle
    on the thread running its step since its previous collective (DDP calls its
    all-reduce after backward's ops: a sleep before ``backward()`` is no gap just before
    the call), else its compute, longer than the other ranks' (``longer_compute``), else
    work that ran long; with the Python call that idle time went to, where the trace has
    Python frames."""
    if call.idle_before_ns < 0:
        return ""  # no calling thread in the trace (a Neuron system trace's cc_running)
    if call.idle_before_ns >= f.lateness // 2:
        idle = call.idle_before_ns
        return f" — it spent {fmt_time_ns(idle)} outside any op just before the call{_in_what(call, idle)}"
    if call.loading_ns >= f.lateness // 2:  # busy, but fetching the next batch: the input pipeline
        return f" — it spent {fmt_time_ns(call.loading_ns)} fetching batches from its DataLoader since its previous collective"
    if call.step_thread_idle_ns >= f.lateness // 2:
        idle = call.step_thread_idle_ns
        return (
            f" — the thread running its step spent {fmt_time_ns(idle)} outside any op since its previous collective"
            f"{_in_what(call, idle)}"
        )
    return longer_compute or " — its work before the call ran long (see its op table)"


def _in_what(call: CollectiveCall, idle_ns: int) -> str:
    """ ", most of it in <built-in function sleep> (30.120ms)" where one Python call
    without ops took at least half of ``idle_ns`` (and no more than it: the frame is
    then within that idle time), else what such time usually is."""
    if not call.idle_frame or not idle_ns // 2 <= call.idle_frame_ns <= idle_ns:
        return " (Python, data loading, I/O or a sleep)"
    return f", most of it in {shorten(call.idle_frame, FRAME_NAME_LIMIT)} ({fmt_time_ns(call.idle_frame_ns)})"


def _imbalance(summaries: list[RankSummary], ranks: list[int], floor: int) -> list[RankFindingOut]:
    """A rank whose compute per step is longer than the step's median in most steps."""
    per_step: dict[int, dict[int, int]] = {}
    for rank, summary in zip(ranks, summaries, strict=True):
        numbers = summary.steps
        for step, compute in zip(numbers.column("step").tolist(), numbers.column("compute_ns").tolist(), strict=True):
            per_step.setdefault(step, {})[rank] = compute
    steps = [s for s, values in per_step.items() if len(values) > 2]
    if not steps:
        return []
    medians = {step: statistics.median(per_step[step].values()) for step in steps}
    counted = np.array(steps, dtype=np.int64)
    wall = sum(int(r.steps.column("wall_ns")[np.isin(r.steps.column("step"), counted)].sum()) for r in summaries)
    out = []
    for rank in ranks:
        excess = []
        for step in steps:
            values = per_step[step]
            if rank not in values:
                continue
            median = medians[step]
            extra = values[rank] - median
            if extra > max(IMBALANCE_SHARE * median, floor):
                excess.append(int(extra))
        if excess and len(excess) >= max(1, IMBALANCE_STEPS * len(steps)):
            total = sum(excess)
            out.append(
                RankFindingOut(
                    kind="imbalance",
                    severity=_severity(total * len(ranks), wall),
                    message=(
                        f"rank {rank} computes longer than the median rank in {len(excess)} of {len(steps)} steps, "
                        f"{fmt_time_ns(total)} more in all: the others wait for it at the next collective"
                    ),
                    rank=rank,
                    step=-1,
                    collective=-1,
                    evidence_us=us(total),
                )
            )
    return out[:MAX_FINDINGS_PER_KIND]


def _slow_collectives(figures: list[_Figures], collectives: list[CollectiveOut], floor: int) -> list[RankFindingOut]:
    """Bus bandwidth far below the same collective of the same size elsewhere."""
    alike: dict[tuple[str, str, int], list[int]] = {}
    for k, c in enumerate(collectives):
        if c.bus_bw_gbps > 0:
            alike.setdefault((c.name, c.group, c.bytes), []).append(k)
    out = []
    for members in alike.values():
        if len(members) < 3:
            continue
        median_bw = statistics.median(collectives[k].bus_bw_gbps for k in members)
        median_latency = statistics.median(figures[k].latency for k in members)
        for k in members:
            c = collectives[k]
            extra = int(figures[k].latency - median_latency)
            if c.bus_bw_gbps < SLOW_BANDWIDTH * median_bw and extra > floor:
                out.append(
                    RankFindingOut(
                        kind="slow_collective",
                        severity="medium" if extra > 5 * floor else "low",
                        message=(
                            f"{_collective_label(c)} reached {fmt_rate(c.bus_bw_gbps)} bus bandwidth against "
                            f"{fmt_rate(median_bw)} for the same collective and size elsewhere "
                            f"({fmt_time_ns(extra)} longer)"
                        ),
                        rank=-1,
                        step=c.step,
                        collective=c.id,
                        evidence_us=us(extra),
                    )
                )
    out.sort(key=lambda f: -f.evidence_us)
    return out[:MAX_FINDINGS_PER_KIND]


def _waits(figures: list[_Figures]) -> Counter[int]:
    """Per rank, its time in collectives waiting for the last rank to arrive."""
    waits: Counter[int] = Counter()
    for f in figures:
        for rank, wait in zip(f.ranks.tolist(), f.wait.tolist(), strict=True):
            waits[rank] += wait
    return waits


def _low_overlap(summaries: list[RankSummary], ranks: list[int], waits: Counter[int]) -> list[RankFindingOut]:
    """Communication that compute could hide but does not, judged on the median rank
    (device traces only: a host thread that waits in a collective has nothing to overlap).
    Exposed is what no compute hid, less the rank's wait for a late rank: that is the
    late rank's (``straggler``), and a rank held 30 ms a step by one that sleeps read
    "low overlap" beside the straggler it was waiting for."""
    shares = []
    for rank, summary in zip(ranks, summaries, strict=True):
        comm = int(summary.steps.column("comm_ns").sum())
        wall = int(summary.steps.column("wall_ns").sum())
        if summary.compute_kind == "device" and comm and wall:
            overlap = int(summary.steps.column("overlap_ns").sum())
            exposed = max(comm - overlap - waits.get(rank, 0), 0)
            shares.append((100.0 * overlap / comm, exposed, comm, wall, rank))
    if not shares:
        return []
    shares.sort()
    pct, exposed, comm, wall, _ = shares[len(shares) // 2]
    if pct >= LOW_OVERLAP_PCT or exposed <= LOW_OVERLAP_COMM_SHARE * wall:
        return []
    low = sum(1 for s in shares if s[0] < LOW_OVERLAP_PCT)
    worst = shares[0]
    return [
        RankFindingOut(
            kind="low_overlap",
            severity=_severity(exposed, wall),
            message=(
                f"{low} of {len(shares)} ranks overlap less than {LOW_OVERLAP_PCT:.0f}% of their communication "
                f"with compute (median rank: {fmt_share(pct, 100.0)} of {fmt_time_ns(comm)}, {fmt_time_ns(exposed)} exposed "
                "besides waiting for late ranks; "
                f"lowest: rank {worst[4]}, {fmt_share(worst[0], 100.0)})"
            ),
            rank=-1,
            step=-1,
            collective=-1,
            evidence_us=us(exposed),
        )
    ]
