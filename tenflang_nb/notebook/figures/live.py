"""The training panel's loss landscape, redrawn while it trains: :class:`LiveLandscape`
(which grid to show for a run, computed again only when the path leaves it) on a
:class:`LiveFigure` (the grid drawn once, the path redrawn over it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg

from ...core.errors import TenFlangError
from ...core.landscape import (
    DescentPath,
    Landscape,
    Layout,
    LossEvaluator,
    Plane,
    grid_limits,
    path_of,
    plane_for,
)
from ...core.landscape import landscape as compute_landscape
from ...core.train import GradientDescent
from .canvas import drawn_png
from .landscape import describe_plane, landscape_figure

__all__ = ["LiveFigure", "LiveLandscape"]


class LiveFigure:
    """A landscape drawn once, its paths redrawn over it: each live redraw of the training
    panel costs the path, not the contours and axes (which are kept as pixels).

    >>> import numpy as np
    >>> from tenflang_nb.core.landscape import Landscape, DescentPath, Plane
    >>> plane = Plane(np.zeros(1), np.eye(1), ("w",), "weights")
    >>> path = DescentPath("run", np.arange(1), np.zeros((1, 1)), np.ones(1), np.zeros(1))
    >>> live = LiveFigure(Landscape(plane, (np.linspace(-1, 1, 3),), np.ones(3), (path,)))
    >>> live.png([path])[:4]
    b'\\x89PNG'
    """

    def __init__(self, land: Landscape, **options: Any) -> None:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            self.figure = landscape_figure(land, **options)
        self._background: Any = None

    def _animated(self) -> list[Any]:
        return [a for artists in self.figure.path_artists for a in artists] + [
            self.figure.note]

    def png(self, paths: Sequence[DescentPath]) -> bytes:
        """The figure with ``paths`` drawn on it, as PNG bytes."""
        fig = self.figure
        canvas = fig.canvas
        assert isinstance(canvas, FigureCanvasAgg)
        if self._background is None:
            for artist in self._animated():
                artist.set_animated(True)  # left out of canvas.draw(): drawn on top below
            canvas.draw()
            self._background = canvas.copy_from_bbox(fig.bbox)
        with np.errstate(over="ignore", invalid="ignore"):
            fig.set_paths(paths)
            canvas.restore_region(self._background)
            for artist in self._animated():
                fig.draw_artist(artist)
        return drawn_png(fig)


class LiveLandscape:
    """What the panel's landscape shows, kept between redraws: the grid is computed once per
    run, again only when the path leaves it (with room to grow) or, for a slice through the
    weights, through the final weights when the run ends; each redraw only projects the
    path anew. The slice is ``model.landscape()``'s default (seed 0), at a coarser grid.

    >>> from tenflang_nb.core.api import compile, parse, trainer
    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> t = trainer(compile(parse(SEED_EXAMPLE)), {"x": [1.0, 2.0], "y": [0.9, 0.6]},
    ...             max_iter=5)
    >>> live = LiveLandscape()
    >>> _ = t.run(); png, _seconds = live.png(t, run=0, final=True)
    >>> png[:4], live.grids, live.landscape.plane.labels
    (b'\x89PNG', 1, ('w',))
    """

    resolution = 30  # per axis: 900 settings, a third of a second for the digits model
    margin = 0.5  # of the path's extent on each side while it is still growing

    def __init__(self) -> None:
        self.trainer: GradientDescent | None = None
        self.evaluator: LossEvaluator | None = None
        self.landscape: Landscape | None = None
        self.figure: LiveFigure | None = None  # the grid drawn, paths redrawn on it
        self._drawn_as: dict[str, Any] = {}  # the figure's options: to draw it again
        self.run: object = None
        self.grids = 0  # grids computed (tests check that a redraw does not recompute)

    def release(self) -> None:
        """Let go of the figure and its pixels (a run has ended and its picture is kept as
        PNG bytes), and of the evaluator's bound runs; the grid's losses stay, so a later
        redraw draws it again without computing it."""
        self.figure = None
        if self.evaluator is not None:
            self.evaluator.release()

    def png(self, trainer: GradientDescent, run: object, final: bool, *,
            label: str = "descent", beside: tuple[str, GradientDescent] | None = None
            ) -> tuple[bytes, float]:
        """The landscape image for ``trainer`` now, and the seconds spent on a new grid.
        ``run`` changes when a run starts over; ``final`` once it has ended. ``label`` names
        the trainer's path; ``beside`` (a label and a trainer: the true GCP's run beside an
        edited one) adds a second path, in its own colour (the loss curve's)."""
        if trainer is not self.trainer or self.evaluator is None:
            self.trainer, self.evaluator, self.landscape = trainer, LossEvaluator.of(trainer), None
        if run != self.run:
            self.run, self.landscape = run, None
        evaluator = self.evaluator
        layout = evaluator.layout
        weights = trainer.weights
        land = self.landscape
        runs = [(label, trainer), *([beside] if beside is not None else [])]

        def paths(plane: Plane) -> list[DescentPath]:
            return [path_of(plane, layout, t.history, name, current=t.weights)
                    for name, t in runs]

        if land is not None and self._drawn_as:
            now = paths(land.plane)
            moved = (final and land.plane.kind == "random"
                     and not np.array_equal(land.plane.origin, layout.flat(weights)))
            if land.contains(now) and not moved and len(now) == len(land.paths):
                self.landscape = land.with_paths(now)
                if self.figure is None:
                    self.figure = LiveFigure(land, **self._drawn_as)
                return self.figure.png(now), 0.0
        started = time.perf_counter()
        plane = self._plane(layout, weights)
        now = paths(plane)
        limits = grid_limits(plane, now, margin=0.2 if final else self.margin)
        land = compute_landscape(evaluator, plane, now, resolution=self.resolution,
                                 limits=limits)
        self.grids += 1
        seconds = time.perf_counter() - started
        self.landscape = land
        title = describe_plane(plane)
        if not final:  # the slice goes through the weights of now, not through final ones
            now = (f"the weights of iteration {trainer.iterations}" if trainer.iterations
                   else "the initial weights")
            title = title.replace("the final weights", now)
        self._drawn_as = {"title": title, "width": 4.6, "height": 3.5 if land.dims == 1 else 3.7}
        self.figure = LiveFigure(land, **self._drawn_as)
        return self.figure.png(land.paths), seconds

    @staticmethod
    def _plane(layout: Layout, weights: dict[str, object]) -> Plane:
        try:
            return plane_for(layout, weights)
        except TenFlangError:
            # every weight 0 (a zero start): no filter-normalised direction; show the first
            # two components instead
            return plane_for(layout, weights, [layout.label(0), layout.label(1)])
