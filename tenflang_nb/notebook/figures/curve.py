"""The loss curve: the mean loss per iteration, as the training panel draws it.

>>> from tenflang_nb.core.train import Record
>>> loss_curve_png([Record(0, 1.0, 2.0), Record(1, 0.5, 1.0)])[:4]
b'\\x89PNG'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatterSciNotation, MaxNLocator

from ...core.formatting import fmt_number
from ...core.train import Record
from .canvas import CEILING, png_bytes

__all__ = ["MAX_POINTS", "loss_curve_figure", "loss_curve_png"]

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
        return png_bytes(_figure(history, log_scale, width, height, dpi))


def loss_curve_figure(history: Sequence[Record], *, log_scale: bool = True, width: float = 5.0,
                      height: float = 3.0, dpi: int = 100) -> Figure:
    """The figure :func:`loss_curve_png` draws (on an Agg canvas, not yet drawn).

    >>> from tenflang_nb.core.train import Record
    >>> loss_curve_figure([Record(0, 1.0, 2.0)]).axes[0].get_xlabel()
    'iteration'
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return _figure(history, log_scale, width, height, dpi)


def _figure(history: Sequence[Record], log_scale: bool, width: float, height: float,
            dpi: int) -> Figure:
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
    return fig
