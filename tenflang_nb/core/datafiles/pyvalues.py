"""Python values as data: records (dicts), columns (arrays, a pandas DataFrame) and the arrays
of an ``.npz`` archive, checked and converted to float64, with messages that show the
offending value briefly."""

from __future__ import annotations

import io
import math
import reprlib
import zipfile
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import TenFlangError
from ..lexical import MAX_SHAPE_RANK, matches_name
from ..textio import read_bytes
from .checks import _bad_name, _cut, _ShapeLedger
from .table import DataTable, Value, _shape_of


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
