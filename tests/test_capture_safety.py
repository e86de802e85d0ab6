"""A capture writes only inside the session folder it was given: the folder is resolved
and checked before any work, locked against a second capture, removed on SIGTERM, and
labels cannot name paths outside it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO
from trnscope.capture.workspace import SessionWorkspace, check_label, check_output_folder, slug_label
from trnscope.core.base.errors import TrnscopeError
from trnscope.core.model.session import SessionManifest


def test_labels_are_plain_names() -> None:
    for good in ("eager", "torch.compile", "nki-v2", "bf16_fused", "a+b"):
        assert check_label(good) == good
    for bad in ("../escape", "a/b", ".hidden", "..", "a..b", "", "x" * 65, "tab\there", "evil\x1b[2J"):
        with pytest.raises(TrnscopeError):
            check_label(bad)
    assert slug_label("my train step.py") == "my_train_step.py"
    assert slug_label("../../x") == "x"


def test_bad_label_is_refused_before_any_work(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from trnscope.capture import compare

    out = tmp_path / "session"
    with pytest.raises(TrnscopeError, match="not a plain name"):
        compare({"eager": lambda x: x, "../../outside": lambda x: x}, (1,), out=out)
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_out_as_a_symbolic_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert check_output_folder(link) == real.resolve()
    workspace = SessionWorkspace(link)
    assert workspace.commit(SessionManifest(created="now", host="h")) == real.resolve()
    assert (real / "session.json").is_file() and link.is_symlink()
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(TrnscopeError, match="dangling"):
        check_output_folder(dangling)


def test_a_second_capture_to_the_same_folder_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "session"
    first = SessionWorkspace(out)
    with pytest.raises(TrnscopeError, match="another capture is writing"):
        SessionWorkspace(out)
    first.abort()
    assert [p.name for p in tmp_path.iterdir()] == []  # no partial folder, no lock file
    second = SessionWorkspace(out)  # free again
    second.commit(SessionManifest(created="now", host="h"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session"]


def test_sigterm_removes_the_partial_folder(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "slow_job.py"
    script.write_text("import time\nfor _ in range(600):\n    time.sleep(0.1)\n")
    work = tmp_path / "work"
    work.mkdir()
    out = work / "session"
    child = subprocess.Popen(
        [sys.executable, "-m", "trnscope", "capture", "run", str(script), "--steps", "3", "--out", str(out)],
        cwd=str(REPO),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 90
    while not list(work.glob(".session.partial-*")) and time.monotonic() < deadline:
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        time.sleep(0.05)
    assert list(work.glob(".session.partial-*")), "the capture never started writing"
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 143, err
    assert b"Traceback" not in err
    assert [p.name for p in work.iterdir()] == [], "SIGTERM left files behind"


def test_partial_and_lock_names_stay_beside_the_target(tmp_path: Path) -> None:
    workspace = SessionWorkspace(tmp_path / "s")
    assert workspace.temp.parent == tmp_path and workspace.temp.name.startswith(".s.partial-")
    assert (tmp_path / ".s.lock").exists()
    workspace.abort()
    assert not (tmp_path / ".s.lock").exists() and os.listdir(tmp_path) == []


def test_a_signal_as_the_partial_folder_appears_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    """SIGTERM right after the partial folder is made (before the capture's own guard
    began) left the folder and its lock behind (one run in four of the test above, on a
    loaded machine): the signal is held while the folder is made and lands inside the
    guard, which removes both."""
    from trnscope.capture import workspace as ws

    class Ended(BaseException):
        pass

    def ended(signum: int, frame: object) -> None:
        raise Ended

    made = ws.SessionWorkspace.__init__

    def made_then_signalled(self: ws.SessionWorkspace, out: Path) -> None:
        made(self, out)
        assert self.temp.is_dir()
        os.kill(os.getpid(), signal.SIGTERM)  # as the test above sends it, at the worst moment

    previous = signal.signal(signal.SIGTERM, ended)
    try:
        monkeypatch.setattr(ws.SessionWorkspace, "__init__", made_then_signalled)
        with pytest.raises(Ended), ws.partial_session(tmp_path / "session"):
            pytest.fail("the block ran although the signal had come")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert os.listdir(tmp_path) == []
