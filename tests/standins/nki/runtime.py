"""``nki.runtime.SystemTraceSession`` stand-in: what the runtime captured while it was
open, as its events JSON (a benchmark call drains its warm-ups: only measured runs)."""

from __future__ import annotations

import json
from typing import Any

from nki import _STATE, log


class SystemTraceSession:
    def __init__(self) -> None:
        self.open = False
        log("session_init")

    def __enter__(self) -> SystemTraceSession:
        self.open = True
        _STATE["pending"] = None
        log("session_enter")
        return self

    def __exit__(self, *exc: Any) -> None:
        self.open = False
        log("session_exit")

    def fetch_events_json(self) -> str:
        if not self.open:
            raise RuntimeError("fetch_events_json() outside the session")
        pending = _STATE["pending"]
        if pending is None:
            return json.dumps({"events": [], "data_version": 2})
        from trnscope.testing.synth_nrt_events import benchmark_events

        name, _warmup, iterations = pending
        median = 60.0 if "fused" in name else 120.0
        document, _ = benchmark_events(kernel=name, executions=iterations, median_us=median, lnc=2)
        log("fetch_events_json", kernel=name, executions=iterations)
        return json.dumps(document)
