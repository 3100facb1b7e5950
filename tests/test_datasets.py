"""``tenflang_nb.datasets``: the classic 2-D data sets (sizes, seeds, classes, noise, the
columns a program's input is named by) and the train/test split of any data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tenflang_nb import datasets
from tenflang_nb.core.api import load_data
from tenflang_nb.core.errors import TenFlangError

NAMES = list(datasets.DATASETS)


def test_every_data_set_is_in_the_table_and_has_a_function() -> None:
    assert NAMES == ["xor", "circles", "moons", "spirals", "blobs"]
    for name in NAMES:
        made = getattr(datasets, name)(10, seed=4)
        assert made.train.names == datasets.make(name, 10, seed=4).train.names
        assert np.array_equal(made.train.columns["x"],
                              datasets.make(name, 10, seed=4).train.columns["x"])


def test_the_package_reaches_it_as_tf_datasets() -> None:
    # a fresh interpreter: here the test's own import has already made the attribute
    code = ("import tenflang_nb as tf; import sys; "
            "print(tf.datasets.moons(8).train.names, 'tenflang_nb.datasets' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['x', 'y'] True"
    assert "datasets" in dir(__import__("tenflang_nb"))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [2, 7, 200])
def test_sizes_and_balanced_classes(name: str, n: int) -> None:
    xy, classes = datasets.points(name, n)
    assert xy.shape == (n, 2) and classes.shape == (n,)
    assert sorted(set(classes.tolist())) == [0, 1]
    assert abs(int(np.sum(classes == 1)) - int(np.sum(classes == 0))) <= 1
    # shuffled: the classes do not come in two blocks
    if n >= 7:
        assert np.any(np.diff(classes) < 0) and np.any(np.diff(classes) > 0)


@pytest.mark.parametrize("name", NAMES)
def test_a_seed_gives_the_same_points_and_another_seed_others(name: str) -> None:
    a, ca = datasets.points(name, 50, seed=1)
    b, cb = datasets.points(name, 50, seed=1)
    c, _ = datasets.points(name, 50, seed=2)
    assert np.array_equal(a, b) and np.array_equal(ca, cb)
    assert not np.allclose(a, c)


def test_without_noise_each_set_has_its_shape() -> None:
    xy, c = datasets.points("xor", 400, noise=0.0)
    assert np.all((xy[:, 0] * xy[:, 1] < 0) == (c == 1))
    assert np.all(np.abs(xy) >= 0.05) and np.all(np.abs(xy) <= 1.0)
    xy, c = datasets.points("circles", 400, noise=0.0)
    radius = np.hypot(xy[:, 0], xy[:, 1])
    assert np.allclose(radius[c == 0], 1.0) and np.allclose(radius[c == 1], 0.5)
    xy, c = datasets.points("moons", 400, noise=0.0)
    # each moon is a half circle of radius 1 around its own centre
    assert np.allclose(np.hypot(xy[c == 0, 0] + 0.5, xy[c == 0, 1] + 0.25), 1.0)
    assert np.allclose(np.hypot(xy[c == 1, 0] - 0.5, xy[c == 1, 1] - 0.25), 1.0)
    assert np.all(xy[c == 0, 1] >= -0.25 - 1e-12) and np.all(xy[c == 1, 1] <= 0.25 + 1e-12)
    xy, c = datasets.points("spirals", 400, noise=0.0)
    r = np.hypot(xy[:, 0], xy[:, 1])
    angle = np.arctan2(xy[:, 0], xy[:, 1])  # the arms are (sin, cos) of their angle
    expected = 1.75 * 2 * np.pi * r + c * np.pi
    assert np.allclose(np.angle(np.exp(1j * (angle - expected))), 0.0, atol=1e-9)
    xy, c = datasets.points("blobs", 4000, noise=0.0)
    assert np.allclose(xy[c == 0].mean(axis=0), -0.5, atol=0.03)
    assert np.allclose(xy[c == 1].mean(axis=0), 0.5, atol=0.03)
    assert np.allclose(xy[c == 1].std(axis=0), 0.3, atol=0.03)


def test_noise_is_the_spread_around_the_shape() -> None:
    clean, c = datasets.points("circles", 2000, noise=0.0, seed=3)
    noisy, c2 = datasets.points("circles", 2000, noise=0.2, seed=3)
    assert np.array_equal(c, c2)
    radius = np.hypot(noisy[:, 0], noisy[:, 1])
    outer = radius[c2 == 0]
    assert 0.9 < outer.mean() < 1.1 and 0.15 < outer.std() < 0.25
    assert not np.allclose(clean, noisy)


def test_the_input_is_one_column_or_two_and_the_label_is_named() -> None:
    one = datasets.moons(20, x="x", y="t").train
    assert one.names == ["x", "t"] and one.shape("x") == (2,)
    two = datasets.moons(20, x=("a", "b"), y="y").train
    assert two.names == ["a", "b", "y"] and two.shape("a") == two.shape("b") == ()
    assert np.array_equal(np.column_stack([two.columns["a"], two.columns["b"]]),
                          one.columns["x"])
    labelled = datasets.moons(20, labels=(-1, 1)).train.columns["y"]
    assert sorted(set(labelled.tolist())) == [-1.0, 1.0]
    assert np.array_equal(labelled == 1, one.columns["t"] == 1)


def test_make_splits_into_training_and_test_data() -> None:
    whole = datasets.moons(100, seed=5).train
    train, test = datasets.moons(100, seed=5, test=0.3)
    assert (len(whole), len(train), len(test)) == (100, 70, 30)
    assert datasets.moons(100, seed=5).test is None
    together = np.concatenate([train.columns["x"], test.columns["x"]])
    assert sorted(map(tuple, together.tolist())) == sorted(map(tuple, whole.columns["x"].tolist()))
    assert len(datasets.moons(100, test=12).test) == 12


def test_split_any_data_for_example_a_csv_file(tmp_path: Path) -> None:
    path = tmp_path / "points.csv"
    rows = ["u,v,y"] + [f"{i / 10:g},{-i / 10:g},{i % 2}" for i in range(10)]
    path.write_text("\n".join(rows) + "\n")
    train, test = datasets.split(str(path), 0.2, seed=1)
    assert len(train) == 8 and len(test) == 2
    assert train.file == test.file == str(path)
    # each record keeps its line in the file (errors name it)
    for part in (train, test):
        for i in range(len(part)):
            line = int(part.lines[i])
            assert rows[line - 1] == (f"{part.columns['u'][i]:g},{part.columns['v'][i]:g},"
                                      f"{int(part.columns['y'][i])}")
    assert sorted([*train.columns["u"], *test.columns["u"]]) == \
        sorted(load_data(str(path)).columns["u"])
    again = datasets.split(str(path), 0.2, seed=1)
    assert np.array_equal(again.test.columns["u"], test.columns["u"])
    assert datasets.split(load_data(str(path)), 0).test is None


@pytest.mark.parametrize(("call", "message"), [
    (lambda: datasets.make("donut"), "name must be a data set's name: xor, circles, moons, "
     "spirals or blobs, not 'donut'"),
    (lambda: datasets.moons(1), "n must be an integer from 2 to 1,000,000"),
    (lambda: datasets.moons(10.5), "n must be an integer from 2 to 1,000,000"),
    (lambda: datasets.moons(10**9), "n must be an integer from 2 to 1,000,000"),
    (lambda: datasets.moons(10, noise=-0.1), "noise must be a finite number >= 0"),
    (lambda: datasets.moons(10, noise=float("nan")), "noise must be a finite number >= 0"),
    (lambda: datasets.moons(10, seed=-1), "seed must be an integer >= 0, not -1"),
    (lambda: datasets.moons(10, test=1.0), "cannot hold out a share 1 of 10"),
    # a share too large to count (1e308 * 10 is infinite) is refused as any share >= 1
    (lambda: datasets.moons(10, test=1e308), "cannot hold out a share 1e+308 of 10"),
    (lambda: datasets.split({"x": [1, 2, 3, 4]}, -1e308), "cannot hold out a share -1e+308"),
    (lambda: datasets.moons(10, test=10), "cannot hold out 10 of 10"),
    (lambda: datasets.moons(10, test=0.01), "both parts need at least one"),
    (lambda: datasets.moons(10, test="a"), "test must be a share (0.25), a count (50) or 0"),
    (lambda: datasets.moons(10, test=float("inf")), "test must be a share"),
    (lambda: datasets.moons(10, x=("a", "b", "c")), "x must be one name (an input [2]) or two"),
    (lambda: datasets.moons(10, x=5), "x must be one name (an input [2]) or two"),
    (lambda: datasets.moons(10, x="2x"), "x must be TenFlang names of data columns, not '2x'"),
    (lambda: datasets.moons(10, x="y"), "different names"),
    (lambda: datasets.moons(10, labels=(0, 1, 2)), "labels must be two finite numbers"),
    (lambda: datasets.moons(10, labels=5), "labels must be two finite numbers"),
])
def test_bad_arguments_are_clear_errors(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TenFlangError, match=None) as info:
        call()
    assert message in str(info.value)
