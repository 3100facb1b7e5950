"""A cell's own matplotlib figure in words (notebook/plot_words.py): the alt text says what its
title, labels and data say, the tables hold each line's, point set's and image's values (ends
included), and with ``%load_ext tenflang_nb`` IPython shows a pyplot figure as its PNG with
the alt text, and HTML that keeps both through JupyterLab's sanitizer (an untrusted
notebook). The browser side (axe, the ARIA snapshot of an exported tutorial) is
tests/test_a11y_figures.py."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from lab_sanitizer import sanitize_tree, shown_text
from matplotlib.figure import Figure

from tenflang_nb.notebook.figures.words import COLUMNS, ROWS
from tenflang_nb.notebook.plot_words import PLACEHOLDER, plot_words


def test_lines_on_a_log_axis_share_a_table_sampled_ends_included() -> None:
    fig = Figure()
    ax = fig.subplots()
    hs = 10.0 ** -np.arange(1, 31)
    ax.loglog(hs, hs * 2, label="forward")
    ax.loglog(hs, hs**2, label="central")
    ax.invert_xaxis()
    ax.set(xlabel="h", ylabel="error", title="errors")
    alt, [table] = plot_words(fig)
    assert alt.startswith("errors: error (log scale) against h (log scale, reversed); "), alt
    assert "line \u201cforward\u201d: 30 points, from 0.2 at h 0.1 to 2e-30 at h 1e-30" in alt
    assert "lowest 1e-60 at h 1e-30" in alt, alt
    assert table.header == ("h (log scale, reversed)", "forward", "central")
    assert len(table.rows) == ROWS
    assert table.rows[0] == ("0.1", "0.2", "0.01") and table.rows[-1][0] == "1e-30"
    assert table.what == "\u201cerrors\u201d plot"


def test_points_are_described_by_their_ranges_and_tabled_in_x_order() -> None:
    fig = Figure()
    ax = fig.subplots()
    ax.scatter([3.0, -1.0, 2.0], [0.5, 0.25, 1.0], c=[1, 0, 1])
    ax.set_xlabel("a rather long input axis name")
    alt, [table] = plot_words(fig)
    # no title and a long label: the ranges say x, the axis is named in full once
    assert alt == ("y against a rather long input axis name; 3 points, x from -1 to 3, "
                   "y from 0.25 to 1, coloured by a value from 0 to 1."), alt
    assert [row[0] for row in table.rows] == ["-1", "2", "3"]
    assert table.rows[0] == ("-1", "0.25", "0")


def test_a_grid_of_images_is_named_by_its_titles_and_each_image_tabled() -> None:
    fig = Figure()
    fig.suptitle("digits")
    pictures = np.arange(2 * 8 * 12, dtype=float).reshape(2, 8, 12)
    for ax, values, title in zip(fig.subplots(1, 2), pictures, ("5", "0"), strict=True):
        ax.imshow(values, cmap="gray_r")
        ax.set_title(title)
        ax.axis("off")
    alt, tables = plot_words(fig)
    assert alt == ("digits: 2 images of 8 x 12 values each (colour map gray_r), from 0 to "
                   "191, titled 5, 0."), alt
    assert [t.what for t in tables] == ["image \u201c5\u201d", "image \u201c0\u201d"]
    second = tables[1]
    assert len(second.header) == 1 + COLUMNS and second.header[-1] == "11"
    assert second.rows[0][:2] == ("0", "96") and second.rows[-1][-1] == "191"


def test_an_empty_figure_still_says_so() -> None:
    alt, tables = plot_words(Figure())
    assert alt == "an empty figure." and tables == []


@pytest.fixture(scope="module")
def ip() -> Iterator[Any]:
    from IPython.testing.globalipapp import get_ipython

    shell = get_ipython()
    shell.run_line_magic("load_ext", "tenflang_nb")
    shell.run_line_magic("matplotlib", "inline")  # pyplot's printer, as in a notebook
    yield shell


def test_the_extension_shows_a_pyplot_figure_with_alt_text_and_its_values(ip: Any) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        ax.plot([0, 1, 2], [3.0, 1.0, 2.0], label="loss")
        ax.set(title="training", xlabel="step", ylabel="mean loss")
        data, metadata = ip.display_formatter.format(fig)
    finally:
        plt.close(fig)
    png = data["image/png"]
    assert png[:4] == b"\x89PNG"
    alt = metadata["image/png"]["alt"]
    assert alt.startswith("training: mean loss against step; line \u201closs\u201d: 3 points")
    assert PLACEHOLDER not in alt
    # the HTML shows the very PNG, and keeps its alt text and table untrusted
    tree = sanitize_tree(data["text/html"])
    [img] = tree.find_all("img")
    assert img.attrs["alt"] == alt
    assert img.attrs["src"] == "data:image/png;base64," + base64.b64encode(png).decode()
    [details] = tree.find_all("details")
    summary = shown_text(details.find_all("summary")[0])
    assert summary == "The \u201ctraining\u201d plot's values as a table", summary
    cells = [shown_text(c) for c in details.find_all("td")]
    assert cells == ["3", "1", "2"], cells


def test_a_shown_pyplot_figure_is_freed_after_its_cell(ip: Any) -> None:
    """Showing a pyplot figure asks for the garbage collector's full pass after the cell
    (issue 26): pyplot closes it, and what is left of it is cycles."""
    import gc
    import weakref

    import matplotlib.pyplot as plt

    from tenflang_nb.notebook import memory

    memory.trim()  # nothing asked for yet
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [3.0, 1.0, 2.0])
    shown = weakref.ref(fig)
    del fig, ax
    gc.disable()  # only the trim's pass may free it
    try:
        plt.show()  # as a cell does: shown through the extension's formatter, then closed
        assert memory._COLLECT["soon"]
        assert shown() is not None  # cycles: not freed by reference counts alone
        memory.trim()  # what the extension runs after each cell
        assert shown() is None and not memory._COLLECT["soon"]
    finally:
        gc.enable()


def test_unloading_the_extension_gives_pyplot_its_own_printer_back(ip: Any) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        ax.plot([0, 1], [0, 1])
        ip.run_line_magic("unload_ext", "tenflang_nb")
        data, metadata = ip.display_formatter.format(fig)
    finally:
        ip.run_line_magic("load_ext", "tenflang_nb")
        plt.close(fig)
    assert "text/html" not in data and "alt" not in metadata.get("image/png", {}), metadata
