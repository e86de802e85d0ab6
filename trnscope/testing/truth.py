"""Ground truth the SYNTHETIC generators write beside their traces."""

from __future__ import annotations

import msgspec


class OpTruth(msgspec.Struct):
    """Expected key_averages() figures for one op name (times in ns)."""

    calls: int = 0
    self_cpu_ns: int = 0
    cpu_total_ns: int = 0
    self_device_ns: int = 0
    device_total_ns: int = 0
    executions: int = 0  # NeuronCore executions it submitted (Neuron sessions)
