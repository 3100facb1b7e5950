"""Regressions of issue 16 outside the checker: comparisons a NaN passed, output files that
destroyed their inputs, cost's memory, control characters, non-finite intermediates, number
words on the command line. Each test failed before its fix."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import program_text
from helpers_fd import assert_agree

from tenflang_nb.core import gradcheck
from tenflang_nb.notebook.model import TenFlangModel

LN = program_text("declare input x", "declare weight w", "declare intvar a", "declare loss L",
                  "define a = ln w", "define L = mul a x")

# ------------------------------------------------------------------ 1. NaN passes no comparison


@pytest.mark.parametrize(("w", "side"), [
    (-1.0, "the central difference is NaN"),  # ln of a negative number: both sides NaN
    (0.0, "the GCP's gradient is infinite and the central difference is NaN"),
])
def test_gradcheck_fails_on_a_non_finite_side_and_names_it(w: float, side: str) -> None:
    # before: a relative error of 0 came out of a NaN, and the row said "ok"
    model = TenFlangModel(LN, "ln")
    model.weights["w"] = w
    check = model.gradcheck({"x": 1.0})
    assert not check.ok and not check[0]["ok"]
    assert check[0]["problem"] == side
    assert check.max_rel_error == np.inf


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_the_one_agreement_rule_fails_on_non_finite_values(bad: float) -> None:
    for a, b in ((bad, bad), (bad, 1.0), (1.0, bad)):
        rel, ok = gradcheck.agreement(a, b, rtol=1e300, atol=1e300)
        assert not ok and rel == np.inf
        assert not gradcheck.agree([a, 1.0], [b, 1.0], 1e-4, 1e-7)[0]
    assert gradcheck.nonfinite_sides({"GCP": 1.0, "oracle": bad}) == (
        f"oracle is {'NaN' if np.isnan(bad) else 'infinite'}")
    assert gradcheck.nonfinite_sides({"GCP": 1.0, "oracle": 2.0}) is None


def test_the_tests_oracle_fails_on_nan_against_nan() -> None:
    # np.testing.assert_allclose takes NaN == NaN: the helpers use the package's rule
    with pytest.raises(AssertionError, match="the GCP is NaN and the central difference"):
        assert_agree([np.nan], [np.nan], 1e-5, 1e-7, names=("the GCP", "the central difference"))
    with pytest.raises(AssertionError, match="1 of 2 entries disagree"):
        assert_agree([1.0, 2.0], [1.0, 2.1], 1e-5, 1e-7)
    assert_agree([1.0, 2.0], [1.0, 2.0 + 1e-9], 1e-5, 1e-7)
