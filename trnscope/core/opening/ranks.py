"""Many traces as map → reduce: the seam any executor drives.

``summarize_rank`` is the map: a module-level function from one picklable ``RankJob``
(a source and the options) to a small picklable ``RankResult``.  It opens the trace
where it lies (a pool process, a Dask worker), reduces it to a ``RankSummary`` — per-step
figures, collective arrivals and durations, and, when asked, the op table as exact
integer nanoseconds — and drops the trace.  The parent only ever holds summaries, so its
memory grows with the number of ranks, not with their size.

The reduces are exact and associative: ``analysis.ranks.reduce_ranks`` (collectives
matched across ranks, findings) and ``analysis.summary.merge_summary_figures`` (the op
tables of ``summary --merge``, integer ns added, rounded once at the end).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, as_completed

import msgspec

from trnscope.core.analysis.contracts import RanksOut
from trnscope.core.analysis.rank_summary import RankSummary, summarize_collectives
from trnscope.core.analysis.ranks import reduce_ranks
from trnscope.core.analysis.summary import SummaryFigures, summary_figures
from trnscope.core.base.errors import InputError, TrnscopeError
from trnscope.core.base.text import numbers_in
from trnscope.core.formats import SourceRef
from trnscope.core.formats.options import LoadOptions
from trnscope.core.opening.executors import ExecutorChoice, executor_for
from trnscope.core.opening.open import open_analysis

RankProgress = Callable[[int, int], None]  # (done, total)


class SummaryRequest(msgspec.Struct, frozen=True):
    """The op table each rank adds to its summary (``summary --merge``)."""

    group_by: str = "op"
    stack_depth: int = 5
    step: int = -1  # N of ProfilerStep#N; -1: all
    extras: frozenset[str] = frozenset()


class RankJob(msgspec.Struct, frozen=True):
    source: SourceRef
    rank_hint: int  # from the file name (rank3.json), else the position
    load: LoadOptions = LoadOptions(workers=1)  # one process per rank: no pool inside a pool
    collectives: bool = True
    summary: SummaryRequest | None = None


class RankResult(msgspec.Struct):
    """What comes back from a worker: the summary, or why there is none (one line)."""

    source: SourceRef
    summary: RankSummary | None = None
    table: SummaryFigures | None = None
    error: str = ""


def summarize_rank(job: RankJob) -> RankResult:
    """The map step.  An input problem is returned as text (one bad rank must not lose
    the others, and exceptions do not always travel back from a cluster intact)."""
    try:
        analysis = open_analysis(job.source, job.load)
        table = None
        if job.summary is not None:
            request = job.summary
            table = summary_figures(
                analysis,
                group_by=request.group_by,
                stack_depth=request.stack_depth,
                step=analysis.step_index(request.step) if request.step >= 0 else -1,
                extras=request.extras,
            )
        summary = None
        if job.collectives:
            summary = summarize_collectives(analysis, job.source.label)
            if summary.rank < 0:
                summary.rank = job.rank_hint
        analysis.finish()  # the index cache: the next open of this rank is fast
        return RankResult(job.source, summary, table)
    except (TrnscopeError, OSError, IndexError, ValueError) as error:
        return RankResult(job.source, error=str(error) or type(error).__name__)
    except MemoryError:
        return RankResult(job.source, error="out of memory reading this trace")


def rank_hints(sources: Sequence[SourceRef]) -> list[int]:
    """A rank per source from the numbers in the labels (``rank3``, ``pid 299`` → the
    order of those numbers), when each has one and they are distinct; else the order."""
    numbers = [numbers_in(s.label)[-1:] for s in sources]
    if all(numbers) and len({n[0] for n in numbers}) == len(numbers):
        values = [n[0] for n in numbers]
        if all(0 <= v < 1 << 20 for v in values) and max(values) < 4 * len(values):
            return values
        ordered = sorted(values)
        return [ordered.index(v) for v in values]
    return list(range(len(sources)))


def map_ranks(
    jobs: Sequence[RankJob],
    choice: ExecutorChoice,
    progress: RankProgress | None = None,
) -> list[RankResult]:
    """Run ``summarize_rank`` over the jobs on the executor chosen; results in job order."""
    results: list[RankResult | None] = [None] * len(jobs)
    with executor_for(choice, len(jobs)) as executor:
        for index, result in _run(jobs, executor):
            results[index] = result
            if progress is not None:
                progress(sum(r is not None for r in results), len(jobs))
    return [r for r in results if r is not None]


def _run(jobs: Sequence[RankJob], executor: Executor | None) -> Iterator[tuple[int, RankResult]]:
    if executor is None:
        for index, job in enumerate(jobs):
            yield index, summarize_rank(job)
        return
    futures = {executor.submit(summarize_rank, job): index for index, job in enumerate(jobs)}
    try:
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        for future in futures:
            future.cancel()


def rank_jobs(sources: Sequence[SourceRef], load: LoadOptions, summary: SummaryRequest | None = None) -> list[RankJob]:
    per_rank = msgspec.structs.replace(load, workers=1)
    hints = rank_hints(sources)
    return [
        RankJob(source, hint, per_rank, collectives=summary is None, summary=summary)
        for source, hint in zip(sources, hints, strict=True)
    ]


def usable(results: list[RankResult], what: str) -> tuple[list[RankResult], list[str]]:
    """The results that worked, and one warning per rank that did not; an error when
    none did."""
    good = [r for r in results if not r.error]
    warnings = [f"{r.source.label}: {r.error}" for r in results if r.error]
    if not good:
        first = warnings[0] if warnings else "nothing to read"
        raise InputError(f"no {what} could be read ({first})")
    return good, warnings


def analyse_ranks(
    sources: Sequence[SourceRef],
    load: LoadOptions,
    choice: ExecutorChoice,
    progress: RankProgress | None = None,
    step: int | None = None,
) -> tuple[RanksOut, list[RankSummary]]:
    """The ``ranks`` document of these sources, and the per-rank summaries it came from."""
    results = map_ranks(rank_jobs(sources, load), choice, progress)
    good, warnings = usable(results, "rank")
    summaries = [r.summary for r in good if r.summary is not None]
    document = reduce_ranks(summaries, step)
    document.warnings[:0] = [f"left out: {w}" for w in warnings]
    return document, summaries
