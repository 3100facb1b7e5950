"""The training panel's loss-curve figure, rendered off-screen to PNG bytes.

The figure is a bare :class:`matplotlib.figure.Figure` on an Agg canvas: it never goes through
``pyplot``, so rendering opens no window, does not touch the user's current figure or backend,
and leaves nothing registered to close (the figure is garbage once the bytes are out).
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

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
            ax.set_ylim(*_log_limits(y))
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
    buffer = io.BytesIO()
    # No "Software" stamp: the bytes then depend only on the curve, not on the install.
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
