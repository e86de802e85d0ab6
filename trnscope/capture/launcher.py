"""Which rank of a distributed job this capture is, as its launcher says.

``torchrun`` (and ``torch.distributed.launch``, Neuron's examples, Accelerate) sets
``RANK`` and ``WORLD_SIZE`` in every process it starts; ``mpirun`` sets
``OMPI_COMM_WORLD_RANK`` / ``OMPI_COMM_WORLD_SIZE``, MPICH and Intel MPI ``PMI_RANK`` /
``PMI_SIZE``.  Run under one of them, ``trnscope capture run`` starts once per rank,
all with the same ``--out``: each rank then writes its own session folder,
``DIR/rank<N>``, which ``trnscope ranks DIR`` reads together.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import msgspec

from trnscope.core.base.errors import TrnscopeError

# (rank, world size) variables, in the order they are trusted
_LAUNCHER_VARIABLES = (
    ("RANK", "WORLD_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
)


class LauncherRank(msgspec.Struct, frozen=True):
    rank: int
    world_size: int
    variable: str  # the variable the rank came from, for messages


def launcher_rank(environ: Mapping[str, str] | None = None) -> LauncherRank | None:
    """This process's rank in a job of more than one process, else None.  A rank or
    world size that is not a whole number, or a rank outside the world, is refused:
    writing every rank's trace into one folder would lose all but one."""
    env = os.environ if environ is None else environ
    for rank_name, size_name in _LAUNCHER_VARIABLES:
        if rank_name not in env or size_name not in env:
            continue
        try:
            rank, size = int(env[rank_name]), int(env[size_name])
        except ValueError:
            raise TrnscopeError(
                f"{rank_name}={env[rank_name]!r} and {size_name}={env[size_name]!r} are not whole numbers"
            ) from None
        if size <= 1:
            return None
        if not 0 <= rank < size:
            raise TrnscopeError(f"{rank_name}={rank} is outside a world of {size} ({size_name})")
        return LauncherRank(rank, size, rank_name)
    return None


def rank_folder(out: Path, rank: LauncherRank | None) -> Path:
    """Where this process writes its session: ``out`` itself, or ``out/rank<N>``."""
    return out if rank is None else out / f"rank{rank.rank}"
