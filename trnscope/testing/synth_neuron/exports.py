"""SYNTHETIC Trainium profiles: the system profile as JSON and every table as Parquet."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec

from trnscope.testing.synth_neuron.device import DeviceProfileOut, _device_json, _summary, device_profiles
from trnscope.testing.synth_neuron.model import BASE_TIME_NS, INSTANCE, SYNTHETIC_NOTE, SynthOptions
from trnscope.testing.synth_neuron.session import SessionWriter


def _system_json(writer: SessionWriter, profiles: list[DeviceProfileOut] | None = None) -> bytes:
    """Legacy JSON export: documented shape (§7.1): Unix-ns ``timestamp``, ns
    ``duration``, string ``lnc_idx`` / ``process_id`` and string payload numbers; real
    files add ``device_profile_list`` and ``system_profile_metadata``."""
    events = []
    for e in _system_events(writer):
        if e["trace_event_source"] == "framework":
            item = {
                "name": e["name"],
                "group": f"framework-{e['thread_id']}",
                "type": 99999,
                "timestamp": e["start_ts"],
                "duration": e["duration_ns"],
                "process_id": str(writer.pid),
                "thread_id": e["thread_id"],
                "instance_id": INSTANCE,
                "flow_id": e.get("flow_id", []),
            }
        else:
            item = {
                "name": e["name"],
                "timestamp": e["start_ts"],
                "duration": e["duration_ns"],
                "id": str(e["id"]),
                "parent_id": "0",
                "group": "nrt-nc-000",
                "instance_id": INSTANCE,
                "lnc_idx": str(e.get("nc_idx", 0)),
                "process_id": str(writer.pid),
                "thread_id": e["thread_id"],
                "type": 11 if e["trace_event_source"] == "neuron_rt" else 12,
            }
            for key in ("exec_id", "nrta_seq_id", "model_id", "size"):
                if key in e:
                    item[key] = str(e[key])
            for key in (
                "model_name",
                "nc_start_timestamp_ns",
                "nc_stop_timestamp_ns",
                "cpu_timestamp_ns",
                "nc_timestamp_ns",
                "device_core_idx",
                "nc_idx",
                "timestamp_unit",
                "flow_id",
                "framework_stream_id",
            ):
                if key in e:
                    item[key] = e[key]
        events.append(item)
    first = min(e["start_ts"] for e in writer.system)
    last = max(e["start_ts"] + e["duration_ns"] for e in writer.system)
    doc = {
        "trace_event": events,
        "warnings": [{"message": SYNTHETIC_NOTE}],
        "system_profile_metadata": [
            {"first_ts_ns": first, "last_ts_ns": last, "hbm_capacity_bytes": 96 << 30, "ntff_version": 2}
        ],
        "device_profile_list": [
            {"nc_id": p.nc, "device_profile_name": p.name, **({"model_id": p.model_id} if p.model_id >= 0 else {})}
            for p in profiles or []
        ],
        "mem_usage": [
            {
                "timestamp": BASE_TIME_NS + 1_000_000,
                "duration": 1_000_000,
                "instance_id": INSTANCE,
                "usage": 5 << 30,
                "percent_usage": 5.2,
            }
        ],
        "cpu_util": [
            {
                "timestamp": BASE_TIME_NS + 1_000_000,
                "duration": 1_000_000,
                "instance_id": INSTANCE,
                "cpu_id": "0",
                "util": 37.5,
            }
        ],
    }
    return msgspec.json.encode(doc)


def _system_events(writer: SessionWriter) -> list[dict[str, Any]]:
    """The system profile's events; with ``framework_in_system`` every framework event
    of trace.json is copied in (Explorer does that when trace.json sits beside the
    capture), the submit events keeping their flow ids."""
    events = list(writer.system)
    if not writer.options.framework_in_system:
        return events
    out = [e for e in events if e["trace_event_source"] != "framework"]
    for index, f in enumerate(writer.framework_events):
        # synthetic choice: the operator-dispatch event (on the op's thread, inside the
        # op) carries the flow to the runtime, as Explorer's "PrivateUse1 runtime" rows
        flow = writer.dispatch_flows.get((f["tid"], f["start"])) if writer.options.flows else None
        out.append(
            {
                "id": 10_000_000 + index,
                "name": f["name"],
                "trace_event_source": "framework",
                "start_ts": BASE_TIME_NS + f["start"],
                "duration_ns": f["dur"],
                "thread_id": f["tid"],
                **({"flow_id": [flow]} if flow is not None else {}),
            }
        )
    return out


def _write_system_parquet(system_dir: Path, writer: SessionWriter, profiles: list[DeviceProfileOut]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    system_dir.mkdir(parents=True, exist_ok=True)
    columns: dict[str, list[Any]] = defaultdict(list)
    no_exec = writer.options.exec_ids == "none"
    for e in _system_events(writer):
        columns["id"].append(e["id"])
        columns["name"].append(e["name"])
        columns["start_ts"].append(e["start_ts"])
        columns["end_ts"].append(e["start_ts"] + e["duration_ns"])
        columns["duration_ns"].append(e["duration_ns"])
        columns["trace_event_source"].append(e["trace_event_source"])
        columns["instance_id"].append(INSTANCE)
        columns["process_id"].append(writer.pid)
        columns["thread_id"].append(e["thread_id"])
        columns["nc_idx"].append(e.get("nc_idx"))
        columns["pcore_idx"].append(e.get("pcore_idx", 0) if e.get("nc_idx") is not None else None)
        columns["worker_gid"].append(e.get("nc_idx"))
        columns["flow_id"].append(e.get("flow_id"))
        columns["framework_stream_id"].append(e.get("framework_stream_id"))
        # Parquet: exec_id, nrta_seq_id, nc_*_timestamp_ns and sync fields are no columns;
        # where present they sit in extra_attributes_json (and real files may lack them)
        keys = ("model_id", "model_name", "size") if no_exec else (
            "exec_id", "nrta_seq_id", "model_id", "model_name", "nc_start_timestamp_ns", "nc_stop_timestamp_ns",
            "cpu_timestamp_ns", "nc_timestamp_ns", "size",
        )  # fmt: skip
        extra = {k: e[k] for k in keys if k in e}
        columns["extra_attributes_json"].append(msgspec.json.encode(extra).decode() if extra else None)
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("start_ts", pa.int64()),
            ("end_ts", pa.int64()),
            ("duration_ns", pa.int64()),
            ("trace_event_source", pa.string()),
            ("instance_id", pa.string()),
            ("process_id", pa.int64()),
            ("thread_id", pa.int64()),
            ("nc_idx", pa.int64()),
            ("pcore_idx", pa.int64()),
            ("worker_gid", pa.int64()),
            ("flow_id", pa.list_(pa.string())),
            ("framework_stream_id", pa.string()),
            ("extra_attributes_json", pa.string()),
        ]
    )
    pq.write_table(pa.table(dict(columns), schema=schema), system_dir / "SystemProfileEvents.parquet")
    first = min(e["start_ts"] for e in writer.system)
    last = max(e["start_ts"] + e["duration_ns"] for e in writer.system)
    pq.write_table(
        pa.table(
            {
                "first_ts_ns": [str(first)],
                "last_ts_ns": [str(last)],
                "ntff_version": ["2"],
                "hbm_capacity_bytes": [96 << 30],
                "note": [SYNTHETIC_NOTE],
            }
        ),
        system_dir / "SystemProfileMetadata.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "device_profile_name": [p.name for p in profiles],
                "instance_id": [INSTANCE] * len(profiles),
                "process_id": [writer.pid] * len(profiles),
                "nc_id": [p.nc for p in profiles],
                "session_id": [0] * len(profiles),
                "model_id": [p.model_id for p in profiles],
            }
        ),
        system_dir / "DeviceProfileList.parquet",
    )


def _write_device_parquet(device_dir: Path, profile: DeviceProfileOut, options: SynthOptions) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    device_dir.mkdir(parents=True)
    rows = profile.instructions
    start = [r["timestamp"] for r in rows]
    dur = [r["duration"] for r in rows]
    # Instruction is split in two files, as Explorer does for big tables.
    half = len(rows) // 2
    for part, sl in enumerate((slice(0, half), slice(half, None))):
        pq.write_table(
            pa.table(
                {
                    "start_ts": start[sl],
                    "end_ts": [s + d for s, d in zip(start[sl], dur[sl])],
                    "duration_ns": dur[sl],
                    "engine": [r["engine"] for r in rows[sl]],
                    "timeline_track": [r["subgroup"] for r in rows[sl]],
                    "pcore_idx": [r["pcore_idx"] for r in rows[sl]],
                    "opcode": [r["opcode"] for r in rows[sl]],
                    "operands": [r["operands"] for r in rows[sl]],
                    "hlo_name": [r["hlo_name"] for r in rows[sl]],
                    "nki_source_location": [r["nki_source_location"] for r in rows[sl]],
                    "evt_wait_time_ns": [r["evt_wait_time_ns"] for r in rows[sl]],
                    "hbm_read_bytes": [r["hbm_read_bytes"] for r in rows[sl]],
                }
            ),
            device_dir / f"Instruction_{part}.parquet",
        )
    dma = profile.dma
    pq.write_table(
        pa.table(
            {
                "start_ts": [d["timestamp"] for d in dma],
                "end_ts": [d["timestamp"] + d["duration"] for d in dma],
                "duration_ns": [d["duration"] for d in dma],
                "queue_name": [d["queue_name"] for d in dma],
                "queue_type": [d["queue_type"] for d in dma],
                "read_bytes": [d["read_bytes"] for d in dma],
                "write_bytes": [d["write_bytes"] for d in dma],
                "transfer_bytes": [d["transfer_bytes"] for d in dma],
                "engine_idx": [d["engine_idx"] for d in dma],
                "packet_aggregation_id": list(range(len(dma))),
            }
        ),
        device_dir / "DmaPacket.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "id": list(range(len(dma))),
                # input queues read HBM into the state buffer, output queues write it back
                "op": ["read" if d["queue_type"] == "input" else "write" for d in dma],
                "source": ["[HBM]" if d["queue_type"] == "input" else "[SB]" for d in dma],
                "dest": ["[SB]" if d["queue_type"] == "input" else "[HBM]" for d in dma],
                "block_id": [0] * len(dma),
            }
        ),
        device_dir / "DmaPacketAggregated.parquet",
    )
    cc = profile.cc
    if cc:  # Explorer writes a table only when the profile has that activity
        pq.write_table(
            pa.table(
                {
                    "start_ts": [c["timestamp"] for c in cc],
                    "end_ts": [c["timestamp"] + c["duration"] for c in cc],
                    "duration_ns": [c["duration"] for c in cc],
                    "operation": [c["operation"] for c in cc],
                    "input_size": [c["input_size"] for c in cc],
                    "output_size": [c["output_size"] for c in cc],
                    "replica_group": [c["replica_group"] for c in cc],
                    "trigger_engine": [c["trigger_engine"] for c in cc],
                }
            ),
            device_dir / "CcOp.parquet",
        )
    if options.execution_info:
        pq.write_table(
            pa.table(
                {
                    "execution_start_ts": [a for a, _ in profile.executions],
                    "execution_end_ts": [b for _, b in profile.executions],
                }
            ),
            device_dir / "ExecutionInfo.parquet",
        )
    pq.write_table(pa.table({k: [v] for k, v in _summary(rows).items()}), device_dir / "Summary.parquet")
    pq.write_table(
        pa.table(
            {
                "profile_schema_version": ["7.4.0"],
                "neuroncore_idx": [profile.nc],
                "profile_name": [profile.name],
                "num_physical_cores": [options.lnc],
                "vnc_enabled": [options.lnc > 1],
                "first_hw_timestamp": [profile.first_hw_timestamp],  # device clock of the profile start
                "last_hw_timestamp": [max(s + d for s, d in zip(start, dur))],
                "ticks_per_nanosec": [1.4],
                "instance_type": ["trn2.48xlarge"],
                "is_simulation": [False],
                "note": [SYNTHETIC_NOTE],
            }
        ),
        device_dir / "Metadata.parquet",
    )


def _write_parquet(session: Path, writer: SessionWriter) -> None:
    profiles = device_profiles(writer)
    _write_system_parquet(session / "neuron_explorer_parquet" / "system", writer, profiles)
    for profile in profiles:
        _write_device_parquet(session / "neuron_explorer_parquet" / profile.name, profile, writer.options)


def _write_json(folder: Path, writer: SessionWriter, system_name: str = "system_profile.json") -> None:
    profiles = device_profiles(writer)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / system_name).write_bytes(_system_json(writer, profiles))
    for profile in profiles:
        name = f"{profile.name}.json" if profile.model_id == -1 else f"device_profile_model_{profile.model_id}.json"
        (folder / name).write_bytes(_device_json(profile, writer.options))
