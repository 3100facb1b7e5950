"""How values are shown (core/formatting.py): each style of a value, and the rules that keep a
stored output the same on every CPU (no '-0', a check report's noise of a zero as 0, tiny
relative errors as '< 1e-06')."""

from __future__ import annotations

import numpy as np
import pytest

from tenflang_nb.core.formatting import (
    NULL,
    STYLES,
    fmt_assignments,
    fmt_list,
    fmt_number,
    fmt_rel_error,
    fmt_seconds,
    fmt_shape,
    fmt_value,
)

NEGATIVE_ZEROS = [-0.0, np.float64(-0.0), np.array(-0.0), np.full((2, 2), -0.0),
                  np.full(7, -0.0), np.full(13, -0.0)]


@pytest.mark.parametrize("style", list(STYLES))
@pytest.mark.parametrize("value", NEGATIVE_ZEROS, ids=lambda v: str(np.shape(v)))
def test_no_style_shows_a_negative_zero(style: str, value: object) -> None:
    # the sign of a zero moves with the BLAS kernel: a stored output must not show it
    text = fmt_value(value, style)  # type: ignore[arg-type]
    assert "-" not in text, text
    assert "0" in text


@pytest.mark.parametrize("notation", ["g", "short", "plain"])
def test_no_notation_shows_a_negative_zero(notation: str) -> None:
    assert fmt_number(-0.0, 3, notation=notation) == "0"  # type: ignore[arg-type]
    assert fmt_number(-1.5, 3, notation=notation) == "-1.5"  # type: ignore[arg-type]


@pytest.mark.parametrize("style", list(STYLES))
def test_null_reads_null_in_every_style(style: str) -> None:
    assert fmt_value(None, style) == NULL == "null"  # type: ignore[arg-type]


def test_a_check_report_shows_the_noise_of_a_zero_as_zero() -> None:
    assert fmt_value(-1e-17, "report") == "0"
    assert fmt_value(np.array([1e-13, -3e-15, 2.0]), "report") == "[0, 0, 2]"
    assert fmt_value(1e-11, "report") == "1e-11"  # above the noise: a value
    assert fmt_value(-1e-17) == "-1e-17"  # tables show what was computed


@pytest.mark.parametrize(("rel", "text"), [
    (0.0, "0"), (3.2e-10, "< 1e-06"), (9.99e-7, "< 1e-06"), (1e-6, "1e-06"),
    (3.4e-5, "3.4e-05"), (0.0123456, "0.012"), (2.0, "2"),
])
def test_relative_errors(rel: float, text: str) -> None:
    assert fmt_rel_error(rel) == text


@pytest.mark.parametrize(("value", "digits", "cell", "label", "step", "report"), [
    (2 / 3, None, "0.666667", "0.6667", "0.6667", "0.6667"),
    (2 / 3, 3, "0.667", "0.667", "0.667", "0.667"),
    ([0.1234567, -2.0], None, "[0.1235, -2]", "[0.12, -2]", "[2] 0.1235, -2", "[0.1235, -2]"),
    ([[1.0, -2.0]], None, "[[1, -2]]", "[[1, -2]]", "[1×2] 1, -2", "[1, -2] (shape [1, 2])"),
    (np.arange(4.0), None, "[0, 1, 2, 3]", "[0, 1, 2, 3]", "[4] 0, 1, 2, 3", "[0, 1, 2, 3]"),
    (np.arange(5.0) / 3, None, "[0, 0.3333, 0.6667, 1, 1.333]", "[0, 0.333, 0.667, …]",
     "[5] 0, 0.3333, 0.6667, …", "[0, 0.3333, 0.6667, 1, ...] (shape [5])"),
    (np.arange(13.0), None, "[0, 1, ..., 11, 12]", "[0, 1, 2, …]", "[13] 0, 1, 2, …",
     "[0, 1, 2, 3, ...] (shape [13])"),
])
def test_each_style_of_a_value(value: object, digits: int | None, cell: str, label: str,
                               step: str, report: str) -> None:
    shown = {s: fmt_value(value, s, digits=digits)  # type: ignore[arg-type]
             for s in ("cell", "label", "step", "report")}
    assert shown == {"cell": cell, "label": label, "step": step, "report": report}


def test_a_weight_is_a_number_or_a_shape_and_norm() -> None:
    assert fmt_value(0.12345678, "weight") == "0.123457"
    assert fmt_value(np.full((2, 2, 2), 0.5), "weight") == "2×2×2 tensor, ‖·‖ = 1.41421"


def test_a_table_cell_also_shows_flags_and_text() -> None:
    assert [fmt_value(v) for v in (True, False, "ok", 3)] == ["yes", "no", "ok", "3"]


@pytest.mark.parametrize(("x", "g", "short", "plain"), [
    (0.0123456, "0.0123", "0.0123", "0.0123"),
    (4.1e-5, "4.1e-05", "4.1e-5", "4.1e-05"),
    (1.23e9, "1.23e+09", "1.23e9", "1,230,000,000"),
    (1234.5, "1.23e+03", "1.23e3", "1,230"),
    (float("inf"), "inf", "inf", "inf"),
    (float("nan"), "nan", "nan", "nan"),
])
def test_notations_of_a_number(x: float, g: str, short: str, plain: str) -> None:
    assert [fmt_number(x, 3, notation=n) for n in ("g", "short", "plain")] == [g, short, plain]


@pytest.mark.parametrize(("seconds", "text"), [
    (12.3, "12 s"), (0.1, "0.1 s"), (0.0999, "100 ms"), (0.00123, "1.2 ms"),
    (0.001, "1 ms"), (7.93e-05, "79 µs"), (0.0, "0 µs"), (1234.0, "1,200 s"),
])
def test_durations(seconds: float, text: str) -> None:
    assert fmt_seconds(seconds) == text


def test_shapes() -> None:
    assert [fmt_shape(s) for s in [(), (3,), (64, 32)]] == ["[]", "[3]", "[64, 32]"]
    assert fmt_shape((64, 32, 1), "dims") == "64×32×1"


def test_lists_in_prose() -> None:
    assert [fmt_list(["a", "b", "c", "d"][:n]) for n in range(5)] == [
        "", "a", "a and b", "a, b and c", "a, b, c and d"]
    assert fmt_list(("x", "y"), "or") == "x or y"


def test_named_values() -> None:
    values = {"x": -0.0, "W": np.arange(6.0).reshape(2, 3)}
    assert fmt_assignments(values) == "x = 0, W = [0, 1, 2, 3, ...] (shape [2, 3])"
    assert fmt_assignments(values, "step") == "x = 0, W = [2×3] 0, 1, 2, …"
