"""Where backends plug into the analysis layer.

A backend that adds device layers beyond Kineto's kernels lists its chain-hop provider
here; its linker runs in ``Analysis`` (``trnscope.core.analysis.analysis``).  Kineto
needs neither: its kernels are plain device rows.
"""

from __future__ import annotations

from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.chain_model import DeviceHopProvider


def device_hop_providers(analysis: Analysis) -> list[DeviceHopProvider]:
    """The chain-hop providers for ``analysis``'s backend data, in priority order.
    (Each backend's module is imported when its data is there: the Neuron chain and
    the Neuron readers it needs are ~10 ms of the explorer's start on a Kineto trace.)"""
    providers: list[DeviceHopProvider] = []
    if analysis.neuron_data is not None and analysis.neuron is not None:
        from trnscope.core.analysis.neuron_chain import NeuronHops

        providers.append(NeuronHops(analysis.neuron_data, analysis.neuron))
    return providers
