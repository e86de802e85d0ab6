"""SYNTHETIC Trainium profiles: device profiles (instructions, DMA, collectives) as JSON."""

from __future__ import annotations

from typing import Any

import msgspec

from trnscope.testing.synth_neuron.model import BASE_TIME_NS, ENGINES, INSTANCE, SYNTHETIC_NOTE, SynthOptions, device_ns
from trnscope.testing.synth_neuron.session import SessionWriter


class DeviceProfileOut(msgspec.Struct):
    """One device profile as an export writes it: its rows in the profile's time base."""

    name: str
    nc: int
    model_id: int  # -1 in session mode (every model run on the core)
    instructions: list[dict[str, Any]]
    dma: list[dict[str, Any]]
    cc: list[dict[str, Any]]
    executions: list[tuple[int, int]]  # (start, end) in the profile's time base
    first_hw_timestamp: int  # device clock of the profile's start


def device_profiles(writer: SessionWriter) -> list[DeviceProfileOut]:
    """The device profiles of a session: one per NEFF (model mode) or one for the
    NeuronCore (session mode); timestamps on the device clock, or relative to the
    profile's start (how real exports give them)."""
    opts = writer.options
    by_model = {e.model_id: [] for e in writer.executions}  # type: dict[int, list[tuple[int, int]]]
    for e in writer.executions:
        by_model[e.model_id].append(
            (device_ns(e.host_start_ns - BASE_TIME_NS), device_ns(e.host_end_ns - BASE_TIME_NS))
        )
    stray = (device_ns(writer.stray_window[0]), device_ns(writer.stray_window[1]))
    if opts.device_files == "session":
        groups = [(-1, sorted(m for m in writer.instructions))]
    else:
        groups = [(m, [m]) for m in sorted(writer.instructions)]
    out = []
    for model_id, models in groups:
        windows = sorted(w for m in models for w in by_model.get(m, []))
        if model_id == -1:
            windows = sorted([stray, *windows])  # session mode sees every execution on the core
        first = windows[0][0] - 1_000  # the profile starts a little before its first execution
        shift = first if opts.device_time == "relative" else 0
        rows = sorted((r for m in models for r in writer.instructions[m]), key=lambda r: r["timestamp"])
        out.append(
            DeviceProfileOut(
                name=(f"{INSTANCE}_pid_{writer.pid}_nc_0_session_0" if model_id == -1 else f"nc0_model_{model_id}"),
                nc=0,
                model_id=model_id,
                instructions=[dict(r, timestamp=r["timestamp"] - shift) for r in rows],
                dma=[dict(d, timestamp=d["timestamp"] - shift) for m in models for d in writer.dma[m]],
                cc=[dict(c, timestamp=c["timestamp"] - shift) for m in models for c in writer.cc_ops[m]],
                executions=[(a - shift, b - shift) for a, b in windows],
                first_hw_timestamp=first,
            )
        )
    return out


def _device_json(profile: DeviceProfileOut, options: SynthOptions) -> bytes:
    rows = profile.instructions
    doc = {
        "summary": [_summary(rows)],
        "instruction": [
            {
                k: (str(v) if k == "timestamp" and i % 7 == 0 else v)
                for k, v in row.items()
                if k not in ("engine", "hbm_read_bytes") and not (k == "pcore_idx" and options.lnc == 1)
            }
            for i, row in enumerate(rows)
        ],
        "cc_ops": profile.cc,
        "active_time": [],
        "layer_summary": [],
        "dma": [
            {
                "variable": d["queue_name"],
                "transfer_size": d["transfer_bytes"],  # explorer ≤2.30 spells it this way
                "source": "HBM" if d["queue_type"] == "input" else "SB",
                "dest": "SB" if d["queue_type"] == "input" else "HBM",
                "queue_type": d["queue_type"],
                "timestamp": d["timestamp"],
                "duration": d["duration"],
                "subgraph": 0,
            }
            for d in profile.dma
        ],
        "profile_info": [{"ntff": "profile.ntff", "neff": "model.neff", "synthetic": SYNTHETIC_NOTE}],
    }
    return msgspec.json.encode(doc)


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {"event_count": len(rows)}
    for engine in ENGINES:
        mine = [r for r in rows if r["engine"] == engine]
        summary[f"{engine}_engine_instruction_count"] = len(mine)
        summary[f"{engine}_engine_instruction_time"] = sum(r["duration"] for r in mine) / 1e9
    return summary
