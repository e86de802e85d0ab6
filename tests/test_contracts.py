"""The JSON contracts: what ``summary``, ``chain`` and ``compare`` write decodes into
the documented structs (``trnscope.core.analysis.contracts``) with nothing missing or
extra, carries its schema version, and ``--limit`` caps every section."""

from __future__ import annotations

import json

import msgspec
import pytest

from conftest import SAMPLES
from trnscope.cli.main import main
from trnscope.core.analysis.contracts import SCHEMA_VERSION, ChainOut, CompareOut, SummaryOut

SESSION = SAMPLES / "trn_synthetic_rmsnorm_session"  # SYNTHETIC Trainium session (device work per region)


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _strict(text: str, kind: type[msgspec.Struct]) -> msgspec.Struct:
    """Decode into ``kind`` and check that no key of the output is unknown to it."""
    document = msgspec.json.decode(text, type=kind)
    assert set(json.loads(text)) == set(kind.__struct_fields__) - _omitted(document)
    return document


def _omitted(document: msgspec.Struct) -> set[str]:
    config = document.__struct_config__
    if not config.omit_defaults:
        return set()
    return {f for f in document.__struct_fields__ if getattr(document, f) is None}


def test_summary_document(capsys, small_synthetic) -> None:
    path, _ = small_synthetic
    summary = _strict(_json(capsys, "summary", str(path), "--format", "json"), SummaryOut)
    assert isinstance(summary, SummaryOut)
    assert summary.schema_version == SCHEMA_VERSION and summary.ops and summary.kernels


def test_chain_document(capsys, small_synthetic) -> None:
    path, _ = small_synthetic
    text = _json(capsys, "chain", str(path), "--op", "aten::addmm", "--format", "json")
    chain = _strict(text, ChainOut)
    assert isinstance(chain, ChainOut)
    assert chain.schema_version == SCHEMA_VERSION
    assert [h.kind for h in chain.hops if h.kind == "op"] == ["op"]
    for hop in json.loads(text)["hops"]:
        assert set(hop) == {"layer", "name", "start_us", "dur_us", "thread_or_stream", "details", "kind", "depth"}


def test_compare_document_and_limit_on_every_section(capsys) -> None:
    full = _strict(_json(capsys, "compare", str(SESSION), "--format", "json"), CompareOut)
    assert isinstance(full, CompareOut)
    assert full.schema_version == SCHEMA_VERSION and full.variants == ["eager", "compiled", "fused"]
    assert len(full.ops) > 2 and len(full.kernels) >= 1 and len(full.regions) >= 1
    capped = msgspec.json.decode(
        _json(capsys, "compare", str(SESSION), "--format", "json", "--limit", "1"), type=CompareOut
    )
    assert len(capped.ops) == 1 and len(capped.regions) <= 1 and len(capped.kernels) <= 1
    assert capped.ops[0] == full.ops[0]
    csv_rows = _json(capsys, "compare", str(SESSION), "--format", "csv", "--limit", "1").splitlines()[1:]
    sections = [row.split(",")[0] for row in csv_rows]
    assert all(sections.count(s) <= 1 for s in ("region", "kernels", "op")) and "op" in sections


def test_compare_limit_caps_regions_kernels_and_ops() -> None:
    from trnscope.core.analysis.compare import CompareRow, Comparison, Figures
    from trnscope.core.analysis.contracts import compare_document

    def rows(kind: str) -> list[CompareRow]:
        return [CompareRow(f"{kind}{i}", kind, [Figures(1, device_total_ns=i), Figures(1)]) for i in range(4)]

    comparison = Comparison(
        ["a", "b"], rows("op"), rows("region"), rows("kernels"), "device_total_ns", "GPU", [False] * 2
    )
    document = compare_document(comparison, limit=2)
    assert [len(document.regions), len(document.kernels), len(document.ops)] == [2, 2, 2]
    assert [r.key for r in document.ops] == ["op0", "op1"]
    assert len(compare_document(comparison).ops) == 4
