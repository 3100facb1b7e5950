"""What ``model.cost()`` itself costs: time and peak memory, running every forward sweep (as
it did before issue 16) against a sample of them, extrapolated (now).

Forward mode holds values the size of a weight in each of its sweeps, one sweep per weight
component: running them all takes memory that grows with the square of the components (one
1000 x 10 weight: 3.3 GB for one example). ``compare_modes(sweeps=None)`` still runs them all
(here without the memory budget, as before); the default runs at most ``SWEEPS`` and fits the
budget. Each measurement runs in a fresh process (its peak resident memory is the process's);
the counts the two report must be the same, and are checked before anything is printed.

    python benchmarks/bench_cost.py [--sizes 100x10,300x10,1000x10] [--examples 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from common import machine, seconds, table

PROGRAM = """declare input x [{n_in}]
declare exp_output y [{n_out}]
declare weight W [{n_in}, {n_out}]
declare intvar z
declare intvar d
declare intvar e
declare loss L
define z = matmul x W
define d = sub z y
define e = mul d d
define L = sum e
"""

CHILD = """
import json, resource, sys, time
from tenflang_nb.core import cost
from tenflang_nb.core.api import parse
from tenflang_nb.core.cost import SWEEPS, compare_modes
source, examples, every = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "all"
if every:  # as before: no memory budget
    cost.MEMORY_BUDGET = 2**62
program = parse(source, "dense.tf")
start = time.perf_counter()
c = compare_modes(program, examples=examples, budget=0.0, sweeps=None if every else SWEEPS)
took = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": took, "peak": peak, "sweeps": c.forward.sweeps,
                  "measured": c.measured_sweeps, "lines": c.forward.lines,
                  "kept": c.forward.values_kept, "forward": c.forward.seconds}))
"""


def measure(n_in: int, n_out: int, examples: int, every: bool) -> dict:
    source = PROGRAM.format(n_in=n_in, n_out=n_out)
    out = subprocess.run([sys.executable, "-c", CHILD, source, str(examples),
                          "all" if every else "sample"], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="100x10,300x10,1000x10")
    p.add_argument("--examples", type=int, default=1)
    args = p.parse_args()
    print(f"bench_cost: compare_modes on one weight W [in, out] (matmul, squared error), "
          f"{args.examples} example(s); each in a fresh process; {machine()}")
    rows = []
    for size in args.sizes.split(","):
        n_in, n_out = map(int, size.split("x"))
        before = measure(n_in, n_out, args.examples, every=True)
        after = measure(n_in, n_out, args.examples, every=False)
        for key in ("sweeps", "lines", "kept"):
            assert before[key] == after[key], (size, key, before[key], after[key])
        rows.append([f"W [{n_in}, {n_out}]", f"{before['sweeps']:,}",
                     f"{after['measured']:,}", seconds(before["seconds"]),
                     seconds(after["seconds"]), f"{before['peak'] / 2**20:,.0f} MB",
                     f"{after['peak'] / 2**20:,.0f} MB",
                     f"{after['forward'] / before['forward']:.2f}"])
    print(table(rows, ["weight", "sweeps", "sweeps run now", "time: all sweeps",
                       "time: sample", "peak: all sweeps", "peak: sample",
                       "forward time estimate / measured"]))


if __name__ == "__main__":
    main()
