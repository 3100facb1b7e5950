"""Peak memory beyond the data: training the seed's model on N = 10,000,000 pairs (issue 19's
target: under 256 MB with the fused engine; the reference engine keeps a buffer per GCP line),
and the loss landscape's curve over the same data.

Each measurement runs in a fresh interpreter: the data is made first, then the peak resident
set size is reset (``/proc/self/clear_refs``) and read after training (``VmHWM``); "beyond the
data" is its growth over the resident size before (tracemalloc's peak of the same region is
printed too: it counts what numpy allocated, touched or not). Linux only.

    python benchmarks/bench_memory.py [--n 10000000] [--steps 5] [--cold]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from common import machine, seconds, table

CHILD = """
import json, sys, time, tracemalloc
import numpy as np
from tenflang_nb.core import api, fused
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.landscape import LossEvaluator
from tenflang_nb.core.settings import TrainSettings
from tenflang_nb.core.train import GradientDescent
n, steps, engine, job, cold = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], \
    sys.argv[5] == "cold"
if engine != "reference" and not cold:
    fused.load()  # numba and its loops: not part of the data's memory either
gcp = api.compile(api.parse(SEED_EXAMPLE)).program()
rng = np.random.default_rng(0)
x = rng.uniform(-3, 3, n)
data = {"x": x, "y": 1 / (1 + np.exp(-1.7 * x))}
del x
def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak resident size starts again from the current one
before = status("VmRSS:")
tracemalloc.start()
start = time.perf_counter()
if job == "train":
    t = GradientDescent(gcp, data, n, TrainSettings(tol=0.0, max_iter=steps - 1, engine=engine))
    t.run()
    kind = type(t._run).__name__
else:
    ev = LossEvaluator(gcp, data, n, ["w"], "lambda", engine=engine)
    ev.losses(np.linspace(-3, 3, steps).reshape(-1, 1))
    kind = type(ev._runs[1]).__name__
took = time.perf_counter() - start
traced = tracemalloc.get_traced_memory()[1]
after = status("VmHWM:")
data_bytes = sum(v.nbytes for v in data.values())
print(json.dumps({"rss": after - before, "traced": traced, "data": data_bytes,
                  "seconds": took, "run": kind, "vm": fused.status()}))
"""


def measure(n: int, steps: int, engine: str, job: str, cold: bool = False
            ) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(n), str(steps), engine, job,
                           "cold" if cold else "warm"], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--steps", type=int, default=5, help="gradient evaluations / points")
    parser.add_argument("--cold", action="store_true",
                        help="numba not loaded beforehand (as a kernel's first training): its "
                             "load, time and memory, count in the engines that use it")
    args = parser.parse_args()
    mb = 2**20
    rows = []
    fused_train = None
    for job in ("train", "landscape"):
        for engine in ("reference", "fused", "auto"):
            m = measure(args.n, args.steps, engine, job, args.cold)
            if job == "train" and engine == "auto":
                fused_train = m
            rows.append([job, engine, str(m["run"]), f"{m['data'] / mb:,.0f} MB",
                         f"{m['rss'] / mb:,.0f} MB", f"{m['traced'] / mb:,.0f} MB",
                         seconds(float(m["seconds"]))])
    print(f"bench_memory: seed model, N = {args.n:,}, {args.steps} gradient evaluations "
          f"(training) or curve points (landscape){', numba loaded by the run' * args.cold}; "
          f"{machine()}")
    print(table(rows, ["job", "engine", "run", "data", "peak RSS beyond the data",
                       "tracemalloc peak", "time"]))
    assert fused_train is not None
    growth = float(fused_train["rss"]) / mb
    print(f"\ntraining with the default engine: {growth:,.0f} MB beyond the data "
          f"(target < 256 MB): {'met' if growth < 256 else 'MISSED'}")


if __name__ == "__main__":
    main()
