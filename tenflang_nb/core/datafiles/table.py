"""The table every reader makes: :class:`DataTable` (N records over the same names, one
numpy column a name), the :data:`Value` of one name in one record, and the ``_Builder`` that
fills a table's columns a record or a block of records at a time."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..ops import Shape

Value = float | np.ndarray | None  # None is NULL


@dataclass
class DataTable:
    """N records over the same names (N >= 1).

    ``columns[name]`` is a float64 array of shape ``(N,) + shape(name)`` with NaN where the
    record lacks the name or gives null; ``present[name]`` is False there. ``nulls[name]``
    (an addition to the plain table) is True where the record gives the name explicitly as
    null, so that :meth:`record` can tell "null" from "absent"; a table built without it
    treats every missing value as absent. ``lines[i]`` is the line of record ``i`` in its
    file (0 for data that has no lines: npz, Python values), as a numpy integer array.

    >>> from tenflang_nb.core.datafiles import parse_data
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

        >>> from tenflang_nb.core.datafiles import parse_data
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

    def take(self, rows: np.ndarray | list[int]) -> DataTable:
        """The records at ``rows`` (indices, in that order), as a table of their own.

        >>> from tenflang_nb.core.datafiles import parse_data
        >>> t = parse_data("{x: 1}\\n{x: 2}\\n{x: null}\\n").take([2, 0])
        >>> [t.record(i) for i in range(len(t))], t.lines.tolist()
        ([{'x': None}, {'x': 1.0}], [3, 1])
        """
        index = np.asarray(rows, dtype=np.intp)
        return DataTable(self.file, list(self.names),
                         {k: v[index] for k, v in self.columns.items()},
                         {k: v[index] for k, v in self.present.items()}, self.lines[index],
                         {k: v[index] for k, v in self.nulls.items()})

    def shape(self, name: str) -> Shape:
        """The per-example shape of ``name`` (``()`` for a scalar).

        >>> from tenflang_nb.core.datafiles import parse_data
        >>> parse_data("{W: [[1, 2, 3], [4, 5, 6]], b: 1}").shape("W")
        (2, 3)
        """
        return tuple(self.columns[name].shape[1:])

    def fixes_shape(self, name: str) -> bool:
        """Whether the data says what shape ``name`` has. It does not when ``name`` never
        has a value and nothing spells out a tensor (``{y: null}`` on every line, a CSV
        column ``y`` left empty): then any declared shape fits, and ``shape`` says ``()``.

        >>> from tenflang_nb.core.datafiles import parse_data
        >>> t = parse_data("{y: null}")
        >>> t.shape("y"), t.fixes_shape("y")
        ((), False)
        >>> parse_data("y[0],y[1]\\n,\\n").fixes_shape("y")
        True
        """
        return bool(self.present[name].any()) or self.columns[name].ndim > 1


def _shape_of(value: Value) -> Shape | None:
    if value is None:
        return None
    return () if isinstance(value, float) else value.shape


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
