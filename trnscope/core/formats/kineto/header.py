"""The keys of a trace outside its events array: ``deviceProperties``,
``baseTimeNanoseconds``, distributed info, and the device kind they imply."""

from __future__ import annotations

from typing import Any

import msgspec

from trnscope.core.base.jsondepth import MAX_DEPTH, decode_bounded


class TraceHeader(msgspec.Struct):
    """The top-level keys outside ``traceEvents`` that readers act on."""

    schemaVersion: int | None = None
    deviceProperties: list[dict[str, Any]] | None = None
    displayTimeUnit: str | None = None
    baseTimeNanoseconds: int | float | None = None
    traceName: str | None = None
    distributedInfo: dict[str, Any] | None = None
    trnscope: str | None = None


def decode_header(buf: Any, kind: str, array_open: int, array_end: int) -> tuple[TraceHeader, dict[str, Any], str]:
    """The keys outside the events array: the ones readers use (typed) and all of them
    (``metadata``); values nested past ``MAX_DEPTH`` are dropped, and the third item says so."""
    if kind != "object":
        return TraceHeader(), {}, ""
    tail = bytes(buf[array_end + 1 :]) if array_end >= 0 else b"}"
    text = bytes(buf[:array_open]) + b"[]" + tail
    try:
        header, everything, flattened = _decode_both(text)
    except msgspec.DecodeError as error:
        if array_end >= 0:
            try:
                header, everything, flattened = _decode_both(bytes(buf[:array_open]) + b"[]}")
                return header, everything, _deep_note(flattened)
            except msgspec.DecodeError:
                pass
        return TraceHeader(), {}, f"top-level metadata unreadable ({error})"
    return header, everything, _deep_note(flattened)


def _decode_both(text: bytes) -> tuple[TraceHeader, dict[str, Any], bool]:
    header, deep_header = decode_bounded(text, TraceHeader)
    everything, deep_rest = decode_bounded(text)
    if not isinstance(everything, dict):
        everything = {}
    everything.pop("traceEvents", None)
    return header, everything, deep_header or deep_rest


def _deep_note(flattened: bool) -> str:
    return f"top-level values nested deeper than {MAX_DEPTH} levels were dropped" if flattened else ""


def detect_device_kind(cats: list[str], names: list[str], header: TraceHeader, metadata: dict[str, Any]) -> str:
    lowered = {c.lower() for c in cats if c}
    props = header.deviceProperties or []
    device_names = " ".join(str(p.get("name", "")) for p in props if isinstance(p, dict)).lower()
    if any(c.startswith("privateuse1") for c in lowered) or "neuron" in device_names or "trainium" in device_names:
        return (
            "neuron"
            if ("neuron" in device_names or "trainium" in device_names or _mentions_neuron(names, metadata))
            else "privateuse1"
        )
    if any(c.startswith("mtia") for c in lowered):
        return "mtia"
    if any(c.startswith("xpu") for c in lowered):
        return "xpu"
    if (
        "roctracer_version" in metadata
        or "hip_runtime_version" in metadata
        or any(n.startswith("hip") for n in names[:20000])
    ):
        return "rocm"
    if lowered & {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "runtime", "memcpy", "memset"}:
        return "cuda"
    if "amd" in device_names or "instinct" in device_names:
        return "rocm"
    if props:
        return "cuda"
    return "cpu"


def _mentions_neuron(names: list[str], metadata: dict[str, Any]) -> bool:
    if any("neuron" in str(k).lower() for k in metadata):
        return True
    return any("neuron" in n.lower() or n.startswith("nrt_") for n in names[:20000])
