"""The collector held off during start-up imports (``core.base.gcpause``)."""

from __future__ import annotations

import gc
import subprocess
import sys

from trnscope.core.base.gcpause import collector_paused


def test_paused_inside_restored_after_and_nothing_frozen_in_a_test_process() -> None:
    frozen = gc.get_freeze_count()
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        kept = [[] for _ in range(1000)]  # objects made while paused are not frozen here
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
    assert kept
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # off before: stays off
    finally:
        gc.enable()


def test_the_console_script_freezes_what_its_imports_made() -> None:
    """In trnscope's own process the objects alive after the imports are frozen, so no
    collection traverses them later; the collector runs again."""
    code = (
        "import gc\n"
        "from trnscope.core.base.gcpause import collector_paused, own_this_process\n"
        "own_this_process()\n"
        "with collector_paused():\n"
        "    assert not gc.isenabled()\n"
        "    import json, decimal\n"
        "assert gc.isenabled() and gc.get_freeze_count() > 1000, gc.get_freeze_count()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
