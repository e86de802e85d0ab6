"""SYNTHETIC Trainium profiles: one process-session's events (framework, runtime, hardware)."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import msgspec

from trnscope.testing.synth_neuron.model import (
    BASE_TIME_NS,
    ENGINE_ROW,
    ENGINE_TRACK,
    ENGINES,
    HLO_NAMES,
    INSTANCE,
    NKI_LOCATIONS,
    OPCODES,
    SYNTHETIC_NOTE,
    VARIANT_OPS,
    ExecTruth,
    OpTruth,
    SynthOptions,
    _Clock,
    _us,
    device_ns,
    plain_union_length,
)


class _Host(msgspec.Struct):
    """One op's host side: its interval, its dispatch and submit, and the ids that tie
    them to the runtime."""

    start: int
    end: int
    dispatch_start: int
    dispatch_dur: int
    submit_start: int
    submit_dur: int
    seq: int
    nrta: int
    flow: int
    corr: int


CC_START_NS = 1_000_000_000  # synthetic collectives: where they start, after the base time
CC_STEP_NS = 10_000_000
CC_GAP_NS = 5_000_000
CC_LATENCY_NS = 200_000


class _Request(msgspec.Struct):
    """One runtime request and the execution it runs."""

    model_key: str
    model_id: int
    model_name: str
    exec_id: int
    flow_ids: list[str]
    common: dict[str, Any]  # fields every runtime and hardware event of the request carries
    exec_start: int = 0
    exec_end: int = 0
    device_dur: int = 0
    busy: dict[str, tuple[int, int]] = {}  # engine → (instructions, busy ns)

    def runtime_event(self, writer: SessionWriter) -> Any:
        """An emitter of the request's runtime events (``with_exec``: the event carries exec_id)."""

        def rt(event: str, start_ns: int, dur_ns: int, thread: int, with_exec: bool, **extra: Any) -> None:
            fields = dict(extra)
            if with_exec:
                fields["exec_id"] = self.exec_id
            writer._sys(event, "neuron_rt", start_ns, dur_ns, thread, **fields, **self.common)

        return rt


class SessionWriter:
    """Generates one process-session of one variant."""

    def __init__(
        self,
        variant: str,
        pid: int,
        seed: int,
        steps: int,
        device_in_trace: bool,
        options: SynthOptions | None = None,
    ) -> None:
        self.options = options or SynthOptions()
        self.stray_window = (0, 0)
        self.core_free = 0  # host-relative ns when the runtime thread / NeuronCore is free again
        self.framework_events: list[dict[str, Any]] = []  # every trace.json X event, for framework_in_system
        self.dispatch_flows: dict[tuple[int, int], str] = {}  # (tid, start) of a dispatch → its flow id
        self.variant = variant
        self.pid = pid
        self.tid = pid
        self.runtime_tid = pid + 17  # synthetic choice: the runtime's worker thread
        self.stream_tid = 7  # privateuse1_driver events are grouped by stream id
        self.rng = random.Random(seed)
        self.steps = steps
        self.device_in_trace = device_in_trace
        self.clock = _Clock()
        self.kineto: list[str] = []
        self.system: list[dict[str, Any]] = []
        self.instructions: dict[int, list[dict[str, Any]]] = defaultdict(list)  # model_id → rows
        self.dma: dict[int, list[dict[str, Any]]] = defaultdict(list)
        self.cc_ops: dict[int, list[dict[str, Any]]] = defaultdict(list)
        self.mapping: list[dict[str, Any]] = []
        self.ext = 0
        self.seq = 0
        self.nrta = 1000
        self.exec_id = 0
        self.event_id = 0
        self.flow = 500
        self.corr = 9000
        self.models: dict[str, int] = {}
        self.ops: dict[str, OpTruth] = defaultdict(OpTruth)
        self.executions: list[ExecTruth] = []
        self.unlinked = 0

    # -- emitters ---------------------------------------------------------------
    def _x(
        self, cat: str, name: str, tid: int, start: int, dur: int, args: dict[str, Any], pid: int | str | None = None
    ) -> None:
        if pid is None:
            self.framework_events.append({"name": name, "tid": tid, "start": start, "dur": dur, "cat": cat})
        self.kineto.append(
            msgspec.json.encode(
                {
                    "ph": "X",
                    "cat": cat,
                    "name": name,
                    "pid": pid if pid is not None else self.pid,
                    "tid": tid,
                    "ts": 0,
                    "dur": 0,
                    "args": args,
                }
            )
            .decode()
            .replace('"ts":0,"dur":0', f'"ts":{_us(start)},"dur":{_us(dur)}')
        )

    def _sys(self, name: str, source: str, start: int, dur: int, thread: int, **extra: Any) -> dict[str, Any]:
        self.event_id += 1
        event = {
            "id": self.event_id,
            "name": name,
            "trace_event_source": source,
            "start_ts": BASE_TIME_NS + start,
            "duration_ns": dur,
            "thread_id": thread,
            **{k: v for k, v in extra.items() if v is not None and v != []},
        }
        self.system.append(event)
        return event

    def _model(self, key: str) -> int:
        if key not in self.models:
            self.models[key] = 7000 + len(self.models)
        return self.models[key]

    # -- one op: host dispatch, runtime request, device execution ----------------
    def op(self, name: str, model_key: str, dims: list[list[int]], parent_dev: list[int]) -> int:
        """One op: its host dispatch (trace.json), its runtime request, the execution on
        the NeuronCore, and the ground truth; returns its host duration.  (The random
        draws keep their order: the bundled sample is regenerated byte for byte.)"""
        host = self._host_dispatch(name, dims)
        request = self._runtime_request(host, model_key)
        self._hardware_records(host, request)
        self._count_truth(name, host, request, parent_dev)
        return host.end - host.start

    def _host_dispatch(self, name: str, dims: list[list[int]]) -> _Host:
        """The op in trace.json, its dispatch and submit events, the mapping entry and
        Explorer's copy of the submit with the flow that reaches the runtime."""
        rng = self.rng
        self.ext += 1
        self.seq += 1
        start = self.clock.advance(rng.randint(2_000, 6_000))
        dispatch_start = start + rng.randint(3_000, 8_000)
        dispatch_dur = rng.randint(6_000, 15_000)
        submit_start = dispatch_start + rng.randint(1_000, 3_000)
        submit_dur = rng.randint(2_000, 4_000)
        end = dispatch_start + dispatch_dur + rng.randint(2_000, 5_000)
        self.clock.rel = end
        self.nrta += 1
        self.flow += 1
        self.corr += 1
        host = _Host(
            start,
            end,
            dispatch_start,
            dispatch_dur,
            submit_start,
            submit_dur,
            self.seq,
            self.nrta,
            self.flow,
            self.corr,
        )
        op_args: dict[str, Any] = {
            "External id": self.ext,
            "Record function id": 0,
            "Sequence number": host.seq,
            "Fwd thread id": 0,
            "Ev Idx": self.ext,
        }
        if dims:
            op_args["Input Dims"] = dims
            op_args["Input type"] = ["float" if d else "Scalar" for d in dims]
        self._x("cpu_op", name, self.tid, start, end - start, op_args)
        # synthetic choice: dispatch/submit names; args carry the ids the runtime uses.
        self._x(
            "privateuse1_runtime",
            "neuron::dispatch",
            self.tid,
            dispatch_start,
            dispatch_dur,
            {"External id": self.ext, "correlation": host.corr, "nrta_seq_id": host.nrta},
        )
        self._x(
            "privateuse1_driver",
            "neuron::submit",
            self.stream_tid,
            submit_start,
            submit_dur,
            {"correlation": host.corr, "nrta_seq_id": host.nrta, "stream": 0},
        )
        self.mapping.append(
            {"nrta_seq_id": host.nrta, "framework_op_exec_ids": [{"seq_nr": host.seq, "th_id": 0, "stream_id": 0}]}
        )
        self.dispatch_flows[(self.tid, dispatch_start)] = str(host.flow)
        self._sys(
            "neuron::submit",
            "framework",
            submit_start,
            submit_dur,
            self.stream_tid,
            flow_id=[str(host.flow)],
            framework_stream_id=str(self.stream_tid),
        )
        return host

    def _runtime_request(self, host: _Host, model_key: str) -> _Request:
        """The runtime's events of the request: schedule on the op's thread, then the
        execute request on a worker thread, one at a time (one execution per core)."""
        rng = self.rng
        opts = self.options
        model_id = self._model(model_key)
        self.exec_id += 1
        request = _Request(
            model_key=model_key,
            model_id=model_id,
            model_name=f"/var/tmp/neuron-compile-cache/neuronxcc-2.31/MODULE_{model_id}_{model_key}/model.neff",
            exec_id=self.exec_id,
            flow_ids=[str(host.flow)] if opts.flows else [],
            common={
                "nc_idx": 0,
                "process_id": self.pid,
                "instance_id": INSTANCE,
                "framework_stream_id": str(self.stream_tid),
            },
        )
        rt_start = max(
            host.submit_start + host.submit_dur + rng.randint(4_000, 12_000), self.core_free + rng.randint(500, 2_000)
        )
        exec_on_runtime = opts.exec_ids == "all"
        rt = request.runtime_event(self)
        rt(
            "nrta_execute_schedule",
            host.submit_start + 500,
            1_200,
            self.tid,
            False,
            flow_id=request.flow_ids,
            nrta_seq_id=host.nrta,
        )
        pre = rng.randint(3_000, 6_000)
        core = rng.randint(1_500, 3_000)
        queue = rng.randint(2_000, 9_000)
        request.device_dur = rng.randint(18_000, 60_000) * (3 if model_key in ("compiled_graph", "nki_rms_norm") else 1)
        post = rng.randint(2_000, 4_000)
        request.exec_start = rt_start + pre + core + queue
        request.exec_end = request.exec_start + request.device_dur
        rt_end = request.exec_end + post
        self.core_free = rt_end
        if opts.runtime == "documented":
            rt(
                "nrt_execute",
                rt_start,
                rt_end - rt_start,
                self.runtime_tid,
                exec_on_runtime,
                flow_id=request.flow_ids,
                nrta_seq_id=host.nrta,
                model_id=model_id,
            )
            rt("kmgr_exec_core", rt_start + pre, core, self.runtime_tid, exec_on_runtime, nrta_seq_id=host.nrta)
        else:  # what a real asynchronous run shows: no nrt_execute, no kmgr_exec_core
            rt(
                "nrt_model_submit",
                rt_start,
                pre + core,
                self.runtime_tid,
                False,
                flow_id=request.flow_ids,
                nrta_seq_id=host.nrta,
                model_id=model_id,
            )
        rt(
            "kbl_exec_pre",
            rt_start + 200,
            pre - 400,
            self.runtime_tid,
            opts.exec_ids in ("all", "kbl_exec_pre"),
            nrta_seq_id=host.nrta,
        )
        rt(
            "kbl_exec_wait",
            rt_start + pre + core,
            request.exec_end - (rt_start + pre + core),
            self.runtime_tid,
            exec_on_runtime,
            nrta_seq_id=host.nrta if opts.runtime == "documented" else None,
        )
        rt("kbl_exec_post", request.exec_end + 100, post - 200, self.runtime_tid, exec_on_runtime)
        if model_key in ("pow", "compiled_graph", "nki_rms_norm"):
            size = 8 * 256 * 1024 * 4
            rt("dmem_buf_copyin", rt_start + 300, pre // 2, self.runtime_tid, exec_on_runtime, size=str(size))
        return request

    def _hardware_records(self, host: _Host, request: _Request) -> None:
        """The execution's nc_exec_running records (one per physical core with LNC=2),
        its sync point, the kernel trace.json holds with correlate_device_time, and the
        device profile's instructions."""
        rng = self.rng
        opts = self.options
        exec_start, exec_end, device_dur = request.exec_start, request.exec_end, request.device_dur
        dev_start, dev_end = device_ns(exec_start), device_ns(exec_end)
        hw: dict[str, Any] = {
            "model_id": request.model_id,
            "model_name": request.model_name,
            "nc_start_timestamp_ns": dev_start,
            "nc_stop_timestamp_ns": dev_end,
            "timestamp_unit": "ns",
            "flow_id": request.flow_ids,
        }
        if opts.exec_ids != "none":
            hw["exec_id"] = request.exec_id
        for pcore in range(opts.lnc):
            # LNC=2: each physical core reports the execution; its rows start and stop a
            # little apart, and the execution is their union
            lead, lag = (0, 0) if pcore == 0 else (rng.randint(50, 400), rng.randint(50, 400))
            row = dict(hw, nc_start_timestamp_ns=dev_start + lead, nc_stop_timestamp_ns=dev_end - lag)
            self._sys(
                "nc_exec_running",
                "neuron_hw",
                exec_start + lead,
                device_dur - lead - lag,
                0,
                device_core_idx=pcore,
                pcore_idx=pcore,
                **row,
                **request.common,
            )
        if opts.sync_points:
            sync_host = exec_end + 50
            self._sys(
                "timestamp_sync_point",
                "neuron_hw",
                sync_host,
                0,
                0,
                exec_id=request.exec_id,
                cpu_timestamp_ns=BASE_TIME_NS + sync_host,
                nc_timestamp_ns=device_ns(sync_host),
                **request.common,
            )
        if self.device_in_trace:
            # correlate_device_time: the plugin puts the device work in trace.json itself
            self._x(
                "kernel",
                request.model_name.split("/")[-2],
                0,
                exec_start,
                device_dur,
                {"External id": self.ext, "correlation": host.corr, "device": 0, "stream": 0},
                pid="neuron 0",
            )
        request.busy = self._instructions(request.model_id, request.model_key, dev_start, dev_end)

    def _count_truth(self, name: str, host: _Host, request: _Request, parent_dev: list[int]) -> None:
        busy = request.busy
        self.executions.append(
            ExecTruth(
                request.exec_id,
                name,
                request.model_id,
                BASE_TIME_NS + request.exec_start,
                BASE_TIME_NS + request.exec_end,
                sum(c for c, _ in busy.values()),
                {e: t for e, (_, t) in busy.items()},
            )
        )
        truth = self.ops[name]
        truth.calls += 1
        truth.cpu_total_ns += host.end - host.start
        truth.self_cpu_ns += (host.end - host.start) - host.dispatch_dur
        truth.self_device_ns += request.device_dur
        truth.device_total_ns += request.device_dur
        truth.executions += 1
        parent_dev[0] += request.device_dur
        # the dispatch event is a host child of the op (a runtime row of key_averages)
        dispatch = self.ops["neuron::dispatch"]
        dispatch.calls += 1
        dispatch.cpu_total_ns += host.dispatch_dur
        dispatch.self_cpu_ns += host.dispatch_dur
        submit = self.ops["neuron::submit"]
        submit.calls += 1
        submit.cpu_total_ns += host.submit_dur
        submit.self_cpu_ns += host.submit_dur

    def _instructions(self, model_id: int, model_key: str, dev_start: int, dev_end: int) -> dict[str, tuple[int, int]]:
        """Instructions (device clock) filling the execution; returns engine → (count,
        active ns).  Active time is the union of each engine's instructions after their
        semaphore wait (``evt_wait_time_ns``), EVENT_SEMAPHORE counting as all wait; with
        LNC=2 the second physical core runs a copy shifted by a little, so its rows
        overlap the first core's and the union is less than the sum."""
        rng = self.rng
        counts: dict[str, int] = {e: 0 for e in ENGINES}
        active: dict[str, list[tuple[int, int]]] = {e: [] for e in ENGINES}
        hlos = HLO_NAMES[model_key]
        for engine in ENGINES:
            cursor = dev_start + rng.randint(200, 1_500)
            limit = dev_end - 600
            weight = {"tensor": 3, "vector": 4, "scalar": 2, "gpsimd": 1, "sync": 1}[engine]
            count = weight * (4 if model_key in ("compiled_graph", "nki_rms_norm") else 2)
            for k in range(count):
                dur = rng.randint(300, 2_500) if engine != "sync" else rng.randint(100, 400)
                if cursor + dur > limit:
                    break
                opcode = rng.choice(OPCODES[engine])
                wait = dur if opcode == "EVENT_SEMAPHORE" else (rng.randint(0, dur // 4) if engine == "vector" else 0)
                hlo = hlos[k % len(hlos)]
                for pcore in range(self.options.lnc):
                    shift = 0 if pcore == 0 else rng.randint(0, 150)
                    row = {
                        "timestamp": cursor + shift,
                        "duration": dur,
                        "label": ENGINE_ROW[engine],
                        "subgroup": ENGINE_TRACK[engine],
                        "opcode": opcode,
                        "operands": f"src=SB[{k * 64}] dst=PSUM[{k}]",
                        "hlo_name": hlo,
                        "nki_source_location": NKI_LOCATIONS[k % len(NKI_LOCATIONS)]
                        if model_key == "nki_rms_norm"
                        else "",
                        "bir_debug_info_source_location": "",
                        "engine": engine,
                        "pcore_idx": pcore,
                        "evt_wait_time_ns": wait,
                        "hbm_read_bytes": rng.randint(0, 1 << 16) if engine == "vector" else 0,
                    }
                    self.instructions[model_id].append(row)
                    counts[engine] += 1
                    if wait < dur:
                        active[engine].append((cursor + shift + wait, cursor + shift + dur))
                cursor += dur + rng.randint(50, 900)
        busy = {e: [counts[e], plain_union_length(active[e])] for e in ENGINES}
        for q in range(2):
            start = dev_start + rng.randint(0, 2_000)
            self.dma[model_id].append(
                {
                    "timestamp": start,
                    "duration": rng.randint(500, 3_000),
                    "queue_name": f"qSyncIO{q}",
                    "queue_type": "input" if q == 0 else "output",
                    "read_bytes": 65536,
                    "write_bytes": 65536,
                    "transfer_bytes": 65536,
                    "engine_idx": q,
                }
            )
        if model_key == "compiled_graph":  # synthetic choice: the compiled graph ends with an all-reduce
            start = dev_end - rng.randint(4_000, 6_000)
            self.cc_ops[model_id].append(
                {
                    "timestamp": start,
                    "duration": rng.randint(1_500, 3_000),
                    "operation": "AllReduce",
                    "input_size": 8 * 256 * 4,
                    "output_size": 8 * 256 * 4,
                    "replica_group": "[[0, 1]]",
                    "trigger_engine": "Pool",
                }
            )
        return {e: (c, t) for e, (c, t) in busy.items()}

    def stray_execution(self) -> None:
        """A device execution nothing on the host asked for (e.g. a warm-up left in the
        buffer): a reader must count it as unlinked, never attribute it."""
        start = self.clock.advance(40_000)
        self.exec_id += 1
        for pcore in range(self.options.lnc):
            self._sys(
                "nc_exec_running",
                "neuron_hw",
                start,
                25_000,
                0,
                exec_id=self.exec_id if self.options.exec_ids != "none" else None,
                model_id=self._model("stray"),
                model_name="/var/tmp/neuron-compile-cache/MODULE_stray/model.neff",
                nc_start_timestamp_ns=device_ns(start),
                nc_stop_timestamp_ns=device_ns(start + 25_000),
                nc_idx=0,
                process_id=self.pid,
                instance_id=INSTANCE,
                device_core_idx=pcore,
                pcore_idx=pcore,
            )
        self.stray_window = (start, start + 25_000)
        self.unlinked += 1
        self.core_free = self.clock.advance(30_000)

    def run(self) -> None:
        ops = VARIANT_OPS[self.variant]
        self.stray_execution()
        for step in range(self.steps):
            self.ext += 1
            step_ext = self.ext
            step_start = self.clock.advance(5_000)
            self.ext += 1
            region_ext = self.ext
            region_start = self.clock.advance(3_000)
            device = [0]
            ops_cpu = sum(self.op(name, key, dims, device) for name, key, dims in ops)
            region_end = self.clock.advance(4_000)
            self._collectives(step)
            # the host waits for the device (torch.neuron.synchronize()) to end the step
            sync_start = self.clock.advance(1_000)
            last_device_end = self.executions[-1].host_end_ns - BASE_TIME_NS
            sync_end = max(self.clock.advance(5_000), last_device_end + 2_000)
            self.clock.rel = sync_end
            self._x("privateuse1_runtime", "neuron::synchronize", self.tid, sync_start, sync_end - sync_start, {})
            step_end = self.clock.advance(3_000)
            self._x(
                "user_annotation",
                "rmsnorm",
                self.tid,
                region_start,
                region_end - region_start,
                {"External id": region_ext, "Record function id": 0},
            )
            self._x(
                "user_annotation",
                f"ProfilerStep#{step + 1}",
                self.tid,
                step_start,
                step_end - step_start,
                {"External id": step_ext, "Record function id": 0},
            )
            region_dur, sync_dur, step_dur = region_end - region_start, sync_end - sync_start, step_end - step_start
            self._add_truth("rmsnorm", region_dur, region_dur - ops_cpu, device[0])
            self._add_truth("ProfilerStep*", step_dur, step_dur - region_dur - sync_dur, device[0])
            self._add_truth("neuron::synchronize", sync_dur, sync_dur, 0)

    def _collectives(self, step: int) -> None:
        """``options.collectives`` cc_running events for this step, at times every rank
        shares (1 s after the capture's base, 10 ms a step, 5 ms apart): a collective
        runs until the last rank has joined, then 200 µs."""
        late_pid, late_step, late_ns = self.options.collective_late
        for k in range(self.options.collectives):
            planned = CC_START_NS + step * CC_STEP_NS + k * CC_GAP_NS
            delay = late_ns if (self.pid, step, k) == (late_pid, late_step, 0) else 0
            everyone = late_ns if (step, k) == (late_step, 0) and late_pid >= 0 else 0
            start = planned + delay
            end = planned + everyone + CC_LATENCY_NS
            self._sys(
                "cc_running",
                "neuron_hw",
                start,
                end - start,
                0,
                gid=0,
                op_id=step * self.options.collectives + k,
                algorithm="ring",
                nc_timestamp_ns=device_ns(start),
            )

    def _add_truth(self, name: str, total: int, self_cpu: int, device_total: int) -> None:
        truth = self.ops[name]
        truth.calls += 1
        truth.cpu_total_ns += total
        truth.self_cpu_ns += self_cpu
        truth.device_total_ns += device_total


def _kineto_text(writer: SessionWriter) -> bytes:
    head = (
        '{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Trainium2 NeuronCore (SYNTHETIC)"}],\n'
        f' "trnscope_synthetic": "{SYNTHETIC_NOTE}", "with_stack": 0, "record_shapes": 1,\n'
        f' "displayTimeUnit": "ms", "baseTimeNanoseconds": {BASE_TIME_NS},\n "traceEvents": [\n'
    )
    meta = [
        f'{{"ph": "M", "name": "process_name", "pid": {writer.pid}, "tid": 0, "ts": 0, "args": {{"name": "python"}}}}',
        f'{{"ph": "M", "name": "thread_name", "pid": {writer.pid}, "tid": {writer.tid}, "ts": 0, "args": {{"name": "thread {writer.tid} (python)"}}}}',
        f'{{"ph": "M", "name": "thread_name", "pid": {writer.pid}, "tid": {writer.stream_tid}, "ts": 0, "args": {{"name": "neuron stream 0"}}}}',
    ]
    end = max(e["start_ts"] + e["duration_ns"] for e in writer.system) - BASE_TIME_NS + 10_000
    tail = [f'{{"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": {_us(end)}}}']
    body = ",\n".join(meta + writer.kineto + tail)
    return (head + body + '\n],\n "traceName": "trace.json"}\n').encode()
