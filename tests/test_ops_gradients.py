"""Finite-difference checks of every operator and every derivative rule in ``ops.OPS_LIST``.

Each case compiles a small shape program, runs its GCP and its forward-mode program and compares
d(loss)/d(weight) with a central difference of the loss (see ``helpers_fd``): every operator's
local partials or vector-Jacobian products (reverse mode) and Jacobian-vector products (forward
mode) are checked. Operands are placed in every position
(first, second, both at once, next to a constant, next to an input), the operator appears both
as the loss's own line and inside the program, and tensors are checked per example and over a
batch through ``api.trainer``.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from helpers_fd import assert_agree, assert_gradients, fd_gradient, gcp_gradients, loss_of

from tenflang_nb.core import api, ops
from tenflang_nb.core.formatting import fmt_shape
from tenflang_nb.core.program import parse

# ------------------------------------------------------------------------ scalar operators
# Values keep every function smooth around the point: positive bases for ln/sqrt/pow, relu,
# abs, step and sign well away from their kink at 0, denominators well away from 0.

UNARY_POINTS: dict[str, tuple[float, ...]] = {
    "logistic": (0.4, -2.1),
    "exp": (0.3, -1.2),
    "ln": (1.7, 0.4),
    "neg": (0.4,),
    "tanh": (0.4, -1.3),
    "relu": (0.8, -0.8),
    "sqrt": (1.7, 0.3),
    "abs": (0.8, -0.8),
    "step": (0.8, -0.8),
    "sign": (0.8, -0.8),
    "lnz": (1.7, 0.4),
}
BINARY_POINTS: dict[str, tuple[tuple[float, float], ...]] = {
    "add": ((0.7, -1.3),),
    "sub": ((0.7, -1.3),),
    "mul": ((0.7, -1.3),),
    "div": ((0.7, -1.3), (-2.0, 0.6)),
    "pow": ((1.3, 0.7), (0.8, -1.5)),
}
ELEMENTWISE = {op.name for op in ops.OPS_LIST if op.elementwise}
TENSOR_OPS = {op.name for op in ops.OPS_LIST if not op.elementwise}


def test_every_elementwise_operator_has_points() -> None:
    # a new operator must get a finite-difference case before it ships
    assert set(UNARY_POINTS) | set(BINARY_POINTS) == ELEMENTWISE
    for name in UNARY_POINTS:
        assert ops.OPS[name].arity == 1
    for name in BINARY_POINTS:
        assert ops.OPS[name].arity == 2


def _unary_sources(op: str) -> dict[str, str]:
    head = "declare weight a\ndeclare input x\n"
    return {
        # the operator's line is the loss itself (the compiler names that partial d/L/d/a)
        "at_loss": head + f"declare loss L\ndefine L = {op} a\n",
        # the operator's adjoint is not 1 and depends on the point
        "inner": head + "declare intvar v\ndeclare intvar s\ndeclare loss L\n"
        f"define v = {op} a\ndefine s = mul v x\ndefine L = mul s s\n",
    }


@pytest.mark.parametrize(("op", "a"), [(op, a) for op, pts in UNARY_POINTS.items()
                                       for a in pts])
@pytest.mark.parametrize("where", ["at_loss", "inner"])
def test_unary_operator(op: str, a: float, where: str) -> None:
    assert_gradients(_unary_sources(op)[where], {"a": a, "x": 0.9})


# operand patterns for a binary operator: what goes left and right of it
BINARY_PATTERNS = {
    "weights": ("a", "b"),  # both operands are weights: both rules
    "same": ("a", "a"),  # the same operand twice: the two rules' sum
    "const_right": ("a", "c"),  # only the first rule, next to a constant
    "const_left": ("c", "a"),  # only the second rule
    "input_right": ("a", "x"),  # the other operand needs no gradient
    "input_left": ("x", "a"),
}


def _binary_source(op: str, left: str, right: str, const: float, where: str) -> str:
    def ref(t: str) -> str:
        return repr(const) if t == "c" else t

    head = "declare weight a\ndeclare weight b\ndeclare input x\n"
    expr = f"{op} {ref(left)} {ref(right)}"
    if where == "at_loss":
        return head + f"declare loss L\ndefine L = {expr}\n"
    return head + ("declare intvar v\ndeclare intvar s\ndeclare loss L\n"
                   f"define v = {expr}\ndefine s = mul v b\ndefine L = mul s s\n")


@pytest.mark.parametrize(("op", "point"), [(op, p) for op, pts in BINARY_POINTS.items()
                                           for p in pts])
@pytest.mark.parametrize("pattern", list(BINARY_PATTERNS))
@pytest.mark.parametrize("where", ["at_loss", "inner"])
def test_binary_operator(op: str, point: tuple[float, float], pattern: str, where: str) -> None:
    left, right = BINARY_PATTERNS[pattern]
    a, b = point
    # the constant and the input take the other operand's value, so the domain stays valid
    other = b if left == "a" else a
    a_value = a if left == "a" else b
    source = _binary_source(op, left, right, other, where)
    values = {"a": a_value, "b": 1.1 if where == "inner" and "b" not in (left, right) else b,
              "x": other}
    if pattern == "same" and op == "pow":
        values["a"] = 1.3  # a ^ a needs a positive base
    if pattern == "same" and op == "div":
        values["a"] = 0.7
    wrt = ["a", "b"] if "b" in (left, right) or where == "inner" else ["a"]
    assert_gradients(source, values, wrt)


@pytest.mark.parametrize("exponent", [2, 1, 0.5, -1, 3, -2.5, 0, "1.0", "2e0"])
def test_pow_with_each_constant_exponent(exponent: Any) -> None:
    # 2, 1, 0.5 and -1 pick special kernels; the derivative folds b - 1 at compile time
    source = ("declare weight a\ndeclare intvar v\ndeclare loss L\n"
              f"define v = pow a {exponent}\ndefine L = mul v 3\n")
    got = assert_gradients(source, {"a": 1.7})
    b = float(exponent)
    assert got["a"] == pytest.approx(3 * b * 1.7 ** (b - 1), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("base", [2, 0.5, "2.5"])
def test_pow_with_a_constant_base(base: Any) -> None:
    # d(c^a)/da = c^a ln c, with ln c folded to a constant by the compiler
    source = f"declare weight a\ndeclare loss L\ndefine L = pow {base} a\n"
    got = assert_gradients(source, {"a": 0.7})
    c = float(base)
    assert got["a"] == pytest.approx(c ** 0.7 * np.log(c), rel=1e-12)


def test_log_alias_differentiates_like_ln() -> None:
    got = assert_gradients("declare weight a\ndeclare loss L\ndefine L = log a\n", {"a": 2.5})
    assert got["a"] == pytest.approx(1 / 2.5, rel=1e-12)


def test_relu_and_step_gradients_on_each_side() -> None:
    source = "declare weight a\ndeclare loss L\ndefine L = relu a\n"
    assert assert_gradients(source, {"a": 0.8})["a"] == 1.0
    assert assert_gradients(source, {"a": -0.8})["a"] == 0.0


def test_abs_gradient_is_the_sign() -> None:
    source = "declare weight a\ndeclare loss L\ndefine L = abs a\n"
    assert assert_gradients(source, {"a": 0.8})["a"] == 1.0
    assert assert_gradients(source, {"a": -0.8})["a"] == -1.0


@pytest.mark.parametrize("helper", ["step", "sign"])
def test_helper_times_its_argument(helper: str) -> None:
    # step(a) * a: the helper contributes 0, the product rule the rest
    source = (f"declare weight a\ndeclare intvar h\ndeclare loss L\n"
              f"define h = {helper} a\ndefine L = mul h a\n")
    for a in (0.8, -0.8):
        assert_gradients(source, {"a": a})


def test_copies_and_constants_in_the_chain() -> None:
    # define v = a (a copy) and define c = 2.5 (a constant) have d/v/d/a = 1 and no operand
    source = ("declare weight a\ndeclare intvar v\ndeclare intvar c\ndeclare intvar s\n"
              "declare loss L\ndefine v = a\ndefine c = 2.5\ndefine s = mul v c\n"
              "define L = mul s v\n")
    got = assert_gradients(source, {"a": 0.7})
    assert got["a"] == pytest.approx(2 * 2.5 * 0.7, rel=1e-12)


def test_loss_that_is_a_copy_of_a_weight() -> None:
    got = assert_gradients("declare weight a\ndeclare loss L\ndefine L = a\n", {"a": 0.3})
    assert got["a"] == 1.0


@pytest.mark.parametrize("op", sorted(UNARY_POINTS))
def test_full_gcp_gives_the_input_adjoints_too(op: str) -> None:
    # --full keeps d/L/d/x for inputs; check it against a difference in x
    source = ("declare weight a\ndeclare input x\ndeclare intvar v\ndeclare intvar s\n"
              f"declare loss L\ndefine s = mul a x\ndefine v = {op} s\ndefine L = mul v x\n")
    x = UNARY_POINTS[op][0]
    assert_gradients(source, {"a": 1.0, "x": x}, ["a", "x"], full=True)


# ------------------------------------------------------------------------ tensor operators
# (id, program, values): per-example shapes; the interpreter adds the batch axis itself.
# Results are contracted with a fixed input tensor C (mul then sum), so the adjoint reaching
# the operator is neither 1 nor uniform.

RNG = np.random.default_rng(20160816)


def _r(*shape: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    return RNG.uniform(low, high, size=shape)


def _contract(expr: str, out_shape: str) -> str:
    return (f"declare input C {out_shape}".rstrip() + "\ndeclare intvar r\ndeclare intvar rC\n"
            f"declare loss L\ndefine r = {expr}\ndefine rC = mul r C\ndefine L = sum rC\n")


def _decl(kind: str, name: str, shape: tuple[int, ...]) -> str:
    return f"declare {kind} {name}" + (f" {fmt_shape(shape)}" if shape else "") + "\n"


def _tensor_case(expr: str, operands: dict[str, tuple[int, ...]], out: tuple[int, ...],
                 positive: bool = False) -> tuple[str, dict[str, np.ndarray]]:
    head = "".join(_decl("weight", n, s) for n, s in operands.items())
    values = {n: _r(*s, low=0.5, high=1.5) if positive else _r(*s) for n, s in operands.items()}
    values["C"] = _r(*out)
    body = _contract(expr, fmt_shape(out) if out else "")
    return head + body, values


TENSOR_CASES: list[tuple[str, str, str, dict[str, tuple[int, ...]], tuple[int, ...]]] = [
    # (id, operator, expression, operand shapes, result shape)
    ("matmul_vec_vec", "matmul", "matmul u v", {"u": (3,), "v": (3,)}, ()),
    ("matmul_vec_mat", "matmul", "matmul u M", {"u": (3,), "M": (3, 2)}, (2,)),
    ("matmul_mat_vec", "matmul", "matmul M u", {"M": (2, 3), "u": (3,)}, (2,)),
    ("matmul_mat_mat", "matmul", "matmul A B", {"A": (2, 3), "B": (3, 4)}, (2, 4)),
    ("matmul_same_matrix", "matmul", "matmul A A", {"A": (3, 3)}, (3, 3)),
    ("matmul_same_vector", "matmul", "matmul u u", {"u": (3,)}, ()),
    ("transpose_matrix", "transpose", "transpose A", {"A": (2, 3)}, (3, 2)),
    ("transpose_vector", "transpose", "transpose u", {"u": (3,)}, (3,)),
    ("sum_vector", "sum", "sum u", {"u": (4,)}, ()),
    ("sum_matrix", "sum", "sum A", {"A": (2, 3)}, ()),
    ("sum_scalar", "sum", "sum s", {"s": ()}, ()),
    ("mean_vector", "mean", "mean u", {"u": (4,)}, ()),
    ("mean_matrix", "mean", "mean A", {"A": (2, 3)}, ()),
    ("mean_scalar", "mean", "mean s", {"s": ()}, ()),
    ("logsumexp", "logsumexp", "logsumexp u", {"u": (4,)}, ()),
    ("softmax", "softmax", "softmax u", {"u": (4,)}, (4,)),
    ("logsoftmax", "logsoftmax", "logsoftmax u", {"u": (4,)}, (4,)),
    ("outer_vec_vec", "outer", "outer u v", {"u": (3,), "v": (2,)}, (3, 2)),
    ("outer_scalar_vec", "outer", "outer s v", {"s": (), "v": (2,)}, (2,)),
    ("outer_vec_scalar", "outer", "outer u s", {"u": (3,), "s": ()}, (3,)),
    ("outer_scalar_scalar", "outer", "outer s t", {"s": (), "t": ()}, ()),
    ("outer_same_vector", "outer", "outer u u", {"u": (3,)}, (3, 3)),
    ("sumto_matrix_to_row", "sumto", "sumto A v", {"A": (2, 3), "v": (3,)}, (3,)),
    ("sumto_matrix_to_column", "sumto", "sumto A K", {"A": (2, 3), "K": (2, 1)}, (2, 1)),
    ("sumto_vector_to_scalar", "sumto", "sumto u s", {"u": (3,), "s": ()}, ()),
    ("sumto_same_shape", "sumto", "sumto u v", {"u": (3,), "v": (3,)}, (3,)),
    ("broadcast_scalar_to_vector", "broadcast", "broadcast s v", {"s": (), "v": (3,)}, (3,)),
    ("broadcast_row_to_matrix", "broadcast", "broadcast v A", {"v": (3,), "A": (2, 3)}, (2, 3)),
    ("broadcast_column_to_matrix", "broadcast", "broadcast K A", {"K": (2, 1), "A": (2, 3)},
     (2, 3)),
    # a value that changes with neither operand (A gives the shape, the index is a step)
    ("onehot_matrix", "onehot", "onehot A 4", {"A": (2, 3)}, (2, 3)),
    ("onehot_weight_index", "onehot", "onehot u k", {"u": (3,), "k": ()}, (3,)),
    ("onehot_scalar", "onehot", "onehot s 0", {"s": ()}, ()),
]


def test_every_tensor_operator_has_a_case() -> None:
    assert {case[1] for case in TENSOR_CASES} == TENSOR_OPS


@pytest.mark.parametrize("case", TENSOR_CASES, ids=[c[0] for c in TENSOR_CASES])
def test_tensor_operator(case: tuple[str, str, str, dict[str, tuple[int, ...]],
                                     tuple[int, ...]]) -> None:
    _, _, expr, operands, out = case
    source, values = _tensor_case(expr, operands, out)
    program = parse(source)
    assert program.shapes["r"] == out  # the shape rule
    assert_gradients(source, values)


def test_tensor_operator_as_the_loss_line() -> None:
    # reductions straight into the loss: the adjoint reaching them is the constant 1
    for expr, shape in [("sum u", (4,)), ("mean A", (2, 3)), ("logsumexp u", (4,)),
                        ("matmul u v", (3,))]:
        names = sorted(set(expr.split()[1:]))
        head = "".join(_decl("weight", n, shape) for n in names)
        values = {n: _r(*shape) for n in names}
        assert_gradients(head + f"declare loss L\ndefine L = {expr}\n", values)


def test_softmax_rows_sum_to_one_so_a_plain_sum_has_zero_gradient() -> None:
    source = "declare weight u [4]\ndeclare intvar p\ndeclare loss L\n" \
             "define p = softmax u\ndefine L = sum p\n"
    got = assert_gradients(source, {"u": _r(4)})
    np.testing.assert_allclose(got["u"], 0.0, atol=1e-12)


def test_cross_entropy_gradient_is_softmax_minus_target() -> None:
    # L = -sum(y * logsoftmax(z)), z = W x: dL/dz = softmax(z) - y, dL/dW = outer(dL/dz, x)
    source = ("declare input x [3]\ndeclare exp_output y [4]\ndeclare weight W [4, 3]\n"
              "declare intvar z\ndeclare intvar lp\ndeclare intvar t\ndeclare intvar s\n"
              "declare loss L\ndefine z = matmul W x\ndefine lp = logsoftmax z\n"
              "define t = mul y lp\ndefine s = sum t\ndefine L = neg s\n")
    x, W = _r(3), _r(4, 3)
    y = np.array([0.0, 1.0, 0.0, 0.0])
    got = assert_gradients(source, {"x": x, "y": y, "W": W})
    z = W @ x
    p = np.exp(z - z.max())
    p /= p.sum()
    assert_agree(got["W"], np.outer(p - y, x), rtol=1e-12, atol=1e-14)


# broadcasting: (left shape, right shape) for every elementwise binary operator
BROADCASTS = [((3,), (3,)), ((3,), ()), ((), (3,)), ((2, 3), (3,)), ((3,), (2, 3)),
              ((2, 3), (2, 1)), ((1, 3), (2, 1)), ((2, 3), ()), ((3,), (1,)),
              ((2, 1, 3), (2, 3)), ((2, 2, 3), (1, 1)), ((1, 2, 1, 2), (2, 1, 1))]


@pytest.mark.parametrize("op", sorted(BINARY_POINTS))
@pytest.mark.parametrize(("left", "right"), BROADCASTS,
                         ids=[f"{fmt_shape(a)}x{fmt_shape(b)}" for a, b in BROADCASTS])
def test_broadcasting_binary_operator(op: str, left: tuple[int, ...],
                                      right: tuple[int, ...]) -> None:
    out = tuple(np.broadcast_shapes(left, right))
    positive = op in ("pow", "div")  # a positive base; denominators away from 0
    source, values = _tensor_case(f"{op} h b", {"h": left, "b": right}, out, positive)
    assert parse(source).shapes["r"] == out
    assert_gradients(source, values)


@pytest.mark.parametrize("op", sorted(BINARY_POINTS))
def test_broadcasting_with_a_constant(op: str) -> None:
    for expr in (f"{op} h 1.5", f"{op} 1.5 h"):
        source, values = _tensor_case(expr, {"h": (2, 3)}, (2, 3), positive=True)
        assert_gradients(source, values)


@pytest.mark.parametrize("op", sorted(UNARY_POINTS))
def test_unary_operator_on_a_matrix(op: str) -> None:
    # the operator's own points say its domain: all positive (ln, sqrt) or not
    positive = min(UNARY_POINTS[op]) > 0
    source, values = _tensor_case(f"{op} A", {"A": (2, 3)}, (2, 3), positive)
    if not positive:  # keep away from 0, where relu, abs, step and sign have their kink
        values["A"] = np.where(values["A"] < 0, -1, 1) * (0.3 + np.abs(values["A"]))
    assert_gradients(source, values)


@pytest.mark.parametrize("op", ["sum", "mean", "tanh", "exp", "transpose"])
def test_higher_rank_tensors(op: str) -> None:
    shape = (2, 3, 2) if op != "transpose" else (3, 2)
    out = () if op in ("sum", "mean") else (shape[::-1] if op == "transpose" else shape)
    source, values = _tensor_case(f"{op} A", {"A": shape}, out)
    assert_gradients(source, values)


def test_a_small_network_with_every_tensor_feature() -> None:
    # two layers, a bias broadcast over a matrix, a scalar weight, fan-out of the hidden layer
    source = """\
declare input x [3]
declare exp_output y [2]
declare weight W1 [4, 3]
declare weight b1 [4]
declare weight W2 [2, 4]
declare weight k
declare intvar z1
declare intvar a1
declare intvar h
declare intvar z2
declare intvar skip
declare intvar zz
declare intvar d
declare intvar sq
declare loss L
define z1 = matmul W1 x
define a1 = add z1 b1
define h = tanh a1
define z2 = matmul W2 h
define skip = mul k h
define zz = add z2 skip
define d = sub zz y
define sq = mul d d
define L = mean sq
"""
    with pytest.raises(Exception, match="do not broadcast"):
        parse(source)  # [2] + [4]: the checker must refuse the skip connection
    fixed = source.replace("define skip = mul k h", "define skip = mul k z2")
    values = {"x": _r(3), "y": _r(2), "W1": _r(4, 3), "b1": _r(4), "W2": _r(2, 4), "k": 0.3}
    assert_gradients(fixed, values)


# ------------------------------------------------------------------------ the batched path

BATCH_CASES = {
    "scalar_fanout": (
        "declare input x\ndeclare exp_output y\ndeclare weight w\ndeclare weight c\n"
        "declare intvar a\ndeclare intvar b\ndeclare intvar d\ndeclare loss L\n"
        "define a = mul x w\ndefine b = logistic a\ndefine d = sub b y\n"
        "define L = add d d\n",  # L linear in d: only y and x vary per example
        {"x": (), "y": ()}, {"w": (), "c": ()}),
    "weight_used_twice": (
        "declare input x\ndeclare exp_output y\ndeclare weight w\n"
        "declare intvar a\ndeclare intvar b\ndeclare intvar d\ndeclare intvar e\n"
        "declare loss L\ndefine a = mul x w\ndefine b = mul w w\ndefine d = add a b\n"
        "define e = sub d y\ndefine L = mul e e\n",
        {"x": (), "y": ()}, {"w": ()}),
    "dense_layer": (
        "declare input x [3]\ndeclare exp_output y [2]\ndeclare weight W [2, 3]\n"
        "declare weight b [2]\ndeclare intvar z\ndeclare intvar a\ndeclare intvar d\n"
        "declare intvar s\ndeclare loss L\ndefine z = matmul W x\ndefine a = add z b\n"
        "define d = sub a y\ndefine s = mul d d\ndefine L = sum s\n",
        {"x": (3,), "y": (2,)}, {"W": (2, 3), "b": (2,)}),
    "row_vector_layer": (
        "declare input x [3]\ndeclare exp_output y [2]\ndeclare weight W [3, 2]\n"
        "declare weight s\ndeclare intvar z\ndeclare intvar a\ndeclare intvar lp\n"
        "declare intvar t\ndeclare intvar u\ndeclare loss L\ndefine z = matmul x W\n"
        "define a = mul z s\ndefine lp = logsoftmax a\ndefine t = mul y lp\n"
        "define u = sum t\ndefine L = neg u\n",
        {"x": (3,), "y": (2,)}, {"W": (3, 2), "s": ()}),
    "weight_broadcast_over_examples": (
        "declare input X [2, 3]\ndeclare weight b [3]\ndeclare weight c\n"
        "declare intvar z\ndeclare intvar q\ndeclare intvar s\ndeclare loss L\n"
        "define z = add X b\ndefine q = mul z c\ndefine s = mul q q\ndefine L = mean s\n",
        {"X": (2, 3)}, {"b": (3,), "c": ()}),
    "outer_weight_gradient": (
        "declare input x [3]\ndeclare input g [2]\ndeclare weight W [2, 3]\n"
        "declare intvar z\ndeclare intvar t\ndeclare loss L\n"
        "define z = matmul W x\ndefine t = mul z g\ndefine L = sum t\n",
        {"x": (3,), "g": (2,)}, {"W": (2, 3)}),
}


@pytest.mark.parametrize("name", list(BATCH_CASES))
def test_batched_mean_gradient_matches_the_mean_of_differences(name: str) -> None:
    source, data_shapes, weight_shapes = BATCH_CASES[name]
    shape = parse(source)
    gcp = api.compile(shape)
    n = 5
    data = {k: _r(n, *s) for k, s in data_shapes.items()}
    weights: dict[str, Any] = {k: _r(*s) if s else float(_r()) for k, s in weight_shapes.items()}
    trainer = api.trainer(gcp, data, start=weights)
    loss, grads = trainer.evaluate()
    examples = [{**{k: v[i] for k, v in data.items()}, **weights} for i in range(n)]
    assert loss == pytest.approx(np.mean([loss_of(shape, ex) for ex in examples]), rel=1e-12)
    for w in weight_shapes:
        fd = np.mean([fd_gradient(shape, ex, w) for ex in examples], axis=0)
        assert_agree(grads[w], fd, rtol=1e-5, atol=1e-7, err_msg=f"{name}: {w}")
        # and the same as running the GCP on one example at a time
        one = np.mean([gcp_gradients(gcp, ex, [w])[w] for ex in examples], axis=0)
        assert_agree(grads[w], one, rtol=1e-12, atol=1e-14)


def test_batch_of_one_example() -> None:
    source, data_shapes, weight_shapes = BATCH_CASES["dense_layer"]
    shape = parse(source)
    data = {k: _r(1, *s) for k, s in data_shapes.items()}
    weights = {k: _r(*s) for k, s in weight_shapes.items()}
    _, grads = api.trainer(api.compile(shape), data, start=weights).evaluate()
    example = {**{k: v[0] for k, v in data.items()}, **weights}
    for w in weight_shapes:
        assert_agree(grads[w], fd_gradient(shape, example, w), rtol=1e-5, atol=1e-7)


def test_every_operator_is_covered() -> None:
    covered = set(UNARY_POINTS) | set(BINARY_POINTS) | {c[1] for c in TENSOR_CASES}
    assert covered == {op.name for op in ops.OPS_LIST}
    assert all(len(op.partials or op.vjp or ()) == op.arity for op in ops.OPS_LIST)


def test_point_lists_are_distinct() -> None:
    # guards the parametrisation above against copy-paste duplicates
    for points in itertools.chain(UNARY_POINTS.values(), BINARY_POINTS.values()):
        assert len(set(points)) == len(points)
