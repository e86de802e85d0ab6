"""How a source is loaded: the options every loading function takes as one value.

A picklable struct (it travels to decode workers and to rank workers); the two
callables that cannot travel — ``progress`` and ``cancelled`` — stay separate keyword
arguments of the loading functions.
"""

from __future__ import annotations

import msgspec


class LoadOptions(msgspec.Struct, frozen=True):
    skip: tuple[str, ...] = ()  # categories dropped at load ("python": python_function)
    use_cache: bool = True  # read and write the caches (index, decompressed copy)
    workers: int | None = None  # decode processes (None: the CPU count)
    warmup: int = 0  # NeuronCore executions left out at the start of each kernel (--warmup)
    op_tree: str = "auto"  # Python frames in the op tree: auto | classic | python (``model.op_tree``)


DEFAULT = LoadOptions()
NO_CACHE = LoadOptions(use_cache=False)
