"""Finite differences: the oracle every gradient is checked against.

The numeric derivative is a central difference of the *loss*, computed by running the shape
program itself with one weight component nudged up and down; it shares no derivative rule,
folding or fan-out bookkeeping with the GCP. :func:`check_gradients` compares the two for
every weight component; the tests and ``model.gradcheck`` use it.

>>> fd_gradient(lambda w: float(np.sum(w ** 2)), np.array([1.0, -2.0])).round(6)
array([ 2., -4.])
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import TenFlangError
from .lexical import adjoint_name
from .plan import Plan
from .program import Program

__all__ = ["GradRow", "agreement", "central_difference", "check_gradients", "disagreeing",
           "fd_gradient"]

Loss = Callable[[np.ndarray], float]  # the loss with one variable set to the given value


def central_difference(loss: Loss, at: np.ndarray, index: tuple[int, ...], eps: float = 1e-6,
                       relative: bool = False) -> float:
    """d loss / d at[index] as ``(loss(at + h) - loss(at - h)) / (2h)``.

    ``relative`` scales the step to ``eps * max(1, |at[index]|)``; the quotient divides by
    the step actually taken, which rounding may make differ from ``2h``.
    """
    _check_eps(eps)
    at = np.asarray(at, dtype=np.float64)
    h = eps * max(1.0, abs(float(at[index]))) if relative else eps
    up, down = at.copy(), at.copy()
    up[index] += h
    down[index] -= h
    return (loss(up) - loss(down)) / float(up[index] - down[index])


def _check_eps(eps: float) -> None:
    if not (isinstance(eps, int | float) and np.isfinite(eps) and eps > 0):
        raise TenFlangError.at(f"eps (the finite-difference step) must be a number > 0, "
                               f"not {eps!r}")


def fd_gradient(loss: Loss, at: np.ndarray, eps: float = 1e-6, relative: bool = False
                ) -> np.ndarray:
    """Every component of d loss / d at by :func:`central_difference`."""
    at = np.asarray(at, dtype=np.float64)
    grad = np.zeros(at.shape)
    for index in np.ndindex(at.shape):
        grad[index] = central_difference(loss, at, index, eps, relative)
    return grad


def agreement(analytic: float, numeric: float, rtol: float, atol: float) -> tuple[float, bool]:
    """(relative error, whether they agree: within ``rtol`` relatively or ``atol`` absolutely).

    >>> agreement(1.0, 3.0, rtol=1e-4, atol=0.0), agreement(2.0, 2.0, rtol=1e-4, atol=0.0)
    ((0.5, False), (0.0, True))
    """
    diff = abs(analytic - numeric)
    scale = abs(analytic) + abs(numeric)
    rel = diff / scale if scale > 0 else 0.0
    return rel, bool(rel <= rtol or diff <= atol)


@dataclass(frozen=True)
class GradRow:
    """One weight component: the GCP's mean gradient against the central difference."""

    weight: str  # ``w`` or ``W[0, 1]``
    gcp: float
    numeric: float
    rel_error: float
    ok: bool


def check_gradients(program: Program, gcp_program: Program, loss: str,
                    data: Mapping[str, Any], n: int, weights: Mapping[str, Any], *,
                    eps: float = 1e-6, rtol: float = 1e-4, atol: float = 1e-7,
                    max_components: int = 20) -> tuple[list[GradRow], int]:
    """Compare the GCP's mean gradient over ``n`` examples with central differences of the
    shape program's mean loss, for at most ``max_components`` entries of each weight.

    Returns the rows and how many tensor entries were left unchecked.
    """
    _check_eps(eps)
    bound = {**data, **weights}
    gradients = Plan(gcp_program).means(bound, n, [adjoint_name(loss, w) for w in weights])
    loss_run = Plan(program).bind(bound, n)
    rows: list[GradRow] = []
    skipped = 0
    with np.errstate(all="ignore"):
        for w, value in weights.items():
            g = gradients[adjoint_name(loss, w)]
            base = np.array(value, dtype=float)
            mean_grad = np.zeros(base.shape) if g is None else g

            def mean_loss(x: np.ndarray, w: str = w) -> float:
                loss_run.set(w, x)
                loss_run.run()
                mean = loss_run.mean(loss)
                return float("nan") if mean is None else float(mean)

            indices = list(itertools.islice(np.ndindex(base.shape), max_components))
            skipped += base.size - len(indices)
            for index in indices:
                numeric = central_difference(mean_loss, base, index, eps)
                analytic = float(mean_grad[index])
                rel, ok = agreement(analytic, numeric, rtol, atol)
                label = w if not index else f"{w}[{', '.join(map(str, index))}]"
                rows.append(GradRow(label, analytic, numeric, rel, ok))
            loss_run.set(w, base)
    return rows, skipped


def disagreeing(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The weights with a component whose gradient disagrees, in order (``W`` for its
    component ``W[0, 1]``), from rows as ``dataclasses.asdict`` gives :class:`GradRow` s.

    >>> disagreeing([{"weight": "W[0, 1]", "ok": False}, {"weight": "b", "ok": True},
    ...              {"weight": "W[1, 0]", "ok": False}])
    ['W']
    """
    names = [row["weight"].split("[")[0] for row in rows if not row["ok"]]
    return list(dict.fromkeys(names))
