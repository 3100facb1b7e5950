"""The one tolerance rule (core/agreement.py): relative to the reference's scale with a floor,
never passed by a NaN or an infinity, and saying which side was not finite."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tenflang_nb.core.agreement import agreement
from tenflang_nb.core.errors import TenFlangError


@pytest.mark.parametrize("scale", [1e-10, 1.0, 1e10])
def test_the_rule_is_the_same_at_every_scale(scale: float) -> None:
    right = np.array([3.0, -2.0]) * scale
    assert agreement(right * (1 + 1e-8), right, rtol=1e-6).ok
    assert not agreement(right * (1 + 1e-4), right, rtol=1e-6).ok
    # an answer of zeros is never right for a reference that is not about zero: the bug of
    # an absolute tolerance, where gradients of 1e-10 made any small answer "right"
    zeros = agreement(np.zeros(2), right, rtol=1e-6)
    assert not zeros.ok and zeros.error == pytest.approx(1.0)


def test_the_scale_is_the_references_largest_magnitude() -> None:
    # a component near 0 is judged against the size of the whole value, not its own
    reference = np.array([1.0, 1e-17])
    assert agreement(np.array([1.0, 3e-17]), reference, rtol=1e-6).ok
    assert not agreement(np.array([1.0, 2e-6]), reference, rtol=1e-6).ok


def test_the_floor_keeps_a_zero_reference_from_asking_for_every_bit() -> None:
    assert not agreement(1e-17, 0.0, rtol=1e-6).ok
    assert agreement(1e-17, 0.0, rtol=1e-6, floor=1e-9).ok
    assert not agreement(1e-14, 0.0, rtol=1e-6, floor=1e-9).ok
    assert agreement(0.0, 0.0, rtol=0.0).ok and agreement(0.0, 0.0, rtol=0.0).error == 0.0


def test_rows_have_a_scale_and_a_floor_each() -> None:
    reference = np.array([[1.0, 2.0], [1e-9, 0.0], [0.0, 0.0]])
    actual = reference + np.array([[1e-7, 0.0], [0.0, 0.0], [0.0, 1e-20]])
    # row 0 is off by 1e-7 of its scale 2: fine
    assert agreement(actual, reference, rtol=1e-6, floor=[0.0, 0.0, 1e-12], rows=True).ok
    # without its floor, row 2 (reference 0) must be exact
    result = agreement(actual, reference, rtol=1e-6, rows=True)
    assert not result.ok and result.row == 2
    # rows judged by one scale would let row 1 (scale 1e-9) be anything below 2e-6
    wrong = reference.copy()
    wrong[1] = 0.0
    assert agreement(wrong, reference, rtol=1e-6).ok  # the whole array: 1e-9 is nothing
    assert agreement(wrong, reference, rtol=1e-6, rows=True).row == 1


@pytest.mark.parametrize(("actual", "reference", "side", "what"), [
    (math.nan, 1.0, "actual", "NaN"),
    (1.0, math.nan, "reference", "NaN"),
    ([1.0, math.inf], [1.0, 2.0], "actual", "infinite"),
    ([1.0, 2.0], [-math.inf, 2.0], "reference", "infinite"),
    (math.nan, math.nan, "both", "NaN"),
    (math.inf, math.inf, "both", "infinite"),
    ([math.nan, 1.0], [math.inf, 1.0], "both", "NaN or infinite"),
])
def test_a_value_that_is_not_finite_never_agrees(actual: object, reference: object, side: str,
                                                  what: str) -> None:
    # NaN - NaN is NaN and NaN <= tol is False, but an inf equal to an inf has a difference
    # of NaN too, and a relative error computed as 0 "agrees": neither may pass
    result = agreement(actual, reference, rtol=1e-6, floor=1.0)
    assert not result.ok and not result and result.error == math.inf
    assert result.nonfinite == side
    reason = result.reason("the GCP's gradient", "the numeric one")
    assert reason is not None
    if side == "both":
        assert reason == "neither the GCP's gradient nor the numeric one is finite"
    else:
        named = "the GCP's gradient" if side == "actual" else "the numeric one"
        assert reason == f"{named} is {what}"


def test_the_first_non_finite_row_is_named() -> None:
    actual = np.array([[1.0], [2.0], [math.nan]])
    result = agreement(actual, np.ones((3, 1)), rtol=1e-6, rows=True)
    assert result.nonfinite == "actual" and result.row == 2


def test_shapes_that_differ_disagree() -> None:
    result = agreement(np.ones((2, 3)), np.ones((3, 2)), rtol=1e-6)
    assert not result.ok and result.shapes == ((2, 3), (3, 2))
    assert result.reason("yours", "the right one") == "yours has shape [2, 3], the right one [3, 2]"


def test_agreement_and_its_reason() -> None:
    ok = agreement(1.0, 1.0, rtol=1e-4)
    assert ok and ok.reason() is None
    off = agreement(1.5, 1.0, rtol=1e-4)
    assert off.error == pytest.approx(0.5)
    assert off.reason("yours", "the right one") == (
        "yours differs from the right one: relative error 0.5 > 0.0001")


@pytest.mark.parametrize("options", [
    {"rtol": -1e-6}, {"rtol": math.nan}, {"rtol": "1e-6"}, {"rtol": True}, {"rtol": [1e-6]},
    {"rtol": 1e-6, "floor": -1.0}, {"rtol": 1e-6, "floor": math.inf},
    {"rtol": 1e-6, "floor": [1.0, 2.0]},
])
def test_bad_tolerances_are_errors(options: dict[str, object]) -> None:
    with pytest.raises(TenFlangError, match=r"must be a finite number >= 0, not"):
        agreement(1.0, 1.0, **options)  # type: ignore[arg-type]


def test_rows_need_rows() -> None:
    with pytest.raises(TenFlangError, match="one number per row"):
        agreement(1.0, 1.0, rtol=1e-6, rows=True)
    with pytest.raises(TenFlangError, match="one number per row"):
        agreement(np.ones(3), np.ones(3), rtol=1e-6, floor=[1.0, 1.0], rows=True)


def test_a_value_against_a_stack_of_references_draw_by_draw() -> None:
    # rows=2: references stacked on axis 0, draws on axis 1, a floor per draw
    value = np.array([[1.0, 2.0], [3.0, 4.0]])  # 2 draws
    stack = np.stack([value, value * (1 + 1e-9), value + np.array([[0.0, 0.0], [0.0, 1.0]])])
    result = agreement(np.broadcast_to(value, stack.shape), stack, rtol=1e-6,
                       floor=[0.0, 0.0], rows=2)
    assert result.each.tolist() == [[True, True], [True, True], [True, False]]
    assert result.row == (2, 1) and not result.ok


def test_values_too_far_apart_to_subtract_disagree_quietly() -> None:
    with np.errstate(all="raise"):  # no overflow warning escapes either
        result = agreement(1e308, -1e308, rtol=1e-6)
        assert not result.ok and result.nonfinite is None
        assert not agreement(1e300, 1e-300, rtol=1e-6).ok
