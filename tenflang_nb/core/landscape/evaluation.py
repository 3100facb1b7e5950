"""The batched evaluation of a loss landscape: the mean loss at many weight settings.

:class:`LossEvaluator` binds the training data to a plan of the program's forward pass (only
what the loss needs) once; then many settings share each pass: ``stack`` settings side by
side on the example axis (the data repeated, each example row with its own weights), as many
as fit in a memory budget, so a small model's whole grid is a few passes. A model too large
for that (a copy of every weight per example) runs one pass per setting, still without
binding anything again; over a plane, the lines that are affine in the plane's coordinates
(a first layer ``x W1 + b1``) are then computed three times for the whole grid, not once per
point (:class:`_Folded`). ``benchmarks/bench_landscape.py`` measures these against a plain
loop over the grid points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from .. import fused, ops
from ..bound import BoundProgram, Instruction
from ..boundcalls import line_call
from ..engines import REFERENCE, BoundRun
from ..errors import TenFlangError
from ..plan import Plan, Run
from ..program import Program
from ..train import GradientDescent, single_threaded_blas
from .geometry import Layout, Plane

__all__ = ["LossEvaluator"]

# One pass over a stack of settings: about this many example rows (measured on the seed
# example, XOR and small_net: 16k-64k rows run the 2,500 settings of a 50 x 50 grid in 1-2 ms;
# a plain loop takes 50-150 ms) ...
STACK_ROWS = 32_768
# ... and at most this many floats bound per pass (every value of the forward pass, weights
# included, once per row): 32 MB. The digits model needs 2,600 floats per row, so its 1,797
# examples never stack: one pass per setting.
STACK_FLOATS = 4_000_000



class LossEvaluator:
    """The mean loss of ``program`` over a data set at many weight settings.

    ``data`` maps each data input to its values over the ``n`` examples (as a trainer holds
    them); ``weights`` names the weights (in the order of the flat vectors given to
    :meth:`losses`). ``program`` may be a shape program or a GCP: only what the loss needs
    runs. ``stack`` fixes how many settings share a pass (default: as many as fit, see the
    module docstring; 1 is a plain pass per setting). ``engine``: as training's (a pass of a
    large data set on the fused engine takes bounded memory; see ``fused.bind``).

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> from tenflang_nb.core.program import parse
    >>> ev = LossEvaluator(parse(SEED_EXAMPLE), {"x": np.array([1.0, 2.0]),
    ...                    "y": np.array([0.5, 0.5])}, 2, ["w"])
    >>> ev.losses(np.array([[0.0], [1.0]])).round(4).tolist()
    [0.0, 0.0992]
    """

    def __init__(self, program: Program, data: Mapping[str, np.ndarray], n: int,
                 weights: Sequence[str], loss: str | None = None, *,
                 stack: int | None = None, engine: str = "auto") -> None:
        self.program = program
        self.engine = engine
        self.loss = loss if loss is not None else program.loss
        self.n = n
        self.layout = Layout({w: program.shapes[w] for w in weights})
        self.plan = Plan(program, targets=[self.loss])
        self.data = {k: np.asarray(v) for k, v in data.items() if k in self.plan.given}
        per_row = sum(math.prod(program.shapes[v]) for v in
                      [*self.plan.given, *(d.target for d in self.plan.defines)])
        fits = STACK_FLOATS // max(1, n * per_row)
        self.stack = stack if stack is not None else max(1, min(STACK_ROWS // n, fits))
        self._runs: dict[int, BoundRun] = {}
        self._plain: Run | None = None

    @classmethod
    def of(cls, trainer: GradientDescent, *, stack: int | None = None) -> LossEvaluator:
        """The loss a trainer descends, over its whole training set."""
        return cls(trainer.gcp_program, trainer.data, trainer.n, list(trainer.grad_names),
                   trainer.loss_name, stack=stack, engine=trainer.settings.engine)

    def release(self) -> None:
        """Let go of the bound runs (each holds the data repeated once per setting of a
        pass, and every line's values for them: 1 MB for XOR's 900-setting grid), which the
        training panel's landscape kept for as long as the kernel lived (issue 26); the next
        pass binds them again."""
        self._runs.clear()
        self._plain = None

    def _run(self, size: int) -> BoundRun:
        """A run bound to the data for ``size`` settings side by side (bound once)."""
        run = self._runs.get(size)
        if run is None:
            zeros = {w: np.zeros(s) for w, s in self.layout.shapes.items()}
            if size == 1:
                bound = {**self.data, **zeros}
            else:  # the data repeated; each row its own copy of the weights
                rows = size * self.n
                bound = {k: np.tile(v, (size,) + (1,) * (v.ndim - 1))
                         for k, v in self.data.items()}
                bound.update({w: np.zeros((rows, *s)) for w, s in self.layout.shapes.items()})
            # one setting a pass: the run averages the loss itself (the fused engine never
            # stores it per example); stacked settings read each setting's rows of it
            run = fused.bind(self.plan, bound, size * self.n,
                             means=[self.loss] if size == 1 else None, engine=self.engine,
                             keep=() if size == 1 else [self.loss])
            if run.values.get(self.loss) is None:
                raise TenFlangError.at(
                    f"the loss '{self.loss}' is null: the data lacks a value it needs",
                    file=self.program.file)
            self._runs[size] = run
        return run

    def losses(self, points: np.ndarray | Iterable[Mapping[str, object]]) -> np.ndarray:
        """The mean loss at each setting: ``points`` is a (K, P) array of flat weight vectors
        (see :class:`Layout`) or a sequence of weight dicts. NaN or inf where the loss is."""
        if isinstance(points, np.ndarray):
            flat = np.atleast_2d(np.asarray(points, dtype=float))
        else:
            flat = np.array([self.layout.flat(p) for p in points]).reshape(-1, self.layout.size)
        if flat.shape[1] != self.layout.size:
            raise ValueError(f"points have {flat.shape[1]} components, the weights "
                             f"{self.layout.size}")
        k = len(flat)
        out = np.empty(k)
        size = max(1, min(self.stack, k))
        run = self._run(size)
        mean = self._mean(run, size)
        n = self.n
        with single_threaded_blas(), np.errstate(all="ignore"):
            for start in range(0, k, size):
                chunk = flat[start:start + size]
                g = len(chunk)
                for name, where in self.layout.slices.items():
                    buffer = run.values.get(name)
                    if buffer is None:  # the loss does not depend on this weight
                        continue
                    shape = self.layout.shapes[name]
                    values = chunk[:, where].reshape((g, *shape))
                    if size == 1:
                        buffer[...] = values
                    else:  # rows [i n, (i + 1) n) hold setting i
                        buffer.reshape((size, n, *shape))[:g] = values[:, None]
                run.run()
                out[start:start + g] = mean()[:g]
        return out

    def _mean(self, run: BoundRun, size: int) -> Callable[[], np.ndarray]:
        """The mean loss of each of the ``size`` settings of the last pass of ``run``."""
        if size == 1 and self.loss in run.means:
            return lambda: np.atleast_1d(run.mean(self.loss))  # type: ignore[arg-type]
        loss = run.values[self.loss]
        assert loss is not None
        n = self.n
        if loss.shape[0] != size * n:  # depends on neither the weights nor the data
            return lambda: np.full(size, float(loss.reshape(-1)[0]))
        per_setting = loss.reshape(size, n)
        # the mean over each setting's examples as one product, as the trainer takes it
        weights = np.full(n, 1.0 / n)
        return lambda: per_setting @ weights

    def _reference(self) -> Run | None:
        """A reference run of one setting with every line's value in its buffer (what
        folding reads and writes), or None where that would take too much memory."""
        if self._plain is None:
            zeros = {w: np.zeros(s) for w, s in self.layout.shapes.items()}
            bound = {**self.data, **zeros}
            if fused.reference_bytes(self.plan, bound, self.n) > fused.CHUNK_OVER:
                return None
            self._plain = REFERENCE.bind(self.plan, bound, self.n, [], set())
        return self._plain

    def plane_losses(self, plane: Plane, coords: np.ndarray) -> np.ndarray:
        """The mean loss at ``plane.points(coords)`` for coordinates (K, k), a block of
        settings at a time (never all K weight vectors at once).

        When each setting has a pass of its own (a large model), the lines that are affine
        in the coordinates (``x W1`` with ``W1`` on the plane, and sums of such: see
        ``ops.Op.affine_in``) are computed once for the origin and once per axis, and each
        setting combines them instead of recomputing them: the first layer's matrix
        product, say, costs three products for the whole grid.
        """
        coords = np.asarray(coords, dtype=float).reshape(-1, plane.dims)
        if self.stack == 1 and len(coords) > plane.dims + 1:
            folded = _Folded.build(self, plane)
            if folded is not None:
                return folded.losses(coords)
        block = max(self.stack, 256)
        out = np.empty(len(coords))
        for start in range(0, len(coords), block):
            out[start:start + block] = self.losses(plane.points(coords[start:start + block]))
        return out


class _Folded:
    """One pass per setting, with the lines affine in the plane's coordinates folded: each
    such value is ``V0 + c1 V1 (+ c2 V2)``, its parts computed from passes at the origin
    and at one step along each axis. Built from the bound program of a reference run: its
    lines but the folded ones, as numpy calls over its buffers (by slot name)."""

    def __init__(self, evaluator: LossEvaluator, plane: Plane, run: Run, skip: set[str],
                 frontier: list[str], needed: list[str]) -> None:
        self.evaluator = evaluator
        self.plane = plane
        self.run = run
        self.calls = [line_call(line, run.values) for line in run.bound.instructions
                      if line.define.target not in skip]
        self.needed = needed  # the weights a remaining line reads
        self.frontier = frontier
        self.parts: dict[str, list[np.ndarray]] = {}
        self.scratch = {f: np.empty_like(run.values[f]) for f in frontier}  # type: ignore[arg-type]

    @staticmethod
    def build(evaluator: LossEvaluator, plane: Plane) -> _Folded | None:
        """The folded evaluation, or None when folding saves too little (or cannot be done)."""
        run = evaluator._reference()
        if run is None:
            return None
        layout = evaluator.layout
        moving = {w for w, where in layout.slices.items() if np.any(plane.axes[:, where])}
        status = {name: ("affine" if name in moving else "const")
                  for name in evaluator.plan.given}
        for d in evaluator.plan.defines:
            names = [a if isinstance(a, str) else None for a in d.args]
            varying = [i for i, a in enumerate(names) if a is not None and status[a] != "const"]
            if d.op is None:
                status[d.target] = status[names[0]] if names[0] is not None else "const"
            elif not varying:
                status[d.target] = "const"
            else:
                op = ops.OPS[d.op]
                affine = (all(status[str(names[i])] == "affine" for i in varying)
                          and set(varying) <= set(op.affine_in)
                          and (len(varying) == 1 or op.linear))
                status[d.target] = "affine" if affine else "varying"
        given = set(evaluator.plan.given)
        lines = {line.define.target: line for line in run.bound.instructions}
        skip = {d.target for d in evaluator.plan.defines
                if status[d.target] != "varying" and d.target in lines}
        frontier: set[str] = set()
        needed: set[str] = set()
        for d in evaluator.plan.defines:
            if status[d.target] == "varying":
                for a in d.variables():
                    if a in given:
                        needed.add(a)
                    elif status[a] == "affine":
                        frontier.add(a)
        if status[evaluator.loss] == "affine":
            frontier.add(evaluator.loss)
        frontier = {f for f in frontier if run.values.get(f) is not None and f not in given}
        # worth it when the lines skipped touch much more than rewriting the frontier does
        saved = sum(_work(run.bound, lines[name]) for name in skip)
        cost = (plane.dims + 1) * sum(run.values[f].size for f in frontier)  # type: ignore[union-attr]
        if not skip or saved <= 2 * cost:
            return None
        folded = _Folded(evaluator, plane, run, skip, sorted(frontier),
                         [w for w in layout.names if w in needed])
        return folded if folded._measure() else None

    def _set(self, flat: np.ndarray, names: Iterable[str]) -> None:
        layout = self.evaluator.layout
        for name in names:
            buffer = self.run.values.get(name)
            if buffer is not None:
                buffer[...] = flat[layout.slices[name]].reshape(layout.shapes[name])

    def _measure(self) -> bool:
        """Run at the origin and one step along each axis; keep each folded value's parts.
        False when a part is not finite (then differences would not be the value)."""
        plane = self.plane
        seen = []
        with single_threaded_blas(), np.errstate(all="ignore"):
            for point in [plane.origin, *(plane.origin + axis for axis in plane.axes)]:
                self._set(point, self.evaluator.layout.names)
                self.run.run()
                seen.append({f: np.array(self.run.values[f]) for f in self.frontier})
        for f in self.frontier:
            base = seen[0][f]
            self.parts[f] = [base, *(s[f] - base for s in seen[1:])]
            if not all(np.all(np.isfinite(p)) for p in self.parts[f]):
                return False
        return True

    def losses(self, coords: np.ndarray) -> np.ndarray:
        out = np.empty(len(coords))
        mean = self.evaluator._mean(self.run, 1)
        plane, values = self.plane, self.run.values
        with single_threaded_blas(), np.errstate(all="ignore"):
            for i, c in enumerate(coords):
                self._set(plane.origin + c @ plane.axes, self.needed)
                for f in self.frontier:
                    buffer, scratch = values[f], self.scratch[f]
                    base, *steps = self.parts[f]
                    np.multiply(steps[0], c[0], out=buffer)
                    buffer += base
                    for step, cj in zip(steps[1:], c[1:], strict=True):
                        np.multiply(step, cj, out=scratch)
                        buffer += scratch
                for call in self.calls:
                    call()
                out[i] = mean()[0]
        return out


def _work(bound: BoundProgram, line: Instruction) -> int:
    """How much a line touches: its rows times its largest operand or result per row (a
    matrix product's multiplications, an elementwise line's elements)."""
    slots = [bound.slots[s] for s in [line.out, *line.slots()]]
    return max(s.rows for s in slots) * max(math.prod(s.shape) for s in slots)
