"""Matching vector files to a program's variables, with errors that name the data file's line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .errors import Diagnostic, TenFlangError
from .ops import fmt_shape
from .program import Program
from .syntax import GIVEN_KINDS
from .vectors import VectorTable, from_columns, from_records


def as_table(data: Any, file: str = "<data>") -> VectorTable:
    """A :class:`VectorTable` from a table, a dict of arrays / DataFrame, or a list of dicts."""
    if isinstance(data, VectorTable):
        return data
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # a pandas DataFrame
        return from_columns({str(c): np.asarray(data[c]) for c in data.columns}, file)
    if isinstance(data, Mapping):
        return from_columns(data, file)
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        return from_records(list(data), file)
    raise TenFlangError([Diagnostic(
        f"cannot use a {type(data).__name__} as data: give a dict of arrays, a list of "
        "dicts, a DataFrame or a file", file)])


def _line(table: VectorTable, row: int) -> int:
    return table.lines[row] if row < len(table.lines) else 0


def _error(table: VectorTable, row: int | None, message: str, hint: str | None = None
           ) -> Diagnostic:
    line = _line(table, row) if row is not None else 0
    where = f" (vector {row + 1})" if row is not None and not line else ""
    return Diagnostic(message + where, table.file, line, hint=hint)


def check_names(program: Program, table: VectorTable, role: str, allowed: set[str]) -> None:
    """Every name in the data is a variable the program takes from data, with its shape."""
    errors = []
    for name in table.names:
        present = np.flatnonzero(table.present[name])
        row = int(present[0]) if len(present) else 0
        if name not in program.decls:
            errors.append(_error(table, row, f"'{name}' is not declared in {program.file}"))
        elif name not in allowed:
            kind = program.kind(name)
            errors.append(_error(table, row, f"'{name}' is declared {kind} in {program.file}: "
                                 f"{role} cannot give it a value"))
        elif table.shape(name) != program.shapes[name]:
            errors.append(_error(
                table, row, f"'{name}' has shape {fmt_shape(table.shape(name))} here, but "
                f"{program.file} declares {fmt_shape(program.shapes[name])}"))
    if errors:
        raise TenFlangError(errors)


def require(program: Program, table: VectorTable, names: list[str], why: str) -> None:
    errors = []
    for name in names:
        if name not in table.present:
            errors.append(_error(table, 0 if len(table) else None,
                                 f"missing required input '{name}' ({why})"))
            continue
        missing = np.flatnonzero(~table.present[name])
        if len(missing):
            errors.append(_error(table, int(missing[0]),
                                 f"missing required input '{name}' ({why})"))
    if errors:
        raise TenFlangError(errors)


def training_columns(gcp: Program, table: VectorTable, weights: list[str]
                     ) -> dict[str, np.ndarray]:
    """The GCP's data inputs as arrays over the examples; every one must be given."""
    needed = [n for n in gcp.names(*GIVEN_KINDS) if n not in weights]
    check_names(gcp, table, "training data", set(needed))
    require(gcp, table, needed, "the gradient program reads it")
    return {n: table.columns[n] for n in needed}


def weight_vector(program: Program, table: VectorTable) -> dict[str, Any]:
    """The single vector of a weights file, checked against the program's weights."""
    if len(table) != 1:
        raise TenFlangError([Diagnostic(
            f"a weights file holds one vector, this one has {len(table)}", table.file)])
    check_names(program, table, "a weights file", set(program.names("weight", "input")))
    return {k: v for k, v in table.vector(0).items() if v is not None}
