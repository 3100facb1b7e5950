"""What a user writes instead of ``tfweightcalc``: W1 or W2 trained by PyTorch eager, jax.jit or
numpy, from a data file, as a plain script (bench_engines.py --whole-process times it whole:
the interpreter's start, the library's import, reading the data, jax's compile, training).

    python benchmarks/user_train.py torch|jax|numpy DATA.npz STEPS LR [START.npz]

W1 (no START: the seed's logistic model from w = 0) or W2 (START holds the digits network's
starting weights W1 b1 W2 b2). float64, one thread, the loss read at every step as the trainer
does; prints the final weights as JSON on standard output. Imports nothing from tenflang_nb.
"""

from __future__ import annotations

import json
import os
import sys

# one thread for every library, set before any is imported (as bench_engines does in-process)
for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402


def torch_train(data: dict, start: dict, steps: int, lr: float) -> dict:
    import torch

    torch.set_num_threads(1)
    x, y = (torch.from_numpy(data[k]) for k in ("x", "y"))
    w = {k: torch.from_numpy(v).clone().requires_grad_() for k, v in start.items()}
    for i in range(steps):
        if "W1" in w:
            h = torch.tanh(x @ w["W1"] + w["b1"])
            loss = -(y * torch.log_softmax(h @ w["W2"] + w["b2"], dim=1)).sum(dim=1).mean()
        else:
            loss = ((torch.sigmoid(x * w["w"]) - y) ** 2).mean()
        loss.backward()
        float(loss.detach())
        with torch.no_grad():
            for p in w.values():
                if i < steps - 1:
                    p -= lr * p.grad
                p.grad = None
    return {k: v.detach().numpy() for k, v in w.items()}


def jax_train(data: dict, start: dict, steps: int, lr: float) -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x, y = (jnp.asarray(data[k]) for k in ("x", "y"))

    def loss_of(w: dict, x: object, y: object) -> object:
        if "W1" in w:
            h = jnp.tanh(x @ w["W1"] + w["b1"])
            return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(h @ w["W2"] + w["b2"], axis=1), 1))
        return jnp.mean((jax.nn.sigmoid(x * w["w"]) - y) ** 2)

    @jax.jit
    def step(w: dict, x: object, y: object) -> tuple:
        loss, grads = jax.value_and_grad(loss_of)(w, x, y)
        return loss, jax.tree_util.tree_map(lambda p, g: p - lr * g, w, grads)

    w = {k: jnp.asarray(v) for k, v in start.items()}
    for i in range(steps):
        loss, updated = step(w, x, y)
        float(loss)
        if i < steps - 1:
            w = updated
    return {k: np.asarray(v) for k, v in w.items()}


def numpy_train(data: dict, start: dict, steps: int, lr: float) -> dict:
    x, y = data["x"], data["y"]
    n = len(x)
    w = {k: v.copy() for k, v in start.items()}
    for i in range(steps):
        if "W1" in w:
            h = np.tanh(x @ w["W1"] + w["b1"])
            logits = h @ w["W2"] + w["b2"]
            shifted = logits - logits.max(axis=1, keepdims=True)
            e = np.exp(shifted)
            total = e.sum(axis=1, keepdims=True)
            float(-np.sum(y * (shifted - np.log(total))) / n)
            g = (e / total - y) / n
            gh = (g @ w["W2"].T) * (1.0 - h * h)
            grads = {"W2": h.T @ g, "b2": g.sum(axis=0), "W1": x.T @ gh, "b1": gh.sum(axis=0)}
        else:
            o = 1.0 / (1.0 + np.exp(-x * w["w"]))
            d = o - y
            float(np.dot(d, d) / n)
            grads = {"w": np.array(2.0 * np.dot(d * o * (1.0 - o), x) / n)}
        if i < steps - 1:
            for k in w:
                w[k] = w[k] - lr * grads[k]
    return w


def main(argv: list[str]) -> None:
    library, data_file, steps, lr = argv[0], argv[1], int(argv[2]), float(argv[3])
    with np.load(data_file) as d:
        data = {k: d[k] for k in ("x", "y")}
    if len(argv) > 4:
        with np.load(argv[4]) as s:
            start = {k: s[k] for k in s.files}
    else:
        start = {"w": np.zeros(())}
    train = {"torch": torch_train, "jax": jax_train, "numpy": numpy_train}[library]
    weights = train(data, start, steps, lr)
    print(json.dumps({k: np.asarray(v, dtype=float).tolist() for k, v in weights.items()}))


if __name__ == "__main__":
    main(sys.argv[1:])
