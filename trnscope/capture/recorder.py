"""Record clean profiles: warm up, profile N synchronised steps, keep PyTorch's own figures.

``record`` profiles one callable into a session; ``compare`` profiles several
implementations of the same operation under identical conditions, checking each
result against the first before it is profiled.
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from trnscope.capture.device import (
    DevicePlan,
    NeuronOptions,
    neuron_capture_notes,
    plan_device,
    profiler_kwargs,
    synchronize,
)
from trnscope.capture.kineto_markers import QuietSteps
from trnscope.capture.reference import reference_rows
from trnscope.capture.workspace import check_label, one_line, partial_session
from trnscope.core.base import settings
from trnscope.core.base.errors import TrnscopeError
from trnscope.core.base.text import plural
from trnscope.core.model.session import SessionManifest, VariantRecord

NEFF_CACHE_DIR = "neff_cache"  # inside each Neuron variant's folder, so exports find the graphs


class CaptureOptions(msgspec.Struct):
    warmup: int = 3
    steps: int = 5
    record_shapes: bool = True
    with_stack: bool = True
    profile_memory: bool = False
    with_flops: bool = True  # key_averages' FLOPs kept in session.json (the check of ours)
    device: str | None = None  # None: neuron if present, else cuda, else cpu
    region: str = ""  # record_function name wrapped around each call (aligns variants)
    neuron: NeuronOptions = msgspec.field(default_factory=NeuronOptions)
    rtol: float = 1e-3
    atol: float = 1e-4


def _versions() -> tuple[str, str]:
    import torch

    neuronx = ""
    if "torch_neuronx" in sys.modules:
        neuronx = getattr(sys.modules["torch_neuronx"], "__version__", "")
    return str(torch.__version__), str(neuronx)


def new_manifest(plan: DevicePlan, demo: str = "", notes: str = "") -> SessionManifest:
    torch_version, neuronx = _versions()
    if plan.kind == "neuron":
        notes = "; ".join([n for n in (notes, *neuron_capture_notes(dict(os.environ))) if n])
    return SessionManifest(
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        host=socket.gethostname(),
        device_kind=plan.kind,
        device_name=plan.name,
        torch_version=torch_version,
        torch_neuronx_version=neuronx or plan.torch_neuronx_version,
        python_version=platform.python_version(),
        command_line=list(sys.argv),
        demo=demo,
        notes=notes,
        cpu_count=os.cpu_count() or 0,
        load_average=[round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else [],
    )


def _max_abs_error(result: Any, reference: Any) -> float:
    import torch

    if isinstance(result, (tuple, list)):
        return max((_max_abs_error(r, e) for r, e in zip(result, reference)), default=0.0)
    if isinstance(result, torch.Tensor):
        return (
            float((result.detach().float().cpu() - reference.detach().float().cpu()).abs().max())
            if result.numel()
            else 0.0
        )
    return 0.0 if result == reference else float("inf")


def _close(result: Any, reference: Any, rtol: float, atol: float) -> bool:
    import torch

    if isinstance(result, (tuple, list)):
        return len(result) == len(reference) and all(_close(r, e, rtol, atol) for r, e in zip(result, reference))
    if isinstance(result, torch.Tensor):
        return result.shape == reference.shape and torch.allclose(
            result.detach().float().cpu(), reference.detach().float().cpu(), rtol=rtol, atol=atol
        )
    return bool(result == reference)


def _shapes(inputs: Sequence[Any]) -> list[list[int]]:
    import torch

    return [list(x.shape) for x in inputs if isinstance(x, torch.Tensor)]


def profile_callable(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    label: str,
    folder: Path,
    plan: DevicePlan,
    options: CaptureOptions,
    description: str = "",
) -> VariantRecord:
    """Warm up, then profile ``options.steps`` synchronised calls; write the trace into
    ``folder`` and return the variant's record (PyTorch's figures included)."""
    import torch
    from torch.profiler import profile, record_function, schedule

    for _ in range(options.warmup):
        fn(*inputs)
    synchronize(plan)

    if plan.kind == "neuron":
        trace_target = folder / label  # NeuronConfig.profile_output_dir: the Neuron layout
        trace_target.mkdir(parents=True, exist_ok=True)
        relative = label
    else:
        trace_target = folder / f"{label}.pt.trace.json.gz"
        relative = trace_target.name
    kwargs, _config = profiler_kwargs(
        plan,
        trace_target if plan.kind == "neuron" else folder,
        options.neuron,
        neff_cache_dir=trace_target / NEFF_CACHE_DIR if plan.kind == "neuron" else None,
    )
    region = options.region or label
    started = time.perf_counter()
    with (
        profile(
            schedule=schedule(wait=0, warmup=1, active=options.steps, repeat=1),
            record_shapes=options.record_shapes,
            with_stack=options.with_stack,
            profile_memory=options.profile_memory,
            with_flops=options.with_flops,
            **kwargs,
        ) as prof,
        QuietSteps(prof.step, wait=0, active=options.steps) as profiler_step,
    ):
        step_ms = []
        for _ in range(options.steps + 1):
            begun = time.perf_counter()
            with record_function(region):
                fn(*inputs)
            synchronize(plan)
            step_ms.append(round((time.perf_counter() - begun) * 1000.0, 4))
            profiler_step()
    wall_ms = (time.perf_counter() - started) * 1000.0 / (options.steps + 1)
    if plan.kind != "neuron":
        prof.export_chrome_trace(str(trace_target))
    reference = reference_rows(prof)
    by_shape = reference_rows(prof, group_by_input_shape=True) if options.record_shapes else []
    threads = int(torch.get_num_threads())
    del torch
    return VariantRecord(
        label=label,
        description=description,
        trace=relative,
        trace_format="neuron" if plan.kind == "neuron" else "kineto",
        warmup=options.warmup,
        steps=options.steps,
        input_shapes=_shapes(inputs),
        wall_ms=round(wall_ms, 3),
        step_ms=step_ms[1:],  # the first step is the profiler's own warm-up
        torch_threads=threads,
        reference=reference,
        reference_grouped_by_shape=by_shape,
    )


NOISY_SPREAD = 2.0  # a variant whose slowest step takes this many times its fastest is noisy


def noise_notes(manifest: SessionManifest) -> list[str]:
    """One note per variant whose steps vary more than ``NOISY_SPREAD``×: the figures
    of such a capture say more about the machine than about the variant."""
    notes = []
    for variant in manifest.variants:
        steps = [s for s in variant.step_ms if s > 0]
        if len(steps) >= 2 and max(steps) > NOISY_SPREAD * min(steps):
            load = ", ".join(f"{x:.1f}" for x in manifest.load_average) or "unknown"
            notes.append(
                f"{variant.label}: steps took {min(steps):.2f}–{max(steps):.2f} ms ({max(steps) / min(steps):.1f}×): "
                f"the machine was busy (load {load} on {plural(manifest.cpu_count, 'core')}) or torch's "
                f"{plural(variant.torch_threads, 'thread')} competed; torch.set_num_threads(1) or a quiet machine "
                "gives steadier figures"
            )
    return notes


def compare(
    variants: Mapping[str, Callable[..., Any]],
    inputs: Sequence[Any],
    *,
    out: str | Path,
    options: CaptureOptions | None = None,
    descriptions: Mapping[str, str] | None = None,
    demo: str = "",
    plan: DevicePlan | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> Path:
    """Profile every variant under identical conditions into one session folder.

    The first variant is the reference: each other variant's result must match it
    (``rtol``/``atol``) before it is profiled.  A variant that raises or differs is
    recorded as failed with its error; the others are kept."""
    options = options or CaptureOptions()
    if not variants:
        raise TrnscopeError("nothing to capture: no variants given")
    for label in variants:
        check_label(label)
    plan = plan or plan_device(options.device)
    with partial_session(Path(out)) as workspace:
        manifest = new_manifest(plan, demo=demo)
        reference_output: Any = None
        for index, (label, fn) in enumerate(variants.items()):
            description = (descriptions or {}).get(label, "")
            log(f"{label}: checking result" if index else f"{label}: reference run")
            try:
                result = fn(*inputs)
                synchronize(plan)
                if index == 0:
                    reference_output, error = result, 0.0
                else:
                    error = _max_abs_error(result, reference_output)
                    if not _close(result, reference_output, options.rtol, options.atol):
                        raise ValueError(f"result differs from {next(iter(variants))!r}: max abs error {error:.3g}")
                log(f"{label}: profiling {options.warmup} warm-up + {options.steps} steps")
                record = profile_callable(
                    fn, inputs, label=label, folder=workspace.temp, plan=plan, options=options, description=description
                )
                record.result_max_abs_error = error
            except Exception as failure:  # a failing variant is recorded; the session goes on
                if settings.debug():
                    traceback.print_exc()
                log(f"{label}: FAILED {one_line(failure)}")
                record = VariantRecord(
                    label=label,
                    description=description,
                    status="failed",
                    error=one_line(failure),
                    input_shapes=_shapes(inputs),
                )
            manifest.variants.append(record)
        if not manifest.ok_variants():
            errors = "; ".join(f"{v.label}: {v.error}" for v in manifest.variants)
            raise TrnscopeError(f"every variant failed ({errors})")
        for note in noise_notes(manifest):
            log(f"warning: {note}")
            manifest.notes = "; ".join(n for n in (manifest.notes, note) if n)
        return workspace.commit(manifest)


def record(
    fn: Callable[..., Any],
    inputs: Sequence[Any] = (),
    *,
    out: str | Path,
    label: str = "main",
    description: str = "",
    options: CaptureOptions | None = None,
) -> Path:
    """Profile one callable into a session folder; a workload that raises leaves no
    folder behind and raises a one-line error."""
    options = options or CaptureOptions()
    check_label(label)
    plan = plan_device(options.device)
    with partial_session(Path(out)) as workspace:
        manifest = new_manifest(plan)
        try:
            manifest.variants.append(
                profile_callable(
                    fn, inputs, label=label, folder=workspace.temp, plan=plan, options=options, description=description
                )
            )
        except TrnscopeError:
            raise
        except Exception as failure:
            raise TrnscopeError(f"the workload raised {one_line(failure)}") from None
        return workspace.commit(manifest)


@contextlib.contextmanager
def region(name: str) -> Iterator[None]:
    """Mark a region in the trace (a ``record_function`` range)."""
    from torch.profiler import record_function

    with record_function(name):
        yield
