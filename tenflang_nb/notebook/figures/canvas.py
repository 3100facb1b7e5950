"""What every figure shares: PNG bytes from a figure, and the loss ceiling.

A figure is a bare :class:`matplotlib.figure.Figure` on an Agg canvas: it never goes through
``pyplot``, so rendering opens no window, does not touch the user's current figure or backend,
and leaves nothing registered to close (the figure is garbage once the bytes are out).

>>> from matplotlib.backends.backend_agg import FigureCanvasAgg
>>> from matplotlib.figure import Figure
>>> fig = Figure(figsize=(1, 1)); _ = FigureCanvasAgg(fig)
>>> png_bytes(fig)[:4]
b'\\x89PNG'
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure

__all__ = ["CEILING", "png_bytes"]

# A diverging run's loss climbs to ~1e308 before it overflows. Long before that matplotlib's
# log axis breaks (autoscaling falls back to 1..10; with hundreds of decades the locator puts
# a tick past the float range and the formatter crashes), so losses are drawn clipped to
# [1/CEILING, CEILING], which still reads as "it blew up" (or "it reached 0").
CEILING = 1e100


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes."""
    # No "Software" stamp: the bytes then depend only on the drawing, not on the install.
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
