"""The Hessian-vector program (``tfcompiler --hvp``) against the GCP: what one product H v
costs, over what one gradient costs, for the seed example, the XOR network and the digits
network, and the same product by reverse mode over the GCP.

Three programs, planned and run by tenflang's interpreter on the same examples, weights and
direction, as training runs the GCP (batch means of the outputs, one BLAS thread):

* the GCP (the baseline: one gradient);
* the Hessian-vector program, forward mode over the GCP (``compile_hvp``): the GCP, then one
  tangent sweep in the direction v; it computes the gradient and H v;
* reverse mode over the GCP, made here for the comparison: the GCP with its names made plain,
  its weights declared ``weight``, and the loss ``g . v`` (the gradient's dot product with the
  direction) added, compiled again by ``tfcompiler``; its gradient is H v.

Before any time is printed, the two products are checked to agree with each other and with
central differences of the GCP's mean gradient along v. Each time is the best run of blocks
of 10 runs of one program (after an untimed one), the programs' blocks in turn for
``--budget`` seconds each; the ratios divide times measured in the same run of this script.

    python benchmarks/bench_hvp.py [--examples 1797] [--budget 1.0]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from common import assert_same, machine, model_cases, one_thread, table

from tenflang_nb.core import api
from tenflang_nb.core.backprop import Gcp
from tenflang_nb.core.datafiles import DataTable
from tenflang_nb.core.formatting import fmt_shape
from tenflang_nb.core.lexical import adjoint_name, direction_name
from tenflang_nb.core.plan import Plan, Run
from tenflang_nb.core.program import Program
from tenflang_nb.core.syntax import Declare, Define


def reverse_over_reverse(gcp: Gcp) -> tuple[Program, dict[str, str]]:
    """The GCP as a shape program with the loss ``gv = g . v``, compiled again (reverse mode):
    the compiled program, and the plain name each GCP name got (the direction for weight
    number k is ``vk``; the product H v for weight ``w`` is ``d/gv/d/<its plain name>``)."""
    program = gcp.program()
    plain = {n: f"n{i}" for i, n in enumerate(program.decls)}
    grads = gcp.gradient_names()
    lines = []
    for s in program.statements:
        if isinstance(s, Declare):
            kind = ("weight" if s.name in grads else
                    "input" if s.kind == "input" else "intvar")
            shape = program.shapes[s.name]
            lines.append(f"declare {kind} {plain[s.name]}{' ' * bool(shape)}"
                         f"{fmt_shape(shape) if shape else ''}")
        elif isinstance(s, Define):
            args = " ".join(plain[a] if isinstance(a, str) else str(a) for a in s.args)
            lines.append(f"define {plain[s.target]} = {s.op + ' ' if s.op else ''}{args}")
    total = None
    for k, (w, g) in enumerate(grads.items()):
        shape = program.shapes[w]
        dims = f" {fmt_shape(shape)}" if shape else ""
        lines += [f"declare input v{k}{dims}", f"declare intvar t{k}{dims}",
                  f"define t{k} = mul {plain[g]} v{k}"]
        term = f"t{k}"
        if shape:
            lines += [f"declare intvar u{k}", f"define u{k} = sum t{k}"]
            term = f"u{k}"
        if total is not None:
            lines += [f"declare intvar s{k}", f"define s{k} = add {total} {term}"]
            term = f"s{k}"
        total = term
    lines += ["declare loss gv", f"define gv = {total}"]
    compiled = api.compile(api.parse("\n".join(lines) + "\n", "<GCP of g . v>")).program()
    return compiled, plain


def best_times(runs: dict[str, Run], budget: float, block: int = 10) -> dict[str, float]:
    """Each run's best time over blocks of ``block`` runs of one program after another, in
    turn (warm within a block, as repeated products are; and a busy spell of the machine
    slows all alike), for ``budget`` seconds per program and at least 3 blocks each."""
    times = dict.fromkeys(runs, float("inf"))
    started = time.perf_counter()
    rounds = 0
    while rounds < 3 or time.perf_counter() - started < budget * len(runs):
        for name, run in runs.items():
            run.run()  # warm: its buffers back in the caches
            for _ in range(block):
                t0 = time.perf_counter()
                run.run()
                times[name] = min(times[name], time.perf_counter() - t0)
        rounds += 1
    return times


def case(shape: Program, data: DataTable | None, examples: int, budget: float
         ) -> tuple[list[str], float, float]:
    rng = np.random.default_rng(1)
    weights = api.initial_weights({w: shape.shapes[w] for w in shape.names("weight")},
                                  "normal", 0)
    v = {w: rng.normal(size=shape.shapes[w]) for w in weights}
    n = min(examples, len(data)) if data is not None else examples
    columns = {name: (data.columns[name][:n] if data is not None else
                      rng.normal(size=(n, *shape.shapes[name])))
               for name in shape.names("input", "exp_output")}
    gcp = api.compile(shape)
    hvp = api.compile_hvp(gcp)
    grads = list(gcp.gradient_names().values())
    rr, plain = reverse_over_reverse(gcp)
    runs: dict[str, tuple[Run, Callable[[], dict[str, np.ndarray]]]] = {}

    def bind(name: str, program: Program, values: dict, outputs: dict[str, str],
             means: list[str] | None = None) -> None:
        run = Plan(program).bind(values, n, means=means or list(outputs.values()))
        runs[name] = (run, lambda: {w: run.mean(o) for w, o in outputs.items()})

    bind("gcp", gcp.program(), {**columns, **weights}, gcp.gradient_names())
    # as core.curvature runs it: the means of the gradient and of H v (a mean is cheaper
    # than the per-example values of d/L/d/W1 = outer x d/L/d/a1)
    bind("hvp", hvp.program(),
         {**columns, **weights, **{direction_name(w): v[w] for w in weights}},
         hvp.hvp_names(), [*grads, *hvp.hvp_names().values()])
    bind("rr", rr, {**{plain[x]: c for x, c in columns.items()},
                    **{plain[w]: weights[w] for w in weights},
                    **{f"v{k}": v[w] for k, w in enumerate(weights)}},
         {w: adjoint_name("gv", plain[w]) for w in weights})
    # the products agree, and with central differences of the mean gradient along v
    with one_thread():
        for run, _ in runs.values():
            run.run()
        forward, reverse = runs["hvp"][1](), runs["rr"][1]()
        gcp_run = runs["gcp"][0]
        h = 1e-5 / max(float(np.max(np.abs(x))) for x in v.values())
        moved = []
        for sign in (1, -1):
            for w in weights:
                gcp_run.set(w, weights[w] + sign * h * v[w])
            gcp_run.run()
            moved.append({w: gcp_run.mean(g) for w, g in zip(weights, grads, strict=True)})
        for w in weights:
            gcp_run.set(w, weights[w])
        # (atol = rtol * scale: every entry judged on the products' scale, at least 1)
        scale = max(1.0, *(float(np.max(np.abs(x))) for x in forward.values()))
        for w in weights:
            assert_same(forward[w], reverse[w], f"H v of {w} against reverse over reverse",
                        rtol=1e-12, atol=1e-12 * scale)
        fd = max(assert_same(forward[w], (moved[0][w] - moved[1][w]) / (2 * h),
                             f"H v of {w} against central differences", rtol=1e-6,
                             atol=1e-6 * scale) for w in weights)
        times = best_times({name: run for name, (run, _) in runs.items()}, budget)
    lines = {name: len(program.definitions()) for name, program in
             (("gcp", gcp.program()), ("hvp", hvp.program()), ("rr", rr))}
    text = (len(gcp.text.splitlines()), len(hvp.text.splitlines()))
    return ([f"{n:,}", f"{lines['gcp']:,} / {lines['hvp']:,} / {lines['rr']:,}",
             f"{text[0]:,} / {text[1]:,}",
             f"{times['gcp'] * 1e3:.3f} ms", f"{times['hvp'] * 1e3:.3f} ms",
             f"{times['rr'] * 1e3:.3f} ms", f"{times['hvp'] / times['gcp']:.2f}",
             f"{times['rr'] / times['gcp']:.2f}", f"{fd:.0e}"],
            times["hvp"] / times["gcp"], times["rr"] / times["gcp"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=1797)
    p.add_argument("--budget", type=float, default=1.0)
    args = p.parse_args()
    cases = model_cases()
    print(f"bench_hvp: one product H v against one gradient, on up to {args.examples:,} "
          f"examples, single-threaded (best run of blocks of 10, {args.budget:g} s a "
          f"program); {machine()}")
    rows = []
    ratio = rr_ratio = 0.0
    for name, shape, data in cases:
        row, ratio, rr_ratio = case(shape, data, args.examples, args.budget)
        rows.append([name, *row])
    print(table(rows, ["model", "examples", "definitions GCP / HVP / rev-rev",
                       "text lines GCP / HVP", "GCP", "HVP program", "reverse over reverse",
                       "HVP / GCP", "rev-rev / GCP", "H v vs differences"]))
    print(f"\ndigits: the HVP program (the gradient and H v) costs {ratio:.2f} times the GCP, "
          f"its tangent pass {ratio - 1:.2f} (target: a small constant); reverse mode over "
          f"the GCP {rr_ratio:.1f} times")

if __name__ == "__main__":
    main()
