"""The compile phase: the GCP's gradients, its layout, and the original compiler's three bugs.

The 2016 compiler (SPEC_ORIGINAL.md section 3.1) (1) gave a variable used by several lines only
one chain-rule term, (2) mishandled the same operand twice in one line, and (3) gave a
variable used by the loss AND elsewhere only the loss's term. Each has a regression test with a
hand-derived gradient, checked again by finite differences.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import FAN_OUT, program_text
from helpers_fd import assert_gradients, fd_gradient, gcp_gradients, loss_of, run_program

from tenflang_nb.core import api
from tenflang_nb.core.backprop import adjoint_name
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.program import parse


def logistic(z: float) -> float:
    return 1 / (1 + math.exp(-z))


# ------------------------------------------------------------------------ bug 1: fan-out


def test_fanout_sums_a_term_per_consumer() -> None:
    # a feeds b and c: dL/da = e^a + 3, so dL/dw = x (e^(wx) + 3); the original kept one term
    source = program_text(
        "declare weight w", "declare input x", "declare intvar a", "declare intvar b",
        "declare intvar c", "declare loss L", "define a = mul w x", "define b = exp a",
        "define c = mul a 3", "define L = add b c")
    w, x = 0.4, 1.5
    got = assert_gradients(source, {"w": w, "x": x})
    assert got["w"] == pytest.approx(x * (math.exp(w * x) + 3), rel=1e-13)


def test_fanout_of_a_weight_into_three_lines() -> None:
    # L = (w x) + w^2 + logistic(w): dL/dw = x + 2w + s(1 - s)
    source = program_text(
        "declare weight w", "declare input x", "declare intvar p", "declare intvar q",
        "declare intvar r", "declare intvar pq", "declare loss L", "define p = mul w x",
        "define q = pow w 2", "define r = logistic w", "define pq = add p q",
        "define L = add pq r")
    w, x = 0.3, -1.2
    got = assert_gradients(source, {"w": w, "x": x})
    s = logistic(w)
    assert got["w"] == pytest.approx(x + 2 * w + s * (1 - s), rel=1e-13)


def test_fanout_through_a_diamond_of_depth_two() -> None:
    # w -> a -> {b, c} -> d -> L, and w also feeds d directly
    source = program_text(
        "declare weight w", "declare intvar a", "declare intvar b", "declare intvar c",
        "declare intvar bc", "declare intvar d", "declare loss L", "define a = mul w 2",
        "define b = tanh a", "define c = mul a a", "define bc = mul b c",
        "define d = add bc w", "define L = mul d d")
    w = 0.35
    got = assert_gradients(source, {"w": w})
    a = 2 * w
    b, c = math.tanh(a), a * a
    d = b * c + w
    dd_dw = ((1 - b * b) * c + b * 2 * a) * 2 + 1
    assert got["w"] == pytest.approx(2 * d * dd_dw, rel=1e-13)


def test_fanout_bug_of_the_original_fixture(original_dir: Path) -> None:
    # w.i feeds both A.i and u.i; the original FINAL GCP kept only d/A.i/d/w.i
    source = (original_dir / "expanded_pow_ln_exp_logistic_shape.tf").read_text()
    values = {"x.0": 0.31, "x.1": -0.59, "x.2": 0.87, "w.0": 0.61, "w.1": -0.71,
              "w.2": -0.56, "Y": 0.5}  # chosen so that ln E and pow G H are defined
    ours = assert_gradients(source, values, scale_atol=True)
    original = parse((original_dir / "expanded_pow_ln_exp_logistic_gcp.tf").read_text())
    theirs = run_program(original, values, [f"d/LAMBDA/d/w.{i}" for i in range(3)])
    shape = parse(source)
    for i in range(3):
        fd = fd_gradient(shape, values, f"w.{i}")
        assert ours[f"w.{i}"] == pytest.approx(fd, rel=1e-6)
        # the original's answer is off by far more than any rounding: the bug is real here
        assert abs(float(theirs[f"d/LAMBDA/d/w.{i}"]) - fd) > 100  # type: ignore[arg-type]


# ------------------------------------------------------------------------ bug 2: a op a


@pytest.mark.parametrize(("op", "expected"), [
    ("mul", lambda w: 2 * w),
    ("pow", lambda w: w ** w * (math.log(w) + 1)),
    ("add", lambda w: 2.0),
    ("sub", lambda w: 0.0),
    ("div", lambda w: 0.0),
])
def test_same_operand_twice(op: str, expected: object) -> None:
    source = f"declare weight w\ndeclare loss L\ndefine L = {op} w w\n"
    w = 1.3
    got = assert_gradients(source, {"w": w})
    assert got["w"] == pytest.approx(expected(w), rel=1e-13, abs=1e-15)  # type: ignore[operator]


def test_same_operand_twice_inside_the_program() -> None:
    # a = w x; b = a ^ a; L = b * 3: dL/dw = 3 a^a (ln a + 1) x
    source = program_text(
        "declare weight w", "declare input x", "declare intvar a", "declare intvar b",
        "declare loss L", "define a = mul w x", "define b = pow a a", "define L = mul b 3")
    w, x = 0.8, 1.5
    got = assert_gradients(source, {"w": w, "x": x})
    a = w * x
    assert got["w"] == pytest.approx(3 * a ** a * (math.log(a) + 1) * x, rel=1e-13)


def test_same_operand_twice_and_elsewhere() -> None:
    # b = a * a and c = a * 5 both use a: dL/da = 2a + 5
    source = program_text(
        "declare weight a", "declare intvar b", "declare intvar c", "declare loss L",
        "define b = mul a a", "define c = mul a 5", "define L = add b c")
    got = assert_gradients(source, {"a": -0.7})
    assert got["a"] == pytest.approx(2 * -0.7 + 5, rel=1e-13)


# ------------------------------------------------------------------------ bug 3: loss operands


def test_loss_operand_used_elsewhere_gets_every_term() -> None:
    # a is a direct operand of the loss AND feeds c: dL/da = c + a e^a
    source = program_text(
        "declare weight w", "declare input x", "declare intvar a", "declare intvar c",
        "declare loss L", "define a = mul w x", "define c = exp a", "define L = mul a c")
    w, x = 0.6, -0.9
    got = assert_gradients(source, {"w": w, "x": x})
    a = w * x
    assert got["w"] == pytest.approx((math.exp(a) + a * math.exp(a)) * x, rel=1e-13)


def test_weight_used_by_the_loss_and_elsewhere() -> None:
    # L = w + w^3 (through v): dL/dw = 1 + 3 w^2; the weight's partial is an output
    source = program_text(
        "declare weight w", "declare intvar v", "declare loss L", "define v = pow w 3",
        "define L = add w v")
    got = assert_gradients(source, {"w": 0.7})
    assert got["w"] == pytest.approx(1 + 3 * 0.49, rel=1e-13)
    gcp = api.compile(parse(source))
    assert "declare output d/L/d/w" in gcp.text.splitlines()


def test_loss_operand_used_only_by_the_loss_is_one_line() -> None:
    # the layout of the seed: the loss's local partial IS d/L/d/diff, no copy of it
    gcp = api.compile(parse(SEED_EXAMPLE, "example_shape.tf"))
    lines = gcp.text.splitlines()
    assert "define d/lambda/d/diff = mul 2 diff" in lines
    assert sum(line.startswith("define d/lambda/d/diff") for line in lines) == 1


def test_weight_directly_in_the_loss_is_an_output() -> None:
    # the original declared d/L/d/w an intvar when w was a direct operand of the loss
    gcp = api.compile(parse("declare weight w\ndeclare input x\ndeclare loss L\n"
                            "define L = mul w x\n"))
    lines = gcp.text.splitlines()
    assert "declare output d/L/d/w" in lines
    assert parse(gcp.text).names("output") == ["d/L/d/w"]
    assert gcp_gradients(gcp, {"w": 2.0, "x": -3.0}, ["w"])["w"] == -3.0


# ------------------------------------------------------------------------ the seed's example


def test_seed_example_gradient() -> None:
    gcp = api.compile(parse(SEED_EXAMPLE, "example_shape.tf"))
    x, y, w = 1.5, 0.2, -0.4
    got = gcp_gradients(gcp, {"x": x, "y": y, "w": w}, ["w"])["w"]
    o = logistic(w * x)
    assert got == pytest.approx(2 * (o - y) * o * (1 - o) * x, rel=1e-13)
    lines = gcp.text.splitlines()
    assert "define d/lambda/d/w = mul d/lambda/d/z d/z/d/w" in lines
    assert "define d/z/d/w = x" in lines


def test_full_gcp_has_every_partial_of_the_seed() -> None:
    gcp = api.compile(parse(SEED_EXAMPLE, "example_shape.tf"), full=True)
    program = parse(gcp.text)
    for v in ("lambda", "diff", "o", "z", "x", "y", "w"):
        assert adjoint_name("lambda", v) in program.decls, v
    for partial in ("d/diff/d/o", "d/diff/d/y", "d/o/d/z", "d/z/d/x", "d/z/d/w"):
        assert partial in program.decls, partial
    values = {"x": 1.5, "y": 0.2, "w": -0.4}
    got = run_program(program, values, ["d/lambda/d/lambda", "d/lambda/d/x", "d/lambda/d/y"])
    assert got["d/lambda/d/lambda"] == 1.0
    shape = parse(SEED_EXAMPLE)
    for name in ("x", "y"):
        assert got[f"d/lambda/d/{name}"] == pytest.approx(fd_gradient(shape, values, name),
                                                          rel=1e-7)


def test_default_gcp_leaves_out_what_no_weight_needs() -> None:
    program = parse(SEED_EXAMPLE)
    default = parse(api.compile(program).text)
    for v in ("x", "y", "lambda"):
        assert adjoint_name("lambda", v) not in default.decls
    full = api.compile(program, full=True)
    values = {"x": 0.7, "y": 0.9, "w": 1.1}
    assert gcp_gradients(api.compile(program), values, ["w"])["w"] == pytest.approx(
        gcp_gradients(full, values, ["w"])["w"], rel=1e-15)


def test_v0_linear_gradient_matches_the_original_hand_computed_value(original_dir: Path
                                                                      ) -> None:
    # SPEC: x=1, w=2, y=4 -> d/lambda/d/w = 2 (x w - y) x = -4, from ours and the original GCP
    shape = parse((original_dir / "v0_linear_sqloss_shape.tf").read_text())
    values = {"x": 1.0, "w": 2.0, "y": 4.0}
    assert gcp_gradients(api.compile(shape), values, ["w"])["w"] == -4.0
    early = parse((original_dir / "v0_linear_sqloss_gcp_early.tf").read_text())
    assert run_program(early, values, ["d/lambda/d/w"])["d/lambda/d/w"] == -4.0


@pytest.mark.parametrize("gcp_file", ["small_net_three_logistic_gcp.tf",
                                      "small_net_three_logistic_gcp_v20160804.tf"])
def test_small_net_agrees_with_the_original_where_it_was_right(original_dir: Path,
                                                               gcp_file: str) -> None:
    # no fan-out and no a-op-a here, so the 2016 GCP is correct: both must agree
    shape = parse((original_dir / "small_net_three_logistic_shape.tf").read_text())
    values = {"a": 1.0, "b": 2.0, "c": 3.0, "f": 0.35, "g": 0.24, "h": 0.08,
              "m": logistic(0.4), "n": logistic(0.4), "p": logistic(0.3)}
    ours = gcp_gradients(api.compile(shape), values, ["f", "g", "h"])
    original = parse((original_dir / gcp_file).read_text())
    theirs = run_program(original, values, ["d/LAMBDA/d/f", "d/LAMBDA/d/g", "d/LAMBDA/d/h"])
    for w in ("f", "g", "h"):
        assert ours[w] == pytest.approx(float(theirs[f"d/LAMBDA/d/{w}"]), rel=1e-12)  # type: ignore[arg-type]
        assert ours[w] == pytest.approx(fd_gradient(shape, values, w), rel=1e-6)
    # the signs the original test asserted (TGD)
    assert ours["f"] < 0 < ours["g"] and ours["h"] < 0


# ------------------------------------------------------------------------ the GCP's text


def test_gcp_is_deterministic_and_reparses_to_itself() -> None:
    source = program_text(
        "declare input x [3]", "declare weight W [2, 3]", "declare weight b [2]",
        "declare weight c", "declare intvar z", "declare intvar a", "declare intvar h",
        "declare intvar s", "declare loss L", "define z = matmul W x", "define a = add z b",
        "define h = logistic a", "define s = mul h c", "define L = sum s")
    first = api.compile(parse(source, "net.tf")).text
    for full in (False, True):
        text = api.compile(parse(source, "net.tf"), full=full).text
        again = parse(text, "gcp.tf")  # the same parser and checker accept it
        assert again.text() == text  # every line round-trips
        assert api.compile(parse(source, "net.tf"), full=full).text == text
    assert first == api.compile(parse(source, "net.tf")).text


def test_gcp_kinds() -> None:
    gcp = api.compile(parse(SEED_EXAMPLE), full=True)
    program = parse(gcp.text)
    assert program.names("input") == ["x", "y", "w"]  # input, exp_output, weight
    assert program.names("loss") == ["lambda"]
    assert program.names("output") == ["d/lambda/d/w"]  # only the weights' gradients
    assert program.names("weight", "exp_output") == []
    assert gcp.gradient_names() == {"w": "d/lambda/d/w"}


def test_gcp_gradient_shapes_are_the_weights_shapes() -> None:
    source = program_text(
        "declare input x [3]", "declare weight W [2, 3]", "declare weight b [2]",
        "declare weight k", "declare intvar z", "declare intvar a", "declare intvar s",
        "declare loss L", "define z = matmul W x", "define a = add z b",
        "define s = mul a k", "define L = mean s")
    program = parse(api.compile(parse(source)).text)
    assert program.shapes["d/L/d/W"] == (2, 3)
    assert program.shapes["d/L/d/b"] == (2,)
    assert program.shapes["d/L/d/k"] == ()


def test_provenance_points_at_the_shape_line() -> None:
    gcp = api.compile(parse(SEED_EXAMPLE))
    lines = gcp.text.splitlines()
    origins = gcp.provenance()
    assert len(origins) == len(lines)
    shape_lines = SEED_EXAMPLE.splitlines()
    for line, origin in zip(lines, origins, strict=True):
        if line.startswith("define d/lambda/d/z ") or line.startswith("define d/o/d/z"):
            assert shape_lines[origin - 1] == "define o = logistic z" or (
                shape_lines[origin - 1] == "define z = mul x w")
        if line == "define diff = sub o y":
            assert shape_lines[origin - 1] == line


def test_unreachable_weight_gets_a_zero_gradient_and_a_warning() -> None:
    source = program_text(
        "declare weight w", "declare weight v", "declare weight V [2]", "declare intvar a",
        "declare intvar b", "declare loss L", "define a = mul v 2", "define b = sum V",
        "define L = mul w w")
    program = parse(source, "s.tf")
    messages = [(d.line, d.severity, d.message) for d in program.warnings]
    assert (2, "warning", "weight 'v' cannot affect the loss 'L' (its gradient is always 0)"
            ) in messages
    assert (3, "warning", "weight 'V' cannot affect the loss 'L' (its gradient is always 0)"
            ) in messages
    got = gcp_gradients(api.compile(program), {"w": 0.5, "v": 3.0, "V": np.ones(2)},
                        ["w", "v", "V"])
    assert got["w"] == 1.0 and got["v"] == 0.0
    assert got["V"].shape == (2,) and not got["V"].any()


def test_program_without_weights_compiles_to_its_forward_pass() -> None:
    gcp = api.compile(parse("declare input x\ndeclare loss L\ndefine L = mul x x\n"))
    program = parse(gcp.text)
    assert program.names("output") == []
    assert program.defs["L"].op == "mul"


# ------------------------------------------------------------------------ compile errors


@pytest.mark.parametrize(("source", "line", "message"), [
    ("declare weight w\ndeclare intvar a\ndefine a = mul w w\n", 0, "no loss declared"),
    ("declare weight w\ndeclare loss L\ndeclare loss M\ndefine L = mul w w\n"
     "define M = mul w 2\n", 3, "exactly one loss; 'M' is a second one"),
    ("declare weight w\ndeclare loss L\n", 2, "the loss 'L' is never defined"),
    ("declare weight w\ndeclare loss L\ndeclare intvar a\ndefine L = mul w w\n"
     "define a = mul L 2\n", 5, "the loss 'L' cannot be used as an operand"),
    ("declare weight w [2]\ndeclare loss L\ndefine L = mul w w\n", 3,
     "the loss must be a scalar"),
    ("declare weight w\ndeclare intvar d/L/d/w\ndeclare loss L\ndefine d/L/d/w = mul w 2\n"
     "define L = mul d/L/d/w w\n", 2, "'d/L/d/w' is a derivative name"),
])
def test_compile_errors(source: str, line: int, message: str) -> None:
    with pytest.raises(TenFlangError) as info:
        api.compile(parse(source, "s.tf"))
    d = info.value.first
    assert message in d.message
    assert d.file == "s.tf" and d.line == line


def test_compiling_a_gcp_is_refused_rather_than_producing_an_invalid_program() -> None:
    # --full on a GCP used to emit d/L/d/d/L/d/w (not a name) and declare names twice
    gcp = api.compile(parse(SEED_EXAMPLE, "s.tf")).text
    with pytest.raises(TenFlangError, match="derivative name"):
        api.compile(parse(gcp, "gcp.tf"), full=True)


# ------------------------------------------------------------------------ scale


def chain_lines(n: int) -> list[str]:
    """w -> v0 = 2w -> v1 = -v0 -> ... -> v(n-1) -> L = 3 v(n-1): 2n + 3 lines."""
    lines = ["declare weight w", "declare intvar v0", "define v0 = mul w 2"]
    for i in range(1, n):
        lines += [f"declare intvar v{i}", f"define v{i} = neg v{i - 1}"]
    return [*lines, "declare loss L", f"define L = mul v{n - 1} 3"]


@pytest.mark.slow
def test_a_100000_line_chain_compiles_without_recursion() -> None:
    # 50,000 declarations + 50,000 definitions; everything on the way is iterative (how long
    # it takes is measured by benchmarks/bench_chain.py, not asserted here)
    n = 49_999
    lines = chain_lines(n)
    assert len(lines) == 100_001
    text = api.compile(parse(program_text(*lines), "chain.tf")).text
    # the adjoint walks back along the whole chain, one line per link
    assert text.count("declare intvar d/L/d/v") == n
    assert "declare output d/L/d/w" in text


def test_a_2000_line_chain_has_the_right_gradient() -> None:
    # (-1)^(n-1) * 2 w * 3: the gradient survives a long chain exactly
    n = 1000
    source = program_text(*chain_lines(n))
    gcp = api.compile(parse(source))
    assert gcp_gradients(gcp, {"w": 0.5}, ["w"])["w"] == (-1) ** (n - 1) * 6
    assert loss_of(parse(source), {"w": 0.5}) == (-1) ** (n - 1) * 3.0


def test_wide_fanout_of_one_weight() -> None:
    # w feeds 300 lines; the adjoint is the sum of all 300 terms: sum_k k = 45150
    k = 300
    lines = ["declare weight w", "declare intvar s0", "define s0 = mul w 0"]
    for i in range(1, k + 1):
        lines += [f"declare intvar t{i}", f"define t{i} = mul w {i}",
                  f"declare intvar s{i}", f"define s{i} = add s{i - 1} t{i}"]
    lines += ["declare loss L", f"define L = mul s{k} 1"]
    gcp = api.compile(parse(program_text(*lines)))
    assert gcp_gradients(gcp, {"w": 1.7}, ["w"])["w"] == pytest.approx(k * (k + 1) / 2,
                                                                     rel=1e-13)
    adjoint = [line for line in gcp.text.splitlines()
               if re.match(r"define d/L/d/w(:\d+)? = ", line)]
    assert len(adjoint) >= 2  # the sum is spelled out, not one term


# ------------------------------------------------------------------------ what notebook 02 says

FAN = FAN_OUT


def test_notebook_02_answers_are_what_the_gcp_does() -> None:
    """Exercise 2: add -> mul on line 14 changes only lines derived from line 14 (its forward
    copy, its block's comment, its two local partials). Exercise 3: a third and fourth use of
    a (d = mul a a) give d/L/d/a three terms, the two uses in mul a a summed in d/d/d/a."""
    before = api.compile(parse(FAN, "fan.tf"))
    after = api.compile(parse(FAN.replace("define o = add b c", "define o = mul b c"), "fan.tf"))
    assert len(before.lines) == len(after.lines)
    changed = [(i, str(b.statement), str(a.statement))
               for i, (b, a) in enumerate(zip(before.lines, after.lines, strict=True), 1)
               if str(b.statement) != str(a.statement)]
    assert {after.lines[i - 1].origin for i, _, _ in changed} == {14}
    assert [new for _, _, new in changed] == [
        "define o = mul b c", "# line 14: define o = mul b c", "define d/o/d/b = c",
        "define d/o/d/c = b"]
    three = FAN.replace("declare loss L", "declare intvar d\ndeclare intvar q\ndeclare loss L") \
        .replace("define o = add b c",
                 "define d = mul a a\ndefine q = add b d\ndefine o = add q c")
    text = api.compile(parse(three, "fan.tf")).text
    terms = re.findall(r"define d/L/d/a:\d+ = mul (\S+) (\S+)", text)
    assert terms == [("d/L/d/c", "d/c/d/a"), ("d/L/d/d", "d/d/d/a"), ("d/L/d/b", "d/b/d/a")]
    assert "define d/d/d/a = add a a" in text
    assert "define d/L/d/a:2 = add d/L/d/a:0 d/L/d/a:1" in text
    assert "define d/L/d/a = add d/L/d/a:2 d/L/d/a:3" in text

