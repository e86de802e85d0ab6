"""Neuron Explorer's Parquet tables, read defensively.

A table may be one ``<Table>.parquet`` or split into ``<Table>_<n>.parquet`` parts
(Explorer splits big tables).  Parts written by different versions may disagree on a
column's type (an id as int64 in one part and string in another); such columns are
read as strings, which the readers coerce.  A file that is not Parquet, a FIFO or a
table without a needed column gives one clear line, never an internal error or a hang.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trnscope.core.base.errors import InputError
from trnscope.core.base.fs import is_file


def require_pyarrow(what: str) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            f"{what} is a Neuron Explorer Parquet export; reading it needs pyarrow: pip install 'trnscope[parquet]'"
        ) from None
    return pq


def _part_number(path: Path, table: str) -> int | None:
    rest = path.stem[len(table) + 1 :]
    return int(rest) if rest.isdigit() else None


def table_files(folder: Path, table: str) -> list[Path]:
    """``<Table>.parquet`` and the split ``<Table>_<n>.parquet`` parts, in order (a bare
    prefix glob would also catch ``DmaPacketAggregated`` for ``DmaPacket``)."""
    try:
        candidates = [p for p in folder.glob(f"{table}*.parquet")]
    except OSError:
        return []
    exact = [p for p in candidates if p.name == f"{table}.parquet"]
    parts = sorted(
        (p for p in candidates if p.name.startswith(f"{table}_") and _part_number(p, table) is not None),
        key=lambda p: _part_number(p, table) or 0,
    )
    return exact + parts


def _short(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text[:160] + ("…" if len(text) > 160 else "")


def read_table(folder: Path, table: str, columns: list[str] | None = None, required: tuple[str, ...] = ()) -> Any:
    """The table's parts as one pyarrow Table (only ``columns`` when given), or None
    when the folder has no such table.  ``required``: columns without which the table
    is useless; each may be a ``a|b`` alternative."""
    pq = require_pyarrow(str(folder))
    import pyarrow as pa

    files = table_files(folder, table)
    if not files:
        return None
    parts = []
    for file in files:
        if not is_file(file):  # a FIFO or a device would block the reader
            raise InputError(f"{file}: not a regular file; cannot read the {table} table from it")
        try:
            names = pq.read_schema(file).names
        except (pa.ArrowException, OSError) as error:
            raise InputError(f"{file}: not a readable Parquet table ({_short(error)})") from None
        for need in required:
            if not any(option in names for option in need.split("|")):
                raise InputError(f"{file}: the {table} table has no {need.replace('|', ' or ')} column")
        wanted = [c for c in columns if c in names] if columns else None
        try:
            parts.append(pq.read_table(file, columns=wanted))
        except (pa.ArrowException, OSError) as error:
            raise InputError(f"{file}: not a readable Parquet table ({_short(error)})") from None
    if len(parts) == 1:
        return parts[0]
    try:
        return pa.concat_tables(parts, promote_options="default")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.concat_tables(_as_strings_where_types_differ(parts), promote_options="default")


def _as_strings_where_types_differ(parts: list[Any]) -> list[Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    types: dict[str, set[str]] = {}
    for part in parts:
        for field in part.schema:
            types.setdefault(field.name, set()).add(str(field.type))
    mixed = {name for name, seen in types.items() if len(seen) > 1}
    out = []
    for part in parts:
        for name in mixed & set(part.schema.names):
            index = part.schema.get_field_index(name)
            column = part.column(index)
            try:
                as_text = pc.cast(column, pa.string())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                as_text = pa.array([None if v is None else str(v) for v in column.to_pylist()], pa.string())
            part = part.set_column(index, name, as_text)
        out.append(part)
    return out


def first_row(table: Any) -> dict[str, Any]:
    if table is None or table.num_rows == 0:
        return {}
    return {k: v[0] for k, v in table.slice(0, 1).to_pydict().items()}


def column(data: dict[str, list[Any]], n: int, *names: str) -> list[Any]:
    """The first of ``names`` that the table has, else a column of None."""
    for name in names:
        if name in data:
            return data[name]
    return [None] * n


def int_column(table: Any, name: str) -> tuple[Any, int]:
    """Column ``name`` of ``table`` as int64 numpy with -1 for missing, and how many
    values were missing or unusable (null, NaN, not a number)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from trnscope.core.formats.neuron.tolerant import NONE, int_or_missing

    col = table.column(name)
    kind = col.type
    if pa.types.is_integer(kind):
        missing = col.null_count
        return pc.fill_null(col, NONE).to_numpy().astype(np.int64, copy=False), int(missing)
    if pa.types.is_floating(kind):
        values = pc.fill_null(col, float("nan")).to_numpy()
        usable = np.isfinite(values) & (np.abs(values) < 9.2e18)
        out = np.where(usable, values, NONE).astype(np.int64)
        return out, int((~usable).sum())
    values = np.array([int_or_missing(v) for v in col.to_pylist()], dtype=np.int64)
    return values, int((values == NONE).sum())


def text_codes(table: Any, name: str) -> tuple[Any, list[str]]:
    """Column ``name`` dictionary-encoded: int32 codes (-1 for null) and the strings."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column(name)
    if not pa.types.is_string(col.type) and not pa.types.is_large_string(col.type):
        col = pc.cast(col, pa.string(), safe=False) if not pa.types.is_dictionary(col.type) else col
    encoded = col.combine_chunks()
    if not pa.types.is_dictionary(encoded.type):
        encoded = pc.dictionary_encode(encoded)
    codes = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int32, copy=False)
    return codes, [str(v) for v in encoded.dictionary.to_pylist()]
