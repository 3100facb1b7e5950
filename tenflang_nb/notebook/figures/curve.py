"""The loss curve: the mean loss per iteration, as the training panel draws it.

>>> from tenflang_nb.core.train import Record
>>> loss_curve_png([Record(0, 1.0, 2.0), Record(1, 0.5, 1.0)])[:4]
b'\\x89PNG'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatterSciNotation, MaxNLocator

from ...core.formatting import fmt_number
from ...core.train import Record
from .canvas import CEILING, RUN_COLOURS, drawn_png

__all__ = ["MAX_POINTS", "LiveCurve", "loss_curve_figure", "loss_curve_png"]

# Drawing every point of a million-step history would make each live redraw slower than the
# training chunk it interrupts; a few thousand points look the same at panel size.
MAX_POINTS = 2000


def _thin(n: int, limit: int = MAX_POINTS) -> np.ndarray:
    """Indices of at most ``limit`` evenly spread records, always keeping the first and last."""
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(int))


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
                   height: float = 3.0, dpi: int = 100, label: str | None = None,
                   reference: Sequence[Record] | None = None,
                   reference_label: str = "reference", on: LiveCurve | None = None,
                   live: bool = False) -> bytes:
    """The mean loss per iteration as a PNG image (an empty, labelled frame before training).

    A log scale is used only when every loss is positive (a loss may be any real number); the
    axis label says when it fell back to linear. Records that hold a test loss add it as a
    dashed curve; ``reference`` (another run's history, e.g. the true GCP's beside an edited
    one) adds a second run in another colour; ``label`` and ``reference_label`` name the
    runs in the legend (there is one when there is more than one curve). ``on``: a
    :class:`LiveCurve` to draw on (the panel's), instead of a new figure (then ``width``,
    ``height`` and ``dpi`` are its own); ``live``: the run goes on (see :class:`LiveCurve`).

    >>> from tenflang_nb.core.train import Record
    >>> png = loss_curve_png([Record(0, 1.0, 2.0), Record(1, 0.5, 1.0)])
    >>> png[:4], png == loss_curve_png([Record(0, 1.0, 2.0), Record(1, 0.5, 1.0)],
    ...                                on=LiveCurve())
    (b'\\x89PNG', True)
    """
    if on is None:
        on = LiveCurve(width=width, height=height, dpi=dpi)
    return on.png(history, log_scale=log_scale, label=label, reference=reference,
                  reference_label=reference_label, live=live)


def loss_curve_figure(history: Sequence[Record], *, log_scale: bool = True, width: float = 5.0,
                      height: float = 3.0, dpi: int = 100, label: str | None = None,
                      reference: Sequence[Record] | None = None,
                      reference_label: str = "reference") -> Figure:
    """The figure :func:`loss_curve_png` draws (on an Agg canvas, not yet drawn).

    >>> from tenflang_nb.core.train import Record
    >>> fig = loss_curve_figure([Record(0, 1.0, 2.0, test_loss=1.5)])
    >>> fig.axes[0].get_xlabel(), [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    ('iteration', ['training', 'test'])
    """
    fig, ax = _new_figure(width, height, dpi)
    with np.errstate(over="ignore", invalid="ignore"):
        _draw(ax, _runs(history, label, reference, reference_label), log_scale)
    return fig


class LiveCurve:
    """A loss curve redrawn again and again on one figure (the training panel's): its axes
    and their ticks are made once, which is most of what a new figure costs. While a run
    goes on (``live=True``), the axes leave the curves room to grow and stay as they are
    while the curves fit: the frame is kept as pixels and only the curves are drawn again
    (matplotlib's blitting, as for the landscape). When they leave it, and for a run that has
    ended, everything is drawn anew, fitted to the curves as :func:`loss_curve_png` draws
    them.

    >>> from tenflang_nb.core.train import Record
    >>> live = LiveCurve()
    >>> run = [Record(i, 1.0 / (i + 1), 1.0) for i in range(50)]
    >>> first = live.png(run[:40], live=True); again = live.png(run[:41], live=True)
    >>> live.frames, live.blits, first != again
    (1, 1, True)
    >>> live.png(run, live=False) == loss_curve_png(run)
    True
    """

    def __init__(self, *, width: float = 5.0, height: float = 3.0, dpi: int = 100) -> None:
        self.size = (width, height, dpi)
        self.figure: Figure | None
        self.figure, self.axes = _new_figure(width, height, dpi)
        self._frame: _Frame | None = None  # the frame kept as pixels while a run goes on
        self._background: Any = None
        self.frames = 0  # whole figures drawn
        self.blits = 0  # curves drawn again on a kept frame

    def release(self) -> None:
        """Let go of the figure (a run has ended and its picture is kept as PNG bytes): the
        next :meth:`png` makes a new one (issue 26: see ``TrainingPanel.publish``)."""
        self.figure, self.axes = None, None
        self._frame = self._background = None

    def png(self, history: Sequence[Record], *, log_scale: bool = True,
            label: str | None = None, reference: Sequence[Record] | None = None,
            reference_label: str = "reference", live: bool = False) -> bytes:
        """The curves of ``history`` (and ``reference``) as PNG bytes (see
        :func:`loss_curve_png`); ``live``: the run goes on (see the class docstring)."""
        runs = _runs(history, label, reference, reference_label)
        if self.figure is None:
            self.figure, self.axes = _new_figure(*self.size)
        fig, ax = self.figure, self.axes
        canvas = fig.canvas
        # Axis arithmetic on huge losses may overflow; numpy would print a RuntimeWarning
        # into the notebook for what is only a drawing detail.
        with np.errstate(over="ignore", invalid="ignore"):
            frame = self._frame
            if live and frame is not None and frame.holds(runs, log_scale):
                for (x, y, *_), (line, end) in zip(runs, frame.lines, strict=True):
                    line.set_data(x, y)
                    end.set_data(x[-1:], y[-1:])
                canvas.restore_region(self._background)
                for artists in frame.lines:
                    for artist in artists:
                        fig.draw_artist(artist)
                self.blits += 1
                return drawn_png(fig)
            for artist in [*ax.lines, *ax.texts]:
                artist.remove()
            legend = ax.get_legend()
            if legend is not None:
                legend.remove()
            self._frame = frame = _draw(ax, runs, log_scale, room=live)
            self.frames += 1
            if not live or not frame.lines:
                self._frame = None
                canvas.draw()
                return drawn_png(fig)
            for artists in frame.lines:
                for artist in artists:
                    artist.set_animated(True)  # left out of canvas.draw(): drawn on top below
            canvas.draw()
            self._background = canvas.copy_from_bbox(fig.bbox)
            for artists in frame.lines:
                for artist in artists:
                    fig.draw_artist(artist)
        return drawn_png(fig)


Series = tuple[np.ndarray, np.ndarray, str, str, str]  # x, y, colour, line style, label


def _runs(history: Sequence[Record], label: str | None, reference: Sequence[Record] | None,
          reference_label: str) -> list[Series]:
    """Every curve drawn: the run's (its loss, its test loss) and the reference's."""
    series = _series(history, RUN_COLOURS[0], label) if history else []
    return series + (_series(reference, RUN_COLOURS[1], reference_label) if reference else [])


@dataclass
class _Frame:
    """What a figure drawn for a run still going on holds: its curves' artists (each a
    line and its end marker) and the limits they must stay within for it to be reused."""

    labels: tuple[str, ...]
    log: bool
    xmax: float
    ylim: tuple[float, float]
    lines: list[tuple[Any, Any]]

    def holds(self, runs: list[Series], log_scale: bool) -> bool:
        """Whether ``runs`` can be drawn on this frame as they are."""
        if tuple(name for *_, name in runs) != self.labels:
            return False
        every = np.concatenate([y for _, y, *_ in runs])
        every = every[~np.isnan(every)]
        lo, hi = self.ylim
        return bool((log_scale and np.all(every > 0)) == self.log
                    and max(float(x[-1]) for x, *_ in runs) <= self.xmax
                    and np.all((every >= lo) & (every <= hi)))


def _series(history: Sequence[Record], colour: str, label: str | None) -> list[Series]:
    """A run's curves: its loss, and its test loss when its records hold one."""
    keep = _thin(len(history))
    x = np.array([history[i].iteration for i in keep])
    losses = np.array([history[i].loss for i in keep], dtype=float)
    series = [(x, losses, colour, "-", label or "training")]
    tests = [history[i].test_loss for i in keep]
    if any(t is not None for t in tests):
        y = np.array([np.nan if t is None else t for t in tests], dtype=float)
        series.append((x, y, colour, "--", f"{label} (test)" if label else "test"))
    return series


def _new_figure(width: float, height: float, dpi: int) -> tuple[Figure, Any]:
    fig = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    # Fixed margins instead of a tight layout: the layout pass draws everything twice, which
    # doubles the cost of each live redraw.
    fig.subplots_adjust(left=0.16, right=0.92, bottom=0.16, top=0.95)
    ax = fig.add_subplot()
    # The axis labels at fixed places: placed by default, each redraw would first measure
    # every tick label (a third of a live redraw).
    ax.xaxis.set_label_coords(0.5, -0.13)
    ax.yaxis.set_label_coords(-0.135, 0.5)
    return fig, ax


def _draw(ax: Any, series: list[Series], log_scale: bool, room: bool = False) -> _Frame:
    """The curves on ``ax`` (new, or cleared of its curves), with their scale and limits;
    ``room``: limits with room for the curves to grow (a run going on), else fitted to
    them. Returns the frame drawn."""
    ax.set_xlabel("iteration")
    ylabel = "mean loss"
    every = np.concatenate([y for _, y, *_ in series]) if series else np.zeros(0)
    every = every[~np.isnan(every)]
    floor = -CEILING
    log = log_scale and bool(series) and bool(np.all(every > 0))
    ax.set_yscale("log" if log else "linear")  # also the default ticks and their labels
    if series:
        if log:
            floor = 1 / CEILING
        elif log_scale:
            ylabel += " (linear: loss ≤ 0)"
        if np.any((every > CEILING) | (every < floor)):
            series = [(x, np.clip(y, floor, CEILING), *rest) for x, y, *rest in series]
            every = np.clip(every, floor, CEILING)
            ylabel += " (clipped)"
        if log:
            lo, hi = _log_limits(every)
            if room:  # a falling loss has a decade to fall before the frame is redrawn
                lo /= 10
            ax.set_ylim(lo, hi)
            if hi / lo < 100:
                # within two decades matplotlib labels minor ticks as "6 x 10^-1", wide enough
                # to run into the axis label; plain numbers ("0.6") read better
                ax.yaxis.set_major_formatter(_PlainLogFormatter())
                ax.yaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False))
        lines = []
        for x, y, colour, style, name in series:
            [line] = ax.plot(x, y, color=colour, linestyle=style, linewidth=1.5, label=name)
            [end] = ax.plot(x[-1:], y[-1:], "o", color=colour, markersize=4)
            lines.append((line, end))
        if not log:  # fitted to these curves (an axes drawn on before has fixed limits)
            ax.set_autoscaley_on(True)
            ax.relim()
            ax.autoscale_view(scalex=False)
            if room:
                lo, hi = ax.get_ylim()
                ax.set_ylim(lo - (hi - lo) / 2, hi)
        last = max(int(x[-1]) for x, *_ in series)
        # room for the end marker; in a run going on, for as many iterations again
        ax.set_xlim(0, max(1, last) * (2 if room else 1.03))
        if len(series) > 1:
            ax.legend(fontsize=8, loc="upper right")
    else:
        ax.set_xlim(0, 1)
        ax.set_yticks([])
        ax.text(0.5, 0.5, "not trained yet", ha="center", va="center", transform=ax.transAxes,
                color="0.5")
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    ax.grid(True, which="major", alpha=0.3)
    if not series or "(clipped)" in ylabel:
        return _Frame((), False, 0.0, (0.0, 0.0), [])  # nothing to keep
    lo, hi = ax.get_ylim()
    return _Frame(tuple(name for *_, name in series), log, float(ax.get_xlim()[1]),
                  (float(lo), float(hi)), lines)
