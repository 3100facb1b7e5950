"""The training panel: a widget-free training session (``session``: start, stop, continue,
reset, status, history, the live run in chunks) and the thin widget layer that wires
controls to it (``widget``: :class:`TrainingPanel`; ``controls``: one per setting).

The widgets are imported only when asked for, so the session works (and is tested) without
ipywidgets.

>>> from tenflang_nb.notebook.panel import TrainingSession, stop_live_runs
>>> stop_live_runs()
0
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .session import CHUNK_SECONDS, TrainingSession, stop_live_runs

if TYPE_CHECKING:
    from .controls import PARAMETERS, Parameter
    from .widget import REDRAW_SECONDS, TrainingPanel

__all__ = ["CHUNK_SECONDS", "PARAMETERS", "REDRAW_SECONDS", "Parameter", "TrainingPanel",
           "TrainingSession", "stop_live_runs"]

_WIDGETS = {"PARAMETERS": "controls", "Parameter": "controls", "REDRAW_SECONDS": "widget",
            "TrainingPanel": "widget"}


def __getattr__(name: str) -> Any:
    if name in _WIDGETS:
        from importlib import import_module

        return getattr(import_module(f".{_WIDGETS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
