"""Reading one discovered source into a ``Trace``: the backend its kind names."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from trnscope.core.formats.discovery import SourceRef, discover
from trnscope.core.formats.options import DEFAULT, LoadOptions
from trnscope.core.formats.source import Progress
from trnscope.core.model import op_tree

if TYPE_CHECKING:  # NumPy: loaded by the readers themselves, when they run
    from trnscope.core.model.trace import Trace


def load_neuron_profile(
    path: Path,
    options: LoadOptions = DEFAULT,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    prefer: str | None = None,
) -> Trace:
    """A Neuron profile folder: the Neuron backend, with the Kineto backend reading its
    framework trace."""
    from trnscope.core.formats.kineto.lazyargs import event_args
    from trnscope.core.formats.kineto.loader import load_kineto
    from trnscope.core.formats.neuron.reader import load_neuron

    def read_framework(framework: Path) -> Trace:
        single = msgspec.structs.replace(options, workers=1)
        return load_kineto(framework, single, progress=progress, cancelled=cancelled)

    return load_neuron(
        path,
        use_cache=options.use_cache,
        prefer=prefer,
        read_framework=read_framework,
        read_args=event_args,
        warmup=options.warmup,
    )


def load_source(
    source: SourceRef,
    options: LoadOptions = DEFAULT,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Trace:
    """Read one discovered source with the backend its kind names."""
    path = Path(source.path)
    if source.kind == "neuron":
        trace = load_neuron_profile(path, options, progress=progress, cancelled=cancelled)
    else:
        from trnscope.core.formats.kineto.loader import load_kineto

        trace = load_kineto(path, options, progress=progress, cancelled=cancelled)
        if options.warmup:
            trace.warnings.append(
                f"--warmup {options.warmup} leaves out NeuronCore executions; this trace has none: nothing left out"
            )
    trace.label = source.label
    trace.synthetic = trace.synthetic or source.synthetic
    trace.op_tree = op_tree.resolve(options.op_tree, source.torch_version)
    return trace


def load_path(
    path: str | Path,
    options: LoadOptions = DEFAULT,
    *,
    select: str | None = None,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Trace:
    """Discover ``path`` and load one of its sources (the first unless ``select``)."""
    return load_source(discover(Path(path)).select(select), options, progress=progress, cancelled=cancelled)
