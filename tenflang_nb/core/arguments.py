"""The rules for the arguments of the public functions, checked the way the training settings
are (``settings.py`` builds its table on :class:`Rule`), with the same wording as the command
line and the magic: ``seed must be an integer >= 0, not -1``.

A rule is one entry of :data:`ARGUMENTS` (by the keyword it checks); :func:`check_arguments`
checks keyword values against it and returns them normalized. A bad value is an
:class:`ArgumentError` (a :class:`TenFlangError`), never a numpy or matplotlib traceback from
deep inside.

>>> check_arguments(resolution=50.0, seed=3)
(50, 3)
>>> check_arguments(resolution=1.5)
Traceback (most recent call last):
...
tenflang_nb.core.arguments.ArgumentError: error: resolution must be an integer from 2 to \
100,000 (or None: the default), not 1.5
"""

from __future__ import annotations

import keyword
import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import Diagnostic, TenFlangError, printable

__all__ = ["ARGUMENTS", "MAX_GRID_POINTS", "ArgumentError", "Rule", "check_arguments",
           "check_grid", "check_instance", "check_limits", "check_name", "check_values",
           "label", "python_name", "shown"]


class ArgumentError(TenFlangError):
    """A bad argument or option value: a usage error (exit status 2 on the command line)."""

    def __init__(self, message: str) -> None:
        super().__init__([Diagnostic(message, file="")])

    def render(self, limit: int = 20) -> str:
        return "\n".join(f"error: {printable(d.message)}" for d in self.diagnostics[:limit])


@dataclass(frozen=True)
class Rule:
    """What one argument accepts: a ``kind`` (float, int, bool, str, or tuple: a list or tuple
    of str), a ``requirement`` as messages say it, a test of the value (of each str of a
    tuple), the ``choices`` of a str, and whether None is a value (``optional``).

    >>> Rule("budget", float, "a finite number >= 0", lambda v: v >= 0).check(1)
    1.0
    >>> Rule("graded", tuple, "a list of model names", python_name).check(["quad"])
    ('quad',)
    """

    name: str
    kind: type
    requirement: str
    accepts: Callable[[Any], bool] = lambda value: True
    choices: tuple[str, ...] = ()
    optional: bool = False

    def check(self, value: Any) -> Any:
        """``value`` as the argument stores it; :class:`ArgumentError` saying why not."""
        if value is None and self.optional:
            return None
        if self.kind is str:
            if isinstance(value, str) and (value in self.choices or not self.choices) \
                    and self.accepts(value):
                return value
        elif self.kind is tuple:  # names: a list or tuple of str, each accepted
            if isinstance(value, list | tuple) and all(
                    isinstance(v, str) and self.accepts(v) for v in value):
                return tuple(value)
        elif self.kind is bool:
            if isinstance(value, bool | np.bool_):
                return bool(value)
        elif isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
            number = _float(value)
            if self.kind is int and math.isfinite(number) and number.is_integer():
                if self.accepts(int(number)):
                    return int(number)
            elif self.kind is float and math.isfinite(number) and self.accepts(number):
                return number
        raise self.error(value)

    def error(self, value: Any) -> ArgumentError:
        return ArgumentError(f"{self.name} must be {self.requirement}, not {shown(value)}")


def _float(value: numbers.Real) -> float:
    """``value`` as a float; an int beyond any float (10**400) is infinite, and so refused."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def shown(value: Any) -> str:
    """A value in a message: its repr, cut short (a whole array is no help).

    >>> shown(list(range(30)))
    '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16...'
    """
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def python_name(value: str) -> bool:
    """A name Python can bind (a model's, an answer's variable).

    >>> python_name("ex4"), python_name("class"), python_name("x y")
    (True, False, False)
    """
    return value.isidentifier() and not keyword.iskeyword(value)


def label(value: str) -> bool:
    """A name that labels something in messages and seeds (an assignment, an example): not
    blank, one line without control characters.

    >>> label("ps05"), label(" "), label("a\\x1b[2J")
    (True, False, False)
    """
    return bool(value.strip()) and value.isprintable()


def _rule(name: str, kind: type, requirement: str, accepts: Callable[[Any], bool] = (
        lambda value: True), **extra: Any) -> tuple[str, Rule]:
    return name, Rule(name, kind, requirement, accepts, **extra)


MAX_RESOLUTION = 100_000  # grid points per axis (a plane has at most MAX_GRID_POINTS)
MAX_GRID_POINTS = 4_000_000

# The keywords of the public functions (the model's methods, the core's functions), one rule
# each; the training settings have theirs in settings.SETTINGS.
ARGUMENTS: Mapping[str, Rule] = dict((
    _rule("examples", int, "an integer from 1 to 1,000,000", lambda v: 1 <= v <= 10**6),
    _rule("budget", float, "a finite number >= 0 (seconds)", lambda v: v >= 0),
    _rule("sweeps", int, "an integer >= 1 (or None: all of them)", lambda v: v >= 1,
          optional=True),
    _rule("eps", float, "a number > 0 (the finite-difference step)", lambda v: v > 0),
    _rule("rtol", float, "a finite number >= 0", lambda v: v >= 0),
    _rule("atol", float, "a finite number >= 0", lambda v: v >= 0),
    _rule("max_components", int, "an integer >= 1", lambda v: v >= 1),
    _rule("iterations", int, "an integer >= 1", lambda v: v >= 1),
    _rule("cg_tol", float, "a finite number > 0", lambda v: v > 0),
    _rule("cg_iterations", int, "an integer >= 1 (or None: one per weight component)",
          lambda v: v >= 1, optional=True),
    _rule("resolution", int, f"an integer from 2 to {MAX_RESOLUTION:,} (or None: the default)",
          lambda v: 2 <= v <= MAX_RESOLUTION, optional=True),
    _rule("seed", int, "an integer >= 0", lambda v: v >= 0),
    _rule("count", int, "an integer from 1 to 1,000 (random programs)",
          lambda v: 1 <= v <= 1000),
    _rule("programs", int, "an integer from 1 to 1,000 (random programs)",
          lambda v: 1 <= v <= 1000),
    _rule("kink", bool, "True or False"),
    _rule("n", int, "an integer from 2 to 1,000,000 (the number of points)",
          lambda v: 2 <= v <= 10**6),
    _rule("noise", float, "a finite number >= 0 (the noise's standard deviation)",
          lambda v: v >= 0),
    _rule("output", str, "a string (or None: the one scalar output)", optional=True),
    _rule("scale", float, "a number > 0 (or None: 1/sqrt(fan-in))", lambda v: v > 0,
          optional=True),
    _rule("full", bool, "True or False"),
    _rule("live", bool, "True or False"),
    _rule("grading", bool, "True or False (or None: when an exercise grades the model)",
          optional=True),
    _rule("landscape", bool, "True or False"),
    _rule("boundary", bool, "True or False"),
    _rule("predict", bool, "True or False"),
    _rule("hide_lines", bool, "True or False"),
    _rule("log", bool, "True or False (or None: when the loss spans three decades)",
          optional=True),
    _rule("title", str, "a string (or None)", optional=True),
    _rule("file", str, "a string (the file's name, for messages)"),
    _rule("text", str, "a string"),
    _rule("source", str, "a program's text (a string)"),
    # grading: what a teacher writes into the locked cells (tf.grading)
    _rule("assignment", str, "the assignment's name: a string, not blank, without control "
          "characters", label),
    _rule("graded", tuple, "a list of model names (each a %%tenflang NAME)", python_name),
    _rule("no_training", tuple, "a list of model names (each a %%tenflang NAME)", python_name),
    _rule("model", str, "a model's name (its %%tenflang NAME: a Python name)", python_name),
    _rule("answer", str, "an answer's name (a Python name, as its cell names it)",
          python_name),
    _rule("fingerprint", str, "a model's fingerprint: 12 hex digits, as "
          "tf.grading.fingerprints() gives it", lambda v: re.fullmatch(r"[0-9a-f]{12}", v)
          is not None),
    _rule("weight", str, "a weight's name (a string)"),
    _rule("expected", float, "a finite number (the right answer)"),
    _rule("hint", str, "a string (or empty: no hint)"),
    _rule("starts", int, "an integer from 1 to 100", lambda v: 1 <= v <= 100),
    _rule("accuracy", float, "a number from 0 to 1", lambda v: 0 <= v <= 1),
    _rule("max_weights", int, "a whole number of at least 1 (the numbers a model's weights "
          "may hold)", lambda v: v >= 1),
    _rule("digest", str, "an answer's digest: 16 hex digits, as tf.grading.digest() gives "
          "it", lambda v: re.fullmatch(r"[0-9a-f]{16}", v) is not None),
))


def check_instance(name: str, value: Any, kinds: type | tuple[type, ...], requirement: str
                   ) -> Any:
    """``value`` when it is one of ``kinds``, else the error saying what ``name`` must be.

    >>> check_instance("paths", [1], dict, "a dict of runs")
    Traceback (most recent call last):
    ...
    tenflang_nb.core.arguments.ArgumentError: error: paths must be a dict of runs, not [1]
    """
    if isinstance(value, kinds):
        return value
    raise Rule(name, object, requirement).error(value)


def check_arguments(**values: Any) -> tuple[Any, ...]:
    """Each keyword's value checked by its rule in :data:`ARGUMENTS`, in the order given."""
    return tuple(ARGUMENTS[name].check(value) for name, value in values.items())


def check_name(name: str, value: Any) -> str:
    """A label (a model's name, a run's): one line of text that may be shown (no control
    characters: they would drive a terminal).

    >>> check_name("name", "a\\x1b[2J")
    Traceback (most recent call last):
    ...
    tenflang_nb.core.arguments.ArgumentError: error: name must be a string without control \
characters, not 'a\\x1b[2J'
    """
    value = Rule(name, str, "a string").check(value)
    if not value.isprintable():
        raise Rule(name, str, "a string without control characters").error(value)
    return value


def check_grid(resolution: Any, dims: int, default: int) -> int:
    """The points per axis of a grid over ``dims`` axes: ``resolution`` (None: ``default``),
    refused when the grid would hold more than :data:`MAX_GRID_POINTS` on a plane.

    >>> check_grid(None, 2, 60), check_grid(30.0, 2, 60)
    (60, 30)
    >>> check_grid(5000, 2, 60)
    Traceback (most recent call last):
    ...
    tenflang_nb.core.arguments.ArgumentError: error: resolution 5,000 makes 25,000,000 grid \
points on a plane (at most 4,000,000: 2,000 per axis)
    """
    (resolution,) = check_arguments(resolution=resolution)
    n = resolution or default
    if n ** dims > MAX_GRID_POINTS:
        raise ArgumentError(
            f"resolution {n:,} makes {n ** dims:,} grid points on a plane (at most "
            f"{MAX_GRID_POINTS:,}: {int(MAX_GRID_POINTS ** 0.5):,} per axis)")
    return n


def check_limits(value: Any, dims: int) -> tuple[tuple[float, float], ...] | None:
    """``limits``: None, one (low, high) for every axis, or one per axis; finite numbers with
    low < high, no wider than a float can step through.

    >>> check_limits((-1, 2), 2), check_limits(None, 1)
    (((-1.0, 2.0), (-1.0, 2.0)), None)
    >>> check_limits((2, 1), 1)
    Traceback (most recent call last):
    ...
    tenflang_nb.core.arguments.ArgumentError: error: limits must be (low, high) with finite \
low < high, or one such pair per axis (1 here), not (2, 1)
    """
    if value is None:
        return None
    bad = Rule("limits", tuple, f"(low, high) with finite low < high, or one such pair per "
               f"axis ({dims} here)").error(value)
    pairs: Sequence[Any]
    if _is_pair(value):
        pairs = [value] * dims
    elif isinstance(value, Sequence) and not isinstance(value, str) and len(value) == dims \
            and all(_is_pair(p) for p in value):
        pairs = value
    else:
        raise bad
    out = []
    for low, high in pairs:
        low, high = _float(low), _float(high)
        # a span a float cannot divide (1e308 wide, or 1e-300 at 1e10) makes no grid
        if not (math.isfinite(high - low) and low < high
                and high - low > 1e-12 * max(abs(low), abs(high), 1e-300)):
            raise bad
        out.append((low, high))
    return tuple(out)


def _is_pair(value: Any) -> bool:
    return (isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2
            and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value))


def check_values(name: str, value: Any, shape: tuple[int, ...] | None = None) -> Any:
    """Numbers (a number, a nested list or an array) that are all finite, of ``shape`` when
    given: NaN or infinity in weights makes every later number meaningless.

    >>> check_values("through", [1.0, float("nan")])
    Traceback (most recent call last):
    ...
    tenflang_nb.core.arguments.ArgumentError: error: through must be finite numbers, not \
[1.0, nan]
    """
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond a float
        raise Rule(name, float, "numbers").error(value) from None
    if not np.all(np.isfinite(array)):
        raise Rule(name, float, "finite numbers").error(value)
    if shape is not None and array.shape != tuple(shape):
        raise Rule(name, float, f"numbers of shape {list(shape)}").error(value)
    return value
