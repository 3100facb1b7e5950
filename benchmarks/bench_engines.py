"""Issue 19's table: tenflang (default engine) against numpy by hand, PyTorch eager and jax.jit
on W1 and W2, on this CPU and under AVX2 emulation, all ratios in one run; and what a notebook
user waits for (a ``%%tenflang`` cell, the live panel's redraws, the checker) before and after.

W1: the seed's logistic model, N = 100,000, 1,000 full-batch steps. W2: the digits MLP
64-32-10, 500 full-batch steps (benchmarks/workloads.py). One process per CPU mode, every
contender single-threaded, taking turns in each round, best of ``--repeat``; each contender's
final weights checked against tenflang's. The AVX2 run hides AVX-512 from numpy, OpenBLAS,
numba, PyTorch (and MKL) and XLA (see study_engines.AVX2).

The interactive measures run in fresh interpreters for the commit given by ``--before``
(default: where this branch left main; its files exported to a temporary folder) and for this
checkout, taking turns:

* a ``%%tenflang`` cell of the seed's program with its default views (best of 10, and the
  first cell of a session);
* a ``%%tenflang ... --train`` cell training the seed on 200 pairs to the end (--no-live);
* the live training panel on the digits model: redraws and training steps per second over
  3 seconds of a live run;
* ``check_backprop`` of a right backward pass of the digits model (best of 5).

The trainer behind the panel and the ``--train`` cell is bound with the default engine: for
these data sets (200 pairs; 1,797 images) ``auto`` either stays on the reference engine or
switches once numba has loaded in the background.

    python benchmarks/bench_engines.py [--repeat 3] [--no-avx2] [--before REV]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from study_engines import AVX2, XLA_ONE_THREAD, cpu_flags

os.environ["XLA_FLAGS"] = (XLA_ONE_THREAD + (" --xla_cpu_max_isa=AVX2"
                                             if os.environ.get("OPENBLAS_CORETYPE") else ""))

import workloads
from common import machine, one_thread, seconds, table

REPO = Path(__file__).resolve().parents[1]


def export(rev: str) -> Path:
    """The files of commit ``rev`` in a temporary folder (a checkout to measure "before")."""
    folder = Path(tempfile.mkdtemp(prefix="tenflang-before-"))
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def measure(repeat: int) -> dict[str, object]:
    """The four contenders on W1 and W2 in this process: seconds and compile seconds."""
    from tenflang_nb.core import fused

    fused.load()  # the default engine's loops (loaded in the background in a notebook)
    torch = workloads.optional("torch")
    jax = workloads.optional("jax")
    out: dict[str, object] = {"flags": cpu_flags(), "engine": fused.status()}
    for key, work in (("W1", workloads.w1()), ("W2", workloads.w2())):
        trains = {"tenflang": workloads.make_tenflang(work, "auto"),
                  "numpy": workloads.make_numpy(work)}
        if torch is not None:
            trains["torch"] = workloads.make_torch(work, torch, torch.float64)
        if jax is not None:
            trains["jax"] = workloads.make_jax(work, jax, "float64")
        with one_thread():
            best, results = workloads.interleaved(trains, repeat)
        for name in trains:
            workloads.check(results["tenflang"], results[name], 1e-7)
        run = type(trains["tenflang"].trainer._run).__name__  # type: ignore[attr-defined]
        out[key] = {"name": work.name, "seconds": best, "run": run,
                    "compile": getattr(trains.get("jax"), "compile_seconds", None)}
    return out


def issue_table(modes: dict[str, dict[str, object]]) -> str:
    rows = []
    verdicts = []
    for mode, result in modes.items():
        for key in ("W1", "W2"):
            r = result[key]
            t = r["seconds"]  # type: ignore[index]
            tf = t["tenflang"]
            ratio = {k: tf / v for k, v in t.items()}
            jax = (f"{seconds(t['jax'])} (+{seconds(r['compile'])})"  # type: ignore[index]
                   if "jax" in t else "-")
            rows.append([f"{key} {mode}", r["name"],  # type: ignore[index]
                         f"{ratio.get('torch', float('nan')):.2f}", f"{ratio['numpy']:.2f}",
                         f"{ratio.get('jax', float('nan')):.2f}", seconds(tf),
                         seconds(t["numpy"]), seconds(t.get("torch", float("nan"))), jax,
                         str(r["run"])])  # type: ignore[index]
            if "torch" in t:
                verdicts.append(f"{key} {mode}: tenflang / PyTorch eager = {ratio['torch']:.2f} "
                                f"(target < 1): {'met' if ratio['torch'] < 1 else 'MISSED'}")
            if "jax" in t:
                verdicts.append(f"{key} {mode}: tenflang / jax.jit = {ratio['jax']:.2f} "
                                f"(target <= 1.3): {'met' if ratio['jax'] <= 1.3 else 'MISSED'}")
    text = table(rows, ["workload", "", "tenflang / PyTorch eager", "tenflang / numpy",
                        "tenflang / jax.jit", "tenflang", "numpy by hand", "PyTorch eager",
                        "jax.jit (+ compile)", "engine"])
    return text + "\n\n" + "\n".join(verdicts)


PANEL = r"""
import asyncio, json, sys, time
import numpy as np
import tenflang_nb
from tenflang_nb.core import api
from tenflang_nb.core.settings import TrainSettings
from tenflang_nb.notebook.panel import TrainingPanel

digits = api.parse_file(sys.argv[1] + "/examples/digits/shape.tf")
gcp = api.compile(digits)
with np.load(sys.argv[1] + "/examples/digits/digits.npz") as d:
    data = {"x": d["x"], "y": d["y"]}
panel = TrainingPanel(lambda s: api.trainer(gcp, data, s),
                      TrainSettings(lr=0.5, tol=0.0, max_iter=10**7), live=True)
async def live(seconds=3.0):
    panel.start()
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        await asyncio.sleep(0)
    panel.stop()
    return time.perf_counter() - started
elapsed = asyncio.run(live())
assert panel.state == "stopped", panel.status
print(json.dumps({"where": tenflang_nb.__file__, "redraws": panel.redraws / elapsed,
                  "steps": panel.trainer.iterations / elapsed}))
"""

# the first cell of a session first; the checker before anything trains (a long training
# starts loading numba in the background, which would share the CPU with what follows)
CELLS = r"""
import json, sys, time
import numpy as np
from IPython.core.interactiveshell import InteractiveShell
import tenflang_nb
from tenflang_nb.core import api
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.notebook import magic
ip = InteractiveShell.instance()
magic.load(ip)
rng = np.random.default_rng(0)
x = rng.uniform(-3, 3, 200)
ip.user_ns["pairs"] = {"x": x, "y": 1 / (1 + np.exp(-1.7 * x))}
def cell(line):
    start = time.perf_counter()
    result = ip.run_cell(line + "\n" + SEED_EXAMPLE)
    assert result.success, result.error_in_exec
    return time.perf_counter() - start
first = cell("%%tenflang net")
plain = min(cell("%%tenflang net") for _ in range(10))
digits = api.parse_file(sys.argv[1] + "/examples/digits/shape.tf")
text = "\n".join([  # a right backward pass, the softmax shortcut taken (as students do)
    "define p = softmax logits", "define d/lambda/d/logits = sub p y",
    "define d/lambda/d/W2 = outer h d/lambda/d/logits", "define d/lambda/d/b2 = d/lambda/d/logits",
    "define W2T = transpose W2", "define d/lambda/d/h = matmul d/lambda/d/logits W2T",
    "define hh = mul h h", "define dt = sub 1 hh", "define d/lambda/d/z1 = mul d/lambda/d/h dt",
    "define d/lambda/d/b1 = d/lambda/d/z1", "define d/lambda/d/W1 = outer x d/lambda/d/z1"])
check = []
for _ in range(5):
    start = time.perf_counter()
    report = api.check_backprop(digits, text)
    check.append(time.perf_counter() - start)
assert report.first_wrong_line is None, report.report()
train = min(cell("%%tenflang net --train pairs --no-live --max-iter 200") for _ in range(5))
print(json.dumps({"where": tenflang_nb.__file__, "first": first, "cell": plain,
                  "train": train, "check": min(check)}))
"""


def interactive(checkout: Path) -> dict[str, float]:
    """The measures in two fresh interpreters (a live panel needs one without an IPython
    shell; the first cell, one that has run nothing else)."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "MPLBACKEND": "Agg"}
    result: dict[str, float] = {}
    for script in (CELLS, PANEL):
        done = subprocess.run([sys.executable, "-c", script, str(checkout)], env=env,
                              capture_output=True, text=True, check=True, cwd=checkout)
        got = json.loads(done.stdout.splitlines()[-1])
        assert str(checkout) in got.pop("where")
        result.update(got)
    return result


def interactive_table(before: Path, rounds: int = 3) -> str:
    sides = {"before": before, "after (this checkout)": REPO}
    best: dict[str, dict[str, float]] = {}
    for turn in range(rounds):  # the two checkouts take turns, first one then the other
        for label, checkout in list(sides.items())[::1 if turn % 2 == 0 else -1]:
            got = interactive(checkout)
            mine = best.setdefault(label, {})
            for k, v in got.items():
                better = max if k in ("redraws", "steps") else min
                mine[k] = better(mine.get(k, v), v)
    rows = [[label, seconds(r["first"]), seconds(r["cell"]), seconds(r["train"]),
             f"{r['redraws']:.1f}/s", f"{r['steps']:.0f}/s", seconds(r["check"])]
            for label, r in best.items()]
    return table(rows, ["checkout", "first %%tenflang cell", "%%tenflang cell",
                        "cell, --train 200 steps", "panel redraws (digits, live)",
                        "panel training steps", "check_backprop (digits)"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-avx2", action="store_true", help="only this CPU's own mode")
    parser.add_argument("--before", default="main",
                        help="the commit to compare the interactive measures with (default: "
                             "where this branch left main)")
    parser.add_argument("--no-interactive", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.repeat)))
        return
    modes = {"native": measure(args.repeat)}
    if not args.no_avx2:
        done = subprocess.run([sys.executable, __file__, "--child", "--repeat",
                               str(args.repeat)], env={**os.environ, **AVX2},
                              capture_output=True, text=True, check=True)
        modes["AVX2"] = json.loads(done.stdout.splitlines()[-1])
    print(f"bench_engines: single-threaded, float64, best of {args.repeat}; {machine()}")
    for mode, result in modes.items():
        print(f"  {mode}: {result['flags']}; fused engine: {result['engine']}")
    print(issue_table(modes))
    if not args.no_interactive:
        base = subprocess.run(["git", "-C", str(REPO), "merge-base", "HEAD", args.before],
                              capture_output=True, text=True, check=True).stdout.strip()
        print()
        print(f"interactive: before = commit {base[:10]} (git merge-base HEAD {args.before})")
        print(interactive_table(export(base)))


if __name__ == "__main__":
    main()
