"""What an open computes before the first table, and what it leaves for later."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest


def test_forward_links_are_computed_only_for_a_drilldown(tmp_path, monkeypatch) -> None:
    """The op table does not need forward → backward links: a command that never
    drills down (summary --no-cache) never computes them; a UI asks for them in the
    deferred work it runs after its first screen; the index cache stores them."""
    from conftest import SAMPLES
    from trnscope.core.formats import NO_CACHE, SourceRef
    from trnscope.core.formats.options import LoadOptions
    from trnscope.core.opening.open import open_analysis

    monkeypatch.setenv("TRNSCOPE_CACHE_DIR", str(tmp_path))
    path = SAMPLES / "cpu_rmsnorm_session" / "eager.pt.trace.json.gz"
    analysis = open_analysis(SourceRef("eager", str(path)), NO_CACHE)
    assert len(analysis.op_table()) > 0
    analysis.finish()
    assert analysis.links.forward_of is None
    analysis.pending.insert(0, analysis.prepare_drilldown)  # what the TUI does
    analysis.finish()
    assert analysis.links.forward_of is not None
    assert analysis.links.forward_of.shape == (len(analysis.trace.events),)

    cached = open_analysis(SourceRef("eager", str(path)), LoadOptions())
    assert cached.links.forward_of is None
    cached.finish()  # writes the index cache, which holds them
    assert cached.links.forward_of is not None
    reopened = open_analysis(SourceRef("eager", str(path)), LoadOptions())
    np.testing.assert_array_equal(reopened.links.forward_of, analysis.links.forward_of)


def test_the_tui_prepares_the_drilldown_links_after_its_first_screen(tmp_path, monkeypatch) -> None:
    from conftest import SAMPLES
    from trnscope.core.formats import SourceRef
    from trnscope.tui.app import TrnscopeApp

    monkeypatch.setenv("TRNSCOPE_CACHE_DIR", str(tmp_path))
    path = SAMPLES / "cpu_rmsnorm_session" / "eager.pt.trace.json.gz"
    app = TrnscopeApp([str(path)], use_cache=False)
    analysis = app.load_analysis(SourceRef("eager", str(path)))
    assert analysis.links.forward_of is None  # not before the first screen
    analysis.finish()
    assert analysis.links.forward_of is not None


@pytest.mark.parametrize("name", ["sample", "tracelens_h100_bert_small.json.gz", "hta_diff_test_v100.json.gz"])
def test_host_tree_in_a_helper_thread_gives_the_same_links(monkeypatch, name: str) -> None:
    """Big traces build the host tree in a helper thread while the device lookups run;
    the links must not depend on which way it ran."""
    from conftest import CORPUS, SAMPLES
    from trnscope.core.formats import load_path
    from trnscope.core.link import linker as link_module

    path = SAMPLES / "cpu_rmsnorm_session" / "eager.pt.trace.json.gz" if name == "sample" else CORPUS / name
    if not path.exists():
        pytest.skip(f"{path} is not here (the corpus lives beside the checkout)")
    trace = load_path(path)
    monkeypatch.setattr(link_module, "_OVERLAP_MIN_EVENTS", 10**12)
    alone = link_module.link(trace)
    monkeypatch.setattr(link_module, "_OVERLAP_MIN_EVENTS", 0)
    overlapped = link_module.link(trace)
    for field in alone.__struct_fields__:
        value = getattr(alone, field)
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, getattr(overlapped, field), err_msg=field)
    assert alone.report == overlapped.report


def test_memory_settings_reach_numpy_and_glibc() -> None:
    """The CLI's process-wide memory settings (``configure_memory``), in a process of
    their own (glibc's cannot be put back): NumPy stops advising huge pages, a 40 MiB
    array comes from the heap instead of a mapping of its own — in a thread too, from
    the same heap — and the flag that decode workers are started with says so."""
    script = textwrap.dedent(
        """
        import numpy as np
        from trnscope.core.base.memory import _numpy_hook, configure_memory, memory_configured

        import os, threading

        def new_mappings_for_40_mib():
            with open("/proc/self/maps") as maps:
                before = sum(1 for _ in maps)
            array = np.ones(5 << 20)
            with open("/proc/self/maps") as maps:
                after = sum(1 for _ in maps)
            del array
            return after - before

        def malloc_arenas():
            import ctypes, tempfile

            libc = ctypes.CDLL(None)
            libc.fdopen.restype = ctypes.c_void_p
            libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
            libc.fclose.argtypes = (ctypes.c_void_p,)
            with tempfile.TemporaryFile() as report:
                stream = libc.fdopen(os.dup(report.fileno()), b"w")
                libc.malloc_info(0, stream)
                libc.fclose(stream)
                report.seek(0)
                return report.read().count(b"<heap nr=")

        def in_a_new_thread():
            found = []
            worker = threading.Thread(target=lambda: found.append(new_mappings_for_40_mib()))
            worker.start()
            worker.join()
            return found[0]

        getter = _numpy_hook("_get_madvise_hugepage")
        default = new_mappings_for_40_mib()
        assert not memory_configured()
        configure_memory()
        assert memory_configured()
        assert getter is None or not getter()
        print(default, new_mappings_for_40_mib(), in_a_new_thread(), malloc_arenas())
        """
    )
    if not sys.platform.startswith("linux") or not os.confstr("CS_GNU_LIBC_VERSION"):
        pytest.skip("glibc's malloc settings: Linux with glibc only")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    default, configured, in_a_thread, arenas = map(int, done.stdout.split())
    assert default > 0  # glibc's default: an array this big is a mapping of its own
    assert configured == in_a_thread == 0
    assert arenas == 1  # the thread used the one heap, not an arena of its own


def test_a_cached_reopen_reads_no_args_for_memory_and_flops(isolated_cache, monkeypatch, capsys) -> None:
    """The [memory] records' bytes and the FLOPs per op are read from args once: the
    first open's deferred work stores them in the index cache, and a reopen that asks
    for them gets them from there (the args reader is not called at all)."""
    import json

    from conftest import CORPUS
    from trnscope.cli.main import main
    from trnscope.core.analysis import flops, memory

    trace = CORPUS / "tracelens_h100_bert_small.json.gz"
    if not trace.exists():
        pytest.skip("the corpus lives beside the checkout")
    assert main(["summary", str(trace), "--format", "json", "--with", "all"]) == 0
    first = json.loads(capsys.readouterr().out)

    def no_args(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("args read again on a cached reopen")

    monkeypatch.setattr(memory, "raw_args_by_chunk", no_args)
    monkeypatch.setattr(flops, "raw_args_by_chunk", no_args)
    assert main(["summary", str(trace), "--format", "json", "--with", "all"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["ops"] == first["ops"] and again["extras"] == {"memory": "computed", "flops": "computed"}


def test_args_by_chunk_are_each_rows_args_one_chunk_at_a_time(small_synthetic) -> None:
    """Memory records are read chunk by chunk (one chunk's text held at a time); the
    values are the ones the per-row reader (the drill-down's) gives."""
    from trnscope.core.formats import LoadOptions
    from trnscope.core.formats.kineto.events import ANY_DECODER
    from trnscope.core.formats.kineto.lazyargs import event_args, raw_args_by_chunk
    from trnscope.core.formats.kineto.loader import load_kineto

    trace = load_kineto(small_synthetic[0], LoadOptions(workers=1, use_cache=False), chunk_bytes=64 << 10)
    assert len(trace.chunks) > 3
    rows = np.arange(0, len(trace.events), 7)
    batches = list(raw_args_by_chunk(trace, rows))
    assert len(batches) > 3
    together: dict[int, object] = {}
    for batch in batches:
        for k, raw in batch:
            assert k not in together  # each row once
            together[k] = ANY_DECODER.decode(raw)
    assert len(together) > rows.size // 2
    for k, row in enumerate(rows.tolist()):
        expected = event_args(trace, row)
        got = together.get(k)
        assert (got if isinstance(got, dict) else {}) == expected, row


def test_a_cached_reopen_names_the_path_it_was_given(
    isolated_cache, small_synthetic, tmp_path, capsys, monkeypatch
) -> None:
    """The index cache is keyed by the file: opening the same file by another path (a
    link, or a relative path from elsewhere) shows that path, not the first one's."""
    import json

    from trnscope.cli.main import main
    from trnscope.core.opening import open as opening

    path, _ = small_synthetic
    link = tmp_path / "another-name.json"
    link.symlink_to(path)
    assert main(["summary", str(path), "--format", "json", "--limit", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["source"] == str(path)

    def not_again(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the second open should come from the index cache")

    monkeypatch.setattr(opening, "load_source", not_again)
    assert main(["summary", str(link), "--format", "json", "--limit", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["source"] == str(link)


def test_a_folder_of_rank_sessions_reads_their_traces_and_no_manifest_as_a_lost_trace(tmp_path) -> None:
    """``capture run`` under torchrun writes DIR/rank<N>/session.json beside each rank's
    trace: the folder's answer said "2 files named like a trace are not one … rank0/session".
    A manifest is passed over unsaid; a Kineto trace that happens to be named
    session.json is still a trace, and any other JSON that is not one is still said."""
    from trnscope.core.formats import discover
    from trnscope.core.model.session import SESSION_FILE, SessionManifest, encode_manifest
    from trnscope.testing.events import op, write_trace

    for rank in (0, 1):
        folder = tmp_path / "job" / f"rank{rank}"
        folder.mkdir(parents=True)
        (folder / SESSION_FILE).write_bytes(encode_manifest(SessionManifest()))
        write_trace(folder / "train.pt.trace.json", [op("aten::mm", 0, 10)])
    ref = discover(tmp_path / "job")
    assert [s.label for s in ref.sources] == ["rank0/train", "rank1/train"] and ref.notes == []
    (tmp_path / "job" / "rank1" / "stray.json").write_text('{"not": "a trace"}')
    (tmp_path / "job" / "kept").mkdir()
    write_trace(tmp_path / "job" / "kept" / SESSION_FILE, [op("aten::add", 0, 5)])
    ref = discover(tmp_path / "job")
    assert [s.label for s in ref.sources] == ["kept/session", "rank0/train", "rank1/train"]
    assert len(ref.notes) == 1 and "1 file named like a trace is not one" in ref.notes[0] and "stray" in ref.notes[0]


def test_a_folder_of_profiles_lists_every_profiles_traces(tmp_path, capsys) -> None:
    """The folder of the bundled samples — capture sessions, a folder of kernel
    benchmarks — holds several profiles: ``summary sample_traces`` showed a Neuron
    benchmark's kernel and offered to sum "ranks", while the Kineto sessions went
    unnamed (the Neuron search found only its own kind).  Every profile's traces are now
    its sources, labelled under the profile's name, the note says how to open one, and
    ``compare`` of a folder of two single-trace sessions compares them; a job's rank
    sessions (traces that say they are one job's ranks) still open as one job."""
    import json
    import shutil

    from conftest import SAMPLES
    from trnscope.cli.main import main
    from trnscope.core.formats import discover

    folder = tmp_path / "samples"
    for name in ("cpu_rmsnorm_session", "cpu_attention_session", "nki_synthetic_rmsnorm_benchmarks"):
        shutil.copytree(SAMPLES / name, folder / name)
    ref = discover(folder)
    assert ref.kind == "profiles"
    labels = [source.label for source in ref.sources]
    assert labels[:3] == [
        "cpu_attention_session/eager",
        "cpu_attention_session/compiled",
        "cpu_attention_session/fused",
    ]
    assert labels[-3:] == [f"nki_synthetic_rmsnorm_benchmarks/rmsnorm_{v}" for v in ("baseline", "fused", "tiled")]
    assert len(labels) == 9
    assert main(["summary", str(folder), "--no-cache", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["label"] == "cpu_attention_session/eager"
    said = next(w for w in document["warnings"] if "holds 9 traces" in w)
    assert f"open one profile: trnscope open {folder / 'cpu_attention_session'}" in said
    assert (
        main(["summary", str(folder), "--select", "nki_synthetic_rmsnorm_benchmarks/rmsnorm_fused", "--no-cache"]) == 0
    )
    assert capsys.readouterr().out.startswith("nki_synthetic_rmsnorm_benchmarks/rmsnorm_fused")
    runs = tmp_path / "runs"
    for mode in ("eager", "replay"):
        shutil.copytree(SAMPLES / f"cuda_graph_{mode}_session", runs / f"cuda_graph_{mode}_session")
    assert main(["compare", str(runs), "--format", "json", "--no-cache"]) == 0
    assert json.loads(capsys.readouterr().out)["variants"] == [
        "cuda_graph_eager_session/infer_cuda_graph",
        "cuda_graph_replay_session/infer_cuda_graph",
    ]
    # two sessions of one job's ranks, named by the traces themselves (not rank<N> folders)
    job = tmp_path / "job"
    for rank in (0, 1):
        shutil.copytree(SAMPLES / "cuda_ddp_gloo_session" / f"rank{rank}", job / f"worker-{rank}")
    assert discover(job).kind == "folder"
    assert main(["ranks", str(job), "--format", "json", "--no-cache", "--workers", "1"]) == 0
    assert len(json.loads(capsys.readouterr().out)["ranks"]) == 2


def test_a_folders_discovery_reads_each_folder_once_and_types_entries_as_path_does(tmp_path, monkeypatch) -> None:
    """Discovery walked a folder for Neuron sessions and again for Kineto traces, with a
    ``stat`` per entry: 20,000 empty folders took 1.0–1.2 s to say where the one trace
    was, 0.55 s now.  Each folder is listed once, and entries keep ``Path``'s types: a
    link to a folder is no folder to walk, a dangling link and a FIFO are no files."""
    from trnscope.core.base import fs
    from trnscope.core.formats.discovery import discover
    from trnscope.testing.events import op, write_trace

    for a in range(3):
        for b in range(4):
            (tmp_path / f"d{a}" / f"s{b}").mkdir(parents=True)
    trace = write_trace(tmp_path / "d1" / "s2" / "t.json", [op("aten::mm", 0, 5)])
    (tmp_path / "linked").symlink_to(tmp_path / "d1", target_is_directory=True)
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    os.mkfifo(tmp_path / "pipe.json")
    listed: list[str] = []
    scandir = os.scandir

    def counting(path):  # type: ignore[no-untyped-def]
        listed.append(str(path))
        return scandir(path)

    monkeypatch.setattr(fs.os, "scandir", counting)
    ref = discover(tmp_path)
    assert [source.path for source in ref.sources] == [str(trace)]  # not again through the link
    assert len(listed) == len(set(listed)) == 1 + 3 + 3 * 4  # the root, d0–d2, their s0–s3
    entries = {entry.name: entry for entry in fs.list_folder(tmp_path) or []}
    assert entries["linked"].is_dir and not entries["linked"].is_real_dir
    assert not entries["dangling.json"].is_file and not entries["pipe.json"].is_file
    assert entries["d0"].is_real_dir and fs.list_folder(tmp_path / "nowhere") is None
