"""Where per-rank work runs: this process, a local process pool, or a Dask cluster.

The work is a pure function over picklable values (``ranks.summarize_rank``), so any
``concurrent.futures.Executor`` drives it.  The local default is a process pool of
``--workers`` processes (default: the CPU count), with no package beyond the standard
library.  With a scheduler address (``--scheduler tcp://host:8786``,
``DASK_SCHEDULER_ADDRESS``) or a scheduler file (``--scheduler-file``, as SLURM and
ParallelCluster launchers write), the same function runs on Dask's workers through
``distributed.Client.get_executor()``; paths travel, the workers read the traces where
they lie, and only summaries come back.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

import msgspec

from trnscope.core.base import settings
from trnscope.core.base.errors import InputError
from trnscope.core.formats.kineto.parallel import pool_context

DASK_INSTALL = "pip install 'trnscope[dask]'"


class ExecutorChoice(msgspec.Struct, frozen=True):
    """What the user asked for: a worker count, or a Dask scheduler."""

    workers: int | None = None  # local processes; None: the CPU count; 1: this process
    scheduler: str = ""  # tcp://host:8786 (else DASK_SCHEDULER_ADDRESS)
    scheduler_file: str = ""

    def describe(self, jobs: int) -> str:
        if self.dask_target():
            return f"Dask scheduler {self.scheduler or self.scheduler_file or settings.dask_scheduler_address()}"
        count = local_workers(self, jobs)
        return "this process" if count <= 1 else f"{count} local processes"

    def dask_target(self) -> bool:
        return bool(self.scheduler or self.scheduler_file or settings.dask_scheduler_address())


def local_workers(choice: ExecutorChoice, jobs: int) -> int:
    wanted = choice.workers if choice.workers is not None else (os.cpu_count() or 1)
    return max(1, min(wanted, jobs))


@contextmanager
def executor_for(choice: ExecutorChoice, jobs: int) -> Iterator[Executor | None]:
    """The executor to map per-rank work on (None: run it in this process)."""
    if choice.dask_target():
        with _dask_executor(choice) as executor:
            yield executor
        return
    count = local_workers(choice, jobs)
    context = pool_context() if count > 1 else None
    if context is None:
        yield None
        return
    with ProcessPoolExecutor(max_workers=count, mp_context=context) as pool:
        yield pool


@contextmanager
def _dask_executor(choice: ExecutorChoice) -> Iterator[Executor]:
    try:
        import distributed
    except ImportError:
        raise InputError(f"a Dask scheduler was given but Dask is not installed: {DASK_INSTALL}") from None
    address = choice.scheduler or settings.dask_scheduler_address()
    client_class: Any = distributed.Client  # distributed's API is untyped
    try:
        if choice.scheduler_file:
            client = client_class(scheduler_file=choice.scheduler_file, timeout=settings.dask_timeout_s())
        else:
            client = client_class(address, timeout=settings.dask_timeout_s())
    except (OSError, TimeoutError, ValueError) as error:
        where = choice.scheduler_file or address
        raise InputError(f"cannot reach the Dask scheduler at {where}: {error}") from None
    try:
        with client.get_executor(pure=False) as executor:
            yield executor
    finally:
        client.close()
