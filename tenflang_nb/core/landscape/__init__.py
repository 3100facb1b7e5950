"""The loss landscape: the mean loss over a line or a plane of weight settings, with the path
of descent projected onto it.

Every picture of a loss landscape is a slice through weight space: the settings
``origin + a d1 (+ b d2)`` for a grid of coordinates ``a`` (and ``b``). What changes is the
slice (:class:`Plane`):

* one weight in all: the loss against ``w`` itself (``origin`` 0, ``d1`` = 1);
* two in all: contours over ``(w1, w2)``;
* more: a plane through the final weights, along two chosen weight components (coordinates
  are then those components' values) or along two random *filter-normalised* directions
  (Li et al., "Visualizing the Loss Landscape of Neural Nets", NeurIPS 2018), with a seed;
* or the line or plane through given settings (two or three minima, say).

The package: ``geometry`` (the flat layout of the weights, planes, directions, the path of
descent projected), ``evaluation`` (:class:`LossEvaluator`: the mean loss at many settings,
batched) and ``grid`` (:class:`Landscape`: the loss over a grid of a plane, with paths).
"""

from __future__ import annotations

from .evaluation import LossEvaluator
from .geometry import (
    DescentPath,
    Layout,
    Plane,
    filter_normalized,
    path_of,
    plane_for,
    plane_through,
)
from .grid import Landscape, evaluate_grid, grid_limits, landscape

__all__ = ["DescentPath", "Landscape", "Layout", "LossEvaluator", "Path", "Plane",
           "evaluate_grid", "filter_normalized", "grid_limits", "landscape", "path_of",
           "plane_for", "plane_through"]

Path = DescentPath  # the name it had (a path of descent, not a file's)
