"""The digits network of examples/digits (64-32-10, tanh, log-softmax cross-entropy):
500 full-batch gradient evaluations at learning rate 0.5 on all 1,797 images.

Contenders, all in this process, single-threaded, float64, from the same initial weights
(tenflang's ``--init auto --seed 0`` draw):

* tenflang: ``api.trainer(examples/digits/gcp.tf, digits.npz, ...)`` then ``.run()``; only
  ``run()`` is timed;
* numpy: a hand-written forward and backward pass;
* PyTorch eager autograd, float64 (and float32 for reference) when installed.

Each one's final training accuracy is computed the same way (numpy forward pass, argmax).

    python benchmarks/bench_digits.py [--steps 500]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from common import machine, one_thread, seconds, table, timed, torch_or_none

from tenflang_nb.core import api, fused

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "digits"
LR = 0.5
NAMES = ("W1", "b1", "W2", "b2")
Weights = dict[str, np.ndarray]


def logits_of(w: Weights, x: np.ndarray) -> np.ndarray:
    return np.tanh(x @ w["W1"] + w["b1"]) @ w["W2"] + w["b2"]


def accuracy(w: Weights, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(logits_of(w, x).argmax(axis=1) == y.argmax(axis=1)))


def run_tenflang(x: np.ndarray, y: np.ndarray, steps: int, repeat: int,
                 engine: str = "auto") -> tuple[float, Weights, Weights]:
    gcp = api.parse_file(EXAMPLE / "gcp.tf")
    trainer = api.trainer(gcp, {"x": x, "y": y}, lr=LR, tol=0.0, max_iter=steps - 1,
                          init="auto", seed=0, engine=engine)

    def train() -> api.TrainResult:
        trainer.reset()  # same start every repeat; the bound buffers are reused
        return trainer.run()

    t, result = timed(train, repeat)
    assert len(result.history) == steps
    start = {k: np.array(v, dtype=float) for k, v in trainer.initial.items()}
    return t, start, {k: np.asarray(v, dtype=float) for k, v in result.weights.items()}


def run_numpy(start: Weights, x: np.ndarray, y: np.ndarray, steps: int, repeat: int
              ) -> tuple[float, Weights]:
    n = len(x)

    def train() -> Weights:
        w = {k: v.copy() for k, v in start.items()}
        for i in range(steps):
            h = np.tanh(x @ w["W1"] + w["b1"])
            logits = h @ w["W2"] + w["b2"]
            shifted = logits - logits.max(axis=1, keepdims=True)
            e = np.exp(shifted)
            total = e.sum(axis=1, keepdims=True)
            logp = shifted - np.log(total)
            _loss = -np.sum(y * logp) / n  # tenflang reports the loss every step: so do we
            g = (e / total - y) / n  # d(mean loss)/d(logits)
            gh = (g @ w["W2"].T) * (1.0 - h * h)
            grads = {"W2": h.T @ g, "b2": g.sum(axis=0), "W1": x.T @ gh, "b1": gh.sum(axis=0)}
            if i < steps - 1:
                for k in NAMES:
                    w[k] -= LR * grads[k]
        return w

    return timed(train, repeat)


def run_torch(torch: Any, start: Weights, x: np.ndarray, y: np.ndarray, steps: int,
              repeat: int, dtype: Any) -> tuple[float, Weights]:
    tx = torch.from_numpy(x).to(dtype)
    ty = torch.from_numpy(y).to(dtype)
    log_softmax = torch.nn.functional.log_softmax

    def train() -> Weights:
        # clone: for float64, from_numpy/to share memory with ``start``, which the in-place
        # updates below would otherwise change for the next repeat
        w = {k: torch.from_numpy(v).to(dtype).clone().requires_grad_()
             for k, v in start.items()}
        for i in range(steps):
            h = torch.tanh(tx @ w["W1"] + w["b1"])
            logits = h @ w["W2"] + w["b2"]
            loss = -(ty * log_softmax(logits, dim=1)).sum(dim=1).mean()
            loss.backward()
            with torch.no_grad():
                for p in w.values():
                    if i < steps - 1:
                        p -= LR * p.grad
                    p.grad = None
        return {k: v.detach().double().numpy() for k, v in w.items()}

    return timed(train, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500, help="gradient evaluations")
    parser.add_argument("--repeat", type=int, default=3, help="keep the best of this many")
    parser.add_argument("--engine", choices=["auto", "fused", "reference"], default="auto",
                        help="tenflang's engine (auto: numba loaded first, as after the "
                             "background load in a session)")
    args = parser.parse_args()
    if args.engine != "reference":
        fused.load()
    torch = torch_or_none()
    with np.load(EXAMPLE / "digits.npz") as data:
        x, y = data["x"], data["y"]
    with one_thread():
        t_tf, start, w_tf = run_tenflang(x, y, args.steps, args.repeat, args.engine)
        t_np, w_np = run_numpy(start, x, y, args.steps, args.repeat)
        torch_runs = []
        if torch is not None:
            for dtype in (torch.float64, torch.float32):
                t, w = run_torch(torch, start, x, y, args.steps, args.repeat, dtype)
                torch_runs.append((str(dtype).removeprefix("torch."), t, w))
    # the same algorithm from the same start: tenflang must land where numpy does
    drift = max(float(np.max(np.abs(w_tf[k] - w_np[k]))) for k in NAMES)
    assert drift < 1e-6, drift
    for name, _, w in torch_runs:
        if name == "float64":  # ... and so must PyTorch in the same precision
            torch_drift = max(float(np.max(np.abs(w[k] - w_np[k]))) for k in NAMES)
            assert torch_drift < 1e-6, torch_drift

    print(f"bench_digits: {len(x):,} images, 64-32-10 network, {args.steps} full-batch "
          f"gradient evaluations, lr {LR}, single-threaded (best of {args.repeat}); "
          f"{machine()}")
    rows = [[f"tenflang (trainer.run, {args.engine})", seconds(t_tf), "1.00",
             f"{accuracy(w_tf, x, y):.2%}"],
            ["numpy, hand-written", seconds(t_np), f"{t_np / t_tf:.2f}",
             f"{accuracy(w_np, x, y):.2%}"]]
    for name, t, w in torch_runs:
        rows.append([f"PyTorch {torch.__version__} eager, {name}", seconds(t),
                     f"{t / t_tf:.2f}", f"{accuracy(w, x, y):.2%}"])
    if torch is None:
        rows.append(["PyTorch eager", "not installed", "-", "-"])
    print(table(rows, ["contender", "time", "time / tenflang", "training accuracy"]))
    print(f"largest weight difference tenflang vs numpy after {args.steps} steps: {drift:.1e}")
    print()
    if torch_runs:
        t64 = torch_runs[0][1]
        print(f"PyTorch eager float64 / tenflang = {t64 / t_tf:.2f} (target > 1, tenflang "
              f"faster): {'met' if t64 > t_tf else 'MISSED'}")
    print(f"numpy / tenflang = {t_np / t_tf:.2f}")


if __name__ == "__main__":
    main()
