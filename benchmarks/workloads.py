"""The two workloads of issue 19 and every contender that trains them, for study_engines.py and
bench_engines.py.

W1: the seed's logistic model, N = 100,000 pairs, 1,000 full-batch gradient evaluations, lr 0.1,
from w = 0. W2: the digits network 64-32-10 (examples/digits), 500 full-batch evaluations,
lr 0.5, from tenflang's ``--init auto --seed 0`` weights. Every contender does the same
gradient evaluations and updates, reads the loss at every step (as the trainer does), and
returns its final weights; :func:`check` holds them to tenflang's reference engine.

A contender is made by a ``make_*`` function (setup: data converted, kernels compiled, not
timed) and is a callable ``train() -> weights``. Optional libraries that are missing give no
contender (``None``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tenflang_nb.core import api
from tenflang_nb.core.examples import SEED_EXAMPLE

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "digits"
Weights = dict[str, np.ndarray]
Train = Callable[[], Weights]


class Workload:
    def __init__(self, name: str, steps: int, lr: float) -> None:
        self.name, self.steps, self.lr = name, steps, lr


def w1(n: int = 100_000, steps: int = 1000) -> Workload:
    rng = np.random.default_rng(0)
    x = rng.uniform(-3.0, 3.0, n)
    w = Workload(f"seed logistic, N = {n:,}, {steps:,} steps", steps, 0.1)
    w.data = {"x": x, "y": 1.0 / (1.0 + np.exp(-1.7 * x)) + rng.normal(0.0, 0.02, n)}
    w.gcp = api.compile(api.parse(SEED_EXAMPLE))
    w.options = {"init": "zeros"}
    w.start = {"w": np.zeros(())}
    return w


def w2(steps: int = 500) -> Workload:
    with np.load(EXAMPLE / "digits.npz") as d:
        data = {"x": d["x"], "y": d["y"]}
    w = Workload(f"digits MLP 64-32-10, {steps} full-batch steps", steps, 0.5)
    w.data = data
    w.gcp = api.parse_file(EXAMPLE / "gcp.tf")
    w.options = {"init": "auto", "seed": 0}
    t = api.trainer(w.gcp, data, tol=0.0, max_iter=0, **w.options)
    w.start = {k: np.array(v, dtype=float) for k, v in t.initial.items()}
    return w


# ---------------------------------------------------------------------------- tenflang


def make_tenflang(work: Workload, engine: str) -> Train:
    trainer = api.trainer(work.gcp, work.data, lr=work.lr, tol=0.0, max_iter=work.steps - 1,
                          engine=engine, **work.options)

    def train() -> Weights:
        trainer.reset()
        result = trainer.run()
        assert len(result.history) == work.steps
        return {k: np.asarray(v, dtype=float) for k, v in result.weights.items()}

    train.trainer = trainer  # type: ignore[attr-defined]
    return train


# ---------------------------------------------------------------------------- numpy by hand


def make_numpy(work: Workload, dtype: Any = np.float64, block: int | None = None) -> Train:
    """Hand-written forward and backward passes (W2 uses the ``softmax - y`` shortcut that
    a general vector-Jacobian product cannot); ``block``: W1 over blocks of that many
    examples, into preallocated buffers (generated numpy over cache-sized blocks)."""
    data = {k: v.astype(dtype) for k, v in work.data.items()}
    if "W1" not in work.start:
        return _numpy_w1(work, data, dtype, block)
    return _numpy_w2(work, data, dtype)


def _numpy_w1(work: Workload, data: dict[str, np.ndarray], dtype: Any, block: int | None
              ) -> Train:
    x, y = data["x"], data["y"]
    n = len(x)
    size = block or n
    o, d, t = (np.empty(size, dtype=dtype) for _ in range(3))
    lr = dtype(work.lr)

    def train() -> Weights:
        w = dtype(0.0)
        for i in range(work.steps):
            loss = grad = 0.0
            for start in range(0, n, size):
                xb, yb = x[start:start + size], y[start:start + size]
                m = len(xb)
                ob, db, tb = o[:m], d[:m], t[:m]
                np.multiply(xb, -w, out=ob)
                np.exp(ob, out=ob)
                ob += 1.0
                np.reciprocal(ob, out=ob)
                np.subtract(ob, yb, out=db)
                loss += float(np.dot(db, db))
                np.subtract(1.0, ob, out=tb)
                tb *= ob
                tb *= db
                grad += 2.0 * float(np.dot(tb, xb))
            _loss = loss / n  # read every step, as the trainer does
            if i < work.steps - 1:
                w = dtype(w - lr * (grad / n))
        return {"w": np.array(float(w))}

    return train


def _numpy_w2(work: Workload, data: dict[str, np.ndarray], dtype: Any) -> Train:
    x, y = data["x"], data["y"]
    n = len(x)
    start = {k: v.astype(dtype) for k, v in work.start.items()}

    def train() -> Weights:
        w = {k: v.copy() for k, v in start.items()}
        for i in range(work.steps):
            h = np.tanh(x @ w["W1"] + w["b1"])
            logits = h @ w["W2"] + w["b2"]
            shifted = logits - logits.max(axis=1, keepdims=True)
            e = np.exp(shifted)
            total = e.sum(axis=1, keepdims=True)
            _loss = -float(np.sum(y * (shifted - np.log(total)))) / n
            g = (e / total - y) / n
            gh = (g @ w["W2"].T) * (1.0 - h * h)
            grads = {"W2": h.T @ g, "b2": g.sum(axis=0), "W1": x.T @ gh, "b1": gh.sum(axis=0)}
            if i < work.steps - 1:
                for k in w:
                    w[k] -= dtype(work.lr) * grads[k]
        return {k: v.astype(float) for k, v in w.items()}

    return train


# ---------------------------------------------------------------------------- numexpr


def make_numexpr(work: Workload) -> Train | None:
    try:
        import numexpr as ne
    except ImportError:
        return None
    ne.set_num_threads(1)
    x, y = work.data["x"], work.data["y"]
    n = len(x)
    if "W1" not in work.start:
        o = np.empty(n)

        def train() -> Weights:
            w = 0.0
            for i in range(work.steps):
                names = {"x": x, "y": y, "w": w, "o": o}
                ne.evaluate("1 / (1 + exp(-(x * w)))", local_dict=names, out=o)
                _loss = float(ne.evaluate("sum((o - y) ** 2)", local_dict=names)) / n
                grad = float(ne.evaluate("sum(2 * (o - y) * o * (1 - o) * x)",
                                         local_dict=names)) / n
                if i < work.steps - 1:
                    w -= work.lr * grad
            return {"w": np.array(w)}

        return train

    def train2() -> Weights:
        w = {k: v.copy() for k, v in work.start.items()}
        for i in range(work.steps):
            a = x @ w["W1"]
            b1 = w["b1"]
            h = ne.evaluate("tanh(a + b1)", local_dict={"a": a, "b1": b1})
            logits = h @ w["W2"] + w["b2"]
            top = logits.max(axis=1, keepdims=True)
            e = ne.evaluate("exp(logits - top)", local_dict={"logits": logits, "top": top})
            total = e.sum(axis=1, keepdims=True)
            _loss = -float(np.sum(y * (logits - top - np.log(total)))) / n
            g = ne.evaluate("(e / total - y) / n",
                            local_dict={"e": e, "total": total, "y": y, "n": float(n)})
            back = g @ w["W2"].T
            gh = ne.evaluate("back * (1 - h * h)", local_dict={"back": back, "h": h})
            grads = {"W2": h.T @ g, "b2": g.sum(axis=0), "W1": x.T @ gh, "b1": gh.sum(axis=0)}
            if i < work.steps - 1:
                for k in w:
                    w[k] -= work.lr * grads[k]
        return w

    return train2


# ---------------------------------------------------------------------------- numba by hand


def make_numba(work: Workload, fastmath: bool) -> Train | None:
    """One @njit loop per program, written out (what a generator would emit): the whole W1
    step in one pass with libm's exp; for W2, the elementwise parts (libm tanh, exp) with
    numpy's matrix products."""
    try:
        from numba import njit
    except ImportError:
        return None
    x, y = work.data["x"], work.data["y"]
    n = len(x)
    if "W1" not in work.start:
        @njit(fastmath=fastmath, error_model="numpy")
        def step(x: np.ndarray, y: np.ndarray, w: float) -> tuple[float, float]:
            loss = grad = 0.0
            for i in range(x.shape[0]):
                o = 1.0 / (1.0 + math.exp(-(x[i] * w)))
                d = o - y[i]
                loss += d * d
                grad += 2.0 * d * o * (1.0 - o) * x[i]
            return loss / x.shape[0], grad / x.shape[0]

        compiled = time.perf_counter()
        step(x[:10], y[:10], 0.0)
        compiled = time.perf_counter() - compiled

        def train() -> Weights:
            w = 0.0
            for i in range(work.steps):
                _loss, grad = step(x, y, w)
                if i < work.steps - 1:
                    w -= work.lr * grad
            return {"w": np.array(w)}

        train.compile_seconds = compiled  # type: ignore[attr-defined]
        return train

    @njit(fastmath=fastmath, error_model="numpy")
    def hidden(a: np.ndarray, b: np.ndarray, h: np.ndarray) -> None:
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                h[i, j] = math.tanh(a[i, j] + b[j])

    @njit(fastmath=fastmath, error_model="numpy")
    def output(logits: np.ndarray, y: np.ndarray, g: np.ndarray) -> float:
        loss = 0.0
        for i in range(logits.shape[0]):
            top = logits[i].max()
            total = 0.0
            for j in range(logits.shape[1]):
                g[i, j] = math.exp(logits[i, j] - top)
                total += g[i, j]
            shift = top + math.log(total)
            for j in range(logits.shape[1]):
                loss -= y[i, j] * (logits[i, j] - shift)
                g[i, j] = (g[i, j] / total - y[i, j]) / logits.shape[0]
        return loss / logits.shape[0]

    @njit(fastmath=fastmath, error_model="numpy")
    def back(b: np.ndarray, h: np.ndarray) -> None:
        for i in range(b.shape[0]):
            for j in range(b.shape[1]):
                b[i, j] *= 1.0 - h[i, j] * h[i, j]

    h = np.empty((n, 32))
    g = np.empty((n, 10))
    compiled = time.perf_counter()
    hidden(x[:2] @ work.start["W1"], work.start["b1"], h[:2])
    output(h[:2] @ work.start["W2"], y[:2], g[:2])
    back(g[:2] @ work.start["W2"].T, h[:2])
    compiled = time.perf_counter() - compiled

    def train2() -> Weights:
        w = {k: v.copy() for k, v in work.start.items()}
        for i in range(work.steps):
            hidden(x @ w["W1"], w["b1"], h)
            _loss = output(h @ w["W2"] + w["b2"], y, g)
            gh = g @ w["W2"].T
            back(gh, h)
            grads = {"W2": h.T @ g, "b2": g.sum(axis=0), "W1": x.T @ gh, "b1": gh.sum(axis=0)}
            if i < work.steps - 1:
                for k in w:
                    w[k] -= work.lr * grads[k]
        return w

    train2.compile_seconds = compiled  # type: ignore[attr-defined]
    return train2


# ---------------------------------------------------------------------------- PyTorch, JAX


def make_torch(work: Workload, torch: Any, dtype: Any) -> Train:
    data = {k: torch.from_numpy(v).to(dtype) for k, v in work.data.items()}
    x, y = data["x"], data["y"]

    def train() -> Weights:
        w = {k: torch.from_numpy(v).to(dtype).clone().requires_grad_()
             for k, v in work.start.items()}
        for i in range(work.steps):
            if "W1" in w:
                h = torch.tanh(x @ w["W1"] + w["b1"])
                logits = h @ w["W2"] + w["b2"]
                loss = -(y * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()
            else:
                loss = ((torch.sigmoid(x * w["w"]) - y) ** 2).mean()
            loss.backward()
            _loss = float(loss.detach())
            with torch.no_grad():
                for p in w.values():
                    if i < work.steps - 1:
                        p -= work.lr * p.grad
                    p.grad = None
        return {k: v.detach().double().numpy() for k, v in w.items()}

    return train


def make_jax(work: Workload, jax: Any, dtype: str) -> Train:
    """jax.jit of one whole step (value, gradient and update), the weights kept on the
    device; ``train.compile_seconds`` is the first call's compile."""
    jnp = jax.numpy
    data = {k: jnp.asarray(v, dtype=dtype) for k, v in work.data.items()}
    lr = work.lr

    def loss_of(w: dict[str, Any], x: Any, y: Any) -> Any:
        if "W1" in w:
            h = jnp.tanh(x @ w["W1"] + w["b1"])
            logits = h @ w["W2"] + w["b2"]
            return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(logits, axis=1), axis=1))
        return jnp.mean((jax.nn.sigmoid(x * w["w"]) - y) ** 2)

    @jax.jit
    def step(w: dict[str, Any], x: Any, y: Any) -> tuple[Any, Any]:
        loss, grads = jax.value_and_grad(loss_of)(w, x, y)
        return loss, jax.tree_util.tree_map(lambda p, g: p - lr * g, w, grads)

    start = {k: jnp.asarray(v, dtype=dtype) for k, v in work.start.items()}
    compiled = time.perf_counter()
    jax.block_until_ready(step(start, data["x"], data["y"]))
    compiled = time.perf_counter() - compiled

    def train() -> Weights:
        w = start
        for i in range(work.steps):
            loss, updated = step(w, data["x"], data["y"])
            _loss = float(loss)  # read every step, as the trainer does
            if i < work.steps - 1:
                w = updated
        return {k: np.asarray(v, dtype=float) for k, v in w.items()}

    train.compile_seconds = compiled  # type: ignore[attr-defined]
    return train


def optional(name: str) -> Any:
    """An optional library set to one thread, or None."""
    try:
        if name == "torch":
            import torch

            torch.set_num_threads(1)
            return torch
        if name == "jax":
            import jax

            jax.config.update("jax_enable_x64", True)
            return jax
    except ImportError:
        return None
    raise ValueError(name)


def check(reference: Weights, got: Weights, rtol: float) -> float:
    """The largest relative difference of ``got`` from ``reference`` (asserted <= rtol)."""
    worst = 0.0
    for k, v in reference.items():
        scale = max(1e-12, float(np.max(np.abs(v))))
        worst = max(worst, float(np.max(np.abs(np.asarray(got[k]) - v))) / scale)
    assert worst <= rtol, (worst, rtol)
    return worst


def rounds(contenders: dict[str, Train], repeat: int) -> tuple[dict[str, list[float]],
                                                                dict[str, list[float]],
                                                                dict[str, Weights]]:
    """Every contender's wall and CPU seconds (this process's threads) in each of ``repeat``
    rounds, the contenders taking turns in every round (other load on the machine then hits
    all of them alike), and each one's last weights."""
    walls: dict[str, list[float]] = {name: [] for name in contenders}
    cpus: dict[str, list[float]] = {name: [] for name in contenders}
    results: dict[str, Weights] = {}
    for _ in range(repeat):
        for name, train in contenders.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            results[name] = train()
            walls[name].append(time.perf_counter() - start)
            cpus[name].append(time.process_time() - start_cpu)
    return walls, cpus, results


def interleaved(contenders: dict[str, Train], repeat: int) -> tuple[dict[str, float],
                                                                     dict[str, Weights]]:
    """Best wall time of each contender over ``repeat`` rounds (see :func:`rounds`)."""
    walls, _, results = rounds(contenders, repeat)
    return {name: min(t) for name, t in walls.items()}, results
