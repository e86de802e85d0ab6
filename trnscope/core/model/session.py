"""The capture-session manifest (``session.json``), shared by capture and viewer.

Lives in the core so the viewer can read sessions without torch installed.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

SESSION_FILE = "session.json"
FORMAT_VERSION = 1


class ReferenceRow(msgspec.Struct, omit_defaults=True):
    """One row of PyTorch's own ``key_averages()``, kept to check our numbers against."""

    name: str
    calls: int
    self_cpu_us: float
    cpu_total_us: float
    self_device_us: float = 0.0
    device_total_us: float = 0.0
    input_shapes: str = ""
    is_annotation: bool = False
    is_device: bool = False
    flops: int | None = None  # key_averages' flops, when captured with with_flops=True
    # key_averages' memory (bytes allocated minus freed), when captured with profile_memory=True
    cpu_memory_bytes: int | None = None
    self_cpu_memory_bytes: int | None = None
    device_memory_bytes: int | None = None
    self_device_memory_bytes: int | None = None


class VariantRecord(msgspec.Struct, omit_defaults=True):
    label: str
    description: str = ""
    status: str = "ok"  # "ok" or "failed"
    error: str = ""
    trace: str = ""  # path relative to the session folder (a file, or a Neuron profile folder)
    trace_format: str = "kineto"  # "kineto" or "neuron"
    warmup: int = 0
    steps: int = 0
    input_shapes: list[list[int]] = []
    result_max_abs_error: float | None = None  # vs the reference implementation
    wall_ms: float = 0.0
    step_ms: list[float] = []  # each profiled step's wall time (host clock, synchronised)
    torch_threads: int = 0  # torch.get_num_threads() while it ran
    reference: list[ReferenceRow] = []
    reference_grouped_by_shape: list[ReferenceRow] = []


class SessionManifest(msgspec.Struct, omit_defaults=True):
    format_version: int = FORMAT_VERSION
    created: str = ""
    host: str = ""
    device_kind: str = "cpu"
    device_name: str = ""
    torch_version: str = ""
    torch_neuronx_version: str = ""
    python_version: str = ""
    command_line: list[str] = []
    demo: str = ""
    synthetic: bool = False
    notes: str = ""
    cpu_count: int = 0
    load_average: list[float] = []  # os.getloadavg() when the capture began (1, 5, 15 min)
    variants: list[VariantRecord] = []

    def ok_variants(self) -> list[VariantRecord]:
        return [v for v in self.variants if v.status == "ok"]


# A capture's manifest holds its key_averages() rows: a few MB for a large model.  A
# larger file is no manifest of ours, and read whole it could take all memory.
MAX_MANIFEST_BYTES = 256 << 20


class ManifestTooLarge(ValueError):
    """A ``session.json`` larger than ``MAX_MANIFEST_BYTES``: not read."""


def manifest_bytes(path: Path) -> bytes:
    """The bytes of the manifest at ``path``; ``ManifestTooLarge`` past the limit (read
    no further than one byte beyond it)."""
    with path.open("rb") as file:
        data = file.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:
        raise ManifestTooLarge(f"larger than {MAX_MANIFEST_BYTES >> 20} MiB, more than any capture writes: not read")
    return data


def read_manifest(folder: Path) -> SessionManifest:
    return msgspec.json.decode(manifest_bytes(folder / SESSION_FILE), type=SessionManifest)


def encode_manifest(manifest: SessionManifest) -> bytes:
    return msgspec.json.format(msgspec.json.encode(manifest), indent=2) + b"\n"
