"""The weight-calculation phase: gradient descent over a GCP, as the seed's pseudocode has it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import program_text
from helpers_fd import fd_gradient, loss_of

from tenflang_nb.core import api, train
from tenflang_nb.core.errors import ComputeError, TenFlangError
from tenflang_nb.core.program import parse
from tenflang_nb.core.settings import TrainSettings

V0_SHAPE = program_text(
    "declare input x", "declare weight w", "declare exp_output y", "declare output o",
    "declare intvar neg_y", "declare intvar diff", "declare loss lambda",
    "define o  =  mul  x  w", "define neg_y  =  mul  -1  y", "define diff  =  add  o  neg_y",
    "define lambda  =  mul  diff  diff")
V0_DATA = {"x": [1.0, 2.0, -3.0], "y": [4.0, 7.0, -13.0]}  # GD0's test_calculate_weights
V0_OPTIMUM = 57 / 14  # sum(x y) / sum(x^2)


def logistic(z: float) -> float:
    return 1 / (1 + math.exp(-z))


def logit(p: float) -> float:
    return math.log(p / (1 - p))


def v0_gcp() -> api.Gcp:
    return api.compile(parse(V0_SHAPE, "v0.tf"))


# ------------------------------------------------------------------------ defaults


def test_defaults_are_the_originals() -> None:
    defaults = TrainSettings()
    assert (defaults.lr, defaults.tol, defaults.max_iter) == (0.1, 0.0005, 1000)
    trainer = api.trainer(v0_gcp(), V0_DATA)
    s = trainer.settings
    assert (s.lr, s.tol, s.max_iter) == (0.1, 0.0005, 1000)
    assert trainer.weights == {"w": 0.0}  # the original's initial guess: zeros


def test_initial_weights() -> None:
    shapes = {"s": (), "v": (3,), "M": (4, 2)}
    auto = train.initial_weights(shapes)
    assert auto["s"] == 0.0 and not np.any(auto["v"])
    assert np.shape(auto["M"]) == (4, 2) and np.all(auto["M"] != 0)  # matrices break symmetry
    zeros = train.initial_weights(shapes, "zeros")
    assert zeros["s"] == 0.0 and not np.any(zeros["M"])
    normal = train.initial_weights(shapes, "normal", seed=3)
    again = train.initial_weights(shapes, "normal", seed=3)
    np.testing.assert_array_equal(normal["M"], again["M"])
    assert normal["s"] != 0.0
    with pytest.raises(TenFlangError, match="init must be one of auto, zeros, normal, not 'ones'"):
        train.initial_weights(shapes, "ones")


# ------------------------------------------------------------------------ the update rule


def test_first_steps_by_hand() -> None:
    # w0 = 0: mean loss (16 + 49 + 169) / 3 = 78, mean gradient 2/3 sum x(xw - y) = -38
    trainer = api.trainer(v0_gcp(), V0_DATA)
    r0 = trainer.step()
    assert (r0.iteration, r0.loss, r0.grad_norm) == (0, 78.0, 38.0)
    assert trainer.weights["w"] == pytest.approx(3.8, rel=1e-15)  # 0 - 0.1 * -38
    r1 = trainer.step()
    g1 = 2 / 3 * sum(x * (x * 3.8 - y) for x, y in zip(*V0_DATA.values(), strict=True))
    assert r1.grad_norm == pytest.approx(abs(g1), rel=1e-13)
    assert trainer.weights["w"] == pytest.approx(3.8 - 0.1 * g1, rel=1e-13)


def test_v0_linear_converges_to_the_least_squares_weight() -> None:
    result = api.train(v0_gcp(), V0_DATA)
    assert result.converged
    # |grad| = 28/3 |w - 57/14| <= tol at the stop
    assert abs(result.weights["w"] - V0_OPTIMUM) <= 0.0005 / (28 / 3) + 1e-12
    assert result.history[-1].grad_norm <= 0.0005
    assert all(r.grad_norm > 0.0005 for r in result.history[:-1])
    losses = [r.loss for r in result.history]
    assert losses == sorted(losses, reverse=True)  # a convex problem, a small enough step
    best = np.mean([(x * V0_OPTIMUM - y) ** 2 for x, y in zip(*V0_DATA.values(), strict=True)])
    assert result.loss == pytest.approx(best, rel=1e-8)


def test_max_iter_bounds_the_updates() -> None:
    trainer = api.trainer(v0_gcp(), V0_DATA, lr=0.001, max_iter=7)
    result = trainer.run()
    assert not result.converged
    assert result.iterations == 7 and len(result.history) == 8
    assert [r.iteration for r in result.history] == list(range(8))
    nothing = api.train(v0_gcp(), V0_DATA, max_iter=0)
    assert nothing.weights == {"w": 0.0} and len(nothing.history) == 1


def test_zero_learning_rate_never_moves() -> None:
    result = api.train(v0_gcp(), V0_DATA, lr=0.0, max_iter=3)
    assert result.weights == {"w": 0.0}
    assert [r.loss for r in result.history] == [78.0] * 4


def test_weights_reproduce_the_last_record_exactly() -> None:
    # the returned weights are those of the last evaluation, not one step further
    shape = parse(V0_SHAPE)
    for options in ({}, {"max_iter": 3}):
        result = api.train(api.compile(shape), V0_DATA, **options)
        rows = [{"x": x, "y": y} for x, y in zip(*V0_DATA.values(), strict=True)]
        evaluated = api.evaluate(shape, rows, result.weights)
        mean = sum(r["lambda"] for r in evaluated) / len(evaluated)
        assert mean == pytest.approx(result.history[-1].loss, rel=1e-15)


def test_callback_can_stop_and_reset_starts_again() -> None:
    trainer = api.trainer(v0_gcp(), V0_DATA)
    result = trainer.run(lambda t, record: record.iteration >= 2)
    assert len(result.history) == 3 and not result.converged
    trainer.reset()
    assert trainer.weights == {"w": 0.0} and trainer.history == []
    assert trainer.step().loss == 78.0


XOR = Path(__file__).resolve().parent.parent / "examples" / "xor"


def xor_trainer(**settings: object) -> train.GradientDescent:
    gcp = api.compile(parse((XOR / "shape.tf").read_text()))
    return api.trainer(gcp, str(XOR / "training_data.txt"), lr=2, tol=0, **settings)


def test_each_record_keeps_the_weights_its_step_evaluated() -> None:
    """A snapshot reads as the dict of copies it replaced: each weight's value at that step,
    a float for a scalar weight, an array of its own (changing it changes no record)."""
    t = xor_trainer(max_iter=5)
    seen = []
    while not t.done:
        seen.append({w: np.copy(v) for w, v in t.weights.items()})
        t.step()
    assert len(t.history) == len(seen) == 6
    for record, weights in zip(t.history, seen, strict=True):
        kept = record.weights
        assert kept is not None and list(kept) == list(weights) == ["W1", "b1", "W2", "b2"]
        assert type(kept["b2"]) is float and kept["b2"] == weights["b2"]
        for w in ("W1", "b1", "W2"):
            assert kept[w].shape == weights[w].shape
            assert np.array_equal(kept[w], weights[w])
    first = t.history[0].weights
    assert first is not None
    first["W1"][0, 0] += 1.0  # a copy: the record keeps its numbers
    assert np.array_equal(first["W1"], seen[0]["W1"])
    t.reset({**t.initial, "b2": 0.25})
    t.step()
    assert t.history[0].weights["b2"] == 0.25


def test_a_records_weights_cost_their_numbers_not_a_dict_of_arrays() -> None:
    """A history holds each step's record in under 330 bytes for XOR (17 numbers): a
    record and its snapshot's bytes, where a dict of array copies took 490 (issue 26: lab
    06's kernel keeps over 18 000 records). Measured as what clearing the history frees."""
    import gc
    import tracemalloc

    t = xor_trainer(max_iter=500)
    t.step()  # the first step's one-time costs (imports, caches) before measuring
    gc.collect()
    tracemalloc.start()
    try:
        t.run()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        records = len(t.history)
        t.state.history._records.clear()
        gc.collect()
        freed = held - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert records == 501 and freed / records < 330, f"{freed / records:.0f} bytes a record"


@pytest.mark.parametrize("batch_size", [None, 2])
def test_a_released_trainer_binds_again_and_trains_on_the_same(batch_size: int | None
                                                               ) -> None:
    """:meth:`release` lets go of the bound run; the next step binds it again (mini-batches
    into the new buffers), and the run goes on as if it never had."""
    whole = xor_trainer(max_iter=20, batch_size=batch_size)
    whole.run()
    parts = xor_trainer(max_iter=20, batch_size=batch_size)
    for _ in range(10):
        parts.step()
    before = parts._run
    parts.release()
    assert parts._bound is None and parts._batch_buffers == {}
    parts.run()
    assert parts._run is not before
    assert [r.loss for r in parts.history] == [r.loss for r in whole.history]
    assert all(np.array_equal(parts.weights[w], whole.weights[w]) for w in whole.weights)


def test_a_packing_refuses_weights_of_other_shapes() -> None:
    packing = train.Packing.of({"w": 0.0, "W": np.zeros((2, 3))})
    assert dict(packing.pack({"W": np.ones((2, 3)), "w": 2.0}))["w"] == 2.0  # by name
    with pytest.raises(ValueError, match="weights of 9 numbers, not 7"):
        packing.pack({"w": 0.0, "W": np.zeros((2, 4))})


def test_step_after_the_end_is_refused() -> None:
    trainer = api.trainer(v0_gcp(), V0_DATA, max_iter=0)
    trainer.run()
    with pytest.raises(RuntimeError):
        trainer.step()


@pytest.mark.parametrize(("option", "value"), [("lr", -0.1), ("tol", -1.0), ("lr", math.nan),
                                                ("tol", math.inf), ("max_iter", -1)])
def test_bad_options(option: str, value: float) -> None:
    with pytest.raises(TenFlangError):
        api.trainer(v0_gcp(), V0_DATA, **{option: value})


# ------------------------------------------------------------------------ the small net


def _small_net_data(seed: int = 0) -> dict[str, np.ndarray]:
    # TGD: inputs a=1, b=2, c=3; 10 noisy samples of m, n, p near logistic(0.4, 0.4, 0.3)
    rng = np.random.default_rng(seed)
    n = 10
    return {"a": np.ones(n), "b": np.full(n, 2.0), "c": np.full(n, 3.0),
            "m": logistic(0.4) + rng.uniform(-0.01, 0.01, n),
            "n": logistic(0.4) + rng.uniform(-0.01, 0.01, n),
            "p": logistic(0.3) + rng.uniform(-0.01, 0.01, n)}


def test_small_net_finds_the_originals_weights(original_dir: Path) -> None:
    shape = parse((original_dir / "small_net_three_logistic_shape.tf").read_text())
    data = _small_net_data()
    result = api.train(api.compile(shape), data)  # the original's settings
    assert result.converged
    for w, target in (("f", 0.4), ("g", 0.2), ("h", 0.1)):
        assert abs(result.weights[w] - target) <= 0.03, (w, result.weights)
    # trained hard, each weight reaches its own optimum logistic(input * w) = mean(target)
    tight = api.train(api.compile(shape), data, lr=1.0, tol=1e-9, max_iter=20000)
    assert tight.converged
    assert tight.weights["f"] == pytest.approx(logit(data["m"].mean()) / 1, abs=1e-6)
    assert tight.weights["g"] == pytest.approx(logit(data["n"].mean()) / 2, abs=1e-6)
    assert tight.weights["h"] == pytest.approx(logit(data["p"].mean()) / 3, abs=1e-6)


def test_small_net_gradient_signs_from_the_original_test(original_dir: Path) -> None:
    shape = parse((original_dir / "small_net_three_logistic_shape.tf").read_text())
    exact = {"a": [1.0], "b": [2.0], "c": [3.0], "m": [logistic(0.4)], "n": [logistic(0.4)],
             "p": [logistic(0.3)]}
    trainer = api.trainer(api.compile(shape), exact, start={"f": 0.35, "g": 0.24, "h": 0.08})
    _, grads = trainer.evaluate()
    assert grads["f"] < 0 < grads["g"] and grads["h"] < 0


# ------------------------------------------------------------------------ tensors


def test_linear_layer_learns_exact_data() -> None:
    source = program_text(
        "declare input x [3]", "declare exp_output y [2]", "declare weight W [2, 3]",
        "declare weight b [2]", "declare intvar z", "declare intvar a", "declare intvar d",
        "declare intvar s", "declare loss L", "define z = matmul W x", "define a = add z b",
        "define d = sub a y", "define s = mul d d", "define L = mean s")
    rng = np.random.default_rng(5)
    W_true, b_true = rng.normal(size=(2, 3)), rng.normal(size=2)
    x = rng.normal(size=(40, 3))
    y = x @ W_true.T + b_true
    result = api.train(api.compile(parse(source)), {"x": x, "y": y}, lr=0.5, tol=1e-8,
                       max_iter=5000, init="zeros")
    assert result.converged
    np.testing.assert_allclose(result.weights["W"], W_true, atol=1e-6)
    np.testing.assert_allclose(result.weights["b"], b_true, atol=1e-6)


def test_full_gcp_trains_to_the_same_weights() -> None:
    shape = parse(V0_SHAPE)
    lean = api.train(api.compile(shape), V0_DATA)
    full = api.train(api.compile(shape, full=True), V0_DATA)
    assert full.weights == lean.weights
    assert [r.loss for r in full.history] == [r.loss for r in lean.history]


def test_mean_gradient_equals_mean_of_finite_differences() -> None:
    shape = parse(V0_SHAPE)
    trainer = api.trainer(api.compile(shape), V0_DATA, start={"w": 1.7})
    loss, grads = trainer.evaluate()
    examples = [{"x": x, "y": y, "w": 1.7} for x, y in zip(*V0_DATA.values(), strict=True)]
    assert loss == pytest.approx(np.mean([loss_of(shape, e) for e in examples]), rel=1e-15)
    fd = np.mean([fd_gradient(shape, e, "w") for e in examples])
    assert float(grads["w"]) == pytest.approx(fd, rel=1e-7)


def test_hand_written_gcp_with_a_scalar_outer_gradient() -> None:
    # regression: the batched mean of a scalar 'outer' returned uninitialised memory
    gcp = parse(program_text("declare input x", "declare input y", "declare input w",
                             "declare loss L", "declare output d/L/d/w", "define L = mul w x",
                             "define d/L/d/w = outer x y"))
    trainer = api.trainer(gcp, {"x": [1.0, 2.0, 3.0], "y": [1.0, 1.0, 4.0]}, start={"w": 0.0})
    _, grads = trainer.evaluate()
    assert float(grads["w"]) == pytest.approx((1 + 2 + 12) / 3, rel=1e-15)


# ------------------------------------------------------------------------ failures


def test_nan_names_the_gcp_line_and_the_iteration() -> None:
    shape = parse(program_text("declare input x", "declare weight w", "declare intvar z",
                               "declare loss L", "define z = mul x w", "define L = ln z"))
    gcp = api.compile(shape)
    line = gcp.text.splitlines().index("define L = ln z") + 1
    with pytest.raises(ComputeError) as info:
        api.train(gcp, {"x": [1.0]})
    d = info.value.first
    assert d.line == line and "iteration 0" in d.message and d.source == "define L = ln z"


def test_divergence_is_reported_at_its_iteration() -> None:
    with pytest.raises(ComputeError) as info:
        api.train(v0_gcp(), {"x": [100.0], "y": [1.0]}, lr=1.0)
    d = info.value.first
    assert "NaN or infinite" in d.message
    iteration = int(d.message.split("iteration ")[1].split()[0])
    assert iteration > 5  # it took a while to blow up
    assert d.hint is not None and "learning rate" in d.hint


def test_gcp_must_have_one_loss_and_gradient_outputs(original_dir: Path) -> None:
    with pytest.raises(TenFlangError, match="exactly one loss"):
        api.trainer(parse("declare input w\ndeclare output o\ndefine o = mul w 2\n"), [{}])
    with pytest.raises(TenFlangError, match="no output named d/L/d/<weight>"):
        api.trainer(parse("declare input w\ndeclare loss L\ndefine L = mul w 2\n"), [{}])
    # the 2016 GCPs declared no loss: they are programs, but not ones this trainer can use
    original = parse((original_dir / "v0_linear_sqloss_gcp_early.tf").read_text(), "gcp.tf")
    with pytest.raises(TenFlangError, match="exactly one loss"):
        api.trainer(original, V0_DATA)


def test_training_data_must_give_every_input() -> None:
    with pytest.raises(TenFlangError, match="missing required input 'y'"):
        api.trainer(v0_gcp(), {"x": [1.0, 2.0]})
    with pytest.raises(TenFlangError, match="'w' is declared input"):
        api.trainer(v0_gcp(), {"x": [1.0], "y": [2.0], "w": [3.0]})
    with pytest.raises(TenFlangError, match="'q' is not declared"):
        api.trainer(v0_gcp(), {"x": [1.0], "y": [2.0], "q": [3.0]})


def test_an_input_nothing_needs_may_be_left_out_of_the_training_data() -> None:
    from tenflang_nb.core.api import compile, parse, trainer

    src = ("declare input x\ndeclare input unused\ndeclare exp_output y\ndeclare weight w\n"
           "declare intvar d\ndeclare intvar e\ndeclare loss L\n"
           "define d = mul x w\ndefine e = sub d y\ndefine L = mul e e\n")
    t = trainer(compile(parse(src)), {"x": [1.0, 2.0], "y": [2.0, 4.0]}, max_iter=200)
    result = t.run()
    assert abs(result.weights["w"] - 2.0) < 1e-3
    with pytest.raises(TenFlangError, match="missing required input 'y'"):
        trainer(compile(parse(src)), {"x": [1.0, 2.0]})


def test_nan_report_ignores_lines_the_gradient_does_not_need() -> None:
    from tenflang_nb.core.api import compile, parse, trainer
    from tenflang_nb.core.errors import ComputeError

    # 'side' overflows at once but nothing depends on it; the loss overflows later
    src = ("declare input x\ndeclare exp_output y\ndeclare weight w\ndeclare output side\n"
           "declare intvar z\ndeclare intvar big\ndeclare loss L\n"
           "define side = exp x\ndefine z = mul x w\ndefine big = exp z\n"
           "define L = sub y big\n")
    # the first step moves w from 0 to 80, then exp(800 * 80) overflows
    t = trainer(compile(parse(src)), {"x": [800.0], "y": [0.0]}, max_iter=5)
    with pytest.raises(ComputeError) as info:
        t.run()
    assert info.value.first.source == "define big = exp z"  # not "define side = exp x"
    assert "iteration 1" in info.value.first.message


@pytest.mark.parametrize("engine", ["reference", "fused"])
def test_huge_finite_gradients_are_no_overflow(engine: str) -> None:
    # the squares of a gradient of 1e200 overflow: the step's norm and finiteness checks fall
    # back to a scaled norm and to each gradient, instead of calling the run non-finite
    gcp = api.compile(parse("declare weight w\ndeclare weight v\ndeclare loss L\n"
                            "declare intvar a\ndefine a = mul w 1e200\n"
                            "define L = add a v\n"))
    trainer = api.trainer(gcp, {}, lr=1e-210, tol=0.0, max_iter=2, start={"w": 1.0, "v": 0.0},
                          engine=engine)
    record = trainer.step()
    assert record.grad_norm == pytest.approx(1e200, rel=1e-12)
    assert trainer.state.weights["w"] == pytest.approx(1.0 - 1e-10, rel=1e-12)
    # an update that overflows is still a non-finite weight, named
    big = api.trainer(gcp, {}, lr=1e200, tol=0.0, max_iter=2, start={"w": 1.0, "v": 0.0},
                      engine=engine)
    with pytest.raises(ComputeError, match="weight 'w' became NaN or infinite"):
        big.step()
