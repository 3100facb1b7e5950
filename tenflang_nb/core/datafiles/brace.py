"""Brace notation, one record per line: ``{x: 3, W: [[1, 2], [3, 4]], y: null}``. The careful
parser ``_BraceLine`` defines the format and words every error; the fast path reads a block
of lines that share its first line's layout (``_BraceLayout``) with numpy's ``loadtxt``."""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import TenFlangError
from ..formatting import fmt_shape
from ..lexical import MAX_SHAPE_RANK, is_null, is_number, matches_name
from ..ops import Shape
from .blocks import _line_numbers, _plain, _significant, _Source
from .checks import _bad_name, _cut, _number_problem, _ShapeLedger
from .table import DataTable, Value, _Builder, _shape_of

# A ':<digits>' suffix belongs to a generated name only when another ':' follows, so that
# '{d/L/d/x:1: 2}' is the name 'd/L/d/x:1' while '{d/L/d/x:1}' is 'd/L/d/x' bound to 1.
_BRACE_TOKEN_RE = re.compile(
    r"\s*([{}\[\],:]|d/[^\s{}\[\],:]*(?::[0-9]+(?=\s*:))?|[^\s{}\[\],:]+)"
)
_PUNCT = frozenset("{}[],:")
# A value in a brace line: a number or null right after ':', '[' or ',' (or a space). A name
# never follows those with a digit, sign or '.', so replacing these tokens by a marker
# leaves the line's names and punctuation: its layout.
_BRACE_VALUE_RE = re.compile(r"(?<=[\s:\[,])(?:[nN][uU][lL][lL]|[-+.0-9][-+.0-9eE]*)")
_MARKER = "\x00"  # stands for a value in a line's layout (a NUL is never valid data)
_BRACE_TO_FIELDS = str.maketrans("{}[]:", ",,,,,")


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


def _sniff_brace(head: str) -> bool:
    return head.lstrip().startswith("{")


def _parse_brace(source: _Source, file: str) -> DataTable:
    builder = _Builder(file, source.lines)
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

    for first, block in source.from_head():
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
