"""SYNTHETIC Neuron runtime events JSON — what an NKI / nkipy kernel benchmark saves
(``neuron-evidence.md`` §8) — with the truth of every execution.

Each execution is a runtime request (``nrt_execute`` around ``kbl_exec_pre``,
``kmgr_exec_core``, ``kbl_exec_wait``, ``kbl_exec_post``) and one ``nc_exec_running``
START/STOP pair per physical core (two with LNC=2, sharing ``exec_id``), plus a
``timestamp_sync_point``.  Device events carry the core's clock in
``data.nc_timestamp_ns``; their ``timestamp_ns`` is that device time (``clock="device"``)
or host time (``clock="host"``).  The device clock's offset from the host drifts from one
execution to the next, so only the sync point of the same ``exec_id`` places it right.
The array is shuffled (emission order is not time order) and can carry unknown types
and broken pairs.  No real file is public: these files are labelled synthetic.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trnscope.testing.synth_neuron.model import plain_union_length

BASE_NS = 1_790_000_000_000_000_000  # host clock (Unix ns)
DEVICE_OFFSET_NS = 1_789_999_000_000_000_000  # host − device at the first execution
DRIFT_NS = 37  # the offset grows by this much per execution
PERIOD_NS = 1_000_000  # one execution a millisecond
NEFF_ROOT = "/home/ubuntu/.cache/neuron/kernels"


@dataclass
class ExecutionTruth:
    exec_id: int
    host_start: int  # the union's start on the host clock
    cores: list[tuple[int, int]]  # per physical core, host clock
    union_ns: int
    span_ns: int
    longest_ns: int
    warmup: bool


@dataclass
class BenchmarkTruth:
    kernel: str  # the name trnscope shows (the NEFF's folder)
    model_name: str
    executions: list[ExecutionTruth] = field(default_factory=list)
    broken: dict[str, int] = field(default_factory=dict)

    def measured(self, warmup: int = 0) -> list[ExecutionTruth]:
        return self.executions[warmup:]


def benchmark_events(
    kernel: str = "rmsnorm_nki",
    *,
    executions: int = 20,
    warmup: int = 0,
    median_us: float = 100.0,
    spread: float = 0.03,
    lnc: int = 1,
    disjoint_cores: bool = False,
    clock: str = "device",
    sync: str = "own",  # "own": one per exec_id; "none": no sync points
    seed: int = 0,
    unknown_types: bool = True,
    broken_pairs: bool = False,
    nc_idx: int = 0,
    model_id: int = 11,
) -> tuple[dict[str, Any], BenchmarkTruth]:
    """An ``{"events": [...], "data_version": 2}`` document and its truth.  Warm-up
    executions come first and run 3× longer (a cold start)."""
    rng = random.Random(seed)
    model_name = f"{NEFF_ROOT}/{kernel}/file.neff"
    truth = BenchmarkTruth(kernel, model_name)
    events: list[dict[str, Any]] = []
    seq = [0]

    def pair(kind: str, start: int, stop: int, data: dict[str, Any], stop_data: dict[str, Any] | None = None,
             thread: int = 101, stamp: tuple[int, int] | None = None) -> None:  # fmt: skip
        seq[0] += 1
        tracking = seq[0] | (nc_idx << 50)
        common = {"nc_idx": nc_idx, "nc_local_id": nc_idx, "tracking_id": tracking, "thread_id": thread,
                  "worker_gid": -1}  # fmt: skip
        first, last = stamp if stamp is not None else (start, stop)
        events.append({"event_type": kind, "phase": "start", "id": len(events), **common, "data": data,
                       "timestamp_ns": first})  # fmt: skip
        events.append({"event_type": kind, "phase": "stop", "id": len(events), **common,
                       "data": stop_data or {}, "timestamp_ns": last})  # fmt: skip

    for i in range(warmup + executions):
        exec_id = 1000 + i
        t = BASE_NS + i * PERIOD_NS
        cold = 3.0 if i < warmup else 1.0
        device = [int(rng.gauss(median_us, median_us * spread) * 1000 * cold) for _ in range(lnc)]
        host0 = t + 10_000
        cores = []
        for core in range(lnc):
            if core == 0:
                cores.append((host0, host0 + device[0]))
            elif disjoint_cores:  # the second core runs after the first: the union adds them
                begin = host0 + device[0] + 5_000
                cores.append((begin, begin + device[core]))
            else:  # overlapping, a little apart
                lead = rng.randint(100, 900)
                cores.append((host0 + lead, host0 + lead + device[core]))
        end_dev = max(e for _, e in cores)
        wait = (t + 6_000, end_dev + 8_000)
        offset = DEVICE_OFFSET_NS + i * DRIFT_NS
        meta = {"exec_id": exec_id, "model_id": model_id}
        pair("nrt_execute", t, wait[1] + 6_000, {**meta, "model_name": model_name})
        pair("kbl_exec_pre", t + 1_000, t + 3_000, {**meta, "model_name": model_name})
        pair("kmgr_exec_core", t + 4_000, t + 5_500, dict(meta))
        pair("kbl_exec_wait", wait[0], wait[1], dict(meta))
        pair("kbl_exec_post", wait[1] + 1_000, wait[1] + 4_000, dict(meta))
        for core, (begin, end) in enumerate(cores):
            dev_begin, dev_end = begin - offset, end - offset
            stamp = (dev_begin, dev_end) if clock == "device" else (begin, end)
            pair(
                "nc_exec_running",
                begin,
                end,
                {"device_core_idx": 2 * nc_idx + core, "exec_id": exec_id, "nc_timestamp_ns": dev_begin,
                 "model_id": model_id, "model_name": model_name},
                {"nc_timestamp_ns": dev_end},
                thread=0,
                stamp=stamp,
            )  # fmt: skip
        if sync == "own":
            at = wait[1] - 2_000
            events.append({"event_type": "timestamp_sync_point", "phase": "instant", "id": len(events),
                           "nc_idx": nc_idx, "nc_local_id": nc_idx, "tracking_id": 0, "thread_id": 101,
                           "worker_gid": -1, "timestamp_ns": at,
                           "data": {"exec_id": exec_id, "nc_timestamp_ns": at - offset, "cpu_timestamp_ns": at}})  # fmt: skip
        if unknown_types and i % 5 == 0:
            pair("nrt_tensor_write", t - 40_000, t - 30_000, {"tensor_id": i, "size": 4096})
            pair("mystery_event_2027", t - 20_000, t - 19_000, {"what": "nobody knows"})
            events.append({"event_type": "nc_model_switch", "phase": "unknown", "id": len(events), "nc_idx": nc_idx,
                           "tracking_id": 0, "data": {}, "timestamp_ns": t})  # fmt: skip
        span = max(e for _, e in cores) - min(s for s, _ in cores)
        truth.executions.append(
            ExecutionTruth(exec_id, min(s for s, _ in cores), cores, plain_union_length(cores), span,
                           max(e - s for s, e in cores), i < warmup)
        )  # fmt: skip
    if broken_pairs:
        seq[0] += 1
        events.append({"event_type": "kbl_exec_wait", "phase": "start", "nc_idx": nc_idx, "tracking_id": seq[0],
                       "data": {}, "timestamp_ns": BASE_NS})  # fmt: skip
        seq[0] += 1
        events.append({"event_type": "kbl_exec_wait", "phase": "stop", "nc_idx": nc_idx, "tracking_id": seq[0],
                       "data": {}, "timestamp_ns": BASE_NS})  # fmt: skip
        pair("nrt_execute", BASE_NS + 500, BASE_NS + 100, {})  # inverted
        truth.broken = {"START without STOP": 1, "STOP without START": 1, "STOP before its START": 1}
    rng.shuffle(events)  # emission order is not time order
    return {"events": events, "data_version": 2}, truth


def write_benchmark(path: Path, pretty: bool = False, **kwargs: Any) -> BenchmarkTruth:
    """Write one events file (compact like the runtime's, or re-serialised pretty)."""
    document, truth = benchmark_events(**kwargs)
    document["trnscope_note"] = "SYNTHETIC Neuron runtime events (trnscope.testing.synth_nrt_events)"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=1 if pretty else None, separators=None if pretty else (",", ":"))
    path.write_text(text)
    return truth


def write_kernel_profile(path: Path, **kwargs: Any) -> BenchmarkTruth:
    """nkipy's kernel profile: the events as text under ``"events_json"``."""
    document, truth = benchmark_events(**kwargs)
    wrapper = {
        "kernel_calls": len(truth.executions),
        "wall_start_ns": BASE_NS,
        "wall_stop_ns": BASE_NS + len(truth.executions) * PERIOD_NS,
        "events_json": json.dumps(document),
        "trnscope_note": "SYNTHETIC kernel profile",
    }
    path.write_text(json.dumps(wrapper))
    return truth
