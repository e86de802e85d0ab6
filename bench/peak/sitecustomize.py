"""Bench helper, put on PYTHONPATH by ``bench/real_traces.py``: at exit, the process's own
peak RSS (``VmHWM``) and its largest child's (decode workers, after they were joined) go
to the file ``TRNSCOPE_BENCH_PEAK_FILE`` names.

Why not ``wait4``'s ``ru_maxrss``: Linux carries the spawning process's peak into a
child's ``ru_maxrss`` at exec, so a small trace would report the bench's own size."""

import atexit
import os
import resource

_STARTED_IN = os.getpid()


def _write_peak() -> None:
    target = os.environ.get("TRNSCOPE_BENCH_PEAK_FILE")
    if not target or os.getpid() != _STARTED_IN:  # a forked worker exiting
        return
    with open("/proc/self/status") as status:
        own = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with open(target, "w") as out:
        out.write(f"{own} {children}\n")


atexit.register(_write_peak)
