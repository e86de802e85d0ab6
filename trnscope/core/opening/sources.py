"""Which sources a command opens, and opening them: one path for every presenter.

``plan_sources`` turns the paths a user typed into the sources to open (one trace; all
traces of a folder, session or multi-rank profile for ``--merge``; two or three
variants to compare) and the notes to show about that choice.  ``open_source`` opens
one of them with the same options everywhere (``--select``, ``--skip``, ``--workers``,
``--no-cache``, ``--export``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.base.errors import InputError
from trnscope.core.formats import ProfileRef, SourceRef, discover
from trnscope.core.formats.options import LoadOptions
from trnscope.core.formats.sniff import one_jobs_ranks
from trnscope.core.formats.source import Progress
from trnscope.core.opening.open import fork_decode_helpers, open_analysis

if TYPE_CHECKING:  # (the export module is only loaded for raw Neuron captures)
    from trnscope.core.formats.neuron.export import ExportProgress

MAX_VARIANTS = 3


class Mode(Enum):
    ONE = "one"  # one trace: the selected one, else the first
    ALL = "all"  # every trace under one path (--merge)
    VARIANTS = "variants"  # two or three to compare: one per path, or all of one path
    RANKS = "ranks"  # every trace under every path given (one per rank)


class OpenOptions(LoadOptions, frozen=True):
    """How a command opens what the user typed: the load options and which source."""

    select: str | None = None
    export: bool = False  # run neuron-explorer first on raw Neuron captures


class SourcePlan(msgspec.Struct):
    sources: list[SourceRef]
    labels: list[str]  # distinct, in the order of ``sources``
    refs: list[ProfileRef]  # what each typed path turned out to be
    notes: list[str]


def plan_sources(paths: Sequence[str], mode: Mode, select: str | None = None) -> SourcePlan:
    if not paths:
        raise InputError("no path given")
    refs = [discover(Path(p)) for p in paths]
    notes = [note for ref in refs for note in ref.notes]
    if mode is Mode.VARIANTS:
        sources = _variants(refs, select, notes)
    elif mode is Mode.RANKS:
        sources = _ranks(refs, select)
    else:
        sources = _one_path(refs, mode, select, paths[0], notes)
    return SourcePlan(sources, distinct_labels([s.label for s in sources], [s.path for s in sources]), refs, notes)


def _variants(refs: list[ProfileRef], select: str | None, notes: list[str]) -> list[SourceRef]:
    """Two or three to compare: one per path, or the variants of one path."""
    sources = list(refs[0].sources) if len(refs) == 1 else [ref.select(select) for ref in refs]
    if len(sources) < 2:
        raise InputError("compare needs two or three traces (or a session with several variants)")
    if len(sources) > MAX_VARIANTS:
        if len(refs) > 1:
            raise InputError("compare takes at most three variants")
        shown = ", ".join(s.label for s in sources[:MAX_VARIANTS])
        notes.append(f"comparing the first {MAX_VARIANTS} of {len(sources)} variants: {shown}")
        sources = sources[:MAX_VARIANTS]
    return sources


def _ranks(refs: list[ProfileRef], select: str | None) -> list[SourceRef]:
    if select is not None:
        raise InputError("ranks reads every trace under the paths; leave out --select")
    sources = [source for ref in refs for source in ref.sources]
    if not sources:
        raise InputError(f"{refs[0].root}: nothing to open")
    return sources


def _one_path(refs: list[ProfileRef], mode: Mode, select: str | None, path: str, notes: list[str]) -> list[SourceRef]:
    """One trace (the selected one, else the first, said when there are others), or all
    of one path for --merge."""
    if len(refs) != 1:
        raise InputError("give one path (compare takes several)")
    ref = refs[0]
    if mode is Mode.ALL:
        if select is not None:
            raise InputError("--merge sums every trace under the path; leave out --select")
        if not ref.sources:
            raise InputError(f"{ref.root}: nothing to open")
        return list(ref.sources)
    sources = [ref.select(select)]
    if len(ref.sources) > 1 and select is None:
        others = ", ".join(s.label for s in ref.sources[1:6]) + (" …" if len(ref.sources) > 6 else "")
        notes.append(
            f"{path} holds {len(ref.sources)} traces; showing {sources[0].label!r} (others: {others}; {_what_else(ref, path)})"
        )
    return sources


def _what_else(ref: ProfileRef, path: str) -> str:
    """What else to do with a path of several traces, by what they are: variants of a
    kernel compare, one job's ranks sum or rank, unrelated traces are picked."""
    if is_variants_folder(ref):
        return f"pick with --select, or compare them: trnscope compare {path}"
    if ref.kind == "profiles":  # a folder of sessions and benchmarks: each is one to open
        first = ref.sources[0].label.split("/", 1)[0]
        return f"pick with --select, or open one profile: trnscope open {Path(path) / first}"
    if ref.kind == "neuron" or (
        all(s.kind == "kineto" for s in ref.sources) and one_jobs_ranks([Path(s.path) for s in ref.sources])
    ):
        return "pick with --select, sum them with --merge, or see them as ranks: trnscope ranks, or R"
    return "pick with --select, or compare two or three: trnscope compare A B"


def is_variants_folder(ref: ProfileRef) -> bool:
    """A folder of kernel benchmark files (Neuron runtime events): variants of one
    kernel, opened side by side."""
    return (
        ref.kind == "folder"
        and len(ref.sources) >= 2
        and all(s.kind == "neuron" and Path(s.path).is_file() for s in ref.sources)
    )


def distinct_labels(labels: list[str], paths: Sequence[str] = ()) -> list[str]:
    """The labels, told apart where two are the same: by the nearest folders of their
    ``paths`` that differ (three sessions of one script compared: "0:infer_cuda_graph",
    "1:infer_cuda_graph", … said nothing of which was which; now
    "cuda_graph_eager_session/infer_cuda_graph", …), else numbered (one file twice)."""
    if len(set(labels)) == len(labels):
        return labels
    if len(paths) == len(labels):
        folders = [Path(path).resolve().parent.parts for path in paths]
        for depth in range(1, max(len(parts) for parts in folders) + 1):
            named = [
                "/".join(parts[-depth:]) + "/" + label if labels.count(label) > 1 else label
                for parts, label in zip(folders, labels)
            ]
            if len(set(named)) == len(named):
                return named
    return [f"{i}:{label}" for i, label in enumerate(labels)]


def open_source(
    source: SourceRef,
    options: OpenOptions,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    export_progress: ExportProgress | None = None,
) -> Analysis:
    """One source as an ``Analysis``, through the index cache unless ``use_cache`` is off."""
    if options.export and source.kind == "neuron":
        from trnscope.core.formats.neuron.export import ensure_export  # (subprocess and hashing: ~9 ms)

        ensure_export(Path(source.path), progress=export_progress)
    return open_analysis(source, _load_options(options), progress=progress, cancelled=cancelled)


def _load_options(options: OpenOptions) -> LoadOptions:
    return LoadOptions(**{field: getattr(options, field) for field in LoadOptions.__struct_fields__})


def fork_helpers_for(source: SourceRef, options: OpenOptions) -> bool:
    """``open.fork_decode_helpers`` for an ``open_source`` about to run in a thread."""
    return fork_decode_helpers(source, _load_options(options))
