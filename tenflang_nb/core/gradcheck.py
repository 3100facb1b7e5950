"""Finite differences: the oracle every gradient is checked against.

The numeric derivative is a central difference of the *loss*, computed by running the shape
program itself with one weight component nudged up and down; it shares no derivative rule,
folding or fan-out bookkeeping with the GCP. :func:`check_gradients` compares the two for
every weight component by the package's one tolerance rule (``core.agreement``); the tests
and ``model.gradcheck`` use it.

>>> fd_gradient(lambda w: float(np.sum(w ** 2)), np.array([1.0, -2.0])).round(6)
array([ 2., -4.])
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .agreement import entrywise_agreement
from .arguments import check_arguments
from .errors import TenFlangError
from .lexical import adjoint_name
from .plan import Plan
from .program import Program

__all__ = ["GradRow", "central_difference", "check_gradients", "disagreeing", "fd_gradient"]

Loss = Callable[[np.ndarray], float]  # the loss with one variable set to the given value


def central_difference(loss: Loss, at: np.ndarray, index: tuple[int, ...], eps: float = 1e-6,
                       relative: bool = False) -> float:
    """d loss / d at[index] as ``(loss(at + h) - loss(at - h)) / (2h)``.

    ``relative`` scales the step to ``eps * max(1, |at[index]|)``; the quotient divides by
    the step actually taken, which rounding may make differ from ``2h``.
    """
    (eps,) = check_arguments(eps=eps)
    at = np.asarray(at, dtype=np.float64)
    h = eps * max(1.0, abs(float(at[index]))) if relative else eps
    up, down = at.copy(), at.copy()
    up[index] += h
    down[index] -= h
    step = float(up[index] - down[index])
    if not step:  # at 1e30 a step of 1e-6 is no step: the quotient would be 0 / 0
        raise TenFlangError.at(
            f"a step of eps = {eps:g} does not change a value of {float(at[index]):g}, so "
            "it gives no finite difference there", hint="give a larger eps")
    return (loss(up) - loss(down)) / step


def fd_gradient(loss: Loss, at: np.ndarray, eps: float = 1e-6, relative: bool = False
                ) -> np.ndarray:
    """Every component of d loss / d at by :func:`central_difference`."""
    at = np.asarray(at, dtype=np.float64)
    grad = np.zeros(at.shape)
    for index in np.ndindex(at.shape):
        grad[index] = central_difference(loss, at, index, eps, relative)
    return grad


@dataclass(frozen=True)
class GradRow:
    """One weight component: the GCP's mean gradient against the central difference."""

    weight: str  # ``w`` or ``W[0, 1]``
    gcp: float
    numeric: float
    rel_error: float  # inf when either side is NaN or infinite
    ok: bool
    problem: str = ""  # why it cannot agree: which side is NaN or infinite


def check_gradients(program: Program, gcp_program: Program, loss: str,
                    data: Mapping[str, Any], n: int, weights: Mapping[str, Any], *,
                    eps: float = 1e-6, rtol: float = 1e-4, atol: float = 1e-7,
                    max_components: int = 20) -> tuple[list[GradRow], int]:
    """Compare the GCP's mean gradient over ``n`` examples with central differences of the
    shape program's mean loss, for at most ``max_components`` entries of each weight, by
    :func:`~tenflang_nb.core.agreement.entrywise_agreement` (the central difference is the
    reference: within ``rtol`` of it, or ``atol`` where it is about 0; a row's ``rel_error``
    is at most ``rtol`` exactly when it agrees).

    Returns the rows and how many tensor entries were left unchecked.
    """
    eps, rtol, atol, max_components = check_arguments(eps=eps, rtol=rtol, atol=atol,
                                                      max_components=max_components)
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

            indices = list(itertools.islice(np.ndindex(base.shape), min(max_components,
                                                                        base.size)))
            skipped += base.size - len(indices)
            for index in indices:
                numeric = central_difference(mean_loss, base, index, eps)
                analytic = float(mean_grad[index])
                found = entrywise_agreement(analytic, numeric, rtol=rtol, atol=atol)
                label = w if not index else f"{w}[{', '.join(map(str, index))}]"
                problem = found.reason("the GCP's gradient", "the central difference") \
                    if found.nonfinite else None
                rows.append(GradRow(label, analytic, numeric, found.error, found.ok,
                                    problem or ""))
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
