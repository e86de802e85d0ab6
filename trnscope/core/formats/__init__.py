"""Loading: from a path the user typed to a ``Trace``.

``discover`` says what is at a path (a trace, a capture session, a Neuron profile
folder, a folder of traces); ``load_source`` reads one of its sources.  The parsed-index
cache sits one level up, in ``trnscope.core.opening.open``, because it stores links too.

The names below are loaded on first use (PEP 562), not when the package is: importing
any module of this package runs this file first, and the console script imports
``inflate_ahead`` to fork its gzip child before msgspec and the readers are loaded
(the earlier the child starts, the sooner the decompressed copy is there).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trnscope.core.formats.discovery import ProfileRef, SourceRef, discover
    from trnscope.core.formats.loading import load_neuron_profile, load_path, load_source
    from trnscope.core.formats.options import NO_CACHE, LoadOptions

__all__ = [
    "NO_CACHE",
    "LoadOptions",
    "ProfileRef",
    "SourceRef",
    "discover",
    "load_neuron_profile",
    "load_path",
    "load_source",
]

# each public name and the module of this package that defines it
_HOMES = {
    "NO_CACHE": "options",
    "LoadOptions": "options",
    "ProfileRef": "discovery",
    "SourceRef": "discovery",
    "discover": "discovery",
    "load_neuron_profile": "loading",
    "load_path": "loading",
    "load_source": "loading",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # found directly from now on
    return value
