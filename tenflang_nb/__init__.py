"""tenflang_nb: TenFlang, a tiny language for learning backpropagation, and its notebook tools.

The core (``tenflang_nb.core``) parses, compiles, interprets and trains without IPython; the
notebook layer is loaded only by ``%load_ext tenflang_nb``.

>>> import tenflang_nb as tf
>>> gcp = tf.compile(tf.parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n"))
>>> gcp.gradient_names()
{'w': 'd/L/d/w'}
"""

from __future__ import annotations

from typing import Any

from .core.api import (
    BackpropCheck,
    DataTable,
    Gcp,
    GradientDescent,
    Program,
    TenFlangError,
    TrainResult,
    TrainSettings,
    check,
    check_backprop,
    compile,
    evaluate,
    interpret,
    load_data,
    parse,
    parse_file,
    preprocess,
    train,
    trainer,
)
from .core.examples import SEED_EXAMPLE

__version__ = "0.1.0"

__all__ = [
    "SEED_EXAMPLE", "BackpropCheck", "DataTable", "Gcp", "GradientDescent", "Program",
    "TenFlangError", "TrainResult", "TrainSettings", "__version__", "check", "check_backprop",
    "compile", "evaluate", "interpret",
    "load_data", "load_ipython_extension", "parse", "parse_file", "preprocess", "train",
    "trainer", "unload_ipython_extension",
]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext tenflang_nb``: register the ``%%tenflang`` magics."""
    from .notebook.magic import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext tenflang_nb``: remove the magics again."""
    from .notebook.magic import unload

    unload(ipython)
