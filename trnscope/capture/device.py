"""Which device to profile on, and the profiler settings that go with it.

Trainium (``torch_neuronx`` importable and a ``neuron`` device present): CPU +
PrivateUse1 activities, a ``NeuronConfig`` passed as ``experimental_config`` and
``NeuronProfiler(config).export_trace`` as ``on_trace_ready``, exactly as the Neuron
docs show (``shared/reference/neuron-profile-formats.md`` §2).  CUDA: CPU + CUDA.
Otherwise CPU.  Every choice can be overridden.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from pathlib import Path
from typing import Any

import msgspec

from trnscope.core.base.errors import TrnscopeError


class NeuronOptions(msgspec.Struct):
    modes: list[str] = msgspec.field(default_factory=lambda: ["DEVICE", "RUNTIME"])
    capture_enabled_for_nc: str | None = None  # e.g. "0,1,2-5"
    max_events_per_nc: int | None = None
    correlate_device_time: bool = True  # passed only where NeuronConfig accepts it


class DevicePlan(msgspec.Struct):
    kind: str  # "neuron" | "cuda" | "cpu"
    device: str  # torch device string
    name: str = ""
    torch_neuronx_version: str = ""


def _neuron_available() -> bool:
    if importlib.util.find_spec("torch_neuronx") is None:
        return False
    try:
        import torch
        import torch_neuronx  # noqa: F401

        module = getattr(torch, "neuron", None)
        return module is not None and int(module.device_count()) > 0
    except Exception:  # a broken install is "not available", not a crash
        return False


def plan_device(requested: str | None = None) -> DevicePlan:
    import torch

    kind = (requested or "").lower() or None
    if kind is None:
        kind = "neuron" if _neuron_available() else ("cuda" if torch.cuda.is_available() else "cpu")
    if kind == "neuron":
        if importlib.util.find_spec("torch_neuronx") is None:
            raise TrnscopeError(
                "Neuron capture needs torch_neuronx, which is not installed on this host (use --device cpu or cuda)"
            )
        import torch_neuronx

        if not _neuron_available():
            raise TrnscopeError("torch_neuronx is installed but no neuron device is visible on this host")
        return DevicePlan("neuron", "neuron", "AWS Trainium (NeuronCore)", getattr(torch_neuronx, "__version__", ""))
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise TrnscopeError("CUDA capture requested but torch.cuda.is_available() is False on this host")
        return DevicePlan("cuda", "cuda", torch.cuda.get_device_name(0))
    if kind == "cpu":
        import platform

        return DevicePlan("cpu", "cpu", platform.processor() or platform.machine())
    raise TrnscopeError(f"unknown device {requested!r}: choose neuron, cuda or cpu")


def synchronize(plan: DevicePlan) -> None:
    """Wait for queued device work, so each profiled step ends with its device time."""
    import torch

    if plan.kind == "cuda":
        torch.cuda.synchronize()
    elif plan.kind == "neuron":
        module = getattr(torch, "neuron", None)
        if module is not None and hasattr(module, "synchronize"):
            module.synchronize()
        else:  # the multi-rank docs spell it torch_neuronx.synchronize()
            importlib.import_module("torch_neuronx").synchronize()


def neuron_activity(activities: Any) -> Any:
    """``ProfilerActivity.NEURON`` where this torch has it (one announcement shows it),
    else ``PrivateUse1`` (the how-to's spelling); both reach the same plugin."""
    return getattr(activities, "NEURON", None) or activities.PrivateUse1


XLA_DEBUG_FLAGS = ("XLA_IR_DEBUG", "XLA_HLO_DEBUG")


def neuron_capture_notes(environ: dict[str, str]) -> list[str]:
    """What the capture will lack, said in the session notes (Neuron docs: source
    locations need both flags set when the graphs are compiled)."""
    missing = [flag for flag in XLA_DEBUG_FLAGS if environ.get(flag, "") in ("", "0")]
    if not missing:
        return []
    return [
        f"{' and '.join(missing)} not set at capture: device instructions carry no Python source locations "
        "(set XLA_IR_DEBUG=1 XLA_HLO_DEBUG=1 before the graphs are compiled)"
    ]


def profiler_kwargs(
    plan: DevicePlan, output_dir: Path, neuron: NeuronOptions | None = None, neff_cache_dir: Path | None = None
) -> tuple[dict[str, Any], Any]:
    """Keyword arguments for ``torch.profiler.profile`` (without schedule/record
    options), and the NeuronConfig (or None).  ``neff_cache_dir`` (inside the session)
    is passed where NeuronConfig accepts it: the docs warn that NEFFs may otherwise be
    missing from the capture, and without them nothing can be exported."""
    from torch.profiler import ProfilerActivity

    if plan.kind == "cuda":
        return {"activities": [ProfilerActivity.CPU, ProfilerActivity.CUDA]}, None
    if plan.kind != "neuron":
        return {"activities": [ProfilerActivity.CPU]}, None
    from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode

    options = neuron or NeuronOptions()
    try:
        modes = [getattr(ProfileMode, mode) for mode in options.modes]
    except AttributeError as error:
        raise TrnscopeError(f"unknown Neuron profile mode: {error}") from None
    config_kwargs: dict[str, Any] = {"modes": modes, "profile_output_dir": str(output_dir)}
    if options.capture_enabled_for_nc:
        config_kwargs["capture_enabled_for_nc"] = options.capture_enabled_for_nc
    if options.max_events_per_nc:
        config_kwargs["max_events_per_nc"] = options.max_events_per_nc
    if options.correlate_device_time and _accepts(NeuronConfig, "correlate_device_time"):
        config_kwargs["correlate_device_time"] = True
    if neff_cache_dir is not None and _accepts(NeuronConfig, "neff_cache_dir"):
        neff_cache_dir.mkdir(parents=True, exist_ok=True)
        config_kwargs["neff_cache_dir"] = str(neff_cache_dir)
    config = NeuronConfig(**config_kwargs)
    return (
        {
            "activities": [ProfilerActivity.CPU, neuron_activity(ProfilerActivity)],
            "experimental_config": config,
            "on_trace_ready": NeuronProfiler(config).export_trace,
        },
        config,
    )


def _accepts(callable_: Any, name: str) -> bool:
    try:
        parameters = inspect.signature(callable_).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters  # an opaque **kwargs is not proof that the keyword is understood
