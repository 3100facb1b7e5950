"""The curvature of the mean loss, from the Hessian-vector program (``hvp.py``): ``H v`` on a
batch of examples, the largest eigenvalue of ``H`` by power iteration, and Newton's method
with the Newton step solved by conjugate gradients. None of them ever forms ``H``: each needs
only products ``H v``, one run of the Hessian-vector program each, planned and bound once
as training binds the GCP (the batch mean of its outputs).

>>> from tenflang_nb.core import api
>>> shape = api.parse("declare input x\\ndeclare weight w\\ndeclare loss L\\n"
...                   "define L = mul w w\\n")
>>> c = api.curvature(shape, {"x": [1.0, 2.0]}, {"w": 3.0})
>>> c.gradient(), c.hvp({"w": 1.0})
((9.0, {'w': 6.0}), {'w': 2.0})
>>> c.top_eigenvalue().value
2.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .arguments import Rule, check_arguments, check_values
from .errors import TenFlangError
from .formatting import fmt_number
from .fused import bind
from .landscape.geometry import Layout
from .lexical import direction_name, tangent_name
from .plan import Plan
from .program import Program, ancestors
from .settings import SETTINGS
from .train import (
    Record,
    TrainResult,
    Weights,
    gcp_weights,
    nonfinite_error,
    single_threaded_blas,
)

__all__ = ["Curvature", "Eigen"]

# power iteration's tol (relative to the eigenvalue: 0 would never settle); Newton's method
# takes the training settings' tol
POWER_TOL = Rule("tol", float, "a finite number > 0", lambda v: v > 0)


@dataclass(frozen=True)
class Eigen:
    """The largest eigenvalue of the Hessian (``value``), a unit eigenvector (``vector``, as
    weights) and how many products ``H v`` power iteration took (``products``)."""

    value: float
    vector: Weights
    products: int

    @property
    def lr_limit(self) -> float:
        """``2 / value``: gradient descent's steps shrink along the eigenvector only with a
        learning rate below it (infinite when the curvature is not positive)."""
        return 2.0 / self.value if self.value > 0 else math.inf


class Curvature:
    """A Hessian-vector program bound to ``n`` examples (``data``: each input's column) at
    ``weights``: the mean loss's gradient, ``H v``, the top eigenvalue and Newton's method.

    ``products`` counts the runs of the program so far (each computes one ``H v``, and the
    loss and gradient with it). ``engine``: as training's (``fused.bind``; only the means
    are read, so on the fused engine a large batch takes bounded memory).
    """

    def __init__(self, hvp_program: Program, data: Mapping[str, np.ndarray], n: int,
                 weights: Weights, *, engine: str = "auto") -> None:
        self.program = hvp_program
        self.loss, self.gradients = gcp_weights(hvp_program)
        self.directions = {w: direction_name(w) for w in self.gradients}
        self.hv_names = {w: tangent_name(g) for w, g in self.gradients.items()}
        missing = [v for v in self.directions.values() if v not in hvp_program.decls]
        if missing:
            raise TenFlangError.at(
                f"not a Hessian-vector program: it takes no direction '{missing[0]}'",
                file=hvp_program.file, hint="make it with: tfcompiler --hvp SHAPE.tf")
        self.layout = Layout({w: hvp_program.shapes[w] for w in self.gradients})
        self.n = n
        self.products = 0
        # what the loss, the gradients and H v are computed from: a NaN or an infinity on the
        # way (z = -inf into a saturated logistic) can leave them finite, and wrong
        self._needed: set[str] = set()
        for target in (self.loss, *self.gradients.values(), *self.hv_names.values()):
            self._needed |= ancestors(hvp_program, target)
        zero = {v: np.zeros(self.layout.shapes[w]) for w, v in self.directions.items()}
        self.weights: Weights = {}
        start = self.layout.weights(self.layout.flat(self._known(weights, "weights")))
        self._run = bind(
            Plan(hvp_program), {**data, **start, **zero}, n,
            means=[self.loss, *self.gradients.values(), *self.hv_names.values()],
            engine=engine, keep=())
        if self._run.values.get(self.loss) is None:
            raise TenFlangError.at(f"the loss '{self.loss}' is null: the data lacks a value it "
                                   "needs", file=hvp_program.file)
        self.move_to(start)

    # ------------------------------------------------------------------ one run

    def move_to(self, weights: Weights) -> None:
        """Evaluate at ``weights`` from now on (every weight given, with its shape)."""
        flat = self.layout.flat(self._known(weights, "weights"))
        self.weights = self.layout.weights(flat)
        for w, value in self.weights.items():
            self._run.set(w, value)

    def _known(self, values: object, what: str) -> Mapping[str, object]:
        if not isinstance(values, Mapping):
            raise TenFlangError.at(
                f"give the {what} as a value for each weight, {{name: value}}, not a "
                f"{type(values).__name__}", file=self.program.file)
        unknown = [k for k in values if k not in self.layout.shapes]
        if unknown:
            raise TenFlangError.at(f"'{unknown[0]}' in the {what} is not a weight (the "
                                   f"weights: {', '.join(self.layout.names)})",
                                   file=self.program.file)
        for name, value in values.items():  # Newton from w = inf would "converge" at once
            check_values(f"{what}[{name!r}]", value)
        return values

    def _pass(self, direction: np.ndarray, where: str, check: bool = False
              ) -> tuple[float, np.ndarray, np.ndarray]:
        """One run with the direction ``direction`` (flat): the mean loss, gradient and H v.

        ``check``: every value they are computed from must be finite too (as training checks
        at the step that ends a run); a pass at new weights checks, power iteration's first.
        """
        run = self._run
        for w, value in self.layout.weights(direction).items():
            run.set(self.directions[w], value)
        with np.errstate(all="ignore"):
            run.run()
        self.products += 1
        loss = run.mean(self.loss)
        means = {w: run.mean(name) for w, name in self.gradients.items()}
        hv = {w: run.mean(name) for w, name in self.hv_names.items()}
        values = [loss, *means.values(), *hv.values()]
        if any(v is None or not np.all(np.isfinite(v)) for v in values) or (
                check and not run.finite(self._needed)):
            targets = [self.loss, *self.gradients.values(), *self.hv_names.values()]
            raise nonfinite_error(run, targets, "the loss, a gradient or H v", where,
                                  "check the data and the weights")
        return float(loss), self.layout.flat(means), self.layout.flat(hv)  # type: ignore[arg-type]

    def gradient(self) -> tuple[float, Weights]:
        """The mean loss and its gradient at the current weights."""
        with single_threaded_blas():
            loss, g, _ = self._pass(np.zeros(self.layout.size), "at these weights", True)
        return loss, self.layout.weights(g)

    def hvp(self, v: Weights) -> Weights:
        """``H v`` for a direction ``v`` (a value for every weight, with its shape), H the
        Hessian of the mean loss at the current weights."""
        flat = self.layout.flat(self._known(v, "direction"))
        with single_threaded_blas():
            return self.layout.weights(self._pass(flat, "for this direction", True)[2])

    def hessian(self) -> np.ndarray:
        """The whole Hessian of the mean loss at the current weights, one ``H v`` per weight
        number (over the weights flattened in their order; for small models: n products).

        >>> from tenflang_nb.core import api
        >>> text = ("declare input x\\ndeclare weight a\\ndeclare weight b\\ndeclare loss L\\n"
        ...         "declare intvar e\\ndefine e = mul a x\\ndefine L = mul e b\\n")
        >>> api.curvature(text, {"x": [2.0]}, {"a": 1.0, "b": 1.0}).hessian()  # L = a x b
        array([[0., 2.],
               [2., 0.]])
        """
        with single_threaded_blas():
            columns = [self._pass(e, "for this direction", True)[2]
                       for e in np.eye(self.layout.size)]
        return np.column_stack(columns)

    # ------------------------------------------------------------------ power iteration

    def top_eigenvalue(self, iterations: int = 300, tol: float = 1e-6, seed: int = 0) -> Eigen:
        """The largest eigenvalue of H by power iteration on ``H v`` from a random start
        (drawn with ``seed``): at most ``iterations`` products, until the residual
        ``|H x - value x|`` is at most ``tol * |value|`` (then H has an eigenvalue within
        that distance of ``value``). Power iteration finds the eigenvalue largest in size;
        should it be negative, a second run (as many products at most) on ``H - value I``
        finds the largest.

        Raises a :class:`TenFlangError` when it does not settle within ``iterations``.
        """
        iterations, seed = check_arguments(iterations=iterations, seed=seed)
        tol = POWER_TOL.check(tol)
        start = self.products
        rng = np.random.default_rng(seed)
        with single_threaded_blas():
            value, x = self._power(rng.normal(size=self.layout.size), 0.0, iterations, tol)
            if value < 0:  # the largest in size; H - value I has the largest one on top
                shifted, x = self._power(rng.normal(size=self.layout.size), value, iterations,
                                         tol)
                value += shifted
        return Eigen(value, self.layout.weights(x), self.products - start)

    def _power(self, x: np.ndarray, shift: float, iterations: int, tol: float
               ) -> tuple[float, np.ndarray]:
        x = x / np.linalg.norm(x)
        value = residual = math.nan
        for k in range(iterations):
            y = self._pass(x, f"at power iteration {k + 1}", k == 0)[2] - shift * x
            value = float(x @ y)
            size = float(np.linalg.norm(y))
            residual = float(np.linalg.norm(y - value * x))
            if size == 0.0 or residual <= tol * abs(value):
                return value, x if size == 0.0 else y / size
            x = y / size
        raise TenFlangError.at(
            f"power iteration did not settle in {iterations} products H v: the estimate "
            f"{fmt_number(value + shift, 6)} still has a residual |H x - value x| = "
            f"{fmt_number(residual, 2)} > tol * |value| = {fmt_number(tol * abs(value), 2)}",
            file=self.program.file,
            hint="give more iterations=, or a larger tol= (two eigenvalues of equal size and "
                 "opposite signs never settle)")

    # ------------------------------------------------------------------ Newton's method

    def newton(self, max_iter: int = 20, tol: float = SETTINGS["tol"].default,
               cg_tol: float = 1e-10, cg_iterations: int | None = None) -> TrainResult:
        """Newton's method from the current weights: each step solves ``H d = -g`` by
        conjugate gradients on ``H v`` (at most ``cg_iterations`` products, default one per
        weight component, until the residual is ``cg_tol`` times ``|g|``; for one weight that
        is ``d = -g / h``) and moves to ``w + d``, until ``|g| <= tol`` or ``max_iter``
        steps, as gradient descent stops. Returns the run as training does (``history``).

        Raises a :class:`TenFlangError` where the Hessian is not positive definite (the
        Newton step would not go downhill).
        """
        max_iter, tol = SETTINGS["max_iter"].check(max_iter), SETTINGS["tol"].check(tol)
        cg_tol, cg_iterations = check_arguments(cg_tol=cg_tol, cg_iterations=cg_iterations)
        cg_iterations = self.layout.size if cg_iterations is None else cg_iterations
        history: list[Record] = []
        w = self.layout.flat(self.weights)
        with single_threaded_blas():
            converged = self._newton(w, history, max_iter, tol, cg_iterations, cg_tol)
        return TrainResult(dict(self.weights), history, converged, history[-1].iteration)

    def _newton(self, w: np.ndarray, history: list[Record], max_iter: int, tol: float,
                cg_iterations: int, cg_tol: float) -> bool:
        for step in range(max_iter + 1):
            loss, g, _ = self._pass(np.zeros(self.layout.size), f"at Newton step {step}",
                                     True)
            norm = float(np.linalg.norm(g))
            history.append(Record(step, loss, norm, self.layout.weights(w)))
            if norm <= tol:
                return True
            if step == max_iter:
                break
            w = w + self._solve(-g, cg_iterations, cg_tol, step)
            if not np.all(np.isfinite(w)):
                raise TenFlangError.at(f"Newton step {step + 1} overflowed: a weight became NaN "
                                       "or infinite", file=self.program.file)
            self.move_to(self.layout.weights(w))
        return False

    def _solve(self, b: np.ndarray, iterations: int, tol: float, step: int) -> np.ndarray:
        """``x`` with ``H x = b`` by conjugate gradients (H symmetric positive definite)."""
        x = np.zeros_like(b)
        r = b.copy()
        p = r.copy()
        rr = float(r @ r)
        goal = tol * math.sqrt(rr)
        for _ in range(iterations):
            hp = self._pass(p, f"at Newton step {step}")[2]
            curvature = float(p @ hp)
            if curvature <= 0:
                raise TenFlangError.at(
                    f"Newton step {step + 1}: the Hessian is not positive definite at these "
                    f"weights (along a direction p, p.Hp = {fmt_number(curvature, 3)} <= 0), "
                    "so the Newton step would not go downhill", file=self.program.file,
                    hint="start nearer a minimum, or train by gradient descent")
            alpha = rr / curvature
            x += alpha * p
            r -= alpha * hp
            rr, previous = float(r @ r), rr
            if math.sqrt(rr) <= goal:
                break
            p = r + (rr / previous) * p
        return x
