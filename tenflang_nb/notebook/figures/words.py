"""What each figure shows, in words: a short description (an image's alt text) and its values
as a small table, shown beside the picture in a collapsed section (WCAG 1.1.1: a screen
reader, or anyone who wants the numbers, gets them without reading a chart).

The tables sample what is drawn (at most :data:`ROWS` rows and :data:`COLUMNS` columns,
first and last always), to the 3 significant digits a reader can compare; the full numbers
are on the figure (``.landscape``, ``.boundary``) or the model (``.history``).

>>> from tenflang_nb.core.train import Record
>>> words = curve_words([Record(0, 1.0, 2.0), Record(1, 0.5, 1.0)])
>>> print(words.alt)  # doctest: +NORMALIZE_WHITESPACE
loss curve: the mean loss over 2 iterations, from 1 at iteration 0 to 0.5 at iteration 1
(lowest 0.5 at iteration 1).
>>> words.header, words.rows
(('iteration', 'mean loss'), [('0', '1'), ('1', '0.5')])
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ...core.boundary import Boundary
from ...core.formatting import fmt_list, fmt_number
from ...core.landscape import Landscape
from ...core.train import Record

__all__ = ["COLUMNS", "ROWS", "FigureWords", "boundary_words", "curve_words", "figure_html",
           "landscape_words", "values_html"]

ROWS = 21  # a table's rows at most (a curve's points, a grid's rows)
COLUMNS = 9  # a grid's columns at most: a row of a 9-column table still reads aloud


@dataclass(frozen=True)
class FigureWords:
    """A figure in words: ``alt`` (one or two sentences), and a table of its values;
    ``what`` the figure is (the table's summary names it: a page may hold several)."""

    what: str
    alt: str
    caption: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)


def _num(x: float) -> str:
    return fmt_number(float(x), 3)


def _sample(n: int, limit: int) -> np.ndarray:
    """At most ``limit`` indices spread evenly over ``range(n)``, the first and last always.

    >>> _sample(5, 3).tolist(), _sample(2, 9).tolist()
    ([0, 2, 4], [0, 1])
    """
    if n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(int))


def curve_words(history: Sequence[Record], label: str | None = None) -> FigureWords:
    """The loss curve of ``history``: where it starts, ends and is lowest, and a sample of
    its points (with the test loss when the records hold one)."""
    name = f"loss curve of {label}" if label else "loss curve"
    header = ("iteration", "mean loss")
    if not history:
        return FigureWords("loss curve", f"{name}: not trained yet.", name, header)
    tests = any(r.test_loss is not None for r in history)
    header += ("test loss",) * tests
    losses = np.array([r.loss for r in history], dtype=float)
    first, last = history[0], history[-1]
    alt = (f"{name}: the mean loss over {len(history)} iteration{'s' * (len(history) > 1)}, "
           f"from {_num(first.loss)} at iteration {first.iteration} to {_num(last.loss)} at "
           f"iteration {last.iteration}")
    if np.any(np.isfinite(losses)):
        low = history[int(np.nanargmin(np.where(np.isfinite(losses), losses, np.nan)))]
        alt += f" (lowest {_num(low.loss)} at iteration {low.iteration})"
    if tests and last.test_loss is not None:
        alt += f"; test loss {_num(last.test_loss)} at the end"
    rows = []
    for i in _sample(len(history), ROWS):
        r = history[int(i)]
        test = ("" if r.test_loss is None else _num(r.test_loss),) * tests
        rows.append((str(r.iteration), _num(r.loss), *test))
    caption = f"{name}: the mean loss at {len(rows)} of its iterations"
    return FigureWords("loss curve", alt + ".", caption, header, rows)


def _where(values: np.ndarray, pick: str) -> tuple[int, ...] | None:
    finite = np.where(np.isfinite(values), values, np.nan)
    if not np.any(np.isfinite(finite)):
        return None
    flat = np.nanargmin(finite) if pick == "min" else np.nanargmax(finite)
    return tuple(int(i) for i in np.unravel_index(int(flat), values.shape))


def landscape_words(land: Landscape, title: str) -> FigureWords:
    """A loss landscape: its slice, where the loss is lowest and highest, each path's start
    and end; the table samples the loss over the grid (a line: coordinate and loss; a plane:
    one row per sampled second coordinate, one column per sampled first)."""
    plane = land.plane
    loss = np.asarray(land.loss, dtype=float)
    names = [str(label) for label in plane.labels]
    kind = "line" if plane.dims == 1 else "plane"

    def at(index: tuple[int, ...]) -> str:
        # loss[j, i] lies at (grid[0][i], grid[1][j])
        coords = [land.grid[0][index[-1]]] + ([land.grid[1][index[0]]] if plane.dims == 2
                                               else [])
        return ", ".join(f"{n} = {_num(c)}" for n, c in zip(names, coords, strict=True))

    alt = f"loss landscape ({title}): the mean loss {land.loss_name} over a {kind} of weights"
    low, high = _where(loss, "min"), _where(loss, "max")
    if low is not None and high is not None:
        alt += (f", lowest {_num(loss[low])} at {at(low)}, highest {_num(loss[high])} "
                f"at {at(high)}")
    for path in land.paths:
        if len(path):
            start = ", ".join(_num(c) for c in path.coords[0])
            end = ", ".join(_num(c) for c in path.coords[-1])
            alt += (f"; path {path.label}: {len(path)} points from ({start}) to ({end}), "
                    f"loss {_num(path.loss[0])} to {_num(path.loss[-1])}")
    if plane.dims == 1:
        header: tuple[str, ...] = (names[0], f"mean loss {land.loss_name}")
        rows = [(_num(land.grid[0][i]), _num(loss[i])) for i in _sample(len(loss), ROWS)]
        caption = f"The mean loss at {len(rows)} points of the line"
    else:
        cols, lines = _sample(len(land.grid[0]), COLUMNS), _sample(len(land.grid[1]), ROWS)
        header = (f"{names[1]} \\ {names[0]}", *(_num(land.grid[0][i]) for i in cols))
        rows = [(_num(land.grid[1][j]), *(_num(loss[j, i]) for i in cols)) for j in lines]
        caption = (f"The mean loss on a {len(rows)} x {len(cols)} sample of the grid: a row "
                   f"per {names[1]}, a column per {names[0]}")
    return FigureWords("loss landscape", alt + ".", caption, header, rows)


def boundary_words(b: Boundary, title: str) -> FigureWords:
    """A decision boundary: its axes' ranges, the points, the accuracy (the title says it)
    and the output's range; the table samples the output over the grid."""
    x, y = b.axes
    out = np.asarray(b.output, dtype=float)
    finite = out[np.isfinite(out)]
    points = [f"{len(b.train.xy)} training points (circles)"]
    if b.test is not None:
        points.append(f"{len(b.test.xy)} test points (triangles)")
    alt = (f"decision boundary, {title}: the output {b.plane.output} over {x} from "
           f"{_num(b.xs[0])} to {_num(b.xs[-1])} and {y} from {_num(b.ys[0])} to "
           f"{_num(b.ys[-1])}")
    if len(finite):
        alt += f", between {_num(finite.min())} and {_num(finite.max())}"
    if b.level is not None:
        alt += f"; a line where it crosses {_num(b.level)}"
    alt += f"; {fmt_list(points)} coloured by their label."
    cols, lines = _sample(len(b.xs), COLUMNS), _sample(len(b.ys), ROWS)
    header = (f"{y} \\ {x}", *(_num(b.xs[i]) for i in cols))
    rows = [(_num(b.ys[j]), *(_num(out[j, i]) for i in cols)) for j in lines]
    caption = (f"The output {b.plane.output} on a {len(rows)} x {len(cols)} sample of the "
               f"grid: a row per {y}, a column per {x}")
    return FigureWords("decision boundary", alt, caption, header, rows)


def values_html(words: FigureWords) -> str:
    """The table of ``words`` in a collapsed section (its summary says what it holds)."""
    # no styles: the notebook's (JupyterLab's, nbconvert's, the website's) table styles apply
    head = "".join(f"<th scope='col'>{html.escape(h)}</th>" for h in words.header)
    body = "".join(
        # the first column says where each row is: a row header
        f"<tr><th scope='row'>{html.escape(row[0])}</th>"
        + "".join(f"<td>{html.escape(v)}</td>" for v in row[1:]) + "</tr>"
        for row in words.rows)
    return ("<details class='tf-figure-values' style='font-size:12px;margin:2px 0'>"
            f"<summary>The {html.escape(words.what)}'s values as a table</summary>"
            f"<table><caption>{html.escape(words.caption)}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>")


def figure_html(png: bytes, words: FigureWords) -> str:
    """The picture (a data URI: it reads in an untrusted or exported notebook too) with
    ``words.alt`` as its alt text, and its values in a collapsed table under it."""
    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return (f"<div class='tf-figure'><img alt='{html.escape(words.alt, quote=True)}' "
            f"src='{src}' style='max-width:100%'/>{values_html(words)}</div>")
