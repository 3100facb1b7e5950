"""The training panel's figures, rendered off-screen: the loss curve, and the loss landscape
with the path of descent (also what ``model.landscape()`` returns).

The figure is a bare :class:`matplotlib.figure.Figure` on an Agg canvas: it never goes through
``pyplot``, so rendering opens no window, does not touch the user's current figure or backend,
and leaves nothing registered to close (the figure is garbage once the bytes are out).
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.ticker import LogFormatterSciNotation, LogLocator, MaxNLocator
from PIL import Image

from ..core.formatting import fmt_list, fmt_number
from ..core.landscape import DescentPath, Landscape, Plane
from ..core.train import Record

# Drawing every point of a million-step history would make each live redraw slower than the
# training chunk it interrupts; a few thousand points look the same at panel size.
MAX_POINTS = 2000


def _thin(n: int, limit: int = MAX_POINTS) -> np.ndarray:
    """Indices of at most ``limit`` evenly spread records, always keeping the first and last."""
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(int))


# A diverging run's loss climbs to ~1e308 before it overflows. Long before that matplotlib's
# log axis breaks (autoscaling falls back to 1..10; with hundreds of decades the locator puts
# a tick past the float range and the formatter crashes), so the curve is drawn clipped to
# [1/CEILING, CEILING], which still reads as "it blew up" (or "it reached 0").
CEILING = 1e100


class _PlainLogFormatter(LogFormatterSciNotation):
    """Matplotlib's choice of which log ticks to label, written as plain numbers ("0.6")."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return fmt_number(x, 3) if super().__call__(x, pos) else ""


def _log_limits(y: np.ndarray) -> tuple[float, float]:
    """Log-axis limits with a 5% margin (in decades)."""
    lo, hi = np.log10(y.min()), np.log10(y.max())
    pad = 0.05 * (hi - lo) if hi > lo else 0.5
    return 10.0 ** (lo - pad), 10.0 ** (hi + pad)


def loss_curve_png(history: Sequence[Record], *, log_scale: bool = True, width: float = 5.0,
                   height: float = 3.0, dpi: int = 100) -> bytes:
    """The mean loss per iteration as a PNG image (an empty, labelled frame before training).

    A log scale is used only when every loss is positive (a loss may be any real number); the
    axis label says when it fell back to linear.

    >>> from tenflang_nb.core.train import Record
    >>> png = loss_curve_png([Record(0, 1.0, 2.0), Record(1, 0.5, 1.0)])
    >>> png[:4]
    b'\\x89PNG'
    """
    # Axis arithmetic on huge losses may overflow; numpy would print a RuntimeWarning into
    # the notebook for what is only a drawing detail.
    with np.errstate(over="ignore", invalid="ignore"):
        return _render(history, log_scale, width, height, dpi)


def _render(history: Sequence[Record], log_scale: bool, width: float, height: float,
            dpi: int) -> bytes:
    fig = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    # Fixed margins instead of a tight layout: the layout pass draws everything twice, which
    # doubles the cost of each live redraw.
    fig.subplots_adjust(left=0.16, right=0.92, bottom=0.16, top=0.95)
    ax = fig.add_subplot()
    ax.set_xlabel("iteration")
    ylabel = "mean loss"
    if history:
        keep = _thin(len(history))
        x = np.array([history[i].iteration for i in keep])
        y = np.array([history[i].loss for i in keep])
        floor = -CEILING
        if log_scale and np.all(y > 0):
            floor = 1 / CEILING
            ax.set_yscale("log")
        elif log_scale:
            ylabel += " (linear: loss ≤ 0)"
        if np.any((y > CEILING) | (y < floor)):
            y = np.clip(y, floor, CEILING)
            ylabel += " (clipped)"
        if ax.get_yscale() == "log":
            lo, hi = _log_limits(y)
            ax.set_ylim(lo, hi)
            if hi / lo < 100:
                # within two decades matplotlib labels minor ticks as "6 x 10^-1", wide enough
                # to run into the axis label; plain numbers ("0.6") read better
                ax.yaxis.set_major_formatter(_PlainLogFormatter())
                ax.yaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False))
        ax.plot(x, y, color="C0", linewidth=1.5)
        ax.plot(x[-1:], y[-1:], "o", color="C0", markersize=4)
        ax.set_xlim(0, max(1, int(x[-1])) * 1.03)  # room for the end marker
    else:
        ax.set_xlim(0, 1)
        ax.set_yticks([])
        ax.text(0.5, 0.5, "not trained yet", ha="center", va="center", transform=ax.transAxes,
                color="0.5")
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    ax.grid(True, which="major", alpha=0.3)
    return _png(fig)


# ------------------------------------------------------------------------------ the landscape


def _png(fig: Figure) -> bytes:
    # No "Software" stamp: the bytes then depend only on the drawing, not on the install.
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


class LandscapeFigure(Figure):
    """A matplotlib figure of a loss landscape that shows itself in a notebook as a PNG.

    A plain ``Figure`` on an Agg canvas (no ``pyplot``: the user's current figure, backend
    and open windows are untouched), with ``_repr_png_`` so that IPython displays it even
    where no matplotlib backend is set up, and an image, which also reads in an untrusted
    or exported notebook. ``landscape`` holds the numbers it draws.
    """

    landscape: Landscape
    path_artists: list[tuple[Line2D, Line2D, Line2D]]  # per path: its line, start, end
    note: Text  # how far off the slice the paths run

    def _repr_png_(self) -> bytes:
        return _png(self)

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
        ax.plot(land.grid[0], loss, color="C0", linewidth=1.5, zorder=1)
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
    # on viridis contours: red, white, orange, ... (each readable on dark and light areas)
    colours = ["C1", "C3", "C2", "C4", "C5", "C6"] if plane.dims == 1 else [
        "C3", "white", "C1", "C6", "C2", "C4"]
    fig.path_artists = []
    for i, path in enumerate(land.paths):
        colour = colours[i % len(colours)]
        edge: dict[str, Any] = {}
        if plane.dims == 2:
            edge = {"markeredgecolor": "0.15" if colour == "white" else "white",
                    "markeredgewidth": 0.6}
        line, = ax.plot([], [], "-o", color=colour, markersize=3 if plane.dims == 1 else 2.5,
                        linewidth=0.8 if plane.dims == 1 else 1.2, label=path.label, zorder=2)
        start, = ax.plot([], [], "o", color=colour, markersize=7, markerfacecolor="white",
                         markeredgecolor="0.15" if colour == "white" else colour, zorder=3)
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


def landscape_png(land: Landscape, **options: Any) -> bytes:
    """The landscape as PNG bytes (the training panel's image)."""
    return _png(landscape_figure(land, **options))


class LiveFigure:
    """A landscape drawn once, its paths redrawn over it: each live redraw of the training
    panel costs the path, not the contours and axes (which are kept as pixels).

    >>> import numpy as np
    >>> from tenflang_nb.core.landscape import DescentPath, Landscape, Plane
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
        buffer = io.BytesIO()
        Image.fromarray(np.asarray(canvas.buffer_rgba())).save(buffer, format="png")
        return buffer.getvalue()
