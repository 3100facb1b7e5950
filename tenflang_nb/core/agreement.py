"""When a value agrees with its reference: the one tolerance rule of the package.

Every test of a computed value against a reference (the checker's line against the
compiler's value, gradcheck's GCP gradient against finite differences, ...) is
:func:`agreement`::

    |actual - reference| <= rtol * max(scale, floor)    everywhere

``scale`` is the reference's size, its largest magnitude (with ``rows``: one per row, a draw
or an example, each compared on its own); ``floor`` keeps a reference of about 0 from asking
for equality to the last bit. A tolerance relative to the reference judges a gradient of 1e-10
as it judges one of 1: an absolute one would call an all-zero answer right wherever gradients
are tiny. A NaN or an infinity on either side never agrees, and the result says which side
it was on. :func:`entrywise_agreement` is the same rule with each entry on its own scale and
an absolute tolerance where the reference is about 0 (gradcheck, the tests' oracle, the
benchmarks).

>>> agreement(2e-10, 1e-10, rtol=1e-6).ok, agreement(1e-10 + 1e-17, 1e-10, rtol=1e-6).ok
(False, True)
>>> agreement(float("nan"), 1.0, rtol=1e-6).reason("the GCP's gradient", "the numeric one")
"the GCP's gradient is NaN"
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import TenFlangError

__all__ = ["Agreement", "agreement", "entrywise_agreement", "real_number"]

SIDES = ("actual", "reference")
_LARGEST = float(np.finfo(float).max)  # the floor atol / rtol, at most


@dataclass(frozen=True)
class Agreement:
    """What :func:`agreement` found. True in a condition when the values agree.

    ``error`` is the largest ``|actual - reference| / max(scale, floor)`` (0 for equal
    values, infinite when a side is not finite or the shapes differ), ``rtol`` the tolerance
    it was judged by; ``nonfinite`` the side with a NaN or an infinity (``"actual"``,
    ``"reference"`` or ``"both"``); ``row`` the first row that disagrees (with ``rows``, its
    index); ``each`` whether each row agrees (with ``rows``); ``shapes`` the two shapes when
    they differ.
    """

    ok: bool
    error: float
    rtol: float
    nonfinite: str | None = None
    row: int | tuple[int, ...] | None = None
    each: np.ndarray | None = field(default=None, repr=False, compare=False)
    shapes: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    what: str = field(default="NaN or infinite", repr=False)  # how the non-finite side is

    def __bool__(self) -> bool:
        return self.ok

    def reason(self, actual: str = "the value", reference: str = "the reference") -> str | None:
        """Why the values disagree, naming the sides as given (None when they agree).

        >>> agreement([1.0, float("inf")], [1.0, 2.0], rtol=1e-6).reason()
        'the value is infinite'
        >>> agreement(1.5, 1.0, rtol=1e-4).reason("yours", "the right one")
        'yours differs from the right one: relative error 0.5 > 0.0001'
        """
        if self.ok:
            return None
        if self.shapes is not None:
            return (f"{actual} has shape {list(self.shapes[0])}, {reference} "
                    f"{list(self.shapes[1])}")
        if self.nonfinite == "both":
            return f"neither {actual} nor {reference} is finite"
        if self.nonfinite is not None:
            side = actual if self.nonfinite == "actual" else reference
            return f"{side} is {self.what}"
        return (f"{actual} differs from {reference}: relative error {self.error:.2g} > "
                f"{self.rtol:g}")


def agreement(actual: Any, reference: Any, *, rtol: float, floor: Any = 0.0,
              rows: bool | int = False) -> Agreement:
    """Whether ``actual`` agrees with ``reference`` (see the module): within ``rtol`` of the
    reference's scale, or of ``floor`` where that is larger, and finite on both sides.

    With ``rows``, axis 0 indexes separate comparisons (draws, examples), each with the scale
    of its own row; ``floor`` may then give one floor per row. ``rows=k`` makes the first k
    axes index them (a value against a stack of references, draw by draw).

    >>> a = agreement([[1.0, 2.0], [0.0, 1e-12]], [[1.0, 2.0], [0.0, 0.0]], rtol=1e-6,
    ...               floor=[0.0, 1e-6], rows=True)
    >>> a.ok, a.error, a.each.tolist()
    (True, 1e-06, [True, True])
    >>> agreement([0.0, 0.0], [1e-10, 0.0], rtol=1e-6).error
    1.0
    """
    k = int(rows)
    for name, value in (("rtol", rtol), ("floor", floor)):
        checked = np.asarray(value, dtype=float) if _real(value) else None
        if (checked is None or not np.all(np.isfinite(checked) & (checked >= 0))
                or ((name == "rtol" or not k) and checked.ndim > 0)):
            raise TenFlangError.at(f"{name} must be a finite number >= 0, not {value!r}")
    a = np.asarray(actual, dtype=float)
    r = np.asarray(reference, dtype=float)
    lead = a.shape[:k]
    if a.ndim < k or (np.ndim(floor) and np.shape(floor) != lead[len(lead) - np.ndim(floor):]):
        raise TenFlangError.at("rows: the values need an axis per row, and floor one number "
                               "per row")
    if a.shape != r.shape:
        return Agreement(False, math.inf, rtol, shapes=(a.shape, r.shape))
    finite = (bool(np.all(np.isfinite(a))), bool(np.all(np.isfinite(r))))
    if not all(finite):
        bad = [s for s, f in zip(SIDES, finite, strict=True) if not f]
        values = np.concatenate([v[~np.isfinite(v)].ravel() for v in (a, r)])
        what = ("NaN" if np.all(np.isnan(values)) else
                "infinite" if not np.any(np.isnan(values)) else "NaN or infinite")
        side = bad[0] if len(bad) == 1 else "both"
        each = np.all((np.isfinite(a) & np.isfinite(r)).reshape((*lead, -1)), axis=-1)
        return Agreement(False, math.inf, rtol, side, _first(each, k), each if k else None,
                         what=what)
    flat_a, flat_r = a.reshape((*lead, -1)), r.reshape((*lead, -1))
    with np.errstate(all="ignore"):  # finite values 1e308 apart differ by inf: not equal
        scale = np.max(np.abs(flat_r), axis=-1, initial=0.0)
        size = np.maximum(scale, np.asarray(floor, dtype=float))
        diff = np.max(np.abs(flat_a - flat_r), axis=-1, initial=0.0)
        each = diff <= rtol * size
        error = np.where(diff == 0, 0.0, diff / size)
    ok = bool(np.all(each))
    return Agreement(ok, float(np.max(error, initial=0.0)), rtol, row=_first(each, k),
                     each=each if k else None)


def entrywise_agreement(actual: Any, reference: Any, *, rtol: float, atol: float = 0.0
                        ) -> Agreement:
    """:func:`agreement` entry by entry: each entry within ``rtol`` of its reference entry,
    with the floor ``atol / rtol``, so that a difference of at most ``atol`` agrees where the
    reference is about 0 (the rounding of a difference quotient where a derivative is 0);
    ``rtol`` 0 asks for equality. ``error`` is the largest entry's, ``row`` the first entry
    that disagrees.

    >>> entrywise_agreement([1.0, 3.0], [1.0, 2.0], rtol=1e-4).error  # relative to the 2
    0.5
    >>> entrywise_agreement([1e-9, 1.0], [0.0, 1.0], rtol=1e-4, atol=1e-7).ok
    True
    >>> entrywise_agreement(float("nan"), 1.0, rtol=1e-4, atol=1e-7).reason("the GCP's gradient")
    "the GCP's gradient is NaN"
    """
    a = np.asarray(actual, dtype=float)
    checked = np.asarray(atol, dtype=float) if _real(atol) else None
    if checked is None or checked.ndim or not (np.isfinite(checked) and checked >= 0):
        raise TenFlangError.at(f"atol must be a finite number >= 0, not {atol!r}")
    if not (_real(rtol) and np.ndim(rtol) == 0 and rtol > 0):  # agreement says what rtol is
        return agreement(a, reference, rtol=rtol, rows=a.ndim)
    return agreement(a, reference, rtol=rtol, floor=min(float(atol) / rtol, _LARGEST),
                     rows=a.ndim)


def real_number(value: Any) -> float | None:
    """``value`` as a float when it is one real number (a numpy scalar, a 0-d array too).

    >>> real_number(np.float32(0.5)), real_number(True), real_number([1.0])
    (0.5, None, None)
    """
    if isinstance(value, bool | np.bool_ | str | bytes):
        return None
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return None
    return float(array) if array.ndim == 0 else None


def _real(value: Any) -> bool:
    """A real number or an array of them (not a bool, not text)."""
    if isinstance(value, bool | str | bytes):
        return False
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return False
    return array.dtype.kind in "iuf"


def _first(each: np.ndarray, k: int) -> int | tuple[int, ...] | None:
    """The index of the first row that disagrees (None: none, or no rows)."""
    if not k or bool(np.all(each)):
        return None
    index = tuple(int(i) for i in np.unravel_index(int(np.argmin(each)), each.shape))
    return index[0] if k == 1 else index
