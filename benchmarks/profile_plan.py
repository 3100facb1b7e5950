"""Where a training step's time goes: every planned GCP line timed on its own.

A training step (``GradientDescent.step``) is one ``Run.run`` (the planned GCP lines, one
numpy kernel each), the weight-gradient means, and the bookkeeping around them (loss mean,
finiteness checks, gradient norm, update). This script times each part separately, and each
planned line over ``--repeat`` calls, and prints the most expensive lines. With ``--engine
fused`` it times the fused engine's stages instead: each group of lines the block loop runs
in one pass, each line left to numpy, each batch mean taken outside the pass.

    python benchmarks/profile_plan.py examples/digits/gcp.tf examples/digits/digits.npz
    python benchmarks/profile_plan.py --seed-example --n 100000 [--engine fused]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from common import one_thread, seconds, table

from tenflang_nb.core import api
from tenflang_nb.core.examples import SEED_EXAMPLE


def per_call(fn: Callable[[], Any], repeat: int) -> float:
    """Best of 3 rounds of ``repeat`` calls, per call."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best


def kernel_name(kernel: Callable[..., Any]) -> str:
    name = getattr(kernel, "__name__", None) or type(kernel).__name__
    qual = getattr(kernel, "__qualname__", name)
    return qual.replace("<locals>.", "") if "<lambda>" not in qual else f"{qual} (ops.py)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gcp", nargs="?", help="a GCP file")
    parser.add_argument("data", nargs="?", help="its training data")
    parser.add_argument("--seed-example", action="store_true",
                        help="the seed's logistic model on --n random pairs instead")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--engine", choices=["reference", "fused"], default="reference")
    args = parser.parse_args()
    if args.seed_example:
        rng = np.random.default_rng(0)
        x = rng.uniform(-3, 3, args.n)
        data: Any = {"x": x, "y": 1 / (1 + np.exp(-1.7 * x))}
        gcp: Any = api.compile(api.parse(SEED_EXAMPLE))
    elif args.gcp and args.data:
        gcp, data = api.parse_file(args.gcp), args.data
    else:
        parser.error("give GCP and DATA, or --seed-example")
    trainer = api.trainer(gcp, data, tol=0.0, max_iter=10**9, engine=args.engine)
    run = trainer._run  # the bound plan: its steps are the planned GCP lines
    if args.engine == "fused":
        fused_stages(trainer, args.repeat)
        return

    with one_thread(), np.errstate(all="ignore"):
        t_step = per_call(trainer.step, args.repeat)
        t_run = per_call(run.run, args.repeat)
        t_means = per_call(lambda: [run.mean(g) for g in trainer.grad_names.values()],
                           args.repeat)
        lines = []
        for step in run.steps:
            t = per_call(lambda s=step: s.kernel(*s.args, out=s.out), args.repeat)
            lines.append((t, step))
    total_lines = sum(t for t, _ in lines)
    lines.sort(key=lambda r: r[0], reverse=True)

    print(f"{len(run.steps)} planned lines, batch of {run.n:,} examples, single-threaded")
    print(table([
        ["GradientDescent.step (all of it)", seconds(t_step), "100%"],
        ["  Run.run: the planned GCP lines", seconds(t_run), f"{t_run / t_step:.0%}"],
        ["    sum of the lines timed one by one", seconds(total_lines),
         f"{total_lines / t_step:.0%}"],
        ["  weight-gradient means", seconds(t_means), f"{t_means / t_step:.0%}"],
        ["  the rest (loss mean, checks, norm, update)",
         seconds(max(t_step - t_run - t_means, 0.0)),
         f"{max(t_step - t_run - t_means, 0.0) / t_step:.0%}"],
    ], ["part", "time per step", "share"]))
    print()
    rows = []
    for t, step in lines[:args.top]:
        shape = "x".join(str(d) for d in step.out.shape)
        rows.append([seconds(t), f"{t / total_lines:.0%}", str(step.define),
                     kernel_name(step.kernel), shape])
    print(table(rows, ["time", "share", "GCP line", "kernel", "out"]))


def fused_stages(trainer: Any, repeat: int) -> None:
    """The fused engine's step, stage by stage (one chunk)."""

    run = trainer._run
    part = run.parts[0]
    rows = []
    with one_thread(), np.errstate(all="ignore"):
        t_step = per_call(trainer.step, repeat)
        t_run = per_call(run.run, repeat)
        for stage, frozen in part.stages:
            if frozen is None:
                rows.append([seconds(per_call(stage, repeat)), "numpy",
                             str(stage.func.__qualname__ if hasattr(stage, "func") else stage)])
                continue

            def group(frozen: Any = frozen, stage: Any = stage) -> None:
                run.vm.execute(*frozen, part.run.n, stage.block)

            sums = ", ".join(name for name, _ in stage.sums)
            rows.append([seconds(per_call(group, repeat)), "fused group",
                         f"{len(stage.code)} instructions, blocks of {stage.block} rows"
                         + (f", sums {sums}" if sums else "")])
        for mean in part.schedule.mean_steps:
            rows.append([seconds(per_call(mean, repeat)), "batch mean",
                         getattr(mean, "__qualname__", str(mean))])
    print(f"fused engine: {len(part.stages)} stages, batch of {run.n:,} examples, "
          f"single-threaded; step {seconds(t_step)}, run {seconds(t_run)}")
    print(table(rows, ["time", "stage", "what"]))


if __name__ == "__main__":
    main()
