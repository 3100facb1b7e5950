"""W1 and W2 timed whole-process, as a user runs them: ``tfweightcalc GCP DATA`` against a
Python script doing the same with PyTorch eager, jax.jit or numpy (``user_train.py``), each a
fresh process from its start to its exit: the interpreter's start-up, imports (numba's, when
the fused engine runs; PyTorch's, jax's), reading the data file, jax's compile, training and
writing the weights.

Every command of a workload runs once per round, in an order that turns each round (other
load on the machine then hits all of them alike), after one warm-up round that is not counted
(it also fills numba's cache for the CPU mode when it is empty). Each run's wall time is a
monotonic clock around the child; its CPU time is the kernel's accounting of the child and the
processes it waited for (``os.wait4``). The final weights of every contender are checked
against tenflang's before a time is printed. Every contender is held to one thread
(``user_train.py``; tenflang's trainer limits BLAS to one thread itself).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import workloads
from common import assert_same, seconds, table

BENCHMARKS = Path(__file__).resolve().parent
USER_SCRIPT = BENCHMARKS / "user_train.py"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@dataclass
class Command:
    """One contender of one workload: its command line and what its runs took."""

    label: str
    argv: list[str]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    weights: dict[str, np.ndarray] = field(default_factory=dict)


def tfweightcalc() -> str:
    """The ``tfweightcalc`` console script beside this interpreter (the package's venv)."""
    found = Path(sys.executable).with_name("tfweightcalc")
    if not found.exists():
        raise SystemExit(f"{found} is missing: install the package (pip install -e .)")
    return str(found)


def prepare(folder: Path) -> dict[str, dict[str, object]]:
    """W1's and W2's files in ``folder`` (GCP, data, starting weights) and their settings."""
    w1, w2 = workloads.w1(), workloads.w2()
    (folder / "w1_gcp.tf").write_text(w1.gcp.text)
    np.savez(folder / "w1.npz", **w1.data)
    np.savez(folder / "w2_start.npz", **w2.start)
    digits = workloads.EXAMPLE
    return {
        "W1": {"work": w1, "gcp": folder / "w1_gcp.tf", "data": folder / "w1.npz",
               "start": None, "options": ["--init", "zeros"]},
        "W2": {"work": w2, "gcp": digits / "gcp.tf", "data": digits / "digits.npz",
               "start": folder / "w2_start.npz", "options": ["--init", "auto", "--seed", "0"]},
    }


def commands(spec: dict[str, object], folder: Path, libraries: Sequence[str],
             engines: Sequence[str]) -> list[Command]:
    work = spec["work"]
    steps, lr = work.steps, work.lr  # type: ignore[attr-defined]
    found = []
    for engine in engines:
        out = folder / f"weights-{engine}.npz"
        argv = [tfweightcalc(), str(spec["gcp"]), str(spec["data"]), "--lr", repr(lr),
                "--tol", "0", "--max-iter", str(steps - 1), *spec["options"],  # type: ignore[misc]
                "-q", "-o", str(out)]
        if engine != "auto":
            argv += ["--engine", engine]
        label = "tfweightcalc" + ("" if engine == "auto" else f" --engine {engine}")
        found.append(Command(label, argv))
    for library in libraries:
        argv = [sys.executable, str(USER_SCRIPT), library, str(spec["data"]), str(steps),
                repr(lr)] + ([str(spec["start"])] if spec["start"] else [])
        found.append(Command({"torch": "PyTorch eager script", "jax": "jax.jit script",
                              "numpy": "numpy script"}[library], argv))
    return found


def run_once(command: Command, env: dict[str, str]) -> tuple[float, float, str]:
    """One run: wall seconds, CPU seconds (the child and what it waited for), its stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command.argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                 env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode:
            raise SystemExit(f"{command.label} failed ({child.returncode}): "
                             f"{err.read().decode()[-3000:]}")
        return wall, usage.ru_utime + usage.ru_stime, out.read().decode()


def read_weights(command: Command, stdout: str) -> dict[str, np.ndarray]:
    if command.argv[0].endswith("tfweightcalc"):
        with np.load(command.argv[command.argv.index("-o") + 1]) as saved:
            return {k: saved[k][0] for k in saved.files}  # one record: the example axis
    return {k: np.array(v) for k, v in json.loads(stdout.splitlines()[-1]).items()}


def measure(specs: dict[str, dict[str, object]], folder: Path, repeat: int, env: dict[str, str],
            libraries: Sequence[str], engines: Sequence[str]) -> dict[str, list[Command]]:
    env = {**os.environ, **ONE_THREAD, **env}
    found = {}
    for key, spec in specs.items():
        cmds = commands(spec, folder, libraries, engines)
        for turn in range(repeat + 1):  # the first round warms up (and fills numba's cache)
            order = cmds[turn % len(cmds):] + cmds[:turn % len(cmds)]
            for command in order:
                wall, cpu, stdout = run_once(command, env)
                command.weights = read_weights(command, stdout)
                if turn:
                    command.wall.append(wall)
                    command.cpu.append(cpu)
        for command in cmds:
            for name, value in cmds[0].weights.items():
                assert_same(command.weights[name], value, f"{key} {command.label} {name}",
                            rtol=1e-7, atol=1e-9)
        found[key] = cmds
    return found


def spread(values: list[float]) -> str:
    """Median and range: "1.23 s (1.10-1.50)"."""
    low, high = min(values), max(values)
    return f"{seconds(statistics.median(values))} ({seconds(low)}-{seconds(high)})"


def paired(a: Command, b: Command, what: str) -> float:
    """Median of the run-by-run ratios a / b (the two ran one after the other each round)."""
    x, y = getattr(a, what), getattr(b, what)
    return statistics.median(p / q for p, q in zip(x, y, strict=True))


def report(mode: str, found: dict[str, list[Command]], names: dict[str, str]
           ) -> tuple[str, list[str]]:
    """The table of one CPU mode and the targets' verdicts (tenflang's default engine against
    PyTorch eager: faster; against jax.jit: at most 1.3x)."""
    rows, verdicts = [], []
    for key, cmds in found.items():
        tf = cmds[0]
        by = {c.label: c for c in cmds}
        for c in cmds:
            ratio = "1.00" if c is tf else f"{paired(tf, c, 'wall'):.2f}"
            rows.append([f"{key} {mode}", c.label, spread(c.wall), spread(c.cpu), ratio,
                         "1.00" if c is tf else f"{paired(tf, c, 'cpu'):.2f}"])
        for label, target, rule in (("PyTorch eager script", "< 1", lambda r: r < 1),
                                    ("jax.jit script", "<= 1.3", lambda r: r <= 1.3)):
            if label in by:
                r = paired(tf, by[label], "wall")
                rc = paired(tf, by[label], "cpu")
                verdicts.append(f"{key} {mode} ({names[key]}): whole process, tfweightcalc / "
                                f"{label.removesuffix(' script')} = {r:.2f} wall, {rc:.2f} CPU "
                                f"(target {target}): {'met' if rule(r) else 'MISSED'}")
    text = table(rows, ["workload", "command", "wall: median (min-max)",
                        "CPU: median (min-max)", "tfweightcalc / this, wall",
                        "tfweightcalc / this, CPU"])
    return text, verdicts


def whole_process(repeat: int, modes: dict[str, dict[str, str]], libraries: Sequence[str],
                  engines: Sequence[str]) -> str:
    """The whole-process table of every CPU mode (``modes``: label -> environment)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="tenflang-whole-") as name:
        folder = Path(name)
        specs = prepare(folder)
        names = {k: s["work"].name for k, s in specs.items()}  # type: ignore[attr-defined]
        for mode, env in modes.items():
            load = os.getloadavg()
            found = measure(specs, folder, repeat, env, libraries, engines)
            text, verdicts = report(mode, found, names)
            after = os.getloadavg()
            out += [f"whole process, {mode}: {repeat} rounds after a warm-up, each command "
                    f"once a round in turn; load average {load[0]:.1f} before, "
                    f"{after[0]:.1f} after", text, "", *verdicts, ""]
    return "\n".join(out)
