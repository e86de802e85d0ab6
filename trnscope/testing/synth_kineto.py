"""Deterministic generator of realistic Kineto traces, with ground truth.

Used by the benchmark (a ~800 MB / 2M-event trace) and by tests (small traces whose
per-op figures are known by construction).  The layout follows what current Kineto
writes (see ``shared/reference/kineto-trace-format.md``): relative microsecond
timestamps with three decimals and ``baseTimeNanoseconds``, ``cpu_op`` /
``user_annotation`` / ``python_function`` host events, ``cuda_runtime`` launches,
``kernel`` / ``gpu_memcpy`` device events linked by ``External id`` and
``correlation``, ``ac2g`` and ``fwdbwd`` flows, ``[memory]`` instants.

Everything here is synthetic; files written by it say so in their ``trnscope``
header key.
"""

from __future__ import annotations

import gzip
import io
import random
from collections import defaultdict
from pathlib import Path
from typing import IO

import msgspec

from trnscope.testing.truth import OpTruth

BASE_TIME_NS = 1767189312000000000
HOST_PID = 4242
MAIN_TID = 4242
BWD_TID = 4301
DEVICE_PID = 0
COMPUTE_STREAM = 7
COPY_STREAM = 20
SITE = "/opt/conda/envs/train/lib/python3.11/site-packages"
USER = "/home/ubuntu/projects/llm-train/src/llm_train"
# Real kernel names are long C++ template instantiations; size matters for the benchmark.
GELU_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, "
    "std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)"
    "::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)"
)
ADD_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
    "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)
MEAN_KERNEL = (
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
    "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
    "unsigned int, float, 4, 4>)"
)
SUM_KERNEL = (
    "void at::native::reduce_kernel<256, 2, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
    "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
    "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
    "unsigned int, float, 4, 4>)"
)


class GroundTruth(msgspec.Struct):
    events: int = 0
    device_events: int = 0
    linked_device_events: int = 0
    ops: dict[str, OpTruth] = {}  # key_averages() where Python frames are tree nodes (PyTorch 2.12+)
    kernels: dict[str, OpTruth] = {}
    ops_classic: dict[str, OpTruth] = {}  # key_averages() without Python frames (up to 2.11)

    def ops_by_rule(self, rule: str) -> dict[str, OpTruth]:
        """The op figures under ``trnscope.core.model.op_tree``'s resolved ``rule``."""
        return self.ops if rule == "python" else self.ops_classic


def _fmt_us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


class _Node:
    __slots__ = ("args", "cat", "children", "device_ns", "end", "kind", "name", "start", "tid")

    def __init__(self, name: str, cat: str, tid: int, start: int, args: str, kind: str) -> None:
        self.name = name
        self.cat = cat
        self.tid = tid
        self.start = start
        self.end = start
        self.children: list[_Node] = []
        self.device_ns = 0
        self.args = args
        self.kind = kind


class SyntheticKinetoWriter:
    """Builds one trace step by step and streams it to a file object."""

    def __init__(self, out: IO[str], seed: int = 0) -> None:
        self.out = out
        self.rng = random.Random(seed)
        self.truth = GroundTruth()
        self._ops: dict[str, OpTruth] = defaultdict(OpTruth)
        self._ops_classic: dict[str, OpTruth] = defaultdict(OpTruth)
        self._kernels: dict[str, OpTruth] = defaultdict(OpTruth)
        self.clock = {MAIN_TID: 1_000_000, BWD_TID: 1_000_000}
        self.stream_free = {COMPUTE_STREAM: 0, COPY_STREAM: 0}
        self.ext_id = 0
        self.correlation = 100_000
        self.python_id = 29_937_646
        self.seq = 0
        self.ev_idx = 0
        self.first = True
        self.stack: list[_Node] = []

    # -- low level -------------------------------------------------------
    def _emit(self, text: str) -> None:
        if self.first:
            self.out.write("\n  " + text)
            self.first = False
        else:
            self.out.write(",\n  " + text)
        self.truth.events += 1

    def _advance(self, tid: int, ns: int) -> int:
        self.clock[tid] += ns
        return self.clock[tid]

    def _open(self, name: str, cat: str, tid: int, args: str = "", kind: str = "op") -> _Node:
        start = self._advance(tid, self.rng.randint(300, 3000))
        node = _Node(name, cat, tid, start, args, kind)
        if self.stack:
            self.stack[-1].children.append(node)
        self.stack.append(node)
        return node

    def _close(self, node: _Node, work_ns: int = 0) -> None:
        popped = self.stack.pop()
        assert popped is node
        node.end = self._advance(node.tid, work_ns + self.rng.randint(300, 2500))
        self._write_host(node)

    def _write_host(self, node: _Node) -> None:
        self.ev_idx += 1
        dur = node.end - node.start
        text = (
            f'{{\n    "ph": "X", "cat": "{node.cat}", "name": "{node.name}", '
            f'"pid": {HOST_PID}, "tid": {node.tid},\n    "ts": {_fmt_us(node.start)}, '
            f'"dur": {_fmt_us(dur)},\n    "args": {{\n      {node.args}"Ev Idx": {self.ev_idx}\n    }}\n  }}'
        )
        self._emit(text)
        if node.kind not in ("op", "runtime", "python", "annotation"):
            return
        key = node.name if not node.name.startswith("ProfilerStep#") else "ProfilerStep*"
        tables = [(self._ops, node.children)]
        if node.kind != "python":  # up to PyTorch 2.11 frames are neither rows nor nodes
            tables.append((self._ops_classic, _without_frames(node.children)))
        for table, children in tables:
            truth = table[key]
            truth.calls += 1
            truth.cpu_total_ns += dur
            truth.self_cpu_ns += dur - sum(c.end - c.start for c in children)
            truth.self_device_ns += node.device_ns
            truth.device_total_ns += node.device_ns + sum(_subtree_device(c) for c in children)

    # -- building blocks -------------------------------------------------
    def python(self, name: str, tid: int = MAIN_TID) -> _Node:
        self.python_id += 1
        parent = next((n for n in reversed(self.stack) if n.kind == "python"), None)
        parent_id = parent.args.split('"Python id": ')[1].split(",")[0] if parent else "null"
        args = f'"Python parent id": {parent_id}, "Python id": {self.python_id}, '
        return self._open(name, "python_function", tid, args, kind="python")

    def op(self, name: str, dims: str, types: str, tid: int = MAIN_TID, seq: int | None = None) -> _Node:
        self.ext_id += 1
        seq_text = f'"Sequence number": {seq}, "Fwd thread id": 0, ' if seq is not None else ""
        args = (
            f'"External id": {self.ext_id}, "Record function id": 0, {seq_text}'
            f'"Concrete Inputs": [{", ".join(chr(34) * 2 for _ in dims.split("],"))}], '
            f'"Input type": {types}, "Input Strides": {_strides(dims)}, "Input Dims": {dims}, '
        )
        node = self._open(name, "cpu_op", tid, args)
        node.args = args
        return node

    def annotation(self, name: str, tid: int = MAIN_TID) -> _Node:
        self.ext_id += 1
        args = f'"External id": {self.ext_id}, "Record function id": 0, '
        return self._open(name, "user_annotation", tid, args, kind="annotation")

    def launch(self, kernel: str, kernel_ns: int, stream: int = COMPUTE_STREAM, memcpy_bytes: int = 0) -> None:
        """A runtime launch call inside the current op, and the device work it enqueues."""
        owner = next(n for n in reversed(self.stack) if n.kind in ("op", "annotation"))
        owner_ext = int(owner.args.split('"External id": ')[1].split(",")[0])
        self.correlation += 1
        corr = self.correlation
        api = "cudaMemcpyAsync" if memcpy_bytes else "cudaLaunchKernel"
        cbid = 41 if memcpy_bytes else 211
        rt = self._open(
            api,
            "cuda_runtime",
            owner.tid,
            f'"External id": {owner_ext}, "cbid": {cbid}, "correlation": {corr}, ',
            kind="runtime",
        )
        launch_ts = rt.start
        self._emit(
            f'{{\n    "ph": "s", "id": {corr}, "pid": {HOST_PID}, "tid": {owner.tid}, '
            f'"ts": {_fmt_us(launch_ts)}, "cat": "ac2g", "name": "ac2g"\n  }}'
        )
        self._close(rt, work_ns=self.rng.randint(2000, 6000))
        start = max(self.stream_free[stream], launch_ts + self.rng.randint(3000, 9000))
        self.stream_free[stream] = start + kernel_ns
        if memcpy_bytes:
            cat = "gpu_memcpy"
            extra = f'"bytes": {memcpy_bytes}, "memory bandwidth (GB/s)": {memcpy_bytes / max(kernel_ns, 1):.3f}'
        else:
            cat = "kernel"
            extra = (
                '"registers per thread": 128, "shared memory": 16384, "blocks per SM": 1.5, '
                '"warps per SM": 6.0, "grid": [256, 1, 1], "block": [128, 1, 1], '
                '"est. achieved occupancy %": 25'
            )
        self._emit(
            f'{{\n    "ph": "X", "cat": "{cat}", "name": "{kernel}", "pid": {DEVICE_PID}, "tid": {stream},\n'
            f'    "ts": {_fmt_us(start)}, "dur": {_fmt_us(kernel_ns)},\n    "args": {{\n'
            f'      "External id": {owner_ext}, "queued": 0, "device": 0, "context": 1,\n'
            f'      "stream": {stream}, "correlation": {corr}, {extra}\n    }}\n  }}'
        )
        self._emit(
            f'{{\n    "ph": "f", "id": {corr}, "pid": {DEVICE_PID}, "tid": {stream}, '
            f'"ts": {_fmt_us(start)}, "cat": "ac2g", "name": "ac2g", "bp": "e"\n  }}'
        )
        owner.device_ns += kernel_ns
        k = self._kernels[kernel]
        k.calls += 1
        k.self_device_ns += kernel_ns
        k.device_total_ns += kernel_ns
        self.truth.device_events += 1
        self.truth.linked_device_events += 1

    def memory(self, nbytes: int, tid: int = MAIN_TID) -> None:
        ts = self._advance(tid, 200)
        self._emit(
            f'{{\n    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",\n'
            f'    "pid": {HOST_PID}, "tid": {tid},\n    "ts": {_fmt_us(ts)},\n'
            f'    "args": {{\n      "Total Reserved": 0, "Total Allocated": {abs(nbytes)}, "Bytes": {nbytes}, '
            f'"Addr": 140{self.rng.randint(10**12, 10**13 - 1)}, "Device Id": 0, "Device Type": 1\n    }}\n  }}'
        )

    def fwdbwd(self, flow_id: int, fwd: _Node, bwd_ts: int, start: bool) -> None:
        if start:
            self._emit(
                f'{{\n    "ph": "s", "id": {flow_id}, "pid": {HOST_PID}, "tid": {fwd.tid}, '
                f'"ts": {_fmt_us(fwd.start)}, "cat": "fwdbwd", "name": "fwdbwd"\n  }}'
            )
        else:
            self._emit(
                f'{{\n    "ph": "f", "id": {flow_id}, "pid": {HOST_PID}, "tid": {BWD_TID}, '
                f'"ts": {_fmt_us(bwd_ts)}, "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"\n  }}'
            )

    # -- one training step ----------------------------------------------
    def step(self, index: int, layers: int, hidden: int, batch: int) -> None:
        rng = self.rng
        step = self.annotation(f"ProfilerStep#{index}")
        train = self.python(f"{USER}/train.py(52): train_step")
        net = self.python("nn.Module: Net_0")
        fwd = self.python(f"{USER}/models/mlp_block.py(30): forward")
        forward_seqs: list[tuple[int, _Node]] = []
        for layer in range(layers):
            wrapped = self.python(f"{SITE}/torch/nn/modules/module.py(1751): _wrapped_call_impl")
            call = self.python(f"{SITE}/torch/nn/modules/module.py(1762): _call_impl")
            mod = self.python(f"nn.Module: Linear_{layer}")
            lin_py = self.python(f"{SITE}/torch/nn/modules/linear.py(125): forward")
            builtin = self.python("<built-in function linear>")
            self.seq += 1
            seq = self.seq
            lin = self.op(
                "aten::linear",
                f"[[{batch}, {hidden}], [{hidden}, {hidden}], [{hidden}]]",
                '["float", "float", "float"]',
                seq=seq,
            )
            t = self.op("aten::t", f"[[{hidden}, {hidden}]]", '["float"]')
            tr = self.op("aten::transpose", f"[[{hidden}, {hidden}], [], []]", '["float", "Scalar", "Scalar"]')
            st = self.op("aten::as_strided", f"[[{hidden}, {hidden}], [], [], []]", '["float", "", "", ""]')
            self._close(st, 400)
            self._close(tr, 600)
            self._close(t, 300)
            addmm = self.op(
                "aten::addmm",
                f"[[{hidden}], [{batch}, {hidden}], [{hidden}, {hidden}], [], []]",
                '["float", "float", "float", "Scalar", "Scalar"]',
                seq=seq,
            )
            self.memory(batch * hidden * 4)
            self.launch("ampere_sgemm_128x64_tn", rng.randint(20_000, 90_000))
            self._close(addmm, 1500)
            self._close(lin, 500)
            forward_seqs.append((seq, addmm))
            self._close(builtin)
            self._close(lin_py)
            self._close(mod)
            self._close(call)
            self._close(wrapped)
            gelu_py = self.python(f"{SITE}/torch/nn/functional.py(1580): gelu")
            self.seq += 1
            gelu = self.op("aten::gelu", f"[[{batch}, {hidden}]]", '["float"]', seq=self.seq)
            self.memory(batch * hidden * 4)
            self.launch(GELU_KERNEL, rng.randint(4_000, 12_000))
            self._close(gelu, 800)
            self._close(gelu_py)
        self._close(fwd)
        self._close(net)
        loss = self.op(
            "aten::mse_loss",
            f"[[{batch}, {hidden}], [{batch}, {hidden}], []]",
            '["float", "float", "Scalar"]',
            seq=self.seq + 1,
        )
        self.launch(MEAN_KERNEL, rng.randint(3_000, 8_000))
        self._close(loss, 600)
        back = self.python(f"{SITE}/torch/_tensor.py(570): backward")
        run_bwd = self.op("autograd::engine::run_backward", "[]", "[]")
        # the backward pass runs on the autograd thread, after the forward
        self.clock[BWD_TID] = max(self.clock[BWD_TID], self.clock[MAIN_TID])
        bwd_stack_saved = self.stack
        self.stack = []
        for seq, fwd_op in reversed(forward_seqs):
            ev = self.op("autograd::engine::evaluate_function: AddmmBackward0", "[]", "[]", tid=BWD_TID, seq=seq)
            self.fwdbwd(seq, fwd_op, ev.start, start=True)
            self.fwdbwd(seq, fwd_op, ev.start, start=False)
            node = self.op("AddmmBackward0", "[]", "[]", tid=BWD_TID, seq=seq)
            for _ in range(2):
                mm = self.op(
                    "aten::mm", f"[[{batch}, {hidden}], [{hidden}, {hidden}]]", '["float", "float"]', tid=BWD_TID
                )
                self.launch("ampere_sgemm_64x64_nn", rng.randint(15_000, 70_000))
                self._close(mm, 900)
            sm = self.op(
                "aten::sum", f"[[{batch}, {hidden}], [], [], []]", '["float", "ScalarList", "Scalar", ""]', tid=BWD_TID
            )
            self.launch(SUM_KERNEL, rng.randint(3_000, 9_000))
            self._close(sm, 700)
            self._close(node, 300)
            self._close(ev, 200)
        self.stack = bwd_stack_saved
        self.clock[MAIN_TID] = max(self.clock[MAIN_TID], self.clock[BWD_TID]) + 2000
        self._close(run_bwd, 500)
        self._close(back)
        opt = self.annotation("Optimizer.step#SGD.step")
        sgd = self.python(f"{SITE}/torch/optim/sgd.py(81): step")
        single = self.python(f"{SITE}/torch/optim/sgd.py(320): _single_tensor_sgd")
        for layer in range(layers):
            grad_py = self.python(f"{SITE}/torch/_tensor.py(1521): __torch_function__")
            self._close(grad_py)
            add_py = self.python("<built-in method add_ of Tensor object at 0x7f3a2c1d5e40>")
            add = self.op(
                "aten::add_", f"[[{hidden}, {hidden}], [{hidden}, {hidden}], []]", '["float", "float", "Scalar"]'
            )
            self.launch(ADD_KERNEL, rng.randint(2_000, 6_000))
            self._close(add, 300)
            self._close(add_py)
            if layer == 0:
                cp = self.op(
                    "aten::copy_", f"[[{batch}, {hidden}], [{batch}, {hidden}], []]", '["float", "float", "Scalar"]'
                )
                self.launch(
                    "Memcpy HtoD (Pageable -> Device)",
                    rng.randint(5_000, 20_000),
                    stream=COPY_STREAM,
                    memcpy_bytes=batch * hidden * 4,
                )
                self._close(cp, 400)
        self._close(single)
        self._close(sgd)
        self._close(opt)
        self._close(train)
        self._close(step)

    def finish(self) -> GroundTruth:
        self.truth.ops = dict(self._ops)
        self.truth.ops_classic = dict(self._ops_classic)
        self.truth.kernels = dict(self._kernels)
        return self.truth


def _strides(dims: str) -> str:
    """Contiguous strides for a textual list of shapes, as Kineto writes them."""
    shapes = msgspec.json.decode(dims)
    out = []
    for shape in shapes:
        stride, acc = [], 1
        for size in reversed(shape):
            stride.append(acc)
            acc *= size
        out.append(list(reversed(stride)))
    return msgspec.json.encode(out).decode().replace(",", ", ")


def _without_frames(children: list[_Node]) -> list[_Node]:
    """The children an op has once Python frames are no nodes: each frame's own,
    down to the first that is not a frame (the writer nests strictly, so this is
    exactly what the stack algorithm finds without the frames)."""
    out: list[_Node] = []
    for child in children:
        out.extend(_without_frames(child.children) if child.kind == "python" else [child])
    return out


def _subtree_device(node: _Node) -> int:
    return node.device_ns + sum(_subtree_device(c) for c in node.children)


def _header() -> str:
    return (
        '{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {\n      "id": 0, "name": "Synthetic GPU", '
        '"totalGlobalMem": 85899345920,\n      "computeMajor": 9, "computeMinor": 0, "numSms": 132\n    }\n  ],\n'
        '  "trnscope": "synthetic trace written by trnscope.testing.synth_kineto",\n'
        '  "record_shapes": 1,\n  "with_stack": 1,\n  "cupti_version": 24, "cuda_runtime_version": 12080,\n'
        f'  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": {BASE_TIME_NS},\n  "traceEvents": ['
    )


def _metadata_events(writer: SyntheticKinetoWriter) -> None:
    for pid, label in ((HOST_PID, "python"), (DEVICE_PID, "GPU 0")):
        writer._emit(
            f'{{"name": "process_name", "ph": "M", "ts": 0.000, "pid": {pid}, "tid": 0, "args": {{"name": "{label}"}}}}'
        )
    for tid, label in ((MAIN_TID, "thread 4242 (python)"), (BWD_TID, "thread 4301 (pt_autograd_0)")):
        writer._emit(
            f'{{"name": "thread_name", "ph": "M", "ts": 0.000, "pid": {HOST_PID}, "tid": {tid}, "args": {{"name": "{label}"}}}}'
        )
    for stream in (COMPUTE_STREAM, COPY_STREAM):
        writer._emit(
            f'{{"name": "thread_name", "ph": "M", "ts": 0.000, "pid": {DEVICE_PID}, "tid": {stream}, "args": {{"name": "stream {stream} "}}}}'
        )


def write_trace(
    out: IO[str], target_events: int, seed: int = 0, layers: int = 8, hidden: int = 1024, batch: int = 64
) -> GroundTruth:
    """Write a complete trace with at least ``target_events`` events to ``out``."""
    writer = SyntheticKinetoWriter(out, seed)
    out.write(_header())
    _metadata_events(writer)
    index = 0
    while writer.truth.events < target_events:
        writer.step(index, layers, hidden, batch)
        index += 1
    end = max(writer.clock.values()) + 10_000
    writer._emit(
        f'{{\n    "ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", '
        f'"tid": "PyTorch Profiler",\n    "ts": {_fmt_us(1_000_000)}, "dur": {_fmt_us(end - 1_000_000)},\n'
        f'    "args": {{\n      "Op count": 0\n    }}\n  }}'
    )
    writer._emit(
        f'{{\n    "name": "Record Window End", "ph": "i", "s": "g",\n    "pid": "", "tid": "", "ts": {_fmt_us(end)}\n  }}'
    )
    out.write('\n],\n  "traceName": "synthetic.pt.trace.json"\n}\n')
    return writer.finish()


def generate(path: str | Path, target_events: int, seed: int = 0, **shape: int) -> GroundTruth:
    """Write a synthetic trace to ``path`` (gzip when it ends in ``.gz``)."""
    path = Path(path)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=6) as fh:
            return write_trace(fh, target_events, seed, **shape)
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as fh:
        return write_trace(fh, target_events, seed, **shape)


def generate_text(target_events: int, seed: int = 0, **shape: int) -> tuple[str, GroundTruth]:
    buf = io.StringIO()
    truth = write_trace(buf, target_events, seed, **shape)
    return buf.getvalue(), truth
