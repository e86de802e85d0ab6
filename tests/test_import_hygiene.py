"""The headless core and the CLI import neither Textual nor torch (the viewer runs
without torch, and ``trnscope summary`` must not pay Textual's import time)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import trnscope.cli
import trnscope.core
from conftest import REPO


def _modules(package: object, prefix: str) -> list[str]:
    return [m.name for m in pkgutil.walk_packages(package.__path__, prefix)]  # type: ignore[attr-defined]


def test_core_and_cli_import_without_textual_or_torch() -> None:
    modules = _modules(trnscope.core, "trnscope.core.") + _modules(trnscope.cli, "trnscope.cli.")
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch', 'rich'))\n"
        "assert not bad, bad[:5]\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO))
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(modules) > 25


def test_capture_package_imports_without_pulling_torch_eagerly() -> None:
    code = "import sys, trnscope.capture; assert 'torch' not in sys.modules"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO))
    assert result.returncode == 0, result.stderr[-2000:]


def test_only_trnscope_is_installed() -> None:
    """The wheel holds one top-level package: no generic ``tui``/``capture`` names."""
    import tomllib

    from setuptools import find_packages

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(str(REPO), include=config["include"], exclude=config.get("exclude", ()))
    assert "trnscope" in packages
    assert {name.split(".")[0] for name in packages} == {"trnscope"}, packages
