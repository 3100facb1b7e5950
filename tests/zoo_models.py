"""The model zoo: realistic TenFlang models that every engine must train to the same weights
(tests/test_fused_zoo.py; issue 23). A disagreement found later, by a user or the random
programs of test_fused_differential.py, becomes a new entry here.

Each :class:`Model` is a shape program, the kind of its expected outputs (``real``, ``unit``
numbers in (0, 1), ``binary`` labels or ``onehot`` classes) and a learning rate; or one of the
shipped examples/, trained on its own data file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from conftest import program_text

from tenflang_nb.core import api
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.program import Program

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


# the three models of the shared-value class (issue 23, fixed in c827ef4): a value the same
# for every example used in an elementwise line of a fused group was overwritten there

# x centred and scaled per example, then a learned gain g and bias b: g and b are shared
# vectors of the size of c, whose scratch array is free again when g is used
LAYER_NORM = program_text(
    "declare input x [8]", "declare exp_output y [8]", "declare weight g [8]",
    "declare weight b [8]", "declare intvar m", "declare intvar c [8]", "declare intvar c2 [8]",
    "declare intvar v", "declare intvar s", "declare intvar n [8]", "declare intvar gn [8]",
    "declare output o [8]", "declare intvar d [8]", "declare intvar d2 [8]", "declare loss L",
    "define m = mean x", "define c = sub x m", "define c2 = mul c c", "define v = mean c2",
    "define s = sqrt v", "define n = div c s", "define gn = mul n g", "define o = add gn b",
    "define d = sub o y", "define d2 = mul d d", "define L = mean d2")

# a mixture of experts' outputs with weights softmax(l): p depends on weights only
SOFTMAX_MIXTURE = program_text(
    "declare input x [4]", "declare exp_output y", "declare weight l [4]",
    "declare weight w [4]", "declare intvar p [4]", "declare intvar e [4]",
    "declare intvar t [4]", "declare intvar q [4]", "declare output o", "declare intvar d",
    "declare loss L", "define p = softmax l", "define e = mul x w", "define t = tanh e",
    "define q = mul t p", "define o = sum q", "define d = sub o y", "define L = mul d d")

# exp s of a weight vector, scaling a per-example vector after another one was freed
SHARED_EXP = program_text(
    "declare input x [6]", "declare exp_output y", "declare weight s [6]",
    "declare intvar a [6]", "declare intvar h [6]", "declare intvar k [6]",
    "declare intvar r [6]", "declare output o", "declare intvar d", "declare loss L",
    "define a = tanh x", "define h = mul a a", "define k = exp s", "define r = mul h k",
    "define o = sum r", "define d = sub o y", "define L = mul d d")

SHARED_VALUE_MODELS = {"layer norm": LAYER_NORM, "softmax mixture": SOFTMAX_MIXTURE,
                       "exp of a weight vector": SHARED_EXP}

# the end of a regression model: a squared error, averaged over an output vector or not
SQUARED = ("declare intvar d", "declare intvar d2", "declare loss L", "define d = sub o y",
           "define d2 = mul d d")
SQUARED_SCALAR = (*SQUARED[:2], "declare loss L", "define d = sub o y", "define L = mul d d")
# a classifier's end: cross-entropy of log-probabilities against one-hot classes
CROSS_ENTROPY = ("declare intvar logp", "declare intvar ylogp", "declare intvar total",
                 "declare loss L", "define logp = logsoftmax z", "define ylogp = mul y logp",
                 "define total = sum ylogp", "define L = neg total")

SOURCES: dict[str, tuple[str, str, float]] = {
    # name: (shape program, targets, learning rate)
    "seed": (SEED_EXAMPLE, "unit", 0.5),
    "layer norm": (LAYER_NORM, "real", 0.05),
    "softmax mixture": (SOFTMAX_MIXTURE, "real", 0.05),
    "exp of a weight vector": (SHARED_EXP, "real", 0.05),
    "linear regression [5]": (program_text(
        "declare input x [5]", "declare exp_output y", "declare weight w [5]",
        "declare weight b", "declare intvar a", "declare output o", "define a = matmul x w",
        "define o = add a b", *SQUARED_SCALAR), "real", 0.05),
    "logistic regression, cross-entropy": (program_text(
        "declare input x [4]", "declare exp_output y", "declare weight w [4]",
        "declare weight b", "declare intvar a", "declare intvar z", "declare output o",
        "declare intvar lo", "declare intvar q", "declare intvar lq", "declare intvar t1",
        "declare intvar ny", "declare intvar t2", "declare intvar s", "declare loss L",
        "define a = matmul x w", "define z = add a b", "define o = logistic z",
        "define lo = ln o", "define q = sub 1 o", "define lq = ln q", "define t1 = mul y lo",
        "define ny = sub 1 y", "define t2 = mul ny lq", "define s = add t1 t2",
        "define L = neg s"), "binary", 0.5),
    "mlp tanh": (program_text(
        "declare input x [3]", "declare exp_output y", "declare weight W1 [3, 8]",
        "declare weight b1 [8]", "declare weight W2 [8]", "declare weight b2",
        "declare intvar a1", "declare intvar z1", "declare intvar h", "declare intvar a2",
        "declare output o", "define a1 = matmul x W1", "define z1 = add a1 b1",
        "define h = tanh z1", "define a2 = matmul h W2", "define o = add a2 b2",
        *SQUARED_SCALAR), "real", 0.05),
    "mlp relu, two hidden layers": (program_text(
        "declare input x [4]", "declare exp_output y [2]", "declare weight W1 [4, 6]",
        "declare weight b1 [6]", "declare weight W2 [6, 5]", "declare weight b2 [5]",
        "declare weight W3 [5, 2]", "declare intvar h1", "declare intvar h2",
        "declare intvar z1", "declare intvar z2", "declare intvar a1", "declare intvar a2",
        "declare output o", "define a1 = matmul x W1", "define z1 = add a1 b1",
        "define h1 = relu z1", "define a2 = matmul h1 W2", "define z2 = add a2 b2",
        "define h2 = relu z2", "define o = matmul h2 W3", *SQUARED, "define L = mean d2"),
        "real", 0.05),
    "mlp logistic hidden": (program_text(
        "declare input x [2]", "declare exp_output y", "declare weight W1 [2, 5]",
        "declare weight b1 [5]", "declare weight W2 [5]", "declare intvar a1",
        "declare intvar z1", "declare intvar h", "declare intvar a2", "declare output o",
        "define a1 = matmul x W1", "define z1 = add a1 b1", "define h = logistic z1",
        "define a2 = matmul h W2", "define o = logistic a2", *SQUARED_SCALAR), "unit", 1.0),
    "softmax classifier": (program_text(
        "declare input x [4]", "declare exp_output y [3]", "declare weight W [4, 3]",
        "declare weight b [3]", "declare intvar a", "declare output z",
        "define a = matmul x W", "define z = add a b", *CROSS_ENTROPY), "onehot", 0.3),
    "layer norm, then a softmax classifier": (program_text(
        "declare input x [6]", "declare exp_output y [3]", "declare weight g [6]",
        "declare weight c [6]", "declare weight W [6, 3]", "declare intvar m",
        "declare intvar u", "declare intvar u2", "declare intvar v", "declare intvar ve",
        "declare intvar s", "declare intvar n", "declare intvar gn", "declare intvar h",
        "declare output z", "define m = mean x", "define u = sub x m", "define u2 = mul u u",
        "define v = mean u2", "define ve = add v 1e-5", "define s = sqrt ve",
        "define n = div u s", "define gn = mul n g", "define h = add gn c",
        "define z = matmul h W", *CROSS_ENTROPY), "onehot", 0.2),
    "gated mixture of experts": (program_text(
        "declare input x [3]", "declare exp_output y", "declare weight G [3, 4]",
        "declare weight E [3, 4]", "declare intvar gz", "declare intvar gate",
        "declare intvar ez", "declare intvar ex", "declare intvar q", "declare output o",
        "define gz = matmul x G", "define gate = softmax gz", "define ez = matmul x E",
        "define ex = tanh ez", "define q = mul gate ex", "define o = sum q",
        *SQUARED_SCALAR), "real", 0.2),
    "attention pooling": (program_text(
        "declare input X [5, 3]", "declare exp_output y", "declare weight q [3]",
        "declare weight V [3, 2]", "declare weight u [2]", "declare intvar scores",
        "declare intvar scaled", "declare intvar a", "declare intvar values",
        "declare intvar ctx", "declare output o", "define scores = matmul X q",
        "define scaled = mul scores 0.57735", "define a = softmax scaled",
        "define values = matmul X V", "define ctx = matmul a values",
        "define o = matmul ctx u", *SQUARED_SCALAR), "real", 0.1),
    "residual block": (program_text(
        "declare input x [4]", "declare exp_output y", "declare weight W [4, 4]",
        "declare weight b [4]", "declare weight v [4]", "declare intvar a",
        "declare intvar z", "declare intvar t", "declare intvar h", "declare intvar p",
        "declare output o", "define a = matmul W x", "define z = add a b",
        "define t = tanh z", "define h = add x t", "define p = mul h v", "define o = sum p",
        *SQUARED_SCALAR), "real", 0.05),
    "l2-regularised logistic": (program_text(
        "declare input x [5]", "declare exp_output y", "declare weight w [5]",
        "declare intvar z", "declare output o", "declare intvar e", "declare intvar e2",
        "declare intvar w2", "declare intvar r", "declare intvar rr", "declare loss L",
        "define z = matmul x w", "define o = logistic z", "define e = sub o y",
        "define e2 = mul e e", "define w2 = mul w w", "define r = sum w2",
        "define rr = mul r 0.01", "define L = add e2 rr"), "unit", 1.0),
    "vector outputs, linear": (program_text(
        "declare input x [3]", "declare exp_output y [4]", "declare weight W [3, 4]",
        "declare weight b [4]", "declare intvar a", "declare output o",
        "define a = matmul x W", "define o = add a b", *SQUARED, "define L = sum d2"),
        "real", 0.05),
    "poisson regression": (program_text(
        "declare input x [3]", "declare exp_output y", "declare weight w [3]",
        "declare weight b", "declare intvar a", "declare intvar z", "declare output rate",
        "declare intvar yz", "declare loss L", "define a = matmul x w",
        "define z = add a b", "define rate = exp z", "define yz = mul y z",
        "define L = sub rate yz"), "count", 0.05),
    "absolute error": (program_text(
        "declare input x [2]", "declare exp_output y", "declare weight w [2]",
        "declare intvar a", "declare output o", "declare intvar d", "declare loss L",
        "define a = matmul x w", "define o = tanh a", "define d = sub o y",
        "define L = abs d"), "real", 0.05),
    "softplus units": (program_text(
        "declare input x [3]", "declare exp_output y", "declare weight W [3, 4]",
        "declare weight v [4]", "declare intvar a", "declare intvar e", "declare intvar e1",
        "declare intvar h", "declare output o", "define a = matmul x W", "define e = exp a",
        "define e1 = add e 1", "define h = ln e1", "define o = matmul h v",
        *SQUARED_SCALAR), "real", 0.02),
    "l2-normalised inputs": (program_text(
        "declare input x [4]", "declare exp_output y", "declare weight w [4]",
        "declare intvar x2", "declare intvar s", "declare intvar r", "declare intvar u",
        "declare output o", "define x2 = mul x x", "define s = sum x2",
        "define r = sqrt s", "define u = div x r", "define o = matmul u w",
        *SQUARED_SCALAR), "real", 0.2),
    "polynomial features": (program_text(
        "declare input x", "declare exp_output y", "declare weight a", "declare weight b",
        "declare weight c", "declare intvar x2", "declare intvar x3", "declare intvar t1",
        "declare intvar t2", "declare intvar t3", "declare intvar s", "declare output o",
        "define x2 = pow x 2", "define x3 = pow x 3", "define t1 = mul a x",
        "define t2 = mul b x2", "define t3 = mul c x3", "define s = add t1 t2",
        "define o = add s t3", *SQUARED_SCALAR), "real", 0.002),
    "logsumexp energy": (program_text(
        "declare input x [3]", "declare exp_output y [4]", "declare weight W [3, 4]",
        "declare intvar z", "declare intvar lse", "declare intvar yz", "declare intvar s",
        "declare loss L", "define z = matmul x W", "define lse = logsumexp z",
        "define yz = mul y z", "define s = sum yz", "define L = sub lse s"), "onehot", 0.3),
    "softmax temperature (shared scalar)": (program_text(
        "declare input x [5]", "declare exp_output y [5]", "declare weight t",
        "declare weight w [5]", "declare intvar et", "declare intvar a", "declare intvar z",
        "declare intvar p", "declare intvar d", "declare intvar d2", "declare loss L",
        "define et = exp t", "define a = mul x w", "define z = mul a et",
        "define p = softmax z", "define d = sub p y", "define d2 = mul d d",
        "define L = sum d2"), "onehot", 0.5),
}
# the shipped examples, on their own data files
FILES = {"example: linear": "linear/training_data.csv",
         "example: logistic": "logistic/training_data.txt",
         "example: small_net": "small_net/training_data.txt",
         "example: xor": "xor/training_data.txt",
         "example: digits": "digits/digits.npz"}
EXAMPLE_LR = {"example: linear": 0.01, "example: logistic": 0.5, "example: small_net": 1.0,
              "example: xor": 1.0, "example: digits": 0.5}
NAMES = sorted([*SOURCES, *FILES])


@dataclass(frozen=True)
class Model:
    """A zoo entry ready to train: its shape program, data and first weights."""

    name: str
    shape: Program
    data: Any
    start: dict[str, Any]
    lr: float


def model(name: str, n: int = 2_000, seed: int = 0) -> Model:
    """The zoo entry ``name`` with ``n`` examples (its data file for a shipped example)."""
    rng = np.random.default_rng(seed)
    if name in FILES:
        folder, file = FILES[name].split("/")
        shape = api.parse_file(EXAMPLES / folder / "shape.tf")
        data: Any = EXAMPLES / folder / file
        if file.endswith(".npz"):
            with np.load(data) as d:
                data = {k: d[k][:n] for k in d.files}
        lr = EXAMPLE_LR[name]
    else:
        source, targets, lr = SOURCES[name]
        shape = api.parse(source, f"{name}.tf")
        data = {x: rng.normal(0, 1.5, (n, *shape.shapes[x])) + 0.3
                for x in shape.names("input")}
        for y in shape.names("exp_output"):
            data[y] = _targets(rng, targets, (n, *shape.shapes[y]))
    start = {w: rng.normal(0, 0.5, shape.shapes[w]) for w in shape.names("weight")}
    return Model(name, shape, data, start, lr)


def _targets(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    if kind == "unit":
        return rng.uniform(0.05, 0.95, shape)
    if kind == "binary":
        return rng.integers(0, 2, shape).astype(float)
    if kind == "count":
        return rng.poisson(2.0, shape).astype(float)
    if kind == "onehot":
        return np.eye(shape[-1])[rng.integers(0, shape[-1], shape[:-1])]
    return rng.normal(0, 1, shape)
