"""Loading: from a path the user typed to a ``Trace``.

``discover`` says what is at a path (a trace, a capture session, a Neuron profile
folder, a folder of traces); ``load_source`` reads one of its sources.  The parsed-index
cache sits one level up, in ``trnscope.core.opening.open``, because it stores links too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from trnscope.core.formats.discover import ProfileRef, SourceRef, discover
from trnscope.core.formats.source import Progress
from trnscope.core.model.trace import Trace

__all__ = ["ProfileRef", "SourceRef", "discover", "load_neuron_profile", "load_path", "load_source"]


def load_neuron_profile(
    path: Path,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    skip: tuple[str, ...] = (),
    use_cache: bool = True,
    prefer: str | None = None,
) -> Trace:
    """A Neuron profile folder: the Neuron backend, with the Kineto backend reading its
    framework trace."""
    from trnscope.core.formats.kineto.lazyargs import event_args
    from trnscope.core.formats.kineto.loader import load_kineto
    from trnscope.core.formats.neuron.reader import load_neuron

    def read_framework(framework: Path) -> Trace:
        return load_kineto(framework, progress=progress, cancelled=cancelled, skip=skip, workers=1, use_cache=use_cache)

    return load_neuron(path, use_cache=use_cache, prefer=prefer, read_framework=read_framework, read_args=event_args)


def load_source(
    source: SourceRef,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    skip: tuple[str, ...] = (),
    use_cache: bool = True,
    workers: int | None = None,
) -> Trace:
    """Read one discovered source with the backend its kind names."""
    path = Path(source.path)
    if source.kind == "neuron":
        trace = load_neuron_profile(path, progress=progress, cancelled=cancelled, skip=skip, use_cache=use_cache)
    else:
        from trnscope.core.formats.kineto.loader import load_kineto

        trace = load_kineto(
            path, progress=progress, cancelled=cancelled, skip=skip, workers=workers, use_cache=use_cache
        )
    trace.label = source.label
    trace.synthetic = trace.synthetic or source.synthetic
    return trace


def load_path(
    path: str | Path,
    select: str | None = None,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    skip: tuple[str, ...] = (),
    use_cache: bool = True,
    workers: int | None = None,
) -> Trace:
    """Discover ``path`` and load one of its sources (the first unless ``select``)."""
    ref = discover(Path(path))
    return load_source(
        ref.select(select), progress=progress, cancelled=cancelled, skip=skip, use_cache=use_cache, workers=workers
    )
