"""Issue 19's table, kept by issue 23: tenflang (default engine) against numpy by hand,
PyTorch eager and jax.jit on W1 and W2, on this CPU and under AVX2 emulation, in-process and
(``--whole-process``) as a user runs them; and what a notebook user waits for (a ``%%tenflang``
cell, the live panel's redraws, the checker) before and after.

W1: the seed's logistic model, N = 100,000, 1,000 full-batch steps. W2: the digits MLP
64-32-10, 500 full-batch steps (benchmarks/workloads.py). In-process: one process per CPU
mode, every contender single-threaded (BLAS; jax.jit still spreads a step over several
threads: ``--pin`` puts everything on one CPU), taking turns in each round, ``--repeat``
rounds; each contender's final weights checked against tenflang's. Whole-process
(wholeprocess.py): ``tfweightcalc`` against a PyTorch, a jax and a numpy script
(user_train.py), each a fresh process. Every figure is the median and range of wall and CPU
time over the rounds, and each ratio the median of the round-by-round ratios. The AVX2 run
hides AVX-512 from numpy, OpenBLAS, numba, PyTorch (and MKL) and XLA (see study_engines.AVX2).

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

    python benchmarks/bench_engines.py [--repeat 5] [--pin CPU] [--whole-process] [--no-avx2]
                                       [--no-interactive] [--before REV]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from study_engines import AVX2, XLA_ONE_THREAD, cpu_flags

os.environ["XLA_FLAGS"] = (XLA_ONE_THREAD + (" --xla_cpu_max_isa=AVX2"
                                             if os.environ.get("OPENBLAS_CORETYPE") else ""))

import wholeprocess
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
    """The four contenders on W1 and W2 in this process: each round's wall and CPU seconds,
    and jax's compile seconds."""
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
            walls, cpus, results = workloads.rounds(trains, repeat)
        for name in trains:
            workloads.check(results["tenflang"], results[name], 1e-7)
        run = type(trains["tenflang"].trainer._run).__name__  # type: ignore[attr-defined]
        out[key] = {"name": work.name, "wall": walls, "cpu": cpus, "run": run,
                    "load": os.getloadavg()[0],
                    "compile": getattr(trains.get("jax"), "compile_seconds", None)}
    return out


NAMES = {"tenflang": "tenflang (default engine)", "numpy": "numpy by hand",
         "torch": "PyTorch eager", "jax": "jax.jit"}
TARGETS = {"torch": ("< 1", lambda r: r < 1), "jax": ("<= 1.3", lambda r: r <= 1.3)}


def paired(mine: list[float], theirs: list[float]) -> float:
    """Median of the round-by-round ratios (the two ran one after the other each round)."""
    return statistics.median(a / b for a, b in zip(mine, theirs, strict=True))


def issue_table(modes: dict[str, dict[str, object]]) -> str:
    """In-process: every contender's median (min-max) wall and CPU time, and tenflang's
    round-by-round ratio against each; the targets' verdicts on the wall-time ratios."""
    rows = []
    verdicts = []
    for mode, result in modes.items():
        for key in ("W1", "W2"):
            r = result[key]
            walls, cpus = r["wall"], r["cpu"]  # type: ignore[index]
            for name, wall in walls.items():
                ratio = paired(walls["tenflang"], wall)
                extra = (f" (+ compile {seconds(r['compile'])})"  # type: ignore[index]
                         if name == "jax" else f" ({r['run']})" if name == "tenflang" else "")  # type: ignore[index]
                rows.append([f"{key} {mode}", NAMES[name] + extra, wholeprocess.spread(wall),
                             wholeprocess.spread(cpus[name]), f"{ratio:.2f}",
                             f"{paired(cpus['tenflang'], cpus[name]):.2f}",
                             f"{r['load']:.1f}"])  # type: ignore[index]
                if name in TARGETS:
                    target, rule = TARGETS[name]
                    verdicts.append(
                        f"{key} {mode} ({r['name']}): in-process, tenflang / {NAMES[name]} = "  # type: ignore[index]
                        f"{ratio:.2f} wall, {paired(cpus['tenflang'], cpus[name]):.2f} CPU "
                        f"(target {target}): {'met' if rule(ratio) else 'MISSED'}")
    text = table(rows, ["workload", "contender", "wall: median (min-max)",
                        "CPU: median (min-max)", "tenflang / this, wall",
                        "tenflang / this, CPU", "load"])
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
    parser.add_argument("--repeat", type=int, default=5,
                        help="rounds of every contender (in-process and whole-process)")
    parser.add_argument("--no-avx2", action="store_true", help="only this CPU's own mode")
    parser.add_argument("--whole-process", action="store_true",
                        help="also time tfweightcalc against a PyTorch, a jax and a numpy "
                             "script, each a fresh process (wholeprocess.py)")
    parser.add_argument("--no-in-process", action="store_true",
                        help="skip the in-process table")
    parser.add_argument("--pin", type=int, metavar="CPU",
                        help="run everything on this one CPU (sched_setaffinity, inherited by "
                             "every process started): jax.jit runs a step on several threads "
                             "whatever XLA_FLAGS say, and on a busy machine more threads "
                             "get more turns")
    parser.add_argument("--before", default="main",
                        help="the commit to compare the interactive measures with (default: "
                             "where this branch left main)")
    parser.add_argument("--no-interactive", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.repeat)))
        return
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})
    started = time.perf_counter()
    pinned = f"pinned to CPU {args.pin}" if args.pin is not None else "not pinned"
    print(f"bench_engines: single-threaded, float64, {args.repeat} rounds, {pinned}; {machine()}; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    avx2 = {**AVX2, "XLA_FLAGS": "--xla_cpu_max_isa=AVX2"}
    if not args.no_in_process:
        modes = {"native": measure(args.repeat)}
        if not args.no_avx2:
            done = subprocess.run([sys.executable, __file__, "--child", "--repeat",
                                   str(args.repeat)], env={**os.environ, **AVX2},
                                  capture_output=True, text=True, check=True)
            modes["AVX2"] = json.loads(done.stdout.splitlines()[-1])
        print("\nin-process: the training loops only (data loaded, programs compiled, jax's "
              "step compiled), the contenders taking turns in each round")
        for mode, result in modes.items():
            print(f"  {mode}: {result['flags']}; fused engine: {result['engine']}")
        print(issue_table(modes), flush=True)
    if args.whole_process:
        wanted = {"native": {}, **({} if args.no_avx2 else {"AVX2 emulation": avx2})}
        libraries = [name for name in ("torch", "jax", "numpy")
                     if name == "numpy" or importlib.util.find_spec(name) is not None]
        print()
        print(wholeprocess.whole_process(args.repeat, wanted, libraries,
                                         ["auto", "reference", "fused"]))
    if not args.no_interactive:
        base = subprocess.run(["git", "-C", str(REPO), "merge-base", "HEAD", args.before],
                              capture_output=True, text=True, check=True).stdout.strip()
        print()
        print(f"interactive: before = commit {base[:10]} (git merge-base HEAD {args.before})")
        print(interactive_table(export(base)))
    print(f"\nbench_engines took {time.perf_counter() - started:.0f} s; load average now "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
