"""The loss over a grid: the coordinates of a line or plane of weight settings, wide enough
for the paths on it (:func:`grid_limits`), and the mean loss at each point
(:class:`Landscape`, made by :func:`landscape`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..arguments import check_grid, check_limits
from .evaluation import LossEvaluator
from .geometry import DescentPath, Plane

__all__ = ["Landscape", "evaluate_grid", "grid_limits", "landscape"]

# Grid points per axis by default: a smooth curve, and contours fine enough to follow.
RESOLUTION_1D = 201
RESOLUTION_2D = 50


def grid_limits(plane: Plane, paths: Sequence[DescentPath], margin: float = 0.2
                ) -> tuple[tuple[float, float], ...]:
    """Per axis, a range that shows every path point (with a ``margin`` of its extent on
    each side), the marked points and, for directions, at least [-1, 1] (Li et al.'s
    range: one filter norm each way). Non-finite points (a run that blew up) are left out.

    >>> plane = Plane(np.zeros(1), np.eye(1), ("w",), "weights")
    >>> path = DescentPath("p", np.arange(2), np.array([[0.0], [10.0]]), np.ones(2), np.zeros(2))
    >>> grid_limits(plane, [path])
    ((-2.0, 12.0),)
    """
    limits = []
    for axis in range(plane.dims):
        values = [p.coords[:, axis] for p in paths if len(p)]
        values.append(np.array([m[axis] for m in plane.marks.values()]))
        if plane.kind in ("random", "directions"):
            values.append(np.array([-1.0, 1.0]))
        points = np.concatenate(values) if values else np.empty(0)
        points = points[np.isfinite(points)]
        if not len(points):
            points = np.array([-1.0, 1.0])
        lo, hi = float(points.min()), float(points.max())
        pad = margin * (hi - lo)
        if pad <= 1e-12 * max(1.0, abs(lo), abs(hi)):  # one point: a window around it
            pad = max(1.0, 0.5 * abs(lo))
        limits.append((lo - pad, hi + pad))
    return tuple(limits)


# ------------------------------------------------------------------------------ the grid


@dataclass(frozen=True, eq=False)
class Landscape:
    """The loss over a grid of a plane, and paths on it.

    ``grid`` holds the coordinates along each axis; ``loss`` is (n,) for a line and
    (n2, n1) for a plane (``loss[j, i]`` at ``(grid[0][i], grid[1][j])``, as matplotlib's
    contour wants it). ``loss_name`` names the loss variable.
    """

    plane: Plane
    grid: tuple[np.ndarray, ...]
    loss: np.ndarray
    paths: tuple[DescentPath, ...]
    loss_name: str = "loss"

    @property
    def dims(self) -> int:
        return self.plane.dims

    @property
    def limits(self) -> tuple[tuple[float, float], ...]:
        return tuple((float(g[0]), float(g[-1])) for g in self.grid)

    def contains(self, paths: Sequence[DescentPath]) -> bool:
        """Whether every finite point of ``paths`` lies inside the grid."""
        for path in paths:
            for axis, (lo, hi) in enumerate(self.limits):
                c = path.coords[:, axis]
                c = c[np.isfinite(c)]
                if len(c) and (c.min() < lo or c.max() > hi):
                    return False
        return True

    def with_paths(self, paths: Sequence[DescentPath]) -> Landscape:
        """The same grid with other paths (the live panel redraws the path, not the grid)."""
        return replace(self, paths=tuple(paths))

    def minimum(self) -> tuple[tuple[float, ...], float]:
        """The grid point of least loss: its coordinates and its loss (NaN-free points)."""
        loss = np.where(np.isfinite(self.loss), self.loss, np.inf)
        index = np.unravel_index(int(np.argmin(loss)), loss.shape)
        coords = tuple(float(self.grid[axis][index[-1 - axis]]) for axis in range(self.dims))
        return coords, float(self.loss[index])


def evaluate_grid(evaluator: LossEvaluator, plane: Plane,
                  limits: Sequence[tuple[float, float]], resolution: int
                  ) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """The coordinates along each axis and the loss at every grid point."""
    grid = tuple(np.linspace(lo, hi, resolution) for lo, hi in limits)
    if plane.dims == 1:
        return grid, evaluator.plane_losses(plane, grid[0][:, None])
    a, b = np.meshgrid(grid[0], grid[1])  # (n2, n1): row j is b = grid[1][j]
    coords = np.column_stack([a.ravel(), b.ravel()])
    return grid, evaluator.plane_losses(plane, coords).reshape(a.shape)


def landscape(evaluator: LossEvaluator, plane: Plane, paths: Sequence[DescentPath] = (), *,
              resolution: int | None = None,
              limits: Sequence[tuple[float, float]] | tuple[float, float] | None = None
              ) -> Landscape:
    """The loss on a grid over ``plane`` wide enough for ``paths`` (or over ``limits``: one
    (low, high) for every axis, or one per axis), ``resolution`` points per axis.

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> from tenflang_nb.core.landscape.geometry import plane_for
    >>> from tenflang_nb.core.program import parse
    >>> ev = LossEvaluator(parse(SEED_EXAMPLE), {"x": np.array([1.0]), "y": np.array([0.5])},
    ...                    1, ["w"])
    >>> land = landscape(ev, plane_for(ev.layout, {"w": 0.0}), limits=(-1, 1), resolution=3)
    >>> land.grid[0].tolist(), land.loss.round(4).tolist(), land.minimum()
    ([-1.0, 0.0, 1.0], [0.0534, 0.0, 0.0534], ((0.0,), 0.0))
    """
    n = check_grid(resolution, plane.dims, RESOLUTION_1D if plane.dims == 1 else RESOLUTION_2D)
    chosen = check_limits(limits, plane.dims) or grid_limits(plane, paths)
    grid, loss = evaluate_grid(evaluator, plane, chosen, n)
    return Landscape(plane, grid, loss, tuple(paths), evaluator.loss)
