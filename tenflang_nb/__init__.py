"""tenflang_nb: TenFlang, a tiny language for learning backpropagation, and its notebook tools.

The core (``tenflang_nb.core``) parses, compiles, interprets and trains without IPython; the
notebook layer is loaded only by ``%load_ext tenflang_nb``.

>>> import tenflang_nb as tf
>>> gcp = tf.compile(tf.parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n"))
>>> gcp.gradient_names()
{'w': 'd/L/d/w'}
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "SEED_EXAMPLE", "BackpropCheck", "Curvature", "DataTable", "ForwardProgram", "Gcp",
    "GradientDescent", "HvpProgram", "ModeComparison", "Program", "RandomProgram", "Step",
    "TenFlangError", "TrainResult", "TrainSettings", "__version__", "check", "check_backprop",
    "compare_modes", "compile", "compile_forward", "compile_hvp", "curvature", "evaluate",
    "fusion", "interpret", "load_data", "load_ipython_extension", "parse", "parse_file",
    "preprocess", "random_programs", "steps", "train", "trainer", "unload_ipython_extension",
]

# The API is imported on first use, not with the package: a command (or Ctrl-C while one
# starts) then does not wait for numpy, and the IPython extension loads only what it needs.
_LAZY = {name: ".core.api" for name in __all__ if name[0] != "_" and "ipython" not in name}
_LAZY["SEED_EXAMPLE"] = ".core.examples"

if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from .core.api import (
        BackpropCheck,
        Curvature,
        DataTable,
        ForwardProgram,
        Gcp,
        GradientDescent,
        HvpProgram,
        ModeComparison,
        Program,
        RandomProgram,
        Step,
        TenFlangError,
        TrainResult,
        TrainSettings,
        check,
        check_backprop,
        compare_modes,
        compile,
        compile_forward,
        compile_hvp,
        curvature,
        evaluate,
        fusion,
        interpret,
        load_data,
        parse,
        parse_file,
        preprocess,
        random_programs,
        steps,
        train,
        trainer,
    )
    from .core.examples import SEED_EXAMPLE


# modules reached as attributes: tf.grading (what a graded notebook's locked cells call,
# tf.grading.start...), tf.ops (the operator table, and its numbers: tf.ops.value,
# tf.ops.local_partials) and tf.datasets (the classic 2-D data sets, tf.datasets.moons...)
_MODULES = {"grading": ".notebook.grading", "ops": ".core.ops", "datasets": ".datasets"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name], __name__)
        globals()[name] = value
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tenflang_nb' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_MODULES})


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext tenflang_nb``: register the ``%%tenflang`` magics."""
    from .notebook.magic import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext tenflang_nb``: remove the magics again."""
    from .notebook.magic import unload

    unload(ipython)
