"""Per-line overhead: a long elementwise chain, one example, one forward+backward pass.

1. Running the GCP of a generated 3,000-line chain (a mix of tanh, mul, add, logistic, exp
   that stays finite) on a single example, against a hand-written numpy loop over the same
   operations (forward, then backward; every scalar a 1-element array). Target: tenflang
   within 2x of the numpy loop.
2. Compile time (parse + compile to GCP text) of generated chains of 10,000 and 100,000
   lines: the ratio should be about 10 (linear growth), and 100,000 lines under 5 s.

"Lines" can be read two ways, so both are measured: a program of 100,000 lines of text
(50,000 definitions, each with its declaration) and a program of 100,000 definitions (200,000
lines). The growth ratio is taken between 10,000 and 100,000 definitions.

    python benchmarks/bench_chain.py [--lines 3000] [--compile 10000 100000]
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from common import machine, one_thread, seconds, table, timed

from tenflang_nb.core import api
from tenflang_nb.core.plan import Plan

INPUTS = {"x": 0.5, "y": 0.3, "w": 0.9}
W = -1  # operand index standing for the weight w
# One cycle of seven lines on a residual stream s (index 0 below):
#   t1 = tanh s, t2 = logistic t1, t3 = exp t2, t4 = mul t3 w, t5 = mul t4 -0.5,
#   t6 = add t5 0.75, s = add s t6
# s settles where t4 = 1.5, and each cycle shrinks the gradient flowing back only by a
# factor ~0.8: a plain chain of squashing functions would make it vanish into denormal
# numbers, which are slow and would time the FPU rather than the interpreter.
CYCLE: list[tuple[str, int, int | float | None]] = [
    ("tanh", 0, None), ("logistic", 1, None), ("exp", 2, None), ("mul", 3, W),
    ("mul", 4, -0.5), ("add", 5, 0.75), ("add", 0, 6),
]


@dataclass(frozen=True)
class Line:
    op: str
    a: int  # index k of the first operand's value v_k (W: the weight)
    b: int | float | None  # an index, a constant (float), or None for a unary op


def chain(n: int) -> tuple[str, list[Line]]:
    """A shape program of ``n`` definitions, and its chain as index-based lines.

    v1 = x * w, then the cycle above until n - 2 values; the loss is (v_last - y)^2.
    """
    lines: list[Line] = []
    stream = 1
    k = 1
    while len(lines) < n - 3:  # v1, diff and lambda are the other three definitions
        base = k  # t_j of this cycle will be v_(base + j)
        for op, a, b in CYCLE:
            if len(lines) == n - 3:
                break
            k += 1
            ia = stream if a == 0 else base + a
            ib = (b if b == W or isinstance(b, float) or b is None
                  else stream if b == 0 else base + b)
            lines.append(Line(op, ia, ib))
            if op == "add" and a == 0:
                stream = k

    def ref(i: int | float) -> str:
        return "w" if i == W else f"v{i}" if isinstance(i, int) else repr(i)

    last = len(lines) + 1
    decls = ["declare input x", "declare exp_output y", "declare weight w"]
    decls += [f"declare intvar v{i}" for i in range(1, last + 1)]
    decls += ["declare intvar diff", "declare loss lambda"]
    defs = ["define v1 = mul x w"]
    for i, line in enumerate(lines, start=2):
        operands = ref(line.a) if line.b is None else f"{ref(line.a)} {ref(line.b)}"
        defs.append(f"define v{i} = {line.op} {operands}")
    defs += [f"define diff = sub v{last} y", "define lambda = pow diff 2"]
    return "\n".join(decls + defs) + "\n", lines


# ---------------------------------------------------------------------------- numpy loop

_FORWARD: dict[str, Callable[..., np.ndarray]] = {
    "tanh": np.tanh, "exp": np.exp, "mul": np.multiply, "add": np.add,
    "logistic": lambda a: 1.0 / (1.0 + np.exp(-a)),
}


def numpy_pass(lines: list[Line]) -> float:
    """Forward then backward over the chain, one numpy call (or a few) per operation."""
    x = np.array([INPUTS["x"]])
    y = np.array([INPUTS["y"]])
    w = np.array([INPUTS["w"]])
    values: list[np.ndarray] = [np.zeros(1), x * w]  # index k holds v_k
    for line in lines:
        a = values[line.a]
        b = w if line.b == W else values[line.b] if isinstance(line.b, int) else line.b
        values.append(_FORWARD[line.op](a) if b is None else _FORWARD[line.op](a, b))
    diff = values[-1] - y
    grads: list[np.ndarray | None] = [None] * len(values)
    grads[-1] = 2.0 * diff
    grad_w = np.zeros(1)

    def acc(k: int, g: np.ndarray) -> None:
        current = grads[k]
        grads[k] = g if current is None else current + g

    for k in range(len(values) - 1, 1, -1):
        g = grads[k]
        if g is None:
            continue
        line = lines[k - 2]
        v = values[k]
        if line.op == "tanh":
            acc(line.a, g * (1.0 - v * v))
        elif line.op == "logistic":
            acc(line.a, g * v * (1.0 - v))
        elif line.op == "exp":
            acc(line.a, g * v)
        elif line.op == "add":
            acc(line.a, g)
            if isinstance(line.b, int):
                acc(line.b, g)
        elif line.b == W:
            acc(line.a, g * w)
            grad_w = grad_w + g * values[line.a]
        else:
            acc(line.a, g * line.b)
    grad_w = grad_w + grads[1] * x  # v1 = x * w
    return float(grad_w[0])


# ---------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=3000)
    parser.add_argument("--compile", type=int, nargs=2, default=[10_000, 100_000],
                        metavar=("SMALL", "LARGE"))
    parser.add_argument("--repeat", type=int, default=200,
                        help="passes timed for the 3,000-line chain (best is kept)")
    args = parser.parse_args()

    text, lines = chain(args.lines)
    gcp = api.compile(api.parse(text))
    program = gcp.program()
    run = Plan(program).bind(dict(INPUTS), n=1)
    with one_thread(), np.errstate(all="raise"):
        t_tf, _ = timed(run.run, args.repeat)
        t_np, grad_np = timed(lambda: numpy_pass(lines), args.repeat)
    grad_tf = float(run.value("d/lambda/d/w")[0])  # type: ignore[index]
    assert math.isclose(grad_tf, grad_np, rel_tol=1e-9), (grad_tf, grad_np)
    assert math.isfinite(grad_tf) and grad_tf != 0

    timings = []
    small, large = args.compile
    for n in (small, large // 2, large):
        big, _ = chain(n)
        # the three parts separately, so a miss says where the time goes
        t_parse, shape = timed(lambda b=big: api.parse(b))
        t_compile, compiled = timed(lambda s=shape: api.compile(s))
        t_text, gcp_text = timed(lambda c=compiled: c.text)
        timings.append((n, t_parse + t_compile + t_text, len(big.splitlines()),
                        len(gcp_text.splitlines()), t_parse, t_compile, t_text))

    print(f"bench_chain: single-threaded, best of {args.repeat} passes; {machine()}")
    print()
    print(f"1. one forward+backward pass, {args.lines:,}-line chain "
          f"({len(program.definitions()):,} GCP definitions), one example")
    print(table([["tenflang (Run.run)", seconds(t_tf), "1.00"],
                 ["numpy loop, hand-written", seconds(t_np), f"{t_np / t_tf:.2f}"]],
                ["contender", "time", "time / tenflang"]))
    ratio = t_tf / t_np
    print(f"tenflang / numpy = {ratio:.2f} (target <= 2): {'met' if ratio <= 2 else 'MISSED'}")
    print(f"d/lambda/d/w = {grad_tf!r} (both agree)")
    print()
    print("2. compile time: parse + compile to GCP text")
    print(table([[f"{n:,}", f"{src:,}", f"{out:,}", seconds(tp), seconds(tc), seconds(tt),
                  seconds(t)] for n, t, src, out, tp, tc, tt in timings],
                ["definitions", "shape lines", "GCP lines", "parse", "compile", "GCP text",
                 "total"]))
    (n1, t1, *_), (_, t_half, src_half, *_), (n2, t2, *_) = timings
    print(f"ratio {n2:,} / {n1:,} definitions: {t2 / t1:.1f} (linear: {n2 / n1:.0f})")
    print(f"a {src_half:,}-line program in {seconds(t_half)} (target < 5 s): "
          f"{'met' if t_half < 5 else 'MISSED'}")
    print(f"{n2:,} definitions ({n2 * 2:,} lines) in {seconds(t2)} (5 s target for the "
          f"stricter reading): {'met' if t2 < 5 else 'MISSED'}")


if __name__ == "__main__":
    main()
