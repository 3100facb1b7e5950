"""The classic 2-D data sets of TensorFlow Playground and scikit-learn (XOR, circles, two
moons, spirals, Gaussian blobs), made with noise, size and seed, and split into training and
test data; :func:`split` splits any data the same way (your own, from a CSV file, say).

Each set has two classes of (about) equal size, labelled ``labels`` (0 and 1 by default; -1
and 1 suit a ``tanh`` output), in shuffled order, with coordinates of size about 1. The
point's two coordinates become the data's input columns, named as the program declares its
input: one name (``x="x"``) for ``declare input x [2]``, two (``x=("x1", "x2")``) for two
scalar inputs; the label is the column ``y`` (its ``exp_output``).

>>> train, test = moons(200, noise=0.1, seed=0, test=0.25)
>>> len(train), len(test), train.shape("x"), sorted(set(train.columns["y"].tolist()))
(150, 50, (2,), [0.0, 1.0])
>>> blobs(10, x=("a", "b")).train.names
['a', 'b', 'y']
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .arguments import Rule, check_arguments
from .bindings import load
from .datafiles import DataTable, from_columns
from .errors import TenFlangError
from .formatting import fmt_list, fmt_number
from .lexical import is_name

__all__ = ["DATASETS", "Dataset", "Split", "blobs", "circles", "make", "moons", "points",
           "spirals", "split", "xor"]

Shape2D = Callable[[np.random.Generator, int, int], np.ndarray]  # (rng, n, class) -> (n, 2)


def _xor(rng: np.random.Generator, n: int, label: int) -> np.ndarray:
    # uniform in the two quadrants of the class (1: the signs differ), a little off the axes
    u = rng.uniform(0.05, 1.0, size=(n, 2)) * np.where(rng.random((n, 1)) < 0.5, 1.0, -1.0)
    u[:, 1] *= -1.0 if label else 1.0
    return u


def _circles(rng: np.random.Generator, n: int, label: int) -> np.ndarray:
    # class 0 on the circle of radius 1, class 1 on the one of radius 0.5 (scikit-learn's)
    t = rng.uniform(0.0, 2 * np.pi, n)
    return (0.5 if label else 1.0) * np.column_stack([np.cos(t), np.sin(t)])


def _moons(rng: np.random.Generator, n: int, label: int) -> np.ndarray:
    # scikit-learn's two moons, centred on the origin
    t = rng.uniform(0.0, np.pi, n)
    if label:
        return np.column_stack([0.5 - np.cos(t), 0.25 - np.sin(t)])
    return np.column_stack([np.cos(t) - 0.5, np.sin(t) - 0.25])


def _spirals(rng: np.random.Generator, n: int, label: int) -> np.ndarray:
    # TensorFlow Playground's two arms: 1.75 turns each, the second the first turned by pi
    r = rng.uniform(0.05, 1.0, n)
    angle = 1.75 * 2 * np.pi * r + label * np.pi
    return r[:, None] * np.column_stack([np.sin(angle), np.cos(angle)])


def _blobs(rng: np.random.Generator, n: int, label: int) -> np.ndarray:
    centre = 0.5 if label else -0.5
    return rng.normal(centre, 0.3, size=(n, 2))


@dataclass(frozen=True)
class Dataset:
    """One kind of data set: how a class's points are drawn (before the noise)."""

    name: str
    draw: Shape2D
    doc: str


# The data sets, by name: adding one is one entry (and its drawing function).
DATASETS: dict[str, Dataset] = {d.name: d for d in (
    Dataset("xor", _xor, "points in the four quadrants, class 1 where the signs differ"),
    Dataset("circles", _circles, "a circle of radius 0.5 (class 1) inside one of radius 1"),
    Dataset("moons", _moons, "two interleaving half circles (scikit-learn's two moons)"),
    Dataset("spirals", _spirals, "two spiral arms of 1.75 turns, one a half turn from the "
                                 "other"),
    Dataset("blobs", _blobs, "two Gaussian blobs around (-0.5, -0.5) and (0.5, 0.5)"),
)}


@dataclass(frozen=True)
class Split:
    """Training and test data (``test`` is None when no test share was asked for); unpacks
    as ``train, test = ...``."""

    train: DataTable
    test: DataTable | None

    def __iter__(self) -> Iterator[DataTable | None]:
        return iter((self.train, self.test))


def points(name: str, n: int = 200, *, noise: float = 0.1, seed: int = 0
           ) -> tuple[np.ndarray, np.ndarray]:
    """The ``n`` points of data set ``name`` (an (n, 2) array) and their classes (0 or 1),
    shuffled; ``noise``: the standard deviation of the Gaussian noise added to each
    coordinate.

    >>> xy, classes = points("xor", 4, noise=0.0, seed=1)
    >>> xy.shape, classes.tolist(), bool(np.all((xy[:, 0] * xy[:, 1] < 0) == classes))
    ((4, 2), [0, 1, 1, 0], True)
    """
    dataset = DATASETS[Rule("name", str, f"a data set's name: {fmt_list(list(DATASETS), 'or')}",
                            choices=tuple(DATASETS)).check(name)]
    n, noise, seed = check_arguments(n=n, noise=noise, seed=seed)
    rng = np.random.default_rng(seed)
    sizes = (n // 2, n - n // 2)
    xy = np.concatenate([dataset.draw(rng, size, label) for label, size in enumerate(sizes)])
    classes = np.repeat([0, 1], sizes)
    order = rng.permutation(len(classes))  # before the noise: the same order at any noise
    xy, classes = xy[order], classes[order]
    return (xy + rng.normal(0.0, noise, size=xy.shape) if noise else xy), classes


def make(name: str, n: int = 200, *, noise: float = 0.1, seed: int = 0, test: float = 0.0,
         x: str | Sequence[str] = "x", y: str = "y",
         labels: tuple[float, float] = (0.0, 1.0)) -> Split:
    """Data set ``name`` (see :data:`DATASETS`) as training data and, when ``test`` > 0,
    test data: ``test`` is the test share (0.25) or count (50) of the ``n`` points.

    ``x``: the input's name (one column of 2 values: ``declare input x [2]``) or two names
    (two columns: two scalar inputs); ``y``: the label's name, each class's label from
    ``labels`` (class 0, class 1).

    >>> train, test = make("circles", 20, test=5, x=("u", "v"), labels=(-1, 1))
    >>> len(train), len(test), sorted(set(test.columns["y"].tolist()))
    (15, 5, [-1.0, 1.0])
    """
    columns = _column_names(x, y)
    if not (isinstance(labels, list | tuple) and len(labels) == 2 and all(
            isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)
            and math.isfinite(v) for v in labels)):
        raise Rule("labels", tuple, "two finite numbers (class 0's, class 1's)").error(labels)
    n, noise, seed = check_arguments(n=n, noise=noise, seed=seed)
    xy, classes = points(name, n, noise=noise, seed=seed)
    values = np.where(classes == 1, float(labels[1]), float(labels[0]))
    if len(columns) == 2:
        data = {columns[0]: xy, columns[1]: values}
    else:
        data = {columns[0]: xy[:, 0], columns[1]: xy[:, 1], columns[2]: values}
    noisy = f", noise {fmt_number(noise)}" if noise else ""
    table = from_columns(data, f"<{name}: {n} points{noisy}, seed {seed}>")
    return split(table, test, seed=seed)


def split(data: Any, test: float = 0.25, *, seed: int = 0) -> Split:
    """Any data (a table, a file, Python values) split at random into training and test
    data: ``test`` is the test share (0 < test < 1) or count (an int); 0 keeps it whole.

    >>> from tenflang_nb.core.datafiles import from_columns
    >>> train, test = split(from_columns({"x": np.arange(8.0)}), 0.25, seed=3)
    >>> len(train), len(test), sorted(train.columns["x"].tolist() + test.columns["x"].tolist())
    (6, 2, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    """
    (seed,) = check_arguments(seed=seed)
    whole = isinstance(test, int | np.integer) and not isinstance(test, bool | np.bool_)
    if not (whole or (isinstance(test, float | np.floating) and math.isfinite(test))):
        raise Rule("test", float, "a share (0.25), a count (50) or 0").error(test)
    table = load(data)
    n = len(table)
    if test == 0:
        return Split(table, None)
    # a share is 0 < test < 1 before it is counted (1e308 of the examples is no count)
    count = int(test) if whole else round(float(test) * n) if 0 < test < 1 else 0
    if not 0 < count < n:
        raise TenFlangError.at(
            f"cannot hold out {count if whole else 'a share ' + fmt_number(float(test))} of {n} "
            "examples for testing: both parts need at least one", file=table.file,
            hint="give a share between 0 and 1 (0.25) or a count below the data's size")
    order = np.random.default_rng(seed).permutation(n)
    return Split(table.take(np.sort(order[count:])), table.take(np.sort(order[:count])))


def _column_names(x: str | Sequence[str], y: str) -> list[str]:
    names = [x] if isinstance(x, str) else list(x) if isinstance(x, list | tuple) else []
    if len(names) not in (1, 2):
        raise Rule("x", tuple, "one name (an input [2]) or two (two scalar inputs)").error(x)
    for keyword, name in [*(("x", name) for name in names), ("y", y)]:
        if not (isinstance(name, str) and is_name(name)):
            raise Rule(keyword, str, "TenFlang names of data columns").error(name)
    if len({*names, y}) != len(names) + 1:
        raise TenFlangError.at(f"the columns need different names, not {fmt_list([*names, y])}")
    return [*names, y]


def _maker(name: str) -> Callable[..., Split]:
    def made(n: int = 200, *, noise: float = 0.1, seed: int = 0, test: float = 0.0,
             x: str | Sequence[str] = "x", y: str = "y",
             labels: tuple[float, float] = (0.0, 1.0)) -> Split:
        return make(name, n, noise=noise, seed=seed, test=test, x=x, y=y, labels=labels)

    made.__name__ = made.__qualname__ = name
    made.__doc__ = (f"The {name} data set ({DATASETS[name].doc}): ``make({name!r}, ...)``; "
                    "see :func:`make`.")
    return made


xor = _maker("xor")
circles = _maker("circles")
moons = _maker("moons")
spirals = _maker("spirals")
blobs = _maker("blobs")
