"""The RMSNorm demo's hand-written Triton kernel (``capture/triton_kernels.py``), the
variant that runs on CUDA, run here by Triton's own interpreter (``TRITON_INTERPRET=1``:
the kernel's body on the CPU, each program in turn) against the demo's eager RMSNorm.

No GPU runs here; the capture on the H200 checked the kernel against eager as every
variant is checked (``recorder._close``) — this keeps a change to the kernel honest
where no GPU is.  The interpreter must be chosen before ``triton`` is first imported,
so each check runs in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")
pytest.importorskip("torch")

CHECK = """
import json, sys
import torch
from trnscope.capture.demos import SIZES, rms_norm_eager
from trnscope.capture.triton_kernels import triton_rms_norm

out = []
shapes = [list(SIZES["rmsnorm"]["small"]), [3, 1000], [2, 3, 5, 96], [1, 1]]
for shape in shapes:
    generator = torch.Generator().manual_seed(len(out))
    x = torch.randn(*shape, generator=generator)
    weight = torch.randn(shape[-1], generator=generator)
    got = triton_rms_norm(x, weight)
    want = rms_norm_eager(x, weight)
    out.append({
        "shape": shape,
        "same_shape": list(got.shape) == list(want.shape),
        "max_error": float((got - want).abs().max()),
        "close": bool(torch.allclose(got, want, rtol=1e-3, atol=1e-5)),
    })
json.dump(out, sys.stdout)
"""


def test_the_triton_rmsnorm_kernel_equals_eager_rmsnorm_in_the_interpreter() -> None:
    """The demo's own size, a hidden size that is no power of two (the masked tail of
    the block), several leading dimensions and a single element: the same values as
    the eager composition of aten ops the other variants run."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(Path.cwd())}
    done = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, timeout=300, cwd=Path.cwd()
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    assert len(results) == 4
    for result in results:
        assert result["same_shape"] and result["close"], result
