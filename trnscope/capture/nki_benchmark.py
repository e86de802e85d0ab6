"""Record NKI kernel benchmarks as the Neuron runtime's events JSON.

    trnscope capture nki KERNELS.py --out DIR [--warmup W] [--iterations N]

``KERNELS.py`` defines ``variants()``, returning ``(name, kernel, inputs)`` triples:
``kernel`` is a compiled NKI kernel (what ``nki.jit`` / ``nki.compile`` gives: it has
``benchmark(warmup=, iterations=)``, the documented standalone benchmark) and ``inputs``
the arguments to call it with.  Each variant is called once (its output is kept beside
the events as the result check: shape, dtype and a checksum, compared to the first
variant's), then benchmarked inside a runtime system-trace session
(``SystemTraceSession``, from ``nki.runtime`` or else ``nrtpy``); the session's
``fetch_events_json()`` text is saved as ``<name>.benchmark_events.json``.  Nothing here
is imported unless NKI is: no Trainium hardware was available where this was written,
so it is tested against a stand-in that checks these calls (``tests/standins/nki``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import runpy
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from trnscope.core.base.errors import TrnscopeError

SESSION_MODULES = ("nki.runtime", "nrtpy")
EVENTS_SUFFIX = ".benchmark_events.json"


def _trace_session_class() -> Any:
    for name in SESSION_MODULES:
        if importlib.util.find_spec(name.split(".")[0]) is None:
            continue
        module = importlib.import_module(name)
        found = getattr(module, "SystemTraceSession", None)
        if found is not None:
            return found
    raise TrnscopeError(
        "capture nki needs the Neuron runtime's Python API (nki.runtime or nrtpy, with SystemTraceSession); "
        "it is installed with the Neuron SDK on Trainium hosts"
    )


def _result_check(value: Any) -> dict[str, Any]:
    """What the kernel returned, small enough to keep: shape, dtype and a checksum."""
    check: dict[str, Any] = {"type": type(value).__name__}
    for attribute in ("shape", "dtype"):
        if hasattr(value, attribute):
            check[attribute] = str(getattr(value, attribute))
    try:
        import numpy as np

        array = np.asarray(value, dtype=np.float64)
        check["sum"] = float(array.sum())
        check["abs_max"] = float(np.abs(array).max()) if array.size else 0.0
    except (TypeError, ValueError):
        pass
    return check


def record(
    variants: Iterable[tuple[str, Any, tuple[Any, ...]]],
    out: Path,
    *,
    warmup: int = 3,
    iterations: int = 50,
    log: Callable[[str], None] = lambda message: None,
) -> list[Path]:
    """Benchmark every variant under a system-trace session; the events files written."""
    session_class = _trace_session_class()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    checks: dict[str, Any] = {}
    for name, kernel, inputs in variants:
        if not hasattr(kernel, "benchmark"):
            raise TrnscopeError(f"variant {name!r}: the kernel has no benchmark() (compile it with nki.jit first)")
        checks[name] = _result_check(kernel(*inputs))
        session = session_class()
        with session:
            kernel.benchmark(*inputs, warmup=warmup, iterations=iterations)
            text = session.fetch_events_json()
        if not isinstance(text, str | bytes) or not text:
            raise TrnscopeError(f"variant {name!r}: the runtime returned no events")
        path = out / f"{name}{EVENTS_SUFFIX}"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        written.append(path)
        log(f"{name}: {iterations} iterations after {warmup} warm-ups → {path.name}")
    (out / "result_checks.json").write_text(json.dumps(checks, indent=1))
    return written


def load_variants(script: Path) -> list[tuple[str, Any, tuple[Any, ...]]]:
    """The ``variants()`` a kernels file defines."""
    if not script.is_file():
        raise TrnscopeError(f"no such file: {script}")
    namespace = runpy.run_path(str(script), run_name="trnscope_nki_variants")
    make = namespace.get("variants")
    if not callable(make):
        raise TrnscopeError(f"{script}: define variants() returning (name, compiled kernel, inputs) triples")
    found = []
    for item in make():
        if not (isinstance(item, tuple) and len(item) == 3 and isinstance(item[0], str)):
            raise TrnscopeError(f"{script}: variants() must yield (name, kernel, inputs) triples")
        found.append((item[0], item[1], tuple(item[2])))
    if not found:
        raise TrnscopeError(f"{script}: variants() returned nothing")
    return found
