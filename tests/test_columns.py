"""The op-table column catalogue is the one definition: every output carries every
column, and figures of several traces add up exactly, in any order."""

from __future__ import annotations

import csv
import io
import json

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import CORPUS, requires_corpus
from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.columns import OP_COLUMNS, SORT_KEYS
from trnscope.core.analysis.contracts import OpOut
from trnscope.core.analysis.flops import flops_columns
from trnscope.core.analysis.memory import memory_columns
from trnscope.core.analysis.opfigures import FlopFigures, MemoryFigures, OpFigures, merge_figures
from trnscope.core.formats import load_path
from trnscope.core.formats.options import NO_CACHE

H100 = CORPUS / "tracelens_h100_bert_small.json.gz"  # device time, [memory] records (CUDA too), shapes


def test_every_column_has_its_json_field_and_a_distinct_key() -> None:
    fields = set(OpOut.__struct_fields__)
    assert all(column.field in fields for column in OP_COLUMNS)
    assert len({c.key for c in OP_COLUMNS}) == len(OP_COLUMNS) == len({c.field for c in OP_COLUMNS})
    assert set(SORT_KEYS) == {c.key for c in OP_COLUMNS if c.sortable} | {"name"}


@requires_corpus
def test_json_and_csv_carry_every_column(capsys) -> None:
    assert main(["summary", str(H100), "--format", "json", "--with", "all"]) == 0
    document = json.loads(capsys.readouterr().out)
    for column in OP_COLUMNS:
        assert any(op[column.field] is not None for op in document["ops"]), column.key
    assert main(["summary", str(H100), "--format", "csv", "--with", "all"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    for column in OP_COLUMNS:
        assert any(row[column.field] != "" for row in rows), column.key


@requires_corpus
def test_the_wide_text_table_shows_every_column(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["summary", str(H100), "--with", "all", "--table", "ops"]) == 0
    header = capsys.readouterr().out.splitlines()[1]
    for column in OP_COLUMNS:
        assert column.header("CUDA") in header, column.key


@requires_corpus
def test_the_text_table_computes_only_the_extras_its_width_shows(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["summary", str(H100), "--table", "ops"]) == 0
    out = capsys.readouterr().out
    assert "FLOPs" not in out.splitlines()[1]
    assert "hidden at 100 columns" in out and "FLOPs" in out and "--with memory,flops" in out


@requires_corpus
def test_the_tui_offers_every_column() -> None:
    from trnscope.tui.models import OpExtras, op_columns

    analysis = Analysis(load_path(H100, NO_CACHE))
    table = analysis.op_table()
    extras = OpExtras(memory_columns(analysis, table), flops_columns(analysis, table))
    keys = {key for key, _column, _shown in op_columns(table, 200, extras)}
    assert {c.key for c in OP_COLUMNS} <= keys


@requires_corpus
def test_every_sort_key_sorts(capsys) -> None:
    for key in SORT_KEYS:
        assert main(["summary", str(H100), "--format", "json", "--sort", key, "--limit", "3"]) == 0, key
        assert len(json.loads(capsys.readouterr().out)["ops"]) == 3


def _figures(rows: list[tuple[int, int, int, bool]], with_memory: bool, with_flops: bool) -> OpFigures:
    n = len(rows)
    names = [f"op{k}" for k, _, _, _ in rows]
    times = np.array([t for _, t, _, _ in rows], dtype=np.int64)
    flops = np.array([f for _, _, f, _ in rows], dtype=np.int64)
    return OpFigures(
        group_by="op",
        device_label="CUDA",
        name=names,
        shape=[""] * n,
        stack=[""] * n,
        role=np.zeros(n, dtype=np.uint8),
        calls=np.ones(n, dtype=np.int64),
        self_cpu=times,
        cpu_total=times * 2,
        self_device=times // 3,
        device_total=times // 2,
        total_self_cpu=int(times.sum()),
        total_self_device=int((times // 3).sum()),
        device_share_base=int((times // 3).sum()),
        memory=MemoryFigures(times, -times, times, times) if with_memory else None,
        flops=FlopFigures(flops, flops > 0, np.array([c for *_, c in rows], dtype=bool) & (flops > 0))
        if with_flops
        else None,
    )


def _as_dict(figures: OpFigures) -> dict[str, object]:
    order = np.argsort(figures.name, kind="stable")
    out: dict[str, object] = {}
    for field in ("calls", "self_cpu", "cpu_total", "self_device", "device_total"):
        out[field] = [int(v) for v in np.asarray(getattr(figures, field))[order]]
    out["name"] = [figures.name[i] for i in order]
    if figures.memory is not None:
        out["memory"] = [int(v) for v in figures.memory.self_cpu[order]]
    if figures.flops is not None:
        out["flops"] = [int(v) for v in figures.flops.flops[order]]
        out["complete"] = figures.flops.complete[order].tolist()
    out["totals"] = (figures.total_self_cpu, figures.total_self_device, figures.device_share_base)
    return out


_ROWS = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 2**40), st.integers(0, 2**51), st.booleans()),
    min_size=0,
    max_size=6,
    unique_by=lambda r: r[0],
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_ROWS, st.booleans(), st.booleans()), min_size=1, max_size=5))
def test_merging_is_exact_and_does_not_depend_on_grouping(parts_spec) -> None:  # type: ignore[no-untyped-def]
    parts = [_figures(rows, memory, flops) for rows, memory, flops in parts_spec]
    flat = merge_figures(parts)
    nested = merge_figures([merge_figures(parts[:1]), merge_figures(parts[1:])]) if len(parts) > 1 else flat
    assert _as_dict(flat) == _as_dict(nested)
    # exact: the nanoseconds add up with Python integers
    expected: dict[str, int] = {}
    for rows, _, _ in parts_spec:
        for k, t, _, _ in rows:
            expected[f"op{k}"] = expected.get(f"op{k}", 0) + t
    assert dict(zip(flat.name, (int(v) for v in flat.self_cpu))) == expected


def test_summaries_are_picklable_and_small() -> None:
    import pickle

    figures = _figures([(1, 10, 5, True), (2, 20, 0, False)], True, True)
    assert pickle.loads(pickle.dumps(figures)).name == figures.name
    assert msgspec.structs.fields(OpFigures)  # a msgspec struct, as every other contract


@requires_corpus
@pytest.mark.parametrize("name", [H100.name, "kineto_resnet50_2021.json.gz"])  # the 2021 one: rows in no group too
def test_memory_sums_match_each_groups_instances_in_every_grouping(name: str) -> None:
    """The per-row memory figures are kept only for the rows that have one (aligned with
    ``rows``); every grouping's sums still equal the sum over each group's instances,
    read one row at a time, and every other row has none."""
    from trnscope.core.analysis.memory import memory_of

    analysis = Analysis(load_path(CORPUS / name, NO_CACHE))
    per_row = memory_of(analysis)
    assert per_row is not None and per_row.rows.size > 0
    assert np.all(np.diff(per_row.rows) > 0)
    figures = np.stack([per_row.cpu, per_row.device, per_row.self_cpu, per_row.self_device], axis=1)
    assert np.all(np.any(figures != 0, axis=1))  # only rows with a figure are kept
    missing = np.setdiff1d(np.arange(len(analysis.trace.events)), per_row.rows)[:50]
    assert all(per_row.of_row(int(row)) == (0, 0, 0, 0) for row in missing)
    for group_by in ("op", "shape", "stack"):
        table = analysis.op_table(group_by)
        columns = memory_columns(analysis, table)
        assert columns is not None
        for g in range(len(table)):
            if table.is_device[g] or table.name[g] == "[memory]":
                continue
            sums = [0, 0, 0, 0]
            for row in table.instances(g).tolist():
                sums = [total + value for total, value in zip(sums, per_row.of_row(row))]
            cpu, device, self_cpu, self_device = sums
            assert (int(columns.cpu[g]), int(columns.self_cpu[g])) == (cpu, self_cpu), (group_by, table.name[g])
            assert (int(columns.device[g]), int(columns.self_device[g])) == (device, self_device)
