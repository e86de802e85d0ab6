"""Text output of the CLI: every string from a file goes through ``safe_text``, and the
Rich consoles that lay out tables never read markup."""

from __future__ import annotations

import csv
import io
import sys
from typing import TYPE_CHECKING, Any, Protocol

from trnscope.core.analysis.contracts import encode_bytes, encode_chunks
from trnscope.core.base.text import safe_text

if TYPE_CHECKING:
    from rich.console import Console


class RowWriter(Protocol):
    def writerow(self, row: list[Any], /) -> Any: ...


class _SafeWriter:
    """A csv writer whose text cells are sanitised (CSV shown on a terminal)."""

    def __init__(self, out: io.StringIO) -> None:
        self._writer = csv.writer(out, lineterminator="\n")

    def writerow(self, row: list[Any], /) -> Any:
        return self._writer.writerow([safe_text(c) if isinstance(c, str) else c for c in row])


def csv_writer(out: io.StringIO, terminal: bool) -> RowWriter:
    """CSV rows; sanitised when they go to a terminal, exact into a file or a pipe."""
    return _SafeWriter(out) if terminal else csv.writer(out, lineterminator="\n")


def text_console(width: int) -> Console:
    """A recording console for plain-text tables: no colour, no highlighting and no
    markup, so ``[/bold]`` in a name is shown as typed."""
    from rich.console import Console

    return Console(
        width=width,
        record=True,
        file=io.StringIO(),
        force_terminal=False,
        color_system=None,
        highlight=False,
        markup=False,
    )


def write_json(document: Any) -> None:
    """A contract document on stdout as indented JSON, written as bytes piece by piece (a
    ``ranks`` answer over many ranks is ~100 MB: never one str, never one buffer); through
    the text stream where there is no byte stream under it."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(encode_bytes(document).decode() + "\n")
        return
    sys.stdout.flush()
    for piece in encode_chunks(document):
        buffer.write(piece)
    buffer.write(b"\n")
    buffer.flush()
