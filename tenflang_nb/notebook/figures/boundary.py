"""The decision boundary drawn: a model's output over the plane of its two inputs as a
heatmap, the line where it crosses between the two classes, and the data's points coloured by
class (training points as circles, test points as triangles), like TensorFlow Playground.

:func:`boundary_figure` is what ``model.boundary()`` returns; :class:`LiveBoundary` is the
training panel's, drawn once and then only its changing parts redrawn (the heatmap, the line,
the points on top and the title), as ``live.LiveFigure`` does for the landscape.

>>> import numpy as np
>>> from tenflang_nb.core.boundary import Boundary, PlaneInputs, Points
>>> plane = PlaneInputs(("x",), "o", "y")
>>> grid = np.linspace(-1, 1, 3)
>>> b = Boundary(plane, grid, grid, np.add.outer(grid, grid) / 2 + 0.5,
...              Points(np.array([[-1.0, -1.0], [1.0, 1.0]]), np.array([0.0, 1.0]),
...                     np.array([0.0, 1.0])), None, (0.0, 1.0))
>>> fig = boundary_figure(b)
>>> fig.axes[0].get_xlabel(), fig.axes[0].get_title()
('x[0]', 'output o · training accuracy 100%')
"""

from __future__ import annotations

from typing import Any

import contourpy
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import Normalize
from matplotlib.image import AxesImage
from matplotlib.text import Text

from ...core.boundary import Boundary, BoundaryEvaluator
from .canvas import PngFigure, drawn_png
from .words import FigureWords, boundary_words

__all__ = ["BoundaryFigure", "LiveBoundary", "boundary_figure", "describe_boundary"]

POINT_MARGIN = 0.35  # the points' labels, as far in from the scale's ends (a share of it)
CMAP = "RdBu"  # class 0 (low outputs) red, class 1 (high) blue, white between


class BoundaryFigure(PngFigure):
    """A decision-boundary figure that shows itself in a notebook as a PNG (a plain
    ``Figure`` on an Agg canvas, as ``LandscapeFigure``). ``boundary`` holds the numbers it
    draws; :meth:`set_boundary` redraws the changing parts for another :class:`Boundary` on
    the same grid."""

    boundary: Boundary
    units: np.ndarray  # what one unit of each axis stands for (see _units)
    image: AxesImage
    line: LineCollection
    train_points: PathCollection
    test_points: PathCollection | None
    title: Text

    def set_boundary(self, b: Boundary) -> None:
        """Show ``b`` (on the grid the figure was made with)."""
        self.boundary = b
        with np.errstate(invalid="ignore", over="ignore"):
            self.image.set_data(np.ma.masked_invalid(b.output))
            self.line.set_segments([line / self.units for line in _crossing(b)])
        self.title.set_text(describe_boundary(b))

    @property
    def animated(self) -> list[Any]:
        """What changes between redraws, in drawing order (the points stay on top)."""
        points = [self.train_points] + ([self.test_points] if self.test_points else [])
        return [self.image, self.line, *points, self.title]

    def words(self) -> FigureWords:
        return boundary_words(self.boundary, self.title.get_text())

    def __repr__(self) -> str:
        b = self.boundary
        return (f"<TenFlang decision boundary: {len(b.xs)} x {len(b.ys)} grid, "
                f"{describe_boundary(b)}>")


def describe_boundary(b: Boundary) -> str:
    """The figure's title: what is drawn, and the accuracy where there are two classes (with
    the markers of the training and the test points: the title is the legend, which no
    corner of the plane would keep clear of points).

    >>> import numpy as np
    >>> from tenflang_nb.core.boundary import Boundary, PlaneInputs, Points
    >>> pts = Points(np.zeros((4, 2)), np.array([0.0, 1.0, 1.0, 0.0]), np.array([.2, .9, .4, .1]))
    >>> z = np.zeros((2, 2))
    >>> describe_boundary(Boundary(PlaneInputs(("a", "b"), "o", "y"), z[0], z[0], z, pts, pts,
    ...                   (0.0, 1.0)))
    'output o · accuracy: training ● 75%, test ▲ 75%'
    """
    title = f"output {b.plane.output}"
    train, test = b.train_accuracy, b.test_accuracy
    if train is None:
        return title
    if test is None:
        return f"{title} · training accuracy {train:.0%}"
    return f"{title} · accuracy: training ● {train:.0%}, test ▲ {test:.0%}"


def _crossing(b: Boundary) -> list[np.ndarray]:
    """The decision boundary: where the output crosses the level between the classes."""
    if b.level is None or not np.any(np.isfinite(b.output)):
        return []
    z = np.ma.masked_invalid(b.output)
    lines = contourpy.contour_generator(b.xs, b.ys, z).lines(b.level)
    return [np.asarray(line) for line in lines if len(line) > 1]


# matplotlib's tick locator overflows on limits near the largest float (1.1e308: "arange:
# cannot compute length"): an axis reaching beyond this is drawn in a unit of a power of ten
_FAR = 1e300


def _units(b: Boundary) -> np.ndarray:
    """Each axis's unit: 1, or a power of ten where the plane reaches beyond ``_FAR``.

    >>> from tenflang_nb.core.boundary import Boundary, PlaneInputs, Points
    >>> far = np.array([-1.7e308, 1.7e308])
    >>> _units(Boundary(PlaneInputs(("x",), "o", None), far, np.array([0.0, 1.0]),
    ...        np.zeros((2, 2)), Points(np.zeros((0, 2)), None, np.zeros(0)), None, None))
    array([1.e+308, 1.e+000])
    """
    reach = np.array([max(abs(b.xs[0]), abs(b.xs[-1])), max(abs(b.ys[0]), abs(b.ys[-1]))])
    return np.where(reach > _FAR, 10.0 ** np.floor(np.log10(np.maximum(reach, 1.0))), 1.0)


def _norm(b: Boundary) -> Normalize:
    """The colours' range: the two classes' labels (so a point's colour is the colour of the
    output that classifies it right), else the labels' or the output's range."""
    if b.classes is not None:
        return Normalize(*b.classes)
    values = b.train.labels if b.train.labels is not None else b.output
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
    return Normalize(lo, hi if hi > lo else lo + 1.0)


def boundary_figure(b: Boundary, *, title: str | None = None, width: float = 5.0,
                    height: float = 4.0, dpi: int = 100) -> BoundaryFigure:
    """The boundary drawn: the output as a heatmap (its colour bar the output's), the
    decision line (black) where the output crosses midway between the two classes, the
    training points (circles) and the test points (triangles), coloured by their label on
    the heatmap's scale: a point whose colour matches the ground around it is classified
    right. ``title`` replaces the default (the output and the accuracy)."""
    fig = BoundaryFigure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=0.14, right=0.9, bottom=0.13, top=0.9)
    ax = fig.add_subplot()
    norm = _norm(b)
    fig.units = units = _units(b)
    extent = (b.xs[0] / units[0], b.xs[-1] / units[0], b.ys[0] / units[1], b.ys[-1] / units[1])
    with np.errstate(invalid="ignore", over="ignore"):
        fig.image = ax.imshow(np.ma.masked_invalid(b.output), origin="lower", extent=extent,
                              cmap=CMAP, norm=norm, interpolation="bilinear", aspect="auto",
                              alpha=0.6)
    fig.colorbar(fig.image, ax=ax, label=f"output {b.plane.output}", fraction=0.05, pad=0.02)
    fig.line = LineCollection([], colors="black", linewidths=1.2)
    ax.add_collection(fig.line)
    # the points in lighter shades of the scale, not its darkest ends: dark red and dark
    # blue both look near black to a red-green colour-blind eye (protanopia), the lighter
    # red and blue stay tan and blue (WCAG 1.4.1)
    span = norm.vmax - norm.vmin
    colours: dict[str, Any] = {"cmap": CMAP, "norm": Normalize(norm.vmin - POINT_MARGIN * span,
                                                               norm.vmax + POINT_MARGIN * span)}

    def scatter(points: Any, marker: str, edge: str, label: str) -> PathCollection:
        colour = (points.labels if points.labels is not None
                  else np.full(len(points.xy), 0.5 * (norm.vmin + norm.vmax)))
        xy = points.xy / units
        return ax.scatter(xy[:, 0], xy[:, 1], c=colour, marker=marker, s=22,
                          edgecolors=edge, linewidths=0.7, label=label, **colours)

    fig.train_points = scatter(b.train, "o", "white", "training")
    fig.test_points = None
    if b.test is not None:
        fig.test_points = scatter(b.test, "^", "black", "test")
    ax.set_xlim(extent[0], extent[1])
    ax.set_ylim(extent[2], extent[3])
    label = [axis if unit == 1 else f"{axis} (in units of {unit:.0e})"
             for axis, unit in zip(b.axes, units, strict=True)]
    ax.set_xlabel(label[0])
    ax.set_ylabel(label[1])
    fig.title = ax.set_title("", fontsize=10)
    fig.set_boundary(b)
    if title is not None:
        fig.title.set_text(title)
    return fig


class LiveBoundary:
    """The training panel's boundary: the figure is made once (axes, colour bar, legend kept
    as pixels), then each :meth:`png` evaluates the output at the new weights and redraws
    only the heatmap, the line, the points and the title over it.

    >>> from tenflang_nb.core.boundary import BoundaryEvaluator, plane_inputs
    >>> from tenflang_nb.core.datafiles import from_columns
    >>> from tenflang_nb.core.program import parse
    >>> p = parse("declare input x [2]\\ndeclare exp_output y\\ndeclare weight w [2]\\n"
    ...           "declare output o\\ndefine o = matmul x w\\n")
    >>> live = LiveBoundary(BoundaryEvaluator(p, plane_inputs(p),
    ...                     from_columns({"x": [[0.0, 1.0], [1.0, 0.0]], "y": [0.0, 1.0]})))
    >>> live.png({"w": np.zeros(2)})[:4], live.png({"w": np.ones(2)})[:4], live.draws
    (b'\\x89PNG', b'\\x89PNG', 2)
    """

    def __init__(self, evaluator: BoundaryEvaluator, *, width: float = 4.6,
                 height: float = 3.7) -> None:
        self.evaluator = evaluator
        self.size = (width, height)
        self.figure: BoundaryFigure | None = None
        self._background: Any = None
        self.kept_words: FigureWords | None = None  # the released figure's
        self.boundary: Boundary | None = None  # the one last drawn
        self.draws = 0

    def release(self) -> None:
        """Let go of the figure and its pixels (a run has ended and its picture is kept as
        PNG bytes), keeping it in words, and of the evaluator's grid run; the next
        :meth:`png` draws a new one."""
        if self.figure is not None:
            self.kept_words = self.figure.words()
        self.figure, self._background = None, None
        self.evaluator.release()

    def words(self) -> FigureWords | None:
        """The boundary last drawn, in words (None: none drawn yet)."""
        return self.figure.words() if self.figure is not None else self.kept_words

    def png(self, weights: dict[str, Any]) -> bytes:
        """The boundary at ``weights``, as PNG bytes."""
        b = self.boundary = self.evaluator.at(weights)
        fig = self.figure
        if fig is None:
            fig = self.figure = boundary_figure(b, width=self.size[0], height=self.size[1])
            for artist in fig.animated:
                artist.set_animated(True)  # left out of canvas.draw(): drawn on top below
        canvas = fig.canvas
        assert isinstance(canvas, FigureCanvasAgg)
        if self._background is None:
            canvas.draw()
            self._background = canvas.copy_from_bbox(fig.bbox)
        fig.set_boundary(b)
        canvas.restore_region(self._background)
        with np.errstate(invalid="ignore", over="ignore"):
            for artist in fig.animated:
                fig.draw_artist(artist)
        self.draws += 1
        return drawn_png(fig)
