"""The fused engine: a bound program run in one pass over cache-sized blocks of examples.

The reference engine (``plan.Run``) runs a GCP one numpy call per line, each a pass over all N
examples into a buffer of its own. :class:`FusedRun` runs the same bound program
(``bound.BoundProgram``, made by ``Plan.bind``: NULLs, constants, aliases, batch-mean rules
decided, by slot name) but cuts its lines into stages (``fusedplan``): runs of elementwise
lines, with the sums, softmaxes and batch means around them, go through ``fusedvm``'s block
loop in one pass; matrix products stay numpy calls (BLAS). Only values read outside their
group are stored.

For many examples, the examples are taken a *chunk* at a time (:data:`CHUNK_BYTES` of
buffers), so memory beyond the data stays bounded however large N is; the batch means are
accumulated over the chunks.

:func:`bind` chooses the engine (``TrainSettings.engine``): ``reference``; ``fused`` (numba
loaded, and compiled the first time on a machine, ~10 s, then cached on disk); ``auto`` (the
default): the reference engine for small batches, where a pass costs less than the fused engine
saves; the fused engine for batches whose reference buffers would not fit in
:data:`CHUNK_OVER`, which it takes in chunks (waiting for numba if need be); in between, the
reference engine, and once a run has spent :data:`AUTO_AFTER` seconds on it, numba loading in a
background thread, then the fused engine; with one CPU (``machine.cpus``), the reference engine
throughout unless numba is loaded already (loading it would take the run's own CPU), and in a
notebook kernel (:func:`load_in_background`). Where numba is missing or its loops fail to
compile or to pass a self-test, every choice is the reference engine (:func:`status` says why):
``auto`` silently, ``fused`` with an :class:`EngineWarning`. Where numba caches the loops (a
read-only install too): ``fusedcache``; ``python -m tenflang_nb.core.fused --fill-cache`` fills
that cache.
"""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

import numpy as np

from . import fusedcache
from .bound import BoundProgram
from .engines import REFERENCE, BoundRun
from .fusedplan import Storage
from .fusedstages import Part
from .machine import cpus
from .plan import ARENA_ALIGN, Array, Plan, Run
from .settings import ENGINES, SETTINGS
from .syntax import Define

__all__ = ["ENGINES", "EngineWarning", "FusedEngine", "FusedRun", "bind", "load",
           "load_in_background", "reference_bytes", "status"]

# auto: the reference engine below this many numbers per pass (~1 ms of numpy calls): less
# than the engine saves a pass, and numba is not even imported (nothing interactive waits)
AUTO_NUMBERS = 1_000_000
# auto, in between: numba is loaded in the background once the passes of one run have taken
# this long on the reference engine (a longer training pays the load back; a shorter one, a
# live panel's first seconds, never competes with it)
AUTO_AFTER = 1.0
# the fused engine binds the examples a chunk at a time (bounded memory beyond the data) when
# one binding would take more than CHUNK_OVER; its chunks then take about CHUNK_BYTES
CHUNK_OVER = 128 * 2**20
CHUNK_BYTES = 16 * 2**20
MIN_CHUNK = 256


# ---------------------------------------------------------------------------- loading numba

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"vm": None, "why": "not loaded yet", "thread": None}
_BACKGROUND = {"allowed": True}  # see load_in_background


def load_in_background(allowed: bool) -> None:
    """Whether ``auto`` may load numba in the background for a batch in between (see the
    module). A notebook kernel says no (``notebook.memory``, issue 26): numba with its loops
    holds 80-115 MB in a kernel for as long as it lives, which a class's hub reserves for
    every student, against a few seconds saved in a tutorial's training. ``auto`` then loads
    numba only where it would take the examples in chunks; ``engine="fused"`` still does."""
    _BACKGROUND["allowed"] = allowed


def _wide_vectors() -> None:
    """Ask numba for 512-bit vectors on an AVX-512 CPU (1.6x faster exp and tanh loops).

    LLVM keeps to 256-bit vectors there by default (``prefer-256-bit``: older Xeons lowered
    their clock for wide vectors). Only when numba is not imported yet and its CPU settings
    are the defaults: it then applies to numba's other users in this process too.
    """
    if "numba" in sys.modules or any(k in os.environ for k in ("NUMBA_CPU_NAME",
                                                                "NUMBA_CPU_FEATURES")):
        return
    from llvmlite import binding

    features = binding.get_host_cpu_features()
    if features.get("avx512f"):
        os.environ["NUMBA_CPU_FEATURES"] = features.flatten() + ",-prefer-256-bit"


def _import_vm() -> ModuleType:
    """fusedvm, compiled (or loaded from numba's cache) and checked against numpy."""
    _wide_vectors()
    import numba

    if numba.config.DISABLE_JIT:
        raise RuntimeError("numba's JIT is disabled (NUMBA_DISABLE_JIT)")
    with fusedcache.using(fusedcache.choose()):
        from . import fusedvm as vm

    x = np.array([-800.0, -3.0, -1e-9, 0.0, 0.5, 2.0, 30.0, 800.0])
    checks = [(vm.Unary.EXP, np.exp), (vm.Unary.TANH, np.tanh),
              (vm.Unary.LN, lambda a: np.log(np.abs(a) + 1))]
    for op, reference in checks:
        source = np.abs(x) + 1 if op == vm.Unary.LN else x
        out = vm.elementwise(op, source)
        with np.errstate(all="ignore"):
            expected = reference(x)
        if not np.allclose(out, expected, rtol=1e-14, atol=0.0):
            raise RuntimeError(f"the compiled loops disagree with numpy (op {op})")
    return vm


def load(wait: bool = True) -> ModuleType | None:
    """The compiled block loop, or None where it is unavailable (see :func:`status`).

    ``wait=False`` never blocks: it starts loading in a background thread (compiling, if
    need be, in a child process) and returns None until that has finished.
    """
    with _LOCK:
        if _STATE["vm"] is not None or _STATE["why"] != "not loaded yet":
            return _STATE["vm"]
        thread = _STATE["thread"]
        if thread is None:
            thread = _STATE["thread"] = threading.Thread(
                target=_load, args=(not wait,), name="tenflang-fused-engine", daemon=True)
            thread.start()
    if wait:
        thread.join()
        return _STATE["vm"]
    return None


def _compile_elsewhere() -> None:
    """Fill numba's disk cache from a child process (nothing when it is already filled).

    Compiling (~10 s, the first time on a machine) holds the GIL most of the time: in a
    background thread of this process it would slow a live training loop or a notebook for
    that long; in a child it only takes the other core. Then loading from the cache here is
    short. Any failure here only means compiling here after all.
    """
    # the child must compile for what this process will load. Asking here costs nothing in
    # the end: llvmlite's binding (55 MB) is part of what importing numba (81 MB) loads, which
    # this process does right after, to load the loops from the cache.
    _wide_vectors()
    if not fusedcache.choose().enabled:
        return  # nothing to fill: each process compiles in memory
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    code = "from tenflang_nb.core import fused; fused._import_vm()"
    try:
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       timeout=600, check=False)
    except (OSError, subprocess.SubprocessError):
        pass


def _load(elsewhere: bool = False) -> None:
    try:
        if elsewhere and "numba" not in sys.modules:
            _compile_elsewhere()
        vm, why = _import_vm(), ""
    except Exception as err:  # ImportError, numba's errors, a failed self-test: reference
        vm, why = None, f"{type(err).__name__}: {err}"
    with _LOCK:
        _STATE["vm"], _STATE["why"] = vm, why


def status() -> str:
    """Whether the fused engine can run here: "ready", "loading", or why not (and why the
    last binding that fell back to the reference engine did)."""
    if _STATE["vm"] is not None:
        fallback = _STATE.get("fallback")
        return f"ready ({fusedcache.choose().why})" + (
            f" (a binding fell back to the reference: {fallback})" if fallback else "")
    if _STATE["thread"] is not None and _STATE["why"] == "not loaded yet":
        return "loading"
    return _STATE["why"]


# ---------------------------------------------------------------------------- choosing

def _row_numbers(plan: Plan, data: Mapping[str, Array | float | None], n: int) -> int:
    """Numbers the reference engine stores per example: a buffer for each value given per
    example and each line computed from one."""
    shapes = plan.program.shapes
    varies = {k for k in plan.given if n != 1 and np.shape(data.get(k)) == (n, *shapes[k])}
    for d in plan.defines:
        if any(a in varies for a in d.variables()):
            varies.add(d.target)
    return sum(math.prod(shapes[name]) for name in varies)


def reference_bytes(plan: Plan, data: Mapping[str, Array | float | None], n: int) -> int:
    """About how much memory the reference engine's buffers take for ``n`` examples.

    >>> from tenflang_nb.core.program import parse
    >>> plan = Plan(parse("declare input x\\ndeclare weight w\\ndeclare output y\\n"
    ...                   "define y = mul x w\\n"))
    >>> reference_bytes(plan, {"x": np.zeros(1000), "w": 2.0}, 1000)  # x and y, not w
    16000
    """
    return 8 * n * _row_numbers(plan, data, n)


def bind(plan: Plan, data: Mapping[str, Array | float | None], n: int,
         means: list[str] | None = None, *, engine: str = "auto",
         keep: Iterable[str] | None = None) -> BoundRun:
    """``plan`` bound to ``data`` for ``n`` examples on the chosen engine (see the module),
    through its ``engines.Engine`` interface. ``keep``: the names whose per-example values
    the caller reads with ``value()`` after a run (default: the plan's results); the fused
    engine stores only those (and what it needs).

    >>> from tenflang_nb.core.program import parse
    >>> plan = Plan(parse("declare input x\\ndeclare output y\\ndefine y = mul x 2\\n"))
    >>> run = bind(plan, {"x": np.array([1.0, 2.5])}, 2)  # small: the reference engine
    >>> run.run(); type(run).__name__, run.value("y")
    ('Run', array([2., 5.]))
    """
    engine = SETTINGS["engine"].check(engine)
    kept = set(plan.results if keep is None else keep)
    numbers = reference_bytes(plan, data, n) // 8
    if engine == "reference":
        return REFERENCE.bind(plan, data, n, means or [], kept)
    # auto waits for numba (instead of starting with the reference engine) where the fused
    # engine would take the examples in chunks: a switch later would hold the reference's
    # buffers and numba at once (2,000,000 rows of the seed model: 464 MB, against 335 MB on
    # the fused engine from the start)
    if engine == "fused" or numbers * 8 > CHUNK_OVER:
        vm = load(wait=True)
        if vm is None and engine == "fused":
            _unavailable(status())
    elif numbers < AUTO_NUMBERS:
        return REFERENCE.bind(plan, data, n, means or [], kept)
    else:
        vm = _STATE["vm"]
        if vm is None and not _BACKGROUND["allowed"]:
            return REFERENCE.bind(plan, data, n, means or [], kept)
        if vm is None and cpus() < 2:
            # one CPU: loading numba beside the run would take its time from the run (the
            # seed model, 100,000 rows, 1,000 steps: 1.3 s against 1.0 s on the reference)
            return REFERENCE.bind(plan, data, n, means or [], kept)
        if vm is None:
            return _Deferred(REFERENCE.bind(plan, data, n, means or [], kept), kept)
    if vm is not None:
        try:
            return FusedEngine(vm).bind(plan, data, n, means or [], kept)
        except Exception as err:  # never an error the reference engine would not give
            _fell_back(err)
            if engine == "fused":
                _unavailable(f"this program: {_STATE['fallback']}")
    return REFERENCE.bind(plan, data, n, means or [], kept)


def _fell_back(err: Exception) -> None:
    """A binding the fused engine refused runs on the reference engine; :func:`status` says
    why. With ``TENFLANG_FUSED_DEBUG=1`` (the tests set it) a schedule that failed its
    verification (``fusedverify``: a bug of the engine) is raised instead."""
    from .fusedverify import ScheduleError

    if isinstance(err, ScheduleError) and os.environ.get("TENFLANG_FUSED_DEBUG") == "1":
        raise err
    _STATE["fallback"] = f"{type(err).__name__}: {err}"


class EngineWarning(RuntimeWarning):
    """``engine="fused"`` asked for where the fused engine cannot run: the reference runs."""


def _unavailable(why: str) -> None:
    warnings.warn(EngineWarning(f"the fused engine cannot run here ({why}): the reference "
                                "engine runs instead (the same results, slower)"),
                  stacklevel=3)


class _Deferred:
    """A reference run that starts loading numba in the background once it has run for
    :data:`AUTO_AFTER` seconds (a short training never does), and becomes a fused one at the
    first ``run()`` after that has finished (the same buffers: callers holding them see no
    change)."""

    def __init__(self, run: Run, keep: set[str]) -> None:
        self.current: Run | FusedRun = run
        self._keep: set[str] | None = keep  # None: adopting failed, stay on the reference
        self._spent = 0.0  # seconds of passes so far

    def run(self) -> None:
        if isinstance(self.current, Run) and self._keep is not None:
            if _STATE["vm"] is not None:
                try:
                    self.current = FusedRun.adopt(self.current, self._keep, _STATE["vm"])
                except Exception as err:  # stays on the reference engine
                    _fell_back(err)
                    self._keep = None
            elif self._spent >= AUTO_AFTER:
                load(wait=False)
            else:
                start = time.perf_counter()
                self.current.run()
                self._spent += time.perf_counter() - start
                return
        self.current.run()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.current, name)


# ---------------------------------------------------------------------------- the run

class FusedEngine:
    """The fused engine (``engines.Engine``) with the compiled block loop ``vm``."""

    def __init__(self, vm: ModuleType) -> None:
        self.vm = vm

    def bind(self, plan: Plan, data: Mapping[str, Array | float | None], n: int,
             means: list[str], keep: set[str]) -> FusedRun:
        return FusedRun(plan, data, n, means, keep, self.vm)


class FusedRun:
    """A plan bound to one batch on the fused engine: ``engines.BoundRun``, as ``plan.Run``
    (``values``, ``set``, ``run``, ``value``, ``mean``, ``finite``, ``first_nonfinite``)."""

    def __init__(self, plan: Plan, data: Mapping[str, Array | float | None], n: int,
                 means: list[str], keep: set[str], vm: ModuleType) -> None:
        self.plan, self.n, self.vm, self.keep = plan, n, vm, keep
        # the loop reads flat buffers: C order (a pandas column block may come in F order)
        data = {k: np.ascontiguousarray(v, dtype=np.float64) if isinstance(v, np.ndarray) else v
                for k, v in data.items()}
        row = 8 * max(1, _row_numbers(plan, data, n))
        count = n // max(MIN_CHUNK, CHUNK_BYTES // row)  # chunks of at least MIN_CHUNK rows
        if n * row <= CHUNK_OVER or count <= 1:
            self.data = None
            self._setup([(plan.bind(data, n, means), [0])], None)
            return
        # chunks of two sizes at most (never of 1 row: it could not tell a per-example value
        # from a shared one); the data copied once, as ``Run`` does, into one arena
        shapes = plan.program.shapes
        per_example = [k for k in plan.given if data.get(k) is not None
                       and np.shape(data[k]) == (n, *shapes[k])]
        extents: dict[str, tuple[int, int]] = {}
        total = 0
        for name in per_example:
            extents[name] = (total, n * math.prod(shapes[name]))
            total += -(-max(1, extents[name][1]) // ARENA_ALIGN) * ARENA_ALIGN
        arena = np.empty(max(1, total))
        whole: dict[str, np.ndarray] = {}
        for name, (start, length) in extents.items():
            whole[name] = arena[start:start + length].reshape((n, *shapes[name]))
            whole[name][...] = data[name]
        self.data: Storage | None = Storage(arena, extents)
        starts = [round(i * n / count) for i in range(count + 1)]
        by_size: dict[int, list[int]] = {}
        for a, b in itertools.pairwise(starts):
            by_size.setdefault(b - a, []).append(a)
        runs = []
        for rows, offsets in by_size.items():
            first = {k: (whole[k][:rows] if k in whole else v) for k, v in data.items()}
            runs.append((plan.bind(first, rows, means), offsets))
        self._setup(runs, whole)

    @classmethod
    def adopt(cls, run: Run, keep: set[str], vm: ModuleType) -> FusedRun:
        """The fused engine over a bound reference run (its arena kept)."""
        self = cls.__new__(cls)
        self.plan, self.n, self.vm, self.keep = run.plan, run.n, vm, keep
        self.data = None
        self._setup([(run, [0])], None)
        return self

    def _setup(self, runs: list[tuple[Run, list[int]]], whole: dict[str, np.ndarray] | None
               ) -> None:
        self.whole = whole
        self.parts = [Part(run, offsets, self.keep, whole, self.vm, data=self.data)
                      for run, offsets in runs]
        first = self.parts[0].run
        self.bound: BoundProgram = first.bound  # (of the first chunk, when in chunks)
        self.values: dict[str, Array | None] = {**first.values, **(whole or {})}
        self.means: dict[str, Array | None] = first.means if whole is None else {
            k: None if v is None else np.zeros(v.shape) for k, v in first.means.items()}
        self._complete = False  # every buffer of the first part's run holds this run's values
        self._checking: dict[frozenset[str], list[Part] | None] = {}  # see finite()

    # -- engines.BoundRun

    def set(self, name: str, value: Array | float) -> None:
        """Overwrite a bound input (a weight) in place; its shape must not change."""
        if self.whole is not None and name in self.whole:
            self.whole[name][...] = value
            return
        for part in self.parts:
            part.run.set(name, value)

    def run(self) -> None:
        """One pass over the batch (a chunk at a time when it was bound in chunks)."""
        self._complete = False
        with np.errstate(all="ignore"):
            if self.whole is None:
                self.parts[0].execute(self.vm, 0, None)
                return
            for total in self.means.values():
                if total is not None:
                    total[...] = 0.0
            first = self.parts[0].run
            for part in self.parts:
                for name in self.plan.given:  # callers write weights into the first's buffers
                    mine, theirs = part.run.values.get(name), first.values.get(name)
                    if name not in self.whole and mine is not None and mine is not theirs:
                        mine[...] = theirs
                for start in part.offsets:
                    part.execute(self.vm, start, self.whole)
                    for name, total in self.means.items():
                        if total is not None:
                            total += part.run.means[name] * (part.run.n / self.n)  # type: ignore[operator]

    def value(self, name: str) -> Array | None:
        """The value of ``name`` for every example: shape (N,)+shape, or (1,)+shape (as
        ``plan.Run``; a value the fused pass did not store is recomputed by the reference
        engine's lines)."""
        part = self.parts[0]
        v = part.run.values.get(name)
        if v is None:
            return None
        if self.whole is not None and name in self.whole:
            return self.whole[name]
        if v.shape[0] != part.run.n or name in self.plan.given:  # shared, or given
            return np.broadcast_to(v, (self.n, *v.shape[1:])) if v.shape[0] != self.n else v
        if self.whole is None:
            if part.run.bound.names.get(name) not in part.stored and not self._complete:
                with np.errstate(all="ignore"):
                    part.run.run()
                self._complete = True
            return v
        out = np.empty((self.n, *v.shape[1:]))
        for p in self.parts:
            for start in p.offsets:
                p.reference(start, self.whole)
                out[start:start + p.run.n] = p.run.values[name]
        return out

    def mean(self, name: str) -> Array | None:
        """Mean over the batch of ``name``, as of the last :meth:`run`."""
        if name in self.means:
            result = self.means[name]
            return None if result is None else np.array(result)
        v = self.value(name)
        return None if v is None else v.mean(axis=0)

    def finite(self, only: set[str] | None = None) -> bool:
        """Whether every value of the last pass (of the lines defining ``only``) is finite.

        The fused pass stores few of them: a second fused pass sums each one in the block
        loop while it is computed (training asks every 32nd step: one pass in 32 more). A sum
        is NaN or infinite when a value is, or when finite values overflow: then the
        reference engine's lines compute them again to decide (exact, slower).
        """
        names = {d.target for d in self.plan.defines} if only is None else set(only)
        key = frozenset(names)
        if key not in self._checking:
            try:
                self._checking[key] = [Part(p.run, p.offsets, self.keep, self.whole, self.vm,
                                             names, self.data) for p in self.parts]
            except Exception as err:  # never an error the reference engine would not give
                _fell_back(err)
                self._checking[key] = None
        if self._checking[key] is None:
            return self._finite_by_reference(only)
        with np.errstate(all="ignore"):
            for part in self._checking[key]:
                for start in part.offsets:
                    part.execute(self.vm, start, self.whole)
                    if not part.finite():
                        return self._finite_by_reference(only)
        return True

    def _finite_by_reference(self, only: set[str] | None) -> bool:
        for part in self.parts:
            for start in part.offsets:
                part.reference(start, self.whole)
                if not part.run.finite(only):
                    return False
        self._complete = self.whole is None
        return True

    def first_nonfinite(self, only: set[str] | None = None) -> Define | None:
        """The first line (in program order) whose value is NaN or infinite for some
        example, recomputed by the reference engine (diagnostics)."""
        order = {d.target: i for i, d in enumerate(self.plan.defines)}
        found: list[Define] = []
        for part in self.parts:
            for start in part.offsets:
                if self.whole is not None:
                    part.reference(start, self.whole, compute=False)
                bad = part.run.first_nonfinite(only)
                if bad is not None:
                    found.append(bad)
        return min(found, key=lambda d: order[d.target], default=None)


# ---------------------------------------------------------------------------- filling the cache

def main(argv: list[str] | None = None) -> int:
    """``python -m tenflang_nb.core.fused --fill-cache``: compile the loops into numba's cache
    (see ``fusedcache``), and say where and whether the engine is ready."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tenflang_nb.core.fused",
        description="Fill numba's cache of the fused engine's loops. Run it as the user who "
                    "installed the package (root for a system-wide or image install, say when "
                    "the image is built, on the kind of CPU it will run on): then users who "
                    "cannot write the package's folder load the loops in about a second "
                    "instead of compiling them for 10-20 s in each process.")
    parser.add_argument("--fill-cache", action="store_true", required=True,
                        help="compile the loops (or load them, when the cache is filled)")
    parser.parse_args(argv)
    start = time.perf_counter()
    vm = load(wait=True)
    print(f"fused engine: {status()} ({time.perf_counter() - start:.1f} s)")
    return 0 if vm is not None else 1


if __name__ == "__main__":
    sys.exit(main())
