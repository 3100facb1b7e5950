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
are only ever tokenised by the small parsers below, never evaluated. A tensor has at most
:data:`~tenflang_nb.core.lexical.MAX_SHAPE_RANK` dimensions, as in a program.

Large files take a fast path: a block of lines at a time (about 256 KB; a file is streamed
block by block) is checked and converted by numpy's ``loadtxt``: for CSV directly, for brace
notation once a regular expression has shown that every line of the block has the layout of
its first line (the same names, punctuation and spaces around its values). Any block the
fast path is not sure of is read again line by line by the careful parsers, which are the
definition of the formats and make every error message (about the first line with a
problem), so errors are the same either way.

:func:`format_table` writes records back in brace, CSV or npz form (:func:`output_format`
picks one by a file's extension); every file it writes reads back to the same records.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import itertools
import math
import os
import re
import reprlib
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import TenFlangError
from .lexical import (
    MAX_SHAPE_RANK,
    NAME_PATTERN,
    NULL,
    fmt_shape,
    is_nonfinite_word,
    is_null,
    is_number,
    matches_name,
    normalize_text,
)
from .ops import Shape
from .textio import decode, read_bytes

Value = float | np.ndarray | None  # None is NULL

FORMATS = ("brace", "csv", "original", "npz")
OUTPUT_FORMATS = ("brace", "csv", "npz")

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

# The fast paths read text in blocks of about this many characters (whole lines), so that
# the Python objects made for one block stay small whatever the size of the file.
_BLOCK_CHARS = 1 << 18
# A value in a brace line: a number or null right after ':', '[' or ',' (or a space). A name
# never follows those with a digit, sign or '.', so replacing these tokens by a marker
# leaves the line's names and punctuation: its layout.
_BRACE_VALUE_RE = re.compile(r"(?<=[\s:\[,])(?:[nN][uU][lL][lL]|[-+.0-9][-+.0-9eE]*)")
_MARKER = "\x00"  # stands for a value in a line's layout (a NUL is never valid data)
_BRACE_TO_FIELDS = str.maketrans("{}[]:", ",,,,,")


@dataclass
class DataTable:
    """N records over the same names (N >= 1).

    ``columns[name]`` is a float64 array of shape ``(N,) + shape(name)`` with NaN where the
    record lacks the name or gives null; ``present[name]`` is False there. ``nulls[name]``
    (an addition to the plain table) is True where the record gives the name explicitly as
    null, so that :meth:`record` can tell "null" from "absent"; a table built without it
    treats every missing value as absent. ``lines[i]`` is the line of record ``i`` in its
    file (0 for data that has no lines: npz, Python values), as a numpy integer array.

    >>> t = parse_data("{x: 1, W: [2, 3]}\\n{x: null}\\n")
    >>> len(t), t.names, t.shape("W"), t.lines.tolist()
    (2, ['x', 'W'], (2,), [1, 2])
    >>> t.record(1)
    {'x': None}
    """

    file: str
    names: list[str]
    columns: dict[str, np.ndarray]
    present: dict[str, np.ndarray]
    lines: np.ndarray
    nulls: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # one compact array whatever the caller gave: a list of a million ints would cost
        # more memory than a column of the data
        self.lines = np.asarray(self.lines, dtype=np.int64).reshape(-1)

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

    def fixes_shape(self, name: str) -> bool:
        """Whether the data says what shape ``name`` has. It does not when ``name`` never
        has a value and nothing spells out a tensor (``{y: null}`` on every line, a CSV
        column ``y`` left empty): then any declared shape fits, and ``shape`` says ``()``.

        >>> t = parse_data("{y: null}")
        >>> t.shape("y"), t.fixes_shape("y")
        ((), False)
        >>> parse_data("y[0],y[1]\\n,\\n").fixes_shape("y")
        True
        """
        return bool(self.present[name].any()) or self.columns[name].ndim > 1


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
    text = normalize_text(text)
    return _parse(_text_blocks(text), _count_lines(text), file, fmt)


def read_data(path: str | os.PathLike[str], format: str | None = None) -> DataTable:
    """Read a data file: ``.npz`` by extension, ``.csv`` as CSV, anything else detected.

    A text file is read as :func:`~tenflang_nb.core.textio.read_text` would (UTF-8, any line
    ends) but a block at a time: never the whole text in memory.

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
    if fmt is None and lowered.endswith(".csv"):
        fmt = "csv"
    return _parse(_file_blocks(name), _file_lines(name), name, fmt)


def from_records(
    records: Sequence[Mapping[str, Any]], file: str = "<data>"
) -> DataTable:
    """Build a table from a list of dicts (numbers, None, nested lists, arrays).

    None or a NaN value (as pandas writes for missing) is null; a name a record lacks is
    absent. True and False count as 1 and 0.

    >>> t = from_records([{"x": 1, "W": [[1, 2]]}, {"x": None}])
    >>> t.record(0)["W"].shape, t.record(1)
    ((1, 2), {'x': None})
    """
    if isinstance(records, Mapping) or isinstance(records, str | bytes):
        raise TenFlangError.at(
            "from_records needs a list of dicts (for a dict of columns use from_columns)",
            file=file,
        )
    items = list(records)
    builder = _Builder(file, len(items))
    shapes = _ShapeLedger()
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TenFlangError.at(
                f"records[{i}] is not a dict of names to values", file=file
            )
        row: dict[str, Value] = {}
        for key, raw in item.items():
            name = _python_name(key, "name", f" in records[{i}]", file)
            row[name] = value = _coerce(raw, name, f" in records[{i}]", file)
            problem = shapes.check(name, _shape_of(value), f"in records[{i}]",
                                   f"in records[{i}]")
            if problem:
                raise TenFlangError.at(problem, file=file)
        builder.record(row, 0)
    if not items:
        raise TenFlangError.at("no records in this data", file=file)
    return builder.table()


def from_columns(columns: Mapping[str, Any], file: str = "<data>") -> DataTable:
    """Build a table from array-likes whose first axis is the example (all of equal length).

    Works with a pandas DataFrame or the arrays of an npz file. None or NaN (a whole value)
    is null; True and False count as 1 and 0.

    >>> t = from_columns({"x": [1.0, None], "W": np.zeros((2, 2, 3))})
    >>> t.record(1)["x"], t.shape("W")
    (None, (2, 3))
    """
    return _table_from_arrays(columns, file, "column")


def value_shape(value: Any) -> Shape | None:
    """The shape of one value given from Python (``()`` for a number, a string or None), or
    None when it is no regular array (ragged, nested too deeply, ...). Never raises: it only
    looks, so that callers can decide what a value means before converting it.

    >>> value_shape(2.5), value_shape([[1, 2], [3, 4]]), value_shape([[0, 0], None])
    ((), (2, 2), None)
    """
    if value is None or isinstance(value, str | bytes):
        return ()
    if isinstance(value, np.ndarray):
        return value.shape
    try:
        shape = np.shape(value)
    except Exception:  # a probe: whatever the object does, it is "no array"
        return None
    return tuple(int(d) for d in shape)


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


def output_format(path: str | os.PathLike[str] | None) -> str:
    """The format the tools write to ``path``: ``csv`` for a ``.csv`` file, ``npz`` for a
    ``.npz`` file, brace notation for anything else and for standard output (None): the
    format :func:`read_data` will read the file back in.

    >>> output_format("w.csv"), output_format("W.NPZ"), output_format("w.txt"), output_format(None)
    ('csv', 'npz', 'brace', 'brace')
    """
    lowered = os.fspath(path).lower() if path is not None else ""
    if lowered.endswith(".csv"):
        return "csv"
    if lowered.endswith(".npz"):
        return "npz"
    return "brace"


def format_table(records: Sequence[Mapping[str, Value]], format: str = "brace",
                 file: str = "<output>") -> str | bytes:
    """Records as the contents of a data file in ``format`` (brace, csv or npz: bytes).

    Every file read back with :func:`read_data` gives the same records: floats exactly, null
    as null. CSV spreads a tensor over ``x[0]``, ``x[1]`` ... columns and writes null as an
    empty cell (in a one-column file as ``null``, since a blank line is no record); npz
    writes one array per name with NaN for null, so it refuses a value that is NaN or
    infinite. A name a record lacks is written as null in CSV and npz.

    >>> print(format_table([{"x": 1.5, "W": np.array([1.0, 2.0])}, {"x": None, "W": None}],
    ...                    "csv"), end="")
    x,W[0],W[1]
    1.5,1.0,2.0
    ,,
    """
    if format == "brace":
        return "".join(format_record(r) + "\n" for r in records)
    if format not in OUTPUT_FORMATS:
        raise TenFlangError.at(
            f"cannot write data as {format!r} (expected one of {', '.join(OUTPUT_FORMATS)})",
            file=file)
    names, shapes = _layout(records, format, file)
    if format == "csv":
        return _format_csv(records, names, shapes)
    return _format_npz(records, names, shapes, file)


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


def _parse(blocks: Iterator[tuple[int, str]], lines: int, file: str, fmt: str | None
           ) -> DataTable:
    """Read a text format from blocks of its ``lines`` lines."""
    source = _Source(blocks)
    head = source.head()
    if head is None:
        raise TenFlangError.at("no records in this file", file=file)
    lineno, line = head
    if line.split(maxsplit=1)[0] in ("declare", "define"):
        # the usual slip: the program given where the data goes (tfweightcalc shape.tf gcp.tf)
        raise TenFlangError.at(
            "this is a TenFlang program, not a data file", file=file, line=lineno,
            source=line, length=len(line.rstrip()),
            hint="the data file holds records such as {x: 3, y: 1} (or CSV rows); "
                 "check the order of the arguments")
    if fmt is None:
        fmt = _detect(line)
    if fmt == "brace":
        return _parse_brace(source.from_head(), lines - lineno + 1, file)
    if fmt == "csv":
        return _parse_csv(source.after_head(), lineno, line, lines - lineno, file)
    return _parse_original(
        [head, *itertools.chain.from_iterable(_significant(block, first)
                                              for first, block in source.after_head())],
        file)


def _looks_numeric(token: str) -> bool:
    return token[0] in "0123456789+-." or is_nonfinite_word(token)


def _bad_name(text: str, what: str = "name", where: str = "") -> str:
    return (
        f"bad {what} {_cut(text)!r}{where} (a name is letters, digits, '_' and '.', not "
        "starting with a digit, or a generated d/<name>/d/<name>[:<n>])"
    )


def _cut(text: str, limit: int = 40) -> str:
    """``text`` shortened for a message (the whole line is shown under it anyway)."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _ShortRepr(reprlib.Repr):
    """repr() for messages about Python values: short, and safe for any int (repr of an int
    of more than 4,300 digits raises)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxlist = self.maxtuple = 6
        self.maxstring = self.maxother = 40

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() <= 128:
            return repr(x)
        digits = int(x.bit_length() * math.log10(2)) + 1
        return f"<an integer of about {digits} digits>"


_SHORT_REPR = _ShortRepr()


def _show(value: Any) -> str:
    if isinstance(value, np.generic):  # np.str_('1') -> '1', as the user wrote it
        value = value.item()
    return _SHORT_REPR.repr(value)


@dataclass
class _ShapeLedger:
    """The first shape each name had (and where): every later value of it must match."""

    first: dict[str, tuple[Shape, str]] = field(default_factory=dict)

    def conflicts(self, name: str, shape: Shape | None) -> bool:
        """Whether a value of this shape would not match (without recording anything)."""
        return shape is not None and name in self.first and self.first[name][0] != shape

    def check(self, name: str, shape: Shape | None, here: str, there: str,
              label: str | None = None) -> str | None:
        """None when a value of ``shape`` (found ``here``; None for null) fits ``name``;
        else why not. ``there`` describes this place when it is the first, for later
        messages."""
        if shape is None:
            return None
        seen, where = self.first.setdefault(name, (shape, there))
        if seen == shape:
            return None
        return (f"{label or repr(name)} has shape {fmt_shape(shape)} {here} "
                f"but {fmt_shape(seen)} {where}")


def _shape_of(value: Value) -> Shape | None:
    if value is None:
        return None
    return () if isinstance(value, float) else value.shape


def _number_problem(name: str, text: str) -> str | None:
    """Why ``text`` is not an acceptable value of ``name`` (None when it is)."""
    if is_number(text):
        # 1e999 is a valid literal that overflows to inf
        if math.isfinite(float(text)):
            return None
        return f"value of {name!r} is not finite: {_cut(text)!r}"
    if is_nonfinite_word(text):
        return f"value of {name!r} is not finite: {text!r}"
    return f"value of {name!r} is not a number: {_cut(text)!r}"


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


class _Builder:
    """The columns of a table, filled record by record (the careful parsers) or a block of
    records at a time (the fast paths), in arrays allocated once for all the records (the
    lines of the file) and cut to the records found at the end: never a second copy."""

    def __init__(self, file: str, capacity: int) -> None:
        self.file = file
        self.capacity = max(capacity, 1)  # the most records expected (may grow)
        self.rows = 0
        self.lines = np.zeros(self.capacity, dtype=np.int64)
        self.values: dict[str, np.ndarray] = {}  # names that have had a value (a shape)
        self.present: dict[str, np.ndarray] = {}  # every name, in order of appearance
        self.nulls: dict[str, np.ndarray] = {}

    def _arrays(self) -> Iterator[tuple[np.ndarray, float]]:
        yield self.lines, 0
        yield from ((a, math.nan) for a in self.values.values())
        yield from ((a, False) for a in self.present.values())
        yield from ((a, False) for a in self.nulls.values())

    def _resize(self, rows: int) -> None:
        # in place: the builder holds the only reference to its arrays (refcheck=False
        # because a debugger or tracer may hold another, harmlessly, while it runs)
        old = self.capacity
        for a, fill in self._arrays():
            a.resize((rows, *a.shape[1:]), refcheck=False)
            if rows > old:
                a[old:] = fill
        self.capacity = rows

    def _reserve(self, n: int) -> None:
        if self.rows + n > self.capacity:  # only if the file grew while it was read
            self._resize(max(2 * self.capacity, self.rows + n))

    def declare(self, name: str, shape: Shape | None) -> None:
        """A name (and its shape, when known) before any record gives it a value."""
        if name not in self.present:
            self.present[name] = np.zeros(self.capacity, dtype=bool)
            self.nulls[name] = np.zeros(self.capacity, dtype=bool)
        if shape is not None and name not in self.values:
            self.values[name] = np.full((self.capacity, *shape), np.nan)

    def record(self, values: Mapping[str, Value], line: int) -> None:
        """One record whose shapes have been checked."""
        self._reserve(1)
        i = self.rows
        for name, value in values.items():
            self.declare(name, _shape_of(value))
            if value is None:
                self.nulls[name][i] = True
            else:
                self.values[name][i] = value
                self.present[name][i] = True
        self.lines[i] = line
        self.rows = i + 1

    def block(self, lines: np.ndarray, columns: Mapping[str, np.ndarray], nulls: bool = True
              ) -> None:
        """Records on ``lines``; ``columns[name]`` has shape ``(len(lines), *shape)`` with NaN
        for null (all of a tensor's cells, never some: the caller has checked); ``nulls``:
        whether there may be any."""
        n = len(lines)
        self._reserve(n)
        r0, r1 = self.rows, self.rows + n
        none = np.zeros(n, dtype=bool)
        for name, block in columns.items():
            flat = block.reshape(n, -1)
            null = np.isnan(flat[:, 0]) if nulls and flat.shape[1] else none
            if null.all():
                # NaN already: nothing to write, and a scalar block of nulls says nothing
                # about the name's shape ({y: null} after {y: [1, 2]} is fine)
                self.declare(name, block.shape[1:] if block.ndim > 1 else None)
            else:
                self.declare(name, block.shape[1:])
                self.values[name][r0:r1] = block
            self.present[name][r0:r1] = ~null
            self.nulls[name][r0:r1] = null
        self.lines[r0:r1] = lines
        self.rows = r1

    def table(self) -> DataTable:
        """The table of the records so far (the builder is spent)."""
        n = self.rows
        if n != self.capacity:  # blank and comment lines are no records
            self._resize(n)
        columns = {name: self.values[name] if name in self.values else np.full(n, np.nan)
                   for name in self.present}
        return DataTable(self.file, list(self.present), columns, self.present, self.lines,
                         self.nulls)


# ----------------------------------------------------------------------------------------
# lines and blocks of lines


def _count_lines(text: str) -> int:
    """The lines of normalized text (a final newline ends the last line, it starts none)."""
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def _text_blocks(text: str) -> Iterator[tuple[int, str]]:
    """Normalized text as (number of the first line, whole lines without the last line's
    newline), about ``_BLOCK_CHARS`` at a time."""
    pos, lineno, n = 0, 1, len(text)
    while pos < n:
        end = text.find("\n", pos + _BLOCK_CHARS) if pos + _BLOCK_CHARS < n else -1
        if end < 0:
            end = n - 1 if text.endswith("\n") else n
        block = text[pos:end]
        yield lineno, block
        lineno += block.count("\n") + 1
        pos = end + 1


def _byte_blocks(path: str) -> Iterator[bytes]:
    """A file's bytes about ``_BLOCK_CHARS`` at a time, each block ending after a b"\\n"
    (but the last), so that each decodes on its own and no CR LF pair is cut in two."""
    try:
        handle = open(path, "rb")  # closed by the with below
    except OSError:
        read_bytes(path)  # raises the same clear error as every other reader
        raise
    with handle:
        pending: list[bytes] = []  # the start of a line longer than a block
        while True:
            try:
                data = handle.read(_BLOCK_CHARS)
            except OSError as exc:
                raise TenFlangError.at(f"cannot read: {exc.strerror}", file=path) from None
            if not data:
                break
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                pending.append(data)
                continue
            yield b"".join([*pending, data[:cut]])
            pending = [data[cut:]] if cut < len(data) else []
        if pending:
            yield b"".join(pending)


def _decode_block(data: bytes, first: bool, lineno: int, path: str) -> str:
    """A block of a file's bytes as read_text decodes the file (its own decode: UTF-8, BOM,
    CR LF); ``lineno`` is the block's first line, for the line of a bad byte."""
    # a later block is decoded after a newline: only the file's first bytes can be a BOM
    shift = lineno - 1 if first else lineno - 2
    try:
        return decode(data, path) if first else decode(b"\n" + data, path)[1:]
    except TenFlangError as err:
        raise TenFlangError([dataclasses.replace(d, line=d.line + shift) if d.line else d
                             for d in err.diagnostics]) from None


def _file_blocks(path: str) -> Iterator[tuple[int, str]]:
    """A file's text as :func:`_text_blocks` gives the text read_text returns, streamed."""
    lineno = 1
    for k, data in enumerate(_byte_blocks(path)):
        text = _decode_block(data, k == 0, lineno, path)
        if text.endswith("\n"):
            text = text[:-1]
        yield lineno, text
        lineno += text.count("\n") + 1


def _file_lines(path: str) -> int:
    """The lines of a file's text (LF, CR LF and a lone CR end a line); like read_text, it
    fails first of all on bytes that are not UTF-8, wherever they are (before any error
    about what the text says)."""
    lines, last = 0, b""
    for k, data in enumerate(_byte_blocks(path)):
        if not data.isascii():
            _decode_block(data, k == 0, lines + 1, path)  # only to find a bad byte
        lines += data.count(b"\n")
        if b"\r" in data:
            lines += data.count(b"\r") - data.count(b"\r\n")
        last = data[-1:]
    return lines + (0 if last in (b"", b"\n", b"\r") else 1)


class _Source:
    """A data file's text as blocks of lines, up to its first significant line (the head:
    a CSV header, a first record) and on from there."""

    def __init__(self, blocks: Iterator[tuple[int, str]]) -> None:
        self._blocks = blocks
        self._rest: tuple[int, str] | None = None  # the head's block from the head on

    def head(self) -> tuple[int, str] | None:
        """(number, text) of the first line that is neither blank nor a comment, or None."""
        for first, block in self._blocks:
            pos, lineno = 0, first
            while True:
                end = block.find("\n", pos)
                line = block[pos:] if end < 0 else block[pos:end]
                if (start := line.lstrip()) and start[0] != "#":
                    self._rest = (lineno, block[pos:])
                    return lineno, line
                if end < 0:
                    break
                pos, lineno = end + 1, lineno + 1
        return None

    def from_head(self) -> Iterator[tuple[int, str]]:
        if self._rest is not None:
            yield self._rest
        yield from self._blocks

    def after_head(self) -> Iterator[tuple[int, str]]:
        if self._rest is not None:
            lineno, block = self._rest
            end = block.find("\n")
            if end >= 0:
                yield lineno + 1, block[end + 1:]
        yield from self._blocks


def _significant(block: str, lineno: int) -> list[tuple[int, str]]:
    """The (number, text) of the lines of ``block`` that are neither blank nor comments."""
    return [(lineno + k, line) for k, line in enumerate(block.split("\n"))
            if (start := line.lstrip()) and start[0] != "#"]


def _plain(block: str) -> bool:
    """A block the fast paths may try: no comment in it. (A blank line, and anything else
    the fast paths do not expect, makes them give up on the block by itself.)"""
    return bool(block) and "#" not in block


def _block_line(block: str, first: int, k: int) -> tuple[int, str]:
    """The number and text of the k-th line of a block without blank or comment lines (only
    wanted for an error message)."""
    return first + k, block.split("\n")[k]


def _line_numbers(first: int, n: int) -> np.ndarray:
    return np.arange(first, first + n, dtype=np.int64)


# ----------------------------------------------------------------------------------------
# brace notation


class _BraceLine:
    """Recursive-descent parser for one ``{name: value, ...}`` line (lists nest at most
    MAX_SHAPE_RANK deep, which bounds the recursion).

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
        return self.error(f"expected {expected}{where}, found {_cut(token)!r}", k)

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
            raise self.error(
                f"expected '{{' at the start of a record, found {_cut(tokens[0])!r}", 0)
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
                f"unexpected {_cut(tokens[self.pos])!r} after the end of the record "
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
        if depth > MAX_SHAPE_RANK:
            raise self.error(
                f"list nested too deeply (a tensor has at most {MAX_SHAPE_RANK} dimensions)",
                self.pos - 1,
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


@dataclass
class _BraceLayout:
    """The layout a block's first line gives every line of the block: the line with each
    value replaced by a marker (names, punctuation and spaces stay), and what each name's
    values are."""

    skeleton: str
    count: int  # values per line
    slots: list[tuple[str, int, Shape | None]]  # name, its first value, its shape
    tensor_values: list[int]  # the values that are tensor cells (never null)
    # with every '{}[]:' made a ',', the fields of a line that hold its values (None: some
    # field holds more than a value)
    fields: list[int] | None

    @staticmethod
    def of(line: str, entries: Mapping[str, Value]) -> _BraceLayout | None:
        """The layout of a parsed line, or None when the values the regular expression finds
        are not exactly the values the careful parser found."""
        tokens = _BRACE_VALUE_RE.findall(line)
        slots: list[tuple[str, int, Shape | None]] = []
        expected: list[float | None] = []
        tensor_values: list[int] = []
        for name, value in entries.items():
            if value is None or isinstance(value, float):
                # a scalar slot: null on another line is fine, a number there too
                slots.append((name, len(expected), None if value is None else ()))
                expected.append(value)
            else:
                slots.append((name, len(expected), value.shape))
                tensor_values.extend(range(len(expected), len(expected) + value.size))
                expected.extend(value.ravel().tolist())
        if len(tokens) != len(expected) or _MARKER in line:
            return None
        for token, value in zip(tokens, expected, strict=True):
            if value is None:
                if not is_null(token):
                    return None
            elif not is_number(token) or float(token) != value:
                return None
        skeleton = _BRACE_VALUE_RE.sub(_MARKER, line)
        cells = skeleton.translate(_BRACE_TO_FIELDS).split(",")
        fields = [k for k, cell in enumerate(cells) if _MARKER in cell]
        if any(cells[k].strip() != _MARKER for k in fields):
            fields = None  # e.g. '[1 2]': two values in one field (the careful parser fails)
        return _BraceLayout(skeleton, len(expected), slots, tensor_values, fields)

    def read(self, block: str, n: int) -> np.ndarray | None:
        """The values of the ``n`` lines of ``block`` as an (n, count) array with NaN for
        null, or None unless every line has exactly this layout and good numbers."""
        # equal skeletons: the same text around the same number of values on every line
        if _MARKER in block or _BRACE_VALUE_RE.sub(_MARKER, block) != "\n".join(
                [self.skeleton] * n):
            return None
        values = self._loadtxt(block, n)
        if values is None:
            tokens = _BRACE_VALUE_RE.findall(block)
            try:  # float() itself, as the careful parser: the same value to the last bit
                values = np.array([math.nan if t[0] in "nN" else float(t) for t in tokens],
                                  dtype=np.float64).reshape(n, self.count)
            except ValueError:  # a malformed number such as '1e'
                return None
        if np.isinf(values).any():  # 1e999
            return None
        if self.tensor_values and np.isnan(values[:, self.tensor_values]).any():
            return None  # null inside a list: the careful parser says so
        return values

    def _loadtxt(self, block: str, n: int) -> np.ndarray | None:
        """The values by numpy's CSV reader (which converts exactly as float() does): with
        its layout known, a block is a CSV file once its punctuation is made commas."""
        if self.fields is None:
            return None
        text = block.translate(_BRACE_TO_FIELDS)
        if "ull" in text or "ULL" in text:
            # in a value's field, null (the skeleton says it is the whole field)
            text = text.replace("null", "nan").replace("NULL", "nan").replace("Null", "nan")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                values = np.loadtxt(text.split("\n"), dtype=np.float64, delimiter=",",
                                    comments=None, usecols=self.fields, ndmin=2)
        except (ValueError, TypeError):  # another spelling of null, '1e', ...
            return None
        return values if values.shape == (n, self.count) else None


def _parse_brace(blocks: Iterator[tuple[int, str]], capacity: int, file: str) -> DataTable:
    builder = _Builder(file, capacity)
    shapes = _ShapeLedger()

    def careful(block: str, first: int) -> None:
        for number, line in _significant(block, first):
            parser = _BraceLine(line, number, file)
            row = parser.parse()
            for name, value in row.items():
                problem = shapes.check(name, _shape_of(value), "here", f"on line {number}")
                if problem:
                    raise parser.error(problem, parser.keys[name])
            builder.record(row, number)

    for first, block in blocks:
        if not (_plain(block) and _brace_fast(block, first, file, builder, shapes)):
            careful(block, first)
    return builder.table()


def _brace_fast(block: str, first: int, file: str, builder: _Builder,
                shapes: _ShapeLedger) -> bool:
    """Read a block whose lines all share its first line's layout; False (having read
    nothing) when they do not, or when a shape disagrees with an earlier line."""
    head = block.split("\n", 1)[0]
    parser = _BraceLine(head, first, file)
    try:
        entries = parser.parse()
    except TenFlangError:
        return False
    layout = _BraceLayout.of(head, entries)
    if layout is None:
        return False
    n = block.count("\n") + 1
    values = layout.read(block, n)
    if values is None:
        return False
    lines = _line_numbers(first, n)
    columns: dict[str, np.ndarray] = {}
    found: list[tuple[str, Shape, int]] = []
    for name, start, shape in layout.slots:
        if shape is None or shape == ():
            column = values[:, start]
            given = np.flatnonzero(~np.isnan(column))
            if len(given):
                found.append((name, (), int(given[0])))
        else:
            column = values[:, start:start + math.prod(shape)].reshape(n, *shape)
            found.append((name, shape, 0))
        columns[name] = column
    if any(shapes.conflicts(name, shape) for name, shape, _ in found):
        return False  # the careful parser names the line and the value
    for name, shape, row in found:
        shapes.check(name, shape, "here", f"on line {first + row}")
    builder.block(lines, columns)
    return True


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


@dataclass
class _CsvHeader:
    """A CSV header: its cells, and each name's shape and cells in row-major order."""

    cells: list[str]
    shapes: dict[str, Shape]
    where: dict[str, list[int]]


def _parse_header(head_no: int, head_line: str, file: str) -> _CsvHeader:
    def header_error(message: str, index: int) -> TenFlangError:
        col, length = _cell_span(head_line, index)
        return TenFlangError.at(
            message, file=file, line=head_no, column=col, length=length, source=head_line
        )

    header = [cell.strip() for cell in _split_csv([(head_no, head_line)], file)[0]]
    width = len(header)
    groups: dict[str, dict[tuple[int, ...], int]] = {}  # name -> index tuple -> cell number
    for j, cell in enumerate(header):
        m = _HEADER_RE.fullmatch(cell)
        if m is None:
            what = "empty column name" if not cell else f"bad column name {_cut(cell)!r}"
            raise header_error(
                f"{what} (expected a name like x, or x[0] / W[0][1] for a tensor's cells)", j
            )
        name, digits = m.group(1), _INDEX_RE.findall(m.group(2))
        if len(digits) > MAX_SHAPE_RANK:
            raise header_error(
                f"column {_cut(cell)!r} has {len(digits)} indices: a tensor has at most "
                f"{MAX_SHAPE_RANK} dimensions", j)
        for d in digits:
            # an index the header's columns cannot reach; checked on the digits, before
            # int(), so that even a 5,000-digit index gets this message
            if len(d.lstrip("0")) > len(str(width)) or int(d) >= width:
                raise header_error(
                    f"index {_cut(d, 24)} in column {_cut(cell)!r} is out of range: the header "
                    f"has {width} column{'s' if width != 1 else ''}, one per tensor cell", j)
        index = tuple(int(d) for d in digits)
        cells = groups.setdefault(name, {})
        if index in cells:
            raise header_error(f"duplicate column name {_cut(cell)!r}", j)
        if cells:
            other = next(iter(cells))
            if len(other) != len(index):
                if not other or not index:
                    raise header_error(
                        f"{name!r} is given both as one column and as tensor cells", j
                    )
                raise header_error(
                    f"column {_cut(cell)!r} has {len(index)} indices but "
                    f"{_cut(header[cells[other]])!r} has {len(other)}", j,
                )
        cells[index] = j
    shapes: dict[str, Shape] = {}
    where: dict[str, list[int]] = {}
    for name, cells in groups.items():
        indexes = list(cells)
        shape = tuple(max(ix[d] for ix in indexes) + 1 for d in range(len(indexes[0])))
        if len(cells) != math.prod(shape):
            # the first missing index in row-major order (at most len(cells) + 1 steps)
            missing = next(ix for ix in itertools.product(*map(range, shape))
                           if ix not in cells)
            cell = name + "".join(f"[{k}]" for k in missing)
            raise header_error(
                f"column {cell!r} is missing (tensor {name!r} has shape {fmt_shape(shape)}, "
                "every index must have a column)",
                min(cells.values()),
            )
        shapes[name] = shape
        where[name] = [cells[ix] for ix in np.ndindex(*shape)]  # row-major order
    return _CsvHeader(header, shapes, where)


def _parse_csv(blocks: Iterator[tuple[int, str]], head_no: int, head_line: str,
               capacity: int, file: str) -> DataTable:
    header = _parse_header(head_no, head_line, file)
    width = len(header.cells)
    builder = _Builder(file, capacity)
    for name, shape in header.shapes.items():
        builder.declare(name, shape)
    for first, block in blocks:
        n = block.count("\n") + 1
        fast = _csv_fast(block, n, width) if _plain(block) else None
        if fast is not None:
            matrix, nulls = fast
            lines = _line_numbers(first, n)
            source = functools.partial(_block_line, block, first)
            builder.block(lines, _csv_columns(matrix, header, source, file, nulls > 0),
                          nulls > 0)
            continue
        data_lines = _significant(block, first)
        if data_lines:
            matrix = _csv_careful(data_lines, header, file)
            lines = np.array([number for number, _ in data_lines], dtype=np.int64)
            builder.block(lines, _csv_columns(matrix, header, data_lines.__getitem__, file))
    if builder.rows == 0:
        raise TenFlangError.at(
            "no records in this file (only a header line)", file=file, line=head_no,
            source=head_line, length=len(head_line),
        )
    return builder.table()


def _csv_fast(block: str, n: int, width: int) -> tuple[np.ndarray, int] | None:
    """The block's cells as an (n, width) array (NaN for null) by numpy's own CSV reader,
    and how many are null; None when it is not sure (quotes, a bad or non-finite cell, a
    short row...)."""
    if '"' in block:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # numpy first: it stops at the first empty cell, if there is one
        matrix = _loadtxt(block)
        if matrix is not None:
            # (an empty line is no row to loadtxt: then there are fewer rows)
            good = matrix.shape == (n, width) and bool(np.isfinite(matrix).all())
            return (matrix, 0) if good else None
        filled = _fill_nulls(block)
        if filled is None:
            return None
        block, nulls = filled
        matrix = _loadtxt(block)
    if matrix is None or matrix.shape != (n, width) or np.isinf(matrix).any():
        return None
    if int(np.isnan(matrix).sum()) != nulls:
        return None  # 'nan' in a cell: the careful path says so
    return matrix, nulls


def _fill_nulls(block: str) -> tuple[str, int] | None:
    """The block with its empty cells and its null cells (as the writers spell them) written
    'nan' for numpy's reader, and how many there are; None when there are none. A null
    spelled otherwise (with spaces around, 'Null') is left for the careful path."""
    filled = block
    nulls = 0
    for word in ("", NULL, NULL.upper()):
        if word and word[1] not in filled:  # one character: found at memchr's speed
            continue
        before = len(filled)
        if f",{word}," in filled:
            for _ in range(2):  # twice: a replacement uses up the comma its neighbour needs
                filled = filled.replace(f",{word},", ",nan,")
        filled = filled.replace(f",{word}\n", ",nan\n").replace(f"\n{word},", "\nnan,")
        if word:  # (an empty line is a blank line, which is no record, not a null cell)
            for _ in range(2):
                filled = filled.replace(f"\n{word}\n", "\nnan\n")
        if filled.startswith(word + ",") or (word and (filled == word
                                                       or filled.startswith(word + "\n"))):
            filled = "nan" + filled[len(word):]
        if filled.endswith("," + word) or (word and filled.endswith("\n" + word)):
            filled = filled[:len(filled) - len(word)] + "nan"
        # each replacement changes the length by the same amount
        nulls += (len(filled) - before) // (3 - len(word))
    # the caller checks that numpy finds exactly this many NaN: none of the block's own
    return (filled, nulls) if nulls else None


def _loadtxt(block: str) -> np.ndarray | None:
    # numpy's reader takes exactly Python's float() literals after stripping spaces, plus
    # nan/inf (which the caller rejects); with comments=None and no quotechar it knows no
    # other syntax, and it fails on a row of the wrong length
    try:
        return np.loadtxt(block.split("\n"), dtype=np.float64, delimiter=",",
                          comments=None, ndmin=2)
    except (ValueError, TypeError):
        return None


def _csv_careful(data_lines: list[tuple[int, str]], header: _CsvHeader, file: str
                 ) -> np.ndarray:
    """The cells of these lines as an array, or the error about the first line that has a
    problem (in a line: a wrong number of cells, else its first bad cell, else a tensor
    given in part), whatever the blocks the file is read in."""
    rows = _split_csv(data_lines, file)
    width = len(header.cells)
    # the cells are read by columns up to the first row of the wrong length
    short = next((k for k, row in enumerate(rows) if len(row) != width), len(rows))
    matrix = np.empty((short, width), dtype=np.float64)
    problems: list[tuple[int, int, int]] = []  # (row, kind of problem, cell)
    if short < len(rows):
        problems.append((short, 0, width))
    for j in range(width):
        matrix[:, j], bad = _csv_column([row[j] for row in rows[:short]])
        if bad is not None:
            problems.append((bad, 1, j))
    partly = _partly_null(matrix, header)
    if partly is not None:
        problems.append((partly[0], 2, partly[1]))
    if not problems:
        return matrix
    k, kind, j = min(problems)
    lineno, line = data_lines[k]
    if kind == 0:
        n = len(rows[k])
        col, _ = _cell_span(line, width)
        raise TenFlangError.at(
            f"row has {n} cell{'' if n == 1 else 's'}, the header has {width}",
            file=file, line=lineno, column=col, length=max(1, len(line) - col), source=line,
        )
    col, length = _cell_span(line, j)
    if kind == 1:
        message = _number_problem(header.cells[j], rows[k][j].strip())
    else:
        message = _partly_null_message(header, j)
    raise TenFlangError.at(message or "bad cell", file=file, line=lineno, column=col,
                           length=length, source=line)


def _partly_null(matrix: np.ndarray, header: _CsvHeader) -> tuple[int, int] | None:
    """(row, cell) of the first row where a tensor is given in part: its first empty cell."""
    found: tuple[int, int] | None = None
    for name, shape in header.shapes.items():
        if not shape:
            continue
        where = header.where[name]
        empty = np.isnan(matrix[:, where])
        partly = np.flatnonzero(empty.any(axis=1) & ~empty.all(axis=1))
        if partly.size and (found is None or partly[0] < found[0]):
            k = int(partly[0])
            found = (k, where[int(np.flatnonzero(empty[k])[0])])
    return found


def _partly_null_message(header: _CsvHeader, j: int) -> str:
    name = next(n for n, where in header.where.items() if j in where)
    return (f"tensor {name!r} is partly null in this row ({_cut(header.cells[j])!r} is empty "
            "or null): give all its cells or none")


def _csv_columns(matrix: np.ndarray, header: _CsvHeader,
                 source: Callable[[int], tuple[int, str]], file: str, nulls: bool = True
                 ) -> dict[str, np.ndarray]:
    """Each name's block of the cells; a tensor given only in part is an error (``nulls``:
    whether the matrix may hold any NaN at all)."""
    partly = _partly_null(matrix, header) if nulls else None
    if partly is not None:
        lineno, line = source(partly[0])
        col, length = _cell_span(line, partly[1])
        raise TenFlangError.at(_partly_null_message(header, partly[1]), file=file,
                               line=lineno, column=col, length=length, source=line)
    n = len(matrix)
    return {name: matrix[:, header.where[name]].reshape((n, *shape)) if shape
            else matrix[:, header.where[name][0]]
            for name, shape in header.shapes.items()}


def _csv_column(cells: list[str]) -> tuple[np.ndarray, int | None]:
    """One CSV column as floats (NaN for null), each cell checked against the grammar; and
    the row of the first bad cell (None when there is none)."""
    if _NOT_NUMBER_CHAR_RE.search("\n".join(cells)) is None:
        try:
            values = np.array(cells, dtype=np.float64)
        except ValueError:  # an empty cell, or a malformed number such as '1e'
            pass
        else:
            if np.isfinite(values).all():  # 1e999 overflows to inf
                return values, None
    # slow path: nulls in the column, or a bad cell to find
    out = np.full(len(cells), np.nan)
    for k, cell in enumerate(cells):
        text = cell.strip()
        if not text or is_null(text):
            continue
        if not is_number(text) or not math.isfinite(value := float(text)):
            return out, k
        out[k] = value
    return out, None


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
        np.array([significant[0][0]]),
        {n: np.zeros(1, dtype=bool) for n in names},
    )


# ----------------------------------------------------------------------------------------
# Python data and npz


def _python_name(key: Any, what: str, where: str, file: str) -> str:
    if not isinstance(key, str) or not matches_name(key):
        text = key if isinstance(key, str) else _show(key)
        raise TenFlangError.at(_bad_name(text, what, where), file=file)
    return key


def _number(raw: Any, name: str, where: str, file: str) -> float:
    """One Python number as a float (NaN passes: the caller decides what it means)."""
    def fail(what: str, why: str = "") -> TenFlangError:
        return TenFlangError.at(f"value of {name!r}{where} {what}: {_show(raw)}{why}",
                                file=file)

    if isinstance(raw, str | bytes | np.str_ | np.bytes_):
        raise fail("is not a number")
    if isinstance(raw, complex | np.complexfloating):
        raise fail("is a complex number", " (values are real numbers)")
    try:
        return float(raw)  # True and False are 1 and 0, as in numpy
    except OverflowError:
        raise fail("is too large for a 64-bit float") from None
    except (TypeError, ValueError, ArithmeticError):
        raise fail("is not a number") from None


def _coerce(raw: Any, name: str, where: str, file: str) -> Value:
    """One Python value as a float, a float64 array or None (null); errors name ``where``."""
    if raw is None:
        return None
    if isinstance(raw, np.ndarray) and raw.ndim == 0:
        raw = raw.item()
    if isinstance(raw, list | tuple | np.ndarray):
        arr = _nested_array(raw, name, where, file)
        finite = np.isfinite(arr)
        if finite.all():
            return arr
        nan = np.isnan(arr)
        if nan.all():
            return None  # NaN is how arrays (and pandas) spell "missing"
        what = "partly NaN" if not np.isinf(arr).any() else "not finite"
        raise TenFlangError.at(f"value of {name!r}{where} is {what}", file=file)
    value = _number(raw, name, where, file)
    if math.isnan(value):
        return None
    if math.isinf(value):
        raise TenFlangError.at(f"value of {name!r}{where} is not finite: {value!r}", file=file)
    return value


def _nested_array(raw: list | tuple | np.ndarray, name: str, where: str, file: str
                  ) -> np.ndarray:
    """Nested lists (or an array) as a float64 array of at most MAX_SHAPE_RANK dimensions."""
    arr: np.ndarray | None
    if isinstance(raw, np.ndarray):
        arr = raw
    else:
        try:  # numpy stops by itself at 64 levels of nesting
            arr = np.asarray(raw)
        except (ValueError, TypeError, OverflowError):
            arr = None
    if arr is not None and arr.dtype.kind in "biuf":
        arr = arr.astype(np.float64)
    else:
        # None, text, a huge int, a complex number or a ragged list somewhere inside:
        # walk the lists ourselves to name it
        arr = _walk(raw, name, where, file)
    if arr.ndim > MAX_SHAPE_RANK:
        raise _too_deep(name, where, file)
    return arr


def _too_deep(name: str, where: str, file: str) -> TenFlangError:
    return TenFlangError.at(
        f"value of {name!r}{where} is nested too deeply (a tensor has at most "
        f"{MAX_SHAPE_RANK} dimensions)", file=file)


def _walk(raw: Any, name: str, where: str, file: str) -> np.ndarray:
    """Nested lists level by level (no recursion, at most MAX_SHAPE_RANK levels): the
    array, or an error about the first thing that is not a regular array of numbers."""
    level: list[Any] = [raw]
    shape: list[int] = []
    while level:
        lists = [isinstance(e, list | tuple) or (isinstance(e, np.ndarray) and e.ndim > 0)
                 for e in level]
        if not any(lists):
            break
        if any(e is None for e in level):
            raise _null_inside(name, where, file)
        if not all(lists):
            raise TenFlangError.at(
                f"value of {name!r}{where}: ragged list: mixes numbers and lists", file=file)
        if len(shape) == MAX_SHAPE_RANK:
            raise _too_deep(name, where, file)
        lengths = [len(e) for e in level]
        if any(n != lengths[0] for n in lengths):
            other = next(n for n in lengths if n != lengths[0])
            raise TenFlangError.at(
                f"value of {name!r}{where}: ragged list: rows of lengths {lengths[0]} and "
                f"{other}", file=file)
        shape.append(lengths[0])
        level = [x for e in level for x in e]
    values = []
    for e in level:
        if e is None:
            raise _null_inside(name, where, file)
        values.append(_number(e.item() if isinstance(e, np.ndarray) else e, name, where, file))
    return np.array(values, dtype=np.float64).reshape(shape)


def _null_inside(name: str, where: str, file: str) -> TenFlangError:
    return TenFlangError.at(
        f"value of {name!r}{where}: null is not allowed inside a list (a tensor is all "
        "numbers or null)", file=file)


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
    return DataTable(file, list(arrays), arrays, present, np.zeros(n, dtype=np.int64), nulls)


def _column_array(raw: Any, name: str, what: str, file: str) -> np.ndarray:
    """A column as float64 (a copy, never the caller's array) with NaN for null."""
    try:
        arr: np.ndarray | None = np.asarray(raw)
    except (ValueError, TypeError, OverflowError):  # ragged, or nested 64 levels deep
        arr = None
    if arr is not None:
        if arr.ndim == 0:
            raise TenFlangError.at(
                f"{what} {name!r} is 0-d: its first axis must be the example", file=file)
        if arr.dtype.kind in "biuf":
            if arr.ndim - 1 > MAX_SHAPE_RANK:
                raise TenFlangError.at(
                    f"{what} {name!r} has {arr.ndim - 1} dimensions per example (a tensor "
                    f"has at most {MAX_SHAPE_RANK})", file=file)
            return arr.astype(np.float64)  # astype copies
        if arr.dtype.kind not in "OUSc":
            raise TenFlangError.at(
                f"{what} {name!r} is not numeric (dtype {arr.dtype})", file=file)
    elif not isinstance(raw, list | tuple):
        raise TenFlangError.at(f"{what} {name!r} is not an array of numbers", file=file)
    # None next to numbers, lists of unequal shapes, text, huge ints or complex numbers:
    # element by element, which either builds the column or names the first bad element
    values = [_coerce(v, name, f" at position {k} of the {what}", file)
              for k, v in enumerate(raw)]
    shapes = _ShapeLedger()
    for k, v in enumerate(values):
        problem = shapes.check(name, _shape_of(v), f"at position {k} of the {what}",
                               f"at position {k}", label=f"value of {name!r}")
        if problem:
            raise TenFlangError.at(problem, file=file)
    shape = shapes.first[name][0] if name in shapes.first else ()
    out = np.full((len(values), *shape), np.nan)
    for k, v in enumerate(values):
        if v is not None:
            out[k] = v
    return out


_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip archive's first entry, or an empty one


def _read_npz(path: str) -> DataTable:
    raw = read_bytes(path)

    def invalid(why: str) -> TenFlangError:
        return TenFlangError.at(f"not a valid .npz file of numeric arrays: {why}", file=path)

    if raw[:4] not in _ZIP_MAGIC:
        # without this, numpy would take the bytes for a pickle and talk about allow_pickle
        if raw.startswith(b"\x93NUMPY"):
            raise invalid("this is a single .npy array, not an .npz archive of named arrays "
                          "(numpy.savez writes one)")
        raise invalid("it is not a zip archive (numpy.savez writes one)")
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            for info in archive.infolist():
                key = _npz_key(info, path)  # before reading it: a member may be no array
                arrays[key] = _npz_member(archive, info, invalid)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError,
            NotImplementedError) as exc:
        raise invalid(f"damaged ({_cut(str(exc), 80)})") from None
    return _table_from_arrays(arrays, path, "array")


def _npz_key(info: zipfile.ZipInfo, path: str) -> str:
    if not info.filename.endswith(".npy"):
        raise TenFlangError.at(
            f"not a valid .npz file of numeric arrays: it holds {_cut(info.filename)!r}, "
            "which is not a .npy array", file=path)
    return info.filename[:-4]


def _npz_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo,
                invalid: Callable[[str], TenFlangError]) -> np.ndarray:
    """One array of the archive, after checking what its header promises."""
    key = info.filename[:-4]
    with archive.open(info) as handle:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(handle)
        else:  # 2.0 and 3.0 share the header's layout
            shape, _, dtype = np.lib.format.read_array_header_2_0(handle)
    if dtype.hasobject:
        raise invalid(f"array {_cut(key)!r} holds Python objects, not numbers")
    if math.prod(shape) * dtype.itemsize > info.file_size:
        # a damaged header: numpy would allocate what it promises before reading
        raise invalid(f"array {_cut(key)!r} is shorter than its header says")
    with archive.open(info) as handle:
        return np.lib.format.read_array(handle, allow_pickle=False)


# ----------------------------------------------------------------------------------------
# writing


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
