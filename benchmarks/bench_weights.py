"""Compile time against the number of weights: it must grow linearly, not quadratically.

A program with W scalar weights, each used once (t_i = x * w_i, summed into the loss), is
parsed, compiled to its GCP and the GCP read back (what tfweightcalc does), for W = 5,000,
10,000 and 20,000. The baseline is the smallest size measured in the same run: linear growth
doubles the time when W doubles (the compiler once rescanned every declaration per weight:
5,000 weights took 3.3 s, 20,000 took 58 s).

    python benchmarks/bench_weights.py [--weights 5000 10000 20000]
"""

from __future__ import annotations

import argparse

from common import machine, seconds, table, timed

from tenflang_nb.core import api


def program(n: int) -> str:
    """``n`` scalar weights w_i, each used by one line t_i = x * w_i; the loss is (sum - y)^2."""
    lines = ["declare input x", "declare exp_output y"]
    lines += [f"declare weight w{i}" for i in range(n)]
    lines += [f"declare intvar t{i}" for i in range(n)]
    lines += [f"declare intvar s{i}" for i in range(n)]
    lines += ["declare intvar d", "declare loss L"]
    lines += [f"define t{i} = mul x w{i}" for i in range(n)]
    lines += ["define s0 = t0", *(f"define s{i} = add s{i - 1} t{i}" for i in range(1, n))]
    lines += [f"define d = sub s{n - 1} y", "define L = mul d d"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", type=int, nargs="+", default=[5000, 10000, 20000])
    args = parser.parse_args()
    rows = []
    first: tuple[int, float] | None = None
    for n in args.weights:
        text = program(n)
        t_parse, shape = timed(lambda t=text: api.parse(t))
        t_compile, gcp = timed(lambda s=shape: api.compile(s))
        t_read, _ = timed(lambda g=gcp: g.program())
        total = t_parse + t_compile + t_read
        first = first or (n, total)
        growth = total / first[1]
        rows.append([f"{n:,}", seconds(t_parse), seconds(t_compile), seconds(t_read),
                     seconds(total), f"{growth:.2f}", f"{n / first[0]:.2f}"])
    print(f"bench_weights: parse, compile, read the GCP back; {machine()}")
    print(table(rows, ["weights", "parse", "compile", "GCP read back", "total",
                       "time / smallest", "weights / smallest"]))
    n_first, n_last = args.weights[0], args.weights[-1]
    last_growth = float(rows[-1][5])
    linear = n_last / n_first
    verdict = "linear" if last_growth <= 1.5 * linear else "SUPERLINEAR"
    print(f"{n_last:,} / {n_first:,} weights: time x{last_growth:.1f} for x{linear:.0f} "
          f"the weights: {verdict} (quadratic would be x{linear ** 2:.0f})")


if __name__ == "__main__":
    main()
