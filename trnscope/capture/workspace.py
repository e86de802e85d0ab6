"""The session folder a capture writes: validated before any work, locked against a
second capture, written beside the target and renamed into place at the end, removed
on failure, interruption or SIGTERM.  Variant labels become folder and file names, so
they must be plain names."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from trnscope.core.base.cachedir import atomic_write_bytes
from trnscope.core.base.errors import TrnscopeError
from trnscope.core.base.signals import endings_deferred
from trnscope.core.base.text import safe_text
from trnscope.core.model.session import SESSION_FILE, SessionManifest, encode_manifest

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")


def check_label(label: str) -> str:
    """A variant label is a plain name (it names files in the session): no ``/``, no
    ``..``, no leading dot, 64 characters at most."""
    if not _LABEL.match(label) or ".." in label:
        raise TrnscopeError(
            f"variant label {safe_text(label)!r} is not a plain name "
            "(letters, digits, '.', '_', '+', '-'; starting with a letter or digit; at most 64)"
        )
    return label


def slug_label(name: str) -> str:
    """A plain label made from a name (a script's stem): other characters become ``_``."""
    slug = re.sub(r"[^A-Za-z0-9._+-]", "_", name).strip("._") or "script"
    return check_label(slug[:64].replace("..", "_"))


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return f"{type(error).__name__}: {text}"[:500]


def check_output_folder(out: Path) -> Path:
    """The session folder to create, resolved (a symbolic link to an empty folder is
    followed; a dangling one is refused); refused when it cannot be created.  Called
    before any work starts, and again when the workspace opens."""
    if out.is_symlink():
        if not out.exists():
            raise TrnscopeError(f"output folder is a dangling symbolic link: {out}")
        out = out.resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise TrnscopeError(f"output folder exists and is not empty: {out}")
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise TrnscopeError(f"cannot create {parent}: {error.strerror or error}") from None
    if not os.access(parent, os.W_OK):
        raise TrnscopeError(f"cannot write to {parent}: permission denied")
    return out


class SessionWorkspace:
    """A session folder that appears complete or not at all.

    Everything is written into ``.<name>.partial-<pid>`` beside the target and renamed
    into place at the end; a failure removes the partial folder.  ``.<name>.lock``
    (an advisory lock) keeps a second capture from writing the same folder."""

    def __init__(self, out: Path) -> None:
        self.out = check_output_folder(out)
        parent = self.out.parent
        self._lock_path = parent / f".{self.out.name}.lock"
        self._lock: IO[bytes] | None = None
        try:
            self._lock = open(self._lock_path, "ab")  # noqa: SIM115 - held for the capture
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._close_lock(remove=False)
            raise TrnscopeError(f"another capture is writing {self.out}; wait for it or choose another --out") from None
        except OSError as error:
            self._close_lock(remove=False)
            raise TrnscopeError(f"cannot write to {parent}: {error.strerror or error}") from None
        check_output_folder(self.out)  # again, now that nobody else can be writing it
        self.temp = parent / f".{self.out.name}.partial-{os.getpid()}"
        try:
            self.temp.mkdir()
        except OSError as error:
            self._close_lock(remove=True)
            raise TrnscopeError(f"cannot write to {parent}: {error.strerror or error}") from None

    def _close_lock(self, remove: bool) -> None:
        if self._lock is None:
            return
        if remove:
            self._lock_path.unlink(missing_ok=True)
        self._lock.close()
        self._lock = None

    def commit(self, manifest: SessionManifest) -> Path:
        atomic_write_bytes(self.temp / SESSION_FILE, encode_manifest(manifest))
        if self.out.exists():
            self.out.rmdir()  # empty by the check above
        os.replace(self.temp, self.out)
        self._close_lock(remove=True)
        return self.out

    def abort(self) -> None:
        shutil.rmtree(self.temp, ignore_errors=True)
        self._close_lock(remove=True)


@contextmanager
def partial_session(out: Path) -> Iterator[SessionWorkspace]:
    """A ``SessionWorkspace`` whose partial folder and lock go on any way out of the
    block but its commit.  Ctrl+C, SIGTERM and SIGHUP wait while the folder and its lock
    are made and arrive inside the guard: a SIGTERM just after the folder appeared and
    before the capture's own ``try`` left ``.<name>.partial-<pid>`` and its lock behind
    (one run in four of a test on a loaded machine)."""
    workspace: SessionWorkspace | None = None
    try:
        with endings_deferred():
            workspace = SessionWorkspace(out)
        yield workspace
    except BaseException:
        if workspace is not None:
            workspace.abort()  # (after a commit there is nothing left to remove)
        raise
