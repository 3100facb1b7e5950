"""Any matplotlib figure a cell draws (a tutorial's own ``pyplot`` plot), in words: alt text
made of what the figure says about itself (its titles, axis labels and scales, each line's,
point set's and image's label and range) and its values as collapsed tables
(``figures.words``). A cell gets a good description by giving its plot a good title and
labels.

The extension shows every ``matplotlib.figure.Figure`` this way (``magic.load``): the PNG as
before (nbval, exports and other frontends keep it) with its alt text in the metadata, and
HTML beside it, the picture with the alt text and the tables: JupyterLab and nbconvert's
lab template ignore an ``image/png``'s alt metadata and prefer the HTML.

>>> from matplotlib.figure import Figure
>>> fig = Figure()
>>> ax = fig.subplots()
>>> _ = ax.plot([0, 1, 2], [1.0, 0.25, 0.5], label="loss"); _ = ax.set_title("training")
>>> _ = ax.set_xlabel("step")
>>> alt, tables = plot_words(fig)
>>> print(alt)  # doctest: +NORMALIZE_WHITESPACE
training: y against step; line “loss”: 3 points, from 1 at step 0 to 0.5 at step 2, lowest 0.25
at step 1.
>>> tables[0].header, tables[0].rows[1]
(('step', 'loss'), ('1', '0.25'))
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from .figures.words import COLUMNS, ROWS, FigureWords, values_html
from .figures.words import _num as num
from .figures.words import _sample as sample

__all__ = ["plot_bundle", "plot_words"]

PLACEHOLDER = "No description has been provided for this image"  # nbconvert's, for the tests
SHORT = 12  # an axis label longer than this (its remarks in brackets aside) is x or y


def _clean(text: str) -> str:
    """A label as words: mathtext's ``$`` and backslashes dropped, spaces collapsed."""
    return " ".join(text.replace("$", "").replace("\\", "").split())


def _titles(ax: Any) -> str:
    return ", ".join(t for t in (_clean(ax.get_title(loc)) for loc in ("left", "center",
                                                                       "right")) if t)


def _axis(ax: Any, which: str) -> tuple[str, str]:
    """An axis' full name (its label, scale and direction) and its short name for ranges."""
    label = _clean(getattr(ax, f"get_{which}label")())
    notes = ["log scale"] * (getattr(ax, f"get_{which}scale")() == "log")
    if getattr(ax, f"{which}axis_inverted")():
        notes.append("reversed")
    full = (label or which) + (f" ({', '.join(notes)})" if notes else "")
    short = re.sub(r"\s*\([^)]*\)", "", label).strip()
    return full, (short if short and len(short) <= SHORT else which)


def _finite(values: np.ndarray) -> np.ndarray:
    return values[np.isfinite(values)]


def _span(values: np.ndarray) -> str:
    finite = _finite(values)
    return f"from {num(finite.min())} to {num(finite.max())}" if len(finite) else "not finite"


def _label(artist: Any) -> str:
    """An artist's label (a legend's entry), or "" (matplotlib's ``_child0`` is none)."""
    label = _clean(str(artist.get_label()))
    return "" if label.startswith("_") else label


def _quoted(name: str) -> str:
    return f" \u201c{name}\u201d" if name else ""


def _line_sentence(name: str, x: np.ndarray, y: np.ndarray, xname: str) -> str:
    text = f"line{_quoted(name)}: {len(y)} point{'s' * (len(y) != 1)}"
    if len(y):
        text += f", from {num(y[0])} at {xname} {num(x[0])} to {num(y[-1])} at {xname} {num(x[-1])}"
    ok = np.isfinite(y)
    if ok.any() and len(y) > 2:
        low = int(np.flatnonzero(ok)[np.argmin(y[ok])])
        text += f", lowest {num(y[low])} at {xname} {num(x[low])}"
    return text


def _series(ax: Any, title: str) -> tuple[list[str], list[FigureWords]]:
    """The lines and point sets of ``ax``: a clause each, and their tables (lines over the
    same x values share one)."""
    (xfull, xname), (yfull, yname) = _axis(ax, "x"), _axis(ax, "y")
    clauses: list[str] = []
    tables: list[FigureWords] = []
    plot = f"\u201c{title}\u201d plot" if title else "plot"
    groups: list[tuple[np.ndarray, list[tuple[str, np.ndarray]]]] = []
    for k, line in enumerate(ax.get_lines()):
        x = np.asarray(line.get_xdata(), dtype=float).ravel()
        y = np.asarray(line.get_ydata(), dtype=float).ravel()
        name = _label(line) or f"{k + 1}"
        clauses.append(_line_sentence(name, x, y, xname))
        for gx, members in groups:
            if gx.shape == x.shape and np.array_equal(gx, x, equal_nan=True):
                members.append((name, y))
                break
        else:
            groups.append((x, [(name, y)]))
    for x, members in groups:
        picked = sample(len(x), ROWS)
        names = [n for n, _ in members]
        rows = [(num(x[i]), *(num(y[i]) for _, y in members)) for i in picked]
        caption = (f"The {plot}: {', '.join(names)} at {len(rows)} of its {len(x)} values "
                   f"of {xfull}")
        what = f"{plot} (line {names[0]})" if len(groups) > 1 else plot
        tables.append(FigureWords(what, "", caption, (xfull, *names), rows))
    for coll in ax.collections:
        offsets = np.asarray(coll.get_offsets(), dtype=float)
        if offsets.ndim != 2 or not len(offsets) or not hasattr(coll, "get_sizes"):
            continue  # not a scatter's points (a contour set, a filled area)
        name = _label(coll)
        colours = coll.get_array()
        clause = (f"{len(offsets)} points{_quoted(name)}, {xname} {_span(offsets[:, 0])}, "
                  f"{yname} {_span(offsets[:, 1])}")
        value = colours is not None and len(colours) == len(offsets)
        if value:
            clause += f", coloured by a value {_span(np.asarray(colours, dtype=float))}"
        clauses.append(clause)
        order = np.argsort(offsets[:, 0], kind="stable")
        picked = order[sample(len(order), ROWS)]
        rows = [(num(offsets[i, 0]), num(offsets[i, 1]),
                 *((num(colours[i]),) if value else ())) for i in picked]
        caption = (f"The {plot}: {len(rows)} of its {len(offsets)} points{_quoted(name)}, "
                   f"by {xfull}")
        tables.append(FigureWords(f"scatter of{_quoted(name) or ' points'}", "", caption,
                                  (xfull, yfull, *(("colour value",) if value else ())), rows))
    return clauses, tables


def _image_table(image: Any, name: str) -> FigureWords:
    values = np.ma.filled(np.ma.asarray(image.get_array(), dtype=float), np.nan)
    if values.ndim == 3:  # an RGB(A) picture: its mean brightness
        values = values[..., :3].mean(axis=2)
    lines, cols = sample(values.shape[0], ROWS), sample(values.shape[1], COLUMNS)
    rows = [(str(j), *(num(values[j, i]) for i in cols)) for j in lines]
    caption = (f"The {name}: its values, a row of pixels a row (top first)"
               if len(rows) == values.shape[0] and len(cols) == values.shape[1] else
               f"The {name}: its values on {len(rows)} of its {values.shape[0]} rows (top "
               f"first) and {len(cols)} of its {values.shape[1]} columns")
    return FigureWords(name, "", caption, ("row \\ column", *(str(i) for i in cols)), rows)


def _image_clause(images: list[Any]) -> str:
    arrays = [np.ma.filled(np.ma.asarray(i.get_array(), dtype=float), np.nan) for i in images]
    shapes = {a.shape[:2] for a in arrays}
    size = " or ".join(f"{h} x {w}" for h, w in sorted(shapes))
    maps = sorted({i.get_cmap().name for i in images})
    every = np.concatenate([a.ravel() for a in arrays])
    many = len(images) > 1
    return (f"{'an ' if not many else f'{len(images)} '}image{'s' * many} of {size} values"
            f"{' each' * many} (colour map {', '.join(maps)}), {_span(every)}")


def plot_words(fig: Any) -> tuple[str, list[FigureWords]]:
    """``fig``'s alt text (its title, then each panel) and a table per line set, point set
    and image. Panels that only hold an image (a grid of pictures) are described together,
    by their titles."""
    suptitle = getattr(fig, "_suptitle", None)
    head = _clean(suptitle.get_text()) if suptitle is not None else ""
    panels: list[str] = []
    pictures: list[tuple[str, Any]] = []
    tables: list[FigureWords] = []
    for n, ax in enumerate(fig.axes):
        title = _titles(ax)
        clauses, series = _series(ax, title)
        images = ax.get_images()
        if images and not clauses:
            pictures += [(title or f"{n + 1}", image) for image in images]
            continue
        if not clauses:
            continue  # a colour bar, an empty panel
        (xfull, _), (yfull, _) = _axis(ax, "x"), _axis(ax, "y")
        text = f"{title}: " if title else ""
        text += f"{yfull} against {xfull}; " + "; ".join(clauses)
        if images:
            text += "; over " + _image_clause(images)
            tables += [_image_table(i, f"image{_quoted(title or str(n + 1))}")
                       for i in images]
        panels.append(text)
        tables += series
    if pictures:
        titles = [t for t, _ in pictures]
        panels.append(_image_clause([i for _, i in pictures]) + ", titled " + ", ".join(titles))
        tables += [_image_table(i, f"image{_quoted(t)}") for t, i in pictures]
    body = ". ".join(panels) if panels else "an empty figure"
    if len(panels) > 1:
        body = f"{len(panels)} panels. {body}"
    return (f"{head}: {body}." if head else f"{body}."), tables


def plot_html(png: bytes, alt: str, tables: list[FigureWords]) -> str:
    """The picture with ``alt``, and each table collapsed under it (``figures.words``)."""
    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return (f"<div class='tf-figure'><img alt='{html.escape(alt, quote=True)}' src='{src}' "
            f"style='max-width:100%'/>{''.join(values_html(t) for t in tables)}</div>")


def _png(fig: Any, printer: Callable[[Any], Any] | None) -> bytes:
    """The PNG the notebook shows anyway (the inline backend's), else one at its defaults."""
    out = printer(fig) if printer is not None else None
    if isinstance(out, tuple):  # a retina PNG and its size
        out = out[0]
    if isinstance(out, str) and out:  # matplotlib-inline's printer gives base64
        return base64.b64decode(out)
    if isinstance(out, bytes) and out:
        return out
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def plot_bundle(fig: Any, formatter: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the extension shows for ``fig``: its PNG (from ``formatter``, IPython's
    ``image/png`` formatter, when one is registered for it) with the alt text as metadata,
    and the HTML of :func:`plot_html`."""
    printer = None
    if formatter is not None:
        try:
            printer = formatter.lookup(fig)
        except KeyError:
            pass
    png = _png(fig, printer)
    alt, tables = plot_words(fig)
    return ({"image/png": png, "text/html": plot_html(png, alt, tables)},
            {"image/png": {"alt": alt}})
