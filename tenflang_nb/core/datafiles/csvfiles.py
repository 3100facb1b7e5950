"""CSV with a header of names; a tensor is spread over ``x[0],x[1]`` or ``W[0][1]`` columns,
an empty cell (or ``null``) is null. A block of rows is read by numpy's ``loadtxt`` when it
can be; the careful path reads cell by cell and words every error."""

from __future__ import annotations

import csv
import functools
import itertools
import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import TenFlangError
from ..formatting import fmt_shape
from ..lexical import MAX_SHAPE_RANK, NAME_PATTERN, NULL, is_null, is_number
from ..ops import Shape
from .blocks import _block_line, _line_numbers, _plain, _significant, _Source
from .checks import _cut, _number_problem
from .table import DataTable, _Builder

# Python's and numpy's float() grammar, limited to these characters, is exactly
# lexical.NUMBER_PATTERN with spaces around; one scan of a whole CSV column for anything else
# is far cheaper than a regex match per cell.
_NOT_NUMBER_CHAR_RE = re.compile(r"[^0-9eE.+\- \t\n]")
_HEADER_RE = re.compile(rf"({NAME_PATTERN})((?:\[[0-9]+\])*)")
_INDEX_RE = re.compile(r"[0-9]+")


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


def _parse_csv(source: _Source, file: str) -> DataTable:
    head_no, head_line = source.head
    header = _parse_header(head_no, head_line, file)
    width = len(header.cells)
    builder = _Builder(file, source.lines - 1)
    for name, shape in header.shapes.items():
        builder.declare(name, shape)
    for first, block in source.after_head():
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
