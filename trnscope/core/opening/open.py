"""From a source to an ``Analysis``, through the parsed-index cache."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.flops import seed_flops
from trnscope.core.analysis.memory import seed_memory_records
from trnscope.core.formats import SourceRef, load_source
from trnscope.core.formats.options import DEFAULT, LoadOptions
from trnscope.core.formats.source import Progress
from trnscope.core.opening import index_cache


def open_analysis(
    source: SourceRef,
    options: LoadOptions = DEFAULT,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Analysis:
    path = Path(source.path)
    key: dict[str, object] = {"skip": sorted(options.skip), "kind": source.kind}  # what the cached index depends on
    if options.warmup:
        key["warmup"] = options.warmup
    cacheable = options.use_cache and path.is_file() and source.kind == "kineto"
    if cacheable:
        started = time.perf_counter()
        cached = index_cache.load(path, key)
        if cached is not None:
            trace = cached.trace
            # the index is keyed by the file, not by the path it was first opened as
            trace.source = trace.stats.path = source.path
            trace.label = source.label
            trace.synthetic = trace.synthetic or source.synthetic
            trace.stats.seconds = time.perf_counter() - started
            analysis = Analysis(trace, cached.links, cached.times)
            # read from args by an earlier open: never again
            seed_memory_records(analysis, cached.memory)
            seed_flops(analysis, cached.flops)
            return analysis
    trace = load_source(source, options, progress=progress, cancelled=cancelled)
    analysis = Analysis(trace)
    if cacheable:
        # Written after the caller has shown its first result (``Analysis.finish``):
        # the cache speeds up the next open and must not slow down this one.
        analysis.pending.append(lambda: index_cache.store(path, key, analysis))
    return analysis
