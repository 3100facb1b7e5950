"""Data files: named numeric values (inputs, expected outputs, weights) for TenFlang tools.

A data file holds N >= 1 *records*; each record binds names to values (a scalar, a tensor or
NULL): the seed's "input vector" or "weight vector". Four formats are read into one
:class:`DataTable`:

* brace notation, one record per line: ``{x: 3, W: [[1, 2], [3, 4]], y: null}``;
* CSV with a header of names; tensors are spread over ``x[0],x[1]`` or ``W[0][1]`` columns;
* the original 2016 format: ``name<TAB>value`` lines that together form ONE record;
* ``.npz`` archives whose arrays have the example on their first axis.

In all text formats, blank lines and lines whose first non-space character is ``#`` are
ignored. Numbers are plain decimal literals (no ``inf``, ``nan``, hex or ``_``). File contents
are only ever tokenised by the small parsers below, never evaluated.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np

from .errors import TenFlangError
from .lexical import (
    NAME_PATTERN,
    NULL,
    fmt_shape,
    is_nonfinite_word,
    is_null,
    is_number,
    matches_name,
    split_lines,
)
from .ops import Shape
from .textio import read_bytes, read_text

Value = float | np.ndarray | None  # None is NULL

FORMATS = ("brace", "csv", "original", "npz")

# Python's and numpy's float() grammar, limited to these characters, is exactly
# lexical.NUMBER_PATTERN with spaces around; one scan of a whole CSV column for anything else
# is far cheaper than a regex match per cell.
_NOT_NUMBER_CHAR_RE = re.compile(r"[^0-9eE.+\- \t\n]")
# A ':<digits>' suffix belongs to a generated name only when another ':' follows, so that
# '{d/L/d/x:1: 2}' is the name 'd/L/d/x:1' while '{d/L/d/x:1}' is 'd/L/d/x' bound to 1.
_BRACE_TOKEN_RE = re.compile(
    r"\s*([{}\[\],:]|d/[^\s{}\[\],:]*(?::[0-9]+(?=\s*:))?|[^\s{}\[\],:]+)"
)
_PUNCT = frozenset("{}[],:")
_HEADER_RE = re.compile(rf"({NAME_PATTERN})((?:\[[0-9]+\])*)")
_INDEX_RE = re.compile(r"[0-9]+")
_MAX_DEPTH = 32  # deeper lists are surely a mistake, and would exhaust Python's stack


@dataclass
class DataTable:
    """N records over the same names (N >= 1).

    ``columns[name]`` is a float64 array of shape ``(N,) + shape(name)`` with NaN where the
    record lacks the name or gives null; ``present[name]`` is False there. ``nulls[name]``
    (an addition to the plain table) is True where the record gives the name explicitly as
    null, so that :meth:`record` can tell "null" from "absent"; a table built without it
    treats every missing value as absent.

    >>> t = parse_data("{x: 1, W: [2, 3]}\\n{x: null}\\n")
    >>> len(t), t.names, t.shape("W"), t.lines
    (2, ['x', 'W'], (2,), [1, 2])
    >>> t.record(1)
    {'x': None}
    """

    file: str
    names: list[str]
    columns: dict[str, np.ndarray]
    present: dict[str, np.ndarray]
    lines: list[int]
    nulls: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.lines)

    def record(self, i: int) -> dict[str, Value]:
        """The i-th record in name order: floats, arrays, None for null; absent names omitted.

        >>> parse_data("{x: 1.5, W: [[1, 2]]}").record(0)
        {'x': 1.5, 'W': array([[1., 2.]])}
        """
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"record {i} out of range (the table has {n})")
        out: dict[str, Value] = {}
        for name in self.names:
            if self.present[name][i]:
                col = self.columns[name]
                # a copy, so that a caller changing the value cannot change the table
                out[name] = float(col[i]) if col.ndim == 1 else col[i].copy()
            elif name in self.nulls and self.nulls[name][i]:
                out[name] = None
        return out

    def shape(self, name: str) -> Shape:
        """The per-example shape of ``name`` (``()`` for a scalar).

        >>> parse_data("{W: [[1, 2, 3], [4, 5, 6]], b: 1}").shape("W")
        (2, 3)
        """
        return tuple(self.columns[name].shape[1:])


# ----------------------------------------------------------------------------------------
# public entry points


def parse_data(text: str, file: str = "<data>", format: str | None = None) -> DataTable:
    """Parse the text of a data file; ``format`` is brace, csv, original or None (detect).

    >>> parse_data("{x: 3, w: -2}\\n{x: 1.5e-3, y: null}").record(1)
    {'x': 0.0015, 'y': None}
    >>> parse_data("x,y\\n1,2\\n3,\\n").columns["y"]
    array([ 2., nan])
    >>> parse_data("a\\t1\\nb\\t2\\n").record(0)
    {'a': 1.0, 'b': 2.0}
    """
    fmt = _check_format(format, file)
    if fmt == "npz":
        raise TenFlangError.at("npz is a binary format: read it with read_data", file=file)
    significant = [
        (number, line)
        for number, line in enumerate(split_lines(text), 1)
        if (start := line.lstrip()) and start[0] != "#"
    ]
    if not significant:
        raise TenFlangError.at("no records in this file", file=file)
    if fmt is None:
        fmt = _detect(significant[0][1])
    if fmt == "brace":
        return _parse_brace(significant, file)
    if fmt == "csv":
        return _parse_csv(significant, file)
    return _parse_original(significant, file)


def read_data(path: str | os.PathLike[str], format: str | None = None) -> DataTable:
    """Read a data file: ``.npz`` by extension, ``.csv`` as CSV, anything else detected.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "in.csv"
    >>> _ = p.write_text("x,y\\n1,2\\n")
    >>> read_data(p).record(0)
    {'x': 1.0, 'y': 2.0}
    """
    name = os.fspath(path)
    fmt = _check_format(format, name)
    lowered = name.lower()
    if fmt == "npz" or (fmt is None and lowered.endswith(".npz")):
        return _read_npz(name)
    text = read_text(name)
    if fmt is None and lowered.endswith(".csv"):
        fmt = "csv"
    return parse_data(text, name, fmt)


def from_records(
    records: Sequence[Mapping[str, Value | list]], file: str = "<data>"
) -> DataTable:
    """Build a table from a list of dicts (numbers, None, nested lists, arrays).

    A NaN value (as pandas writes for missing) counts as null; a name a record lacks is absent.

    >>> t = from_records([{"x": 1, "W": [[1, 2]]}, {"x": None}])
    >>> t.record(0)["W"].shape, t.record(1)
    ((1, 2), {'x': None})
    """
    if isinstance(records, Mapping) or isinstance(records, str | bytes):
        raise TenFlangError.at(
            "from_records needs a list of dicts (for a dict of columns use from_columns)",
            file=file,
        )
    rows: list[dict[str, Value]] = []
    shapes = _ShapeLedger()
    for i, item in enumerate(records):
        if not isinstance(item, Mapping):
            raise TenFlangError.at(
                f"records[{i}] is not a dict of names to values", file=file
            )
        row: dict[str, Value] = {}
        for key, raw in item.items():
            name = _python_name(key, "name", f" in records[{i}]", file)
            row[name] = value = _coerce(raw, name, f" in records[{i}]", file)
            problem = shapes.mismatch(name, value, f"in records[{i}]", f"in records[{i}]")
            if problem:
                raise TenFlangError.at(problem, file=file)
        rows.append(row)
    if not rows:
        raise TenFlangError.at("no records in this data", file=file)
    return _table_from_records(file, rows, [0] * len(rows), shapes.shapes())


def from_columns(columns: Mapping[str, Any], file: str = "<data>") -> DataTable:
    """Build a table from array-likes whose first axis is the example (all of equal length).

    Works with a pandas DataFrame or the arrays of an npz file. None or NaN (a whole value)
    is null.

    >>> t = from_columns({"x": [1.0, None], "W": np.zeros((2, 2, 3))})
    >>> t.record(1)["x"], t.shape("W")
    (None, (2, 3))
    """
    return _table_from_arrays(columns, file, "column")


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
        return _format_nested(arr.tolist())
    # float() first: numpy 2 scalars have a repr like 'np.float64(0.1)'
    return repr(float(value))


def format_record(values: Mapping[str, Value]) -> str:
    """Write one record in brace notation, in the mapping's order.

    >>> format_record({"x": 3.0, "w": -2, "y": None})
    '{x: 3.0, w: -2.0, y: null}'
    """
    return "{" + ", ".join(f"{name}: {format_value(v)}" for name, v in values.items()) + "}"


# ----------------------------------------------------------------------------------------
# shared helpers


def _check_format(format: str | None, file: str) -> str | None:
    if format is None or format in FORMATS:
        return format
    raise TenFlangError.at(
        f"unknown data file format {format!r} (expected one of {', '.join(FORMATS)})",
        file=file,
    )


def _detect(first: str) -> str:
    # Deciding on the first significant line alone gives the same answer as looking at every
    # line for any valid file (a CSV header never reads "name number"), and a broken
    # original-format file then gets an error about its broken line, not about a CSV header.
    stripped = first.strip()
    if stripped.startswith("{"):
        return "brace"
    tokens = stripped.split()
    if len(tokens) == 2 and "," not in stripped and _looks_numeric(tokens[1]):
        return "original"
    return "csv"


def _looks_numeric(token: str) -> bool:
    return token[0] in "0123456789+-." or is_nonfinite_word(token)


def _bad_name(text: str, what: str = "name", where: str = "") -> str:
    return (
        f"bad {what} {text!r}{where} (a name is letters, digits, '_' and '.', not starting "
        "with a digit, or a generated d/<name>/d/<name>[:<n>])"
    )


@dataclass
class _ShapeLedger:
    """The first shape each name had (and where): every later value of it must match."""

    first: dict[str, tuple[Shape, str]] = field(default_factory=dict)

    def mismatch(self, name: str, value: Value, here: str, there: str,
                 label: str | None = None) -> str | None:
        """None when ``value`` (found ``here``) has ``name``'s shape; else why not.
        ``there`` describes this place when it is the first, for later messages."""
        if value is None:
            return None
        shape = () if isinstance(value, float) else value.shape
        seen, where = self.first.setdefault(name, (shape, there))
        if seen == shape:
            return None
        return (f"{label or repr(name)} has shape {fmt_shape(shape)} {here} "
                f"but {fmt_shape(seen)} {where}")

    def shapes(self) -> dict[str, Shape]:
        return {name: shape for name, (shape, _) in self.first.items()}


def _number_problem(name: str, text: str) -> str | None:
    """Why ``text`` is not an acceptable value of ``name`` (None when it is)."""
    if is_number(text):
        # 1e999 is a valid literal that overflows to inf
        return None if math.isfinite(float(text)) else f"value of {name!r} is not finite: {text!r}"
    if is_nonfinite_word(text):
        return f"value of {name!r} is not finite: {text!r}"
    return f"value of {name!r} is not a number: {text!r}"


def _format_nested(x: Any) -> str:
    if isinstance(x, list):
        return "[" + ", ".join(_format_nested(e) for e in x) + "]"
    return repr(float(x))


def _table_from_records(
    file: str, records: list[dict[str, Value]], lines: list[int], shapes: dict[str, Shape]
) -> DataTable:
    """Assemble columns from per-record dicts whose shapes were already checked."""
    n = len(records)
    names = list(dict.fromkeys(chain.from_iterable(records)))
    scalars: dict[str, list[float]] = {}
    tensors: dict[str, np.ndarray] = {}
    for name in names:
        shape = shapes.get(name, ())  # a name that is only ever null counts as a scalar
        if shape:
            tensors[name] = np.full((n, *shape), np.nan)
        else:
            scalars[name] = [math.nan] * n
    given: dict[str, list[int]] = {name: [] for name in names}
    nulled: dict[str, list[int]] = {name: [] for name in names}
    for i, record in enumerate(records):
        for name, value in record.items():
            if value is None:
                nulled[name].append(i)
                continue
            given[name].append(i)
            if name in scalars:
                scalars[name][i] = value  # type: ignore[assignment]
            else:
                tensors[name][i] = value
    columns: dict[str, np.ndarray] = {}
    present: dict[str, np.ndarray] = {}
    nulls: dict[str, np.ndarray] = {}
    for name in names:
        columns[name] = (
            np.array(scalars[name], dtype=np.float64) if name in scalars else tensors[name]
        )
        present[name] = np.zeros(n, dtype=bool)
        present[name][given[name]] = True
        nulls[name] = np.zeros(n, dtype=bool)
        nulls[name][nulled[name]] = True
    return DataTable(file, names, columns, present, lines, nulls)


# ----------------------------------------------------------------------------------------
# brace notation


class _BraceLine:
    """Recursive-descent parser for one ``{name: value, ...}`` line.

    Tokens are plain strings ("" marks the end of the line); their columns are only worked
    out when there is an error to report, which keeps the common path fast.
    """

    def __init__(self, line: str, lineno: int, file: str) -> None:
        self.line = line
        self.lineno = lineno
        self.file = file
        self.tokens: list[str] = _BRACE_TOKEN_RE.findall(line)
        self.tokens.append("")
        self.pos = 0
        self.keys: dict[str, int] = {}  # name -> index of its token, for later errors

    def col(self, k: int) -> int:
        if k >= len(self.tokens) - 1:
            return len(self.line.rstrip())
        return next(m.start(1) for i, m in enumerate(_BRACE_TOKEN_RE.finditer(self.line))
                    if i == k)

    def error(self, message: str, k: int) -> TenFlangError:
        return TenFlangError.at(
            message, file=self.file, line=self.lineno, column=self.col(k),
            length=max(1, len(self.tokens[k])), source=self.line,
        )

    def unexpected(self, expected: str, k: int, where: str) -> TenFlangError:
        token = self.tokens[k]
        if not token:
            what = "list" if "]" in expected else "record"
            return self.error(f"unterminated {what}: expected {expected}{where}", k)
        return self.error(f"expected {expected}{where}, found {token!r}", k)

    def separator(self, close: str, where: str) -> int | None:
        """After an item: a ',' (its index: another item follows) or ``close`` (None)."""
        k = self.pos
        if self.tokens[k] == ",":
            self.pos = k + 1
            return k
        if self.tokens[k] == close:
            self.pos = k + 1
            return None
        raise self.unexpected(f"',' or '{close}'", k, where)

    def number(self, name: str, k: int) -> float:
        text = self.tokens[k]
        if is_number(text):
            value = float(text)
            if math.isfinite(value):
                return value
        if is_null(text):
            raise self.error(
                "null is not allowed inside a list (a tensor is all numbers or null)", k
            )
        raise self.error(_number_problem(name, text) or "not a number", k)

    def parse(self) -> dict[str, Value]:
        tokens = self.tokens
        if tokens[0] != "{":
            raise self.error(f"expected '{{' at the start of a record, found {tokens[0]!r}", 0)
        entries: dict[str, Value] = {}
        self.pos = 1
        if tokens[1] == "}":
            self.pos = 2
        else:
            comma: int | None = None
            while True:
                k = self.pos
                name = tokens[k]
                if not name or name in _PUNCT:
                    if comma is not None and name == "}":
                        raise self.error("trailing comma before '}'", comma)
                    raise self.unexpected("a name", k, " after ','" if comma is not None else "")
                if not matches_name(name):
                    raise self.error(_bad_name(name), k)
                if name in entries:
                    raise self.error(f"duplicate name {name!r} in this record", k)
                self.keys[name] = k
                if tokens[k + 1] != ":":
                    raise self.unexpected("':'", k + 1, f" after name {name!r}")
                self.pos = k + 2
                entries[name] = self.value(name)
                comma = self.separator("}", f" after the value of {name!r}")
                if comma is None:
                    break
        if tokens[self.pos]:
            raise self.error(
                f"unexpected {tokens[self.pos]!r} after the end of the record "
                "(one record per line)",
                self.pos,
            )
        return entries

    def value(self, name: str) -> Value:
        k = self.pos
        text = self.tokens[k]
        if text == "[":
            self.pos = k + 1
            flat: list[float] = []
            shape = self.list(name, 1, flat)
            return np.array(flat, dtype=np.float64).reshape(shape)
        if not text or text in _PUNCT:
            raise self.unexpected("a value", k, f" for {name!r}")
        self.pos = k + 1
        if is_null(text):
            return None
        return self.number(name, k)

    def list(self, name: str, depth: int, flat: list[float]) -> Shape:
        """Parse the rest of a list (its '[' is read), appending numbers to ``flat``."""
        tokens = self.tokens
        if depth > _MAX_DEPTH:
            raise self.error(
                f"list nested too deeply (at most {_MAX_DEPTH} levels)", self.pos - 1
            )
        if tokens[self.pos] == "]":
            self.pos += 1
            return (0,)
        first: Shape | None = None
        count = 0
        comma: int | None = None
        while True:
            k = self.pos
            text = tokens[k]
            if text == "[":
                self.pos = k + 1
                shape = self.list(name, depth + 1, flat)
            elif text and text not in _PUNCT:
                self.pos = k + 1
                flat.append(self.number(name, k))
                shape = ()
            elif comma is not None and text == "]":
                raise self.error("trailing comma before ']'", comma)
            else:
                raise self.unexpected("a number or '['", k, f" in the list of {name!r}")
            if first is None:
                first = shape
            elif shape != first:
                raise self.error(_ragged(first, shape), k)
            count += 1
            comma = self.separator("]", f" in the list of {name!r}")
            if comma is None:
                return (count, *first)


def _ragged(first: Shape, other: Shape) -> str:
    if len(first) != len(other):
        if not first or not other:
            return "ragged list: mixes numbers and lists"
        return f"ragged list: mixes elements of shapes {fmt_shape(first)} and {fmt_shape(other)}"
    a, b = next((a, b) for a, b in zip(first, other, strict=True) if a != b)
    return f"ragged list: rows of lengths {a} and {b}"


def _parse_brace(significant: list[tuple[int, str]], file: str) -> DataTable:
    rows: list[dict[str, Value]] = []
    lines: list[int] = []
    shapes = _ShapeLedger()
    for lineno, line in significant:
        parser = _BraceLine(line, lineno, file)
        row = parser.parse()
        for name, value in row.items():
            problem = shapes.mismatch(name, value, "here", f"on line {lineno}")
            if problem:
                raise parser.error(problem, parser.keys[name])
        rows.append(row)
        lines.append(lineno)
    return _table_from_records(file, rows, lines, shapes.shapes())


# ----------------------------------------------------------------------------------------
# CSV


def _cell_span(line: str, index: int) -> tuple[int, int]:
    """Column and length of cell ``index`` of a CSV line (past the end: the line's end)."""
    starts = [0]
    quoted = False
    for k, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            starts.append(k + 1)
    if index >= len(starts):
        return len(line), 1
    end = starts[index + 1] - 1 if index + 1 < len(starts) else len(line)
    raw = line[starts[index]:end]
    lead = len(raw) - len(raw.lstrip())
    return starts[index] + lead, max(1, len(raw.strip()))


def _split_csv(significant: list[tuple[int, str]], file: str) -> list[list[str]]:
    raw = [line for _, line in significant]
    if not any('"' in line for line in raw):
        # without quotes the csv module's default dialect is exactly a split on ','
        return [line.split(",") for line in raw]
    for lineno, line in significant:
        if line.count('"') % 2:
            raise TenFlangError.at(
                "unbalanced '\"' in this line", file=file, line=lineno,
                column=line.index('"'), source=line,
            )
    reader = csv.reader(raw)
    rows: list[list[str]] = []
    try:
        for row in reader:
            rows.append(row)
    except csv.Error as exc:
        lineno, line = significant[min(len(rows), len(significant) - 1)]
        raise TenFlangError.at(
            f"bad CSV: {exc}", file=file, line=lineno, source=line
        ) from None
    return rows


def _parse_csv(significant: list[tuple[int, str]], file: str) -> DataTable:
    rows = _split_csv(significant, file)
    head_no, head_line = significant[0]

    def header_error(message: str, index: int) -> TenFlangError:
        col, length = _cell_span(head_line, index)
        return TenFlangError.at(
            message, file=file, line=head_no, column=col, length=length, source=head_line
        )

    header = [cell.strip() for cell in rows[0]]
    groups: dict[str, dict[tuple[int, ...], int]] = {}  # name -> index tuple -> cell number
    for j, cell in enumerate(header):
        m = _HEADER_RE.fullmatch(cell)
        if m is None:
            what = "empty column name" if not cell else f"bad column name {cell!r}"
            raise header_error(
                f"{what} (expected a name like x, or x[0] / W[0][1] for a tensor's cells)", j
            )
        name, index = m.group(1), tuple(int(k) for k in _INDEX_RE.findall(m.group(2)))
        cells = groups.setdefault(name, {})
        if index in cells:
            raise header_error(f"duplicate column name {cell!r}", j)
        if cells:
            other = next(iter(cells))
            if len(other) != len(index):
                if not other or not index:
                    raise header_error(
                        f"{name!r} is given both as one column and as tensor cells", j
                    )
                raise header_error(
                    f"column {cell!r} has {len(index)} indices but "
                    f"{header[cells[other]]!r} has {len(other)}", j,
                )
        cells[index] = j
    shapes: dict[str, Shape] = {}
    for name, cells in groups.items():
        indexes = list(cells)
        shape = tuple(max(ix[d] for ix in indexes) + 1 for d in range(len(indexes[0])))
        if len(cells) != math.prod(shape):
            missing = next(ix for ix in np.ndindex(*shape) if ix not in cells)
            cell = name + "".join(f"[{k}]" for k in missing)
            raise header_error(
                f"column {cell!r} is missing (tensor {name!r} has shape {fmt_shape(shape)}, "
                "every index must have a column)",
                min(cells.values()),
            )
        shapes[name] = shape

    data = rows[1:]
    data_lines = significant[1:]
    if not data:
        raise TenFlangError.at(
            "no records in this file (only a header line)", file=file, line=head_no,
            source=head_line, length=len(head_line),
        )
    width = len(header)
    for (lineno, line), row in zip(data_lines, data, strict=True):
        if len(row) != width:
            col, _ = _cell_span(line, width)
            raise TenFlangError.at(
                f"row has {len(row)} cell{'' if len(row) == 1 else 's'}, the header has {width}",
                file=file, line=lineno, column=col, length=max(1, len(line) - col),
                source=line,
            )
    matrix = np.empty((len(data), width), dtype=np.float64)
    for j in range(width):
        matrix[:, j] = _csv_column([row[j] for row in data], j, header[j], data_lines, file)

    columns: dict[str, np.ndarray] = {}
    present: dict[str, np.ndarray] = {}
    for name, cells in groups.items():
        shape = shapes[name]
        if not shape:
            values = matrix[:, cells[()]].copy()
            present[name] = ~np.isnan(values)
        else:
            where = [cells[ix] for ix in np.ndindex(*shape)]  # row-major order
            block = matrix[:, where]
            empty = np.isnan(block)
            any_empty = empty.any(axis=1)
            partly = np.flatnonzero(any_empty & ~empty.all(axis=1))
            if partly.size:
                k = int(partly[0])
                j = where[int(np.flatnonzero(empty[k])[0])]
                lineno, line = data_lines[k]
                col, length = _cell_span(line, j)
                raise TenFlangError.at(
                    f"tensor {name!r} is partly null in this row ({header[j]!r} is empty or "
                    "null): give all its cells or none",
                    file=file, line=lineno, column=col, length=length, source=line,
                )
            values = block.reshape((len(data), *shape))
            present[name] = ~any_empty
        columns[name] = values
    nulls = {name: ~p for name, p in present.items()}
    return DataTable(
        file, list(groups), columns, present, [n for n, _ in data_lines], nulls
    )


def _csv_column(
    cells: list[str], j: int, label: str, data_lines: list[tuple[int, str]], file: str
) -> np.ndarray:
    """One CSV column as floats (NaN for null), checking every cell against the grammar."""
    if _NOT_NUMBER_CHAR_RE.search("\n".join(cells)) is None:
        try:
            values = np.array(cells, dtype=np.float64)
        except ValueError:  # an empty cell, or a malformed number such as '1e'
            pass
        else:
            if np.isfinite(values).all():  # 1e999 overflows to inf
                return values
    # slow path: nulls in the column, or a bad cell to report
    out = np.empty(len(cells), dtype=np.float64)
    for k, cell in enumerate(cells):
        text = cell.strip()
        if not text or is_null(text):
            out[k] = math.nan
            continue
        problem = _number_problem(label, text)
        if problem:
            lineno, line = data_lines[k]
            col, length = _cell_span(line, j)
            raise TenFlangError.at(
                problem, file=file, line=lineno, column=col, length=length, source=line
            )
        out[k] = float(text)
    return out


# ----------------------------------------------------------------------------------------
# original 2016 format


def _parse_original(significant: list[tuple[int, str]], file: str) -> DataTable:
    first_line: dict[str, int] = {}
    values: dict[str, float] = {}
    for lineno, line in significant:
        tokens = [(m.group(), m.start()) for m in re.finditer(r"\S+", line)]
        if len(tokens) != 2:
            col = tokens[2][1] if len(tokens) > 2 else len(line.rstrip())
            raise TenFlangError.at(
                "expected a name and a number separated by a tab or spaces "
                f"(found {len(tokens)} item{'s' if len(tokens) != 1 else ''})",
                file=file, line=lineno, column=col, source=line,
            )
        (name, ncol), (text, vcol) = tokens
        if not matches_name(name):
            raise TenFlangError.at(
                _bad_name(name), file=file, line=lineno, column=ncol, length=len(name),
                source=line,
            )
        if name in first_line:
            raise TenFlangError.at(
                f"{name!r} given twice (first on line {first_line[name]})",
                file=file, line=lineno, column=ncol, length=len(name), source=line,
            )
        problem = _number_problem(name, text)
        if problem:
            raise TenFlangError.at(
                problem, file=file, line=lineno, column=vcol, length=len(text), source=line
            )
        first_line[name] = lineno
        values[name] = float(text)
    names = list(values)
    return DataTable(
        file,
        names,
        {n: np.array([values[n]]) for n in names},
        {n: np.ones(1, dtype=bool) for n in names},
        [significant[0][0]],
        {n: np.zeros(1, dtype=bool) for n in names},
    )


# ----------------------------------------------------------------------------------------
# Python data and npz


def _python_name(key: Any, what: str, where: str, file: str) -> str:
    if not isinstance(key, str) or not matches_name(key):
        raise TenFlangError.at(_bad_name(str(key), what, where), file=file)
    return key


def _coerce(raw: Any, name: str, where: str, file: str) -> Value:
    """One Python value as a float, a float64 array or None (null); errors name ``where``."""
    if raw is None:
        return None
    if isinstance(raw, str | bytes):
        raise TenFlangError.at(f"value of {name!r}{where} is not a number: {raw!r}", file=file)
    if isinstance(raw, list | tuple | np.ndarray):
        arr = _nested_array(raw, name, where, file)
        if arr.ndim == 0:
            raw = float(arr)
        else:
            finite = np.isfinite(arr)
            if finite.all():
                return arr
            nan = np.isnan(arr)
            if nan.all() and arr.size:
                return None  # NaN is how arrays (and pandas) spell "missing"
            what = "partly NaN" if nan.any() and not np.isinf(arr).any() else "not finite"
            raise TenFlangError.at(f"value of {name!r}{where} is {what}", file=file)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise TenFlangError.at(
            f"value of {name!r}{where} is not a number: {raw!r}", file=file
        ) from None
    if math.isnan(value):
        return None
    if math.isinf(value):
        raise TenFlangError.at(f"value of {name!r}{where} is not finite: {value!r}", file=file)
    return value


def _nested_array(raw: Any, name: str, where: str, file: str) -> np.ndarray:
    try:
        arr = np.asarray(raw)
    except ValueError:
        arr = np.asarray(raw, dtype=object) if not isinstance(raw, np.ndarray) else raw
    if arr.dtype.kind in "biuf":
        return arr.astype(np.float64)
    # explain what is wrong by walking the nested lists ourselves
    _nested_shape(raw, name, where, file)
    raise TenFlangError.at(f"value of {name!r}{where} is not a number: {raw!r}", file=file)


def _nested_shape(raw: Any, name: str, where: str, file: str) -> Shape:
    if isinstance(raw, list | tuple) or (isinstance(raw, np.ndarray) and raw.ndim):
        shapes = [_nested_shape(e, name, where, file) for e in raw]
        for shape in shapes[1:]:
            if shape != shapes[0]:
                raise TenFlangError.at(
                    f"value of {name!r}{where}: {_ragged(shapes[0], shape)}", file=file
                )
        return (len(shapes), *(shapes[0] if shapes else ()))
    if raw is None:
        raise TenFlangError.at(
            f"value of {name!r}{where}: null is not allowed inside a list", file=file
        )
    if isinstance(raw, str | bytes) or not isinstance(raw, int | float | np.number):
        raise TenFlangError.at(f"value of {name!r}{where} is not a number: {raw!r}", file=file)
    return ()


def _table_from_arrays(columns: Any, file: str, what: str) -> DataTable:
    if not hasattr(columns, "items"):
        raise TenFlangError.at(
            "from_columns needs a dict of columns (for a list of dicts use from_records)",
            file=file,
        )
    arrays: dict[str, np.ndarray] = {}
    first: str | None = None
    for key, raw in columns.items():
        name = _python_name(key, f"{what} name", "", file)
        arr = _column_array(raw, name, what, file)
        if arr.ndim == 0:
            raise TenFlangError.at(
                f"{what} {name!r} is 0-d: its first axis must be the example", file=file
            )
        if first is not None and len(arr) != len(arrays[first]):
            raise TenFlangError.at(
                f"{what} {name!r} has {len(arr)} examples but {first!r} has "
                f"{len(arrays[first])}",
                file=file,
            )
        first = first or name
        arrays[name] = arr
    if first is None or len(arrays[first]) == 0:
        raise TenFlangError.at("no records in this data", file=file)
    n = len(arrays[first])
    present: dict[str, np.ndarray] = {}
    for name, arr in arrays.items():
        flat = arr.reshape(n, -1)
        nan = np.isnan(flat)
        for bad, problem in (
            (np.isinf(flat).any(axis=1), "is not finite"),
            (nan.any(axis=1) & ~nan.all(axis=1), "is partly NaN (a value is all numbers or null)"),
        ):
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise TenFlangError.at(
                    f"value of {name!r} at position {k} of the {what} {problem}", file=file
                )
        present[name] = ~nan.any(axis=1) if flat.shape[1] else np.ones(n, dtype=bool)
    nulls = {name: ~p for name, p in present.items()}
    return DataTable(file, list(arrays), arrays, present, [0] * n, nulls)


def _column_array(raw: Any, name: str, what: str, file: str) -> np.ndarray:
    """A column as float64 (a copy, never the caller's array) with NaN for null."""
    try:
        arr = np.asarray(raw)
    except ValueError:  # ragged nested lists
        arr = np.asarray(list(raw), dtype=object)
    if arr.dtype.kind in "biuf":
        return arr.astype(np.float64)  # astype copies
    if arr.dtype.kind not in "OUS" or arr.ndim == 0:
        raise TenFlangError.at(f"{what} {name!r} is not numeric (dtype {arr.dtype})", file=file)
    # None next to numbers, lists of unequal shapes, or text: element by element, which
    # either builds the column or names the first bad element.
    values = [_coerce(v, name, f" at position {k} of the {what}", file) for k, v in enumerate(raw)]
    shapes = _ShapeLedger()
    for k, v in enumerate(values):
        problem = shapes.mismatch(name, v, f"at position {k} of the {what}", f"at position {k}",
                                  label=f"value of {name!r}")
        if problem:
            raise TenFlangError.at(problem, file=file)
    out = np.full((len(values), *shapes.shapes().get(name, ())), np.nan)
    for k, v in enumerate(values):
        if v is not None:
            out[k] = v
    return out


def _read_npz(path: str) -> DataTable:
    raw = read_bytes(path)
    try:
        data = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise TenFlangError.at(f"not a valid .npz file ({exc})", file=path) from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise TenFlangError.at("not an .npz archive (a single .npy array?)", file=path)
    try:
        with data:
            arrays = {key: data[key] for key in data.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        # e.g. an array of Python objects, which would need pickle
        raise TenFlangError.at(f"not a valid .npz file ({exc})", file=path) from None
    return _table_from_arrays(arrays, path, "array")
