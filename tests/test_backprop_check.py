"""The backward-pass checker (core/backprop_check/): right answers pass, each usual mistake
is pinned on its root line with the right hint, downstream lines are not blamed, missing
adjoints are listed as missing, errors name the student's line, tensors work."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FAN_OUT
from hint_support import (
    BATCH,
    BATCH_RIGHT,
    DIGITS,
    DIGITS_RIGHT,
    SQUARE,
    SQUARE_RIGHT,
    drawn_exercise,
    exercise,
    spelled_out,
)

from tenflang_nb.core.api import check_backprop, parse
from tenflang_nb.core.backprop_check import BackpropCheck
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.formatting import fmt_shape, fmt_value
from tenflang_nb.core.program import Program
from tenflang_nb.notebook.views.check import backprop_check_html

SEED = parse(SEED_EXAMPLE, "seed.tf")

FAN = parse(FAN_OUT, "fan.tf")

DIV = parse("""\
declare input x
declare weight u
declare weight v
declare intvar a
declare intvar b
declare intvar r
declare loss L
define a = add x u
define b = mul x v
define r = div a b
define L = mul r r
""", "div.tf")

SOFTMAX_CE = parse("""\
declare input x [4]
declare exp_output y [3]
declare weight W [4, 3]
declare intvar z
declare intvar logp
declare intvar nll
declare intvar s
declare loss L
define z = matmul x W
define logp = logsoftmax z
define nll = mul y logp
define s = sum nll
define L = neg s
""", "ce.tf")

SEED_RIGHT = """\
# the backward pass of the seed, from the loss up
define d/lambda/d/diff = mul 2 diff
define d/lambda/d/o = d/lambda/d/diff     # diff = sub o y: the partial is 1
define one_minus_o = sub 1 o
define d/o/d/z = mul o one_minus_o
define d/lambda/d/z = mul d/lambda/d/o d/o/d/z
define d/lambda/d/w = mul d/lambda/d/z x
"""

FAN_RIGHT = """\
define d/L/d/e = add e e
define d/L/d/o = d/L/d/e
define d/L/d/b = d/L/d/o
define d/L/d/c = d/L/d/o
define t = sub 1 b
define db = mul b t
define via_b = mul d/L/d/b db
define cc = mul c c
define dc = sub 1 cc
define via_c = mul d/L/d/c dc
define d/L/d/a = add via_b via_c
define d/L/d/w = mul d/L/d/a x
"""

DIV_RIGHT = """\
define d/L/d/r = add r r
define d/L/d/a = div d/L/d/r b
define q = div r b
define d/r/d/b = neg q
define d/L/d/b = mul d/L/d/r d/r/d/b
define d/L/d/u = d/L/d/a
define d/L/d/v = mul d/L/d/b x
"""

CE_RIGHT = """\
define p = softmax z
define d/L/d/z = sub p y
define d/L/d/W = outer x d/L/d/z
"""


def wrong_line(result: BackpropCheck) -> int | None:
    assert not result.ok
    return result.first_wrong_line


def hint(result: BackpropCheck, line: int) -> str:
    verdict = result.verdict(line)
    assert verdict is not None and verdict.hint is not None, result.report()
    return verdict.hint


# ------------------------------------------------------------------------------ right answers

@pytest.mark.parametrize(("shape", "text"), [
    (SEED, SEED_RIGHT), (FAN, FAN_RIGHT), (DIV, DIV_RIGHT),
    (parse("declare weight w\ndeclare loss L\ndefine L = mul w w\n"), "define d/L/d/w = add w w"),
], ids=["seed", "fan-out", "div", "mul-w-w"])
def test_a_fully_right_answer_is_ok(shape: object, text: str) -> None:
    result = check_backprop(shape, text)  # type: ignore[arg-type]
    assert result.ok, result.report()
    assert result.first_wrong_line is None
    assert result.wrong == [] and result.missing == []
    assert all(v.status == "right" for v in result.lines)
    assert result.headline().startswith("✓ all right")
    assert result.draws == 5


def test_helpers_of_any_name_and_another_decomposition_are_fine() -> None:
    text = """\
declare intvar twice
define twice = mul diff 2
define d/lambda/d/diff = twice
define m = sub 1 o
define slope = mul m o
define g = mul twice slope
define d/lambda/d/z = g
define d/lambda/d/w = mul x d/lambda/d/z
"""
    result = check_backprop(SEED, text, require=["diff", "z", "w"])
    assert result.ok, result.report()
    assert result.verdict(3).role == "adjoint"  # type: ignore[union-attr]
    assert {v.name for v in result.lines if v.role == "helper"} == {"twice", "m", "slope", "g"}


def test_the_loss_own_adjoint_and_an_input_adjoint_are_checked_too() -> None:
    result = check_backprop(SEED, "define d/lambda/d/lambda = 1\n"
                                  "define d/lambda/d/diff = mul 2 diff\n"
                                  "define d/lambda/d/y = neg d/lambda/d/diff\n",
                            require=["diff"])
    assert result.ok, result.report()
    assert result.right == ["d/lambda/d/diff", "d/lambda/d/lambda", "d/lambda/d/y"]
    wrong = check_backprop(SEED, "define d/lambda/d/lambda = 2\n", require=["lambda"])
    assert wrong.first_wrong_line == 1
    assert "adjoint of the loss itself is 1" in hint(wrong, 1)


# ------------------------------------------------------------------------------ the usual mistakes

def test_missing_fan_out_term_blames_the_adjoint_line_not_its_helpers() -> None:
    text = FAN_RIGHT.replace("define d/L/d/a = add via_b via_c", "define d/L/d/a = via_b")
    result = check_backprop(FAN, text)
    assert wrong_line(result) == 11
    h = hint(result, 11)
    assert h.startswith("fan-out: a is used 2 times, by `define b = logistic a` and "
                        "`define c = tanh a` (lines 12 and 13 of fan.tf)")
    assert "misses the term via `define c = tanh a` (d/L/d/c · d/c/d/a)" in h
    assert result.verdict(12).status == "inherits"  # type: ignore[union-attr]
    assert result.verdict(12).because == (11,)  # type: ignore[union-attr]
    statuses = [result.verdict(n).status for n in range(5, 11)]  # type: ignore[union-attr]
    # the helpers of the path via b are right; those of the path via c are not used at all
    assert statuses == ["right"] * 3 + ["unused"] * 3


def test_missing_fan_out_term_with_helpers_and_compiler_adjoints() -> None:
    text = "define cc = mul c c\ndefine dc = sub 1 cc\ndefine d/L/d/a = mul d/L/d/c dc\n"
    result = check_backprop(FAN, text, require=["a"])
    assert wrong_line(result) == 3
    assert "misses the term via `define b = logistic a`" in hint(result, 3)
    # the adjoints it used and did not define came from the compiler: missing, not wrong
    assert "d/L/d/c" in result.missing and "d/L/d/c" not in result.wrong
    assert next(a for a in result.adjoints if a.name == "d/L/d/c").given


def test_a_sign_mistake() -> None:
    text = DIV_RIGHT.replace("define d/r/d/b = neg q", "define d/r/d/b = q")
    result = check_backprop(DIV, text)
    assert wrong_line(result) == 4
    assert "negative of the right one" in hint(result, 4)
    assert [result.verdict(n).status for n in (5, 6, 7)] == [  # type: ignore[union-attr]
        "inherits", "right", "inherits"]


def test_a_sign_mistake_in_an_adjoint_line() -> None:
    result = check_backprop(SEED, SEED_RIGHT.replace(
        "define d/lambda/d/o = d/lambda/d/diff", "define d/lambda/d/o = neg d/lambda/d/diff"))
    assert wrong_line(result) == 3
    assert "negative" in hint(result, 3)
    assert result.wrong == ["d/lambda/d/o", "d/lambda/d/z", "d/lambda/d/w"]
    assert [v.because for v in result.lines if v.status == "inherits"] == [(3,), (3,)]


def test_the_value_used_where_the_local_partial_belongs() -> None:
    text = ("define d/lambda/d/diff = mul 2 diff\n"
            "define d/lambda/d/o = d/lambda/d/diff\n"
            "define d/lambda/d/z = mul d/lambda/d/o o\n"
            "define d/lambda/d/w = mul d/lambda/d/z x\n")
    result = check_backprop(SEED, text)
    assert wrong_line(result) == 3
    h = hint(result, 3)
    assert "you used the value of o where the local partial d/o/d/z" in h
    assert "mul o (sub 1 o)" in h  # the compiler's partial, written inline
    assert result.verdict(4).status == "inherits"  # type: ignore[union-attr]


def test_the_value_used_as_a_named_local_partial() -> None:
    result = check_backprop(SEED, SEED_RIGHT.replace("define d/o/d/z = mul o one_minus_o",
                                                     "define d/o/d/z = o"))
    assert wrong_line(result) == 5
    assert result.verdict(5).role == "partial"  # type: ignore[union-attr]
    assert "your value is o itself, not its local partial" in hint(result, 5)
    assert result.verdict(4).status == "unused"  # type: ignore[union-attr]


def test_the_local_partial_without_the_incoming_adjoint() -> None:
    text = SEED_RIGHT.replace("define d/lambda/d/z = mul d/lambda/d/o d/o/d/z",
                              "define d/lambda/d/z = d/o/d/z")
    result = check_backprop(SEED, text)
    assert wrong_line(result) == 6
    assert "local partial d/o/d/z alone: multiply it by the incoming adjoint" in hint(result, 6)


def test_the_incoming_adjoint_without_the_local_partial() -> None:
    text = SEED_RIGHT.replace("define d/lambda/d/z = mul d/lambda/d/o d/o/d/z",
                              "define d/lambda/d/z = d/lambda/d/o")
    result = check_backprop(SEED, text)
    assert wrong_line(result) == 6
    assert "incoming adjoint d/lambda/d/o alone" in hint(result, 6)


def test_the_wrong_operand_of_a_product() -> None:
    text = SEED_RIGHT.replace("define d/lambda/d/w = mul d/lambda/d/z x",
                              "define d/lambda/d/w = mul d/lambda/d/z w")
    result = check_backprop(SEED, text)
    assert wrong_line(result) == 7
    assert "you used w itself where the local partial d/z/d/w = x belongs" in hint(result, 7)


def test_a_factor_of_2_missing_in_a_square() -> None:
    result = check_backprop(SEED, SEED_RIGHT.replace("mul 2 diff", "diff"))
    assert wrong_line(result) == 2
    assert "half the right one" in hint(result, 2)
    assert all(v.status == "inherits" for v in result.lines if v.role == "adjoint"
               and v.line > 2)


def test_mul_w_w_gives_two_terms() -> None:
    result = check_backprop(FAN, FAN_RIGHT.replace("define d/L/d/e = add e e",
                                                   "define d/L/d/e = e"))
    assert wrong_line(result) == 1
    h = hint(result, 1)
    # each use named, with its own term: the other operand, e
    assert "uses e twice" in h and "e (first operand) + e (second operand)" in h
    assert "only one of them" in h


def test_a_factor_of_2_too_many() -> None:
    result = check_backprop(DIV, DIV_RIGHT.replace("define d/L/d/u = d/L/d/a",
                                                   "define d/L/d/u = mul 2 d/L/d/a"))
    assert wrong_line(result) == 6
    assert "twice the right one" in hint(result, 6)


def test_a_wrong_helper_is_the_root_not_the_adjoint_that_uses_it() -> None:
    text = SEED_RIGHT.replace("define d/o/d/z = mul o one_minus_o", "define slope = o") \
                     .replace("mul d/lambda/d/o d/o/d/z", "mul d/lambda/d/o slope")
    result = check_backprop(SEED, text)
    assert wrong_line(result) == 5
    root = result.verdict(5)
    assert root is not None and root.role == "helper" and root.reference == "d/o/d/z"
    assert "slope should be the local partial d/o/d/z = mul o (sub 1 o)" in str(root.hint)
    assert "yours is the value of o" in str(root.hint)
    assert result.verdict(6).because == (5,)  # type: ignore[union-attr]
    assert root.expected is not None and root.actual is not None  # values to show


def test_a_wrong_sign_in_a_helper() -> None:
    result = check_backprop(DIV, DIV_RIGHT.replace("define q = div r b", "define q = div b r")
                            .replace("define d/r/d/b = neg q\n", "")
                            .replace("mul d/L/d/r d/r/d/b", "mul d/L/d/r q"))
    assert wrong_line(result) == 3
    assert "q should be the local partial d/r/d/b = neg (div r b)" in hint(result, 3)


def test_a_helper_word_for_word_the_compilers_is_never_the_root() -> None:
    # q = div r b is the compiler's own d/r/d/b:0: right as such; line 4 uses it where
    # d/r/d/b = neg q belongs, so line 4 holds the mistake (issue 16, item 3)
    result = check_backprop(DIV, DIV_RIGHT.replace("define d/r/d/b = neg q\n", "")
                            .replace("mul d/L/d/r d/r/d/b", "mul d/L/d/r q"))
    assert wrong_line(result) == 4
    assert result.verdict(3).status == "right"  # type: ignore[union-attr]
    assert hint(result, 4).startswith(
        "q (line 3) is right as a part of the local partial d/r/d/b of `define r = div a b` "
        "(line 10 of div.tf): the compiler's d/r/d/b:0 = div r b, but here the local "
        "partial d/r/d/b = neg (div r b) belongs")
    assert result.verdict(6).because == (4,)  # type: ignore[union-attr]


def test_independent_mistakes_are_each_a_root_and_the_first_is_named() -> None:
    text = (SEED_RIGHT.replace("mul 2 diff", "mul 3 diff")
            .replace("mul d/lambda/d/z x", "mul d/lambda/d/z w"))
    result = check_backprop(SEED, text)
    assert [v.line for v in result.roots] == [2, 7]
    assert result.first_wrong_line == 2


def test_a_value_that_is_not_a_number() -> None:
    text = "define s = mul diff diff\ndefine m = neg s\ndefine d/lambda/d/diff = ln m\n"
    result = check_backprop(SEED, text, require=["diff"])
    assert wrong_line(result) == 3
    assert "not a number" in hint(result, 3)


# ------------------------------------------------------------------------------ missing adjoints

def test_adjoints_not_written_are_missing_not_wrong() -> None:
    result = check_backprop(SEED, "define d/lambda/d/diff = mul 2 diff\n")
    assert result.right == ["d/lambda/d/diff"]
    assert result.wrong == []
    assert result.missing == ["d/lambda/d/o", "d/lambda/d/z", "d/lambda/d/w"]
    assert result.first_wrong_line is None
    assert not result.ok  # every weight's gradient is required by default
    assert result.missing_required == ["d/lambda/d/w"]
    assert result.headline().endswith("but not written yet: d/lambda/d/w")
    assert ("not written yet: d/lambda/d/o, d/lambda/d/z, d/lambda/d/w (required)"
            in result.report())


def test_one_block_at_a_time_with_require() -> None:
    block = check_backprop(FAN, "define d/L/d/w = mul d/L/d/a x\n", require=["w"])
    assert block.ok, block.report()
    assert "d/L/d/a" in block.missing
    assert next(a for a in block.adjoints if a.name == "d/L/d/a").given
    assert check_backprop(FAN, "define d/L/d/w = mul d/L/d/a x\n",
                          require=["d/L/d/w", "a"]).missing_required == ["d/L/d/a"]


def test_a_required_input_or_loss_adjoint_not_written_is_missing_not_all_right() -> None:
    # the pruned GCP has neither d/lambda/d/x (an input's) nor d/lambda/d/lambda (issue 25)
    for v in ("x", "lambda"):
        result = check_backprop(SEED, "define d/lambda/d/diff = mul 2 diff\n",
                                require=["diff", v])
        assert not result.ok, result.report()
        assert result.missing_required == [f"d/lambda/d/{v}"]
        assert result.headline() == ("✗ so far so good (1 right), but not written yet: "
                                     f"d/lambda/d/{v}")
        assert f"d/lambda/d/{v} (required)" in result.report()
    written = check_backprop(SEED, "define d/lambda/d/lambda = 1\n"
                                   "define d/lambda/d/diff = mul 2 diff\n"
                                   "define d/lambda/d/o = d/lambda/d/diff\n"
                                   "define t = sub 1 o\ndefine slope = mul o t\n"
                                   "define d/lambda/d/z = mul d/lambda/d/o slope\n"
                                   "define d/lambda/d/x = mul d/lambda/d/z w\n",
                             require=["x", "lambda"])
    assert written.ok, written.report()


def test_a_helper_named_like_an_adjoint_is_refused_with_the_naming_rule() -> None:
    rule = ("names of the form d/x/d/y are adjoints (d/lambda/d/v) or local partials (d/p/d/v) "
            "of the model's variables; call a helper t1 or slope")
    for text, refused in (("define d/lambda/d/z_t0 = mul 2 diff", "'z_t0' is not a variable"),
                          ("define d/h/d/z = mul 2 diff", "'h' is not the loss")):
        result = check_backprop(SEED, text)
        assert result.error is not None
        message = result.error.first.message
        assert message.startswith(refused) and message.endswith(rule), message
        assert rule in result.headline()
    assert check_backprop(SEED, "define t1 = mul 2 diff").error is None


def test_require_names_are_checked() -> None:
    with pytest.raises(TenFlangError, match="'q' is neither a variable"):
        check_backprop(SEED, "define d/lambda/d/diff = mul 2 diff", require=["q"])


# ------------------------------------------------------------------------------ errors

def test_a_syntax_error_names_the_students_line() -> None:
    result = check_backprop(SEED, "define d/lambda/d/diff = mul 2 diff\n"
                                  "define d/lambda/d/o = mul d/lambda/d/diff\n", name="seed")
    assert not result.ok and result.error is not None
    assert result.first_wrong_line == 2
    text = result.report()
    assert "seed (your backward pass): line 2: error: 'mul' takes 2 operands, got 1" in text
    assert "    define d/lambda/d/o = mul d/lambda/d/diff\n" in text
    assert "                          ^^^" in text
    assert result.lines == []


def test_every_error_at_once_each_on_its_line() -> None:
    result = check_backprop(SEED, """\
define d/lambda/d/diff = mul 2 diff
define x = 3
define d/L/d/w = 2
declare input k
define d/lambda/d/q = 1
define t = logistik o
define_vector v = mul x 2
""")
    assert result.error is not None
    found = [(d.line, d.message) for d in result.error.diagnostics]
    assert [line for line, _ in found] == [2, 3, 4, 5, 6, 7]
    messages = " | ".join(m for _, m in found)
    assert "'x' is a variable of the model (seed.tf, line 1)" in messages
    assert "'L' is not the loss of the model ('lambda')" in messages
    assert "declare 'k' intvar" in messages
    assert "'q' is not a variable of the model" in messages
    assert "unknown operator 'logistik'" in messages
    assert "'define_vector' is not available in a backward pass" in messages


def test_order_matters_an_adjoint_used_before_it_is_defined() -> None:
    result = check_backprop(SEED, "define d/lambda/d/o = d/lambda/d/diff\n"
                                  "define d/lambda/d/diff = mul 2 diff\n")
    assert result.error is not None and result.first_wrong_line == 1
    assert "used before it is defined" in result.error.first.message


def test_undeclared_helper_and_declarations_are_optional() -> None:
    assert check_backprop(SEED, "declare intvar t\ndefine t = mul 2 diff\n"
                                "define d/lambda/d/diff = t\n", require=["diff"]).ok
    result = check_backprop(SEED, "define d/lambda/d/diff = mul 2 q\n")
    assert result.error is not None
    assert result.error.first.message == "'q' is not defined before this line"
    assert result.error.first.hint == ("define it on an earlier line ('define q = ...'): a "
                                       "backward pass needs no declarations")


def test_nothing_to_check() -> None:
    result = check_backprop(SEED, "# only a comment\n\n")
    assert not result.ok and result.first_wrong_line is None
    assert result.error is not None and "nothing to check" in result.error.first.message


def test_a_program_without_a_loss_is_refused() -> None:
    with pytest.raises(TenFlangError, match="no loss declared"):
        check_backprop(parse("declare input x\ndeclare output y\ndefine y = mul x 2\n"),
                       "define t = 1")


def test_a_program_defined_nowhere_is_refused() -> None:
    never = parse("declare weight w\ndeclare intvar s\ndeclare intvar n\ndeclare loss L\n"
                  "define s = mul w w\ndefine n = neg s\ndefine L = sqrt n\n")
    with pytest.raises(TenFlangError, match="could not draw inputs and weights"):
        check_backprop(never, "define d/L/d/w = 1")


# ------------------------------------------------------------------------------ tensors

def test_softmax_cross_entropy_vjp() -> None:
    result = check_backprop(SOFTMAX_CE, CE_RIGHT, require=["z", "W"])
    assert result.ok, result.report()
    assert result.missing == ["d/L/d/s", "d/L/d/nll", "d/L/d/logp"]


def test_softmax_cross_entropy_written_in_full() -> None:
    result = check_backprop(SOFTMAX_CE, """\
define d/L/d/s = -1
define d/L/d/nll = broadcast d/L/d/s nll
define d/L/d/logp = mul d/L/d/nll y
define p = exp logp
define total = sum d/L/d/logp
define pt = mul p total
define d/L/d/z = sub d/L/d/logp pt
define d/L/d/W = outer x d/L/d/z
""")
    assert result.ok, result.report()


def test_softmax_cross_entropy_with_the_sign_flipped() -> None:
    result = check_backprop(SOFTMAX_CE, CE_RIGHT.replace("sub p y", "sub y p"),
                            require=["z", "W"])
    assert wrong_line(result) == 2
    assert "negative" in hint(result, 2)
    assert result.verdict(3).status == "inherits"  # type: ignore[union-attr]


def test_softmax_cross_entropy_with_the_outer_product_transposed() -> None:
    result = check_backprop(SOFTMAX_CE, CE_RIGHT.replace("outer x d/L/d/z", "outer d/L/d/z x"),
                            require=["z", "W"])
    assert wrong_line(result) == 3
    h = hint(result, 3)
    assert "W has shape [4, 3], but this line gives [3, 4]" in h and "transpose" in h


def test_expected_outputs_that_are_vectors_are_drawn_as_distributions() -> None:
    # softmax - y is the gradient only when y sums to 1: the right answer above relies on it
    result = check_backprop(SOFTMAX_CE, "define t = sum y\ndefine d/L/d/s = -1\n",
                            require=["s"])
    assert result.ok
    total = result.verdict(1)
    assert total is not None and total.status == "unused" and total.actual is not None
    np.testing.assert_allclose(total.actual, 1.0)


def test_programs_with_ln_get_positive_draws() -> None:
    logs = parse("declare input x\ndeclare weight w\ndeclare intvar a\ndeclare loss L\n"
                 "define a = mul w x\ndefine L = ln a\n", "logs.tf")
    result = check_backprop(logs, "define d/L/d/a = div 1 a\ndefine d/L/d/w = mul d/L/d/a x\n")
    assert result.ok, result.report()
    assert result.draws == 5


# ------------------------------------------------------------------------------ the report

def test_the_report_shows_expected_and_actual_values() -> None:
    result = check_backprop(SEED, SEED_RIGHT.replace("mul 2 diff", "diff"))
    root = result.roots[0]
    assert root.expected is not None and root.actual is not None
    assert root.expected.shape == root.actual.shape == (5,)
    np.testing.assert_allclose(root.actual, root.expected / 2)
    text = str(result)
    assert text.splitlines()[0] == "✗ line 2 is the first wrong line"
    assert (f"expected d/lambda/d/diff = {fmt_value(root.expected[0], 'report')}, "
            f"got {fmt_value(root.actual[0], 'report')} (draw 1)") in text
    assert "✗ wrong only because of line 2" in text


def test_the_same_seed_gives_the_same_draws() -> None:
    a = check_backprop(SEED, SEED_RIGHT.replace("mul 2 diff", "diff"))
    b = check_backprop(SEED, SEED_RIGHT.replace("mul 2 diff", "diff"))
    assert a.report() == b.report()
    c = check_backprop(SEED, SEED_RIGHT.replace("mul 2 diff", "diff"), seed=1, draws=3)
    assert c.draws == 3 and c.sample != a.sample


# ------------------------------------------------------------------------------ issue 16

TINY = parse("declare input x\ndeclare weight w\ndeclare intvar e\ndeclare loss L\n"
             "define e = mul w x\ndefine L = mul 1e-10 e\n", "tiny.tf")
SQUARE_MID = parse("declare input x\ndeclare weight w\ndeclare intvar z\ndeclare intvar s\n"
                   "declare loss L\ndefine z = mul w x\ndefine s = mul z z\n"
                   "define L = mul 3 s\n", "zz.tf")


def test_tiny_gradients_are_judged_on_their_own_scale() -> None:
    # an absolute tolerance of 1e-9 called an all-zero answer right here (item 2)
    zeros = check_backprop(TINY, "define d/L/d/e = 0\ndefine d/L/d/w = 0\n")
    assert wrong_line(zeros) == 1
    assert hint(zeros, 1) == "your value is 0 on every draw"
    assert check_backprop(TINY, "define d/L/d/e = 1e-10\n"
                                "define d/L/d/w = mul d/L/d/e x\n").ok
    off = check_backprop(TINY, "define d/L/d/e = 1.001e-10\ndefine d/L/d/w = mul d/L/d/e x\n")
    assert wrong_line(off) == 1
    huge = parse(TINY.text().replace("1e-10", "1e10"), "huge.tf")
    assert check_backprop(huge, "define d/L/d/e = 1e10\ndefine d/L/d/w = mul d/L/d/e x\n").ok


def test_an_adjoint_that_cancels_to_zero_is_not_asked_for_every_bit() -> None:
    # d/L/d/z of a sum of softmax outputs is 0 up to rounding: 0 is the right answer
    ones = parse("declare input x [3]\ndeclare weight W [3, 3]\ndeclare intvar z\n"
                 "declare intvar p\ndeclare loss L\ndefine z = matmul x W\n"
                 "define p = softmax z\ndefine L = sum p\n", "ones.tf")
    result = check_backprop(ones, "define d/L/d/z = mul 0 z\ndefine d/L/d/W = outer x d/L/d/z\n")
    assert result.ok, result.report()


POLE = parse("declare weight w\ndeclare intvar a\ndeclare loss L\n"
             "define a = mul 1000 w\ndefine L = exp a\n", "pole.tf")
POLE_RIGHT = "define d/L/d/a = exp a\ndefine d/L/d/w = mul 1000 d/L/d/a\n"


def test_draws_that_cannot_tell_a_gradient_from_zero_are_no_ok() -> None:
    # seed 0 sets aside every draw where exp overflows; on those kept exp underflows to 0, so
    # d/L/d/w is exactly 0 on each: 'define d/L/d/w = 0' was marked right (issue 16)
    zero = check_backprop(POLE, "define d/L/d/w = 0", seed=0)
    assert not zero.ok and zero.undecided == ("d/L/d/w",) and zero.discarded > 0
    report = zero.report()
    assert report.splitlines()[0] == ("✗ the draws cannot tell: every draw the checker could "
                                      "use gives d/L/d/w = 0")
    assert f"{zero.discarded} random draws were set aside" in report
    assert "another seed (seed=, or --seed in %%tenflang_check)" in report
    assert "an answer of 0 would pass" in backprop_check_html(zero)
    # the right answer cannot be told from 0 on these draws either: not ok, same note
    assert not check_backprop(POLE, POLE_RIGHT, seed=0).ok
    # draws that reach the slope tell: the right answer is ok, 0 is wrong
    assert check_backprop(POLE, POLE_RIGHT, seed=2).ok
    assert wrong_line(check_backprop(POLE, "define d/L/d/w = 0", seed=2)) == 1


def test_a_gradient_zero_everywhere_stays_ok() -> None:
    # nothing is set aside for sub w w: its gradient is 0 and 0 is the right answer
    flat = parse("declare weight w\ndeclare loss L\ndefine L = sub w w\n", "flat.tf")
    result = check_backprop(flat, "define d/L/d/w = 0")
    assert result.ok and result.discarded == 0 and result.undecided == (), result.report()
    assert "set aside" not in result.report()


def test_a_non_finite_value_is_never_right() -> None:
    result = check_backprop(SEED, "define t = sub 0 1\ndefine u = sqrt t\n"
                                  "define d/lambda/d/diff = mul u diff\n", require=["diff"])
    assert wrong_line(result) in (2, 3)
    assert not result.ok


def test_a_helper_used_where_another_value_belongs_blames_the_line_using_it() -> None:
    # t is word for word the compiler's d/o/d/z:0, right; line 4 uses it where d/o/d/z goes
    text = ("define d/lambda/d/diff = mul 2 diff\ndefine d/lambda/d/o = d/lambda/d/diff\n"
            "define t = sub 1 o\ndefine d/lambda/d/z = mul d/lambda/d/o t\n"
            "define d/lambda/d/w = mul d/lambda/d/z x\n")
    result = check_backprop(SEED, text)
    assert wrong_line(result) == 4 and [v.line for v in result.roots] == [4]
    assert result.verdict(3).status == "right"  # type: ignore[union-attr]
    assert hint(result, 4).startswith(
        "t (line 3) is right as a part of the local partial d/o/d/z of `define o = logistic z` "
        "(line 10 of seed.tf), where the logistic's slope is o(1 - o): the compiler's "
        "d/o/d/z:0 = sub 1 o, but here the local partial d/o/d/z = mul o (sub 1 o) belongs")
    # the same helper, used where it belongs: right
    assert check_backprop(SEED, text.replace("define d/lambda/d/z = mul d/lambda/d/o t",
                                             "define s = mul o t\n"
                                             "define d/lambda/d/z = mul d/lambda/d/o s")).ok


def test_a_right_helper_of_another_shape_where_a_value_belongs() -> None:
    # 05's softmax: spread = total (a scalar, the compiler's sum d/L/d/logp) where
    # mul p total (a vector) belongs; line 7 (word for word the solution's) uses it
    program, right = exercise("classifier")
    require = ["zb", "b", "z", "W"]
    result = check_backprop(program, right.replace("define spread = mul p total",
                                                   "define spread = total"), require=require)
    assert wrong_line(result) == 7 and [v.line for v in result.roots] == [7]
    assert hint(result, 7).startswith("spread (line 6) is right as ")
    assert "but here the compiler's d/L/d/zb:2 = mul (exp logp) (sum d/L/d/logp) belongs" \
        in hint(result, 7)


def test_each_use_of_a_repeated_operand_has_its_own_term_and_partial() -> None:
    # s = mul z z: each operand's partial is z (not add z z, the partial of both) (item 4)
    result = check_backprop(SQUARE_MID, "define d/L/d/s = 3\ndefine d/L/d/z = d/L/d/s\n"
                                        "define d/L/d/w = mul d/L/d/z x\n")
    h = hint(result, 2)
    z = result.roots[0]
    assert "your value is the incoming adjoint d/L/d/s alone (in the term via the first " \
           "operand of `define s = mul z z`): multiply it by the local partial of the first " \
           "operand, z (" in h
    assert "add z z" not in h
    # the value shown is that operand's partial: z on draw 1
    z_draw1 = result.sample["w"] * result.sample["x"]
    assert f"z ({fmt_value(z_draw1, 'report')} on draw 1)" in h
    assert "d/L/d/s · z (first operand) + d/L/d/s · z (second operand)" in h
    assert z.line == 2
    one = check_backprop(SQUARE_MID, "define d/L/d/s = 3\ndefine t = mul d/L/d/s z\n"
                                     "define d/L/d/z = add t z\n")
    assert "your value is the local partial of the first operand, z, alone" in hint(one, 3)



@pytest.mark.parametrize(("line", "terms"), [
    ("define M = matmul W W", "matmul d/L/d/M (transpose W) (first operand) + "
                              "matmul (transpose W) d/L/d/M (second operand)"),
    ("define M = outer v v", "matmul d/L/d/M v (first operand) + matmul v d/L/d/M (second "
                             "operand)"),
])
def test_a_repeated_operand_of_a_matrix_product_has_its_terms_formula(line: str,
                                                                       terms: str) -> None:
    # matmul has no local partials: before, each term read "d/L/d/M · the local partial of
    # the first operand", a partial the package defines nowhere (item 4)
    weight = "declare weight W [2, 2]" if " W W" in line else "declare weight v [3]"
    shape = parse(f"{weight}\ndeclare intvar M\ndeclare loss L\n{line}\ndefine L = sum M\n",
                  "square.tf")
    g = "W" if " W W" in line else "v"
    text = f"define d/L/d/M = broadcast 1 M\ndefine d/L/d/{g} = {g}\n"
    full, graded = both_modes(shape, text)
    assert f"uses {g} twice, so d/L/d/{g} has one term per use: {terms}; your value" in hint(
        full, 2)
    assert "local partial" not in hint(full, 2)
    assert ("one term per use: the term via the first operand + the term via the second "
            "operand; your value") in hint(graded, 2)

def test_the_weights_gradients_are_required_by_default_however_folded() -> None:
    # the softmax-minus-target shortcut skips three intermediate adjoints (item 5)
    result = check_backprop(SOFTMAX_CE, CE_RIGHT)
    assert result.ok, result.report()
    assert result.required == ("d/L/d/W",)
    assert result.missing == ["d/L/d/s", "d/L/d/nll", "d/L/d/logp"]
    # the gradient alone, every intermediate folded into one line: right
    folded = check_backprop(SOFTMAX_CE, "define p = softmax z\ndefine g = sub p y\n"
                                        "define d/L/d/W = outer x g\n")
    assert folded.ok and folded.right == ["d/L/d/W"], folded.report()
    # a wrong intermediate line is still wrong, even with the gradient right
    wrong = check_backprop(SOFTMAX_CE, CE_RIGHT + "define d/L/d/s = 1\n")
    assert not wrong.ok and wrong.first_wrong_line == 4


@pytest.mark.parametrize(("require", "message"), [
    ([], "require lists no adjoint"),
    (["\x1b[2J"], "require: '\\x1b[2J' is neither a variable"),
    ("", "require: '' is neither a variable"),
    ([1], "require must list adjoints (d/lambda/d/w, or just w), not 1"),
    (["d/lambda/d/q"], "require: 'd/lambda/d/q' is neither a variable of seed.tf"),
    (3, "require must list adjoints (d/lambda/d/w, or just w), not 3"),
])
def test_a_require_that_requires_nothing_is_an_error(require: object, message: str) -> None:
    with pytest.raises(TenFlangError) as err:
        check_backprop(SEED, SEED_RIGHT, require=require)
    assert message in str(err.value)


def test_a_require_of_a_variable_without_an_adjoint_is_an_error() -> None:
    idle = parse("declare weight w\ndeclare weight u\ndeclare loss L\ndefine L = mul w w\n",
                 "idle.tf")
    with pytest.raises(TenFlangError, match="'u' does not affect the loss L, so there is no "
                                            "adjoint d/L/d/u to write"):
        check_backprop(idle, "define d/L/d/w = add w w", require=["u"])
    assert check_backprop(idle, "define d/L/d/w = add w w").ok  # u's gradient: 0, not asked


@pytest.mark.parametrize(("options", "message"), [
    ({"seed": -1}, "seed must be an integer >= 0, not -1"),
    ({"seed": 1.5}, "seed must be an integer >= 0, not 1.5"),
    ({"seed": True}, "seed must be an integer >= 0, not True"),
    ({"draws": 0}, "draws must be an integer from 1 to 100, not 0"),
    ({"draws": "5"}, "draws must be an integer from 1 to 100, not '5'"),
    ({"text": ["define d/lambda/d/diff = mul 2 diff"]},
     "the backward pass must be text (a str), not list"),
    ({"text": None}, "the backward pass must be text (a str), not NoneType"),
    ({"name": 3}, "name must be text (a str), not int"),
])
def test_bad_arguments_are_errors_worded_as_the_settings_are(options: dict[str, object],
                                                             message: str) -> None:
    arguments: dict[str, object] = {"text": SEED_RIGHT, **options}
    text = arguments.pop("text")
    with pytest.raises(TenFlangError) as err:
        check_backprop(SEED, text, **arguments)  # type: ignore[arg-type]
    assert str(err.value) == f"error: {message}"


def test_names_at_the_length_limit_work() -> None:
    # the checker's own name for a cut use was <name>.stop: too long for such a name (item 9)
    w = "w" * 1000
    square = parse(f"declare weight {w}\ndeclare loss L\ndefine L = mul {w} {w}\n")
    assert check_backprop(square, f"define d/L/d/{w} = add {w} {w}").ok
    result = check_backprop(square, f"define d/L/d/{w} = {w}")
    assert "uses" in hint(result, 1) and "twice" in hint(result, 1)


def test_a_long_wrong_answer_costs_work_linear_in_its_length(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 2,000 helpers summed into one wrong adjoint: each trial recomputed the whole block,
    # once per helper and candidate (quadratic, minutes); now a bounded number of lines each
    from tenflang_nb.core.backprop_check import reference, student
    from tenflang_nb.core.backprop_check.hints import rewritten, terms

    evaluations = 0

    def counted(*args: object) -> object:
        nonlocal evaluations
        evaluations += 1
        return reference.run_line(*args)  # type: ignore[arg-type]

    for module in (student, rewritten, terms):  # every line run, the hints' trials too
        monkeypatch.setattr(module, "run_line", counted)
    for n in (250, 1000):
        evaluations = 0
        lines = [f"define h{i} = mul 0.001 diff" for i in range(n)]
        lines += ["define s1 = add h0 h1"] + [f"define s{i} = add s{i - 1} h{i}"
                                               for i in range(2, n)]
        lines.append(f"define d/lambda/d/diff = s{n - 1}")
        result = check_backprop(SEED, "\n".join(lines), require=["diff"])
        assert result.first_wrong_line == 2 * n - 1  # the sum the adjoint's line copies
        assert evaluations <= 3 * len(lines) + 200, (n, evaluations)


def test_a_model_too_large_to_check_is_refused_before_anything_is_allocated() -> None:
    big = parse("declare input x [4000]\ndeclare weight W [4000, 4000]\ndeclare intvar z\n"
                "declare loss L\ndefine z = matmul x W\ndefine L = sum z\n", "big.tf")
    with pytest.raises(TenFlangError) as err:
        check_backprop(big, "define d/L/d/z = broadcast 1 z\n")
    text = str(err.value)
    assert text.startswith("big.tf: error: too large to check: the full GCP of big.tf holds ")
    assert "hint: check on 1 draw (draws=1, --draws 1)" in text


def test_control_characters_in_the_answer_are_escaped_where_echoed() -> None:
    result = check_backprop(SEED, "define d/lambda/d/diff = mul 3 diff # \x1b[2J\x07\n",
                            require=["diff"])
    text = result.report()
    assert "\x1b" not in text and "\x07" not in text
    assert "# \\x1b[2J\\x07" in text
    bad = check_backprop(SEED, "define d/lambda/d/diff = mul 2 q\x1b\n")
    assert bad.error is not None and "\x1b" not in bad.headline() + bad.report()


def test_an_undefined_local_partial_says_define_it() -> None:
    result = check_backprop(SEED, "define d/lambda/d/diff = mul 2 diff\n"
                                  "define d/lambda/d/o = mul d/lambda/d/diff d/diff/d/o\n")
    assert result.error is not None and result.first_wrong_line == 2
    first = result.error.first
    assert first.message == "the local partial d/diff/d/o is not defined before this line"
    assert first.hint == ("define it on an earlier line ('define d/diff/d/o = ...'): a "
                          "backward pass needs no declarations")
    assert "declared" not in first.message
    typo = check_backprop(SEED, "define d/lambda/d/diff = mul 2 dif\n")
    assert typo.error is not None
    assert str(typo.error.first.hint).startswith("did you mean 'diff'? If not, define it")


def test_the_report_prints_code_plain_and_explains_inherited_mistakes() -> None:
    result = check_backprop(FAN, FAN_RIGHT.replace("define d/L/d/e = add e e",
                                                   "define d/L/d/e = e"))
    text = result.report()
    assert "`" not in text
    assert "hint: define L = mul e e (line 16 of fan.tf) uses e twice" in text
    assert text.endswith("A line wrong only because of line N may itself be written right: "
                         "it uses the value of line N, which is wrong. Fix the first wrong "
                         "line, then check again.")
    assert "computes the right thing from right values" not in text
    assert result.verdict(1).hint.startswith("`define L = mul e e`")  # type: ignore[union-attr]


def test_one_draw_is_one_draw() -> None:
    assert check_backprop(SEED, SEED_RIGHT, draws=1).headline().endswith(
        "checked on 1 random draw")


def test_a_line_right_as_the_compilers_is_not_blamed_for_a_later_lines_mistake() -> None:
    # found by the adversarial round: line 14 (t2 = add t0 t1) is the compiler's d/L/d/y:2
    # word for word; line 16 adds the wrong third term. Replacing t0 by d/v0/d/y happened to
    # make line 16 right (the program is degenerate), which named line 14 as the root.
    program = parse("declare exp_output y\ndeclare weight w\ndeclare intvar v0\n"
                    "declare intvar v2\ndeclare intvar e\ndeclare intvar e2\ndeclare loss L\n"
                    "define v0 = sub 3 y\ndefine v2 = mul 1 y\ndefine e = sub v2 y\n"
                    "define e2 = add e v0\ndefine L = mul e2 e2\n")
    text = """\
define d/L/d/L = 1
define d/L/d/e2 = add e2 e2
define d/e2/d/e = 1
define d/e2/d/v0 = 1
define d/L/d/v0 = mul d/L/d/e2 d/e2/d/v0
define d/v0/d/y = -1
define d/L/d/e = mul d/L/d/e2 d/e2/d/e
define d/e/d/v2 = 1
define d/e/d/y = -1
define d/L/d/v2 = mul d/L/d/e d/e/d/v2
define d/v2/d/y = 1
define t0 = mul d/L/d/v0 d/v0/d/y
define t1 = mul d/L/d/e d/e/d/y
define t2 = add t0 t1
define t3 = mul d/L/d/v2 d/v2/d/y
define d/L/d/y = add t2 t3
define d/L/d/w = 0
"""
    assert check_backprop(program, text).ok
    wrong = check_backprop(program, text.replace("add t2 t3", "add t2 d/e2/d/e"))
    assert [v.line for v in wrong.roots] == [16], wrong.report()
    assert wrong.verdict(14).status == "right"  # type: ignore[union-attr]


def test_a_wrong_helper_that_lines_only_copy_is_the_one_root() -> None:
    # found by the adversarial round: line 3 copies g; it was named a second root
    result = check_backprop(SOFTMAX_CE, "define p = softmax z\ndefine g = sub y p\n"
                                        "define d/L/d/z = g\ndefine d/L/d/W = outer x g\n")
    assert [v.line for v in result.roots] == [2]
    assert hint(result, 2).startswith("g should be the value of d/L/d/z itself")
    assert hint(result, 2).endswith("yours is its negative")
    assert [result.verdict(n).because for n in (3, 4)] == [(2,), (2,)]  # type: ignore[union-attr]


def test_an_adjoint_written_as_the_value_it_differentiates() -> None:
    square = parse("declare weight w\ndeclare loss L\ndefine L = mul w w\n", "square.tf")
    result = check_backprop(square, "define d/L/d/w = mul w w")
    assert hint(result, 1).startswith("your value is L itself, the value of `define L = "
                                      "mul w w`: d/L/d/w is a derivative (")


def test_a_number_is_read_as_a_number_not_as_a_sum_with_a_sign_flipped() -> None:
    # d/L/d/w = a + w, and 1 = a - w: "the term via add w 1 has the wrong sign" was true but
    # not what a student writing 1 did
    fan = parse("declare weight w\ndeclare intvar a\ndeclare loss L\ndefine a = add w 1\n"
                "define L = mul a w\n", "fan1.tf")
    h = hint(check_backprop(fan, "define d/L/d/w = 1"), 1)
    assert h.startswith("your value is the local partial d/a/d/w alone")
    assert "misses the term via `define L = mul a w` (a)" in h


def test_names_the_preprocessor_invents_are_not_listed_as_not_written() -> None:
    dot = parse("declare_vector input x 3\ndeclare_vector weight w 3\ndeclare exp_output y\n"
                "declare intvar s\ndeclare intvar e\ndeclare loss L\ndefine s = dot x w\n"
                "define e = sub s y\ndefine L = mul e e\n", "dot.tf")
    result = check_backprop(dot, "define d/L/d/s = add e e\n" + "".join(
        f"define d/L/d/w.{i} = mul d/L/d/s x.{i}\n" for i in range(3)))
    assert result.ok, result.report()
    assert result.missing == ["d/L/d/e"]  # not the partial sums s.0 ... s.4 of dot


def test_a_repeated_operand_with_a_constant_partial() -> None:
    # a = add w w: each operand's partial is 1; the old hint said "d/a/d/w = 2 belongs ...
    # but d/a/d/w = 1", the formula of both operands with the value of one
    twice = parse("declare weight w\ndeclare intvar a\ndeclare loss L\ndefine a = add w w\n"
                  "define L = mul a a\n", "twice.tf")
    h = hint(check_backprop(twice, "define d/L/d/a = add a a\ndefine d/L/d/w = mul d/L/d/a w"), 2)
    assert h.startswith("you used w itself where the local partial of the first operand, 1, "
                        "belongs")
    assert "the first operand's local partial = 1" in h and "= 2" not in h
    assert "d/L/d/a · 1 (first operand) + d/L/d/a · 1 (second operand)" in h


def test_a_helper_that_is_a_number_is_no_value_of_the_compilers() -> None:
    # one_minus_o = 1 equals the compiler's d/lambda/d/lambda and d/diff/d/o, by chance: it is
    # a wrong helper, not a right one misused (found by the adversarial round)
    result = check_backprop(SEED, SEED_RIGHT.replace("define one_minus_o = sub 1 o",
                                                     "define one_minus_o = 1"))
    assert wrong_line(result) == 4
    assert hint(result, 4).startswith(
        "one_minus_o should be a part of the local partial d/o/d/z of `define o = logistic z` "
        "(line 10 of seed.tf), where the logistic's slope is o(1 - o): the compiler's "
        "d/o/d/z:0 = sub 1 o")


# ------------------------------------------------------------------------------ issue 17:
# the usual slips, and the matrix level (the digits network's shapes, one example and a
# batch); every hint also in grading mode, where it spells out no line of the compiler's

RATIO, RATIO_RIGHT = exercise("ratio")  # notebook 05, exercise 6
# notebook 05, exercise 7, drawn as tanh then logistic (the practice variant's draw differs)
CHAIN, CHAIN_RIGHT = drawn_exercise("chain", inner="tanh", outer="logistic", error="o y",
                                    scale=0.5)
# z = W x (a column vector): d/L/d/x = W^T g, which is `matmul g W`, no transpose
COLUMN = parse("declare input x [4]\ndeclare exp_output y [4]\ndeclare weight W [4, 4]\n"
               "declare intvar z\ndeclare intvar e\ndeclare intvar e2\ndeclare loss L\n"
               "define z = matmul W x\ndefine e = sub z y\ndefine e2 = mul e e\n"
               "define L = sum e2\n", "column.tf")
COLUMN_RIGHT = ("define d/L/d/e = add e e\ndefine d/L/d/z = d/L/d/e\n"
                "define d/L/d/W = outer d/L/d/z x\ndefine d/L/d/x = matmul d/L/d/z W\n")


def both_modes(model: Program, text: str, **options: object) -> tuple[BackpropCheck,
                                                                       BackpropCheck]:
    """The check with the compiler's formulas, and in grading mode (the same verdicts; no
    hint spells out a line of the compiler's backward pass)."""
    full = check_backprop(model, text, **options)  # type: ignore[arg-type]
    graded = check_backprop(model, text, formulas=False, **options)  # type: ignore[arg-type]
    assert spelled_out(model, graded) == [], graded.report()
    assert full.first_wrong_line == graded.first_wrong_line
    assert [v.status for v in full.lines] == [v.status for v in graded.lines]
    return full, graded


def error_hint(result: BackpropCheck) -> str:
    assert result.error is not None, result.report()
    [diag] = result.error.diagnostics
    assert diag.hint is not None
    return diag.hint


@pytest.mark.parametrize(("model", "right"), [
    (RATIO, RATIO_RIGHT), (CHAIN, CHAIN_RIGHT), (DIGITS, DIGITS_RIGHT), (BATCH, BATCH_RIGHT),
    (SQUARE, SQUARE_RIGHT), (COLUMN, COLUMN_RIGHT),
], ids=["ex6", "ex7", "digits", "batch", "square", "column"])
def test_the_right_answers_of_the_new_models_are_ok(model: Program, right: str) -> None:
    assert check_backprop(model, right, require=["x", "W"] if model is COLUMN else None).ok


@pytest.mark.parametrize(("old", "new", "root", "fragment", "helpers"), [
    # the d/r/d/b line left out: line 4, word for word the solution's, is right
    ("define d/r/d/b = neg r_over_b            # d/r/d/b = -a / b^2 = -r / b\n"
     "define d/L/d/b = mul d/L/d/r d/r/d/b", "define d/L/d/b = mul d/L/d/r r_over_b", 5,
     "r_over_b (line 4) is right as a part of the local partial d/r/d/b", [4]),
    ("neg r_over_b", "r_over_b", 5, "your value is the negative of the right one", [4]),
    ("define r_over_b = div r b\ndefine d/r/d/b = neg r_over_b",
     "define bb = mul b b\ndefine a_bb = div a bb\ndefine d/r/d/b = a_bb", 6,
     "your value is the negative of the right one", [5]),
])
def test_exercise_6_without_the_minus_blames_the_line_that_is_wrong(
        old: str, new: str, root: int, fragment: str, helpers: list[int]) -> None:
    # issue 17: d/r/d/b = -a / b² without its minus was blamed on line 4, `define r_over_b =
    # div r b`, the model solution's own helper (the notebook's model and solution, mutated)
    assert old in RATIO_RIGHT
    full, graded = both_modes(RATIO, RATIO_RIGHT.replace(old, new))
    assert [v.line for v in full.roots] == [root], full.report()
    assert fragment in hint(full, root) and fragment in hint(graded, root)
    assert [full.verdict(n).status for n in helpers] == ["right"]  # type: ignore[union-attr]


def test_tanh_slope_without_its_square() -> None:
    # 1 - h for 1 - h²: as a named local partial, as a helper, at the digits network's shapes
    full, graded = both_modes(CHAIN, CHAIN_RIGHT.replace("sub 1 h_squared", "sub 1 h"))
    assert wrong_line(full) == 9
    assert hint(full, 9) == ("your d/h/d/a is 1 - h: the square is missing (tanh's slope is "
                             "1 - h²) (d/h/d/a = sub 1 (mul h h))")
    assert hint(graded, 9) == ("your d/h/d/a is 1 - h: the square is missing (tanh's slope "
                               "is 1 - h²)")
    for model, right, line in ((DIGITS, DIGITS_RIGHT, 8), (BATCH, BATCH_RIGHT, 9)):
        name = "h" if model is DIGITS else "H"
        text = right.replace(f"sub 1 {name}{name}", f"sub 1 {name}")
        full, graded = both_modes(model, text)
        assert wrong_line(full) == line
        assert hint(graded, line).endswith(f"yours is 1 - {name}: the square is missing "
                                           f"(tanh's slope is 1 - {name}²)")
    # the logistic's slope without its factor o
    full, _ = both_modes(CHAIN, CHAIN_RIGHT.replace("mul o one_minus_o", "one_minus_o"))
    assert hint(full, 4).startswith("your d/o/d/z is 1 - o: the factor o is missing")


@pytest.mark.parametrize(("model", "right", "old", "new", "root", "fragment"), [
    (RATIO, RATIO_RIGHT, "div d/L/d/r b", "mul d/L/d/r b", 3,
     "your value is d/L/d/r · b: a product with b (`mul`) where a division by b (`div`) "
     "belongs"),
    (RATIO, RATIO_RIGHT, "define r_over_b = div r b", "define r_over_b = mul r b", 4,
     "a product (`mul`) where a division (`div`) belongs"),
    (CHAIN, CHAIN_RIGHT, "mul d/L/d/a x", "div d/L/d/a x", 11,
     "your value is d/L/d/a · 1/x: a division by x (`div`) where a product with x (`mul`) "
     "belongs"),
    (CHAIN, CHAIN_RIGHT, "mul d/L/d/h d/h/d/a", "div d/L/d/h d/h/d/a", 10,
     "a division (`div`) where a product (`mul`) belongs"),
], ids=["adjoint-mul", "helper-mul", "adjoint-div", "adjoint-div-by-partial"])
def test_mul_where_div_belongs_and_the_reverse(model: Program, right: str, old: str, new: str,
                                               root: int, fragment: str) -> None:
    full, graded = both_modes(model, right.replace(old, new))
    assert wrong_line(full) == root
    assert fragment in hint(full, root) and fragment in hint(graded, root)


def test_one_variable_used_where_another_belongs() -> None:
    full, graded = both_modes(CHAIN, CHAIN_RIGHT.replace("mul d/L/d/z w2", "mul d/L/d/z w1"))
    assert wrong_line(full) == 7
    assert hint(full, 7) == "you used w1 where w2 belongs: the local partial d/z/d/h is w2"
    assert hint(graded, 7) == "you used w1 where w2 belongs (in the local partial d/z/d/h)"
    full, _ = both_modes(CHAIN, CHAIN_RIGHT.replace("define one_minus_o = sub 1 o",
                                                     "define one_minus_o = sub 1 z"))
    assert wrong_line(full) == 3 and hint(full, 3).endswith(
        "z is used where o belongs: logistic's slope is written with its value o, not its "
        "input z")
    # at the digits network's shapes, with the shapes showing it
    full, graded = both_modes(DIGITS, DIGITS_RIGHT.replace("outer x d/lambda/d/z1",
                                                           "outer h d/lambda/d/z1"))
    assert hint(graded, 11) == (
        "an adjoint has the shape of its variable: W1 has shape [64, 32], but this line gives "
        "[32, 32] (axis 0 is 32 where 64 belongs): h is used where x belongs")


@pytest.mark.parametrize(("model", "right", "line"), [(DIGITS, DIGITS_RIGHT, 6),
                                                       (BATCH, BATCH_RIGHT, 7)],
                         ids=["one-example", "batch"])
def test_the_matmul_input_gradient_without_its_transpose(model: Program, right: str,
                                                         line: int) -> None:
    # line: d/L/d/h's, the line before defines W2t
    g = "d/lambda/d/logits" if model is DIGITS else "d/L/d/S"
    h = "h" if model is DIGITS else "H"
    shape = fmt_shape(model.shapes[g.rsplit("/", 1)[1]])
    full, graded = both_modes(model, right.replace(f"matmul {g} W2t", f"matmul {g} W2"))
    assert full.first_wrong_line == line and full.error is not None
    axis = 0 if model is DIGITS else 1
    expected = (f"axis {axis} of {g} (line 2) {shape} (10) does not match axis 0 of W2 "
                f"[32, 10] (32); d/{full.loss}/d/{h} should have the shape of {h}, "
                f"{fmt_shape(model.shapes[h])}: a transpose is missing: W2 [32, 10] enters "
                "transposed")
    assert error_hint(graded) == expected
    assert error_hint(full) == expected + f" ('matmul {g} (transpose W2)' has that shape)"
    # the transpose left out of the helper: the line using it says which helper
    full, _ = both_modes(model, right.replace("define W2t = transpose W2", "define W2t = W2"))
    assert (f"a transpose is missing: W2t (line {line - 1}) [32, 10] enters transposed"
            in error_hint(full))


def test_a_transpose_missing_or_one_too_many_where_the_shapes_fit() -> None:
    full, graded = both_modes(SQUARE, SQUARE_RIGHT.replace("matmul d/L/d/S W2t",
                                                           "matmul d/L/d/S W2"))
    assert wrong_line(full) == 6
    assert hint(graded, 6) == "a transpose is missing: W2 [12, 12] enters transposed"
    assert hint(full, 6).endswith("; `matmul d/L/d/S (transpose W2)` is right")
    # z = W x: d/L/d/x = matmul g W; the student's habit, g times W transposed, is one too many
    text = COLUMN_RIGHT.replace("define d/L/d/x = matmul d/L/d/z W",
                                "define Wt = transpose W\ndefine d/L/d/x = matmul d/L/d/z Wt")
    full, graded = both_modes(COLUMN, text, require=["x", "W"])
    assert wrong_line(full) == 5
    assert hint(graded, 5) == "a transpose too many: Wt (line 4) is W transposed"
    assert hint(full, 5).endswith("; `matmul d/L/d/z W` is right")
    # the outer product's operands swapped: the transpose of the right value
    full, graded = both_modes(DIGITS, DIGITS_RIGHT.replace("outer h d/lambda/d/logits",
                                                           "outer d/lambda/d/logits h"))
    assert hint(graded, 4) == (
        "an adjoint has the shape of its variable: W2 has shape [32, 10], but this line gives "
        "[10, 32]: it is the transpose of the right value: the operands of `outer` are "
        "swapped: d/lambda/d/logits (line 2) and h trade places")


@pytest.mark.parametrize(("bias", "rows", "line"), [("b1", "Z1", 11), ("b2", "S", 3)])
def test_a_bias_added_to_every_row_sums_its_gradient_over_the_rows(bias: str, rows: str,
                                                                    line: int) -> None:
    text = BATCH_RIGHT.replace(f"sumto d/L/d/{rows} {bias}", f"d/L/d/{rows}")
    full, graded = both_modes(BATCH, text)
    assert wrong_line(full) == line
    n = BATCH.shapes[bias][0]
    d = BATCH.defs[rows]
    assert hint(graded, line) == (
        f"an adjoint has the shape of its variable: {bias} has shape [{n}], but this line "
        f"gives [8, {n}] (an extra axis 0 of length 8): summed over its 8 rows (axis 0) it is "
        f"right: `define {rows} = add {d.args[0]} {bias}` (line {d.src.line} of batch.tf) uses "
        f"{bias} [{n}] once per row of its [8, {n}] value (broadcast), so d/L/d/{bias} sums "
        "the incoming adjoint over the rows (`sumto` sums down to a shape)")


def test_a_scalar_added_to_a_vector_sums_its_gradient_over_the_entries() -> None:
    program = parse("declare input x [5]\ndeclare weight w [5]\ndeclare weight c\n"
                    "declare intvar z\ndeclare intvar u\ndeclare intvar s\ndeclare loss L\n"
                    "define z = mul x w\ndefine u = add z c\ndefine s = mul u u\n"
                    "define L = sum s\n", "scalar.tf")
    right = "define d/L/d/u = add u u\ndefine d/L/d/c = sumto d/L/d/u c\n"
    assert check_backprop(program, right, require=["c"]).ok
    _, graded = both_modes(program, right.replace("sumto d/L/d/u c", "d/L/d/u"),
                           require=["c"])
    assert hint(graded, 2).endswith(
        "summed over axis 0 it is right: `define u = add z c` (line 9 of scalar.tf) uses c "
        "[] once per entry along axis 0 of its [5] value (broadcast), so d/L/d/c sums the "
        "incoming adjoint over axis 0 (`sumto` sums down to a shape)")


def test_an_elementwise_product_where_a_matrix_product_belongs() -> None:
    # one example: mul of [10] and [32, 10] broadcasts to [32, 10]; the lines after it are
    # checked on the right d/lambda/d/h and are wrong only because of it
    text = DIGITS_RIGHT.replace("matmul d/lambda/d/logits W2t", "mul d/lambda/d/logits W2")
    full, graded = both_modes(DIGITS, text)
    assert [v.line for v in full.roots] == [6]
    assert hint(graded, 6) == (
        "an adjoint has the shape of its variable: h has shape [32], but this line gives "
        "[32, 10]: an elementwise product (`mul`) where a matrix product (`matmul`) belongs, "
        "with W2 transposed")
    assert [full.verdict(n).because for n in (9, 10, 11)] == [(6,)] * 3  # type: ignore[union-attr]
    # a batch: [8, 10] and [32, 10] do not broadcast
    full, graded = both_modes(BATCH, BATCH_RIGHT.replace("matmul d/L/d/S W2t",
                                                         "mul d/L/d/S W2"))
    assert error_hint(graded) == (
        "axis 0 of d/L/d/S (line 2) [8, 10] (8) does not match axis 0 of W2 [32, 10] (32) "
        "(broadcasting aligns the last axes); d/L/d/H should have the shape of H, [8, 32]: an "
        "elementwise product ('mul') where a matrix product ('matmul') belongs, with W2 "
        "transposed")
    # an outer product's
    _, graded = both_modes(DIGITS, DIGITS_RIGHT.replace("outer h d/lambda/d/logits",
                                                        "mul h d/lambda/d/logits"))
    assert error_hint(graded).endswith(
        "d/lambda/d/W2 should have the shape of W2, [32, 10]: an elementwise product ('mul') "
        "where an outer product ('outer') belongs")


def test_a_matrix_product_where_an_elementwise_product_belongs() -> None:
    # one example: matmul of two [32] vectors is their dot product, a number
    _, graded = both_modes(DIGITS, DIGITS_RIGHT.replace("mul d/lambda/d/h slope",
                                                        "matmul d/lambda/d/h slope"))
    assert hint(graded, 9) == (
        "an adjoint has the shape of its variable: z1 has shape [32], but this line gives [] "
        "(axis 0 is missing): a matrix product (`matmul`) where an elementwise product (`mul`) "
        "belongs")
    # in a helper: the helper is the root, found by its line written otherwise
    full, graded = both_modes(DIGITS, DIGITS_RIGHT.replace("define hh = mul h h",
                                                           "define hh = matmul h h"))
    assert [v.line for v in full.roots] == [7]
    assert hint(graded, 7).endswith(
        "a matrix product (`matmul`) where an elementwise product (`mul`) belongs")
    # a batch: the helper cannot run, and should have the shape the lines using it need
    _, graded = both_modes(BATCH, BATCH_RIGHT.replace("define HH = mul H H",
                                                      "define HH = matmul H H"))
    assert error_hint(graded) == (
        "axis 1 of H [8, 32] (32) does not match axis 0 of H [8, 32] (8); HH should have the "
        "shape the lines using it need, [8, 32]: a matrix product ('matmul') where an "
        "elementwise product ('mul') belongs")


def test_no_variable_is_named_for_a_value_that_is_one_number_on_every_draw() -> None:
    # d/lambda/d/lambda is 1 on every draw, as the local partial d/diff/d/o is: the line
    # written with it is right by a coincidence of values, not what it means (issue 25)
    text = "define d/lambda/d/diff = mul 2 diff\ndefine d/lambda/d/o = mul d/lambda/d/diff y\n"
    full, graded = (check_backprop(SEED, text, require=["o"], formulas=f) for f in (True, False))
    assert full.first_wrong_line == graded.first_wrong_line == 2
    assert hint(full, 2) == "you used y where the local partial d/diff/d/o = 1 belongs"
    assert hint(graded, 2) == "you used y where the local partial d/diff/d/o belongs"
    # on one draw every value is one number: no variable is named for another by it
    one = check_backprop(SEED, text.replace("mul 2 diff", "mul 2 diff\ndefine t = mul x w"),
                         require=["o"], draws=1)
    assert "d/lambda/d/lambda" not in str(one.verdict(3).hint)  # type: ignore[union-attr]


def test_the_stepper_predicts_the_new_mistakes() -> None:
    # predict mode asks the checker in advance about each usual wrong value of an adjoint
    from tenflang_nb.core.backprop_check.hints import hint as hint_of
    from tenflang_nb.core.backprop_check.hints import mistakes
    from tenflang_nb.core.backprop_check.reference import Reference
    from tenflang_nb.core.backprop_check.report import LineVerdict

    example = {"x": 1.5, "y": 0.2, "w1": 0.7, "w2": -0.4, "u": 0.7, "v": -0.4}
    for model, v, wrong, fragment in (
            (CHAIN, "a", lambda r: r.values["d/L/d/h"] * (1 - r.values["h"]),
             "(1 - h): the square is missing"),
            (CHAIN, "h", lambda r: r.values["d/L/d/z"] * r.values["w1"],
             "you used w1 where w2 belongs"),
            (RATIO, "a", lambda r: r.values["d/L/d/r"] * r.values["b"],
             "a product with b (`mul`) where a division by b (`div`) belongs")):
        for formulas in (True, False):
            # the example and two random draws, as predict mode asks (a variable named on
            # one example alone may be a coincidence of its numbers)
            ref = Reference(model, 3, 0, formulas,
                            given={k: x for k, x in example.items() if k in model.decls})
            value = wrong(ref)
            assert any(np.allclose(m, value) for m in mistakes(ref, v))
            verdict = LineVerdict(0, f"d/L/d/{v}", "", "adjoint", "wrong", ref.adjoint(v))
            text = hint_of(ref, verdict, value)
            assert text is not None and fragment in text
            assert ("sub 1 (mul h h)" in text) == (formulas and v == "a" and model is CHAIN)


# ------------------------------------------------------------------------------ issue 25:
# reports that show the mistake and speak of the student's lines and the maths


def test_a_report_shows_a_draw_on_which_the_line_is_wrong() -> None:
    # exercise 10 without the use of d by t = sub c d: where c < d that term is 0, and the
    # line is right on such a draw (draw 1 was one: "expected 2, got 2 (draw 1)")
    model, right = drawn_exercise("gates", join="add", scale=2)
    text = right.replace("define d/L/d/d = mul d/L/d/m off", "define d/L/d/d = d/L/d/m")
    for result in both_modes(model, text):
        [v] = result.roots
        assert v.expected is not None and v.actual is not None
        assert v.expected[0] == v.actual[0] == 2  # right by chance on draw 1 ...
        k = v.draw
        assert k > 0 and v.expected[k] == 0 and v.actual[k] == 2  # ... not on the draw shown
        report = result.report()
        assert f"expected d/L/d/d = 0, got 2 (draw {k + 1})" in report
        c, d = result.sample["c"], result.sample["d"]
        assert c > d and f"draw {k + 1}: a = " in report  # the inputs of that draw
        assert f"(draw {k + 1}: a = " in backprop_check_html(result)


def test_tanh_slope_from_its_input_is_told_in_the_maths_not_by_a_temporary() -> None:
    # exercise 14 with tanh's slope written from z1: the report named only the compiler's
    # d/h/d/z1:0, and said nothing of the slope coming from h
    model, right = drawn_exercise("mlp", act="tanh", inputs=64, units=32, classes=10)
    full, graded = both_modes(model, right.replace("mul h h", "mul z1 z1"))
    for result in (full, graded):
        [v] = result.roots
        assert v.name == "h_squared"
        text = hint(result, v.line)
        assert text.startswith("h_squared should be a part of the local partial d/h/d/z1 of "
                               "`define h = tanh z1` (line 19 of mlp.tf), where tanh's slope "
                               "is 1 - h²")
        assert text.endswith("z1 is used where h belongs: tanh's slope is written with its "
                             "value h, not its input z1")
        assert "expected h_squared = " in result.report()
        assert "expected d/h/d/z1:0" not in result.report()
    line = full.roots[0].line
    assert "d/h/d/z1:0 = mul h h" in hint(full, line) and "mul h h" not in hint(graded, line)
