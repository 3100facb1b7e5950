"""Random valid programs (hypothesis): GCP gradients must match central differences, and so
must the forward-mode program's (which must also equal the GCP's); the Hessian-vector
program's H v must match central differences of the GCP's gradient along a random direction.

The generator builds a straight-line program line by line while computing every value with its
own numpy reference (not TenFlang's kernels), choosing operands so that each function is smooth
around the drawn point: when an operator would leave its safe domain (ln of a small number, a
denominator near 0, relu near its kink, an overflowing exp) the line falls back to ``tanh``.
Operands are drawn from everything defined so far, so fan-out, the same operand twice and loss
operands used elsewhere all occur naturally.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from conftest import hypothesis_settings
from helpers_fd import (
    assert_agree,
    assert_forward_mode,
    assert_hvp,
    direction,
    fd_gradient,
    gcp_gradients,
    loss_of,
)
from hypothesis import given
from hypothesis import strategies as st

from tenflang_nb.core import api
from tenflang_nb.core.formatting import fmt_shape
from tenflang_nb.core.program import ancestors, parse

Shape = tuple[int, ...]
Array = np.ndarray

SAFE = 1e3  # largest magnitude a value may reach
MARGIN = 0.2  # distance kept from kinks, poles and the edge of a domain


def _logistic(a: Array) -> Array:
    return 1.0 / (1.0 + np.exp(-a))


def _sumto(a: Array, shape: Shape) -> Array:
    lead = a.ndim - len(shape)
    r = a.sum(axis=tuple(range(lead))) if lead else a
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and r.shape[i] != 1)
    return r.sum(axis=axes, keepdims=True) if axes else r


def _logsumexp(a: Array) -> Array:
    return np.log(np.exp(a).sum())


# reference forward functions: op -> (function, domain check on the operand values)
UNARY: dict[str, tuple[Callable[[Array], Array], Callable[[Array], bool]]] = {
    "logistic": (_logistic, lambda a: True),
    "exp": (np.exp, lambda a: bool(np.all(a <= 4))),
    "ln": (np.log, lambda a: bool(np.all(a >= MARGIN))),
    "neg": (np.negative, lambda a: True),
    "tanh": (np.tanh, lambda a: True),
    "relu": (lambda a: np.maximum(a, 0.0), lambda a: bool(np.all(np.abs(a) >= MARGIN))),
    "sqrt": (np.sqrt, lambda a: bool(np.all(a >= MARGIN))),
    "abs": (np.abs, lambda a: bool(np.all(np.abs(a) >= MARGIN))),
    "step": (lambda a: (a > 0).astype(float), lambda a: bool(np.all(np.abs(a) >= MARGIN))),
    "sign": (np.sign, lambda a: bool(np.all(np.abs(a) >= MARGIN))),
}
BINARY: dict[str, tuple[Callable[[Array, Array], Array], Callable[[Array, Array], bool]]] = {
    "add": (np.add, lambda a, b: True),
    "sub": (np.subtract, lambda a, b: True),
    "mul": (np.multiply, lambda a, b: True),
    "div": (np.divide, lambda a, b: bool(np.all(np.abs(b) >= MARGIN))),
    "pow": (np.power, lambda a, b: bool(np.all(a >= MARGIN) and np.all(np.abs(b) <= 3))),
}
REDUCE: dict[str, Callable[[Array], Array]] = {
    "sum": np.sum, "mean": np.mean, "logsumexp": _logsumexp,
}
VECTOR: dict[str, Callable[[Array], Array]] = {
    "softmax": lambda a: np.exp(a) / np.exp(a).sum(),
    "logsoftmax": lambda a: a - _logsumexp(a),
}
CONSTANTS = (2.0, -1.0, 0.5, 3.0, -2.5, 1.5)


@dataclass
class Case:
    """A generated program, its values (one dict per example) and its reference loss."""

    lines: list[str]
    values: list[dict[str, Any]]
    loss: list[float]
    weights: list[str]
    inputs: list[str]
    shapes: dict[str, Shape] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)


class _Builder:
    def __init__(self, draw: st.DrawFn, examples: int, tensors: bool) -> None:
        self.draw = draw
        self.examples = examples
        self.tensors = tensors
        self.decls: list[str] = []
        self.body: list[str] = []
        self.env: list[dict[str, Array]] = [{} for _ in range(examples)]
        self.shapes: dict[str, Shape] = {}
        self.count = 0

    def shape(self) -> Shape:
        if not self.tensors:
            return ()
        return self.draw(st.sampled_from([(), (2,), (3,), (2, 3), (1, 3), (2, 1), (2, 2, 3)]))

    def value(self, shape: Shape) -> Array:
        element = st.one_of(st.floats(0.3, 1.5), st.floats(-1.5, -0.3))
        flat = self.draw(st.lists(element, min_size=int(np.prod(shape)),
                                  max_size=int(np.prod(shape))))
        return np.array(flat, dtype=float).reshape(shape)

    def given(self, kind: str, name: str, per_example: bool) -> None:
        shape = self.shape()
        self.shapes[name] = shape
        self.decls.append(f"declare {kind} {name}" + (f" {fmt_shape(shape)}" if shape else ""))
        shared = self.value(shape)
        for env in self.env:
            env[name] = self.value(shape) if per_example else shared

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def val(self, ref: str, k: int) -> Array:
        return self.env[k][ref] if ref in self.env[k] else np.array(float(ref))

    def vals(self, ref: str) -> list[Array]:
        return [self.val(ref, k) for k in range(self.examples)]

    def shape_of(self, ref: str) -> Shape:
        return self.shapes.get(ref, ())

    def pick(self, names: list[str], ok: Callable[[str], bool], consts: bool = False
             ) -> str | None:
        """An operand satisfying ``ok``: a variable, or now and then a constant."""
        constants = [repr(c) for c in CONSTANTS if consts and ok(repr(c))]
        fitting = [n for n in names if ok(n)]
        if constants and (not fitting or self.draw(st.integers(0, 4)) == 0):
            return self.draw(st.sampled_from(constants))
        return self.draw(st.sampled_from(fitting)) if fitting else None

    def define(self, expr: str, results: list[Array]) -> str:
        name = self.fresh()
        shape = results[0].shape
        self.shapes[name] = shape
        kind = self.draw(st.sampled_from(["intvar", "intvar", "output"]))
        written = f" {fmt_shape(shape)}" if shape and self.draw(st.booleans()) else ""
        declaration = f"declare {kind} {name}{written}"
        if self.draw(st.booleans()):
            self.decls.append(declaration)  # declared at the top
        else:
            self.body.append(declaration)  # declared just before its definition
        self.body.append(f"define {name} = {expr}")
        for env, r in zip(self.env, results, strict=True):
            env[name] = r
        return name

    def ok(self, results: list[Array]) -> bool:
        return all(bool(np.all(np.isfinite(r)) and np.all(np.abs(r) <= SAFE)) for r in results)

    def line(self, names: list[str]) -> str:
        draw = self.draw
        kinds = ["unary", "unary", "binary", "binary", "binary", "copy"]
        if self.tensors:
            kinds += ["reduce", "vector", "matmul"]
        kind = draw(st.sampled_from(kinds))
        result = None
        with np.errstate(all="ignore"):
            if kind == "unary":
                result = self._unary(names)
            elif kind == "binary":
                result = self._binary(names)
            elif kind == "reduce":
                op = draw(st.sampled_from(sorted(REDUCE)))
                a = self.pick(names, lambda n: op != "logsumexp" or len(self.shape_of(n)) == 1)
                if a is not None:
                    result = (f"{op} {a}", [np.array(REDUCE[op](v)) for v in self.vals(a)])
            elif kind == "vector":
                op = draw(st.sampled_from(sorted(VECTOR)))
                a = self.pick(names, lambda n: len(self.shape_of(n)) == 1)
                if a is not None:
                    result = (f"{op} {a}", [VECTOR[op](v) for v in self.vals(a)])
            elif kind == "matmul":
                result = self._matmul(names)
        if result is not None and self.ok(result[1]):
            return self.define(*result)
        a = draw(st.sampled_from(names))
        if kind == "copy":
            return self.define(a, self.vals(a))
        # the fallback is defined everywhere and bounded
        return self.define(f"tanh {a}", [np.tanh(v) for v in self.vals(a)])

    def _unary(self, names: list[str]) -> tuple[str, list[Array]] | None:
        op = self.draw(st.sampled_from(sorted(UNARY)))
        fn, domain = UNARY[op]
        a = self.pick(names, lambda n: all(domain(v) for v in self.vals(n)))
        return None if a is None else (f"{op} {a}", [fn(v) for v in self.vals(a)])

    def _binary(self, names: list[str]) -> tuple[str, list[Array]] | None:
        op = self.draw(st.sampled_from(sorted(BINARY)))
        fn, domain = BINARY[op]
        const_left = self.draw(st.integers(0, 5)) == 0
        # pow needs a positive base whatever stands on its right
        a = self.pick(names, lambda n: op != "pow" or all(
            bool(np.all(v >= MARGIN)) for v in self.vals(n)), consts=const_left)
        if a is None:
            return None

        def fits(n: str) -> bool:
            return (_broadcasts(self.shape_of(a), self.shape_of(n))
                    and all(domain(x, y) for x, y in zip(self.vals(a), self.vals(n),
                                                         strict=True)))

        b = self.pick(names, fits, consts=not const_left)
        if b is None:
            return None
        return f"{op} {a} {b}", [fn(x, y) for x, y in zip(self.vals(a), self.vals(b),
                                                          strict=True)]

    def _matmul(self, names: list[str]) -> tuple[str, list[Array]] | None:
        def ok_a(n: str) -> bool:
            return 1 <= len(self.shape_of(n)) <= 2

        a = self.pick(names, ok_a)
        if a is None:
            return None
        sa = self.shape_of(a)
        b = self.pick(names, lambda n: ok_a(n) and self.shape_of(n)[0] == sa[-1])
        if b is None:
            return None
        return f"matmul {a} {b}", [np.matmul(x, y) for x, y in zip(self.vals(a), self.vals(b),
                                                                   strict=True)]


def _broadcasts(a: Shape, b: Shape) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


@st.composite
def programs(draw: st.DrawFn, tensors: bool = False, examples: int = 1) -> Case:
    b = _Builder(draw, examples, tensors)
    weights = [f"w{i}" for i in range(draw(st.integers(1, 3)))]
    inputs = [f"x{i}" for i in range(draw(st.integers(0, 2)))]
    for w in weights:
        b.given("weight", w, per_example=False)
    for x in inputs:
        b.given(draw(st.sampled_from(["input", "exp_output"])), x, per_example=True)
    names = weights + inputs
    for _ in range(draw(st.integers(1, 8))):
        names.append(b.line(names))
    # the loss: a scalar made from the last value and another one (maybe the same, maybe
    # used elsewhere too), so the loss's direct operands have other consumers
    last = names[-1]
    if b.shape_of(last):
        last = _reduce(b, last)
    scalars = [n for n in names if not b.shape_of(n)] + [last]
    other = draw(st.sampled_from(scalars))
    op = draw(st.sampled_from(["add", "mul", "sub"]))
    fn = BINARY[op][0]
    b.decls.append("declare loss L")
    b.body.append(f"define L = {op} {last} {other}")
    losses = [float(fn(b.val(last, k), b.val(other, k))) for k in range(examples)]
    order = draw(st.permutations(b.decls))  # declarations in any order before their use
    return Case(list(order) + b.body, [dict(env) for env in b.env], losses, weights, inputs,
                dict(b.shapes))


def _reduce(b: _Builder, name: str) -> str:
    op = b.draw(st.sampled_from(["sum", "mean"]))
    return b.define(f"{op} {name}", [np.array(REDUCE[op](b.val(name, k)))
                                     for k in range(b.examples)])


def _given_values(case: Case, k: int) -> dict[str, Any]:
    return {n: case.values[k][n] for n in case.weights + case.inputs}


def _check_gradients(case: Case, full: bool) -> None:
    shape = parse(case.source, "random.tf")
    values = _given_values(case, 0)
    loss = loss_of(shape, values)
    # the interpreter agrees with the generator's own reference arithmetic
    assert loss == pytest.approx(case.loss[0], rel=1e-9, abs=1e-12), case.source
    gcp = api.compile(shape, full=full)
    assert gcp.text == api.compile(parse(case.source, "random.tf"), full=full).text
    again = parse(gcp.text, "gcp.tf")
    assert again.text() == gcp.text
    reach = ancestors(shape, "L")  # --full has an adjoint for every ancestor of the loss
    wrt = case.weights + ([x for x in case.inputs if x in reach] if full else [])
    got = gcp_gradients(gcp, values, wrt)
    tol = 1e-7 * max(1.0, abs(loss))
    for name in wrt:
        fd = fd_gradient(shape, values, name)
        assert_agree(got[name], fd, rtol=1e-5, atol=tol,
                     err_msg=f"d/L/d/{name}\n{case.source}\n{gcp.text}")
        if name in case.weights:
            assert again.kind(f"d/L/d/{name}") == "output"
    if not full:
        assert_forward_mode(shape, gcp, values, case.weights, rtol=1e-5, atol=tol)
        assert_hvp(shape, values)


@hypothesis_settings(80)
@given(programs())
def test_random_scalar_programs(case: Case) -> None:
    _check_gradients(case, full=False)


@hypothesis_settings(30)
@given(programs())
def test_random_scalar_programs_full(case: Case) -> None:
    # --full: the same weight gradients, and correct adjoints for the inputs as well
    _check_gradients(case, full=True)


@hypothesis_settings(60)
@given(programs(tensors=True))
def test_random_tensor_programs(case: Case) -> None:
    _check_gradients(case, full=False)


@hypothesis_settings(30)
@given(programs(tensors=True, examples=3))
def test_random_programs_batched(case: Case) -> None:
    # gradient descent's mean gradient over 3 examples = the mean of per-example differences
    shape = parse(case.source, "random.tf")
    gcp = api.compile(shape)
    weights = {w: case.values[0][w] for w in case.weights}
    data = {x: np.stack([case.values[k][x] for k in range(3)]) for x in case.inputs}
    data_n = 3 if data else 1  # with no inputs, one example stands for the batch
    trainer = api.trainer(gcp, data if data else [{}], start=weights)
    loss, grads = trainer.evaluate()
    examples = [_given_values(case, k) for k in range(data_n)]
    assert loss == pytest.approx(np.mean(case.loss[:data_n]), rel=1e-9, abs=1e-12)
    tol = 1e-7 * max(1.0, max(abs(v) for v in case.loss))
    for w in case.weights:
        fd = np.mean([fd_gradient(shape, ex, w) for ex in examples], axis=0)
        assert_agree(grads[w], fd, rtol=1e-5, atol=tol,
                     err_msg=f"{w}\n{case.source}")
    # H v of the mean loss, through the plan as training runs it, against central differences
    # of the GCP's mean gradient (the trainer's) along v
    v = direction(shape)
    product = api.curvature(shape, data if data else [{}], weights).hvp(v)
    h = 1e-5 / max(float(np.max(np.abs(v[w]), initial=0.0)) for w in case.weights)
    moved = [trainer.reset({w: weights[w] + s * h * v[w] for w in case.weights})
             or trainer.evaluate()[1] for s in (1, -1)]
    scale = max([1.0] + [float(np.max(np.abs(g))) for g in (*grads.values(), *product.values())])
    for w in case.weights:
        fd = (moved[0][w] - moved[1][w]) / (2 * h)
        assert_agree(product[w], fd, rtol=1e-4, atol=1e-6 * scale,
                     err_msg=f"H v, {w}\n{case.source}", names=("H v", "the differences"))
