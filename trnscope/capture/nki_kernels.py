"""NKI kernels for the fused demo variants on Trainium.

Imported only when ``neuronxcc.nki`` is importable.  Written from the NKI RMSNorm
tutorial (Neuron docs, "RMSNorm" NKI example); no Trainium hardware was available
where this was written, so it has not been executed here — on a host where it fails,
the demo records the ``fused`` variant as failed with the error and keeps the others.
"""

from __future__ import annotations

import math
from typing import Any

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

EPS = 1e-6
PARTITIONS = 128  # a tile spans at most 128 partitions


@nki.jit
def _rms_norm_2d(a_tensor: Any, g_tensor: Any) -> Any:
    """out = a / sqrt(mean(a^2, axis=1) + eps) * g, for a 2-D [rows, hidden] tensor."""
    out_tensor = nl.ndarray(a_tensor.shape, dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    rows, hidden = a_tensor.shape
    ix = nl.arange(PARTITIONS)[:, None]
    iw = nl.arange(1)[:, None]
    iy = nl.arange(hidden)[None, :]
    g_tile = nl.load(g_tensor.reshape((1, hidden))[iw, iy])
    for i in nl.affine_range(math.ceil(rows / PARTITIONS)):
        mask = i * PARTITIONS + ix < rows
        a_tile = nl.load(a_tensor[i * PARTITIONS + ix, iy], mask=mask)
        square_sum = nl.sum(nl.square(a_tile), axis=[1])
        rms_reciprocal = nl.rsqrt(square_sum / hidden + EPS)
        out_tile = nl.multiply(a_tile, rms_reciprocal)
        g_bcast = g_tile.broadcast_to((PARTITIONS, hidden))
        out_tile[...] = nl.multiply(out_tile, g_bcast, mask=mask)
        nl.store(out_tensor[i * PARTITIONS + ix, iy], value=out_tile, mask=mask)
    return out_tensor


def nki_rms_norm(x: Any, weight: Any) -> Any:
    hidden = x.shape[-1]
    return _rms_norm_2d(x.reshape(-1, hidden), weight).reshape(x.shape)
