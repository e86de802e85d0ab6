"""SYNTHETIC Trainium profiles: whole capture folders in every layout users have."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from trnscope.core.formats.neuron.discover import SYNTHETIC_MARKER
from trnscope.core.model.session import SESSION_FILE, SessionManifest, VariantRecord, encode_manifest
from trnscope.testing.synth_neuron.device import device_profiles
from trnscope.testing.synth_neuron.exports import (
    _write_device_parquet,
    _write_json,
    _write_parquet,
    _write_system_parquet,
)
from trnscope.testing.synth_neuron.model import INSTANCE, SYNTHETIC_NOTE, TIMESTAMP_DIR, NeuronTruth, SynthOptions
from trnscope.testing.synth_neuron.session import SessionWriter, _kineto_text


def _truth(writer: SessionWriter) -> NeuronTruth:
    return NeuronTruth(
        ops=dict(writer.ops),
        executions=writer.executions,
        unlinked_executions=writer.unlinked,
        runtime_events=sum(1 for e in writer.system if e["trace_event_source"] == "neuron_rt"),
        instructions=sum(len(v) for v in writer.instructions.values()),
        physical_rows=sum(1 for e in writer.system if e["name"] == "nc_exec_running"),
    )


def _raw_files(folder: Path, writer: SessionWriter, ntff_names: list[str], neff_folder: Path | None = None) -> None:
    placeholder = f"{SYNTHETIC_NOTE}: placeholder, no published schema\n".encode()
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("ntrace.pb", "trace_info.pb", *ntff_names):
        (folder / name).write_bytes(placeholder)
    target = neff_folder or folder
    target.mkdir(parents=True, exist_ok=True)
    for model_id in writer.models.values():
        name = f"graph_{model_id:x}.neff" if neff_folder is not None else f"neff_{model_id:x}_vnc_0.neff"
        (target / name).write_bytes(placeholder)


def _writer(
    variant: str, pid: int, seed: int, steps: int, device_in_trace: bool, options: SynthOptions
) -> SessionWriter:
    writer = SessionWriter(variant, pid, seed, steps, device_in_trace, options)
    writer.run()
    return writer


def write_process_session(
    folder: Path,
    variant: str,
    *,
    pid: int = 4242,
    seed: int = 0,
    steps: int = 5,
    exports: tuple[str, ...] = ("json", "parquet"),
    mapping: bool = True,
    device_in_trace: bool = False,
    framework_trace: bool = True,
    flows: bool = True,
    options: SynthOptions | None = None,
) -> NeuronTruth:
    """The documented TorchNeuron layout, ``folder/<instance>_pid_<pid>/<timestamp>/``,
    for one variant, with its exports beside the capture; returns the truth."""
    opts = msgspec.structs.replace(options or SynthOptions(), flows=flows and (options or SynthOptions()).flows)
    writer = _writer(variant, pid, seed, steps, device_in_trace, opts)
    session = folder / f"{INSTANCE}_pid_{pid}" / TIMESTAMP_DIR
    session.mkdir(parents=True)
    (folder / SYNTHETIC_MARKER).write_text(SYNTHETIC_NOTE + "\n")
    if framework_trace:
        (session / "trace.json").write_bytes(_kineto_text(writer))
    if mapping:
        (session / "framework_mapping_20261130_141500_123.json").write_bytes(
            msgspec.json.encode({"version": 1, "data": writer.mapping})
        )
    _raw_files(session, writer, ["profile_nc_0_session_0.ntff"])
    if "json" in exports:
        _write_json(session / "neuron_explorer_json", writer)
    if "parquet" in exports:
        _write_parquet(session, writer)
    return _truth(writer)


LAYOUTS = ("april2026", "inspect", "vllm", "explorer_json", "parquet_ingest")


def write_layout(  # noqa: C901 - one case per documented capture layout
    out: Path,
    layout: str,
    *,
    variant: str = "eager",
    ranks: int = 1,
    seed: int = 0,
    steps: int = 3,
    options: SynthOptions | None = None,
) -> dict[int, NeuronTruth]:
    """One of the layouts real captures use (``neuron-evidence.md`` §1), for ``ranks``
    processes under one output root; returns the truth per pid.

    * ``april2026``: ``pytorch_trace.json`` per rank (recording its pid) and one
      ``framework_mapping_*.json`` at the root; ``<inst>_pid_<pid>/`` with raw files and
      no ``<ts>`` level;
    * ``inspect``: runtime-inspect output, ``<inst>_pid_<pid>/<unix-ns>/`` with
      ``neff_<id>_vnc_0.neff`` and ``<id>_vnc_0.ntff``, no framework trace;
    * ``vllm``: NEFFs in ``<out>/neffs/`` beside the pid folders;
    * ``explorer_json``: explorer ≤2.30 JSON export: the system trace as ``profile.json``
      with ``device_profile_list``, device files ``<inst>_pid_<pid>_nc_0_session_0.json``;
    * ``parquet_ingest``: ``profiles/global/<name>@latest`` (system tables) and one
      ``<device_profile_name>@latest`` folder per device profile, no exec ids.
    """
    out.mkdir(parents=True, exist_ok=True)
    (out / SYNTHETIC_MARKER).write_text(SYNTHETIC_NOTE + "\n")
    truths: dict[int, NeuronTruth] = {}
    mapping: list[dict[str, Any]] = []
    for rank in range(ranks):
        pid = 5000 + rank
        opts = options or SynthOptions()
        if layout == "explorer_json":
            opts = msgspec.structs.replace(
                opts, device_files="session", device_time="relative", framework_in_system=True
            )
        if layout == "parquet_ingest":
            opts = msgspec.structs.replace(opts, exec_ids="none", device_time="relative", framework_in_system=True)
        writer = _writer(variant, pid, seed + rank, steps, False, opts)
        truths[pid] = _truth(writer)
        pid_dir = out / f"{INSTANCE}_pid_{pid}"
        if layout == "april2026":
            name = "pytorch_trace.json" if ranks == 1 else f"pytorch_trace_rank_{rank}.json"
            (out / name).write_bytes(_kineto_text(writer))
            mapping += writer.mapping
            _raw_files(pid_dir, writer, [f"{m:x}_instid_0_vnc_0.ntff" for m in writer.models.values()])
            for extra in ("cpu_util.pb", "host_mem.pb"):
                (pid_dir / extra).write_bytes(b"SYNTHETIC placeholder\n")
        elif layout == "inspect":
            _raw_files(pid_dir / "1778730986045717776", writer, [f"{m}_vnc_0.ntff" for m in writer.models.values()])
        elif layout == "vllm":
            _raw_files(pid_dir, writer, [f"{m:x}_instid_0_vnc_0.ntff" for m in writer.models.values()], out / "neffs")
        elif layout == "explorer_json":
            _write_json(
                out / "export", writer, system_name="profile.json" if ranks == 1 else f"profile_rank_{rank}.json"
            )
        elif layout == "parquet_ingest":
            profiles = device_profiles(writer)
            base = out / "profiles" / "global"
            for profile in profiles:
                profile.name = f"rank{rank}_{profile.name}"
            _write_system_parquet(base / f"rank{rank}@latest", writer, profiles)
            for profile in profiles:
                _write_device_parquet(base / f"{profile.name}@latest", profile, writer.options)
        else:
            raise ValueError(f"unknown layout {layout!r}; one of {', '.join(LAYOUTS)}")
    if layout == "april2026":
        (out / "framework_mapping_20261130_141500_123.json").write_bytes(
            msgspec.json.encode({"version": 1, "data": mapping})
        )
    return truths


def write_exports_for(session: Path, variant: str = "eager", pid: int = 4242, seed: int = 0, steps: int = 5) -> None:
    """What a stand-in ``neuron-explorer view`` writes: Parquet tables for a raw session."""
    writer = _writer(variant, pid, seed, steps, False, SynthOptions())
    _write_parquet(session, writer)


SAMPLE_OPTIONS = SynthOptions(lnc=2, device_time="relative")  # Trn2 defaults, as real exports time them


def write_synthetic_session(
    out: Path,
    *,
    steps: int = 5,
    seed: int = 0,
    exports: tuple[str, ...] = ("json", "parquet"),
    options: SynthOptions | None = None,
) -> dict[str, NeuronTruth]:
    """A capture session of the three-variant rmsnorm demo, as captured on Trainium
    (by default on Trn2: logical NeuronCores of size 2, device times relative to the
    device profile's start)."""
    out.mkdir(parents=True)
    truths: dict[str, NeuronTruth] = {}
    manifest = SessionManifest(
        created="2026-11-30T00:00:00+00:00",
        host="synthetic-trn2",
        device_kind="neuron",
        device_name="Trainium2 (SYNTHETIC)",
        torch_version="2.9.0 (synthetic)",
        torch_neuronx_version="synthetic",
        demo="rmsnorm",
        synthetic=True,
        notes=SYNTHETIC_NOTE,
    )
    descriptions = {
        "eager": "composed aten ops, one NEFF per op (SYNTHETIC)",
        "compiled": "torch.compile: one NEFF for the graph (SYNTHETIC)",
        "fused": "NKI kernel (SYNTHETIC)",
    }
    for index, variant in enumerate(("eager", "compiled", "fused")):
        truths[variant] = write_process_session(
            out / variant,
            variant,
            pid=4242 + index,
            seed=seed + index,
            steps=steps,
            exports=exports,
            options=options or SAMPLE_OPTIONS,
        )
        manifest.variants.append(
            VariantRecord(
                label=variant,
                description=descriptions[variant],
                trace=variant,
                trace_format="neuron",
                warmup=3,
                steps=steps,
            )
        )
    (out / SYNTHETIC_MARKER).write_text(SYNTHETIC_NOTE + "\n")
    (out / SESSION_FILE).write_bytes(encode_manifest(manifest))
    return truths


def write_multi_rank(out: Path, ranks: int = 2, seed: int = 0) -> dict[int, NeuronTruth]:
    out.mkdir(parents=True, exist_ok=True)
    return {
        rank: write_process_session(
            out, "eager", pid=5000 + rank, seed=seed + rank, exports=("parquet",) if rank % 2 else ("json",)
        )
        for rank in range(ranks)
    }


def write_raw_only(out: Path, seed: int = 0) -> NeuronTruth:
    """A capture before conversion: .pb / .ntff / .neff and the framework trace only."""
    return write_process_session(out, "eager", seed=seed, exports=())
