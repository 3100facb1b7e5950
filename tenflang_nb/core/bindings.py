"""Data for a program: files and Python values read as a :class:`DataTable` (one example or
many), and matched to the program's variables with errors that name the data file's line."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .datafiles import DataTable, from_columns, from_records, read_data, value_shape
from .errors import Diagnostic, TenFlangError
from .formatting import fmt_shape
from .lexical import GIVEN_KINDS
from .program import Program, ancestors
from .textio import read_text


def as_table(data: Any, file: str = "<data>") -> DataTable:
    """A :class:`DataTable` from a table, a dict of arrays / DataFrame, or a list of dicts."""
    if isinstance(data, DataTable):
        return data
    if hasattr(data, "to_dict") and hasattr(data, "columns"):  # a pandas DataFrame
        return from_columns({str(c): np.asarray(data[c]) for c in data.columns}, file)
    if isinstance(data, Mapping):
        # value_shape, not np.ndim: that raises on a ragged column such as [[0, 0], None]
        if all(value_shape(v) == () for v in data.values()):
            return from_records([data], file)  # one example given as {name: number}
        return from_columns(data, file)
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        return from_records(list(data), file)
    raise TenFlangError([Diagnostic(
        f"cannot use a {type(data).__name__} as data: give a dict of arrays, a list of "
        "dicts, a DataFrame or a file", file)])


def load(data: Any, file: str = "<data>") -> DataTable:
    """Data from a path (str / PathLike) or from Python values (see :func:`as_table`)."""
    if isinstance(data, str | os.PathLike):
        return read_data(data)
    return as_table(data, file)


def as_examples(data: Any, program: Program | None = None) -> DataTable:
    """Examples from a file path, a dict of arrays, a DataFrame, a list of dicts, or ONE
    example written as a dict of values (``{"x": 1.0, "y": 0.5}``).

    A dict is one example when a value is a plain number (columns need an example axis) or,
    given the ``program``, when every value has its variable's shape exactly.

    >>> len(as_examples({"x": 1.0, "y": 0.5})), len(as_examples({"x": [1.0, 2.0]}))
    (1, 2)
    """
    if isinstance(data, Mapping) and data and _one_example(data, program):
        return from_records([dict(data)], "<example>")
    return load(data)


def _one_example(data: Mapping[str, Any], program: Program | None) -> bool:
    # value_shape, not np.ndim / np.shape: those raise on a ragged value ([[0, 0], None])
    values = [v for v in data.values() if v is not None]
    if any(value_shape(v) == () for v in values):
        return True
    if program is None:
        return False
    shapes = program.shapes
    return all(name in shapes and (value is None or value_shape(value) == shapes[name])
               for name, value in data.items())


def _line(table: DataTable, row: int) -> int:
    return int(table.lines[row]) if row < len(table.lines) else 0


Lines = dict[str, "list[str] | None"]


def _source_lines(file: str, cache: Lines) -> list[str] | None:
    """The data file's lines, to show the offending one (None for in-memory data or npz)."""
    if file not in cache:
        try:
            cache[file] = read_text(file).split("\n") if os.path.isfile(file) else None
        except (TenFlangError, OSError):
            cache[file] = None
    return cache[file]


def _error(table: DataTable, row: int | None, message: str, hint: str | None = None,
           name: str | None = None, cache: Lines | None = None) -> Diagnostic:
    line = _line(table, row) if row is not None else 0
    where = f" (record {row + 1})" if row is not None and not line else ""
    lines = _source_lines(table.file, cache if cache is not None else {}) if line else None
    if lines is None or line > len(lines):
        return Diagnostic(message + where, table.file, line, hint=hint)
    # the caret goes under the name: on the record's own line (brace), else on the first line
    # that spells it (a CSV header, the original format's 'name value' line); without one,
    # under the record's whole line (e.g. a name that is missing)
    candidates = [line] + [n for n in range(1, len(lines) + 1) if n != line]
    found = None
    if name is not None:
        pattern = re.compile(rf"(?<![A-Za-z0-9_./]){re.escape(name)}(?![A-Za-z0-9_./])")
        for n in candidates:
            match = pattern.search(lines[n - 1])
            if match:
                found = (n, match.start(), len(name))
                break
    if found is None:
        text = lines[line - 1]
        found = (line, len(text) - len(text.lstrip()), len(text.strip()))
    n, column, length = found
    return Diagnostic(message + where, table.file, n, column, length, lines[n - 1],
                      hint=hint)


def check_names(program: Program, table: DataTable, role: str, allowed: set[str]) -> None:
    """Every name in the data is a variable the program takes from data, with its shape."""
    errors = []
    cache: Lines = {}
    for name in table.names:
        present = np.flatnonzero(table.present[name])
        row = int(present[0]) if len(present) else 0
        if name not in program.decls:
            errors.append(_error(table, row, f"'{name}' is not declared in {program.file}",
                                 name=name, cache=cache))
        elif name not in allowed:
            kind = program.kind(name)
            errors.append(_error(table, row, f"'{name}' is declared {kind} in {program.file}: "
                                 f"{role} cannot give it a value", name=name, cache=cache))
        elif table.fixes_shape(name) and table.shape(name) != program.shapes[name]:
            # (a name that is null everywhere, {y: null}, fits any declared shape)
            errors.append(_error(
                table, row, f"'{name}' has shape {fmt_shape(table.shape(name))} here, but "
                f"{program.file} declares {fmt_shape(program.shapes[name])}", name=name,
                cache=cache))
    if errors:
        raise TenFlangError(errors)


def require(program: Program, table: DataTable, names: list[str], why: str) -> None:
    errors = []
    cache: Lines = {}
    for name in names:
        if name not in table.present:
            errors.append(_error(table, 0 if len(table) else None,
                                 f"missing required input '{name}' ({why})", cache=cache))
            continue
        missing = np.flatnonzero(~table.present[name])
        if len(missing):
            errors.append(_error(table, int(missing[0]),
                                 f"missing required input '{name}' ({why})", cache=cache))
    if errors:
        raise TenFlangError(errors)


def training_columns(program: Program, table: DataTable, weights: list[str],
                     targets: list[str]) -> dict[str, np.ndarray]:
    """The data inputs of ``program`` (a GCP, or a shape program) as arrays over the examples.

    Every input that the ``targets`` (the loss and the gradients) depend on must be given;
    the others (declared, but not needed for training) may be given or left out.
    """
    data_names = [n for n in program.names(*GIVEN_KINDS) if n not in weights]
    check_names(program, table, "training data", set(data_names))
    used: set[str] = set()
    for target in targets:
        used |= ancestors(program, target)
    require(program, table, [n for n in data_names if n in used],
            "the loss or a gradient depends on it")
    return {n: table.columns[n] for n in data_names
            if n in table.present and bool(np.all(table.present[n]))}


def weight_record(program: Program, table: DataTable) -> dict[str, Any]:
    """The single record of a weights file, checked against the program's weights."""
    if len(table) != 1:
        raise TenFlangError([Diagnostic(
            f"a weights file holds one record, this one has {len(table)}", table.file)])
    check_names(program, table, "a weights file", set(program.names("weight", "input")))
    return {k: v for k, v in table.record(0).items() if v is not None}
