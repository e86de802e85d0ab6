"""Built-in demos: one operation in three implementations of the same math.

* ``eager``    — composed aten ops, as a user would first write it;
* ``compiled`` — the same function under ``torch.compile``;
* ``fused``    — a hand-written kernel where one can run: an NKI kernel on Trainium
  (``neuronxcc.nki`` importable), a Triton kernel on CUDA (``triton`` importable), for
  RMSNorm; otherwise the best fused path PyTorch has on that device (one fused aten op).

Each result is checked against ``eager`` before it is profiled (``recorder.compare``).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from typing import Any

import msgspec

from trnscope.core.base.errors import TrnscopeError

SIZES: dict[str, dict[str, tuple[int, ...]]] = {
    "rmsnorm": {"small": (8, 256, 1024), "large": (16, 2048, 4096)},
    "attention": {"small": (2, 8, 256, 64), "large": (4, 16, 2048, 128)},
}


class Demo(msgspec.Struct):
    name: str
    region: str
    variants: dict[str, Any]  # label → callable
    descriptions: dict[str, str]
    inputs: tuple[Any, ...]
    rtol: float = 1e-3
    atol: float = 1e-4


def _triton_available() -> bool:
    return importlib.util.find_spec("triton") is not None


def _nki_available() -> bool:
    return importlib.util.find_spec("neuronxcc") is not None and importlib.util.find_spec("neuronxcc.nki") is not None


def rms_norm_eager(x: Any, weight: Any, eps: float = 1e-6) -> Any:
    import torch

    variance = x.pow(2).mean(-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight


def attention_eager(q: Any, k: Any, v: Any) -> Any:
    import torch

    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    return torch.softmax(scores, dim=-1) @ v


def _compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    import torch

    return torch.compile(fn, dynamic=False)


def build_demo(name: str, device: str, size: str = "small") -> Demo:
    import torch

    if name not in SIZES:
        raise TrnscopeError(f"unknown demo {name!r}; choose one of: {', '.join(SIZES)}")
    if size not in SIZES[name]:
        raise TrnscopeError(f"unknown size {size!r}; choose small or large")
    generator = torch.Generator().manual_seed(0)
    on_neuron = device.startswith("neuron")
    if name == "rmsnorm":
        batch, seq, hidden = SIZES[name][size]
        x = torch.randn(batch, seq, hidden, generator=generator).to(device)
        weight = torch.randn(hidden, generator=generator).to(device)
        fused: Callable[..., Any]
        if on_neuron and _nki_available():
            from trnscope.capture.nki_kernels import nki_rms_norm

            fused, fused_note = nki_rms_norm, "NKI kernel (capture/nki_kernels.py)"
        elif device.startswith("cuda") and _triton_available():
            from trnscope.capture.triton_kernels import triton_rms_norm

            fused, fused_note = triton_rms_norm, "Triton kernel (capture/triton_kernels.py)"
        else:

            def fused(x: Any, weight: Any) -> Any:
                return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, 1e-6)

            fused_note = "torch.nn.functional.rms_norm (one fused aten op)"
        return Demo(
            name,
            "rmsnorm",
            {"eager": rms_norm_eager, "compiled": _compiled(rms_norm_eager), "fused": fused},
            {
                "eager": "x * rsqrt(mean(x^2) + eps) * w as composed aten ops",
                "compiled": "the eager function under torch.compile",
                "fused": fused_note,
            },
            (x, weight),
        )
    batch, heads, seq, dim = SIZES[name][size]
    q, k, v = (torch.randn(batch, heads, seq, dim, generator=generator).to(device) for _ in range(3))

    def fused_attention(q: Any, k: Any, v: Any) -> Any:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    return Demo(
        name,
        "attention",
        {"eager": attention_eager, "compiled": _compiled(attention_eager), "fused": fused_attention},
        {
            "eager": "softmax(q @ k^T / sqrt(d)) @ v as composed aten ops",
            "compiled": "the eager function under torch.compile",
            "fused": "torch.nn.functional.scaled_dot_product_attention (fused attention op)",
        },
        (q, k, v),
        rtol=1e-3,
        atol=2e-4,
    )
