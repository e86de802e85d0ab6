"""The headless core imports neither Textual nor torch (the viewer runs without torch,
and ``trnscope summary`` must not pay Textual's import time)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import trnscope
from conftest import REPO


def test_core_modules_import_without_textual_or_torch() -> None:
    modules = [m.name for m in pkgutil.walk_packages(trnscope.__path__, "trnscope.") if not m.name.endswith("__main__")]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch'))\n"
        "assert not bad, bad[:5]\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO))
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(modules) > 20


def test_capture_package_imports_without_pulling_torch_eagerly() -> None:
    code = "import sys, capture; assert 'torch' not in sys.modules"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO))
    assert result.returncode == 0, result.stderr[-2000:]
