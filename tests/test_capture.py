"""Capture: demos, script runs, sessions, failures, and the Neuron path (stand-in)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SAMPLES
from trnscope.cli.main import main
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.parity import check_parity
from trnscope.core.formats import discover, load_source
from trnscope.core.model.session import read_manifest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

STANDINS = Path(__file__).resolve().parent / "standins"


def assert_session_parity(folder: Path, fresh: bool = True) -> None:
    """Every variant loads and reproduces PyTorch's stored key_averages() figures
    (``fresh``: captured by this code, so with FLOPs; bundled samples predate them)."""
    manifest = read_manifest(folder)
    ref = discover(folder)
    for variant, source in zip(manifest.ok_variants(), ref.sources):
        analysis = Analysis(load_source(source))
        problems = check_parity(analysis, variant.reference)
        assert not problems, (variant.label, [str(p) for p in problems[:10]])
        # captured with with_flops: PyTorch's FLOPs stored, and ours (from shapes) equal them
        assert not fresh or all(row.flops is not None for row in variant.reference)
        if variant.reference_grouped_by_shape:
            problems = check_parity(analysis, variant.reference_grouped_by_shape, by_shape=True)
            assert not problems, (variant.label, [str(p) for p in problems[:10]])


@pytest.mark.slow
def test_demo_rmsnorm_cli(tmp_path: Path, capfd) -> None:
    out = tmp_path / "rms"
    assert main(["capture", "--demo", "rmsnorm", "--out", str(out), "--steps", "3", "--warmup", "2", "--memory"]) == 0
    said = capfd.readouterr().err  # (the descriptor's: Kineto writes to it from C++)
    assert "capture: eager: profiling 2 warm-up + 3 steps" in said
    assert "USDT:" not in said and "profiler_start" not in said, said  # Kineto's markers, 2 per variant
    manifest = read_manifest(out)
    assert [v.label for v in manifest.variants] == ["eager", "compiled", "fused"]
    assert all(v.status == "ok" and v.steps == 3 and v.warmup == 2 for v in manifest.variants)
    assert all(v.result_max_abs_error is not None and v.result_max_abs_error < 1e-3 for v in manifest.variants)
    assert manifest.device_kind == "cpu" and manifest.torch_version.startswith("2.")
    assert_session_parity(out)
    # eager RMSNorm multiplies: PyTorch counted FLOPs for aten::mul, and they were kept
    eager = manifest.variants[0]
    assert any(row.flops for row in eager.reference if row.name == "aten::mul")
    # --memory: profile_memory=True, so the trace has [memory] records and memory columns
    from trnscope.core.analysis.memory import memory_columns

    analysis = Analysis(load_source(discover(out).sources[0]))
    memory = memory_columns(analysis, analysis.op_table())
    assert memory is not None and memory.cpu.any()
    # the three variants line up through their region in the comparison
    capfd.readouterr()
    assert main(["compare", str(out), "--format", "json"]) == 0
    doc = json.loads(capfd.readouterr().out)
    region = next(r for r in doc["regions"] if r["key"] == "rmsnorm")
    assert region["present_in"] == ["eager", "compiled", "fused"]


def test_capture_run_script(tmp_path: Path) -> None:
    out = tmp_path / "tiny"
    code = main(
        [
            "capture",
            "run",
            str(REPO / "examples" / "train_tiny.py"),
            "--iters",
            "12",
            "--steps",
            "3",
            "--warmup",
            "2",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    manifest = read_manifest(out)
    variant = manifest.variants[0]
    assert variant.label == "train_tiny" and variant.steps == 3
    assert_session_parity(out)
    analysis = Analysis(load_source(discover(out).sources[0]))
    assert len(analysis.steps()) == 3
    assert analysis.op_table().find("Optimizer.step#SGD.step") >= 0


def test_capture_run_leaves_the_scripts_memory_settings_alone(tmp_path: Path) -> None:
    """The script runs in trnscope's process: trnscope's own memory settings (NumPy's
    page advice, glibc's one heap) are for reading traces, not for the user's training."""
    script = tmp_path / "probe.py"
    script.write_text(
        "from trnscope.core.base import memory\n"
        "advice = memory._numpy_hook('_get_madvise_hugepage')\n"
        "print('CONFIGURED', memory.memory_configured(), None if advice is None else advice())\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "trnscope", "capture", "run", str(script), "--out", str(tmp_path / "probe")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = next(line for line in done.stdout.splitlines() if line.startswith("CONFIGURED"))
    assert line.split()[1] == "False", line
    assert line.split()[2] != "False", line  # NumPy's default advice, where it has the switch


def test_a_ranks_capture_error_says_whose_it_is(tmp_path: Path, capsys, monkeypatch) -> None:
    """Under a launcher every rank prints its own error line: each says which rank."""
    script = tmp_path / "fails.py"
    script.write_text("raise ValueError('boom')\n")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert main(["capture", "run", str(script), "--out", str(tmp_path / "job")]) == 2
    assert "error: rank 1 of 2: fails.py raised ValueError: boom" in capsys.readouterr().err
    assert not (tmp_path / "job" / "rank1").exists()


def test_capture_run_too_few_steps_leaves_nothing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "tiny"
    code = main(["capture", "run", str(REPO / "examples" / "train_tiny.py"), "--iters", "3", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "made 3 optimizer steps" in err
    assert not out.exists() and not list(tmp_path.glob(".tiny.partial-*"))


def test_compare_records_failed_variants_and_keeps_others(tmp_path: Path) -> None:
    from trnscope.capture import CaptureOptions, compare

    def good(x):  # type: ignore[no-untyped-def]
        return x * 2

    def wrong(x):  # type: ignore[no-untyped-def]
        return x * 3

    def broken(x):  # type: ignore[no-untyped-def]
        raise RuntimeError("kernel exploded")

    out = compare(
        {"ref": good, "wrong": wrong, "broken": broken, "same": lambda x: x + x},
        (torch.ones(8, 8),),
        out=tmp_path / "s",
        options=CaptureOptions(warmup=1, steps=2, region="double"),
    )
    manifest = read_manifest(out)
    status = {v.label: (v.status, v.error) for v in manifest.variants}
    assert status["ref"][0] == "ok" and status["same"][0] == "ok"
    assert status["wrong"][0] == "failed" and "differs" in status["wrong"][1]
    assert status["broken"] == ("failed", "RuntimeError: kernel exploded")
    ref = discover(out)
    assert [s.label for s in ref.sources] == ["ref", "same"]
    assert any("broken" in note for note in ref.notes)
    assert_session_parity(out)


def test_record_failures_are_clean(tmp_path: Path) -> None:
    from trnscope.capture import CaptureOptions, record
    from trnscope.core.base.errors import TrnscopeError

    def broken() -> None:
        raise ValueError("bad shape")

    with pytest.raises(TrnscopeError, match="the workload raised ValueError: bad shape"):
        record(broken, out=tmp_path / "x", options=CaptureOptions(warmup=0, steps=1))
    assert not (tmp_path / "x").exists() and not list(tmp_path.glob(".x.partial-*"))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(TrnscopeError, match="exists and is not empty"):
        record(lambda: None, out=tmp_path / "full")
    (tmp_path / "afile").write_text("")
    with pytest.raises(TrnscopeError, match="cannot create"):
        record(lambda: None, out=tmp_path / "afile" / "session")


def test_neuron_requested_without_torch_neuronx(capsys, tmp_path: Path) -> None:
    code = main(["capture", "--demo", "rmsnorm", "--device", "neuron", "--out", str(tmp_path / "n")])
    err = capsys.readouterr().err
    assert code == 2 and "needs torch_neuronx" in err and err.count("\n") == 1


DRIVER = """
import json, sys
import torch
import torch.profiler as tp
calls = []
original = tp.profile
class Recording(original):
    def __init__(self, *args, **kwargs):
        calls.append({
            "activities": sorted("CPU" if a == tp.ProfilerActivity.CPU else "PrivateUse1" if a == tp.ProfilerActivity.PrivateUse1 else str(a) for a in kwargs.get("activities", [])),
            "experimental_config": type(kwargs.get("experimental_config")).__name__,
            "config_id": id(kwargs.get("experimental_config")),
            "on_trace_ready": getattr(kwargs.get("on_trace_ready"), "__qualname__", None),
            "on_trace_ready_owner": id(getattr(kwargs.get("on_trace_ready"), "__self__", None)),
            "owner_config_id": id(getattr(getattr(kwargs.get("on_trace_ready"), "__self__", None), "config", None)),
            "record_shapes": kwargs.get("record_shapes"), "with_stack": kwargs.get("with_stack"),
        })
        super().__init__(*args, **kwargs)
tp.profile = Recording
from trnscope.capture import CaptureOptions, record
from trnscope.capture.device import NeuronOptions
options = CaptureOptions(device="neuron", warmup=2, steps=3, neuron=NeuronOptions(capture_enabled_for_nc="0-1", max_events_per_nc=5000))
x = torch.randn(32, 32)
record(lambda a: (a @ a).relu(), (x,), out=sys.argv[1], label="probe", options=options)
print(json.dumps(calls))
"""


@pytest.mark.parametrize("correlate", [True, False], ids=["with-correlate_device_time", "without"])
def test_neuron_path_calls_the_documented_api(tmp_path: Path, correlate: bool) -> None:
    log = tmp_path / "calls.jsonl"
    out = tmp_path / "session"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(STANDINS), str(REPO)]),
        "STANDIN_NEURON_LOG": str(log),
        "STANDIN_NO_CORRELATE": "" if correlate else "1",
        "TRNSCOPE_CACHE_DIR": str(tmp_path / "cache"),
    }
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, str(out)], capture_output=True, text=True, env=env, cwd=str(REPO)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    profile_calls = json.loads(result.stdout.strip().splitlines()[-1])
    events = [json.loads(line) for line in log.read_text().splitlines()]
    configs = [e for e in events if e["event"] == "NeuronConfig"]
    profilers = [e for e in events if e["event"] == "NeuronProfiler"]
    exports = [e for e in events if e["event"] == "export_trace"]
    syncs = [e for e in events if e["event"] == "torch.neuron.synchronize"]
    assert len(configs) == 1 and len(profilers) == 1 and len(exports) == 1
    config = configs[0]
    assert config["modes"] == ["DEVICE", "RUNTIME"]
    assert config["capture_enabled_for_nc"] == "0-1" and config["max_events_per_nc"] == 5000
    assert Path(config["profile_output_dir"]).name == "probe"
    assert config.get("correlate_device_time", False) is correlate
    # the release that accepts neff_cache_dir gets one inside the variant's folder
    if correlate:
        assert Path(config["neff_cache_dir"]).parts[-2:] == ("probe", "neff_cache")
        assert (out / "probe" / "neff_cache").is_dir()  # moved into the session with the rest
    else:
        assert "neff_cache_dir" not in config
    assert profilers[0]["config"] == config["id"]
    assert exports[0]["profiler"] == profilers[0]["id"]
    call = profile_calls[0]
    assert call["activities"] == ["CPU", "PrivateUse1"]
    assert call["experimental_config"] == "NeuronConfig" and call["config_id"] == config["id"]
    assert (
        call["on_trace_ready"] == "NeuronProfiler.export_trace" and call["on_trace_ready_owner"] == profilers[0]["id"]
    )
    assert call["owner_config_id"] == config["id"]
    assert call["record_shapes"] and call["with_stack"]
    # one synchronize after the warm-up, then one per profiled step (steps + the
    # profiler's warm-up step); torch's profiler adds its own when it stops
    assert len(syncs) >= 1 + 3 + 1
    # the session is in the Neuron layout and reads back, with parity
    manifest = read_manifest(out)
    assert manifest.device_kind == "neuron" and manifest.torch_neuronx_version == "0.0+standin"
    assert "XLA_IR_DEBUG and XLA_HLO_DEBUG not set at capture" in manifest.notes
    variant = manifest.variants[0]
    assert variant.trace_format == "neuron" and variant.trace == "probe"
    traces = list((out / "probe").rglob("trace.json"))
    assert len(traces) == 1 and traces[0].parent.parent.name.startswith("i-0standin_pid_")
    ref = discover(out)
    analysis = Analysis(load_source(ref.sources[0]))
    assert analysis.trace.device_kind == "neuron"
    assert not check_parity(analysis, variant.reference)
    assert any("neuron-explorer view" in w for w in analysis.trace.warnings)


@pytest.mark.parametrize("name", ["cpu_rmsnorm_session", "cpu_attention_session", "cpu_train_tiny_session"])
def test_bundled_samples_keep_parity(name: str) -> None:
    assert_session_parity(SAMPLES / name, fresh=False)


def test_neuron_activity_prefers_the_neuron_spelling() -> None:
    from types import SimpleNamespace

    from trnscope.capture.device import neuron_activity, neuron_capture_notes

    assert neuron_activity(SimpleNamespace(NEURON="n", PrivateUse1="p")) == "n"
    assert neuron_activity(SimpleNamespace(PrivateUse1="p")) == "p"
    assert neuron_capture_notes({"XLA_IR_DEBUG": "1", "XLA_HLO_DEBUG": "1"}) == []
    (note,) = neuron_capture_notes({"XLA_IR_DEBUG": "1"})
    assert note.startswith("XLA_HLO_DEBUG not set")


def test_parity_check_sees_two_nanoseconds() -> None:
    """The stored key_averages() figures agree to the nanosecond; a 2 ns difference in
    one op's Self CPU is a mismatch."""
    import msgspec

    folder = SAMPLES / "cpu_rmsnorm_session"
    manifest = read_manifest(folder)
    variant = manifest.ok_variants()[0]
    analysis = Analysis(load_source(discover(folder).sources[0]))
    assert not check_parity(analysis, variant.reference)
    rows = [msgspec.structs.replace(r) for r in variant.reference]
    target = next(r for r in rows if r.self_cpu_us > 0)
    target.self_cpu_us += 0.002
    (problem,) = check_parity(analysis, rows)
    assert problem.field == "self_cpu_us" and problem.key.startswith(target.name)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3"}, (3, 8, "RANK")),  # torchrun
        ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}, (1, 2, "OMPI_COMM_WORLD_RANK")),  # mpirun
        ({"PMI_RANK": "0", "PMI_SIZE": "4"}, (0, 4, "PMI_RANK")),  # MPICH, Intel MPI
        ({"RANK": "0", "WORLD_SIZE": "1"}, None),  # one process: its own folder, as ever
        ({"RANK": "2"}, None),  # half a pair says nothing
        ({}, None),
    ],
)
def test_the_launchers_rank(env: dict[str, str], expected: tuple | None) -> None:
    from trnscope.capture.launcher import launcher_rank, rank_folder

    found = launcher_rank(env)
    assert (None if found is None else (found.rank, found.world_size, found.variable)) == expected
    assert rank_folder(Path("out"), found) == (Path("out") if found is None else Path("out") / f"rank{found.rank}")


@pytest.mark.parametrize("env", [{"RANK": "two", "WORLD_SIZE": "4"}, {"RANK": "4", "WORLD_SIZE": "4"}])
def test_a_launchers_rank_that_makes_no_sense_is_refused(env: dict[str, str]) -> None:
    from trnscope.capture.launcher import launcher_rank
    from trnscope.core.base.errors import TrnscopeError

    with pytest.raises(TrnscopeError, match="RANK"):
        launcher_rank(env)


@pytest.mark.slow
def test_a_ddp_job_under_torchrun_captures_every_rank_and_ranks_reads_them(tmp_path: Path, capsys) -> None:
    """``torchrun … -m trnscope capture run`` starts one capture per rank, all with the
    same --out: the second rank failed with "another capture is writing DIR".  Each
    rank now writes DIR/rank<N>, and ``trnscope ranks DIR`` finds the rank held back."""
    out = tmp_path / "ddp"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    command += ["-m", "trnscope", "capture", "run", str(REPO / "examples" / "train_ddp.py")]
    command += ["--out", str(out), "--steps", "3", "--warmup", "1", "--slow-rank", "1", "--slow-ms", "40"]
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"rank 1 of 2: session written to {out / 'rank1'}" in done.stderr
    assert "profiler_st" not in done.stderr  # Kineto's start and stop markers, 2 per rank
    # each rank's stop says whose it is (two identical lines said nothing of it)
    assert all(f"trnscope: rank {r} of 2: stopped train_ddp.py after 5 steps" in done.stderr for r in (0, 1))
    assert f"once every rank is done: trnscope ranks {out}" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["rank0", "rank1"]
    assert all(read_manifest(out / f"rank{r}").variants[0].status == "ok" for r in (0, 1))
    assert main(["ranks", str(out), "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["world_size"] == 2 and [r["rank"] for r in doc["ranks"]] == [0, 1]
    assert not any("named like a trace" in w for w in doc["warnings"])  # the manifests are no traces
    (late,) = [f for f in doc["findings"] if f["kind"] == "straggler"]
    assert late["rank"] == 1 and "late in 3 steps" in late["message"]
    # the sleep is before backward(), whose ops come before DDP's all-reduce: no gap just
    # before the call, but the step's thread was idle since the previous collective
    said = re.search(
        r"the thread running its step spent ([\d.]+)ms outside any op since its previous collective, "
        r"most of it in <built-in function sleep> \(([\d.]+)ms\)",
        late["message"],
    )  # (the Python frames with_stack records name the call the time went to)
    assert said and 30 <= float(said.group(2)) <= float(said.group(1)) < 80, late[
        "message"
    ]  # (clipped: see collectives)


@pytest.mark.slow
def test_a_neuron_ddp_job_under_torchrun_writes_each_ranks_neuron_profile(tmp_path: Path, capsys) -> None:
    """The same job on the Neuron path (stand-in torch_neuronx, which checks the
    documented API and writes the framework trace where ``export_trace`` puts it): one
    NeuronConfig per rank, each writing into its own rank's session, and ``ranks``
    reads the per-rank Neuron layouts as one job's ranks."""
    out = tmp_path / "ddp"
    log = tmp_path / "calls.jsonl"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    command += ["-m", "trnscope", "capture", "run", str(REPO / "examples" / "train_ddp.py"), "--device", "neuron"]
    command += ["--out", str(out), "--steps", "3", "--warmup", "1", "--slow-rank", "1", "--slow-ms", "40"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(STANDINS), str(REPO)]),
        "STANDIN_NEURON_LOG": str(log),
        "GLOO_SOCKET_IFNAME": "lo",
        "OMP_NUM_THREADS": "1",
        "TRNSCOPE_CACHE_DIR": str(tmp_path / "cache"),
    }
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    configs = [e for e in map(json.loads, log.read_text().splitlines()) if e["event"] == "NeuronConfig"]
    # each into its rank's session, written aside and moved in place when complete
    folders = sorted(Path(c["profile_output_dir"]).parent.name for c in configs)
    assert [re.sub(r"-\d+$", "", f) for f in folders] == [".rank0.partial", ".rank1.partial"], folders
    for rank in (0, 1):
        manifest = read_manifest(out / f"rank{rank}")
        assert manifest.device_kind == "neuron" and manifest.variants[0].trace_format == "neuron"
        (trace,) = (out / f"rank{rank}" / "train_ddp").rglob("trace.json")
        assert trace.parent.parent.name.startswith("i-0standin_pid_")
    assert main(["ranks", str(out), "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["world_size"] == 2 and [r["rank"] for r in doc["ranks"]] == [0, 1]
    (late,) = [f for f in doc["findings"] if f["kind"] == "straggler"]
    assert late["rank"] == 1 and "late in 3 steps" in late["message"]


def test_run_takes_our_options_and_flags_after_the_scripts_arguments() -> None:
    """``capture run SCRIPT.py [ARGS...] --out DIR --memory``: ours wherever they stand
    (--memory was passed on to the script, which refused it); after ``--`` all is the
    script's, --memory too."""
    import argparse

    from trnscope.capture.cli import split_script_arguments

    args = argparse.Namespace(out=None, steps=None, memory=False)
    rest = split_script_arguments(["run", "train.py", "--lr", "0.1", "--memory", "--out", "d", "--steps=4"], args)
    assert rest == ["run", "train.py", "--lr", "0.1"] and args.memory and args.out == "d" and args.steps == 4
    args = argparse.Namespace(out=None, steps=None, memory=False)
    assert split_script_arguments(["run", "t.py", "--out", "d", "--", "--memory"], args) == ["run", "t.py", "--memory"]
    assert not args.memory


@pytest.mark.slow
def test_capture_run_with_memory_keeps_key_averages_memory_and_matches_it(tmp_path: Path) -> None:
    out = tmp_path / "tiny"
    script = REPO / "examples" / "train_tiny.py"
    assert (
        main(
            [
                "capture",
                "run",
                str(script),
                "--iters",
                "8",
                "--memory",
                "--steps",
                "2",
                "--warmup",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    (variant,) = read_manifest(out).ok_variants()
    assert any(row.self_cpu_memory_bytes for row in variant.reference)
    assert_session_parity(out)
