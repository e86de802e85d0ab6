"""Many ranks: match each collective across the ranks' summaries, measure who arrived
late and what it cost the others, and name the rank that held them back.

Input: one ``RankSummary`` per rank (``rank_summary``), built wherever the trace lies.
Nothing here reads a trace, so the parent of a process pool or a Dask client holds only
these summaries.  Output: the ``RanksOut`` contract.

**Matching** uses the best key every rank's calls carry: ``Comms Id`` (when unique per
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
ms-scale jitter is not a straggler and one late arrival among quiet ones is.  Step time rises on every rank when one is late, so no finding is
ever drawn from step time alone.
"""

from __future__ import annotations

import statistics
from collections import Counter

import msgspec
import numpy as np

from trnscope.core.analysis.collectives import NO_STEP, CollectiveCall
from trnscope.core.analysis.contracts import (
    CollectiveOut,
    RankFindingOut,
    RankOut,
    RanksOut,
    RankStepOut,
)
from trnscope.core.analysis.rank_summary import RankSummary
from trnscope.core.base.arrays import medians_without_each
from trnscope.core.base.units import fmt_rate, fmt_time_ns, us

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

BY_COMMS_ID = "comms id"
BY_SEQ = "group + seq"
BY_ORDER = "order in step"


class _Instance(msgspec.Struct):
    """One collective across ranks: the member call of each rank that has it."""

    group: str
    step: int
    index: int
    members: dict[int, CollectiveCall]  # rank → its call


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


def matching_level(summaries: list[RankSummary]) -> str:
    """The best key all ranks' calls carry, unique per call within each rank."""
    calls = [r.collectives for r in summaries]
    if all(c and all(x.comms_id for x in c) and _unique([x.comms_id for x in c]) for c in calls):
        return BY_COMMS_ID
    if all(c and all(x.seq >= 0 for x in c) and _unique([(x.group, x.seq) for x in c]) for c in calls):
        return BY_SEQ
    return BY_ORDER


def _aligned_index(summaries: list[RankSummary], ranks: list[int], warnings: list[str]) -> dict[tuple[int, int], int]:
    """(rank position, call position) → index within its (group, step), aligned across
    ranks by the names of the calls when the ranks' lists differ in length."""
    buckets: dict[tuple[str, int], dict[int, list[int]]] = {}
    for position, summary in enumerate(summaries):
        for k, call in enumerate(summary.collectives):
            buckets.setdefault((call.group, call.step), {}).setdefault(position, []).append(k)
    first_step = {
        p: min((c.step for c in s.collectives if c.step != NO_STEP), default=NO_STEP) for p, s in enumerate(summaries)
    }
    out: dict[tuple[int, int], int] = {}
    shifted: list[str] = []
    for (_group, step), per_rank in buckets.items():
        longest = max(per_rank.values(), key=len)
        longest_rank = next(p for p, v in per_rank.items() if v is longest)
        reference = [summaries[longest_rank].collectives[k].name for k in longest]
        for position, members in per_rank.items():
            names = [summaries[position].collectives[k].name for k in members]
            offset = _best_offset(reference, names, from_end=step == first_step[position])
            if offset:
                shifted.append(f"rank {ranks[position]} step {step}")
            for index, k in enumerate(members):
                out[(position, k)] = index + offset
    if shifted:
        shown = ", ".join(shifted[:4]) + (" …" if len(shifted) > 4 else "")
        warnings.append(
            f"some ranks have fewer collectives in a step than others (a profiling window that opened later); "
            f"aligned by name: {shown}"
        )
    return out


def _best_offset(reference: list[str], names: list[str], *, from_end: bool) -> int:
    """Where ``names`` sits inside ``reference``: the offset with the most equal names;
    ties go to the end in a rank's first step (its window opened late), else the start."""
    spare = len(reference) - len(names)
    if spare <= 0:
        return 0
    scores = [sum(a == b for a, b in zip(reference[o:], names, strict=False)) for o in range(spare + 1)]
    best = max(scores)
    candidates = [o for o, s in enumerate(scores) if s == best]
    return candidates[-1] if from_end else candidates[0]


def match_collectives(
    summaries: list[RankSummary], ranks: list[int], warnings: list[str]
) -> tuple[str, list[_Instance]]:
    level = matching_level(summaries)
    index_of = _aligned_index(summaries, ranks, warnings) if level == BY_ORDER else {}
    instances: dict[tuple[object, ...], _Instance] = {}
    duplicates = 0
    for position, summary in enumerate(summaries):
        rank = ranks[position]
        for k, call in enumerate(summary.collectives):
            key: tuple[object, ...]
            if level == BY_COMMS_ID:
                key = (call.comms_id,)
            elif level == BY_SEQ:
                key = (call.group, call.seq)
            else:
                key = (call.group, call.step, index_of[(position, k)])
            instance = instances.get(key)
            if instance is None:
                index = index_of.get((position, k), call.ordinal)
                instance = instances[key] = _Instance(call.group, call.step, index, {})
            if rank in instance.members:
                duplicates += 1
                continue
            instance.members[rank] = call
    if duplicates:
        warnings.append(f"{duplicates} calls shared a key with another call of the same rank and were left out")
    ordered = sorted(instances.values(), key=lambda i: min(c.arrival_ns for c in i.members.values()))
    return level, ordered


def _problems(instance: _Instance) -> list[str]:
    """Where the ranks disagree about what this collective is."""
    calls = list(instance.members.values())
    problems = []
    for label, values in (
        ("name", [c.name for c in calls]),
        ("input elements", [c.in_nelems for c in calls if c.in_nelems >= 0 and c.name != "all_to_all"]),
        ("output elements", [c.out_nelems for c in calls if c.out_nelems >= 0 and c.name != "all_to_all"]),
        ("dtype", [c.dtype for c in calls if c.dtype]),
        ("group size", [c.group_size for c in calls if c.group_size >= 0]),
    ):
        seen = Counter(values)
        if len(seen) > 1:
            per_rank = {r: v for r, c in instance.members.items() for v in [_field(c, label)]}
            shown = ", ".join(f"rank {r}: {v}" for r, v in sorted(per_rank.items())[:4])
            problems.append(f"{label} differs ({shown}{' …' if len(per_rank) > 4 else ''})")
    return problems


def _field(call: CollectiveCall, label: str) -> object:
    return {
        "name": call.name,
        "input elements": call.in_nelems,
        "output elements": call.out_nelems,
        "dtype": call.dtype,
        "group size": call.group_size,
    }[label]


class _Figures(msgspec.Struct):
    """One collective's figures in integer ns, before rounding."""

    ranks: list[int]
    arrival: list[int]
    wait: list[int]
    duration: list[int]
    end: list[int]
    start_skew: int
    end_skew: int
    latency: int
    last_rank: int
    lateness: int
    own_lateness: int  # of the lateness, what the last rank spent itself since its previous collective
    bytes: int

    @property
    def blame(self) -> int:
        """The lateness the last rank caused itself: the smaller of its lateness and the
        extra time it spent since its previous collective against the others' median."""
        return min(self.lateness, self.own_lateness)


def _figures(instance: _Instance) -> _Figures:
    ranks = sorted(instance.members)
    calls = [instance.members[r] for r in ranks]
    arrival = [c.arrival_ns for c in calls]
    ends = [c.end_ns for c in calls]
    duration = [max(c.duration_ns, 0) for c in calls]
    latest = max(arrival)
    last = int(np.argmax(arrival))
    others = arrival[:last] + arrival[last + 1 :]
    lateness = int(latest - statistics.median(others)) if others else 0
    spent = [c.since_previous_ns for c in calls]
    others_spent = spent[:last] + spent[last + 1 :]
    if spent[last] >= 0 and others_spent and all(v >= 0 for v in others_spent):
        own = int(spent[last] - statistics.median(others_spent))
    else:
        own = lateness  # no previous collective to tell: all of it
    sizes = Counter(c.message_bytes for c in calls if c.message_bytes >= 0)
    return _Figures(
        ranks=ranks,
        arrival=arrival,
        wait=[latest - a for a in arrival],
        duration=duration,
        end=ends,
        start_skew=latest - min(arrival),
        end_skew=max(ends) - min(ends),
        latency=min(duration),
        last_rank=ranks[last],
        lateness=lateness,
        own_lateness=own,
        bytes=sizes.most_common(1)[0][0] if sizes else -1,
    )


def _bandwidths(name: str, figures: _Figures, group_size: int) -> tuple[float, float]:
    if figures.bytes <= 0 or figures.latency <= 0:
        return 0.0, 0.0
    algo = figures.bytes / figures.latency  # bytes per ns = GB/s
    n = group_size if group_size > 0 else len(figures.ranks)
    return round(algo, 9), round(algo * bus_factor(name, n), 9)  # GB/s to the byte per second


def arrival_deviations(instances: list[_Instance]) -> list[int]:
    """For every rank at every collective of three ranks or more: how much later than
    the others' median it arrived, counting only what it spent itself since its previous
    collective (the same measure as a straggler's blame).  Their spread is the jitter of
    these hosts."""
    out: list[int] = []
    for instance in instances:
        calls = list(instance.members.values())
        if len(calls) < 3:
            continue
        arrival = np.array([c.arrival_ns for c in calls], dtype=np.float64)
        late = arrival - medians_without_each(arrival)
        spent = np.array([c.since_previous_ns for c in calls], dtype=np.float64)
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
        steps = [s for s in summary.steps if s.step == step]
        calls = [c for c in summary.collectives if c.step == step]
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
    if world > len(summaries):
        warnings.append(f"{len(summaries)} of {world} ranks given: figures cover those only")
    origin = min((s.start_ns for s in summaries), default=0)
    level, instances = match_collectives(summaries, ranks, warnings)
    figures = [_figures(i) for i in instances]
    host_only = all(summary.compute_kind == "host" for summary in summaries)
    floor = noise_floor(arrival_deviations(instances), host_only)
    collectives = [
        _collective_out(k, i, f, level, origin) for k, (i, f) in enumerate(zip(instances, figures, strict=True))
    ]
    mismatched = sum(1 for c in collectives if c.problems)
    if mismatched:
        example = next(c for c in collectives if c.problems)
        warnings.append(
            f"{mismatched} collectives disagree between ranks (e.g. #{example.id} {example.name}: {example.problems[0]})"
        )
    partial = [c for c in collectives if len(c.ranks) < len(summaries) and c.name != "send" and c.name != "recv"]
    if partial and level != BY_ORDER:
        warnings.append(f"{len(partial)} collectives were not seen on every rank given")
    rank_out = _rank_outputs(summaries, ranks, instances, figures)
    findings = _findings(summaries, ranks, instances, figures, collectives, floor)
    return RanksOut(
        world_size=world,
        ranks=rank_out,
        collectives=collectives,
        findings=findings,
        warnings=warnings,
        noise_floor_us=us(floor),
    )


def _collective_out(k: int, instance: _Instance, f: _Figures, level: str, origin: int) -> CollectiveOut:
    first = next(iter(instance.members.values()))
    sizes = [c.group_size for c in instance.members.values() if c.group_size > 0]
    algo, bus = _bandwidths(first.name, f, max(sizes) if sizes else -1)
    return CollectiveOut(
        id=k,
        name=Counter(c.name for c in instance.members.values()).most_common(1)[0][0],
        group=instance.group,
        step=instance.step,
        index=instance.index,
        bytes=f.bytes,
        ranks=f.ranks,
        arrival_us=[us(a - origin) for a in f.arrival],
        wait_us=[us(w) for w in f.wait],
        duration_us=[us(d) for d in f.duration],
        end_us=[us(e - origin) for e in f.end],
        start_skew_us=us(f.start_skew),
        end_skew_us=us(f.end_skew),
        latency_us=us(f.latency),
        last_rank=f.last_rank,
        lateness_us=us(f.lateness),
        algo_bw_gbps=algo,
        bus_bw_gbps=bus,
        matched_by=level,
        problems=_problems(instance),
    )


def _rank_outputs(
    summaries: list[RankSummary], ranks: list[int], instances: list[_Instance], figures: list[_Figures]
) -> list[RankOut]:
    wait: dict[tuple[int, int], int] = Counter()
    last: Counter[int] = Counter()
    rank_wait: Counter[int] = Counter()
    for instance, f in zip(instances, figures, strict=True):
        for rank, w in zip(f.ranks, f.wait, strict=True):
            wait[(rank, instance.members[rank].step)] += w
            rank_wait[rank] += w
        if len(f.ranks) > 1 and f.start_skew > 0:
            last[f.last_rank] += 1
    out = []
    for rank, summary in zip(ranks, summaries, strict=True):
        steps = [
            RankStepOut(
                step=s.step,
                wall_us=us(s.wall_ns),
                compute_us=us(s.compute_ns),
                comm_us=us(s.comm_ns),
                wait_us=us(wait.get((rank, s.step), 0)),
                overlap_pct=round(100.0 * s.overlap_ns / s.comm_ns, 2) if s.comm_ns else 0.0,
            )
            for s in summary.steps
        ]
        total_wait = rank_wait.get(rank, 0)
        out.append(
            RankOut(
                rank=rank,
                source=summary.source,
                label=summary.label,
                compute=summary.compute_kind,
                steps=steps,
                wait_us=us(total_wait),
                last_arrivals=last.get(rank, 0),
                warnings=summary.warnings,
            )
        )
    return out


def _severity(evidence: int, total: int) -> str:
    share = evidence / total if total else 0.0
    return "high" if share >= 0.2 else "medium" if share >= 0.05 else "low"


def _step_rank_time(summaries: list[RankSummary], step: int) -> int:
    """Rank-time of one step summed over ranks (what a straggler's cost is a share of)."""
    return sum(s.wall_ns for r in summaries for s in r.steps if s.step == step)


def _collective_label(c: CollectiveOut) -> str:
    where = f"step {c.step}" if c.step != NO_STEP else "the trace"
    return f"{c.name} #{c.index} of {where}" + (f" (group {c.group})" if c.group else "")


def _findings(
    summaries: list[RankSummary],
    ranks: list[int],
    instances: list[_Instance],
    figures: list[_Figures],
    collectives: list[CollectiveOut],
    floor: int,
) -> list[RankFindingOut]:
    findings = _stragglers(summaries, instances, figures, collectives, floor)
    findings += _imbalance(summaries, ranks, floor)
    findings += _slow_collectives(figures, collectives, floor)
    findings += _low_overlap(summaries, ranks)
    rank_of_severity = {"high": 0, "medium": 1, "low": 2}
    findings.sort(key=lambda f: (rank_of_severity.get(f.severity, 3), -f.evidence_us))
    return findings


def _stragglers(
    summaries: list[RankSummary],
    instances: list[_Instance],
    figures: list[_Figures],
    collectives: list[CollectiveOut],
    floor: int,
) -> list[RankFindingOut]:
    """One finding per (late rank, step): its worst collective, what the others lost."""
    worst: dict[tuple[int, int], tuple[int, int, int]] = {}  # → (collective, lost, count)
    for k, (instance, f) in enumerate(zip(instances, figures, strict=True)):
        if len(f.ranks) < 2 or f.blame < max(floor, _stands_out(figures, f.last_rank)):
            continue
        lost = sum(f.wait)
        key = (f.last_rank, instance.step)
        previous = worst.get(key)
        if previous is None:
            worst[key] = (k, lost, 1)
        else:
            best = k if figures[k].lateness > figures[previous[0]].lateness else previous[0]
            worst[key] = (best, previous[1] + lost, previous[2] + 1)
    steps_late: Counter[int] = Counter(rank for rank, _ in worst)
    out = []
    for (rank, step), (k, lost, count) in sorted(worst.items(), key=lambda item: -item[1][1]):
        instance, f, c = instances[k], figures[k], collectives[k]
        call = instance.members[rank]
        why = _why_late(call, f)
        more = f" and {count - 1} more collective{'s' if count > 2 else ''}" if count > 1 else ""
        often = f"; late in {steps_late[rank]} steps" if steps_late[rank] > 1 else ""
        out.append(
            RankFindingOut(
                kind="straggler",
                severity=_severity(lost, _step_rank_time(summaries, step)),
                message=(
                    f"rank {rank} arrived {fmt_time_ns(f.lateness)} after the others' median at "
                    f"{_collective_label(c)}{more}; the other ranks lost {fmt_time_ns(lost)} waiting{why}{often}"
                ),
                rank=rank,
                step=step,
                collective=c.id,
                evidence_us=us(lost),
            )
        )
    return out[:MAX_FINDINGS_PER_KIND]


def _stands_out(figures: list[_Figures], rank: int) -> int:
    """How late ``rank`` must be to stand out: three times the 90th percentile of the
    blame at the collectives other ranks were last at.  On a busy host every rank is
    now and then a few ms late; that is the others' noise, and a straggler must clear it.
    (Collectives this rank was last at are left out, so a rank late at every step
    is not hidden by its own lateness.)"""
    others = [f.blame for f in figures if f.last_rank != rank and len(f.ranks) > 1]
    if len(others) < 3:
        return 0
    return int(STANDS_OUT * float(np.percentile(np.maximum(others, 0), 90)))


def _why_late(call: CollectiveCall, f: _Figures) -> str:
    """What the late rank did right before the call, when the trace shows it."""
    if call.idle_before_ns < 0:
        return ""  # no calling thread in the trace (a Neuron system trace's cc_running)
    if call.idle_before_ns >= 0 and call.idle_before_ns >= f.lateness // 2:
        return (
            f" — it spent {fmt_time_ns(call.idle_before_ns)} outside any op just before the call "
            "(Python, data loading, I/O or a sleep)"
        )
    return " — its work before the call ran long (see its op table)"


def _imbalance(summaries: list[RankSummary], ranks: list[int], floor: int) -> list[RankFindingOut]:
    """A rank whose compute per step is longer than the step's median in most steps."""
    per_step: dict[int, dict[int, int]] = {}
    for rank, summary in zip(ranks, summaries, strict=True):
        for s in summary.steps:
            per_step.setdefault(s.step, {})[rank] = s.compute_ns
    steps = [s for s, values in per_step.items() if len(values) > 2]
    if not steps:
        return []
    out = []
    for rank in ranks:
        excess = []
        for step in steps:
            values = per_step[step]
            if rank not in values:
                continue
            median = statistics.median(values.values())
            extra = values[rank] - median
            if extra > max(IMBALANCE_SHARE * median, floor):
                excess.append(int(extra))
        if excess and len(excess) >= max(1, IMBALANCE_STEPS * len(steps)):
            total = sum(excess)
            wall = sum(s.wall_ns for r in summaries for s in r.steps if s.step in steps)
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


def _low_overlap(summaries: list[RankSummary], ranks: list[int]) -> list[RankFindingOut]:
    """Communication that compute could hide but does not, judged on the median rank
    (device traces only: a host thread that waits in a collective has nothing to overlap)."""
    shares = []
    for rank, summary in zip(ranks, summaries, strict=True):
        comm = sum(s.comm_ns for s in summary.steps)
        wall = sum(s.wall_ns for s in summary.steps)
        if summary.compute_kind == "device" and comm and wall:
            overlap = sum(s.overlap_ns for s in summary.steps)
            shares.append((100.0 * overlap / comm, comm - overlap, comm, wall, rank))
    if not shares:
        return []
    shares.sort()
    pct, exposed, comm, wall, _ = shares[len(shares) // 2]
    if pct >= LOW_OVERLAP_PCT or comm <= LOW_OVERLAP_COMM_SHARE * wall:
        return []
    low = sum(1 for s in shares if s[0] < LOW_OVERLAP_PCT)
    worst = shares[0]
    return [
        RankFindingOut(
            kind="low_overlap",
            severity=_severity(exposed, wall),
            message=(
                f"{low} of {len(shares)} ranks overlap less than {LOW_OVERLAP_PCT:.0f}% of their communication "
                f"with compute (median rank: {pct:.0f}% of {fmt_time_ns(comm)}, {fmt_time_ns(exposed)} exposed; "
                f"lowest: rank {worst[4]}, {worst[0]:.0f}%)"
            ),
            rank=-1,
            step=-1,
            collective=-1,
            evidence_us=us(exposed),
        )
    ]
