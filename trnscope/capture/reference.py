"""PyTorch's own ``key_averages()`` figures, taken while the profiler is in memory."""

from __future__ import annotations

from typing import Any

from trnscope.core.model.session import ReferenceRow

_DEVICE_TYPES = ("CUDA", "PrivateUse1", "MTIA", "XPU", "HPU")


def reference_rows(prof: Any, group_by_input_shape: bool = False) -> list[ReferenceRow]:
    with_flops = bool(getattr(prof, "with_flops", False))
    with_memory = bool(getattr(prof, "profile_memory", False))
    rows = []
    for event in prof.key_averages(group_by_input_shape=group_by_input_shape):
        device_type = str(getattr(event, "device_type", "")).split(".")[-1]
        rows.append(
            ReferenceRow(
                name=event.key,
                calls=int(event.count),
                self_cpu_us=float(event.self_cpu_time_total),
                cpu_total_us=float(event.cpu_time_total),
                self_device_us=float(getattr(event, "self_device_time_total", 0.0) or 0.0),
                device_total_us=float(getattr(event, "device_time_total", 0.0) or 0.0),
                input_shapes=str(event.input_shapes) if group_by_input_shape else "",
                is_annotation=bool(getattr(event, "is_user_annotation", False)),
                is_device=device_type in _DEVICE_TYPES,
                flops=int(getattr(event, "flops", 0) or 0) if with_flops else None,
                **(_memory(event) if with_memory else {}),
            )
        )
    return rows


def _memory(event: Any) -> dict[str, int]:
    """The memory columns of one ``key_averages()`` row (``device_memory_usage`` was
    ``cuda_memory_usage`` before torch 2.4's rename)."""

    def read(*names: str) -> int:
        for name in names:
            value = getattr(event, name, None)
            if value is not None:
                return int(value)
        return 0

    return {
        "cpu_memory_bytes": read("cpu_memory_usage"),
        "self_cpu_memory_bytes": read("self_cpu_memory_usage"),
        "device_memory_bytes": read("device_memory_usage", "cuda_memory_usage"),
        "self_device_memory_bytes": read("self_device_memory_usage", "self_cuda_memory_usage"),
    }
