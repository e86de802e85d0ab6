"""Stand-in for NKI's Python surface that ``trnscope capture nki`` uses (see
tests/standins/README.md): ``nki.jit`` gives a compiled kernel with ``benchmark(warmup=,
iterations=)``; ``nki.runtime.SystemTraceSession`` is a context manager whose
``fetch_events_json()`` returns the runtime's events JSON.  Every call is logged to
``$STANDIN_NEURON_LOG``; the events are SYNTHETIC (trnscope.testing.synth_nrt_events)."""

from __future__ import annotations

import json
import os
from typing import Any

_LOG = os.environ.get("STANDIN_NEURON_LOG", "")
_STATE: dict[str, Any] = {"pending": None, "sessions": 0}


def log(call: str, **fields: Any) -> None:
    if _LOG:
        with open(_LOG, "a") as handle:
            handle.write(json.dumps({"call": call, **fields}) + "\n")


class _Compiled:
    def __init__(self, function: Any) -> None:
        self.function = function
        self.__name__ = getattr(function, "__name__", "kernel")

    def __call__(self, *args: Any) -> Any:
        log("kernel_call", kernel=self.__name__, args=len(args))
        return self.function(*args)

    def benchmark(self, *args: Any, warmup: int, iterations: int) -> dict[str, float]:
        if not isinstance(warmup, int) or not isinstance(iterations, int) or iterations < 1:
            raise TypeError("benchmark(warmup: int, iterations: int >= 1)")
        log("benchmark", kernel=self.__name__, warmup=warmup, iterations=iterations, args=len(args))
        _STATE["pending"] = (self.__name__, warmup, iterations)
        return {"mean_ms": 0.1}


def jit(function: Any) -> _Compiled:
    log("jit", kernel=getattr(function, "__name__", "kernel"))
    return _Compiled(function)
