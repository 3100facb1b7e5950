"""What numba costs a process, and auto against the reference engine with one CPU (issue 23).

1. numba's costs, each in a fresh interpreter: ``import numba`` (time, resident memory it
   adds), the fused engine's loops compiled with an empty cache (``fused.load()``: the first
   time on a machine), and loaded from the filled cache (every later process). They run on a
   temporary copy of the package, so that its own cache is left as it is.
2. One CPU: W1 and W2 (``workloads.py``) trained on ``auto`` and on ``reference``, each in a
   fresh interpreter pinned to one CPU with ``taskset -c`` (and with ``--cgroup``, in a
   control group with a quota of one CPU: a Binder or hub pod with ``cpu: 1``), alternating,
   best and median of ``--repeat``: the time of binding and training (what ``auto``'s choice
   changes), wall and CPU (the process's threads and its children: less moved by other jobs
   on a shared machine), whether numba was imported, and the final weights checked against
   each other (``common.assert_same``).

    python benchmarks/bench_numba.py [--repeat 5] [--cpu 1] [--cgroup] [--skip-costs]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from common import assert_same, machine, seconds, table

BENCHMARKS = Path(__file__).resolve().parent

# the resident size now and its peak since the start (/proc: Linux)
RSS = """
def rss(key="VmRSS:"):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))
"""

COSTS = RSS + """
import json, time
from tenflang_nb.core import fused
fused._wide_vectors()  # the CPU features the engine asks numba for, before numba is imported
before = rss()
start = time.perf_counter()
import numba
imported = time.perf_counter() - start
after_import = rss()
start = time.perf_counter()
assert fused.load() is not None, fused.status()
loaded = time.perf_counter() - start
print(json.dumps({"import": imported, "import_rss": after_import - before, "load": loaded,
                  "load_rss": rss() - after_import, "peak": rss("VmHWM:") - before,
                  "status": fused.status()}))
"""

ONE_CPU = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
import workloads
def cpu():  # this process's threads and its children (numba compiling in one, say)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime
work = {"W1": workloads.w1, "W2": workloads.w2}[sys.argv[2]]()
start, start_cpu = time.perf_counter(), cpu()
train = workloads.make_tenflang(work, sys.argv[3])
weights = train()
took, took_cpu = time.perf_counter() - start, cpu() - start_cpu
print(json.dumps({"seconds": took, "cpu": took_cpu, "run": type(train.trainer._run).__name__,
                  "numba": "numba" in sys.modules,
                  "weights": {k: np.asarray(v).tolist() for k, v in weights.items()}}))
"""


def child(code: str, *args: str, prefix: tuple[str, ...] = (), env: dict[str, str] | None = None
          ) -> dict:
    done = subprocess.run([*prefix, sys.executable, "-c", code, *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})})
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.splitlines()[-1])


def costs() -> None:
    mb = 2**20
    rows = []
    with tempfile.TemporaryDirectory(prefix="tenflang-numba-cache-") as folder:
        # a copy of the package without its cache: the first process compiles into it
        shutil.copytree(BENCHMARKS.parent / "tenflang_nb", Path(folder) / "tenflang_nb",
                        ignore=shutil.ignore_patterns("__pycache__", "labextension"))
        for what in ("empty cache: first compile", "filled cache: load"):
            m = child(COSTS, env={"PYTHONPATH": folder})
            rows.append([what, seconds(m["import"]), f"{m['import_rss'] / mb:.0f} MB",
                         seconds(m["load"]), f"{m['load_rss'] / mb:.0f} MB",
                         f"{m['peak'] / mb:.0f} MB"])
    print(f"numba's costs, each a fresh interpreter; {machine()}")
    print(table(rows, ["fused.load()", "import numba", "RSS added", "loops compiled/loaded",
                       "RSS added", "peak RSS growth"]))


@contextlib.contextmanager
def quota_group() -> Iterator[tuple[str, ...]]:
    """A control group with a quota of one CPU (cgroup v1's cpu controller; needs root), as a
    pod with ``cpu: 1`` gets: the command prefix that runs a process in it."""
    group = Path("/sys/fs/cgroup/cpu") / f"tenflang-bench-{os.getpid()}"
    group.mkdir()
    try:
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text("100000")
        yield ("sh", "-c", f'echo $$ > {group / "cgroup.procs"} && exec "$@"', "sh")
    finally:
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (group.parent / "cgroup.procs").write_text(pid)
        group.rmdir()


def one_cpu(repeat: int, prefix: tuple[str, ...], how: str) -> None:
    rows = []
    for name in ("W1", "W2"):
        times: dict[str, list[float]] = {"auto": [], "reference": []}
        used: dict[str, list[float]] = {"auto": [], "reference": []}
        seen: dict[str, dict] = {}
        for _ in range(repeat):
            for engine in times:  # alternating: both see the same load on the machine
                m = child(ONE_CPU, str(BENCHMARKS), name, engine, prefix=prefix)
                times[engine].append(m["seconds"])
                used[engine].append(m["cpu"])
                seen[engine] = m
        for w, value in seen["reference"]["weights"].items():
            assert_same(np.array(seen["auto"]["weights"][w]), np.array(value), f"{name} {w}",
                        rtol=1e-9)
        for engine, t in times.items():
            rows.append([name, engine, seen[engine]["run"], str(seen[engine]["numba"]),
                         seconds(min(t)), seconds(statistics.median(t)),
                         seconds(min(used[engine])), seconds(statistics.median(used[engine]))])
        rows.append([name, "auto / reference", "", "",
                     *(f"{f(v['auto']) / f(v['reference']):.2f}" for v in (times, used)
                       for f in (min, statistics.median))])
    print(f"\none CPU ({how}), binding + training, {repeat} fresh processes each, "
          f"alternating; {machine()}")
    print(table(rows, ["workload", "engine", "run", "numba imported", "wall best",
                       "wall median", "CPU best", "CPU median"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cpu", default=str(min(os.sched_getaffinity(0))),
                        help="the CPU to pin the one-CPU runs to")
    parser.add_argument("--cgroup", action="store_true",
                        help="also in a control group with a quota of one CPU (needs root)")
    parser.add_argument("--skip-costs", action="store_true")
    args = parser.parse_args()
    if not args.skip_costs:
        costs()
    one_cpu(args.repeat, ("taskset", "-c", args.cpu), f"taskset -c {args.cpu}")
    if args.cgroup:
        with quota_group() as prefix:
            one_cpu(args.repeat, prefix, "a control group with a quota of one CPU")


if __name__ == "__main__":
    main()
