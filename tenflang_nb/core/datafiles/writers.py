"""Records written back as data files, one writer a format (brace notation, CSV, ``.npz``);
every file a writer makes reads back to the same records."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import TenFlangError
from ..formatting import fmt_shape
from ..lexical import NULL
from ..ops import Shape
from .table import Value


def format_value(value: Value) -> str:
    """Write one value as brace notation reads it back exactly (floats by ``repr``).

    Non-finite numbers come out as ``nan``/``inf``, which no reader accepts: they are
    never valid data.

    >>> format_value(0.1), format_value(3), format_value(None)
    ('0.1', '3.0', 'null')
    >>> format_value(np.array([[1, 2], [3, 4]]))
    '[[1.0, 2.0], [3.0, 4.0]]'
    """
    if value is None:
        return NULL
    if isinstance(value, np.ndarray | list | tuple):
        arr = np.asarray(value, dtype=np.float64)
        if arr.ndim == 0:
            return repr(float(arr))
        return _format_nested(arr)
    # float() first: numpy 2 scalars have a repr like 'np.float64(0.1)'
    return repr(float(value))


def format_record(values: Mapping[str, Value]) -> str:
    """Write one record in brace notation, in the mapping's order.

    >>> format_record({"x": 3.0, "w": -2, "y": None})
    '{x: 3.0, w: -2.0, y: null}'
    """
    return "{" + ", ".join(f"{name}: {format_value(v)}" for name, v in values.items()) + "}"


def _write_brace(records: Sequence[Mapping[str, Value]], file: str) -> str:
    return "".join(format_record(r) + "\n" for r in records)


def _format_nested(arr: np.ndarray) -> str:
    # the rows of every level at once, innermost first: no recursion
    cells = [repr(x) for x in arr.ravel().tolist()]
    for level in range(arr.ndim - 1, -1, -1):
        size = arr.shape[level]
        if size == 0:  # no numbers below: as many empty lists as the outer levels make
            cells = ["[]"] * math.prod(arr.shape[:level])
        else:
            cells = ["[" + ", ".join(cells[k:k + size]) + "]"
                     for k in range(0, len(cells), size)]
    return cells[0]


def _layout(records: Sequence[Mapping[str, Value]], format: str, file: str
            ) -> dict[str, Shape | None]:
    """Each name's shape (None: never a value), in order of appearance, for a format that
    gives every name a place in every record (columns, arrays)."""
    if not records:
        raise TenFlangError.at(f"no records to write as {format}", file=file)
    shapes: dict[str, Shape | None] = {}
    for record in records:
        for name, value in record.items():
            shape = None if value is None else np.shape(value)
            seen = shapes.setdefault(name, shape)
            if seen is None:
                shapes[name] = shape
            elif shape is not None and shape != seen:
                raise TenFlangError.at(
                    f"cannot write {name!r} as {format}: its values have shapes "
                    f"{fmt_shape(seen)} and {fmt_shape(shape)}", file=file)
    if not shapes:
        raise TenFlangError.at(
            f"nothing to write as {format}: the records hold no values (a brace file can "
            "hold empty records)", file=file)
    return shapes


def _write_csv(records: Sequence[Mapping[str, Value]], file: str) -> str:
    shapes = _layout(records, "csv", file)
    empty = next((n for n, s in shapes.items() if s is not None and 0 in s), None)
    if empty is not None:
        raise TenFlangError.at(
            f"cannot write {empty!r} as csv: an empty tensor has no cells to spread over "
            "columns (write a brace or .npz file)", file=file)
    header: list[str] = []
    nulls: dict[str, list[str]] = {}
    for name, shape in shapes.items():
        cells = [name + "".join(f"[{k}]" for k in ix) for ix in np.ndindex(*(shape or ()))]
        header += cells
        nulls[name] = [""] * len(cells)
    # a one-column row with an empty cell would be a blank line, which is no record
    null_row = "null" if len(header) == 1 else ",".join([""] * len(header))
    out = [",".join(header)]
    for record in records:
        cells = []
        for name, shape in shapes.items():
            value = record.get(name)
            if value is None:
                cells += nulls[name]
            elif shape:
                cells += map(repr, np.asarray(value, dtype=np.float64).ravel().tolist())
            else:
                cells.append(repr(float(value)))  # type: ignore[arg-type]
        row = ",".join(cells)
        out.append(row if any(cells) else null_row)
    return "\n".join(out) + "\n"


def _write_npz(records: Sequence[Mapping[str, Value]], file: str) -> bytes:
    shapes = _layout(records, "npz", file)
    n = len(records)
    arrays: dict[str, np.ndarray] = {}
    for name, shape in shapes.items():
        arr = np.full((n, *(shape or ())), np.nan)
        given = np.zeros(n, dtype=bool)
        for i, record in enumerate(records):
            value = record.get(name)
            if value is not None:
                arr[i] = value
                given[i] = True
        bad = np.flatnonzero(given & ~np.isfinite(arr.reshape(n, -1)).all(axis=1))
        if bad.size:
            raise TenFlangError.at(
                f"record {bad[0] + 1}: {name!r} is NaN or infinite, which an .npz file cannot "
                "hold (NaN there means null): write a .csv or brace file", file=file)
        arrays[name] = arr
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()
