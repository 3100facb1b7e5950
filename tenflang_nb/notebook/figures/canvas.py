"""What every figure shares: PNG bytes from a figure (drawn for keeps, or as a live redraw
left it), and the loss ceiling.

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

import numpy as np
from matplotlib.figure import Figure
from PIL import Image

__all__ = ["CEILING", "drawn_png", "png_bytes"]

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


def drawn_png(fig: Figure) -> bytes:
    """What the figure's canvas holds now (after ``canvas.draw()``, or blitted onto), as PNG
    bytes compressed fast: a live picture is sent once and replaced a moment later, so the
    tenth of the redraw that the default compression costs is not worth its smaller bytes.

    >>> from matplotlib.backends.backend_agg import FigureCanvasAgg
    >>> fig = Figure(figsize=(1, 1)); FigureCanvasAgg(fig).draw()
    >>> drawn_png(fig)[:4]
    b'\\x89PNG'
    """
    buffer = io.BytesIO()
    pixels = np.asarray(fig.canvas.buffer_rgba())  # type: ignore[attr-defined]
    Image.fromarray(pixels).save(buffer, format="png", compress_level=1)
    return buffer.getvalue()
