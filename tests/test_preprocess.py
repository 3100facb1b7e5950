"""The preprocessor reproduces the original TenFlang's vector and macro expansion exactly.

Expected texts come from the original's fixtures and unit tests (TestPreprocessor.cpp) and
from the examples of its Guide, as recorded in shared/original-tenflang/SPEC_ORIGINAL.md.
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import ORIGINAL_DIR, program_text

from tenflang_nb.core.errors import Diagnostic, TenFlangError
from tenflang_nb.core.preprocess import (
    ExpandedLine,
    needs_preprocessing,
    preprocess,
    preprocess_text,
)

ORIGINAL = ORIGINAL_DIR
SHAPE = ORIGINAL / "macros_vectors_dot_shape.tf"
EXPANDED = ORIGINAL / "macros_vectors_dot_expanded.tf"

BINARY = "#macro c = my_binary_macro a b; declare intvar p; define p = pow a b; define c = ln p"
UNARY = "#macro z = my_unary_macro x; declare intvar q; define z = logistic x"


def texts(*lines: str) -> list[str]:
    return [e.text for e in preprocess(program_text(*lines))]


def error(*lines: str) -> Diagnostic:
    with pytest.raises(TenFlangError) as info:
        preprocess(program_text(*lines), "prog.tf")
    return info.value.first


def normalised(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


# ----------------------------------------------------------------------------- the fixture


needs_fixture = pytest.mark.skipif(not SHAPE.exists(), reason="shared/ fixtures not present")


@needs_fixture
def test_fixture_expands_line_for_line() -> None:
    got = [" ".join(e.text.split()) for e in preprocess(SHAPE.read_text(), "shape.tf")]
    assert got == normalised(EXPANDED.read_text())
    assert len(got) == 104


@needs_fixture
def test_fixture_expands_byte_for_byte() -> None:
    assert preprocess_text(SHAPE.read_text()) == EXPANDED.read_text()


@needs_fixture
def test_fixture_lines_point_at_the_users_lines() -> None:
    user = SHAPE.read_text().split("\n")
    number = {text: i for i, text in enumerate(user, 1) if text}
    out = preprocess(SHAPE.read_text(), "shape.tf")
    by_text = {e.text: e.line for e in out}
    assert by_text["declare input a.2"] == number["declare_vector input a 3"] == 4
    for temp in ("declare intvar foo.0", "define foo.3 = add foo.0 foo.1", "define foo = foo.4"):
        assert by_text[temp] == number["define foo = dot a b"] == 12
    assert by_text["define B.2 = mul f.2 B.2_p2"] == number["define_vector B = b_macro e f"]
    assert by_text["define E.1_q1 = add C.1 2"] == number["define_vector E = u_macro C"]
    assert by_text["define G = G.4"] == number["define G = dot E F"] == 42
    # lines that need no expansion keep their text and their line
    assert by_text["define bar = exp foo"] == number["define bar = exp foo"] == 15
    # the macro lines (1-2) produce nothing, and every output line comes from a real line
    assert min(e.line for e in out) == 4
    assert all(user[e.line - 1].strip() for e in out)


# ----------------------------------------------------------------------------- declare_vector


def test_declare_vector_declares_each_component() -> None:
    out = preprocess(program_text("declare_vector input x 3", "declare_vector output o 1"))
    assert out == [
        ExpandedLine("declare input x.0", 1),
        ExpandedLine("declare input x.1", 1),
        ExpandedLine("declare input x.2", 1),
        ExpandedLine("declare output o.0", 2),
    ]


def test_declare_vector_of_the_largest_size() -> None:
    out = texts("declare_vector weight w 1000")
    assert len(out) == 1000
    assert out[0] == "declare weight w.0" and out[-1] == "declare weight w.999"


# ----------------------------------------------------------------------------- define_vector


VECTORS = (
    "declare_vector input x 3",
    "declare_vector weight w 3",
    "declare_vector intvar a 3",
    "declare_vector intvar b 3",
    "declare_vector intvar c 3",
    "declare input p",
)


def test_define_vector_binary_primitive_on_two_vectors() -> None:
    out = texts(*VECTORS, "define_vector a = add x w")
    assert out[-3:] == ["define a.0 = add x.0 w.0", "define a.1 = add x.1 w.1",
                        "define a.2 = add x.2 w.2"]


def test_define_vector_with_a_scalar_and_a_constant() -> None:
    out = texts(*VECTORS, "define_vector a = add x w", "define_vector b = mul a p",
                "define_vector c = pow b 2")
    assert out[-6:] == [
        "define b.0 = mul a.0 p", "define b.1 = mul a.1 p", "define b.2 = mul a.2 p",
        "define c.0 = pow b.0 2", "define c.1 = pow b.1 2", "define c.2 = pow b.2 2",
    ]


def test_define_vector_unary_primitive_and_newer_operators() -> None:
    out = texts(*VECTORS, "define_vector a = logistic x", "define_vector b = tanh a",
                "define_vector c = div b -2.5")
    assert out[-9:] == [
        "define a.0 = logistic x.0", "define a.1 = logistic x.1", "define a.2 = logistic x.2",
        "define b.0 = tanh a.0", "define b.1 = tanh a.1", "define b.2 = tanh a.2",
        "define c.0 = div b.0 -2.5", "define c.1 = div b.1 -2.5", "define c.2 = div b.2 -2.5",
    ]


def test_define_vector_with_macros_counts_every_component() -> None:
    # TestPreprocessor.cpp, test_pp_expand_define_vector
    out = texts(
        BINARY, UNARY,
        "declare_vector input x 3", "declare_vector weight w 3",
        "declare_vector intvar d 3", "declare_vector intvar e 3", "declare_vector intvar f 3",
        "declare_vector intvar g 3", "declare_vector intvar h 3", "declare input q",
        "define_vector d = my_binary_macro x w",
        "define_vector e = my_binary_macro d q",
        "define_vector f = my_binary_macro e -3",
        "define_vector g = logistic x",
        "define_vector h = my_unary_macro g",
    )
    assert out[22:] == [
        "declare intvar d.0_p0", "define d.0_p0 = pow x.0 w.0", "define d.0 = ln d.0_p0",
        "declare intvar d.1_p1", "define d.1_p1 = pow x.1 w.1", "define d.1 = ln d.1_p1",
        "declare intvar d.2_p2", "define d.2_p2 = pow x.2 w.2", "define d.2 = ln d.2_p2",
        "declare intvar e.0_p3", "define e.0_p3 = pow d.0 q", "define e.0 = ln e.0_p3",
        "declare intvar e.1_p4", "define e.1_p4 = pow d.1 q", "define e.1 = ln e.1_p4",
        "declare intvar e.2_p5", "define e.2_p5 = pow d.2 q", "define e.2 = ln e.2_p5",
        "declare intvar f.0_p6", "define f.0_p6 = pow e.0 -3", "define f.0 = ln f.0_p6",
        "declare intvar f.1_p7", "define f.1_p7 = pow e.1 -3", "define f.1 = ln f.1_p7",
        "declare intvar f.2_p8", "define f.2_p8 = pow e.2 -3", "define f.2 = ln f.2_p8",
        "define g.0 = logistic x.0", "define g.1 = logistic x.1", "define g.2 = logistic x.2",
        "declare intvar h.0_q0", "define h.0 = logistic g.0",
        "declare intvar h.1_q1", "define h.1 = logistic g.1",
        "declare intvar h.2_q2", "define h.2 = logistic g.2",
    ]


def test_vector_defined_component_by_component_can_be_used() -> None:
    # TestPreprocessor.cpp, test_define_vector_components
    out = preprocess(program_text(
        "declare_vector input x 3", "declare_vector intvar z 3", "declare_vector intvar p 3",
        "declare_vector intvar g 3",
        "define z.0 = 10", "define z.1 = 20", "define z.2 = 30",
        "define_vector p = add z z", "define_vector g = exp z",
    ))
    assert [e.text for e in out[12:15]] == ["define z.0 = 10", "define z.1 = 20",
                                            "define z.2 = 30"]
    assert [(e.text, e.line) for e in out[15:]] == [
        ("define p.0 = add z.0 z.0", 8), ("define p.1 = add z.1 z.1", 8),
        ("define p.2 = add z.2 z.2", 8),
        ("define g.0 = exp z.0", 9), ("define g.1 = exp z.1", 9), ("define g.2 = exp z.2", 9),
    ]


def test_define_vector_accepts_a_defined_component_as_the_scalar() -> None:
    out = texts("declare_vector input x 2", "declare_vector output y 2",
                "define_vector y = mul x x.1")
    assert out[-2:] == ["define y.0 = mul x.0 x.1", "define y.1 = mul x.1 x.1"]


# ----------------------------------------------------------------------------- dot


def test_dot_product_of_three_components() -> None:
    out = preprocess(program_text("declare_vector input x 3", "declare_vector weight w 3",
                         "declare intvar z", "define z = dot x w"))
    assert [e.text for e in out[7:]] == [
        "declare intvar z.0", "define z.0 = mul x.0 w.0",
        "declare intvar z.1", "define z.1 = mul x.1 w.1",
        "declare intvar z.2", "define z.2 = mul x.2 w.2",
        "declare intvar z.3", "define z.3 = add z.0 z.1",
        "declare intvar z.4", "define z.4 = add z.3 z.2",
        "define z = z.4",
    ]
    assert {e.line for e in out[7:]} == {4}


def test_dot_product_of_one_component() -> None:
    out = texts("declare_vector intvar u 1", "declare_vector input v 1", "define u.0 = 2",
                "declare output a", "define a = dot u v")
    assert out[-3:] == ["declare intvar a.0", "define a.0 = mul u.0 v.0", "define a = a.0"]


def test_dot_product_of_four_components_follows_the_general_rule() -> None:
    out = texts("declare_vector input u 4", "declare output s", "define s = dot u u")
    sums = [t for t in out if " = add " in t]
    assert sums == ["define s.4 = add s.0 s.1", "define s.5 = add s.4 s.2",
                    "define s.6 = add s.5 s.3"]
    assert out[-1] == "define s = s.6"


# ----------------------------------------------------------------------------- reduce_vector


REDUCE_MACRO = ("#macro c = my_binary_macro a b; declare intvar p; define p = mul b a; "
                "define c = logistic p;")


def test_reduce_vector_with_primitives() -> None:
    # TestPreprocessor.cpp, test_reduce_vector; the Guide's example (p.11) is the first one
    out = texts("declare_vector input u 3", "declare intvar z", "declare intvar b",
                "define z = reduce_vector u add", "define b = reduce_vector u mul")
    assert out[5:] == [
        "declare intvar z.0", "define z.0 = add u.0 u.1",
        "declare intvar z.1", "define z.1 = add z.0 u.2", "define z = z.1",
        "declare intvar b.0", "define b.0 = mul u.0 u.1",
        "declare intvar b.1", "define b.1 = mul b.0 u.2", "define b = b.1",
    ]


def test_reduce_vector_with_a_macro() -> None:
    out = preprocess(program_text(REDUCE_MACRO, "declare_vector input x 3", "declare intvar c",
                         "define c = reduce_vector x my_binary_macro"))
    assert [e.text for e in out[4:]] == [
        "declare intvar c.0", "declare intvar c.0_p0", "define c.0_p0 = mul x.1 x.0",
        "define c.0 = logistic c.0_p0",
        "declare intvar c.1", "declare intvar c.1_p1", "define c.1_p1 = mul x.2 c.0",
        "define c.1 = logistic c.1_p1",
        "define c = c.1",
    ]
    assert {e.line for e in out[4:]} == {4}


def test_reduce_vector_of_one_component_uses_no_macro() -> None:
    out = texts(REDUCE_MACRO, "declare_vector weight y 1", "declare intvar d",
                "declare intvar e", "declare_vector input x 2", "declare intvar f",
                "define d = reduce_vector y mul", "define e = reduce_vector y my_binary_macro",
                "define f = reduce_vector x my_binary_macro")
    assert out[6:8] == ["define d = y.0", "define e = y.0"]
    # the one-component reduction did not count as a use of the macro
    assert out[9] == "declare intvar f.0_p0"


# ----------------------------------------------------------------------------- macros


def test_binary_macro_counts_its_uses() -> None:
    # TestPreprocessor.cpp, test_pp_expand_binary_macro
    out = texts("#macro c = my_macro a b; declare intvar q; define q = ln a; define c = pow b q",
                "declare intvar x", "define x = 2", "declare input y", "declare intvar z",
                "declare output o", "define z = my_macro x y", "define o = my_macro z y")
    assert out[-6:] == ["declare intvar z_q0", "define z_q0 = ln x", "define z = pow y z_q0",
                        "declare intvar o_q1", "define o_q1 = ln z", "define o = pow y o_q1"]


def test_unary_macro() -> None:
    # TestPreprocessor.cpp, test_pp_expand_unary_macro
    out = texts("#macro c = my_macro a; declare intvar b; define b = add a 3; define c = mul b b",
                "declare input x", "declare intvar z", "declare output o",
                "define z = my_macro x", "define o = my_macro z")
    assert out[-6:] == ["declare intvar z_b0", "define z_b0 = add x 3", "define z = mul z_b0 z_b0",
                        "declare intvar o_b1", "define o_b1 = add z 3", "define o = mul o_b1 o_b1"]


def test_macro_local_named_like_an_argument() -> None:
    # TestPreprocessor.cpp, test_pp_substitute_dummy_names (second macro, second use)
    out = texts("#macro c = my_macro a b; declare intvar q; define q = logistic b; "
                "declare intvar x; define x = mul q a; define c = add x b",
                "declare input x", "declare input a", "declare intvar w", "declare intvar z",
                "define w = my_macro 1 2", "define z = my_macro x a")
    assert out[-5:] == ["declare intvar z_q1", "define z_q1 = logistic a", "declare intvar z_x1",
                        "define z_x1 = mul z_q1 x", "define z = add z_x1 a"]


def test_guide_macros() -> None:
    out = texts(
        "#macro c = sum_of_squares a b; declare intvar p; define p = pow a 2; "
        "declare intvar q; define q = pow b 2; define c = add p q;",
        "#macro foo = my_unary_macro bar; declare intvar baz; define baz = add bar 3; "
        "define foo = pow baz -1;",
        "declare input x", "declare input y", "declare intvar s", "declare intvar t",
        "define s = sum_of_squares x -4", "define t = my_unary_macro s",
    )
    assert out[4:] == [
        "declare intvar s_p0", "define s_p0 = pow x 2", "declare intvar s_q0",
        "define s_q0 = pow -4 2", "define s = add s_p0 s_q0",
        "declare intvar t_baz0", "define t_baz0 = add s 3", "define t = pow t_baz0 -1",
    ]


def test_guide_define_examples() -> None:
    out = texts(
        BINARY,
        "declare input x", "declare intvar z", "declare intvar y", "declare intvar r",
        "declare intvar m", "declare_vector input u 2", "declare_vector input v 2",
        "define z = my_binary_macro x -4", "define y = ln 1",
        "define r = reduce_vector v add", "define m = reduce_vector u my_binary_macro",
    )
    assert out[9:] == [
        "declare intvar z_p0", "define z_p0 = pow x -4", "define z = ln z_p0",
        "define y = ln 1",
        "declare intvar r.0", "define r.0 = add v.0 v.1", "define r = r.0",
        "declare intvar m.0", "declare intvar m.0_p1", "define m.0_p1 = pow u.0 u.1",
        "define m.0 = ln m.0_p1", "define m = m.0",
    ]


def test_macros_may_follow_comments_and_blank_lines() -> None:
    out = preprocess(program_text("# squares", "", "#macro c = sq a; define c = mul a a", "",
                         "# then the program", "declare input x", "declare output y",
                         "define y = sq x"))
    assert out == [ExpandedLine("# squares", 1), ExpandedLine("# then the program", 5),
                   ExpandedLine("declare input x", 6), ExpandedLine("declare output y", 7),
                   ExpandedLine("define y = mul x x", 8)]


def test_tabs_separate_tokens() -> None:
    out = texts("#macro\tc = sq a;\tdefine c = mul\ta a", "declare_vector\tinput\tx\t2",
                "declare_vector\toutput\tq 2", "declare\toutput\ty",
                "define_vector\tq = sq x", "define\ty =\tdot x x")
    assert out == [
        "declare input x.0", "declare input x.1", "declare output q.0", "declare output q.1",
        "declare\toutput\ty",
        "define q.0 = mul x.0 x.0", "define q.1 = mul x.1 x.1",
        "declare intvar y.0", "define y.0 = mul x.0 x.0",
        "declare intvar y.1", "define y.1 = mul x.1 x.1",
        "declare intvar y.2", "define y.2 = add y.0 y.1", "define y = y.2",
    ]


# ----------------------------------------------------------------------------- pass-through


def test_program_without_vectors_passes_through() -> None:
    source = ("# a comment\r\n"
              "declare input x   \r\n"
              "\n"
              "declare weight W [3, 2]\n"
              "  declare output y\t\n"
              "   \n"
              "define y = mul  x  2\n")
    out = preprocess(source)
    assert out == [
        ExpandedLine("# a comment", 1), ExpandedLine("declare input x", 2),
        ExpandedLine("declare weight W [3, 2]", 4), ExpandedLine("  declare output y", 5),
        ExpandedLine("define y = mul  x  2", 7),
    ]
    assert preprocess_text(source) == ("# a comment\ndeclare input x\ndeclare weight W [3, 2]\n"
                                   "  declare output y\ndefine y = mul  x  2\n")


def test_empty_program() -> None:
    assert preprocess("") == []
    assert preprocess_text("\n\n") == ""


def test_expanded_line_is_frozen() -> None:
    line = ExpandedLine("declare input x", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        line.text = "x"  # type: ignore[misc]


# ----------------------------------------------------------------------------- needs_preprocessing


@pytest.mark.parametrize("text", [
    "declare_vector input x 3\n",
    "  define_vector y = add x x\n",
    "define z = dot x w\n",
    "define z = reduce_vector v add\n",
    "#macro c = sq a; define c = mul a a\n",
    "declare input x\n#macro c = sq a;define c = mul a a\n",
    "define\tz =\tdot\tx w\n",
])
def test_needs_preprocessing_true(text: str) -> None:
    assert needs_preprocessing(text) is True


@pytest.mark.parametrize("text", [
    "",
    "declare input x\ndefine y = mul x 2\n",
    "declare input dotty\ndefine y = mul dotty 2\n",
    "declare input x_vector\ndefine y = exp x_vector\n",
    "# macros are described elsewhere\n",
    "#macros\n",
])
def test_needs_preprocessing_false(text: str) -> None:
    assert needs_preprocessing(text) is False


def test_error_names_file_line_and_shows_a_caret() -> None:
    with pytest.raises(TenFlangError) as info:
        preprocess(program_text("declare_vector input x 3", "declare_vector input y 2",
                       "declare output s", "define s = dot x y"), "net.tf")
    rendered = str(info.value).splitlines()
    assert rendered == [
        "net.tf: line 4: error: vectors of different dimension: x has 3 components, y has 2",
        "    define s = dot x y",
        "                     ^",
    ]


DIM = ("declare_vector input x 3", "declare_vector exp_output y 5",
       "declare_vector weight w 3", "declare_vector intvar p 3", "declare_vector intvar q 4")


@pytest.mark.parametrize(("line", "message", "column"), [
    ("define_vector p = add x y", "vectors of different dimension: x has 3 components, y has 5",
     24),
    ("define_vector q = exp x", "vectors of different dimension: q has 4 components, x has 3",
     22),
    ("define_vector p = my_binary_macro x y",
     "vectors of different dimension: x has 3 components, y has 5", 36),
])
def test_vectors_of_different_dimension(line: str, message: str, column: int) -> None:
    d = error(BINARY, *DIM, line)
    assert (d.line, d.message, d.column, d.file) == (7, message, column, "prog.tf")


@pytest.mark.parametrize("size", ["0", "-2", "3.2", "1001", "three"])
def test_bad_vector_size(size: str) -> None:
    d = error("declare input x", f"declare_vector input vec {size}")
    assert d.line == 2
    assert d.message == f"invalid vector size '{size}': a vector has 1 to 1000 components"
    assert d.column == 25 and d.length == len(size)


def test_macro_after_an_instruction() -> None:
    d = error("# comments are fine", BINARY, "declare input x",
              "#macro c = my_macro a; define c = 3;")
    assert d.line == 4
    assert d.message.startswith("macros must all be defined at the top of the program")
    assert "after line 3" in d.message


@pytest.mark.parametrize(("line", "message"), [
    ("#macro c = logistic a b; define c = a", "'logistic' cannot be a macro name: it is an "
     "operator"),
    ("#macro c = tanh a; define c = a", "'tanh' cannot be a macro name: it is an operator"),
    ("#macro c = log a; define c = a", "'log' cannot be a macro name: it is an operator"),
    ("#macro c = dot a b; define c = a", "'dot' cannot be a macro name: it is a keyword"),
    ("#macro c = declare a; define c = a", "'declare' cannot be a macro name: it is a keyword"),
])
def test_keyword_as_macro_name(line: str, message: str) -> None:
    d = error(line)
    assert (d.line, d.message, d.column) == (1, message, 11)


@pytest.mark.parametrize(("line", "message", "column"), [
    ("#macro add = my_macro a b; define add = a",
     "'add' is a keyword and cannot be the result of a macro", 7),
    ("#macro c = my_macro c; define c = 1", "operand 'c' has the same name as the result", 20),
    ("#macro c = my_macro a c; define c = a", "operand 'c' has the same name as the result",
     22),
    ("#macro c = my_macro ln c; define c = 1",
     "'ln' is a keyword and cannot be an operand of a macro", 20),
    ("#macro c = my_macro a a; define c = a", "the two operands are both named 'a'", 22),
    ("#macro c1 = my_macro a; define c1 = a",
     "'c1' cannot be the result of a macro: names inside a macro use only letters and '_' "
     "(generated names append a number)", 7),
])
def test_bad_macro_variables(line: str, message: str, column: int) -> None:
    d = error(line)
    assert (d.line, d.message, d.column) == (1, message, column)


@pytest.mark.parametrize("line", [
    "#macro c = my_macro",
    "#macro c my_macro a b; define c = a",
    "#macro c = my_macro a b c; define c = a",
])
def test_malformed_macro_head(line: str) -> None:
    d = error(line)
    assert d.line == 1
    assert d.message == ("a macro starts with '#macro <result> = <name> <operand> "
                         "[<operand>]' followed by ';'")


def test_macro_without_body() -> None:
    d = error("#macro c = my_macro a;")
    assert (d.line, d.message) == (1, "macro 'my_macro' has no body")


def test_macro_defined_twice() -> None:
    d = error(BINARY, "", "#macro d = my_binary_macro x y; define d = add x y")
    assert (d.line, d.message) == (3, "macro 'my_binary_macro' is defined twice "
                                      "(first on line 1)")
    assert d.column == 11


@pytest.mark.parametrize(("body", "message", "column"), [
    ("declare output q; define c = a",
     "only intvar variables can be declared in a macro body, not 'output'", 33),
    ("declare q; define c = a", "expected 'declare intvar <name>' in the macro body", 25),
    ("define a = 3; define c = a", "cannot define 'a': it is an operand of the macro", 32),
    ("declare intvar c; define c = a",
     "'c' is the macro's result, which is already declared", 40),
    ("declare intvar a; define c = a",
     "'a' is an operand of the macro and cannot be declared", 40),
    ("declare intvar q; declare intvar q; define c = a",
     "'q' is declared twice in this macro", 58),
    ("define p = mul b a; define c = p", "'p' is not declared in this macro", 32),
    ("declare intvar q; define q = mul q a; define c = q",
     "'q' is used before it is defined in this macro", 58),
    ("declare intvar q; define q = ln a; define q = ln a; define c = q",
     "'q' is defined twice in this macro", 67),
    ("define c = pow a x", "'x' is neither an operand nor a local variable of this macro", 42),
    ("define c = ln c", "'c' is used before it is defined in this macro", 39),
    ("define c = ln a b", "'ln' takes 1 operand, got 2", 36),
    ("define c = frob a b", "unknown operator 'frob'", 36),
    ("define c = other a b", "a macro body cannot use another macro ('other')", 36),
    ("define c = dot a b", "a macro body cannot use vectors ('dot')", 36),
    ("define_vector c = add a b", "a macro body holds only 'declare intvar' and 'define' "
     "statements, separated by ';'", 25),
    ("declare intvar q; define q = add a b", "macro 'my_macro' never defines its result 'c'",
     7),
])
def test_bad_macro_body(body: str, message: str, column: int) -> None:
    d = error("#macro c = other a b; define c = a",
              f"#macro c = my_macro a b; {body}")
    assert (d.line, d.message, d.column) == (2, message, column)


def test_whole_statement_caret_in_a_macro_body() -> None:
    with pytest.raises(TenFlangError) as info:
        preprocess("#macro c = m a; declare q; define c = a\n", "m.tf")
    d = info.value.first
    assert (d.line, d.column, d.length) == (1, 16, len("declare q"))
    assert str(info.value).splitlines()[1:] == [
        "    #macro c = m a; declare q; define c = a",
        "                    ^^^^^^^^^",
    ]


def test_variable_named_like_a_macro_can_be_copied() -> None:
    out = texts("#macro c = x a; define c = mul a a", "declare input x", "declare output y",
                "declare output z", "define y = x", "define z = x y")
    assert out[-2:] == ["define y = x", "define z = mul y y"]
    d = error("#macro c = m a; define c = a", "declare output y", "define y = m")
    assert (d.line, d.message) == (3, "macro 'm' takes 1 operand, got 0")


def test_macro_body_cannot_use_program_variables() -> None:
    d = error("#macro c = m a; define c = add a x", "declare input x")
    assert d.line == 1 and d.hint is not None and "operands, its own intvars" in d.hint


@pytest.mark.parametrize(("line", "message", "column"), [
    ("define p = my_binary_macro x", "macro 'my_binary_macro' takes 2 operands, got 1", 11),
    ("define p = my_unary_macro x w", "macro 'my_unary_macro' takes 1 operand, got 2", 11),
    ("define p = my_binary_macro p x", "'p' is used before it is defined", 27),
    ("define p = my_binary_macro 3 foo", "'foo' is neither a number nor a declared variable",
     29),
    ("define foo = my_binary_macro x w", "'foo' is defined but never declared", 7),
    ("define z = my_unary_macro x", "'z' is already defined (line 7)", 7),
    ("define x = my_unary_macro w", "cannot define 'x': it is an input, whose value is given "
     "when the program runs", 7),
    ("define p = my_unary_macro v", "'v' is a vector, but a single value is needed here", 26),
])
def test_bad_macro_call(line: str, message: str, column: int) -> None:
    d = error(BINARY, UNARY, "declare input x", "declare weight w", "declare intvar z",
              "declare intvar p", "define z = mul x w", "declare_vector input v 2", line)
    assert (d.line, d.message, d.column) == (9, message, column)


DEFINE_VECTOR_SETUP = (
    BINARY, UNARY,
    "declare_vector input x 3", "declare_vector weight w 3", "declare_vector exp_output y 5",
    "declare_vector intvar z 3", "define_vector z = mul x w",
    "declare_vector intvar p 3", "declare_vector intvar a 3", "declare input m",
    "declare intvar bar", "declare intvar s",
)


@pytest.mark.parametrize(("line", "message", "column"), [
    # the original's INVALID_LINE cases
    ("define_vector x y", "missing '=' after the vector's name", 16),
    ("define_vector p = add x w m", "define_vector takes an operator or macro and 1 or 2 "
     "operands, got 3 operands", 0),
    ("define_vector p = add x", "'add' takes 2 operands, got 1", 18),
    ("define_vector p = ln x w", "'ln' takes 1 operand, got 2", 18),
    ("define_vector p = my_unary_macro x w", "macro 'my_unary_macro' takes 1 operand, got 2",
     18),
    ("define_vector p = frobnicate x", "unknown operator or macro 'frobnicate'", 18),
    ("define_vector p = matmul x w", "'matmul' is not an elementwise operator, so "
     "define_vector cannot apply it component by component", 18),
    # CANNOT_DEFINE_I_W_EO
    ("define_vector x = add y 3", "cannot define 'x': it is an input vector, whose values "
     "are given when the program runs", 14),
    ("define_vector w = mul x x", "cannot define 'w': it is a weight vector, whose values are "
     "given when the program runs", 14),
    ("define_vector y = my_unary_macro w", "cannot define 'y': it is an exp_output vector, "
     "whose values are given when the program runs", 14),
    # VAR_DEFINED_BEFORE_DECLARED
    ("define_vector b = add x x", "vector 'b' is not declared", 14),
    ("define_vector s = exp x", "'s' is declared as a single variable (line 12), not as a "
     "vector", 14),
    # VAR_DEFINED_TWICE
    ("define_vector z = exp w", "vector 'z' is already defined (line 7)", 14),
    # VAR_REFERENCED_BEFORE_DEFINED
    ("define_vector p = pow m 2", "'m' is not a vector: define_vector needs a vector declared "
     "with declare_vector (line 10 declares a single variable)", 22),
    ("define_vector p = logistic nothing", "'nothing' is not a vector: define_vector needs a "
     "vector declared with declare_vector", 27),
    ("define_vector p = mul x a", "vector 'a' is used before it is defined", 24),
    ("define_vector p = my_unary_macro a", "vector 'a' is used before it is defined", 33),
    ("define_vector p = pow x foo", "'foo' is neither a number nor a declared variable", 24),
    ("define_vector a = add x bar", "'bar' is used before it is defined", 24),
])
def test_bad_define_vector(line: str, message: str, column: int) -> None:
    d = error(*DEFINE_VECTOR_SETUP, line)
    assert (d.line, d.message, d.column) == (13, message, column)


def test_define_vector_of_a_vector_with_a_defined_component() -> None:
    d = error("declare_vector input x 3", "declare_vector intvar z 3", "define z.1 = 3",
              "define_vector z = exp x")
    assert (d.line, d.message) == (4, "'z.1', a component of 'z', is already defined (line 3)")


def test_vector_partly_defined_by_components_is_not_defined() -> None:
    d = error("declare_vector input x 3", "declare_vector intvar z 3", "define z.0 = 10",
              "declare_vector intvar p 3", "define_vector p = mul x z")
    assert (d.line, d.message) == (5, "vector 'z' is used before it is defined")


@pytest.mark.parametrize(("line", "message", "column"), [
    ("declare_vector input vec", "declare_vector takes a kind, a name and a size, got 2 words "
     "after it", 0),
    ("declare_vector input vec 3 4", "declare_vector takes a kind, a name and a size, got 4 "
     "words after it", 0),
    ("declare_vector input mul 3", "'mul' is a keyword and cannot be a vector's name", 21),
    ("declare_vector input a.b 3", "'a.b' is not a valid vector name (use letters, digits "
     "and '_', starting with a letter or '_')", 21),
    ("declare_vector weight x 3", "vector 'x' is declared twice (first on line 1)", 22),
    ("declare_vector weight s 3", "'s' is already declared (line 2)", 22),
    ("declare intvar x", "'x' is already declared as a vector (line 1)", 15),
])
def test_bad_declarations(line: str, message: str, column: int) -> None:
    d = error("declare_vector input x 3", "declare intvar s", line)
    assert (d.line, d.message, d.column) == (3, message, column)


DOT_SETUP = (
    "declare_vector intvar u 3", "declare_vector input v 3", "declare_vector input four 4",
    "declare_vector output t 3", "declare intvar p", "declare input x", "declare intvar z",
    "define z = 1",
)


@pytest.mark.parametrize(("line", "message", "column"), [
    ("define n = dot v v", "'n' is defined but never declared", 7),
    ("define z = dot v v", "'z' is already defined (line 8)", 7),
    ("define t = dot v v", "'t' is a vector, but dot gives a single value", 7),
    ("define x = dot v v", "cannot define 'x': it is an input, whose value is given when the "
     "program runs", 7),
    ("define p = dot u v t", "dot takes 2 vectors, got 3", 11),
    ("define p = dot v", "dot takes 2 vectors, got 1", 11),
    ("define p = dot u v", "vector 'u' is used before it is defined", 15),
    ("define p = dot v x", "'x' is not a vector: dot needs a vector declared with "
     "declare_vector (line 6 declares a single variable)", 17),
    ("define p = dot v four", "vectors of different dimension: v has 3 components, four has 4",
     17),
    ("define p dot v v", "missing '=' after the name being defined", 9),
])
def test_bad_dot(line: str, message: str, column: int) -> None:
    d = error(*DOT_SETUP, line)
    assert (d.line, d.message, d.column) == (9, message, column)


@pytest.mark.parametrize(("line", "message", "column"), [
    ("define z = reduce_vector x", "reduce_vector takes a vector and a binary operator or "
     "macro, got 1 word", 11),
    ("define p = reduce_vector x add", "'p' is defined but never declared", 7),
    ("define foo = reduce_vector x add", "cannot define 'foo': it is an input, whose value is "
     "given when the program runs", 7),
    ("define z = reduce_vector p mul", "'p' is not a vector: reduce_vector needs a vector "
     "declared with declare_vector", 25),
    ("define z = reduce_vector v add", "vector 'v' is used before it is defined", 25),
    ("define z = reduce_vector x addition", "reduce_vector needs a binary operator (such as "
     "add or mul) or a binary macro, got 'addition'", 27),
    ("define z = reduce_vector x logistic", "reduce_vector needs a binary operator (such as "
     "add or mul) or a binary macro, got 'logistic'", 27),
    ("define z = reduce_vector x my_unary_macro", "macro 'my_unary_macro' takes 1 operand; "
     "reduce_vector needs a binary operator or macro", 27),
])
def test_bad_reduce_vector(line: str, message: str, column: int) -> None:
    d = error(UNARY, "declare_vector input x 3", "declare intvar z", "declare input foo",
              "declare_vector intvar v 3", line)
    assert (d.line, d.message, d.column) == (6, message, column)


@pytest.mark.parametrize(("line", "message", "column"), [
    ("define s = scale_vector x 2", "'scale_vector' is reserved but not an operation: write "
     "'define_vector r = mul u s' instead", 11),
    ("define x = add s 1", "'x' is a vector: define it with define_vector (or define its "
     "components x.0, x.1, ... one by one)", 7),
    ("define s = add x 1", "'x' is a vector, but 'add' needs single values", 15),
    ("define s = x", "'x' is a vector, but define needs single values", 11),
])
def test_vectors_misused_in_plain_defines(line: str, message: str, column: int) -> None:
    d = error("declare_vector intvar x 3", "declare intvar s", line)
    assert (d.line, d.message, d.column) == (3, message, column)


def test_error_line_counts_blank_and_macro_lines() -> None:
    d = error("", BINARY, "", "", "declare_vector input x 3", "", "declare_vector input y 0")
    assert d.line == 7


# ------------------------------------------------------------------------------ derived names

@pytest.mark.parametrize(("text", "token", "made", "what"), [
    (f"declare_vector input {'x' * 1000} 3\n", 2, ".2", "a vector of 3 components"),
    ("declare_vector input x 3\ndeclare_vector weight w 3\n"
     f"declare intvar {'s' * 999}\ndefine {'s' * 999} = dot x w\n", 1, ".4",
     "the result of dot"),
    ("#macro z = negtanh x; declare intvar q; define q = tanh x; define z = neg q\n"
     f"declare input x\ndeclare intvar {'y' * 999}\ndefine {'y' * 999} = negtanh x\n",
     1, "_q0", "the result of macro 'negtanh'"),
])
def test_a_name_too_long_for_the_names_made_from_it_is_refused_on_its_line(
        text: str, token: int, made: str, what: str) -> None:
    # the original's names (x.0, s.4, y_q0) are made from the user's: a name within the
    # limit must not make one beyond it (issue 16, item 9); they are the original's, so the
    # name is refused where it is written, with the room it has
    with pytest.raises(TenFlangError) as err:
        preprocess_text(text, "long.tf")
    d = err.value.first
    name = text.splitlines()[d.line - 1].split()[token]
    assert d.message.startswith(f"a name of {len(name)} characters is too long to be {what}: "
                                f"this line makes the name '")
    assert f"{made}' from it, of {len(name) + len(made)} characters (at most 1000)" \
        in d.message
    assert d.hint == f"a name of at most {1000 - len(made)} characters"
    shorter = text.replace(name, name[:1000 - len(made)])
    preprocess_text(shorter, "long.tf")  # the room it says is enough
