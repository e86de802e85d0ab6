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
from trnscope.core.model import op_tree
from trnscope.core.opening import index_cache


def _index_key(source: SourceRef, options: LoadOptions) -> dict[str, object]:
    """What the cached index depends on."""
    key: dict[str, object] = {"skip": sorted(options.skip), "kind": source.kind}
    # the op tree the figures are cached for (``model.op_tree``)
    key["op_tree"] = op_tree.resolve(options.op_tree, source.torch_version)
    if options.warmup:
        key["warmup"] = options.warmup
    return key


def _cacheable(source: SourceRef, options: LoadOptions) -> bool:
    return options.use_cache and Path(source.path).is_file() and source.kind == "kineto"


def fork_decode_helpers(source: SourceRef, options: LoadOptions) -> bool:
    """Before ``open_analysis`` runs in a thread: fork the worker processes of its
    parallel decode now, while this process runs no other thread
    (``parallel.fork_helpers_ahead``) — when it will decode in parallel: a Kineto file
    big enough, with no index cached for it.  The load's decode takes them; helpers it
    did not take end with ``parallel.close_helpers_ahead``."""
    from trnscope.core.formats.kineto.loader import decodes_in_parallel, default_workers
    from trnscope.core.formats.kineto.parallel import fork_helpers_ahead

    path = Path(source.path)
    if source.kind != "kineto" or not decodes_in_parallel(path, options.workers):
        return False
    if _cacheable(source, options) and index_cache.present(path, _index_key(source, options)):
        return False
    return fork_helpers_ahead(default_workers() if options.workers is None else options.workers)


def open_analysis(
    source: SourceRef,
    options: LoadOptions = DEFAULT,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Analysis:
    path = Path(source.path)
    key = _index_key(source, options)
    cacheable = _cacheable(source, options)
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
