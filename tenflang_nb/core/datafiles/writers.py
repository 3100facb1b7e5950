"""Records written back as data files: a value in brace notation (``_format_nested``), and
whole tables as CSV or ``.npz``, each of which reads back to the same records."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import TenFlangError
from ..formatting import fmt_shape
from ..ops import Shape
from .table import Value


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
            ) -> tuple[list[str], dict[str, Shape | None]]:
    """The names in order of appearance and each one's shape (None: never a value)."""
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
    empty = next((n for n, s in shapes.items() if s is not None and 0 in s), None)
    if format == "csv" and empty is not None:
        raise TenFlangError.at(
            f"cannot write {empty!r} as csv: an empty tensor has no cells to spread over "
            "columns (write a brace or .npz file)", file=file)
    return list(shapes), shapes


def _format_csv(records: Sequence[Mapping[str, Value]], names: list[str],
                shapes: Mapping[str, Shape | None]) -> str:
    header: list[str] = []
    empty: dict[str, list[str]] = {}
    for name in names:
        shape = shapes[name] or ()
        cells = [name + "".join(f"[{k}]" for k in ix) for ix in np.ndindex(*shape)]
        header += cells
        empty[name] = [""] * len(cells)
    # a one-column row with an empty cell would be a blank line, which is no record
    null_row = "null" if len(header) == 1 else ",".join([""] * len(header))
    out = [",".join(header)]
    for record in records:
        cells = []
        for name in names:
            value = record.get(name)
            if value is None:
                cells += empty[name]
            elif shapes[name]:
                cells += map(repr, np.asarray(value, dtype=np.float64).ravel().tolist())
            else:
                cells.append(repr(float(value)))  # type: ignore[arg-type]
        row = ",".join(cells)
        out.append(row if any(cells) else null_row)
    return "\n".join(out) + "\n"


def _format_npz(records: Sequence[Mapping[str, Value]], names: list[str],
                shapes: Mapping[str, Shape | None], file: str) -> bytes:
    n = len(records)
    arrays: dict[str, np.ndarray] = {}
    for name in names:
        arr = np.full((n, *(shapes[name] or ())), np.nan)
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
