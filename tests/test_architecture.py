"""The layers of docs/architecture.md hold: import-linter's contracts pass and no two
modules import each other, directly or through others."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

from conftest import REPO


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if not child.startswith("trnscope"):
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    graph = grimp.build_graph("trnscope")
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for name in ("trnscope.a", "trnscope.b", "trnscope.c"):
        graph.add_module(name)
    graph.add_import(importer="trnscope.a", imported="trnscope.b")
    graph.add_import(importer="trnscope.b", imported="trnscope.a")
    graph.add_import(importer="trnscope.b", imported="trnscope.c")
    assert _cycles(graph) == [["trnscope.a", "trnscope.b"]]


def test_import_contracts_are_kept() -> None:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    assert result.returncode == 0, result.stdout[-3000:]


# Functions longer than this are split into named stages.  These few are long by nature;
# each says why (docs/architecture.md, "Size"):
LONG_FUNCTION_LINES = 80
LONG_BY_NATURE = {
    "trnscope/cli/arguments.py:build_parser": "the whole command line, one add_argument per option",
    "trnscope/capture/runscript.py:run_script": "hooks, profiler and restores of one script run share one try",
    "trnscope/core/analysis/chain.py:build_chain": "the hops of one chain in their documented order",
    "trnscope/core/analysis/diagnose.py:_findings": "one block per finding kind over the same unions",
    "trnscope/core/analysis/neuron_chain.py:_execution_hops": "request, execution, engines, instructions in order",
    "trnscope/core/formats/kineto/events.py:columns_from_events": "one vectorised pass per column (the hot loop)",
    "trnscope/testing/synth_kineto.py:step": "one synthetic step's events, written in time order",
    "trnscope/testing/synth_neuron/exports.py:_write_device_parquet": "one Parquet table per documented schema",
    "trnscope/testing/synth_nrt_events.py:benchmark_events": "one execution's events, written in emission order",
    "trnscope/cli/render_summary.py:render_table": "the op table, its totals, the kernel table and the link line",
    "trnscope/core/formats/kineto/loader.py:load_kineto": "the named stages in order, then the Trace's fields",
    "trnscope/core/formats/kineto/merge.py:merge_ranges": "one pass re-interning every column of every range",
    "trnscope/testing/synth_neuron/exports.py:_system_json": "one legacy-JSON document in its documented field order",
    "trnscope/testing/synth_neuron/session.py:_runtime_request": "one request's runtime events in emission order",
}


def test_long_functions_are_the_listed_ones() -> None:
    import ast

    found = set()
    for path in sorted((REPO / "trnscope").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                if node.end_lineno - node.lineno + 1 > LONG_FUNCTION_LINES:
                    found.add(f"{path.relative_to(REPO)}:{node.name}")
    assert found <= set(LONG_BY_NATURE), (
        f"split these into named stages, or say why not: {sorted(found - set(LONG_BY_NATURE))}"
    )
    assert set(LONG_BY_NATURE) <= found, (
        f"no longer long (take them off the list): {sorted(set(LONG_BY_NATURE) - found)}"
    )
