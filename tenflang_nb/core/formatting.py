"""How TenFlang shows things to a reader: a number, a value (a number, a tensor or NULL), a
shape, a relative error, a duration and a list in prose.

Every view, report, message and command formats through here, so one rule holds everywhere.
Where readers differ on purpose (a table cell, a graph label, the stepper, a check report,
the weights table, the status line), the difference is a parameter (``style``, ``digits``,
``notation``), not another function. Two rules keep stored outputs the same on every CPU
(whose BLAS kernels move last digits and the sign of a zero): a zero is never shown as
``-0``, and a check report shows the rounding noise of a zero (below :data:`NOISE`) as ``0``;
:func:`fmt_rel_error` shows only that a relative error below 1e-6 is tiny.

>>> fmt_number(-0.0), fmt_value(np.array([1 / 3, -2.0])), fmt_shape((64, 32))
('0', '[0.3333, -2]', '[64, 32]')
>>> fmt_list(["x", "w", "b"]), fmt_seconds(0.00123), fmt_rel_error(3.2e-10)
('x, w and b', '1.2 ms', '< 1e-06')
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

__all__ = [
    "NOISE", "NULL", "STYLES", "did_you_mean", "fmt_assignments", "fmt_list", "fmt_number",
    "fmt_rel_error", "fmt_seconds", "fmt_shape", "fmt_value",
]

NULL = "null"  # a value never given: the word data files write (lexical reserves it), as shown
NOISE = 1e-12  # a check report's magnitudes below this are the rounding noise of a zero

Notation = Literal["g", "short", "plain"]
Style = Literal["cell", "label", "step", "range", "report", "weight"]
# Each style's significant digits for a number (entries of a tensor may get fewer).
STYLES: dict[str, int] = {"cell": 6, "label": 4, "step": 4, "range": 3, "report": 4,
                          "weight": 6}


def fmt_number(x: float, digits: int = 6, *, notation: Notation = "g") -> str:
    """``x`` to ``digits`` significant digits, never ``-0``. ``notation``: ``g`` is Python's
    (``1.5e-07``); ``short`` trims the exponent (``1.5e-7``, ``2e10``: the status line);
    ``plain`` writes the rounded value out (up to 10 digits), thousands grouped (``1,200``,
    not ``1.2e+03``: durations and ratios).

    >>> fmt_number(0.123456789), fmt_number(2 / 3, 4), fmt_number(float("nan"))
    ('0.123457', '0.6667', 'nan')
    >>> fmt_number(4.1e-5, 3), fmt_number(4.1e-5, 3, notation="short")
    ('4.1e-05', '4.1e-5')
    >>> fmt_number(1234.5, 2), fmt_number(1234.5, 2, notation="plain")
    ('1.2e+03', '1,200')
    """
    x = float(x) + 0.0  # + 0.0: -0.0 becomes 0.0
    if notation == "plain":
        return f"{float(f'{x:.{digits}g}'):,.10g}"
    text = f"{x:.{digits}g}"
    if notation == "short" and "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def fmt_shape(shape: Sequence[int], style: Literal["code", "dims"] = "code") -> str:
    """A tensor's shape: ``code`` as TenFlang writes it (a scalar is ``[]``), ``dims`` as
    its dimensions multiplied (prose and previews).

    >>> fmt_shape((64, 32)), fmt_shape(()), fmt_shape((2, 3), "dims")
    ('[64, 32]', '[]', '2×3')
    """
    if style == "dims":
        return "×".join(str(d) for d in shape)
    return "[" + ", ".join(str(d) for d in shape) + "]"


def fmt_value(value: Any, style: Style = "cell", *, digits: int | None = None) -> str:
    """A value on one line, as ``style`` shows it; ``digits`` for a number (default: the
    style's, in :data:`STYLES`). NULL (None) is ``null``, a bool ``yes``/``no``, text as is.

    - ``cell`` (table cells): a tensor in numpy's nested brackets, entries to 2 digits fewer
      (at least 2), beyond 12 entries summarised with ``...``;
    - ``label`` (graph labels, small): as ``cell`` up to 4 entries; beyond, the first 3 to
      1 digit fewer and ``…`` (the label shows the shape already);
    - ``step`` (the stepper): the shape, then the entries; beyond 4, the first 3 and ``…``;
    - ``range`` (the stepper's label of a tensor too big for a heatmap): the shape and the
      smallest and largest entry;
    - ``report`` (check reports, plain text): the rounding noise of a zero as 0; the first 4
      entries, then ``...`` and the shape if there are more or it is not a vector;
    - ``weight`` (the weights table): a tensor as its shape and norm.

    >>> fmt_value(0.123456789), fmt_value(None), fmt_value(np.array([[1.0, 2.0]]))
    ('0.123457', 'null', '[[1, 2]]')
    >>> fmt_value(np.arange(13.0))
    '[0, 1, ..., 11, 12]'
    >>> fmt_value(0.123456789, "label"), fmt_value(np.arange(10.0), "label")
    ('0.1235', '[0, 1, 2, …]')
    >>> fmt_value(np.arange(5.0), "step"), fmt_value(np.array([[1.0, -2.0]]), "step")
    ('[5] 0, 1, 2, …', '[1×2] 1, -2')
    >>> fmt_value(np.linspace(-0.41, 0.38, 2048).reshape(64, 32), "range")
    '[64×32] from -0.41 to 0.38'
    >>> fmt_value(np.float64(-1e-17), "report"), fmt_value(np.arange(6.0).reshape(2, 3), "report")
    ('0', '[0, 1, 2, 3, ...] (shape [2, 3])')
    >>> fmt_value(0.12345678, "weight"), fmt_value(np.ones((2, 3)), "weight")
    ('0.123457', '2×3 tensor, ‖·‖ = 2.44949')
    """
    if value is None:
        return NULL
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    default = STYLES[style]  # an unknown style fails here, not as another style
    digits = default if digits is None else digits
    array = np.asarray(value, dtype=float)
    if style == "report":
        array = np.where(np.abs(array) < NOISE, 0.0, array)
    if array.ndim == 0:
        return fmt_number(float(array), digits)
    flat = array.ravel()
    if style == "cell" or (style == "label" and flat.size <= 4):
        return _nested(array, max(2, digits - 2))
    if style == "label":
        return f"[{_head(flat, 3, digits - 1)}, …]"
    if style == "step":
        more = ", …" if flat.size > 4 else ""
        head = _head(flat, 4 if flat.size <= 4 else 3, digits)
        return f"[{fmt_shape(array.shape, 'dims')}] {head}{more}"
    if style == "range":
        finite = flat[np.isfinite(flat)]
        if not finite.size:
            return f"[{fmt_shape(array.shape, 'dims')}] not finite"
        low, high = (fmt_number(x, digits) for x in (finite.min(), finite.max()))
        return f"[{fmt_shape(array.shape, 'dims')}] from {low} to {high}"
    if style == "report":
        more = ", ..." if flat.size > 4 else ""
        shape = f" (shape {fmt_shape(array.shape)})" if flat.size > 4 or array.ndim > 1 else ""
        return f"[{_head(flat, 4, digits)}{more}]{shape}"
    norm = fmt_number(float(np.linalg.norm(array)), digits)
    return f"{fmt_shape(array.shape, 'dims')} tensor, ‖·‖ = {norm}"


def _head(flat: np.ndarray, n: int, digits: int) -> str:
    return ", ".join(fmt_number(x, digits) for x in flat[:n])


def _nested(array: np.ndarray, digits: int) -> str:
    text = np.array2string(array, threshold=12, edgeitems=2, separator=", ",
                           formatter={"float_kind": lambda x: fmt_number(x, digits)})
    return " ".join(text.split())


def fmt_assignments(values: Mapping[str, Any], style: Style = "report") -> str:
    """Named values as prose: ``x = 1.5, w = 2``.

    >>> fmt_assignments({"x": 1.5, "w": np.arange(6.0)})
    'x = 1.5, w = [0, 1, 2, 3, ...] (shape [6])'
    """
    return ", ".join(f"{name} = {fmt_value(v, style)}" for name, v in values.items())


def fmt_rel_error(rel: float) -> str:
    """A relative error as a student reads it: below 1e-6 it is rounding noise (its digits
    differ from machine to machine), so only that it is tiny is shown.

    >>> fmt_rel_error(3.2e-10), fmt_rel_error(0.0), fmt_rel_error(0.0123456)
    ('< 1e-06', '0', '0.012')
    """
    if rel == 0:
        return "0"
    if rel < 1e-6:
        return "< 1e-06"
    return fmt_number(rel, 2)


def fmt_seconds(seconds: float) -> str:
    """A measured time to two significant digits, in the unit a reader expects.

    >>> fmt_seconds(0.2122), fmt_seconds(7.93e-05), fmt_seconds(0.00123), fmt_seconds(12.3)
    ('0.21 s', '79 µs', '1.2 ms', '12 s')
    >>> fmt_seconds(0.000123), fmt_seconds(0.05), fmt_seconds(1234.0)
    ('120 µs', '50 ms', '1,200 s')
    """
    for unit, scale, least in (("s", 1.0, 0.1), ("ms", 1e-3, 1e-3), ("µs", 1e-6, 0.0)):
        if seconds >= least:
            return f"{fmt_number(seconds / scale, 2, notation='plain')} {unit}"
    raise AssertionError("unreachable")


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """"did you mean ...?" naming the choices closest to a misspelt ``word`` (None: none is
    close).

    >>> did_you_mean("sead", ["seed", "fan", "sum"]), did_you_mean("q", ["seed"])
    ("did you mean 'seed'?", None)
    """
    close = difflib.get_close_matches(word, list(dict.fromkeys(choices)), n=3, cutoff=0.6)
    return f"did you mean {fmt_list([repr(c) for c in close], 'or')}?" if close else None


def fmt_list(items: Sequence[str], conjunction: str = "and") -> str:
    """Items in prose: ``a``, ``a and b``, ``a, b and c`` (or another ``conjunction``).

    >>> fmt_list(["a"]), fmt_list(["a", "b"]), fmt_list(["a", "b", "c"], "or")
    ('a', 'a and b', 'a, b or c')
    """
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {conjunction} {items[-1]}"
