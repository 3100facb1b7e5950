"""The loss landscape drawn: the loss over a line or a plane of weight settings with the path
of descent on it (what ``model.landscape()`` returns, and what the training panel's
landscape draws on, see ``live``).

>>> import numpy as np
>>> from tenflang_nb.core.landscape import Plane
>>> describe_plane(Plane(np.zeros(1), np.eye(1), ("w",), "weights"))
'the loss against its weight w'
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib import patheffects
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LogNorm
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import LogLocator

from ...core.formatting import fmt_list, fmt_number
from ...core.landscape import DescentPath, Landscape, Plane
from .canvas import CEILING, RUN_COLOURS, PngFigure
from .words import FigureWords, landscape_words

__all__ = ["LandscapeFigure", "describe_plane", "landscape_figure"]

# the markers of the descent paths, in their order (beside their colours)
PATH_MARKERS = ("o", "s", "^", "D", "v", "P")


class LandscapeFigure(PngFigure):
    """A matplotlib figure of a loss landscape that shows itself in a notebook as a PNG.

    A plain ``Figure`` on an Agg canvas (no ``pyplot``: the user's current figure, backend
    and open windows are untouched), shown as its PNG (:class:`~.canvas.PngFigure`: where
    no matplotlib backend is set up too, and as an image, which also reads in an untrusted
    or exported notebook). ``landscape`` holds the numbers it draws.
    """

    landscape: Landscape
    path_artists: list[tuple[Line2D, Line2D, Line2D]]  # per path: its line, start, end
    note: Text  # how far off the slice the paths run

    def set_paths(self, paths: Sequence[DescentPath]) -> None:
        """Move the path artists to ``paths`` (as many as the figure was made with)."""
        plane = self.landscape.plane
        for (line, start, end), path in zip(self.path_artists, paths, strict=True):
            x, y = _path_points(path, plane.dims)
            line.set_data(x, y)
            start.set_data(x[:1], y[:1])
            end.set_data(x[-1:], y[-1:])
        far = max((float(np.nanmax(p.distance)) for p in paths
                   if len(p) and np.any(np.isfinite(p.distance))), default=0.0)
        text = ""
        if far > 1e-9 * max(1.0, float(np.linalg.norm(plane.origin))):
            text = (f"path projected (up to {fmt_number(far, 3)} off the "
                    f"{'line' if plane.dims == 1 else 'plane'})")
        self.note.set_text(text)
        self.note.set_visible(bool(text))

    def words(self) -> FigureWords:
        return landscape_words(self.landscape, " ".join(self.axes[0].get_title().split()))

    def __repr__(self) -> str:
        land = self.landscape
        grid = " x ".join(str(len(g)) for g in land.grid)
        return f"<TenFlang loss landscape: {grid} grid, {describe_plane(land.plane)}>"


def describe_plane(plane: Plane) -> str:
    """How the slice was chosen, in words (the figure's title says it).

    >>> import numpy as np
    >>> from tenflang_nb.core.landscape import Plane
    >>> describe_plane(Plane(np.zeros(2), np.eye(2), ("a", "b"), "random", seed=3))
    'random filter-normalised directions (seed 3) through the final weights'
    """
    if plane.kind == "weights":
        return "the loss against " + (f"its weight {plane.labels[0]}" if plane.dims == 1
                                      else f"its weights {plane.labels[0]}, {plane.labels[1]}")
    if plane.kind == "components":
        return "the final weights, varying " + fmt_list(plane.labels)
    if plane.kind == "random":
        return (f"random filter-normalised direction{'s' * (plane.dims > 1)} (seed {plane.seed}) "
                "through the final weights")
    if plane.kind == "through":
        return f"the {'line' if plane.dims == 1 else 'plane'} through " + ", ".join(plane.marks)
    return "the given direction" + "s" * (plane.dims > 1) + " through the final weights"


def _axis_label(plane: Plane, axis: int) -> str:
    label = plane.labels[axis]
    if plane.kind == "random":
        return f"{'αβ'[axis]}: {label}"
    if plane.kind == "through":
        return f"{'t' if plane.dims == 1 else 'st'[axis]}: {label}"
    return label


def _finite_log_ok(values: np.ndarray) -> bool:
    finite = values[np.isfinite(values)]
    return bool(len(finite)) and bool(np.all(finite > 0))


def landscape_figure(land: Landscape, *, title: str | None = None, log: bool | None = None,
                     width: float = 5.6, height: float | None = None, dpi: int = 100
                     ) -> LandscapeFigure:
    """The landscape drawn: for a line, the loss against the coordinate with the path's
    points on it; for a plane, filled contours with the path on top (a circle at its start,
    a star at its end). Marked settings (``plane_through``) get a cross and their name.

    ``log``: a logarithmic loss scale (default: when the loss is positive and spans more
    than three decades). Losses beyond 1e100 (a run that blew up) are drawn at 1e100.

    >>> import numpy as np
    >>> from tenflang_nb.core.landscape import DescentPath, Landscape, Plane
    >>> plane = Plane(np.zeros(1), np.eye(1), ("w",), "weights")
    >>> path = DescentPath("run", np.arange(2), np.array([[0.0], [1.0]]), np.array([1.0, 0.0]),
    ...             np.zeros(2))
    >>> fig = landscape_figure(Landscape(plane, (np.linspace(-1, 2, 4),),
    ...                                  np.array([4.0, 1.0, 0.0, 1.0]), (path,), "L"))
    >>> fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel(), fig._repr_png_()[:4]
    ('w', 'mean loss L', b'\\x89PNG')
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _landscape_figure(land, title, log, width, height, dpi)


def _landscape_figure(land: Landscape, title: str | None, log: bool | None, width: float,
                      height: float | None, dpi: int) -> LandscapeFigure:
    plane = land.plane
    # a constrained layout makes room for the colorbar's label and a wrapped title (the live
    # panel lays it out once: its redraws blit the paths onto the drawn background)
    fig = LandscapeFigure(figsize=(width, height or (3.6 if plane.dims == 1 else 4.4)), dpi=dpi,
                          layout="constrained")
    fig.landscape = land
    FigureCanvasAgg(fig)
    loss = np.clip(np.asarray(land.loss, dtype=float), -CEILING, CEILING)
    finite = loss[np.isfinite(loss)]
    if log is None:
        log = _finite_log_ok(loss) and float(finite.max()) > 1e3 * float(finite.min())
    elif log and not _finite_log_ok(loss):
        log = False  # a log scale cannot show a loss <= 0
    ax = fig.add_subplot()
    ylabel = f"mean loss {land.loss_name}"
    if plane.dims == 1:
        # dark grey: the runs' colours are for the paths on it
        ax.plot(land.grid[0], loss, color="0.3", linewidth=1.5, zorder=1)
        if log:
            ax.set_yscale("log")
        for name, (c,) in plane.marks.items():
            ax.axvline(c, color="0.4", linestyle=":", linewidth=1)
            ax.annotate(name, (c, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -12),
                        textcoords="offset points", fontsize=8, color="0.3")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    else:
        x, y = land.grid
        z = np.ma.masked_invalid(loss)
        levels: Any = 20
        norm = None
        if log:
            lo, hi = np.log10(float(finite.min())), np.log10(float(finite.max()))
            levels, norm = (np.logspace(lo, hi, 21) if hi > lo else None), LogNorm()
        filled = ax.contourf(x, y, z, levels=levels, norm=norm, cmap="viridis", zorder=0)
        ax.contour(x, y, z, levels=filled.levels, colors="white", linewidths=0.4, alpha=0.5,
                   zorder=1)
        bar = fig.colorbar(filled, ax=ax, pad=0.02)
        bar.set_label(ylabel)
        if log:
            bar.ax.yaxis.set_major_locator(LogLocator())
        for name, (a, b) in plane.marks.items():
            ax.plot([a], [b], "X", color="white", markeredgecolor="black", markersize=8,
                    zorder=4)
            ax.annotate(name, (a, b), xytext=(5, 5), textcoords="offset points", fontsize=8,
                        color="white", zorder=4)
        ax.set_ylabel(_axis_label(plane, 1))
    fig.path_artists = []
    for i, path in enumerate(land.paths):
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]  # the loss curve's colour of this run
        edge: dict[str, Any] = {}
        halo: list[Any] = []
        if plane.dims == 2:  # a white edge keeps the path readable on every contour
            edge = {"markeredgecolor": "white", "markeredgewidth": 0.6}
            halo = [patheffects.Stroke(linewidth=2.2, foreground="white", alpha=0.8),
                    patheffects.Normal()]
        # each path its own marker too: its colour is not all that tells it from the others
        # (WCAG 1.4.1; several of the colours look alike to a red-green colour-blind eye)
        marker = PATH_MARKERS[i % len(PATH_MARKERS)]
        line, = ax.plot([], [], f"-{marker}", color=colour,
                        markersize=3 if plane.dims == 1 else 2.5,
                        linewidth=0.8 if plane.dims == 1 else 1.2, label=path.label, zorder=2,
                        path_effects=halo)
        start, = ax.plot([], [], "o", color=colour, markersize=7, markerfacecolor="white",
                         markeredgecolor=colour, zorder=3)
        end, = ax.plot([], [], "*", color=colour, markersize=13, zorder=3, **edge)
        fig.path_artists.append((line, start, end))
    fig.note = ax.text(0.99, 0.01, "", transform=ax.transAxes, ha="right", va="bottom",
                       fontsize=7, color="0.25", bbox={"facecolor": "white", "alpha": 0.6,
                                                       "edgecolor": "none", "pad": 1})
    fig.set_paths(land.paths)
    ax.relim()  # the loss axis of a curve also shows the paths' recorded losses
    ax.autoscale_view()
    # the grid's extent, whatever the paths
    ax.set_xlim(land.grid[0][0], land.grid[0][-1])
    if plane.dims == 2:
        ax.set_ylim(land.grid[1][0], land.grid[1][-1])
    ax.set_xlabel(_axis_label(plane, 0))
    # about 13 characters of 9-point text per inch: wrap a title the figure is too narrow for
    ax.set_title(textwrap.fill(title or describe_plane(plane), int(width * 13)), fontsize=9)
    if len(land.paths) > 1:
        ax.legend(fontsize=8, loc="best")
    return fig


def _path_points(path: DescentPath, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """The path's finite points in the axes' coordinates: (coordinate, loss) on a line,
    the two coordinates on a plane."""
    if dims == 1:
        x, y = path.coords[:, 0], np.clip(path.loss, -CEILING, CEILING)
    else:
        x, y = path.coords[:, 0], path.coords[:, 1]
    ok = np.isfinite(x) & np.isfinite(y)
    return x[ok], y[ok]
