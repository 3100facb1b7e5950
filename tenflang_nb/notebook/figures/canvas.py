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
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image

from .words import FigureWords, figure_html

__all__ = ["CEILING", "RUN_COLOURS", "PngFigure", "drawn_png", "kept_png", "png_bytes",
           "release_pixels", "release_ticks"]

# One colour per run, the same in every figure: the loss curve's k-th run (the panel's run,
# then the run beside it: an edited GCP's, then the true GCP's) is the landscape's k-th path.
# A path on the landscape's contours is drawn with a white edge, which keeps any of them
# readable there.
RUN_COLOURS = ("C0", "C1", "C3", "C2", "C4", "C6")

# A diverging run's loss climbs to ~1e308 before it overflows. Long before that matplotlib's
# log axis breaks (autoscaling falls back to 1..10; with hundreds of decades the locator puts
# a tick past the float range and the formatter crashes), so losses are drawn clipped to
# [1/CEILING, CEILING], which still reads as "it blew up" (or "it reached 0").
CEILING = 1e100


class PngFigure(Figure):
    """A figure that shows itself in a notebook as its PNG (:func:`png_bytes`): on a plain
    Agg canvas, so it displays even where no matplotlib backend is set up, and as an image,
    which also reads in an untrusted or exported notebook.

    Once pyplot's inline backend is active IPython formats every ``Figure`` its own way,
    ``_repr_png_`` unasked; the extension therefore registers this class's PNG with IPython
    by name (``magic.load``), so that these figures keep their small, install-independent
    bytes either way.
    """

    def _repr_png_(self) -> bytes:
        return png_bytes(self)

    def words(self) -> FigureWords | None:
        """The figure in words (a subclass's: see ``words``), or None."""
        return None

    def bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """What the extension shows (``magic.load``): the PNG, and beside it HTML, the same
        picture with its alt text and its values as a table. JupyterLab and nbconvert's lab
        template show no alt text for an ``image/png`` (the alt in its metadata is for
        nbconvert's classic template and Sphinx), and prefer the HTML."""
        png = png_bytes(self)
        data: dict[str, Any] = {"image/png": png, "text/plain": repr(self)}
        words = self.words()
        if words is None:
            return data, {}
        data["text/html"] = figure_html(png, words)
        return data, {"image/png": {"alt": words.alt}}


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes, made small for keeping (:func:`kept_png`)."""
    # No "Software" stamp: the bytes then depend only on the drawing, not on the install.
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    release_pixels(fig)
    release_ticks(fig)
    return kept_png(buffer.getvalue())


def release_pixels(fig: Figure) -> None:
    """Let go of the pixels the figure was last drawn into, which a drawn figure otherwise
    keeps as long as it lives (its canvas's renderer, referenced again by each of its texts,
    which keep the renderer they were measured with): 0.9 MB per loss landscape, for every
    figure a notebook's ``Out`` holds (issue 26). The next draw makes new pixels (a text
    without a renderer asks the figure for one, as after unpickling).

    >>> import weakref
    >>> fig = Figure(figsize=(1, 1)); _ = FigureCanvasAgg(fig)
    >>> _ = fig.text(0.5, 0.5, "x"); fig.canvas.draw(); pixels = weakref.ref(fig.canvas.renderer)
    >>> release_pixels(fig); pixels() is None, png_bytes(fig)[:4]
    (True, b'\\x89PNG')
    """
    canvas = fig.canvas
    if not isinstance(canvas, FigureCanvasAgg):
        return
    for text in fig.findobj(Text):
        text._renderer = None  # matplotlib's own Text.__getstate__ drops it the same way
    canvas.__dict__.pop("renderer", None)
    canvas._lastKey = None  # get_renderer() makes a new one


def release_ticks(fig: Figure) -> None:
    """Let go of the ticks a draw made. Each tick is five artists (two tick lines, a grid
    line, two labels), and a drawn landscape with its colour bar keeps about 30 of them: more
    than half of what a figure a notebook's ``Out`` holds costs (issue 26: 06 keeps nine).
    The tick lists start again from one fresh tick each (``Axis.reset_ticks``, which
    matplotlib itself calls when an axis is cleared); the next draw makes the ticks anew from
    the axis' locators, formatters and ``tick_params``, so it draws the same picture.

    >>> from matplotlib.backends.backend_agg import FigureCanvasAgg
    >>> fig = Figure(figsize=(2, 2)); _ = FigureCanvasAgg(fig); ax = fig.add_subplot()
    >>> _ = ax.plot([0, 1], [0, 1]); fig.canvas.draw(); len(ax.xaxis.majorTicks) > 1
    True
    >>> release_ticks(fig); len(ax.xaxis.majorTicks), len(ax.yaxis.minorTicks)
    (1, 1)
    """
    for ax in fig.axes:
        for axis in ax._axis_map.values():  # x and y (and z): as Axes.clear() walks them
            axis.reset_ticks()


def kept_png(png: bytes) -> bytes:
    """PNG bytes re-encoded for a picture that is kept (a figure a cell returns, a panel's
    saved picture): at most 256 colours, in a palette. A heatmap's smooth shading (the
    decision boundary's, the landscape's) takes thousands of colours, which zlib packs
    poorly: a boundary takes about 100 kB as drawn and a quarter of that here, with no
    difference to the eye, so a notebook with several stays small. A picture with
    transparency is kept as it is (a palette would spoil its edges).

    >>> from matplotlib.backends.backend_agg import FigureCanvasAgg
    >>> fig = Figure(figsize=(2, 2)); _ = FigureCanvasAgg(fig)
    >>> ax = fig.add_subplot(); _ = ax.imshow(np.random.default_rng(0).random((30, 30)))
    >>> buffer = io.BytesIO(); fig.savefig(buffer, format="png")
    >>> small = kept_png(buffer.getvalue())
    >>> Image.open(io.BytesIO(small)).mode, len(small) < len(buffer.getvalue()) / 2
    ('P', True)
    """
    with Image.open(io.BytesIO(png)) as image:
        if image.mode == "RGBA" and image.getextrema()[3][0] < 255:
            return png
        # median cut: the palette follows the picture's own colours (an octree's fixed
        # boxes show bands in a gradient)
        palette = image.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT)
    buffer = io.BytesIO()
    palette.save(buffer, format="png", optimize=True)
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
