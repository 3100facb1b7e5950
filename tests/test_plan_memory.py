"""Batched execution: weight gradients are means computed without per-example weight tensors."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_fd import assert_agree

from tenflang_nb.core.api import compile, parse, trainer
from tenflang_nb.core.plan import Plan

NET = """\
declare input x [16]
declare exp_output y [5]
declare weight W1 [16, 8]
declare weight b1 [8]
declare weight W2 [8, 5]
declare intvar a1
declare intvar h1
declare intvar t1
declare intvar z
declare output logp
declare intvar nll
declare intvar s
declare loss L
define a1 = matmul x W1
define h1 = add a1 b1
define t1 = tanh h1
define z = matmul t1 W2
define logp = logsoftmax z
define nll = mul y logp
define s = sum nll
define L = neg s
"""


def _data(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.normal(size=(n, 16)), "y": np.eye(5)[rng.integers(0, 5, n)]}


def test_no_buffer_holds_one_weight_matrix_per_example() -> None:
    n = 500
    t = trainer(compile(parse(NET)), _data(n))
    biggest_weight = 16 * 8
    for step in t._run.steps:
        assert step.out.size < n * biggest_weight, str(step.define)


def test_fused_mean_gradient_equals_mean_of_per_example_gradients() -> None:
    n = 40
    data = _data(n, seed=3)
    gcp = compile(parse(NET))
    t = trainer(gcp, data, init="normal", seed=5)
    _, fused = t.evaluate()
    # the same gradient, one example at a time, through the unfused path
    plan = Plan(gcp.program())
    total = {w: np.zeros_like(np.asarray(v)) for w, v in t.weights.items()}
    for i in range(n):
        run = plan.bind({"x": data["x"][i], "y": data["y"][i], **t.weights}, n=1)
        run.run()
        for w in total:
            value = run.value(f"d/L/d/{w}")
            assert value is not None
            total[w] += value[0]
    for w in total:
        assert_agree(fused[w], total[w] / n, rtol=1e-10, atol=1e-12,
                     names=("the fused mean", "the mean of single examples"))


@pytest.mark.parametrize("fanout", [False, True])
def test_fused_mean_through_a_fan_out_sum(fanout: bool) -> None:
    # W used by two matmuls: its gradient is an add of two outer products, both fused
    extra = "define u = matmul x W\n" if fanout else "define u = mul x 1\n"
    src = ("declare input x [3]\ndeclare exp_output y [2]\ndeclare weight W [3, 2]\n"
           "declare intvar h\ndeclare intvar u\ndeclare intvar v\ndeclare intvar d\n"
           "declare intvar q\ndeclare loss L\n"
           "define h = matmul x W\n" + extra +
           ("define v = add h u\n" if fanout else "define v = add h 0\n") +
           "define d = sub v y\ndefine q = mul d d\ndefine L = sum q\n")
    rng = np.random.default_rng(1)
    n = 30
    data = {"x": rng.normal(size=(n, 3)), "y": rng.normal(size=(n, 2))}
    t = trainer(compile(parse(src)), data, init="normal", seed=2)
    _, grads = t.evaluate()
    w = np.asarray(t.weights["W"])
    k = 2.0 if fanout else 1.0
    residual = k * data["x"] @ w - data["y"]
    expected = 2 * k * data["x"].T @ residual / n
    assert_agree(grads["W"], expected, rtol=1e-10, atol=0.0)
