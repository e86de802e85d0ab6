"""Which rule puts Python frames in the op tree: by release, from a capture's
session.json, or asked for; and a cached index is never read under the other rule."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES
from trnscope.core.formats import discover, load_path
from trnscope.core.formats.options import LoadOptions
from trnscope.core.model import op_tree
from trnscope.core.opening.open import open_analysis


@pytest.mark.parametrize(
    ("version", "rule"),
    [
        ("2.11.0+cu130", "classic"),  # seen on the H200: no frames in key_averages()
        ("2.9.1", "classic"),
        ("1.13.1+cu117", "classic"),
        ("2.12.0", "python"),  # pytorch PR 178168
        ("2.13.0+cpu", "python"),  # seen here: frames are rows and nodes
        ("2.14.0a0+git1234", "python"),
        ("10.0", "python"),
        ("", "classic"),  # a trace that does not say
        ("2.9.0 (synthetic)", "classic"),
        ("unknown", "classic"),
    ],
)
def test_auto_follows_the_release(version: str, rule: str) -> None:
    assert op_tree.resolve(op_tree.AUTO, version) == rule


def test_an_asked_rule_wins_and_a_wrong_one_is_refused() -> None:
    assert op_tree.resolve(op_tree.PYTHON, "2.11.0") == op_tree.PYTHON
    assert op_tree.resolve(op_tree.CLASSIC, "2.13.0") == op_tree.CLASSIC
    with pytest.raises(ValueError, match="unknown op-tree rule"):
        op_tree.resolve("frames", "")


def test_a_capture_says_which_release_wrote_it() -> None:
    cpu = discover(SAMPLES / "cpu_rmsnorm_session").sources[0]  # torch 2.13.0+cpu
    cuda = discover(SAMPLES / "cuda_rmsnorm_session").sources[0]  # torch 2.11.0+cu130
    assert cpu.torch_version.startswith("2.13") and cuda.torch_version.startswith("2.11")
    # one trace of a session, opened on its own, still reads its session.json
    alone = discover(SAMPLES / "cpu_rmsnorm_session" / "eager.pt.trace.json.gz").sources[0]
    assert alone.torch_version == cpu.torch_version
    assert load_path(Path(alone.path), LoadOptions(use_cache=False)).op_tree == op_tree.PYTHON
    ranks = discover(SAMPLES / "cuda_ddp_gloo_session").sources
    assert [s.torch_version for s in ranks] == ["2.11.0+cu130"] * 2


def test_the_index_cache_keeps_each_rules_figures_apart(tmp_path: Path) -> None:
    trace = tmp_path / "eager.pt.trace.json.gz"  # no session.json beside it: auto is classic
    shutil.copy(SAMPLES / "cuda_rmsnorm_session" / "eager.pt.trace.json.gz", trace)
    source = discover(trace).sources[0]

    def self_cpu_of_step(rule: str) -> int:
        table = open_analysis(source, LoadOptions(op_tree=rule)).op_table()
        group = next(g for g in range(len(table)) if table.name[g] == "ProfilerStep*" and not table.is_device[g])
        return int(table.self_cpu[group])

    fresh = {rule: self_cpu_of_step(rule) for rule in ("classic", "python")}
    for analysis_rule in ("classic", "python"):
        opened = open_analysis(source, LoadOptions(op_tree=analysis_rule))
        opened.finish()  # writes the index
    cached = {rule: self_cpu_of_step(rule) for rule in ("classic", "python")}
    assert fresh == cached and fresh["classic"] > fresh["python"]
    assert self_cpu_of_step("auto") == fresh["classic"]


def test_summary_and_ranks_take_the_rule_from_the_command_line(capsys) -> None:
    import json

    from trnscope.cli.main import main
    from trnscope.core.opening.ranks import rank_jobs

    session = SAMPLES / "cuda_rmsnorm_session"
    for flag, rule in (([], "classic"), (["--op-tree", "python"], "python")):
        assert main(["summary", str(session), "--format", "json", "--no-cache", *flag]) == 0
        assert json.loads(capsys.readouterr().out)["op_tree"] == rule
    jobs = rank_jobs(discover(SAMPLES / "cuda_ddp_gloo_session").sources, LoadOptions(op_tree="python"))
    assert [job.load.op_tree for job in jobs] == ["python", "python"]
    assert all(job.load.workers == 1 for job in jobs)
