"""Vector files: brace / CSV / original / npz readers, writers and their error messages."""

from __future__ import annotations

import doctest
import importlib
import io
import math
import pkgutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import hypothesis_settings
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tenflang_nb.core import datafiles
from tenflang_nb.core.datafiles import (
    FORMATS,
    DataFormat,
    DataTable,
    format_record,
    format_table,
    format_value,
    from_columns,
    from_records,
    output_format,
    parse_data,
    read_data,
)
from tenflang_nb.core.errors import TenFlangError


def rows(table: DataTable) -> list[dict[str, object]]:
    """Every vector, with arrays as nested lists so that == compares values."""
    return [
        {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in table.record(i).items()}
        for i in range(len(table))
    ]


def error_of(text: str, fmt: str | None = None) -> TenFlangError:
    with pytest.raises(TenFlangError) as info:
        parse_data(text, "data.txt", fmt)
    return info.value


def assert_located(err: TenFlangError, message: str, line: int, column: int) -> None:
    """The message, the line and the caret column, as the user sees them."""
    d = err.first
    assert message in d.message
    assert d.line == line
    assert d.column == column
    rendered = str(err)
    assert rendered.startswith(f"data.txt: line {line}: error: ")
    source, caret = rendered.split("\n")[1:3]
    shown = d.source.expandtabs(1)
    assert source == "    " + (shown if len(shown) <= 200 else shown[:200] + " ...")
    assert caret == "    " + " " * column + "^" * max(1, min(d.length, 80))


# ---------------------------------------------------------------------------------------
# brace notation


def test_brace_scalars_names_lines_and_nulls() -> None:
    text = "# inputs\n{x: 3, w: -2}\n\n   # another comment\n{x: 1.5e-3, y: null}\n{}\n"
    t = parse_data(text, "in.txt")
    assert t.file == "in.txt"
    assert len(t) == 3
    assert t.names == ["x", "w", "y"]
    assert t.lines.tolist() == [2, 5, 6]
    assert rows(t) == [{"x": 3.0, "w": -2.0}, {"x": 0.0015, "y": None}, {}]
    np.testing.assert_array_equal(t.columns["x"], [3.0, 0.0015, np.nan])
    np.testing.assert_array_equal(t.columns["y"], [np.nan, np.nan, np.nan])
    assert t.present["x"].tolist() == [True, True, False]
    assert t.present["w"].tolist() == [True, False, False]
    assert t.present["y"].tolist() == [False, False, False]
    assert t.nulls["y"].tolist() == [False, True, False]
    assert t.columns["x"].dtype == np.float64
    assert t.shape("x") == () and t.shape("y") == ()
    assert type(t.record(0)["x"]) is float


def test_brace_whitespace_between_all_tokens() -> None:
    t = parse_data("  {  x :3 ,w:-2,W : [ [1,2] ,[ 3 , 4 ] ] }  \t\n{x:1}")
    assert rows(t) == [{"x": 3.0, "w": -2.0, "W": [[1.0, 2.0], [3.0, 4.0]]}, {"x": 1.0}]


@pytest.mark.parametrize(
    ("literal", "value"),
    [("3", 3.0), ("-1.5", -1.5), ("+2", 2.0), ("3e-2", 0.03), (".5", 0.5), ("19.20", 19.2),
     ("1.", 1.0), ("-0", -0.0), ("2E+3", 2000.0), ("007", 7.0)],
)
def test_brace_number_literals(literal: str, value: float) -> None:
    got = parse_data(f"{{x: {literal}}}").record(0)["x"]
    assert got == value
    assert math.copysign(1, got) == math.copysign(1, value)


def test_brace_tensors() -> None:
    t = parse_data("{W: [[1, 2], [3, 4]], b: [0.5, -1]}\n{W: [[5, 6], [7, 8]], b: null}\n")
    assert t.shape("W") == (2, 2)
    assert t.shape("b") == (2,)
    assert t.columns["W"].shape == (2, 2, 2)
    assert t.columns["W"][1].tolist() == [[5.0, 6.0], [7.0, 8.0]]
    assert np.isnan(t.columns["b"][1]).all()
    assert t.present["b"].tolist() == [True, False]
    v = t.record(0)
    assert isinstance(v["W"], np.ndarray) and v["W"].dtype == np.float64
    assert v["b"].tolist() == [0.5, -1.0]
    assert t.record(1)["b"] is None
    # vector() hands out copies: changing one leaves the table alone
    v["W"][0, 0] = 99.0
    assert t.columns["W"][0, 0, 0] == 1.0


def test_brace_deep_and_empty_lists() -> None:
    t = parse_data("{T: [[[1], [2]], [[3], [4]], [[5], [6]]], e: []}")
    assert t.shape("T") == (3, 2, 1)
    assert t.record(0)["T"][2, 1, 0] == 6.0
    assert t.shape("e") == (0,)


def test_brace_generated_names() -> None:
    t = parse_data("{d/L/d/x:1: 2, d/L/d/w: 3, w.0: 4, _a: 5, b.: 6}\n{d/L/d/y:1}\n")
    assert t.names == ["d/L/d/x:1", "d/L/d/w", "w.0", "_a", "b.", "d/L/d/y"]
    # without a second ':' the digits after a generated name are its value
    assert rows(t)[1] == {"d/L/d/y": 1.0}
    assert rows(t)[0]["d/L/d/x:1"] == 2.0


def test_brace_vector_index_bounds() -> None:
    t = parse_data("{x: 1}\n{x: 2}")
    assert t.record(-1) == {"x": 2.0}
    with pytest.raises(IndexError):
        t.record(2)


def test_crlf_and_lone_cr_are_tolerated() -> None:
    assert rows(parse_data("{x: 1}\r\n{x: 2}\r\n")) == [{"x": 1.0}, {"x": 2.0}]
    assert rows(parse_data("{x: 1}\r{x: 2}\r")) == [{"x": 1.0}, {"x": 2.0}]
    assert rows(parse_data("x,y\r\n1,2\r\n")) == [{"x": 1.0, "y": 2.0}]
    assert rows(parse_data("a\t1\r\nb\t2\r\n")) == [{"a": 1.0, "b": 2.0}]


BRACE_ERRORS = [
    # text, message, line, caret column
    ("{x 3}", "expected ':' after name 'x', found '3'", 1, 3),
    ("{x: 1}\n{x: 3 4}", "expected ',' or '}' after the value of 'x', found '4'", 2, 6),
    ("{x: 3", "unterminated record: expected ',' or '}' after the value of 'x'", 1, 5),
    ("{x: ", "unterminated record: expected a value for 'x'", 1, 3),
    ("{x: [1, 2", "unterminated list: expected ',' or ']' in the list of 'x'", 1, 9),
    ("{x: [1, 2}", "expected ',' or ']' in the list of 'x', found '}'", 1, 9),
    ("{x: }", "expected a value for 'x', found '}'", 1, 4),
    ("{: 1}", "expected a name, found ':'", 1, 1),
    ("{x: 1,, y: 2}", "expected a name after ',', found ','", 1, 6),
    ("{x: 1}\ny: 2", "expected '{' at the start of a record, found 'y'", 2, 0),
    ("{x: 1} {y: 2}", "unexpected '{' after the end of the record", 1, 7),
    ("{x: 1,}", "trailing comma before '}'", 1, 5),
    ("{x: 1, }", "trailing comma before '}'", 1, 5),
    ("{x: [1, 2,]}", "trailing comma before ']'", 1, 9),
    ("{x: abc}", "value of 'x' is not a number: 'abc'", 1, 4),
    ("{x: 1, y: 0x10}", "value of 'y' is not a number: '0x10'", 1, 10),
    ("{x: 1_000}", "value of 'x' is not a number: '1_000'", 1, 4),
    ("{x: 1e}", "value of 'x' is not a number: '1e'", 1, 4),
    ("{x: [1, abc]}", "value of 'x' is not a number: 'abc'", 1, 8),
    ("{x: inf}", "value of 'x' is not finite: 'inf'", 1, 4),
    ("{x: -Infinity}", "value of 'x' is not finite: '-Infinity'", 1, 4),
    ("{x: nan}", "value of 'x' is not finite: 'nan'", 1, 4),
    ("{x: [1, 1e999]}", "value of 'x' is not finite: '1e999'", 1, 8),
    ("{x: 1, x: 2}", "duplicate name 'x' in this record", 1, 7),
    ("{W: [[1, 2], [3, 4, 5]]}", "ragged list: rows of lengths 2 and 3", 1, 13),
    ("{W: [[[1, 2]], [[3]]]}", "ragged list: rows of lengths 2 and 1", 1, 15),
    ("{W: [1, [2]]}", "ragged list: mixes numbers and lists", 1, 8),
    ("{W: [1, null]}", "null is not allowed inside a list", 1, 8),
    ("{3x: 1}", "bad name '3x'", 1, 1),
    ("{a-b: 1}", "bad name 'a-b'", 1, 1),
    ("{x: 1}\n# c\n{x: [1]}", "'x' has shape [1] here but [] on line 1", 3, 1),
    ("{W: [[1, 2], [3, 4]]}\n{q: 1, W: [3, 4, 5]}",
     "'W' has shape [3] here but [2, 2] on line 1", 2, 7),
    # a tensor has at most MAX_SHAPE_RANK = 4 dimensions: the caret is on the fifth '['
    ("{x: " + "[" * 40 + "1" + "]" * 40 + "}", "list nested too deeply", 1, 8),
    ("{x: [[[[[1]]]]]}", "list nested too deeply (a tensor has at most 4 dimensions)", 1, 8),
]


@pytest.mark.parametrize(("text", "message", "line", "column"), BRACE_ERRORS)
def test_brace_errors(text: str, message: str, line: int, column: int) -> None:
    assert_located(error_of(text), message, line, column)


def test_brace_null_only_name_and_null_does_not_fix_a_shape() -> None:
    t = parse_data("{W: null}\n{W: [1, 2]}\n{W: null}")
    assert t.shape("W") == (2,)
    assert rows(t) == [{"W": None}, {"W": [1.0, 2.0]}, {"W": None}]
    only_null = parse_data("{z: null}")
    assert only_null.shape("z") == ()
    assert only_null.record(0) == {"z": None}


# ---------------------------------------------------------------------------------------
# writing and round trips

EXACT = [0.1, 1e-300, -2.5e17, 5e-324, 1.7976931348623157e308, -0.0, 1 / 3, 2.0**-1074 * 3,
         123456789.123456789, -1e-5]


def test_format_value_and_vector() -> None:
    assert format_value(0.1) == "0.1"
    assert format_value(3) == "3.0"
    assert format_value(np.float64(1e-300)) == "1e-300"
    assert format_value(np.float32(0.5)) == "0.5"
    assert format_value(None) == "null"
    assert format_value(np.array([[1, 2], [3, 4]])) == "[[1.0, 2.0], [3.0, 4.0]]"
    assert format_value(np.array([0.1, -2.5e17])) == "[0.1, -2.5e+17]"
    assert format_value([1, [2, 3]][1]) == "[2.0, 3.0]"
    assert format_value(np.array(2.5)) == "2.5"
    assert format_record({"x": 3.0, "w": -2.0, "y": None}) == "{x: 3.0, w: -2.0, y: null}"
    assert format_record({}) == "{}"
    assert format_record({"d/L/d/x:1": np.array([1.0])}) == "{d/L/d/x:1: [1.0]}"


def test_round_trip_scalars_exactly() -> None:
    vecs = [{"x": v, "y": -v} for v in EXACT]
    t = parse_data("\n".join(format_record(v) for v in vecs))
    for i, v in enumerate(EXACT):
        got = t.record(i)
        assert got["x"] == v and got["y"] == -v
        assert math.copysign(1, got["x"]) == math.copysign(1, v)


def test_round_trip_tensors_and_nulls() -> None:
    W = np.array([[0.1, 1e-300], [-2.5e17, 7.0], [1 / 3, -0.0]])
    original = {"W": W, "b": np.array([0.2, 0.3]), "n": None, "s": 0.1}
    t = parse_data(format_record(original) + "\n" + format_record({"W": W * 2, "b": None}))
    back = t.record(0)
    assert np.array_equal(back["W"], W)
    assert np.array_equal(back["b"], [0.2, 0.3])
    assert back["n"] is None and back["s"] == 0.1
    assert list(back) == ["W", "b", "n", "s"]
    assert np.array_equal(t.record(1)["W"], W * 2)
    assert t.record(1)["b"] is None


finite = st.floats(allow_nan=False, allow_infinity=False)


@hypothesis_settings(200)
@given(st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,6}", fullmatch=True),
                       st.one_of(st.none(), finite), min_size=0, max_size=5))
def test_round_trip_property_scalars(values: dict[str, float | None]) -> None:
    back = parse_data(format_record(values)).record(0)
    assert back == values
    assert list(back) == list(values)


@hypothesis_settings(100)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                  elements=finite))
def test_round_trip_property_tensors(arr: np.ndarray) -> None:
    back = parse_data(format_record({"T": arr})).record(0)["T"]
    assert back.shape == arr.shape
    assert np.array_equal(back, arr)
    # and through a one-example CSV written by hand from the same numbers
    header = ",".join("T" + "".join(f"[{k}]" for k in ix) for ix in np.ndindex(*arr.shape))
    cells = ",".join(repr(float(arr[ix])) for ix in np.ndindex(*arr.shape))
    via_csv = parse_data(f"{header}\n{cells}\n", format="csv").record(0)["T"]
    assert np.array_equal(via_csv, arr)


# ---------------------------------------------------------------------------------------
# CSV


def test_csv_scalars_spaces_and_nulls() -> None:
    text = "# header next\nx, y ,z\n1, 2 ,3\n\n 4 ,,null\n-0.5,NULL, Null \n"
    t = parse_data(text, "d.csv")
    assert t.names == ["x", "y", "z"]
    assert t.lines.tolist() == [3, 5, 6]
    assert rows(t) == [
        {"x": 1.0, "y": 2.0, "z": 3.0},
        {"x": 4.0, "y": None, "z": None},
        {"x": -0.5, "y": None, "z": None},
    ]
    assert t.present["y"].tolist() == [True, False, False]
    np.testing.assert_array_equal(t.columns["y"], [2.0, np.nan, np.nan])


def test_csv_quoted_cells() -> None:
    t = parse_data('"x","y"\n" 1.5 ",2\n3,""\n')
    assert rows(t) == [{"x": 1.5, "y": 2.0}, {"x": 3.0, "y": None}]


def test_csv_vector_columns() -> None:
    t = parse_data("x[0],x[1],x[2],y\n1,2,3,4\n,,,5\n")
    assert t.names == ["x", "y"]
    assert t.shape("x") == (3,)
    assert rows(t) == [{"x": [1.0, 2.0, 3.0], "y": 4.0}, {"x": None, "y": 5.0}]
    assert t.present["x"].tolist() == [True, False]


def test_csv_matrix_columns_in_any_order() -> None:
    # W[i][j] cells are placed by their indices, not by the header's order
    t = parse_data("W[1][0],b,W[0][1],W[0][0],W[1][1],W[0][2],W[1][2]\n4,9,2,1,5,3,6\n")
    assert t.names == ["W", "b"]
    assert t.shape("W") == (2, 3)
    assert t.record(0)["W"].tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert t.record(0)["b"] == 9.0


def test_csv_generated_names() -> None:
    t = parse_data("d/L/d/x:1,d/L/d/W[0],d/L/d/W[1]\n1,2,3\n")
    assert rows(t) == [{"d/L/d/x:1": 1.0, "d/L/d/W": [2.0, 3.0]}]


def test_csv_single_column() -> None:
    t = parse_data("x\n1\nnull\n2\n")
    assert rows(t) == [{"x": 1.0}, {"x": None}, {"x": 2.0}]


CSV_ERRORS = [
    ("x,y\n1,2\n1,2,3\n", "row has 3 cells, the header has 2", 3, 4),
    ("x,y\n1\n", "row has 1 cell, the header has 2", 2, 1),
    ("x,y\n1, abc\n", "value of 'y' is not a number: 'abc'", 2, 3),
    ("x[0],x[1]\n1,2\n1,two\n", "value of 'x[1]' is not a number: 'two'", 3, 2),
    ("x,y\n1,inf\n", "value of 'y' is not finite: 'inf'", 2, 2),
    ("x,y\n1,0x1p3\n", "value of 'y' is not a number: '0x1p3'", 2, 2),
    ("x,y\n1,1e400\n", "value of 'y' is not finite: '1e400'", 2, 2),
    ("x,y\n1,1_0\n", "value of 'y' is not a number: '1_0'", 2, 2),
    ("x,y\n1,2\n3, +\n", "value of 'y' is not a number: '+'", 3, 3),
    ("x,y\n1,2\n3,1e\n", "value of 'y' is not a number: '1e'", 3, 2),
    ("x,y\n1,\u0661\n", "value of 'y' is not a number: '\u0661'", 2, 2),
    ("x, y ,x\n1,2,3\n", "duplicate column name 'x'", 1, 6),
    ("x[0],x[0]\n1,2\n", "duplicate column name 'x[0]'", 1, 5),
    ("x,y z\n1,2\n", "bad column name 'y z'", 1, 2),
    ("x,3y\n1,2\n", "bad column name '3y'", 1, 2),
    ("x,\n1,2\n", "empty column name", 1, 2),
    ("x[0],x[2],y\n1,2,3\n", "column 'x[1]' is missing", 1, 0),
    ("q,W[0][0],W[1][1]\n1,2,3\n", "column 'W[0][1]' is missing", 1, 2),
    ("x,x[0]\n1,2\n", "'x' is given both as one column and as tensor cells", 1, 2),
    ("W[0],W[0][1]\n1,2\n", "column 'W[0][1]' has 2 indices but 'W[0]' has 1", 1, 5),
    ("x[0],x[1]\n1,2\n3,\n", "tensor 'x' is partly null in this row ('x[1]'", 3, 2),
    ('x,"y\n1,2\n', "unbalanced '\"' in this line", 1, 2),
    ("x,y\n", "no records in this file (only a header line)", 1, 0),
]


@pytest.mark.parametrize(("text", "message", "line", "column"), CSV_ERRORS)
def test_csv_errors(text: str, message: str, line: int, column: int) -> None:
    assert_located(error_of(text, "csv"), message, line, column)


def test_csv_error_found_by_detection_too() -> None:
    err = error_of("a,b\n1,2\n3,4\n5,6,7\n")
    assert err.first.line == 4
    assert "row has 3 cells, the header has 2" in err.first.message


def test_original_shared_a_to_z(original_dir: Path) -> None:
    t = read_data(original_dir / "interpreter_inputs_a_to_z.txt")
    assert len(t) == 1
    assert t.lines.tolist() == [1]
    assert t.names == [chr(ord("a") + k) for k in range(26)]
    assert t.record(0) == {chr(ord("a") + k): float(k + 1) for k in range(26)}


def test_original_shared_macros_vectors_dot(original_dir: Path) -> None:
    t = read_data(original_dir / "macros_vectors_dot_inputs.txt")
    assert len(t) == 1
    assert t.record(0) == {
        "a.0": 1.0, "a.1": 2.0, "a.2": 1.0,
        "b.0": 1.0, "b.1": 2.0, "b.2": -1.0,
        "c.0": 2.0, "c.1": 4.0, "c.2": 6.0,
        "d.0": 1.0, "d.1": 3.0, "d.2": 5.0,
        "e.0": 1.0, "e.1": 2.0, "e.2": 3.0,
        "f.0": 2.0, "f.1": 3.0, "f.2": 4.0,
    }


def test_original_shared_v0_linear(original_dir: Path) -> None:
    t = read_data(original_dir / "v0_linear_sqloss_inputs.txt")
    assert t.record(0) == {"x": 1.0, "w": 2.0, "y": 4.0}
    assert t.names == ["x", "w", "y"]


def test_original_tabs_spaces_and_comments() -> None:
    t = parse_data("# weights\n\nw\t0.5\n  b   -2.3  \nd/L/d/w:1 19.20\n", "w.txt")
    assert rows(t) == [{"w": 0.5, "b": -2.3, "d/L/d/w:1": 19.2}]
    assert t.lines.tolist() == [3]


ORIGINAL_ERRORS = [
    ("a\t1\nb\t2\na\t3\n", "'a' given twice (first on line 1)", 3, 0),
    ("a 1\nb two\n", "value of 'b' is not a number: 'two'", 2, 2),
    ("a 1\nb nan\n", "value of 'b' is not finite: 'nan'", 2, 2),
    ("a 1\nb [1, 2]\n", "expected a name and a number separated by a tab or spaces", 2, 6),
    ("a 1\nb\n", "expected a name and a number separated by a tab or spaces (found 1 item)", 2, 1),
    ("a 1\n3b 2\n", "bad name '3b'", 2, 0),
    ("a 1\nb null\n", "value of 'b' is not a number: 'null'", 2, 2),
]


@pytest.mark.parametrize(("text", "message", "line", "column"), ORIGINAL_ERRORS)
def test_original_errors(text: str, message: str, line: int, column: int) -> None:
    assert_located(error_of(text), message, line, column)


# ---------------------------------------------------------------------------------------
# detection, formats, files


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# c\n{x: 1}\n", [{"x": 1.0}]),
        ("x 1\ny\t2\n", [{"x": 1.0, "y": 2.0}]),
        ("x,y\n1,2\n", [{"x": 1.0, "y": 2.0}]),
        ("x\n1\n", [{"x": 1.0}]),  # one token per line: a one-column CSV
        ("x y\n", None),  # two names: not original, and 'x y' is no CSV header either
    ],
)
def test_detection(text: str, expected: list[dict[str, float]] | None) -> None:
    if expected is None:
        assert "bad column name 'x y'" in error_of(text).first.message
    else:
        assert rows(parse_data(text)) == expected


def test_explicit_format_overrides_detection() -> None:
    # as CSV, "a 1" is a header with a bad name
    assert "bad column name 'a 1'" in error_of("a 1\n", "csv").first.message
    assert_located(error_of("x: 1}", "brace"), "expected '{' at the start of a record", 1, 0)
    assert "expected '{'" in error_of("x,y\n1,2\n", "brace").first.message
    assert "bad name '{x:'" in error_of("{x: 1}\n", "original").first.message
    assert rows(parse_data("x 1\n", format="original")) == [{"x": 1.0}]


@pytest.mark.parametrize("text", ["", "\n\n", "# only\n  # comments\n\n", "   \n\t\n"])
def test_empty_file(text: str) -> None:
    err = error_of(text)
    assert err.first.message == "no records in this file"
    assert err.first.line == 0
    assert str(err) == "data.txt: error: no records in this file"


def test_unknown_format_and_npz_text() -> None:
    err = error_of("{x: 1}", "json")
    assert "unknown data file format 'json'" in err.first.message
    assert "npz is a binary format" in error_of("{x: 1}", "npz").first.message


def test_read_data_by_extension(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("{x: 1}\n{x: 2}\n")
    (tmp_path / "b.csv").write_text("x,y\r\n1,2\r\n")
    (tmp_path / "c.dat").write_bytes(b"\xef\xbb\xbfa\t1\r\nb\t2\r\n")  # BOM + CRLF
    assert rows(read_data(tmp_path / "a.txt")) == [{"x": 1.0}, {"x": 2.0}]
    b = read_data(str(tmp_path / "b.csv"))
    assert rows(b) == [{"x": 1.0, "y": 2.0}]
    assert b.file == str(tmp_path / "b.csv")
    assert rows(read_data(tmp_path / "c.dat")) == [{"a": 1.0, "b": 2.0}]
    # a .csv file is read as CSV even when it would be detected as the original format
    (tmp_path / "d.csv").write_text("a 1\n")
    with pytest.raises(TenFlangError, match="bad column name 'a 1'"):
        read_data(tmp_path / "d.csv")
    assert rows(read_data(tmp_path / "d.csv", format="original")) == [{"a": 1.0}]


def test_read_data_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(TenFlangError) as info:
        read_data(tmp_path / "missing.txt")
    assert info.value.first.message == "no such file"
    bad = tmp_path / "bad.txt"
    bad.write_text("{x: 1}\n{x: [1}\n")
    with pytest.raises(TenFlangError) as info:
        read_data(bad)
    assert info.value.first.file == str(bad)
    assert info.value.first.line == 2
    assert f"{bad}: line 2: error:" in str(info.value)


# ---------------------------------------------------------------------------------------
# npz


def test_npz(tmp_path: Path) -> None:
    path = tmp_path / "w.npz"
    W = np.arange(12.0).reshape(2, 2, 3)
    np.savez(path, x=np.array([1.0, np.nan]), W=W, n=np.array([3, 4], dtype=np.int32))
    t = read_data(path)
    assert len(t) == 2
    assert t.lines.tolist() == [0, 0]
    assert sorted(t.names) == ["W", "n", "x"]
    assert t.shape("W") == (2, 3)
    assert np.array_equal(t.record(1)["W"], W[1])
    assert t.record(1)["x"] is None
    assert t.record(0)["x"] == 1.0
    assert t.record(1)["n"] == 4.0 and t.columns["n"].dtype == np.float64
    assert t.present["x"].tolist() == [True, False]
    # format="npz" works whatever the extension
    other = tmp_path / "weights.bin"
    other.write_bytes(path.read_bytes())
    assert np.array_equal(read_data(other, format="npz").columns["W"], W)


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"x": np.array(1.0)}, "array 'x' is 0-d: its first axis must be the example"),
        ({"x": np.zeros(2), "y": np.zeros(3)}, "array 'y' has 3 examples but 'x' has 2"),
        ({"x": np.array(["a", "b"])}, "value of 'x' at position 0 of the array is not a number"),
        ({"x": np.array([1.0, np.inf])}, "value of 'x' at position 1 of the array is not finite"),
        ({"x": np.zeros(0)}, "no records in this data"),
    ],
)
def test_npz_errors(tmp_path: Path, arrays: dict[str, np.ndarray], message: str) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)  # type: ignore[arg-type]
    with pytest.raises(TenFlangError) as info:
        read_data(path)
    assert message in info.value.first.message
    assert info.value.first.file == str(path)
    assert info.value.first.line == 0


def test_npz_not_an_archive(tmp_path: Path) -> None:
    text = tmp_path / "t.npz"
    text.write_text("{x: 1}\n")
    with pytest.raises(TenFlangError, match=r"not a valid \.npz file"):
        read_data(text)
    objects = tmp_path / "o.npz"
    np.savez(objects, x=np.array([1, None], dtype=object))
    with pytest.raises(TenFlangError, match=r"not a valid \.npz file"):
        read_data(objects)
    single = tmp_path / "s.npz"
    with open(single, "wb") as handle:
        np.save(handle, np.zeros(3))
    with pytest.raises(TenFlangError, match=r"not an \.npz archive"):
        read_data(single)
    with pytest.raises(TenFlangError, match="no such file"):
        read_data(tmp_path / "none.npz")


# ---------------------------------------------------------------------------------------
# Python data


def test_from_records() -> None:
    t = from_records(
        [
            {"x": 1, "W": [[1, 2]], "y": np.float32(0.5)},
            {"x": None, "z": float("nan")},
            {"W": np.array([[3.0, 4.0]]), "x": np.int64(7)},
        ],
        file="mem",
    )
    assert t.file == "mem"
    assert t.names == ["x", "W", "y", "z"]
    assert t.lines.tolist() == [0, 0, 0]
    assert t.shape("W") == (1, 2)
    assert rows(t) == [
        {"x": 1.0, "W": [[1.0, 2.0]], "y": 0.5},
        {"x": None, "z": None},  # NaN (pandas' "missing") is null
        {"x": 7.0, "W": [[3.0, 4.0]]},
    ]
    assert t.present["W"].tolist() == [True, False, True]
    assert t.nulls["x"].tolist() == [False, True, False]
    assert len(from_records([{}])) == 1


def test_from_records_does_not_alias_input() -> None:
    arr = np.array([1.0, 2.0])
    t = from_records([{"v": arr}])
    arr[0] = 5.0
    assert t.record(0)["v"].tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([{"x": "a"}], "value of 'x' in records[0] is not a number: 'a'"),
        ([{"x": 1}, {"x": [[1, 2], [3]]}], "value of 'x' in records[1]: ragged list: rows of "
                                           "lengths 2 and 1"),
        ([{"x": [1, None]}], "value of 'x' in records[0]: null is not allowed inside a list"),
        ([{"x": [1, "a"]}], "value of 'x' in records[0] is not a number"),
        ([{"x": 1}, {"x": [1]}], "'x' has shape [1] in records[1] but [] in records[0]"),
        ([{"x": float("inf")}], "value of 'x' in records[0] is not finite"),
        ([{"x": [1.0, np.nan]}], "value of 'x' in records[0] is partly NaN"),
        ([{"bad name": 1}], "bad name 'bad name' in records[0]"),
        ([{3: 1}], "bad name '3' in records[0]"),
        ([], "no records in this data"),
        ({"x": [1]}, "from_records needs a list of dicts"),
        ([[1, 2]], "records[0] is not a dict"),
    ],
)
def test_from_records_errors(records: object, message: str) -> None:
    with pytest.raises(TenFlangError) as info:
        from_records(records)  # type: ignore[arg-type]
    assert message in info.value.first.message
    assert info.value.first.line == 0


def test_from_columns() -> None:
    t = from_columns(
        {"x": [1, None, 3], "W": [[1, 2], None, [3, 4]], "M": np.ones((3, 2, 2)),
         "y": np.array([0.5, np.nan, 2.0])},
        file="cols",
    )
    assert len(t) == 3
    assert t.names == ["x", "W", "M", "y"]
    assert t.shape("W") == (2,) and t.shape("M") == (2, 2)
    assert rows(t)[1] == {"x": None, "W": None, "M": [[1.0, 1.0], [1.0, 1.0]], "y": None}
    assert rows(t)[2]["W"] == [3.0, 4.0]
    assert t.present["y"].tolist() == [True, False, True]
    assert t.lines.tolist() == [0, 0, 0]


def test_from_columns_copies_the_arrays() -> None:
    arr = np.array([1.0, 2.0])
    t = from_columns({"x": arr})
    arr[0] = 9.0
    assert t.columns["x"].tolist() == [1.0, 2.0]


class FakeFrame:
    """Just the part of a pandas DataFrame that from_columns uses: items() of columns."""

    def __init__(self, data: dict[str, list[float]]) -> None:
        self.data = data

    def items(self) -> Iterator[tuple[str, np.ndarray]]:
        return ((k, np.array(v)) for k, v in self.data.items())


def test_from_columns_dataframe_like() -> None:
    t = from_columns(FakeFrame({"x": [1.0, float("nan")], "y": [3.0, 4.0]}))
    assert rows(t) == [{"x": 1.0, "y": 3.0}, {"x": None, "y": 4.0}]


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"x": [1, 2], "y": [1, 2, 3]}, "column 'y' has 3 examples but 'x' has 2"),
        ({"x": 5}, "column 'x' is 0-d"),
        ({"x": [1, "a"]}, "value of 'x' at position 1 of the column is not a number: 'a'"),
        ({"x": ["1", "2"]}, "value of 'x' at position 0 of the column is not a number: '1'"),
        ({"x": [[1, 2], [3]]}, "value of 'x' has shape [1] at position 1 of the column but [2]"),
        ({"x": [[1, 2], [3, np.nan]]}, "value of 'x' at position 1 of the column is partly NaN"),
        ({"x": [1, np.inf]}, "value of 'x' at position 1 of the column is not finite"),
        ({"x y": [1]}, "bad column name 'x y'"),
        ({}, "no records in this data"),
        ({"x": []}, "no records in this data"),
        ([1, 2], "from_columns needs a dict of columns"),
    ],
)
def test_from_columns_errors(columns: object, message: str) -> None:
    with pytest.raises(TenFlangError) as info:
        from_columns(columns)  # type: ignore[arg-type]
    assert message in info.value.first.message


def test_table_built_by_hand() -> None:
    t = DataTable(
        file="hand", names=["x"], columns={"x": np.array([1.0, np.nan])},
        present={"x": np.array([True, False])}, lines=[0, 0],
    )
    assert len(t) == 2
    assert t.record(0) == {"x": 1.0}
    assert t.record(1) == {}  # without nulls a missing value counts as absent
    assert t.shape("x") == ()


def test_docstring_examples() -> None:
    # the package's own (the public functions) and every submodule's (DataTable's, ...)
    submodules = [importlib.import_module(f"{datafiles.__name__}.{info.name}")
                  for info in pkgutil.iter_modules(datafiles.__path__)]
    result = doctest.testmod(datafiles, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 9
    assert result.failed == 0
    results = [doctest.testmod(module, optionflags=doctest.ELLIPSIS) for module in submodules]
    assert sum(r.attempted for r in results) >= 4
    assert all(r.failed == 0 for r in results)


# ---------------------------------------------------------------------------------------
# reliability: a name that is only ever null has no shape (it fits any declared shape)

Y2 = ("declare input x\ndeclare exp_output y [2]\ndeclare weight w [2]\ndeclare output o [2]\n"
      "declare intvar d [2]\ndeclare intvar s\ndeclare loss L\ndefine o = mul x w\n"
      "define d = sub o y\ndefine s = sum d\ndefine L = mul s s\n")


@pytest.mark.parametrize(
    ("make", "fixed"),
    [
        (lambda: parse_data("{x: 1, y: null}\n{x: 2, y: NULL}"), False),
        (lambda: parse_data("x,y\n1,\n2,null\n"), False),
        (lambda: parse_data("x,y[0],y[1]\n1,,\n"), True),  # the header spells out [2]
        (lambda: from_records([{"x": 1, "y": None}]), False),
        (lambda: from_columns({"x": [1, 2], "y": [None, None]}), False),
        (lambda: from_columns({"x": [1, 2], "y": np.array([np.nan, np.nan])}), False),
        (lambda: from_columns({"x": [1, 2], "y": np.full((2, 2), np.nan)}), True),
        (lambda: parse_data("{y: null}\n{y: [1, 2]}"), True),
    ],
)
def test_a_name_only_ever_null_fixes_no_shape(make: object, fixed: bool) -> None:
    t = make()  # type: ignore[operator]
    assert t.fixes_shape("y") is fixed
    assert t.record(0)["y"] is None


@pytest.mark.parametrize(
    "inputs",
    ["{x: 1, y: null}\n{x: 2, y: [2, 2]}\n", "x,y[0],y[1]\n1,,\n2,2,2\n",
     [{"x": 1, "y": None}, {"x": 2, "y": [2, 2]}], {"x": [1, 2], "y": [None, [2, 2]]}],
)
def test_null_tensor_expected_output_gives_a_null_loss(inputs: object) -> None:
    from tenflang_nb.core import api
    program = api.parse(Y2, "p.tf")
    data = parse_data(inputs) if isinstance(inputs, str) else inputs
    results = api.evaluate(program, data, {"w": np.array([1.0, 1.0])})
    assert results[0]["L"] is None
    assert results[1]["L"] == 0.0
    only_null = api.evaluate(program, parse_data("{x: 3, y: null}"), {"w": np.ones(2)})
    assert only_null[0]["L"] is None and only_null[0]["o"].tolist() == [3.0, 3.0]


def test_a_null_tensor_weight_is_a_missing_weight_not_a_shape_error() -> None:
    from tenflang_nb.core import api
    from tenflang_nb.core.bindings import weight_record
    program = api.parse(Y2, "p.tf")
    assert weight_record(program, parse_data("{w: null}")) == {}
    with pytest.raises(TenFlangError, match="has shape \\[\\] here"):
        weight_record(program, parse_data("{w: 3}"))  # a value does fix the shape


# ---------------------------------------------------------------------------------------
# reliability: limits on shapes (a tensor has at most 4 dimensions, the header's columns)

LIMIT_ERRORS = [
    ("x[99999999999999999999]\n1\n",
     "index 99999999999999999999 in column 'x[99999999999999999999]' is out of range: the "
     "header has 1 column", 1, 0),
    ("y,x[" + "9" * 5000 + "]\n1,2\n", "is out of range: the header has 2 columns", 1, 2),
    ("x[0],x[3]\n1,2\n", "index 3 in column 'x[3]' is out of range", 1, 5),
    ("x" + "[0]" * 68 + "\n1\n", "has 68 indices: a tensor has at most 4 dimensions", 1, 0),
    ("a,x[0][0][0][0][0]\n1,2\n", "column 'x[0][0][0][0][0]' has 5 indices", 1, 2),
]


@pytest.mark.parametrize(("text", "message", "line", "column"), LIMIT_ERRORS)
def test_csv_header_limits(text: str, message: str, line: int, column: int) -> None:
    assert_located(error_of(text, "csv"), message, line, column)


def test_four_dimensions_are_fine_everywhere(tmp_path: Path) -> None:
    assert parse_data("x[0][0][0][0],x[0][0][0][1]\n1,2\n").shape("x") == (1, 1, 1, 2)
    assert parse_data("{x: [[[[1, 2]]]]}").shape("x") == (1, 1, 1, 2)
    assert from_records([{"x": [[[[1, 2]]]]}]).shape("x") == (1, 1, 1, 2)
    assert from_columns({"x": np.zeros((3, 1, 1, 1, 2))}).shape("x") == (1, 1, 1, 2)
    np.savez(tmp_path / "a.npz", x=np.zeros((3, 2, 2, 2, 2)), y=np.zeros((3, 1, 1, 1, 1, 1)))
    with pytest.raises(TenFlangError, match="array 'y' has 5 dimensions per example"):
        read_data(tmp_path / "a.npz")


# ---------------------------------------------------------------------------------------
# reliability: Python values of every kind give a table or a clear error

DEEP: list = [1.0]
for _ in range(10_000):
    DEEP = [DEEP]


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([{"x": 10**400}], "value of 'x' in records[0] is too large for a 64-bit float: "
                           "<an integer of about 401 digits>"),
        ([{"x": [1, 10**400]}], "value of 'x' in records[0] is too large"),
        ([{"x": [[1.5], [10**5000]]}], "<an integer of about 5001 digits>"),
        ([{"x": np.array([1, 10**400], dtype=object)}], "is too large for a 64-bit float"),
        ([{"x": 1 + 2j}], "value of 'x' in records[0] is a complex number: (1+2j) (values are "
                          "real numbers)"),
        ([{"x": [1, 2j]}], "is a complex number: 2j"),
        ([{"x": np.array([1 + 0j])}], "is a complex number: (1+0j)"),
        ([{"x": b"1"}], "value of 'x' in records[0] is not a number: b'1'"),
        ([{"x": ["1", 2]}], "value of 'x' in records[0] is not a number: '1'"),
        ([{"x": {"a": 1}}], "value of 'x' in records[0] is not a number: {'a': 1}"),
        ([{"x": DEEP}], "value of 'x' in records[0] is nested too deeply (a tensor has at most "
                        "4 dimensions)"),
        ([{"x": [[[[[1]]]]]}], "is nested too deeply"),
        ([{"x": [[1, 2], None]}], "null is not allowed inside a list"),
        ([{"x": [1, [2]]}], "ragged list: mixes numbers and lists"),
        ([{"x": "a" * 1000}], "not a number: 'aaaaaaaaaaaaaaaaa...aaaaaaaaaaaaaaaaaa'"),
    ],
)
def test_python_values_that_are_no_numbers(records: list, message: str) -> None:
    with pytest.raises(TenFlangError) as info:
        from_records(records)
    assert message in info.value.first.message


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"x": [10**400]}, "value of 'x' at position 0 of the column is too large"),
        ({"x": [1.0, [10**400]]}, "value of 'x' at position 1 of the column is too large"),
        ({"x": [1 + 2j, 3]}, "value of 'x' at position 0 of the column is a complex number"),
        ({"x": np.array([1 + 2j, 3])}, "at position 0 of the column is a complex number"),
        ({"x": [DEEP]}, "value of 'x' at position 0 of the column is nested too deeply"),
        ({"x": DEEP}, "value of 'x' at position 0 of the column is nested too deeply"),
        ({"x": np.zeros((2, 1, 1, 1, 1, 1))}, "column 'x' has 5 dimensions per example"),
        ({"x": [[0, 0], None, [1]]}, "value of 'x' has shape [1] at position 2 of the column "
                                     "but [2] at position 0"),
        ({"x": np.array(["2020-01-01"], dtype="datetime64[D]")}, "is not numeric"),
        ({"x": {1, 2}}, "column 'x' is 0-d"),
    ],
)
def test_python_columns_that_are_no_numbers(columns: dict, message: str) -> None:
    with pytest.raises(TenFlangError) as info:
        from_columns(columns)
    assert message in info.value.first.message


def test_python_values_that_are_fine() -> None:
    from fractions import Fraction
    t = from_columns({"x": [[0, 0], None], "b": [True, False], "f": [Fraction(1, 4), 2]})
    assert t.shape("x") == (2,)
    assert rows(t) == [{"x": [0.0, 0.0], "b": 1.0, "f": 0.25}, {"x": None, "b": 0.0, "f": 2.0}]
    r = from_records([{"x": np.float32(0.5), "y": np.int64(3), "z": np.array(2.5),
                       "b": np.bool_(True), "t": (1, 2), "n": float("nan")}])
    assert rows(r) == [{"x": 0.5, "y": 3.0, "z": 2.5, "b": 1.0, "t": [1.0, 2.0], "n": None}]
    assert from_records([{"x": 10**300}]).record(0)["x"] == 1e300


def test_the_public_python_api_takes_a_column_of_tensors_and_nulls() -> None:
    import tenflang_nb as tf
    from tenflang_nb.notebook.model import TenFlangModel
    t = tf.load_data({"x": [[0, 0], None]})
    assert rows(t) == [{"x": [0.0, 0.0]}, {"x": None}]
    data = {"x": [1.0, 2.0], "y": [[1, 1], None]}
    shape = tf.parse(Y2, "p.tf")
    assert [r["L"] for r in tf.evaluate(shape, data, {"w": np.ones(2)})] == [0.0, None]
    model = TenFlangModel(Y2, "m")
    assert [r["L"] for r in model.evaluate(data)] == [pytest.approx(
        (model.weights["w"].sum() - 2) ** 2), None]
    with pytest.raises(TenFlangError, match="missing required input 'y'"):
        model.train(data, max_iter=1)  # a null expected output is no training example
    with pytest.raises(TenFlangError, match="too large for a 64-bit float"):
        model.train({"x": [1.0], "y": [[10**400, 1]]}, max_iter=1)
    with pytest.raises(TenFlangError, match="is nested too deeply"):
        tf.train(tf.compile(shape), {"x": [1.0], "y": [DEEP]}, max_iter=1)


leaves = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(), st.complex_numbers(max_magnitude=10), st.text(max_size=3),
    st.binary(max_size=3), st.fractions(),
)
nested = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3)
                      | st.tuples(inner, inner), max_leaves=12)


@hypothesis_settings(300)
@given(nested, nested)
def test_any_python_value_gives_a_table_or_a_clear_error(a: object, b: object) -> None:
    import tenflang_nb as tf
    from tenflang_nb.core.datafiles import value_shape
    for make in (lambda: from_records([{"x": a}, {"x": b}]),
                 lambda: from_columns({"x": [a, b]}),
                 lambda: tf.load_data({"x": a}),
                 lambda: tf.load_data([{"x": a}])):
        try:
            t = make()
        except TenFlangError as err:
            assert err.first.message
        else:
            assert t.columns["x"].dtype == np.float64
            assert len(t.shape("x")) <= 4
    value_shape(a)  # only looks: never raises


# ---------------------------------------------------------------------------------------
# reliability: .npz files that are no archives of numeric arrays


def _npz_bytes(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"junk" * 10, "not a valid .npz file of numeric arrays: it is not a zip archive"),
        (b"", "it is not a zip archive"),
        (b"\x80\x04junk", "it is not a zip archive"),  # a pickle, which numpy would try
        (b"\x93NUMPY junk", "this is a single .npy array, not an .npz archive"),
        (_npz_bytes(x=np.zeros(3))[:60], "not a valid .npz file of numeric arrays: damaged"),
    ],
)
def test_junk_npz(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "junk.npz"
    path.write_bytes(content)
    with pytest.raises(TenFlangError) as info:
        read_data(path)
    assert message in info.value.first.message
    assert "pickle" not in str(info.value)
    assert info.value.first.file == str(path)


def test_npz_members_must_be_numeric_arrays(tmp_path: Path) -> None:
    path = tmp_path / "a.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x.npy", _npz_member_bytes(np.zeros(3)))
        archive.writestr("notes.txt", "hello")
    with pytest.raises(TenFlangError, match=r"it holds 'notes\.txt', which is not a \.npy array"):
        read_data(path)
    np.savez(path, x=np.array([1, None], dtype=object))
    with pytest.raises(TenFlangError, match="array 'x' holds Python objects, not numbers"):
        read_data(path)
    # a header that promises far more than the member holds: no attempt to allocate it
    header = _npz_member_bytes(np.zeros(3))
    lying = header.replace(b"'shape': (3,), ", b"'shape': (999999999999,), ")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x.npy", lying)
    with pytest.raises(TenFlangError, match="array 'x' is shorter than its header says"):
        read_data(path)
    with zipfile.ZipFile(path, "w"):
        pass  # an empty archive
    with pytest.raises(TenFlangError, match="no records in this data"):
        read_data(path)


def _npz_member_bytes(arr: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, arr)
    return buffer.getvalue()


@hypothesis_settings(200)
@given(st.data())
def test_damaged_npz_files_give_a_clear_error(data: st.DataObject) -> None:
    raw = bytearray(_npz_bytes(x=np.arange(6.0).reshape(3, 2), y=np.ones(3)))
    for _ in range(data.draw(st.integers(1, 4))):
        k = data.draw(st.integers(0, len(raw) - 1))
        raw[k] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    path = Path(tempfile.mkdtemp()) / "d.npz"
    path.write_bytes(bytes(raw[:cut]))
    try:
        t = read_data(path)
    except TenFlangError as err:
        assert "pickle" not in str(err)
    else:
        assert all(c.dtype == np.float64 for c in t.columns.values())


# ---------------------------------------------------------------------------------------
# writing every format the tools read back


def test_output_format_by_extension() -> None:
    paths = ("w.csv", "W.CSV", "d/w.npz", "w.txt", "w", None)
    assert [output_format(p) for p in paths] == ["csv", "csv", "npz", "brace", "brace", "brace"]


def read_back(records: list[dict], fmt: str, tmp_path: Path) -> list[dict]:
    content = format_table(records, fmt, "out")
    path = tmp_path / f"out.{ {'brace': 'txt'}.get(fmt, fmt) }"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return rows(read_data(path))


def test_format_table_csv_layout() -> None:
    records = [{"x": 1.5, "W": np.array([[1.0, 2.0], [3.0, 4.0]]), "y": None},
               {"x": None, "W": None, "y": None}]
    assert format_table(records, "csv") == (
        "x,W[0][0],W[0][1],W[1][0],W[1][1],y\n1.5,1.0,2.0,3.0,4.0,\n,,,,,\n")
    # one column: an empty cell would be a blank line, which is no record
    assert format_table([{"L": None}, {"L": 0.1}], "csv") == "L\nnull\n0.1\n"
    assert format_table([{"o": 1.0}], "brace") == "{o: 1.0}\n"


@pytest.mark.parametrize("fmt", ["brace", "csv", "npz"])
def test_round_trip_of_tool_outputs(fmt: str, tmp_path: Path) -> None:
    results = [{"o": np.array([0.1, -0.0]), "L": None, "s": 1e-300},
               {"o": np.array([5e-324, 1 / 3]), "L": 2.5, "s": -1.7976931348623157e308},
               {"o": np.array([2.0, 3.0]), "L": None, "s": 0.0}]
    back = read_back(results, fmt, tmp_path)
    assert back == rows(from_records(results))
    assert math.copysign(1, back[0]["o"][1]) == -1.0  # type: ignore[index]
    only_null = read_back([{"L": None}, {"L": None}], fmt, tmp_path)
    assert only_null == [{"L": None}, {"L": None}]


names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,5}|d/[a-z]/d/[a-z]", fullmatch=True)


@st.composite
def tool_records(draw: st.DrawFn) -> list[dict]:
    """Records as the tools write them: every record has every name, a name's values share
    a shape, any value may be null."""
    shapes = draw(st.dictionaries(names, hnp.array_shapes(min_dims=0, max_dims=3, max_side=3),
                                  min_size=1, max_size=4))
    n = draw(st.integers(1, 4))
    return [{name: draw(st.none() | (hnp.arrays(np.float64, shape, elements=finite)
                                     if shape else finite))
             for name, shape in shapes.items()} for _ in range(n)]


@hypothesis_settings(200)
@given(tool_records(), st.sampled_from(["brace", "csv", "npz"]))
def test_round_trip_property_every_format(records: list[dict], fmt: str) -> None:
    back = read_back(records, fmt, Path(tempfile.mkdtemp()))
    want = rows(from_records(records))
    assert back == want
    for got, rec in zip(back, records, strict=True):  # -0.0 keeps its sign
        for name, value in rec.items():
            if value is not None and np.ndim(value) == 0:
                assert math.copysign(1, got[name]) == math.copysign(1, value)  # type: ignore[arg-type]


def test_format_table_refusals() -> None:
    with pytest.raises(TenFlangError, match=r"'o' is NaN or infinite, which an \.npz file cannot"):
        format_table([{"o": 1.0}, {"o": math.nan}], "npz")
    with pytest.raises(TenFlangError, match="an empty tensor has no cells"):
        format_table([{"e": np.zeros(0)}], "csv")
    with pytest.raises(TenFlangError, match="nothing to write as csv"):
        format_table([{}], "csv")
    with pytest.raises(TenFlangError, match="shapes \\[2\\] and \\[3\\]"):
        format_table([{"x": np.zeros(2)}, {"x": np.zeros(3)}], "csv")
    with pytest.raises(TenFlangError, match="cannot write data as 'original'"):
        format_table([{"x": 1.0}], "original")
    assert format_table([{}], "brace") == "{}\n"
    assert format_table([{"o": math.nan}], "csv") == "o\nnan\n"  # as brace: never valid data


# ---------------------------------------------------------------------------------------
# the registry of formats: what each entry says holds for its reader and writer


WRITTEN = [f for f in FORMATS.values() if f.write]


@pytest.mark.parametrize("fmt", WRITTEN, ids=[f.name for f in WRITTEN])
def test_every_writer_is_read_back_as_its_entry_says(fmt: DataFormat, tmp_path: Path) -> None:
    records = [{"x": 1.5, "W": np.array([[1.0, -0.25]])}, {"x": None, "W": np.zeros((1, 2))}]
    want = rows(from_records(records))
    content = format_table(records, fmt.name, "out")
    assert isinstance(content, bytes) == fmt.binary

    def read(name: str, format: str | None = None) -> list[dict[str, object]]:
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return rows(read_data(path, format))

    for ext in fmt.extensions:  # the name -o gives it, read_data reads by
        assert output_format(f"w{ext.upper()}") == fmt.name
        assert read(f"w{ext}") == want
    assert read("w.bin", fmt.name) == want
    if not fmt.binary:  # found by its first line, and parsed as text
        assert read("w.bin") == want
        assert rows(parse_data(str(content), format=fmt.name)) == want


def test_every_format_is_named_where_formats_are_listed() -> None:
    unknown = error_of("{x: 1}", "json").first.message
    assert unknown.endswith(f"(expected one of {', '.join(FORMATS)})")
    with pytest.raises(TenFlangError) as info:
        format_table([{"x": 1.0}], "json")
    assert info.value.first.message.endswith(
        f"(expected one of {', '.join(f.name for f in WRITTEN)})")
    binary = [f for f in FORMATS.values() if f.binary]
    for fmt in binary:
        assert error_of("{x: 1}", fmt.name).first.message == (
            f"{fmt.name} is a binary format: read it with read_data")


@pytest.mark.parametrize(
    "entry",
    [dict(), dict(parse=parse_data, read=read_data),
     dict(parse=parse_data, sniff=bool), dict(read=read_data, sniff=bool, sniff_doc="x")],
    ids=["no reader", "two readers", "sniff without doc", "binary sniff"])
def test_a_registry_entry_is_checked(entry: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="data format 'new'"):
        DataFormat("new", "a new format", **entry)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# the fast paths read exactly what the careful parsers read, and fail exactly as they do


def _parse_both(text: str, fmt: str | None) -> tuple[object, object]:
    """(fast, careful): each a list of records with lines, or the error as the user sees it."""
    def run() -> object:
        try:
            t = parse_data(text, "data.txt", fmt)
        except TenFlangError as err:
            return str(err)
        return rows(t), t.lines.tolist(), t.names, [t.shape(n) for n in t.names]

    with pytest.MonkeyPatch.context() as m:
        whole = run()  # one block
        m.setattr(datafiles.blocks, "_BLOCK_CHARS", 24)  # many blocks, and blocks of one line
        fast = run()
        assert fast == whole
        for fast_path in (datafiles.brace, datafiles.csvfiles):  # each fast path asks _plain
            m.setattr(fast_path, "_plain", lambda block: False)
        careful = run()
        m.setattr(datafiles.blocks, "_BLOCK_CHARS", 1 << 18)
        assert run() == careful  # the careful parsers, whatever the blocks
    return fast, careful


cell_text = st.sampled_from(["1", "-2.5", "1e3", ".5", "+7", "", " ", "null", "NULL", "Null",
                             " null", "nan", "NaN", "inf", "1e999", "abc", "1e", "0x1", "1_0",
                             " 3 ", "١", '"4"', "5 6", "-0", "1.5e-3", "nullnull", "-null"])


@hypothesis_settings(300)
@given(st.sampled_from(["a[0],a[1],b", "b", "a,b"]),
       st.lists(st.lists(cell_text, min_size=1, max_size=4), min_size=1, max_size=12),
       st.lists(st.sampled_from(["", "# c", "  ", "x,y"]), max_size=3), st.randoms())
def test_csv_fast_path_equals_careful(header: str, cells: list[list[str]], extra: list[str],
                                      rnd: object) -> None:
    width = header.count(",") + 1
    lines = [",".join(row[:width] if rnd.random() < 0.9 else row)  # type: ignore[attr-defined]
             for row in cells]
    for line in extra:
        lines.insert(rnd.randrange(len(lines) + 1), line)  # type: ignore[attr-defined]
    text = header + "\n" + "\n".join(lines) + "\n"
    fast, careful = _parse_both(text, "csv")
    assert fast == careful


brace_value = st.sampled_from(["1", "-2.5", "1e3", "null", "Null", "nUlL", "[1, 2]", "[3, 4]",
                               "[1]", "[null, 1]", "[[1, 2]]", "nan", "1e999", "x", "[1,2]",
                               "[]", "1e", "  4", "[1, 2 ]", "-null", "nullnull", "[1 2]",
                               "[NULL, 2]", "+.5", "1.", "[1e-3, -0]"])


@hypothesis_settings(300)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["a", "b", "c1", "d/L/d/a", "e.0", "null",
                                                    "NULLa", "d/L/d/a:1"]),
                                   brace_value), max_size=3), min_size=1, max_size=12),
       st.lists(st.sampled_from(["", "# c", "  ", "{a: 1}", "{a: 1} x"]), max_size=3),
       st.randoms())
def test_brace_fast_path_equals_careful(records: list[list[tuple[str, str]]], extra: list[str],
                                        rnd: object) -> None:
    lines = ["{" + ", ".join(f"{k}: {v}" for k, v in dict(r).items()) + "}" for r in records]
    for line in extra:
        lines.insert(rnd.randrange(len(lines) + 1), line)  # type: ignore[attr-defined]
    # repeat lines, so that blocks of many lines share a layout
    text = "\n".join(line for line in lines for _ in range(rnd.randrange(1, 4))) + "\n"  # type: ignore[attr-defined]
    fast, careful = _parse_both(text, None)
    assert fast == careful


def test_the_fast_paths_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"brace": 0, "csv": 0}
    parse, column = datafiles.brace._BraceLine.parse, datafiles.csvfiles._csv_column

    def counting_parse(self: object) -> object:
        calls["brace"] += 1
        return parse(self)  # type: ignore[arg-type]

    def counting_column(*args: object) -> object:
        calls["csv"] += 1
        return column(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(datafiles.brace._BraceLine, "parse", counting_parse)
    monkeypatch.setattr(datafiles.csvfiles, "_csv_column", counting_column)
    brace = "".join(f"{{x: [{k}, {k / 3!r}], y: {'null' if k % 7 else k}}}\n" for k in range(5000))
    t = parse_data(brace)
    assert t.record(4999)["x"].tolist() == [4999.0, 4999 / 3]  # type: ignore[union-attr]
    assert calls["brace"] < 50  # one line per block, not one per record
    text = "x,y\n" + "".join(f"{k},{'' if k % 3 else repr(k / 7)}\n" for k in range(5000))
    t = parse_data(text, format="csv")
    assert t.record(4997)["y"] is None and t.record(4996)["y"] is None
    assert t.record(4995)["y"] == 4995 / 7
    assert calls["csv"] == 0  # numpy read every block


# ---------------------------------------------------------------------------------------
# a file is streamed a block at a time, exactly as read_text would read it whole


@hypothesis_settings(200)
@given(st.lists(st.sampled_from([b"{x: 1}", b"{x: 2, y: [1, 2]}", b"x,y", b"1,2", b"# c",
                                 b"", b"\xef\xbb\xbf{x: 3}", b"{x: \xff}", b"{x: 4}\r",
                                 b"{x: 5}\r\n", b"3,\xe2\x82\xac", b"\xe9", b"a\t1"]),
                min_size=1, max_size=10),
       st.integers(1, 40), st.sampled_from([".txt", ".csv"]))
def test_streaming_a_file_equals_reading_it_whole(parts: list[bytes], block: int, ext: str
                                                  ) -> None:
    from tenflang_nb.core.textio import read_text
    path = Path(tempfile.mkdtemp()) / f"d{ext}"
    path.write_bytes(b"\n".join(parts))

    def outcome(make: object) -> object:
        try:
            t = make()  # type: ignore[operator]
        except TenFlangError as err:
            return str(err).replace(str(path), "F")
        return rows(t), t.lines.tolist()

    whole = outcome(lambda: parse_data(read_text(path), str(path),
                                       "csv" if ext == ".csv" else None))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(datafiles.blocks, "_BLOCK_CHARS", block)
        assert outcome(lambda: read_data(path)) == whole


@pytest.mark.parametrize("fmt", [None, "csv", "brace", "original"])
def test_a_program_given_as_data_is_named_as_such(fmt: str | None) -> None:
    # before: "bad column name 'declare input x'", read as a CSV header
    text = "# the seed\n\ndeclare input x\ndeclare weight w\ndefine o = mul x w\n"
    with pytest.raises(TenFlangError) as info:
        parse_data(text, "shape.tf", format=fmt)
    first = info.value.first
    assert first.message == "this is a TenFlang program, not a data file"
    assert (first.file, first.line) == ("shape.tf", 3)
    assert "order of the arguments" in (first.hint or "")
