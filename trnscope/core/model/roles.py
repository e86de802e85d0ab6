"""The one table that says what each trace category means.

Every loader maps the ``cat`` of an event to a *role* (what the event is) and a
*layer* (where it sits in the framework → runtime → device chain).  Unknown
categories stay visible as ``OTHER_HOST`` rather than being dropped.
"""

from __future__ import annotations

from enum import IntEnum


class Layer(IntEnum):
    FRAMEWORK = 0
    RUNTIME = 1
    DEVICE = 2
    ANNOTATION = 3
    FLOW = 4
    COUNTER = 5
    METADATA = 6


class Role(IntEnum):
    OP = 0  # cpu_op / Operator: an aten or custom operator
    ANNOTATION = 1  # record_function ranges, ProfilerStep#N
    PYTHON = 2  # python_function frames (with_stack)
    RUNTIME = 3  # host runtime API (cudaLaunchKernel, hipLaunchKernel, Neuron runtime)
    DRIVER = 4  # host driver API
    KERNEL = 5  # device kernel / NeuronCore execution
    MEMORY = 6  # device memcpy / memset
    DEVICE_ANNOTATION = 7  # gpu_user_annotation
    PROFILER = 8  # the profiler's own spans and overhead
    INSTANT = 9  # cpu_instant_event and other instants
    OTHER_HOST = 10  # an unknown category: kept, shown, counted as host time
    FLOW = 11
    COUNTER = 12
    METADATA = 13
    SYSTEM_RUNTIME = 14  # Neuron runtime events from the system profile (not part of the op tree)
    SYSTEM_HARDWARE = 15  # device events from a system profile that do not count as op device time


LAYER_OF_ROLE: dict[Role, Layer] = {
    Role.OP: Layer.FRAMEWORK,
    Role.ANNOTATION: Layer.ANNOTATION,
    Role.PYTHON: Layer.FRAMEWORK,
    Role.RUNTIME: Layer.RUNTIME,
    Role.DRIVER: Layer.RUNTIME,
    Role.KERNEL: Layer.DEVICE,
    Role.MEMORY: Layer.DEVICE,
    Role.DEVICE_ANNOTATION: Layer.DEVICE,
    Role.PROFILER: Layer.METADATA,
    Role.INSTANT: Layer.FRAMEWORK,
    Role.OTHER_HOST: Layer.FRAMEWORK,
    Role.FLOW: Layer.FLOW,
    Role.COUNTER: Layer.COUNTER,
    Role.METADATA: Layer.METADATA,
    Role.SYSTEM_RUNTIME: Layer.RUNTIME,
    Role.SYSTEM_HARDWARE: Layer.DEVICE,
}

# Category (lower case) → role, for every era: 2021 (`Operator`, `Runtime`, `Kernel`…),
# current Kineto, ROCm (same names as CUDA), MTIA, XPU and PrivateUse1 backends.
ROLE_OF_CATEGORY: dict[str, Role] = {
    "cpu_op": Role.OP,
    "operator": Role.OP,
    "hpu_op": Role.OP,
    "user_annotation": Role.ANNOTATION,
    "python_function": Role.PYTHON,
    "cuda_runtime": Role.RUNTIME,
    "runtime": Role.RUNTIME,
    "mtia_runtime": Role.RUNTIME,
    "xpu_runtime": Role.RUNTIME,
    "glow_runtime": Role.RUNTIME,
    "privateuse1_runtime": Role.RUNTIME,
    "cuda_driver": Role.DRIVER,
    "xpu_driver": Role.DRIVER,
    "privateuse1_driver": Role.DRIVER,
    "kernel": Role.KERNEL,
    "mtia_ccp_events": Role.KERNEL,
    "collective_comm": Role.KERNEL,
    "gpu_memcpy": Role.MEMORY,
    "memcpy": Role.MEMORY,
    "gpu_memset": Role.MEMORY,
    "memset": Role.MEMORY,
    "gpu_user_annotation": Role.DEVICE_ANNOTATION,
    "cuda_sync": Role.KERNEL,
    "xpu_sync": Role.KERNEL,
    "trace": Role.PROFILER,
    "overhead": Role.PROFILER,
    "cuda_profiler_range": Role.PROFILER,
    "cpu_instant_event": Role.INSTANT,
    "ac2g": Role.FLOW,
    "async_cpu_to_gpu": Role.FLOW,
    "async": Role.FLOW,
    "fwdbwd": Role.FLOW,
    "forward_backward": Role.FLOW,
    "fwd_bwd": Role.FLOW,
    "hardware_counters": Role.COUNTER,
    "mtia_counters": Role.COUNTER,
    "xpu_scope_profiler": Role.COUNTER,
    "neuron_rt": Role.SYSTEM_RUNTIME,
}

DEVICE_ROLES = frozenset({Role.KERNEL, Role.MEMORY, Role.DEVICE_ANNOTATION})

FLOW_TO_DEVICE_CATEGORIES = frozenset({"ac2g", "async_cpu_to_gpu", "async"})
FLOW_FWDBWD_CATEGORIES = frozenset({"fwdbwd", "forward_backward", "fwd_bwd"})


def role_of(category: str | None) -> Role:
    if not category:
        return Role.OTHER_HOST
    return ROLE_OF_CATEGORY.get(category.lower(), Role.OTHER_HOST)


# ProfilerStep#N annotations mark training steps; key_averages() groups them all as
# one "ProfilerStep*" row.
STEP_PREFIX = "ProfilerStep#"
STEP_GROUP = "ProfilerStep*"


def is_profiler_step(name: str) -> bool:
    return name.startswith(STEP_PREFIX)


def group_name(name: str) -> str:
    """The name an event is grouped under in op tables (``ProfilerStep#N`` → ``ProfilerStep*``)."""
    return STEP_GROUP if name.startswith(STEP_PREFIX) else name
