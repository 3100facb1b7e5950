"""The figures in words (figures/words.py): the alt text says what the numbers say, the
tables sample the drawn values (ends included), and the HTML keeps its alt text and table
through JupyterLab's sanitizer (an untrusted notebook). The browser side (axe, the ARIA
snapshot, nbconvert) is tests/test_a11y_figures.py."""

from __future__ import annotations

import numpy as np
from lab_sanitizer import sanitize_tree, shown_text

from tenflang_nb import datasets
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.formatting import fmt_number
from tenflang_nb.core.train import Record
from tenflang_nb.notebook import TenFlangModel
from tenflang_nb.notebook.figures.words import COLUMNS, ROWS, curve_words, figure_html

DATA = {"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}


def _trained() -> TenFlangModel:
    net = TenFlangModel(SEED_EXAMPLE, "net")
    net.train(DATA, lr=2, max_iter=40)
    return net


def test_a_curve_in_words_samples_its_history_ends_included() -> None:
    history = [Record(i, 1.0 / (i + 1), 1.0, test_loss=2.0 / (i + 1)) for i in range(500)]
    words = curve_words(history, "run")
    assert len(words.rows) == ROWS
    assert words.rows[0] == ("0", "1", "2") and words.rows[-1][0] == "499"
    assert words.header == ("iteration", "mean loss", "test loss")
    assert "from 1 at iteration 0 to 0.002 at iteration 499" in words.alt, words.alt
    assert "test loss 0.004 at the end" in words.alt
    assert curve_words([]).alt == "loss curve: not trained yet."


def test_a_landscape_in_words_names_its_lowest_point_and_samples_the_grid() -> None:
    fig = _trained().landscape(resolution=50)
    land = fig.landscape
    words = fig.words()
    low = int(np.nanargmin(land.loss))
    assert (f"lowest {fmt_number(land.loss[low], 3)} at w = "
            f"{fmt_number(land.grid[0][low], 3)}") in words.alt, words.alt
    assert "path net: 41 points" in words.alt
    assert len(words.rows) == ROWS
    assert words.rows[0] == (fmt_number(land.grid[0][0], 3), fmt_number(land.loss[0], 3))
    assert words.rows[-1][0] == fmt_number(land.grid[0][-1], 3)


def test_a_boundary_in_words_samples_its_output_on_the_grid() -> None:
    net = TenFlangModel("declare input x [2]\ndeclare exp_output y\ndeclare weight w [2]\n"
                        "declare output o\ndeclare intvar z\ndeclare intvar e\n"
                        "declare loss L\ndefine z = matmul x w\ndefine o = logistic z\n"
                        "define e = sub o y\ndefine L = mul e e\n")
    train, test = datasets.blobs(60, test=0.25)
    net.train(train, test=test, lr=2, max_iter=50)
    fig = net.boundary(resolution=30)
    b, words = fig.boundary, fig.words()
    assert words.alt.startswith("decision boundary, output o · accuracy: training")
    assert "45 training points (circles) and 15 test points (triangles)" in words.alt
    assert len(words.rows) == ROWS and len(words.header) == COLUMNS + 1
    # row j, column i: the output at (xs[i], ys[j]); the corners are the grid's
    assert words.rows[0][1] == fmt_number(b.output[0, 0], 3)
    assert words.rows[-1][-1] == fmt_number(b.output[-1, -1], 3)
    assert words.header[-1] == fmt_number(b.xs[-1], 3)


def test_figure_html_keeps_its_alt_text_and_table_untrusted() -> None:
    fig = _trained().landscape(resolution=30)
    words = fig.words()
    tree = sanitize_tree(figure_html(fig._repr_png_(), words))
    [image] = tree.find_all("img")
    assert image.attrs["alt"] == words.alt
    assert image.attrs["src"].startswith("data:image/png;base64,")
    [details] = tree.find_all("details")
    assert "values as a table" in shown_text(details.find_all("summary")[0])
    assert len(details.find_all("tr")) == len(words.rows) + 1
    assert details.find_all("caption") and details.find_all("th")[0].attrs["scope"] == "col"


def test_the_panel_words_its_pictures_once_a_run_ends() -> None:
    panel = TenFlangModel(SEED_EXAMPLE, "net").training_panel(
        DATA, live=False, lr=2, max_iter=12, landscape=True)
    panel.run_sync()
    curve, boundary, landscape = panel.words()
    assert curve is not None and "over 13 iterations" in curve.alt
    assert boundary is None and landscape is not None
    shown = panel.values_html.value
    assert f"<span data-tf-alt='curve' hidden>{curve.alt}</span>" in shown
    assert shown.count("<details") == 2
    saved = panel.static_html()
    assert f"alt='{curve.alt}'" in saved and saved.count("<details") == 2
