"""Data files: named numeric values (inputs, expected outputs, weights) for TenFlang tools.

A data file holds N >= 1 *records*; each record binds names to values (a scalar, a tensor or
NULL): the seed's "input vector" or "weight vector". Every format in the registry
:data:`FORMATS` (brace notation ``{x: 3, W: [[1, 2], [3, 4]], y: null}``, CSV, the original
2016 format, ``.npz`` archives) is read into one :class:`DataTable`.

In all text formats, blank lines and lines whose first non-space character is ``#`` are
ignored. Numbers are plain decimal literals (no ``inf``, ``nan``, hex or ``_``). File contents
are only ever tokenised by the small parsers of this package, never evaluated. A tensor has at most
:data:`~tenflang_nb.core.lexical.MAX_SHAPE_RANK` dimensions, as in a program.

Large files take a fast path: a block of lines at a time (about 256 KB; a file is streamed
block by block) is checked and converted by numpy's ``loadtxt``: for CSV directly, for brace
notation once a regular expression has shown that every line of the block has the layout of
its first line (the same names, punctuation and spaces around its values). Any block the
fast path is not sure of is read again line by line by the careful parsers, which are the
definition of the formats and make every error message (about the first line with a
problem), so errors are the same either way.

:func:`format_table` writes records back in any format with a writer (:func:`output_format`
picks one by a file's extension); every file it writes reads back to the same records.

This module holds the public functions (and reads a text's head: a program given as data is
refused, the format found); its submodules hold the rest: ``table`` (:class:`DataTable`,
``Value`` and the builder that fills a table), ``checks`` (checks and messages every reader
shares), ``blocks`` (text and files in blocks of lines), ``brace``, ``csvfiles`` and
``original`` (the text formats), ``pyvalues`` (Python values and ``.npz`` archives),
``writers`` (records written back, a writer a format) and ``formats`` (the registry: each
format's name, extensions, sniffing, reader and writer).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import TenFlangError
from ..lexical import INSTRUCTIONS, normalize_text
from ..ops import Shape
from ..textio import read_text
from .blocks import _count_lines, _file_blocks, _file_lines, _Source, _text_blocks
from .checks import _ShapeLedger
from .formats import (
    DEFAULT_OUTPUT,
    FORMATS,
    DataFormat,
    by_extension,
    lookup,
    sniffed,
    writer,
)
from .pyvalues import _coerce, _python_name, _table_from_arrays
from .table import DataTable, Value, _Builder, _shape_of
from .writers import format_record, format_value

__all__ = [
    "FORMATS", "DataFormat", "DataTable", "Value", "format_record", "format_table",
    "format_value", "from_columns", "from_records", "output_format", "parse_data",
    "read_data", "value_shape",
]


# ----------------------------------------------------------------------------------------
# public entry points


def parse_data(text: str, file: str = "<data>", format: str | None = None) -> DataTable:
    """Parse the text of a data file; ``format`` names a text format of :data:`FORMATS`
    (brace, csv, original) or is None: found from the text's first line.

    >>> parse_data("{x: 3, w: -2}\\n{x: 1.5e-3, y: null}").record(1)
    {'x': 0.0015, 'y': None}
    >>> parse_data("x,y\\n1,2\\n3,\\n").columns["y"]
    array([ 2., nan])
    >>> parse_data("a\\t1\\nb\\t2\\n").record(0)
    {'a': 1.0, 'b': 2.0}
    """
    fmt = lookup(format, file)
    if fmt is not None and fmt.binary:
        raise TenFlangError.at(f"{fmt.name} is a binary format: read it with read_data",
                               file=file)
    text = normalize_text(text)
    return _parse(_text_blocks(text), _count_lines(text), file, fmt)


def read_data(path: str | os.PathLike[str], format: str | None = None) -> DataTable:
    """Read a data file in ``format``, else in the format its extension names (``.npz``,
    ``.csv``), else the one its first line shows.

    A text file is read as :func:`~tenflang_nb.core.textio.read_text` would (UTF-8, any line
    ends) but a block at a time: never the whole text in memory. A pipe (``/dev/stdin``, the
    shell's ``<(...)``) can be read only once: it is read whole, then parsed.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "in.csv"
    >>> _ = p.write_text("x,y\\n1,2\\n")
    >>> read_data(p).record(0)
    {'x': 1.0, 'y': 2.0}
    """
    name = os.fspath(path)
    fmt = lookup(format, name) or by_extension(name)
    if fmt is not None and fmt.read is not None:
        return fmt.read(name)
    if _read_once(name):  # the blocks below read the file twice (its lines, then its text)
        text = read_text(name)
        return _parse(_text_blocks(text), _count_lines(text), name, fmt)
    return _parse(_file_blocks(name), _file_lines(name), name, fmt)


def _read_once(path: str) -> bool:
    """Whether ``path`` is a pipe, a socket or a device, whose bytes come only once (a
    missing file is left to the readers' own errors)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


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


def output_format(path: str | os.PathLike[str] | None) -> str:
    """The format the tools write to ``path``: ``csv`` for a ``.csv`` file, ``npz`` for a
    ``.npz`` file, brace notation for anything else and for standard output (None): the
    format :func:`read_data` will read the file back in.

    >>> output_format("w.csv"), output_format("W.NPZ"), output_format("w.txt"), output_format(None)
    ('csv', 'npz', 'brace', 'brace')
    """
    fmt = by_extension(path) if path is not None else None
    return fmt.name if fmt is not None and fmt.write is not None else DEFAULT_OUTPUT


def format_table(records: Sequence[Mapping[str, Value]], format: str = "brace",
                 file: str = "<output>") -> str | bytes:
    """Records as the contents of a data file in ``format``, one of :data:`FORMATS` with a
    writer (brace, csv, or npz: bytes).

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
    return writer(format, file)(records, file)


# ----------------------------------------------------------------------------------------
# from the text to the reader of its format


def _parse(blocks: Iterator[tuple[int, str]], lines: int, file: str, fmt: DataFormat | None
           ) -> DataTable:
    """Read a text format (``fmt``, or the one its first line shows) from blocks of its
    ``lines`` lines."""
    source = _Source.find(blocks, lines)
    if source is None:
        raise TenFlangError.at("no records in this file", file=file)
    lineno, line = source.head
    if line.split(maxsplit=1)[0] in INSTRUCTIONS:
        # the usual slip: the program given where the data goes (tfweightcalc shape.tf gcp.tf)
        raise TenFlangError.at(
            "this is a TenFlang program, not a data file", file=file, line=lineno,
            source=line, length=len(line.rstrip()),
            hint="the data file holds records such as {x: 3, y: 1} (or CSV rows); "
                 "check the order of the arguments")
    parse = (fmt or sniffed(line)).parse
    assert parse is not None  # the caller read a binary format itself
    return parse(source, file)
