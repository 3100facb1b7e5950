"""The seed's model, o = logistic(w x) and loss (o - y)^2, trained by full-batch gradient
descent on N = 100,000 pairs for 1,000 gradient evaluations.

Contenders, all in this process, single-threaded, float64, the same data and start (w = 0):

* tenflang: ``api.trainer(gcp, data, ...)`` then ``.run()``; only ``run()`` is timed (not
  parsing, compiling or binding the data);
* numpy: a hand-written forward and backward pass of the same model;
* PyTorch eager autograd (when installed);
* the seed's per-pair interpreter: a bindings dictionary, the GCP text walked line by line for
  every training pair, exactly as the design's pseudocode does. It is timed on 1,000 pairs x
  3 steps and extrapolated to 100,000 x 1,000 (its cost is linear in both).

Every contender makes 1,000 gradient evaluations: tenflang's ``max_iter`` counts updates and
it evaluates once more after the last one, so it runs with ``max_iter = steps - 1``.

    python benchmarks/bench_logistic.py [--n 100000] [--steps 1000]
"""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np
from common import machine, one_thread, seconds, table, timed, torch_or_none

from tenflang_nb.core import api, fused
from tenflang_nb.core.examples import SEED_EXAMPLE

LR = 0.1
TRUE_W = 1.7


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3.0, 3.0, n)
    y = 1.0 / (1.0 + np.exp(-TRUE_W * x)) + rng.normal(0.0, 0.02, n)
    return x, y


# ---------------------------------------------------------------------------- contenders


def run_tenflang(gcp: api.Gcp, x: np.ndarray, y: np.ndarray, steps: int, repeat: int,
                 engine: str = "auto") -> tuple[float, float]:
    trainer = api.trainer(gcp, {"x": x, "y": y}, lr=LR, tol=0.0, max_iter=steps - 1,
                          init="zeros", engine=engine)

    def train() -> api.TrainResult:
        trainer.reset()  # back to w = 0, buffers kept: a repeat re-times the loop only
        return trainer.run()

    seconds_, result = timed(train, repeat)
    assert len(result.history) == steps
    return seconds_, float(result.weights["w"])


def run_numpy(x: np.ndarray, y: np.ndarray, steps: int, repeat: int) -> tuple[float, float]:
    def train() -> float:
        w = 0.0
        for i in range(steps):
            o = 1.0 / (1.0 + np.exp(-(x * w)))
            diff = o - y
            _loss = np.mean(diff * diff)  # tenflang reports the loss every step: so do we
            grad = np.mean(2.0 * diff * o * (1.0 - o) * x)
            if i < steps - 1:
                w -= LR * grad
        return w

    return timed(train, repeat)


def run_torch(torch: Any, x: np.ndarray, y: np.ndarray, steps: int, repeat: int,
              dtype: Any) -> tuple[float, float]:
    tx = torch.from_numpy(x).to(dtype)
    ty = torch.from_numpy(y).to(dtype)

    def train() -> float:
        w = torch.zeros((), dtype=dtype, requires_grad=True)
        for i in range(steps):
            o = torch.sigmoid(tx * w)
            loss = ((o - ty) ** 2).mean()
            loss.backward()
            with torch.no_grad():
                if i < steps - 1:
                    w -= LR * w.grad
                w.grad.zero_()
        return float(w.detach())

    return timed(train, repeat)


# The seed's interpreter, literally: per call it reads the program one line at a time,
# binding declared inputs from the input dictionary, NULL for other declarations, and
# evaluating each definition from the bindings dictionary.
_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "pow": lambda a, b: a ** b,
}
_UNARY = {
    "logistic": lambda a: 1.0 / (1.0 + math.exp(-a)), "exp": math.exp, "ln": math.log,
    "tanh": math.tanh, "neg": lambda a: -a,
}


def _operand(token: str, bindings: dict[str, float | None]) -> float | None:
    if token in bindings:
        return bindings[token]
    return float(token)


def interpret(program: str | list[list[str]], inputs: dict[str, float]
              ) -> dict[str, float | None]:
    """Run a program given as text (re-read on every call, as the seed's interpreter reads
    its file) or as lines already split into tokens (a kinder baseline)."""
    lines = program if isinstance(program, list) else [
        line.split() for line in program.splitlines()]
    bindings: dict[str, float | None] = {}
    outputs: list[str] = []
    for tokens in lines:
        if not tokens or tokens[0].startswith("#"):
            continue
        if tokens[0] == "declare":
            kind, name = tokens[1], tokens[2]
            bindings[name] = inputs.get(name) if kind in ("input", "weight") else None
            if kind == "output":
                outputs.append(name)
            continue
        target, rhs = tokens[1], tokens[3:]
        if len(rhs) == 1:
            value = _operand(rhs[0], bindings)
        else:
            args = [_operand(t, bindings) for t in rhs[1:]]
            if any(a is None for a in args):
                value = None
            elif len(args) == 1:
                value = _UNARY[rhs[0]](args[0])
            else:
                value = _BINARY[rhs[0]](args[0], args[1])
        bindings[target] = value
    return {name: bindings[name] for name in outputs}


def seed_train(gcp: str | list[list[str]], pairs: list[dict[str, float]], steps: int
               ) -> float:
    """calculate_weights / avg_gradient / find_partials from the design document."""
    w = 0.0
    for i in range(steps):
        total = 0.0
        for pair in pairs:
            partials = interpret(gcp, {**pair, "w": w})
            total += partials["d/lambda/d/w"]  # type: ignore[operator]
        grad = total / len(pairs)
        if i < steps - 1:
            w -= LR * grad
    return w


# ---------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="training pairs")
    parser.add_argument("--steps", type=int, default=1000, help="gradient evaluations")
    parser.add_argument("--pairs", type=int, default=1000, help="per-pair subset: pairs")
    parser.add_argument("--pair-steps", type=int, default=3, help="per-pair subset: steps")
    parser.add_argument("--repeat", type=int, default=3,
                        help="time each vectorised contender this many times, keep the best")
    parser.add_argument("--engine", choices=["auto", "fused", "reference"], default="auto",
                        help="tenflang's engine (auto: numba loaded first, as after the "
                             "background load in a session)")
    args = parser.parse_args()
    if args.engine != "reference":
        fused.load()
    torch = torch_or_none()
    x, y = make_data(args.n)
    gcp = api.compile(api.parse(SEED_EXAMPLE))
    scale = (args.n / args.pairs) * (args.steps / args.pair_steps)
    with one_thread():
        t_tf, w_tf = run_tenflang(gcp, x, y, args.steps, args.repeat, args.engine)
        t_np, w_np = run_numpy(x, y, args.steps, args.repeat)
        torch_rows = []
        if torch is not None:
            for dtype in (torch.float64, torch.float32):
                t, w = run_torch(torch, x, y, args.steps, args.repeat, dtype)
                torch_rows.append((str(dtype).removeprefix("torch."), t, w))
        split = [line.split() for line in gcp.text.splitlines()]
        per_pair = []
        for label, program in (("literal: text re-read per pair", gcp.text),
                               ("GCP lines split once", split)):
            measured, w_pp = timed(lambda p=program: seed_train(
                p, [{"x": float(a), "y": float(b)} for a, b in
                    zip(x[:args.pairs], y[:args.pairs], strict=True)], args.pair_steps))
            per_pair.append((label, measured, w_pp))
    # the per-pair interpreter also checks the GCP: the same steps as tenflang's on the subset
    check = api.trainer(gcp, {"x": x[:args.pairs], "y": y[:args.pairs]}, lr=LR, tol=0.0,
                        max_iter=args.pair_steps - 1, init="zeros").run()
    for _, _, w_pp in per_pair:
        assert math.isclose(w_pp, float(check.weights["w"]), rel_tol=1e-9), w_pp
    assert math.isclose(w_tf, w_np, rel_tol=1e-9), (w_tf, w_np)

    print(f"bench_logistic: N = {args.n:,} pairs, {args.steps:,} gradient evaluations, "
          f"single-threaded (best of {args.repeat}); {machine()}")
    rows = [[f"tenflang (trainer.run, {args.engine})", seconds(t_tf), "1.00", f"{w_tf:.6f}"],
            ["numpy, hand-written", seconds(t_np), f"{t_np / t_tf:.2f}", f"{w_np:.6f}"]]
    for name, t, w in torch_rows:
        rows.append([f"PyTorch {torch.__version__} eager, {name}", seconds(t),
                     f"{t / t_tf:.2f}", f"{w:.6f}"])
    if torch is None:
        rows.append(["PyTorch eager", "not installed", "-", "-"])
    for label, measured, _ in per_pair:
        rows.append([f"seed per-pair interpreter, {label} *", seconds(measured * scale),
                     f"{measured * scale / t_tf:.0f}", "-"])
    print(table(rows, ["contender", "time", "time / tenflang", "final w"]))
    print(f"* extrapolated x{scale:,.0f} from {args.pairs:,} pairs x {args.pair_steps} "
          "steps, measured: " + ", ".join(seconds(m) for _, m, _ in per_pair))
    print()
    kindest = min(m for _, m, _ in per_pair) * scale
    verdicts = [f"per-pair (the faster variant) / tenflang = {kindest / t_tf:.0f}x "
                f"(target >= 300x): {'met' if kindest / t_tf >= 300 else 'MISSED'}"]
    if torch_rows:
        t64 = torch_rows[0][1]
        verdicts.append(f"PyTorch eager float64 / tenflang = {t64 / t_tf:.2f} (target > 1, "
                        f"tenflang faster): {'met' if t64 > t_tf else 'MISSED'}")
    verdicts.append(f"numpy / tenflang = {t_np / t_tf:.2f}")
    print("\n".join(verdicts))


if __name__ == "__main__":
    main()
