"""Mini-batches and the momentum / Adam update rules (full-batch gradient descent stays default)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tenflang_nb.core.api import compile, parse, trainer
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.train import _BatchStream

LINEAR = """\
declare input x
declare exp_output y
declare weight a
declare weight b
declare intvar ax
declare output o
declare intvar e
declare loss L
define ax = mul a x
define o = add ax b
define e = sub o y
define L = mul e e
"""


def _data(n: int = 40, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, n)
    return {"x": x, "y": 2.5 * x - 1.0 + rng.normal(0, 0.05, n)}


def _least_squares(data: dict[str, np.ndarray]) -> np.ndarray:
    design = np.stack([data["x"], np.ones_like(data["x"])], axis=1)
    return np.linalg.lstsq(design, data["y"], rcond=None)[0]


def test_gd_is_the_default_and_a_batch_of_everything_is_full_batch() -> None:
    data = _data()
    gcp = compile(parse(LINEAR))
    plain = trainer(gcp, data, max_iter=30, tol=0).run()
    whole = trainer(gcp, data, max_iter=30, tol=0, batch_size=len(data["x"])).run()
    assert plain.weights == whole.weights
    assert [r.loss for r in plain.history] == [r.loss for r in whole.history]


def test_batch_stream_uses_every_example_equally_and_is_reproducible() -> None:
    stream = _BatchStream(10, 3, seed=4)
    batches = [stream.next() for _ in range(10)]  # 30 indices: three epochs
    counts = np.bincount(np.concatenate(batches), minlength=10)
    assert counts.tolist() == [3] * 10
    assert all(len(b) == 3 for b in batches)
    again = _BatchStream(10, 3, seed=4)
    assert all(np.array_equal(b, again.next()) for b in batches)


def test_mini_batch_step_uses_exactly_its_batch() -> None:
    data = _data(n=12)
    t = trainer(compile(parse(LINEAR)), data, batch_size=4, seed=3, lr=0.05)
    index = _BatchStream(12, 4, seed=3).next()
    loss, grads = t.evaluate()
    a, b = t.weights["a"], t.weights["b"]  # zeros: the model predicts 0
    x, y = data["x"][index], data["y"][index]
    residual = a * x + b - y
    assert loss == pytest.approx(np.mean(residual ** 2), rel=1e-12)
    assert float(grads["a"]) == pytest.approx(np.mean(2 * residual * x), rel=1e-12)
    assert float(grads["b"]) == pytest.approx(np.mean(2 * residual), rel=1e-12)


@pytest.mark.parametrize(("optimizer", "lr", "steps"),
                         [("gd", 0.05, 3000), ("momentum", 0.01, 3000), ("adam", 0.01, 4000)])
def test_mini_batches_reach_the_least_squares_solution(optimizer: str, lr: float,
                                                       steps: int) -> None:
    data = _data(n=64)
    # a decaying step is out of scope: a small lr lands within noise of the optimum
    result = trainer(compile(parse(LINEAR)), data, batch_size=8, optimizer=optimizer, lr=lr,
                     tol=0, max_iter=steps, seed=1).run()
    a, b = _least_squares(data)
    assert result.weights["a"] == pytest.approx(a, abs=0.05)
    assert result.weights["b"] == pytest.approx(b, abs=0.05)


def test_momentum_first_two_steps_by_hand() -> None:
    data = _data(n=16)
    t = trainer(compile(parse(LINEAR)), data, optimizer="momentum", momentum=0.5, lr=0.1)
    _, g0 = t.evaluate()
    t.reset()
    t.step()
    assert t.weights["a"] == pytest.approx(-0.1 * float(g0["a"]), rel=1e-12)
    _, g1 = t.evaluate()
    a1 = t.weights["a"]
    t.step()
    velocity = 0.5 * float(g0["a"]) + float(g1["a"])
    assert t.weights["a"] == pytest.approx(a1 - 0.1 * velocity, rel=1e-12)


def test_adam_first_step_moves_every_weight_by_about_lr() -> None:
    # after one step Adam's bias-corrected m / sqrt(s) is g / |g|: a step of lr each way
    t = trainer(compile(parse(LINEAR)), _data(), optimizer="adam", lr=0.01)
    _, g = t.evaluate()
    t.reset()
    t.step()
    for w in ("a", "b"):
        assert t.weights[w] == pytest.approx(-0.01 * np.sign(float(g[w])), rel=1e-6)


def test_reset_restarts_the_optimizer_state_and_the_batches() -> None:
    t = trainer(compile(parse(LINEAR)), _data(), optimizer="adam", batch_size=5, lr=0.01)
    first = [t.step().loss for _ in range(5)]
    t.reset()
    assert [t.step().loss for _ in range(5)] == first


@pytest.mark.parametrize(("options", "message"), [
    ({"optimizer": "sgd"}, "optimizer must be one of gd, momentum, adam, not 'sgd'"),
    ({"batch_size": 0}, "batch_size must be an integer >= 1"),
    ({"momentum": 1.0}, "momentum must be a number in [0, 1)"),
])
def test_bad_settings_are_clear_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises(TenFlangError) as info:
        trainer(compile(parse(LINEAR)), _data(), **options)
    assert message in str(info.value)


def test_command_line_options(tmp_path: Path) -> None:
    shape = tmp_path / "shape.tf"
    shape.write_text(LINEAR)
    data = _data(n=64)
    rows = "".join(f"{{x: {float(x)!r}, y: {float(y)!r}}}\n" for x, y in zip(data["x"], data["y"],
                                                             strict=True))
    (tmp_path / "train.txt").write_text(rows)
    bin_dir = Path(sys.executable).parent
    gcp = subprocess.run([str(bin_dir / "tfcompiler"), str(shape)], capture_output=True,
                         text=True, check=True).stdout
    (tmp_path / "gcp.tf").write_text(gcp)
    proc = subprocess.run(
        [str(bin_dir / "tfweightcalc"), str(tmp_path / "gcp.tf"), str(tmp_path / "train.txt"),
         "--batch-size", "8", "--optimizer", "adam", "--lr", "0.01", "--tol", "0",
         "--max-iter", "4000"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    a, b = _least_squares(data)
    assert "{a: " in proc.stdout
    values = dict(part.split(": ") for part in proc.stdout.strip()[1:-1].split(", "))
    assert float(values["a"]) == pytest.approx(a, abs=0.05)
    assert float(values["b"]) == pytest.approx(b, abs=0.05)
    bad = subprocess.run([str(bin_dir / "tfweightcalc"), str(tmp_path / "gcp.tf"),
                          str(tmp_path / "train.txt"), "--optimizer", "sgd"],
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 2
    assert "optimizer must be one of gd, momentum, adam, not 'sgd'" in bad.stderr
