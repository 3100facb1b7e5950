"""Forward mode against reverse mode: what one gradient costs with ``tfcompiler --forward``
and with the GCP, for the seed example, the XOR network and the digits network.

Both programs are planned and run by tenflang's interpreter on the same examples and weights,
as training runs them (batch means of the gradients, one BLAS thread); each time is the best
of the runs made within ``--budget`` seconds (at least 3), after one untimed run. Before any
time is printed, the two programs' gradients are checked to agree. Counts (sweeps, lines,
numbers kept in memory) come from ``core.cost`` and do not depend on the machine.

    python benchmarks/bench_modes.py [--examples 100] [--budget 1.0]
"""

from __future__ import annotations

import argparse

import numpy as np
from common import assert_same, machine, model_cases, table

from tenflang_nb.core import api
from tenflang_nb.core.cost import compare_modes
from tenflang_nb.core.datafiles import DataTable
from tenflang_nb.core.plan import Plan
from tenflang_nb.core.program import Program


def _same_gradient(shape: Program, data: DataTable | None, weights: dict, n: int) -> float:
    """Check the two programs' mean gradients on ``n`` examples agree (never on a NaN or an
    infinity); the largest relative error."""
    rng = np.random.default_rng(1)
    n = min(n, len(data)) if data is not None else n
    columns = {name: (data.columns[name][:n] if data is not None and name in data.columns
                      else rng.normal(size=(n, *shape.shapes[name])))
               for name in shape.names("input", "exp_output")}
    means = []
    for derived in (api.compile_forward(shape), api.compile(shape)):
        names = list(derived.gradient_names().values())
        run = Plan(derived.program()).bind({**columns, **weights}, n, means=names)
        run.run()
        means.append([run.mean(name) for name in names])
    return max(assert_same(a, b, f"forward mode against the GCP, {name}", rtol=1e-9, atol=1e-12)
               for name, a, b in zip(names, *means, strict=True))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=100)
    p.add_argument("--budget", type=float, default=1.0)
    args = p.parse_args()
    cases = model_cases()
    print(f"bench_modes: one gradient, forward mode against reverse mode, on up to "
          f"{args.examples} examples, single-threaded (best of the runs within "
          f"{args.budget:g} s); {machine()}")
    rows = []
    for name, shape, data in cases:
        weights = api.initial_weights({w: shape.shapes[w] for w in shape.names("weight")},
                                      "normal", 0)
        diff = _same_gradient(shape, data, weights, min(args.examples, 8))
        c = compare_modes(shape, data, weights, examples=args.examples, budget=args.budget,
                          sweeps=None)  # every sweep run, none extrapolated
        f, r = c.forward, c.reverse
        rows.append([name, f"{c.examples}", f"{f.sweeps:,} / {r.sweeps}",
                     f"{f.lines:,} / {r.lines:,}", f"{f.values_kept:,} / {r.values_kept:,}",
                     f"{f.seconds * 1e3:.3f} ms", f"{r.seconds * 1e3:.3f} ms",
                     f"{c.time_ratio:,.1f}", f"{diff:.1e}"])
    print(table(rows, ["model", "examples", "sweeps fwd / rev", "lines fwd / rev",
                       "numbers kept fwd / rev", "forward", "reverse", "forward / reverse",
                       "gradients: relative error"]))


if __name__ == "__main__":
    main()
