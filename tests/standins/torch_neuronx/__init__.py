"""Stand-in for torch_neuronx (tests only): the documented API surface, logged."""

from __future__ import annotations

import json
import os
import types

import torch

__version__ = "0.0+standin"


def log(event: str, **fields: object) -> None:
    path = os.environ.get("STANDIN_NEURON_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps({"event": event, **fields}, default=str) + "\n")


def synchronize() -> None:
    log("torch_neuronx.synchronize")


def _device_module() -> types.ModuleType:
    module = types.ModuleType("torch.neuron")

    def neuron_synchronize(device: object = None) -> None:
        log("torch.neuron.synchronize")

    module.synchronize = neuron_synchronize  # type: ignore[attr-defined]
    module.device_count = lambda: 1  # type: ignore[attr-defined]
    module.is_available = lambda: True  # type: ignore[attr-defined]
    return module


# What the real package does on import: name the PrivateUse1 backend and register
# the ``torch.neuron`` device module.
torch.utils.rename_privateuse1_backend("neuron")
torch._register_device_module("neuron", _device_module())
log("import")
