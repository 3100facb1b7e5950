"""Freed memory given back to the system after each cell, so that a kernel's resident size is
what it holds, not the peak of its last computation.

A cell that compiles, trains or draws makes many small objects and frees them; glibc's
allocator keeps the freed pages in the process (fragmented among the live ones), so the
kernel's resident size stays at the cell's peak: ``model.cost()`` on the digits network left
47 MB resident of which 1 MB was still in use, and ``malloc_trim(0)`` gave 33 MB back (issue
26: a class's hub pays for each student's resident memory). Trimming after a cell took
well under a millisecond in a 200 MB process; where the C library has no ``malloc_trim``
(musl, macOS) nothing is done.

What a training panel lets go of when its run ends (its figures: ``panel.widget``), and a
pyplot figure that pyplot closed once the cell showed it (``magic._plot_bundle``), is a web
of cycles, which only the garbage collector's full pass frees, and Python runs that pass
rarely; a full pass costs about 0.1 s in a kernel, too much after every cell, so it is run
after the cells that asked for it (:func:`collect_soon`): lab 06 ended at 150-151 MB instead
of 157 MB, tutorial 04 at 134 MB instead of 140 MB.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Callable
from typing import Any

from ..core import fused

__all__ = ["collect_soon", "register", "trim", "unregister"]


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        function = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None
    if function is not None:
        function.argtypes, function.restype = [ctypes.c_size_t], ctypes.c_int
    return function


_TRIM = _malloc_trim()
_COLLECT = {"soon": False}


def collect_soon() -> None:
    """Run the garbage collector's full pass before the next :func:`trim`: something large
    made of cycles was let go."""
    _COLLECT["soon"] = True


def trim(*_: Any) -> bool:
    """Give the allocator's free pages back to the system; whether it could try.

    >>> isinstance(trim(), bool)
    True
    """
    if _COLLECT["soon"]:
        _COLLECT["soon"] = False
        gc.collect()
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


def register(ip: Any) -> None:
    """Trim after every cell the shell runs (``post_run_cell``), once however often the
    extension is loaded; and keep ``engine="auto"`` from loading numba in the background
    (``core.fused.load_in_background``: 80-115 MB for a tutorial's few seconds)."""
    fused.load_in_background(False)
    if trim not in ip.events.callbacks["post_run_cell"]:
        ip.events.register("post_run_cell", trim)


def unregister(ip: Any) -> None:
    fused.load_in_background(True)
    if trim in ip.events.callbacks["post_run_cell"]:
        ip.events.unregister("post_run_cell", trim)
