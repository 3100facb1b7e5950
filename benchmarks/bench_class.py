"""Figures for a class (issue 26): what one student costs a JupyterHub, and students per node.

1. **Kernels.** Each notebook run top to bottom in a kernel of its own (nbclient, the notebook's
   folder as working directory, as Jupyter runs it), twice: ``fused`` as shipped
   (``engine=auto``, numba importable, its loops in the cache) and ``reference`` with numba and
   llvmlite made unimportable in the kernel (an image without numba: every engine is the
   reference); on demand (``--modes forced``) also with the fused engine loaded first and used
   for every binding (``auto`` in a kernel never loads it for these sizes). Read from outside
   the kernel (``/proc/PID``): resident memory after the start, after the last cell and its
   peak, and the CPU seconds of the cells (the kernel's and its waited-for children's,
   Graphviz's ``dot`` included). ``--cells`` lists the cells that added the most resident
   memory.
2. **A hub** (as root; ``tests/hub_support.py``): students' servers spawned together on a real
   JupyterHub, the time from the spawn request to the output of tutorial 01's first cell, and
   the Jupyter Server's resident memory beside its kernel.
3. **The grader**: ``tenflang-course new``, ``generate_assignment``, ``tenflang-course solve``
   for each student, then ``nbgrader autograde`` (in the sandbox) timed: seconds a submission.
4. **Capacity**: from 1-3, each student's memory guarantee and limit and students per node.

    python benchmarks/bench_class.py [NOTEBOOK ...] [--modes fused,reference,forced] [--cells]
        [--hub-students 4] [--grader-students 4] [--skip-hub] [--skip-grader] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import machine, table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from kernel_support import MODES, run_notebook  # noqa: E402  (tests/ on the path first)

MB = 2**20


def kernels(notebooks: list[Path], modes: list[str], cells: bool) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in notebooks:
        for mode in modes:
            try:
                found[f"{path.stem} {mode}"] = figures = run_notebook(path, mode)
            except RuntimeError as err:
                raise SystemExit(str(err)) from None
            figures.update(notebook=path.stem, mode=mode)
            print(f"  {path.stem} {mode}: {figures['end'] / MB:.0f} MB", file=sys.stderr)
    rows = [[f["notebook"], f["mode"], f"{f['start'] / MB:.0f} MB", f"{f['end'] / MB:.0f} MB",
             f"{f['peak'] / MB:.0f} MB", f"{f['cpu']:.1f} s", f"{f['wall']:.1f} s",
             "yes" if f["numba"] else "no"] for f in found.values()]
    print(table(rows, ["notebook", "engine", "RSS at start", "RSS at the end", "peak RSS",
                       "CPU of the cells", "wall", "numba"]))
    if cells:
        for f in found.values():
            steps = [(rss - before, i, text) for (i, rss, text), before in zip(
                f["cells"], [f["start"]] + [c[1] for c in f["cells"]], strict=False)]
            top = sorted(steps, reverse=True)[:5]
            print(f"\n{f['notebook']} {f['mode']}: the cells that added the most")
            print(table([[str(i), f"{d / MB:+.1f} MB", t] for d, i, t in top],
                        ["cell", "RSS added", "first line"]))
    return found


# ---------------------------------------------------------------------------- a real hub

def hub(students: int) -> dict[str, Any]:
    """Spawn ``students`` servers together on a real JupyterHub; per student, seconds from
    the spawn request to the output of tutorial 01's first cell; the servers' memory."""
    import shutil

    from hub_support import VENV_BIN, Hub, Kernel, Users, missing, unique_names

    reason = missing()
    if reason:
        print(f"\nhub: skipped ({reason})")
        return {}
    notebook = json.loads((REPO / "notebooks" / "01_tour_of_the_three_phases.ipynb").read_text())
    first = next("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
    root = Path(tempfile.mkdtemp(prefix="tenflang-bench-hub-", dir="/tmp"))
    root.chmod(0o755)
    (root / "home").mkdir(mode=0o755)
    (root / "hub").mkdir(mode=0o700)
    users = Users(root / "home")
    names = unique_names("tfb", students)
    server = None
    try:
        for name in names:
            home = users.add(name)
            # what the image's postStart does: the tutorials and their data in the home
            shutil.copytree(REPO / "notebooks", home / "notebooks")
            shutil.copytree(REPO / "examples", home / "examples")
            subprocess.run(["chown", "-R", f"{name}:{name}", str(home)], check=True)
        server = Hub(root / "hub", names, [], {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"})
        began = time.monotonic()
        for name in names:
            server.api("POST", f"/users/{name}/server")
        ready: dict[str, float] = {}
        while len(ready) < len(names) and time.monotonic() - began < 600:
            for name in names:
                if name not in ready and server.api("GET", f"/users/{name}")["servers"].get(
                        "", {}).get("ready"):
                    ready[name] = time.monotonic() - began
            time.sleep(0.2)
        firsts, spare = [], []
        for name in names:  # each student opens 01 and runs its first cell, one after another
            started = time.monotonic()
            kernel: Kernel = server.server(name).session("notebooks/" +
                                                         "01_tour_of_the_three_phases.ipynb")
            out = kernel.run(first)
            assert out.error is None, out.error
            firsts.append(time.monotonic() - started)
            spare.append(kernel)
        rss = {name: _rss_by_kind(name) for name in names}
        for kernel in spare:
            kernel.close()
    finally:
        if server is not None:
            server.stop()
        users.remove()
        shutil.rmtree(root, ignore_errors=True)
    servers = [r["server"] for r in rss.values()]
    print(f"\nhub: {students} servers spawned together (LocalProcessSpawner)")
    print(table([[n, f"{ready[n]:.1f} s", f"{f:.1f} s", f"{ready[n] + f:.1f} s",
                  f"{rss[n]['server'] / MB:.0f} MB", f"{rss[n]['kernel'] / MB:.0f} MB"]
                 for n, f in zip(names, firsts, strict=True)],
                ["student", "server ready", "kernel + 01's first cell", "first output",
                 "server RSS", "kernel RSS (01's first cell)"]))
    return {"ready": [ready[n] for n in names], "first_cell": firsts, "server": max(servers)}


def _rss_by_kind(user: str) -> dict[str, int]:
    """Resident memory of ``user``'s Jupyter Server and of their kernels."""
    done = subprocess.run(["ps", "-o", "rss=,args=", "-u", user], capture_output=True,
                          text=True, check=True)
    found = {"server": 0, "kernel": 0}
    for line in done.stdout.splitlines():
        rss, args = line.split(None, 1)
        kind = "kernel" if "ipykernel" in args else "server" if "singleuser" in args else None
        if kind:
            found[kind] += int(rss) * 1024
    return found


# ---------------------------------------------------------------------------- the grader

def grader(students: int, assignment: str) -> dict[str, Any]:
    """Seconds ``nbgrader autograde`` takes a submission in a ``tenflang-course new`` course."""
    from nbgrader_support import run_nbgrader

    course = Path(tempfile.mkdtemp(prefix="tenflang-bench-course-")) / "course"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    course_cli = [sys.executable, "-m", "tenflang_nb.course.cli"]
    subprocess.run([*course_cli, "new", str(course)], check=True, capture_output=True,
                   env=env)
    run_nbgrader(course, "generate_assignment", assignment)
    for i in range(students):
        subprocess.run([*course_cli, "solve", str(course), assignment, f"s{i}"], check=True,
                       capture_output=True, env=env)
    before = os.times()
    began = time.perf_counter()
    run_nbgrader(course, "autograde", assignment)
    wall = time.perf_counter() - began
    after = os.times()
    children = after.children_user + after.children_system - before.children_user \
        - before.children_system
    import shutil
    shutil.rmtree(course.parent, ignore_errors=True)
    print(f"\ngrader: nbgrader autograde {assignment}, {students} submissions (sandboxed): "
          f"{wall:.1f} s, {wall / students:.1f} s a submission (CPU {children / students:.1f} s)")
    return {"assignment": assignment, "students": students, "wall": wall / students,
            "cpu": children / students}


# ---------------------------------------------------------------------------- capacity

NODES = [(8, 32), (16, 64)]  # vCPU, GB
RESERVED = 0.1  # of a node's memory for Kubernetes, the system and the hub's own pods
CLASS_MINUTES = 90


def capacity(kernel_mb: float, server_mb: float, lab_cpu: float, grade_s: float) -> dict:
    """Each student's guarantee and limit, and students per node. The guarantee is a server
    and one kernel at its largest (rounded up to 64 MB); the limit leaves room for a second
    notebook open (two largest kernels); the CPU guarantee twice the largest lab's CPU seconds
    spread over a class's minutes (at least 0.05), the limit one CPU (the kernels compute on
    one thread). nbgrader autogrades one submission after another, whatever the node."""
    guarantee = 64 * math.ceil((server_mb + kernel_mb) / 64)
    limit = 64 * math.ceil((server_mb + 2 * kernel_mb) / 64)
    cpu_guarantee = max(0.05, math.ceil(2 * lab_cpu / (CLASS_MINUTES * 60) * 100) / 100)
    rows = []
    for vcpu, gb in NODES:
        by_memory = int(gb * 1024 * (1 - RESERVED) // guarantee)
        by_cpu = int(vcpu / cpu_guarantee)
        rows.append({"node": f"{vcpu} vCPU / {gb} GB", "students": min(by_memory, by_cpu),
                     "by_memory": by_memory, "by_cpu": by_cpu,
                     "grading_minutes_200": 200 * grade_s / 60})
    return {"guarantee_mb": guarantee, "limit_mb": limit, "cpu_guarantee": cpu_guarantee,
            "cpu_limit": 1, "nodes": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        default=sorted((REPO / "notebooks").glob("0*.ipynb")))
    parser.add_argument("--modes", default="fused,reference")
    parser.add_argument("--cells", action="store_true", help="the cells that add most memory")
    parser.add_argument("--hub-students", type=int, default=4)
    parser.add_argument("--grader-students", type=int, default=4)
    parser.add_argument("--grader-assignment", default="05_exercises")
    parser.add_argument("--skip-hub", action="store_true")
    parser.add_argument("--skip-grader", action="store_true")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args()
    modes = args.modes.split(",")
    unknown = set(modes) - set(MODES)
    if unknown:
        parser.error(f"--modes: {', '.join(sorted(unknown))}: not one of {', '.join(MODES)}")
    for path in args.notebooks:
        if not path.is_file():
            parser.error(f"{path}: no such notebook")
    print(f"bench_class: {machine()}")
    found: dict[str, Any] = {"machine": machine(),
                             "kernels": kernels(args.notebooks, modes, args.cells)}
    if not args.skip_hub:
        found["hub"] = hub(args.hub_students)
    if not args.skip_grader:
        found["grader"] = grader(args.grader_students, args.grader_assignment)
    ends = [f["end"] / MB for f in found["kernels"].values()]
    labs = [f["cpu"] for f in found["kernels"].values() if f["notebook"][:2] in ("05", "06",
                                                                                   "07")]
    server = found.get("hub", {}).get("server", 0) / MB or 170  # the hand measure
    grade = found.get("grader", {}).get("wall", 0.0)
    found["capacity"] = plan = capacity(max(ends), server, max(labs, default=0.0), grade)
    print(f"\ncapacity: a server {server:.0f} MB and its largest kernel {max(ends):.0f} MB; "
          f"guarantee {plan['guarantee_mb']} MB, limit {plan['limit_mb']} MB, CPU "
          f"{plan['cpu_guarantee']} to {plan['cpu_limit']}")
    print(table([[n["node"], str(n["students"]), str(n["by_memory"]), str(n["by_cpu"]),
                  f"{n['grading_minutes_200']:.0f} min"] for n in plan["nodes"]],
                ["node", "students", "by memory", "by CPU", "grading 200 submissions"]))
    if args.json:
        args.json.write_text(json.dumps(found, indent=1, default=str))


if __name__ == "__main__":
    main()
