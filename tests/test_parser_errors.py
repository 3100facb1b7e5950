"""The parser and checker: every rule of the language, and how a violation is reported.

A reported error names the file and ``line N`` (from 1), shows the offending line and puts a
caret under the offending token. These tests call the parser directly; ``test_cli.py`` checks
the same reports through the commands.
"""

from __future__ import annotations

import pytest
from conftest import program_text

from tenflang_nb.core import ops
from tenflang_nb.core.api import compile
from tenflang_nb.core.errors import Diagnostic, TenFlangError
from tenflang_nb.core.lexical import (
    MAX_LINE_LENGTH,
    MAX_NAME_LENGTH,
    RESERVED_WORDS,
    is_name,
    is_number,
)
from tenflang_nb.core.program import parse
from tenflang_nb.core.textio import decode

FILE = "prog.tf"


def errors_of(source: str) -> list[Diagnostic]:
    with pytest.raises(TenFlangError) as info:
        parse(source, FILE)
    return info.value.diagnostics


def first_error(source: str) -> Diagnostic:
    return errors_of(source)[0]


def assert_report(d: Diagnostic, line: int, message: str, token: str | None) -> None:
    """The diagnostic's place and text, and its rendering with the line and a caret."""
    assert d.severity == "error"
    assert d.file == FILE
    assert d.line == line
    assert message in d.message, d.message
    rendered = d.render().split("\n")
    assert rendered[0].startswith(f"{FILE}: line {line}: error: ")
    assert d.source is not None
    assert rendered[1] == "    " + d.source
    caret = rendered[2]
    assert set(caret.strip()) == {"^"}
    if token is not None:
        column = len(caret) - len(caret.lstrip()) - 4
        assert d.source[column:column + len(token)] == token
        assert len(caret.strip()) == len(token)
    assert "Traceback" not in d.render()


W_L = ("declare weight w", "declare loss L")  # lines 1-2 of most programs below


# ------------------------------------------------------------------------ declare / define


def test_define_before_declare() -> None:
    d = first_error(program_text("define z = 2", "declare intvar z"))
    assert_report(d, 1, "'z' is defined before it is declared (declared on line 2)", "z")


def test_define_without_any_declaration() -> None:
    d = first_error(program_text(*W_L, "define z = mul w w"))
    assert_report(d, 3, "'z' is defined but never declared", "z")
    assert d.hint is not None and "declare intvar z" in d.hint


def test_define_twice() -> None:
    d = first_error(program_text(*W_L, "define L = mul w w", "define L = mul w 2"))
    assert_report(d, 4, "'L' is defined twice (first on line 3)", "L")


def test_declare_twice() -> None:
    d = first_error(program_text("declare input x", "declare weight x"))
    assert_report(d, 2, "'x' is declared twice (first on line 1)", "x")


@pytest.mark.parametrize("kind", ["input", "exp_output", "weight"])
def test_values_from_data_cannot_be_defined(kind: str) -> None:
    d = first_error(program_text(f"declare {kind} v", "define v = 3"))
    assert_report(d, 2, f"cannot define 'v': it is declared {kind.replace('_', ' ')} on line 1",
                  "v")


@pytest.mark.parametrize("kind", ["intvar", "output", "loss"])
def test_computed_kinds_can_be_defined(kind: str) -> None:
    program = parse(program_text("declare input x", f"declare {kind} v", "define v = mul x 2"))
    assert program.kind("v") == kind and program.defs["v"].op == "mul"


# ------------------------------------------------------------------------ operands


def test_operand_used_before_its_definition() -> None:
    d = first_error(program_text("declare weight w", "declare intvar a", "declare loss L",
                                 "define L = mul a w", "define a = 2"))
    assert_report(d, 4, "'a' is used before it is defined", "a")


def test_operand_defined_on_the_same_line() -> None:
    d = first_error(program_text(*W_L, "define L = mul w L"))
    assert_report(d, 3, "'L' is used in its own definition", "L")


def test_operand_never_declared() -> None:
    d = first_error(program_text(*W_L, "define L = mul w q"))
    assert_report(d, 3, "'q' is not declared before this line", "q")


def test_operand_declared_after_its_use() -> None:
    d = first_error(program_text(*W_L, "define L = mul w q", "declare input q"))
    assert_report(d, 3, "'q' is not declared before this line (declared on line 4)", "q")


def test_given_values_are_operands_as_soon_as_declared() -> None:
    program = parse(program_text("declare input x", "declare exp_output y", "declare weight w",
                                 "declare intvar a", "declare loss L", "define a = mul x w",
                                 "define L = sub a y"))
    assert program.defs["L"].args == ("a", "y")


def test_operands_of_a_copy_and_a_constant_definition() -> None:
    program = parse(program_text("declare input x", "declare intvar a", "declare intvar c",
                                 "define a = x", "define c = -2.5"))
    assert program.defs["a"].op is None and program.defs["a"].args == ("x",)
    assert program.defs["c"].args[0].value == -2.5  # type: ignore[union-attr]
    d = first_error(program_text("declare intvar a", "define a = b"))
    assert_report(d, 2, "'b' is not declared", "b")


def test_every_error_is_reported_not_only_the_first() -> None:
    diags = errors_of(program_text("declare weight w", "define a = mul w w",
                                   "declare input w", "define w = 2"))
    assert [d.line for d in diags] == [2, 3, 4]


# ------------------------------------------------------------------------ names


@pytest.mark.parametrize("name", ["x", "X2", "_tmp", "w.0", "a.b_c", "layer1.W", "LAMBDA",
                                  "a_1.2", "infinite", "nanny", "loss_one"])
def test_valid_names(name: str) -> None:
    program = parse(program_text(f"declare input {name}", "declare output o",
                                 f"define o = mul {name} 2"))
    assert name in program.decls


@pytest.mark.parametrize(("name", "message"), [
    ("2w", "names cannot start with a digit"),
    ("0", "names cannot start with a digit"),
    ("w-x", "is not a valid name"),
    ("w/x", "is not a valid name"),
    ("w:1", "is not a valid name"),
    (".w", "is not a valid name"),
    ("é", "is not a valid name"),
    ("w$", "is not a valid name"),
    ("mul", "is a keyword"),
    ("logistic", "is a keyword"),
    ("log", "is a keyword"),  # an alias of ln
    ("declare", "is a keyword"),
    ("define", "is a keyword"),
    ("loss", "is a keyword"),
    ("input", "is a keyword"),
    ("exp_output", "is a keyword"),
    ("dot", "is a keyword"),
    ("reduce_vector", "is a keyword"),
    ("constant", "is a keyword"),
    ("inf", "is a keyword"),
    ("nan", "is a keyword"),
    ("null", "is a keyword"),
    ("=", "is a keyword"),
])
def test_invalid_declared_names(name: str, message: str) -> None:
    d = first_error(f"declare input {name}\n")
    assert_report(d, 1, message, name)


def test_every_reserved_word_is_refused_as_a_name() -> None:
    for word in RESERVED_WORDS:
        assert not is_name(word), word
        with pytest.raises(TenFlangError):
            parse(f"declare input {word}\n", FILE)


@pytest.mark.parametrize("name", ["2w", "w-x", "mul"])
def test_invalid_defined_names(name: str) -> None:
    d = first_error(program_text("declare input x", f"define {name} = mul x 2"))
    assert_report(d, 2, "", name)


@pytest.mark.parametrize(("operand", "message"), [
    ("mul", "'mul' is a keyword, not a variable"),
    ("w-x", "is not a valid variable name"),
    ("w/x", "is not a valid variable name"),
])
def test_invalid_operand_names(operand: str, message: str) -> None:
    d = first_error(program_text(*W_L, f"define L = add w {operand}"))
    assert_report(d, 3, message, operand)


def test_names_are_case_sensitive() -> None:
    d = first_error(program_text("declare input X", "declare output o", "define o = mul x 2"))
    assert_report(d, 3, "'x' is not declared", "x")


# ------------------------------------------------------------------------ constants


@pytest.mark.parametrize(("text", "value"), [
    ("2", 2.0), ("-1.5", -1.5), ("3e-2", 0.03), ("19.20", 19.2), ("+2", 2.0), (".5", 0.5),
    ("1e3", 1000.0), ("-0.0", 0.0), ("2.", 2.0), ("1E+2", 100.0), ("007", 7.0),
])
def test_valid_constants(text: str, value: float) -> None:
    assert is_number(text)
    program = parse(program_text("declare input x", "declare output o",
                                 f"define o = mul x {text}"))
    const = program.defs["o"].args[1]
    # double precision, and written back exactly as the user wrote it
    assert const.value == value  # type: ignore[union-attr]
    assert str(const) == text


@pytest.mark.parametrize(("text", "message"), [
    ("inf", "constants must be finite"),
    ("-inf", "constants must be finite"),
    ("+inf", "constants must be finite"),
    ("nan", "constants must be finite"),
    ("NaN", "constants must be finite"),
    ("Infinity", "constants must be finite"),
    ("1e999", "out of range"),
    ("-1e400", "out of range"),
    ("1.2.3", "bad number"),
    ("0x10", "bad number"),
    ("1e", "bad number"),
    ("1_000", "bad number"),
    ("2x", "bad number"),
    ("--1", "bad number"),
    ("-", "bad number"),
    (".", "bad number"),
])
def test_invalid_constants(text: str, message: str) -> None:
    d = first_error(program_text(*W_L, f"define L = mul w {text}"))
    assert_report(d, 3, message, text)


@pytest.mark.parametrize("text", ["inf", "nan", "1e999", "1.2.3"])
def test_invalid_constant_alone(text: str) -> None:
    d = first_error(program_text("declare intvar c", f"define c = {text}"))
    assert_report(d, 2, "", text)


# ------------------------------------------------------------------------ line shapes


def test_unknown_instruction() -> None:
    d = first_error(program_text("declare input x", "decalre output o"))
    assert_report(d, 2, "unknown instruction 'decalre'", "decalre")


def test_unknown_kind() -> None:
    d = first_error("declare intermediate v\n")
    assert_report(d, 1, "unknown kind 'intermediate'", "intermediate")
    assert d.hint is not None and "exp_output" in d.hint


@pytest.mark.parametrize("kind", ["Input", "constant", "weights", "intvar:"])
def test_other_unknown_kinds(kind: str) -> None:
    assert_report(first_error(f"declare {kind} v\n"), 1, f"unknown kind '{kind}'", kind)


def test_unknown_operator_with_a_hint() -> None:
    d = first_error(program_text(*W_L, "define L = mull w w"))
    assert_report(d, 3, "unknown operator 'mull'", "mull")
    assert d.hint is not None and "mul" in d.hint


def test_several_close_operators_are_listed_as_prose() -> None:
    d = first_error(program_text(*W_L, "define L = su w w"))
    assert d.hint is not None
    close = sorted(op.name for op in ops.OPS_LIST if op.name.startswith("su"))
    assert len(close) > 2  # "a, b or c", as every list in a message
    assert d.hint == "did you mean " + ", ".join(close[:-1]) + f" or {close[-1]}?"


def test_operator_that_is_not_a_name() -> None:
    d = first_error(program_text(*W_L, "define L = 2 w w"))
    assert_report(d, 3, "expected an operator, got '2'", "2")


@pytest.mark.parametrize(("rhs", "message", "token"), [
    ("mul w", "'mul' takes 2 operands, got 1", "mul"),
    ("mul", "'mul' takes 2 operands, got 0", "mul"),
    ("mul w w w", "'mul' takes 2 operands, got 3", None),
    ("exp w w", "'exp' takes one operand, got 2", None),
    ("exp", "'exp' takes one operand, got 0", "exp"),
    ("pow w 2 3", "'pow' takes 2 operands, got 3", "3"),
])
def test_wrong_operand_count(rhs: str, message: str, token: str | None) -> None:
    d = first_error(program_text(*W_L, f"define L = {rhs}"))
    assert_report(d, 3, message, token)


def test_original_typo_mul_2diff_is_a_missing_operand() -> None:
    # the 2016 GCP's 'mul 2diff' (SPEC_ORIGINAL, fixture v0_..._malformed_mul_2diff.tf)
    d = first_error(program_text("declare input diff", "declare intvar d",
                                 "define d = mul 2diff"))
    assert_report(d, 3, "'mul' takes 2 operands, got 1", "mul")


@pytest.mark.parametrize("line", ["define L mul w w", "define L == mul w w",
                                  "define L : mul w w"])
def test_missing_equals(line: str) -> None:
    d = first_error(program_text(*W_L, line))
    assert_report(d, 3, "", None)
    assert "=" in d.message


@pytest.mark.parametrize("line", ["define L=mul w w", "define L= mul w w", "define L =mul w w"])
def test_equals_without_spaces(line: str) -> None:
    d = first_error(program_text(*W_L, line))
    assert "=" in d.message
    token = next(t for t in line.split() if "=" in t)
    assert_report(d, 3, "put spaces around '='", token)  # not under an operand


@pytest.mark.parametrize("line", ["define", "define L", "define L =", "declare", "declare input"])
def test_truncated_lines(line: str) -> None:
    d = first_error(program_text("declare input x", line))
    assert_report(d, 2, "", None)


def test_trailing_words_after_a_declaration_are_a_bad_shape() -> None:
    d = first_error("declare input x y\n")
    assert_report(d, 1, "expected a shape like [64, 32], got 'y'", "y")


@pytest.mark.parametrize(("shape", "message"), [
    ("[3", "expected a shape"), ("3]", "expected a shape"), ("[0]", "positive integers"),
    ("[a]", "positive integers"), ("[2,]", "positive integers"), ("[-1]", "positive integers"),
    ("[1, 2, 3, 4, 5]", "at most 4 dimensions"),
])
def test_bad_shapes(shape: str, message: str) -> None:
    d = first_error(f"declare weight W {shape}\n")
    assert_report(d, 1, message, None)


def test_good_shapes() -> None:
    program = parse("declare weight W [3, 2]\ndeclare weight s []\ndeclare input v [4]\n"
                    "declare input T [1,2,3,4]\n")
    assert program.shapes == {"W": (3, 2), "s": (), "v": (4,), "T": (1, 2, 3, 4)}


def test_unexpanded_vector_lines_are_explained() -> None:
    # declare_vector & co. are expanded first; a malformed one is still an error on its line
    d = first_error(program_text("declare input x", "declare_vector input"))
    assert d.line == 2 and d.file == FILE


# ------------------------------------------------------------------------ whole files


@pytest.mark.parametrize("source", ["", "\n\n\n", "   \n\t\n", "# just a comment\n"])
def test_empty_program(source: str) -> None:
    errors = errors_of(source)
    assert len(errors) == 1
    assert errors[0].file == FILE
    assert "empty" in errors[0].message


def test_blank_lines_and_comments_keep_line_numbers() -> None:
    d = first_error("# a comment\n\ndeclare input x\n   \n\ndefine q = 1\n")
    assert_report(d, 6, "'q' is defined but never declared", "q")


def test_crlf_and_tabs() -> None:
    program = parse("declare\tinput\tx\r\ndeclare output o\r\ndefine o  =\tmul x  2\r\n", FILE)
    assert program.defs["o"].args[0] == "x"
    d = first_error("declare input x\r\ndefine o = mul x 2\r\n")
    assert_report(d, 2, "'o' is defined but never declared", "o")


def test_non_utf8_bytes_name_the_line() -> None:
    data = b"declare input x\ndeclare output o\ndefine o = mul x \xff2\n"
    with pytest.raises(TenFlangError) as info:
        decode(data, FILE)
    d = info.value.first
    assert d.file == FILE and d.line == 3
    assert "not UTF-8" in d.message and "0xff" in d.message
    rendered = d.render().split("\n")
    assert rendered[0].startswith(f"{FILE}: line 3: error: ")
    assert rendered[1].startswith("    define o = mul x ")  # the line, bad byte replaced
    assert rendered[2] == "    " + " " * len("define o = mul x ") + "^"


def test_utf8_byte_order_mark_is_ignored() -> None:
    text = decode("\ufeffdeclare input x\n".encode(), FILE)
    assert parse(text, FILE).names("input") == ["x"]


def test_overlong_line() -> None:
    source = "declare input x\n" + "define o = mul x " + "1" * MAX_LINE_LENGTH + "\n"
    d = first_error(source)
    assert d.file == FILE and d.line == 2
    assert "characters long" in d.message
    rendered = d.render().split("\n")
    assert rendered[1].startswith("    define o = mul x 111")
    assert rendered[2].strip().startswith("^")


def test_line_of_exactly_the_maximum_length_is_fine() -> None:
    line = "declare input x  # " + "c" * (MAX_LINE_LENGTH - len("declare input x  # "))
    assert len(line) == MAX_LINE_LENGTH
    assert parse(line + "\n", FILE).names("input") == ["x"]


def test_names_have_a_length_limit_so_that_every_gcp_line_reads_back() -> None:
    long = "x" * (MAX_NAME_LENGTH + 1)
    d = first_error(f"declare input {long}\n")
    assert f"a name of {MAX_NAME_LENGTH + 1} characters is too long" in d.message
    w, t = "w" * MAX_NAME_LENGTH, "t" * MAX_NAME_LENGTH
    source = program_text(f"declare weight {w}", f"declare intvar {t}", "declare loss L",
                          f"define {t} = mul {w} {w}", f"define L = mul {t} {t}")
    gcp = compile(parse(source, FILE), full=True)
    assert max(map(len, gcp.text.splitlines())) <= MAX_LINE_LENGTH
    assert gcp.program().names("output") == [f"d/L/d/{w}"]


# ------------------------------------------------------------------------ shape inference


@pytest.mark.parametrize(("line", "op", "shapes"), [
    ("define r = add u v", "add", "[3] and [2]"),
    ("define r = mul M v", "mul", "[2, 3] and [2]"),
    ("define r = matmul u M", "matmul", "[3] and [2, 3]"),
    ("define r = matmul M M", "matmul", "[2, 3] and [2, 3]"),
    ("define r = softmax M", "softmax", "[2, 3]"),
    ("define r = logsumexp s", "logsumexp", "[]"),
    ("define r = outer M u", "outer", "[2, 3] and [3]"),
    ("define r = transpose T", "transpose", "[2, 2, 2]"),
    ("define r = sumto u M", "sumto", "[3] and [2, 3]"),
    ("define r = broadcast M u", "broadcast", "[2, 3] and [3]"),
])
def test_shape_errors_name_the_operator_and_both_shapes(line: str, op: str,
                                                        shapes: str) -> None:
    source = program_text("declare input u [3]", "declare input v [2]",
                          "declare input M [2, 3]", "declare input s",
                          "declare input T [2, 2, 2]", "declare intvar r", line)
    d = first_error(source)
    assert_report(d, 7, f"{op} of {shapes}", op)


def test_declared_shape_must_match_the_inferred_one() -> None:
    d = first_error(program_text("declare input M [2, 3]", "declare input u [3]",
                                 "declare intvar r [3]", "define r = matmul M u"))
    assert_report(d, 4, "'r' is declared with shape [3] on line 3, but this line gives [2]",
                  "r")


def test_broadcasting_shapes_are_inferred() -> None:
    program = parse(program_text(
        "declare input h [3]", "declare weight b [3]", "declare weight c",
        "declare input M [2, 3]", "declare input K [2, 1]", "declare intvar p",
        "declare intvar q", "declare intvar r", "declare intvar s",
        "define p = add h b", "define q = add h c", "define r = mul M h",
        "define s = sub K h"))
    assert [program.shapes[n] for n in "pqrs"] == [(3,), (3,), (2, 3), (2, 3)]


def test_a_failed_line_does_not_hide_later_errors() -> None:
    diags = errors_of(program_text("declare input u [3]", "declare input v [2]",
                                   "declare intvar r", "define r = add u v",
                                   "define q = 2"))
    assert [d.line for d in diags] == [4, 5]


def test_uses_of_a_failed_line_add_no_misleading_error() -> None:
    # r's line failed; saying "'r' is used before it is defined" on line 6 would be false
    diags = errors_of(program_text("declare input u [3]", "declare input v [2]",
                                   "declare intvar r", "define r = add u v",
                                   "declare intvar s", "define s = sum r",
                                   "define z = mul s 2", "define t = mul s 3"))
    assert [(d.line, d.message.split(":")[0]) for d in diags] == [
        (4, "add of [3] and [2]"), (7, "'z' is defined but never declared"),
        (8, "'t' is defined but never declared")]


# ------------------------------------------------------------------------ warnings


def test_warnings_for_unused_and_ineffective_declarations() -> None:
    program = parse(program_text(
        "declare input x", "declare input unused_in", "declare weight w",
        "declare weight lonely", "declare weight idle", "declare intvar a",
        "declare intvar spare", "declare output never", "declare loss L",
        "define a = mul idle 2", "define spare = mul x 2", "define L = mul w x"), FILE)
    warnings = {(d.line, d.message) for d in program.warnings}
    assert all(d.severity == "warning" for d in program.warnings)
    assert (2, "'unused_in' is declared but never used") in warnings
    assert (4, "'lonely' is declared but never used") in warnings
    assert (5, "weight 'idle' cannot affect the loss 'L' (its gradient is always 0)") in warnings
    assert (6, "'a' is defined but never used") in warnings
    assert (7, "'spare' is defined but never used") in warnings
    assert (8, "output 'never' is declared but never defined (it stays null)") in warnings
    assert not any(line in (1, 3, 9) for line, _ in warnings)
    for d in program.warnings:
        assert d.render().startswith(f"{FILE}: line {d.line}: warning: ")
