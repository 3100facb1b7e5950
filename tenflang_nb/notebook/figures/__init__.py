"""The figures, drawn off-screen with matplotlib (never through ``pyplot``: see ``canvas``):
the loss curve (``curve``), the loss landscape with the path of descent (``landscape``, what
``model.landscape()`` returns) and the training panel's live landscape (``live``).
"""

from __future__ import annotations

from .curve import loss_curve_figure, loss_curve_png
from .landscape import LandscapeFigure, describe_plane, landscape_figure
from .live import LiveFigure, LiveLandscape

__all__ = ["LandscapeFigure", "LiveFigure", "LiveLandscape", "describe_plane",
           "landscape_figure", "loss_curve_figure", "loss_curve_png"]
