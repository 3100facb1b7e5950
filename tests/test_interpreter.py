"""The interpreter: the seed's worked example, NULL, every forward kernel, and batching.

Expected values come from Python's ``math`` module or plain numpy written here, never from the
interpreter's own kernels.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from conftest import program_text
from helpers_fd import assert_agree

from tenflang_nb.core import api
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.plan import Plan, interpret
from tenflang_nb.core.program import parse

SEED_INTERPRETER_EXAMPLE = program_text(
    "declare input x", "declare weight w", "declare exp_output y", "declare output o",
    "", "declare intvar a", "declare intvar b", "declare intvar c", "",
    "define c = mul y w", "define a = mul x w", "define o = add a w")


def run_one(source: str, values: dict[str, Any], names: list[str]) -> dict[str, Any]:
    found = Plan(parse(source)).example(values, names)
    return {name: None if v is None else np.array(v) for name, v in found.items()}


# ------------------------------------------------------------------------ the seed


def test_seed_worked_example() -> None:
    # Input Vector {x: 3, w: -2} -> Return {o: -8}; y was never given, so c is NULL
    program = parse(SEED_INTERPRETER_EXAMPLE, "seed.tf")
    assert interpret(program, {"x": 3, "w": -2}) == {"o": -8.0}
    got = run_one(SEED_INTERPRETER_EXAMPLE, {"x": 3, "w": -2}, ["x", "w", "y", "a", "b", "c",
                                                                 "o"])
    assert got["x"] == 3 and got["w"] == -2
    assert got["y"] is None and got["b"] is None and got["c"] is None
    assert got["a"] == -6 and got["o"] == -8


def test_seed_example_through_evaluate() -> None:
    program = parse(SEED_INTERPRETER_EXAMPLE, "seed.tf")
    assert api.evaluate(program, [{"x": 3}], {"w": -2}) == [{"o": -8.0}]


def test_null_propagates_through_every_kind_of_line() -> None:
    source = program_text(
        "declare input x", "declare exp_output y", "declare intvar a", "declare intvar b",
        "declare intvar k", "declare intvar m", "declare output o", "declare loss L",
        "define a = y", "define b = exp a", "define k = 2", "define m = mul k 3",
        "define o = mul x m", "define L = sub o b")
    got = run_one(source, {"x": 0.5}, ["a", "b", "k", "m", "o", "L"])
    assert got["a"] is None and got["b"] is None and got["L"] is None
    assert got["k"] == 2 and got["m"] == 6 and got["o"] == 3
    assert interpret(parse(source), {"x": 0.5}) == {"o": 3.0, "L": None}
    assert interpret(parse(source), {"x": 0.5, "y": 0.0}) == {"o": 3.0, "L": 2.0}


def test_interpret_reports_outputs_and_the_loss_only() -> None:
    source = program_text("declare input x", "declare intvar a", "declare output o",
                          "declare loss L", "define a = mul x 2", "define o = add a 1",
                          "define L = mul o o")
    assert interpret(parse(source), {"x": 1.5}) == {"o": 4.0, "L": 16.0}


def test_constants_are_double_precision() -> None:
    # the original read program constants with stof: 19.20 became 19.200000762939453
    source = program_text("declare input x", "declare output o", "define o = add x 19.20")
    assert interpret(parse(source), {"x": 0.0}) == {"o": 19.2}
    source = program_text("declare input x", "declare output o", "define o = mul x 0.1")
    assert interpret(parse(source), {"x": 3.0}) == {"o": 3.0 * 0.1}


# ------------------------------------------------------------------------ forward kernels

SCALAR_EXPECTED: list[tuple[str, tuple[float, ...], float]] = [
    ("add", (1.5, -4.0), -2.5),
    ("sub", (1.5, -4.0), 5.5),
    ("mul", (1.5, -4.0), -6.0),
    ("div", (1.5, -4.0), -0.375),
    ("pow", (1.5, 3.0), 3.375),
    ("pow", (2.0, -1.0), 0.5),
    ("pow", (9.0, 0.5), 3.0),
    ("pow", (-3.0, 2.0), 9.0),  # a negative base with an integer exponent
    ("pow", (-2.0, 3.0), -8.0),
    ("pow", (7.0, 1.0), 7.0),
    ("pow", (7.0, 0.0), 1.0),
    ("pow", (2.0, 0.3), 2.0 ** 0.3),
    ("logistic", (0.0,), 0.5),
    ("logistic", (2.0,), 1 / (1 + math.exp(-2.0))),
    ("logistic", (-3.0,), 1 / (1 + math.exp(3.0))),
    ("logistic", (800.0,), 1.0),
    ("logistic", (-800.0,), 0.0),
    ("exp", (1.0,), math.e),
    ("ln", (math.e,), 1.0),
    ("ln", (0.5,), math.log(0.5)),
    ("log", (10.0,), math.log(10.0)),
    ("neg", (2.5,), -2.5),
    ("tanh", (0.7,), math.tanh(0.7)),
    ("relu", (2.5,), 2.5),
    ("relu", (-2.5,), 0.0),
    ("sqrt", (6.25,), 2.5),
    ("abs", (-2.5,), 2.5),
    ("step", (0.1,), 1.0),
    ("step", (0.0,), 0.0),
    ("step", (-0.1,), 0.0),
    ("sign", (-0.1,), -1.0),
    ("sign", (0.0,), 0.0),
    ("sign", (3.0,), 1.0),
]


@pytest.mark.parametrize(("op", "args", "expected"), SCALAR_EXPECTED,
                         ids=[f"{op}{args}" for op, args, _ in SCALAR_EXPECTED])
@pytest.mark.parametrize("operands", ["inputs", "constants"])
def test_scalar_kernel(op: str, args: tuple[float, ...], expected: float,
                       operands: str) -> None:
    names = ["a", "b"][: len(args)]
    if operands == "inputs":
        head = "".join(f"declare input {n}\n" for n in names)
        refs = names
    else:  # folded once, at bind time
        head = ""
        refs = [repr(v) for v in args]
    source = head + f"declare output o\ndefine o = {op} {' '.join(refs)}\n"
    got = interpret(parse(source), dict(zip(names, args, strict=True)))["o"]
    assert got == pytest.approx(expected, rel=1e-14, abs=1e-300)


def test_logistic_does_not_overflow() -> None:
    with np.errstate(all="raise"):
        got = run_one("declare input a [3]\ndeclare output o\ndefine o = logistic a\n",
                      {"a": np.array([-1000.0, 0.0, 1000.0])}, ["o"])["o"]
    np.testing.assert_array_equal(got, [0.0, 0.5, 1.0])


def test_math_errors_give_nan_or_inf_not_an_exception() -> None:
    source = program_text("declare input a", "declare output l", "declare output r",
                          "declare output q", "define l = ln a", "define r = sqrt a",
                          "define q = div 1 a")
    got = interpret(parse(source), {"a": -1.0})
    assert math.isnan(got["l"]) and math.isnan(got["r"]) and got["q"] == -1.0  # type: ignore[arg-type]
    got = interpret(parse(source), {"a": 0.0})
    assert got["l"] == -math.inf and got["q"] == math.inf


RNG = np.random.default_rng(7)


def _ref_logsumexp(a: np.ndarray) -> float:
    m = max(a)
    return m + math.log(sum(math.exp(x - m) for x in a))


TENSOR_EXPECTED: list[tuple[str, str, dict[str, tuple[int, ...]], Any]] = [
    ("matmul_vec_vec", "matmul u v", {"u": (3,), "v": (3,)}, lambda u, v: float(u @ v)),
    ("matmul_vec_mat", "matmul u M", {"u": (3,), "M": (3, 2)}, lambda u, M: u @ M),
    ("matmul_mat_vec", "matmul M u", {"M": (2, 3), "u": (3,)}, lambda M, u: M @ u),
    ("matmul_mat_mat", "matmul A B", {"A": (2, 3), "B": (3, 4)}, lambda A, B: A @ B),
    ("transpose", "transpose A", {"A": (2, 3)}, lambda A: A.T),
    ("transpose_vector", "transpose u", {"u": (3,)}, lambda u: u),
    ("sum", "sum A", {"A": (2, 3)}, lambda A: sum(A.ravel())),
    ("mean", "mean A", {"A": (2, 3)}, lambda A: sum(A.ravel()) / 6),
    ("logsumexp", "logsumexp u", {"u": (4,)}, _ref_logsumexp),
    ("softmax", "softmax u", {"u": (4,)},
     lambda u: np.array([math.exp(x) for x in u]) / sum(math.exp(x) for x in u)),
    ("logsoftmax", "logsoftmax u", {"u": (4,)}, lambda u: u - _ref_logsumexp(u)),
    ("outer", "outer u v", {"u": (3,), "v": (2,)},
     lambda u, v: np.array([[a * b for b in v] for a in u])),
    ("sumto_rows", "sumto A v", {"A": (2, 3), "v": (3,)}, lambda A, v: A[0] + A[1]),
    ("sumto_column", "sumto A K", {"A": (2, 3), "K": (2, 1)},
     lambda A, K: np.array([[sum(A[0])], [sum(A[1])]])),
    ("broadcast", "broadcast v A", {"v": (3,), "A": (2, 3)}, lambda v, A: np.array([v, v])),
    ("broadcast_add", "add A v", {"A": (2, 3), "v": (3,)}, lambda A, v: A + np.array([v, v])),
    ("broadcast_column", "mul A K", {"A": (2, 3), "K": (2, 1)},
     lambda A, K: np.array([A[0] * K[0, 0], A[1] * K[1, 0]])),
]


@pytest.mark.parametrize("case", TENSOR_EXPECTED, ids=[c[0] for c in TENSOR_EXPECTED])
def test_tensor_kernel(case: tuple[str, str, dict[str, tuple[int, ...]], Any]) -> None:
    _, expr, operands, reference = case
    head = "".join(f"declare input {n} [{', '.join(map(str, s))}]\n"
                   for n, s in operands.items())
    values = {n: RNG.uniform(-2, 2, size=s) for n, s in operands.items()}
    got = run_one(head + f"declare output o\ndefine o = {expr}\n", values, ["o"])["o"]
    expected = np.asarray(reference(*values.values()), dtype=float)
    assert got.shape == expected.shape
    assert_agree(got, expected, rtol=1e-13, atol=1e-14)


def test_softmax_and_logsumexp_of_large_values() -> None:
    source = program_text("declare input u [3]", "declare output s", "declare output l",
                          "define s = softmax u", "define l = logsumexp u")
    with np.errstate(all="raise"):
        got = run_one(source, {"u": np.array([1000.0, 1000.0, -1000.0])}, ["s", "l"])
    np.testing.assert_allclose(got["s"], [0.5, 0.5, 0.0], atol=1e-300)
    assert float(got["l"]) == pytest.approx(1000 + math.log(2), rel=1e-15)


def test_identities_and_copies_give_the_right_values() -> None:
    # mul x 1, add 0 x, pow x 1, sub x 0, div x 1 reuse their operand; copies share it too
    source = program_text(
        "declare input x [3]", "declare input s", "declare intvar one",
        "declare output a", "declare output b", "declare output c", "declare output d",
        "declare output e", "declare output f", "declare output g", "declare output h",
        "define one = 1", "define a = mul x 1", "define b = add 0 x", "define c = pow x 1",
        "define d = sub x 0", "define e = div x one", "define f = x", "define g = mul s one",
        "define h = add x s")
    x = np.array([1.0, -2.0, 3.5])
    got = run_one(source, {"x": x, "s": 4.0}, list("abcdefgh"))
    for name in "abcdef":
        np.testing.assert_array_equal(got[name], x)
    assert got["g"] == 4.0
    np.testing.assert_array_equal(got["h"], x + 4.0)


def test_identity_that_broadcasts_is_not_an_alias() -> None:
    # add s 0 with s a scalar is s, but mul s ones with ones a vector must broadcast
    source = program_text("declare input s", "declare input ones [3]", "declare output o",
                          "define o = mul s ones")
    got = run_one(source, {"s": 2.0, "ones": np.ones(3)}, ["o"])["o"]
    np.testing.assert_array_equal(got, [2.0, 2.0, 2.0])


# ------------------------------------------------------------------------ batches


def test_batch_matches_one_example_at_a_time() -> None:
    source = program_text(
        "declare input x [3]", "declare input s", "declare weight W [2, 3]",
        "declare weight b [2]", "declare intvar z", "declare intvar h", "declare intvar q",
        "declare output o", "declare loss L", "define z = matmul W x", "define h = add z b",
        "define q = mul h s", "define o = tanh q", "define L = sum o")
    program = parse(source)
    n = 4
    xs, ss = RNG.normal(size=(n, 3)), RNG.normal(size=n)
    W, b = RNG.normal(size=(2, 3)), RNG.normal(size=2)
    run = Plan(program).bind({"x": xs, "s": ss, "W": W, "b": b}, n=n)
    run.run()
    batch_o, batch_l = run.value("o"), run.value("L")
    assert batch_o is not None and batch_l is not None
    for i in range(n):
        o = np.tanh((W @ xs[i] + b) * ss[i])
        assert_agree(batch_o[i], o, rtol=1e-14, atol=0.0)
        assert float(batch_l[i]) == pytest.approx(float(o.sum()), rel=1e-14)


def test_the_plans_entry_points_agree_and_treat_none_as_null() -> None:
    source = program_text("declare input x", "declare input v [2]", "declare weight w",
                          "declare output y", "declare output u", "define y = mul x w",
                          "define u = mul v w")
    plan = Plan(parse(source))
    xs = np.array([1.0, 2.0, 4.0])
    rows = [plan.example({"x": x, "v": None, "w": 0.5}) for x in xs]
    assert rows == [{"y": 0.5 * x, "u": None} for x in xs]
    assert isinstance(rows[0]["y"], float)  # a scalar is a float, not a 0-d array
    run = plan.run({"x": xs, "v": None, "w": 0.5}, 3)
    assert run.value("y").tolist() == [0.5, 1.0, 2.0] and run.value("u") is None
    means = plan.means({"x": xs, "v": np.array([[1.0, 2.0]] * 3), "w": 0.5}, 3, ["y", "u"])
    assert float(means["y"]) == pytest.approx(7.0 / 6.0)
    assert means["u"].tolist() == [0.5, 1.0]
    assert interpret(parse(source), {"x": 2.0, "w": 0.5}) == {"y": 1.0, "u": None}


def test_batch_axis_is_not_confused_with_a_data_axis() -> None:
    # 3 examples of a scalar x times ONE vector v of length 3: row i is x_i * v, not x * v
    source = program_text("declare input x", "declare weight v [3]", "declare output o",
                          "declare output t", "define o = mul x v", "define t = add v x")
    x, v = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])
    run = Plan(parse(source)).bind({"x": x, "v": v}, n=3)
    run.run()
    np.testing.assert_array_equal(run.value("o"), np.outer(x, v))
    np.testing.assert_array_equal(run.value("t"), v[None, :] + x[:, None])


def test_broadcast_of_a_batch_of_scalars_over_a_shared_vector() -> None:
    # regression: broadcast (sum's derivative) put the batch axis of per-example scalars on the
    # vector's data axis, and crashed for N > 1 (found by test_random_programs)
    source = program_text("declare input g", "declare weight v [2]", "declare output o",
                          "define o = broadcast g v")
    g = np.array([1.0, 2.0, 3.0])
    run = Plan(parse(source)).bind({"g": g, "v": np.zeros(2)}, n=3)
    run.run()
    np.testing.assert_array_equal(run.value("o"), [[1, 1], [2, 2], [3, 3]])


def test_weights_are_shared_and_can_be_reset_in_place() -> None:
    source = program_text("declare input x", "declare weight w", "declare output o",
                          "define o = mul x w")
    run = Plan(parse(source)).bind({"x": np.array([1.0, 2.0]), "w": 3.0}, n=2)
    run.run()
    np.testing.assert_array_equal(run.value("o"), [3.0, 6.0])
    run.set("w", -1.0)
    run.run()
    np.testing.assert_array_equal(run.value("o"), [-1.0, -2.0])


def test_value_of_the_wrong_shape_names_the_declaration() -> None:
    program = parse("declare input x [3]\ndeclare output o\ndefine o = sum x\n", "p.tf")
    with pytest.raises(TenFlangError) as info:
        Plan(program).bind({"x": np.ones(4)}, n=1)
    d = info.value.first
    assert d.file == "p.tf" and d.line == 1 and "[4]" in d.message and "[3]" in d.message


def test_evaluate_groups_examples_with_different_nulls() -> None:
    program = parse(program_text("declare input x", "declare exp_output y",
                                 "declare weight w", "declare output o", "declare loss L",
                                 "define o = mul x w", "define L = sub o y"))
    got = api.evaluate(program, [{"x": 1.0, "y": 0.5}, {"x": 2.0}, {"x": 3.0, "y": 1.0}],
                       {"w": 2.0})
    assert got == [{"o": 2.0, "L": 1.5}, {"o": 4.0, "L": None}, {"o": 6.0, "L": 5.0}]


def test_evaluate_requires_inputs_and_weights() -> None:
    program = parse(program_text("declare input x", "declare weight w", "declare output o",
                                 "define o = mul x w"), "p.tf")
    with pytest.raises(TenFlangError, match="missing required input 'x'"):
        api.evaluate(program, [{}], {"w": 1.0})
    with pytest.raises(TenFlangError, match="no value for weight 'w'"):
        api.evaluate(program, [{"x": 1.0}], {})
    assert api.evaluate(program, [{"x": 1.0, "w": 2.0}]) == [{"o": 2.0}]
