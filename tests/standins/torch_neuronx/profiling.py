"""Stand-in for torch_neuronx.profiling (tests only)."""

from __future__ import annotations

import enum
import os
import time
from pathlib import Path

from torch._C._profiler import _ExperimentalConfig

from torch_neuronx import log


class ProfileMode(enum.Enum):
    DEVICE = "device"
    RUNTIME = "runtime"
    CPU_UTIL = "cpu_util"
    HOST_MEMORY = "host_memory"


def _check_common(modes, profile_output_dir, max_events_per_nc, capture_enabled_for_nc) -> None:  # type: ignore[no-untyped-def]
    if not modes or not all(isinstance(m, ProfileMode) for m in modes):
        raise TypeError(f"modes must be a non-empty list of ProfileMode, got {modes!r}")
    if not isinstance(profile_output_dir, str):
        raise TypeError("profile_output_dir must be a str")
    if not isinstance(max_events_per_nc, int) or max_events_per_nc <= 0:
        raise TypeError("max_events_per_nc must be a positive int")
    if capture_enabled_for_nc is not None and not isinstance(capture_enabled_for_nc, str):
        raise TypeError("capture_enabled_for_nc must be a string such as '0,1,2-5'")


def _config_string(profile_output_dir: str, max_events_per_nc: int, capture_enabled_for_nc: str | None) -> str:
    parts = [f"max_events_per_nc:{max_events_per_nc}", f"profile_output_dir:{profile_output_dir}"]
    if capture_enabled_for_nc:
        parts.append(f"capture_enabled_for_nc:{capture_enabled_for_nc}")
    return ";".join(parts)


class _NeuronConfigBase(_ExperimentalConfig):
    def _setup(self, modes, profile_output_dir, max_events_per_nc, capture_enabled_for_nc, **extra) -> None:  # type: ignore[no-untyped-def]
        modes = modes if modes is not None else [ProfileMode.DEVICE, ProfileMode.RUNTIME]
        _check_common(modes, profile_output_dir, max_events_per_nc, capture_enabled_for_nc)
        super().__init__(
            custom_profiler_config=_config_string(profile_output_dir, max_events_per_nc, capture_enabled_for_nc)
        )
        self.modes, self.profile_output_dir = modes, profile_output_dir
        log(
            "NeuronConfig",
            id=id(self),
            modes=[m.name for m in modes],
            profile_output_dir=profile_output_dir,
            max_events_per_nc=max_events_per_nc,
            capture_enabled_for_nc=capture_enabled_for_nc,
            **extra,
        )


if os.environ.get("STANDIN_NO_CORRELATE") == "1":

    class NeuronConfig(_NeuronConfigBase):
        """A NeuronConfig of an older release: no ``correlate_device_time`` and no
        ``neff_cache_dir``."""

        def __init__(
            self,
            modes=None,
            profile_output_dir="./profile_output",
            max_events_per_nc=1_000_000,
            capture_enabled_for_nc=None,
            precache_node_info=True,
        ):  # type: ignore[no-untyped-def]
            self._setup(modes, profile_output_dir, max_events_per_nc, capture_enabled_for_nc)

else:

    class NeuronConfig(_NeuronConfigBase):  # type: ignore[no-redef]
        def __init__(
            self,
            modes=None,
            profile_output_dir="./profile_output",
            max_events_per_nc=1_000_000,
            capture_enabled_for_nc=None,
            neff_cache_dir=None,
            precache_node_info=True,
            correlate_device_time=False,
        ):  # type: ignore[no-untyped-def]
            self._setup(
                modes,
                profile_output_dir,
                max_events_per_nc,
                capture_enabled_for_nc,
                correlate_device_time=correlate_device_time,
                neff_cache_dir=neff_cache_dir,
            )
            if neff_cache_dir is not None and not isinstance(neff_cache_dir, str):
                raise TypeError("neff_cache_dir must be a str")


class NeuronProfiler:
    def __init__(self, config: NeuronConfig) -> None:
        if not isinstance(config, NeuronConfig):
            raise TypeError("NeuronProfiler needs a NeuronConfig")
        self.config = config
        log("NeuronProfiler", id=id(self), config=id(config))

    def export_trace(self, prof) -> None:  # type: ignore[no-untyped-def]
        """Put the framework trace beside the runtime's files, as documented:
        ``<profile_output_dir>/<instance-id>_pid_<pid>/<timestamp>/trace.json``."""
        folder = Path(self.config.profile_output_dir) / f"i-0standin_pid_{os.getpid()}" / str(time.time_ns())
        folder.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(folder / "trace.json"))
        for name in ("ntrace.pb", "trace_info.pb"):
            (folder / name).write_bytes(b"stand-in placeholder")
        log("export_trace", profiler=id(self), folder=str(folder))
