"""Shared fixtures: the public corpus, an isolated cache directory, small traces."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = (REPO / ".." / "shared" / "corpus").resolve()
SAMPLES = REPO / "sample_traces"


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(CORPUS.glob("*.json.gz"))


requires_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not present")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own cache root, so nothing leaks between tests or into ~/.cache."""
    root = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("TRNSCOPE_CACHE_DIR", str(root))
    return root


@pytest.fixture(scope="session")
def small_synthetic(tmp_path_factory: pytest.TempPathFactory):
    from trnscope.testing.synth_kineto import generate

    path = tmp_path_factory.mktemp("synth") / "small.pt.trace.json"
    truth = generate(path, 6000, seed=7)
    return path, truth


def assert_ops_match(table, expected_ops) -> None:  # type: ignore[no-untyped-def]
    """Every op of a generator's ground truth has exactly its figures in ``table``."""
    for name, expected in expected_ops.items():
        group = table.find(name)
        assert group >= 0, name
        got = (
            table.calls[group],
            table.self_cpu[group],
            table.cpu_total[group],
            table.self_device[group],
            table.device_total[group],
        )
        want = (
            expected.calls,
            expected.self_cpu_ns,
            expected.cpu_total_ns,
            expected.self_device_ns,
            expected.device_total_ns,
        )
        assert got == want, name
