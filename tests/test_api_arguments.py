"""Every public function's arguments are checked as the training settings are (issue 16, item
8): whatever a caller passes, the result is a value or a TenFlangError that says what the
argument must be, never a numpy, matplotlib, linalg or widget traceback from deep inside."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import XOR_SHAPE, hypothesis_settings
from hypothesis import given
from hypothesis import strategies as st

import tenflang_nb as tf
from tenflang_nb import datasets
from tenflang_nb.core import api, grading, ops
from tenflang_nb.core.arguments import ARGUMENTS, ArgumentError, check_arguments
from tenflang_nb.core.engine_check import check_engine
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.settings import SETTINGS, TrainSettings
from tenflang_nb.notebook.grading import GradingFailure
from tenflang_nb.notebook.grading_mode import GRADING
from tenflang_nb.notebook.model import TenFlangModel

DATA = {"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}
SEED = TenFlangModel(SEED_EXAMPLE, "net")
SEED.train(DATA, lr=2, max_iter=20)
XOR = TenFlangModel(XOR_SHAPE, "xor")
XOR.train({"x": [[0, 0], [0, 1], [1, 0], [1, 1]], "y": [0, 1, 1, 0]}, max_iter=20)
GCP = api.compile(SEED_EXAMPLE)
PROGRAM = api.parse(SEED_EXAMPLE)
SEED_PRINT = grading.fingerprint(SEED_EXAMPLE, TrainSettings())


def _graded(call: Callable[[], Any]) -> Any:
    """A call of ``tf.grading`` in the teacher's copy of a kernel that graded ``seed``
    (defined, answered as ex4, example ex3 drawn); a verdict (GradingFailure) is a result."""
    GRADING.reset()
    GRADING.start("lab", ["seed"], environ={}, cwd="/tmp")
    GRADING.switched_on = False  # the teacher's copy: gradient() computes
    GRADING.define("seed", SEED_EXAMPLE, TrainSettings())
    GRADING.answer("ex4", "seed", "define d/lambda/d/diff = mul 2 diff")
    GRADING.examples["ex3"] = {"x": 1.0, "y": 0.5}
    try:
        return call()
    except GradingFailure as verdict:
        return str(verdict)
    finally:
        GRADING.reset()


# what a caller may pass by mistake: numbers of every kind, text, containers, arrays, objects
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20), st.sampled_from([2**63, -2**63]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.sampled_from(["\x1b[2J", "w", "W1[0, 1]", "graph", "order", "normal", "b"]),
    st.builds(np.float64, st.floats()), st.builds(np.int64, st.integers(-5, 5)),
    st.builds(object), st.binary(max_size=3), st.just(10**400))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.tuples(inner, inner),
    st.dictionaries(st.sampled_from(["w", "x", "y", "a", "W1"]), inner, max_size=2),
    st.builds(np.array, st.lists(st.floats(), max_size=3))), max_leaves=6)

CALLS: dict[str, Callable[[Any], Any]] = {
    "gradcheck(example)": lambda v: SEED.gradcheck(v),
    "gradcheck(eps)": lambda v: SEED.gradcheck(eps=v),
    "gradcheck(rtol, atol)": lambda v: XOR.gradcheck(rtol=v, atol=v),
    "gradcheck(max_components)": lambda v: XOR.gradcheck(max_components=v),
    "cost(examples)": lambda v: SEED.cost(examples=v, budget=0.0),
    "cost(budget)": lambda v: SEED.cost(examples=2, budget=v if not isinstance(v, float)
                                        or v < 0.01 else 0.0),
    "cost(data)": lambda v: SEED.cost(v, examples=2, budget=0.0),
    "stepper(example)": lambda v: SEED.stepper(v),
    "stepper(predict)": lambda v: SEED.stepper(predict=v),
    "stepper(hide_lines)": lambda v: SEED.stepper(predict=True, hide_lines=v),
    "show(predict)": lambda v: SEED.show("step", example=0, predict=v),
    "values(example)": lambda v: XOR.values(v),
    "trace(example)": lambda v: SEED.trace(v),
    "show(which)": lambda v: SEED.show(v),
    "show(full, example)": lambda v: SEED.show("values", full=v, example=v),
    "evaluate(inputs)": lambda v: XOR.evaluate(v),
    "landscape_data(resolution)": lambda v: SEED.landscape_data(resolution=v),
    "landscape_data(limits)": lambda v: XOR.landscape_data(limits=v, resolution=4),
    "landscape_data(seed)": lambda v: XOR.landscape_data(seed=v, resolution=4),
    "landscape_data(along)": lambda v: XOR.landscape_data(along=v, resolution=4),
    "landscape_data(through)": lambda v: SEED.landscape_data(through=v, resolution=4),
    "landscape_data(through=[w, v])": lambda v: XOR.landscape_data(
        through=[XOR.weights, v], resolution=4),
    "landscape_data(paths)": lambda v: SEED.landscape_data(paths=v, resolution=4),
    "landscape_data(paths={a: v})": lambda v: SEED.landscape_data(paths={"a": v},
                                                                  resolution=4),
    "landscape_data(data)": lambda v: SEED.landscape_data(data=v, resolution=4),
    "train(data)": lambda v: TenFlangModel(SEED_EXAMPLE).train(v, max_iter=2),
    "train(settings)": lambda v: TenFlangModel(SEED_EXAMPLE).train(DATA, v),
    "train(lr=)": lambda v: TenFlangModel(SEED_EXAMPLE).train(DATA, lr=v, max_iter=2),
    "TenFlangModel(source)": lambda v: TenFlangModel(v),
    "TenFlangModel(name)": lambda v: TenFlangModel(SEED_EXAMPLE, v),
    "TenFlangModel(settings)": lambda v: TenFlangModel(SEED_EXAMPLE, settings=v),
    "parse(text, file)": lambda v: api.parse(v, v),
    "compile(program, full)": lambda v: api.compile(v, full=v),
    "compile(full)": lambda v: api.compile(SEED_EXAMPLE, full=v),
    "compile_forward(program)": lambda v: api.compile_forward(v),
    "preprocess(text)": lambda v: api.preprocess(v),
    "trainer(gcp)": lambda v: api.trainer(v, DATA),
    "trainer(start)": lambda v: api.trainer(GCP, DATA, start=v),
    "trainer(start={w: v})": lambda v: api.train(GCP, DATA, start={"w": v}, max_iter=2),
    "evaluate(program, weights)": lambda v: api.evaluate(v, [{"x": 1.0}], v),
    "evaluate(weights)": lambda v: api.evaluate(PROGRAM, [{"x": 1.0}], v),
    "load_data(data)": lambda v: api.load_data(v),
    "initial_weights(shapes)": lambda v: api.initial_weights(v),
    "initial_weights(init, seed)": lambda v: api.initial_weights({"W": (2, 2)}, v, v),
    "compare_modes(examples, budget)": lambda v: api.compare_modes(PROGRAM, examples=v,
                                                                   budget=0.0),
    "first_nonfinite(inputs)": lambda v: api.first_nonfinite(PROGRAM, v, "o"),
    "newton(data)": lambda v: TenFlangModel(SEED_EXAMPLE).newton(v, max_iter=2),
    "newton(start)": lambda v: TenFlangModel(SEED_EXAMPLE).newton(DATA, start=v, max_iter=2),
    "newton(max_iter)": lambda v: TenFlangModel(SEED_EXAMPLE).newton(DATA, max_iter=v),
    "newton(tol, cg_tol, cg_iterations)": lambda v: TenFlangModel(SEED_EXAMPLE).newton(
        DATA, max_iter=2, tol=v, cg_tol=v, cg_iterations=v),
    "hvp(v)": lambda v: SEED.hvp(v, DATA),
    "hvp(data)": lambda v: SEED.hvp({"w": 1.0}, v),
    "top_eigenvalue(iterations, tol, seed)": lambda v: SEED.curvature(DATA).top_eigenvalue(
        iterations=v, tol=v, seed=v),
    "compile_hvp(program)": lambda v: api.compile_hvp(v),
    "curvature(engine)": lambda v: api.curvature(SEED_EXAMPLE, DATA, {"w": 0.0}, engine=v),
    "check_backprop(text, require, draws, seed)": lambda v: SEED.check_backprop(
        v, require=v, draws=v, seed=v),
    # issue 18: test data, data sets, the decision boundary, an edited GCP
    "train(test)": lambda v: TenFlangModel(SEED_EXAMPLE).train(DATA, test=v, max_iter=2),
    "trainer(test)": lambda v: api.trainer(GCP, DATA, test=v, max_iter=2),
    "training_panel(test)": lambda v: XOR.training_panel(XOR.data, test=v, boundary=True,
                                                           live=False, max_iter=2),
    "training_panel(boundary)": lambda v: XOR.training_panel(XOR.data, boundary=v,
                                                               live=False, max_iter=2),
    "datasets.make(name)": lambda v: datasets.make(v, 10),
    "datasets.moons(n)": lambda v: datasets.moons(v),
    "datasets.xor(noise, seed)": lambda v: datasets.xor(10, noise=v, seed=v),
    "datasets.blobs(test)": lambda v: datasets.blobs(10, test=v),
    "datasets.circles(x, y)": lambda v: datasets.circles(10, x=v, y=v),
    "datasets.spirals(labels)": lambda v: datasets.spirals(10, labels=v),
    "datasets.points(name, n)": lambda v: datasets.points(v, v),
    "datasets.split(data, test, seed)": lambda v: datasets.split(v, v, seed=v),
    "datasets.split(test, seed)": lambda v: datasets.split(DATA, v, seed=v),
    "boundary_data(data)": lambda v: XOR.boundary_data(v, resolution=4),
    "boundary_data(test)": lambda v: XOR.boundary_data(test=v, resolution=4),
    "boundary_data(output)": lambda v: XOR.boundary_data(output=v, resolution=4),
    "boundary_data(resolution)": lambda v: XOR.boundary_data(resolution=v),
    "boundary_data(limits)": lambda v: XOR.boundary_data(limits=v, resolution=4),
    "boundary(title)": lambda v: XOR.boundary(resolution=4, title=v),
    "with_gcp(text)": lambda v: SEED.with_gcp(v),
    "with_gcp(name)": lambda v: SEED.with_gcp(SEED.gcp, v),
    # the final adversarial round: an engine's numbers, its programs, the interpreter
    "ops.value(op, a)": lambda v: ops.value(v, v),
    "ops.value(mul, a, b)": lambda v: ops.value("mul", v, v),
    "ops.value(matmul, a, b)": lambda v: ops.value("matmul", v, v),
    "ops.local_partials(mul, a, b)": lambda v: ops.local_partials("mul", v, 2.0),
    "ops.local_partials(op, a)": lambda v: ops.local_partials(v, v),
    "steps(program)": lambda v: api.steps(v),
    "random_programs(seed)": lambda v: api.random_programs(v, 1),
    "random_programs(count, kink)": lambda v: api.random_programs(0, v, v),
    "interpret(program, inputs)": lambda v: api.interpret(v, v),
    "interpret(inputs)": lambda v: api.interpret(PROGRAM, v),
    "compare_modes(program)": lambda v: api.compare_modes(v, examples=1, budget=0.0),
    "check_engine(name, seed)": lambda v: check_engine(v, lambda p, x: x, seed=v, programs=1),
    # the grading helpers a teacher's locked cells call (tf.grading), and their core
    "grading.start(assignment, graded)": lambda v: _graded(lambda: tf.grading.start(v, v)),
    "grading.start(no_training)": lambda v: _graded(lambda: tf.grading.start("lab", [], v)),
    "grading.example(name, x)": lambda v: _graded(lambda: tf.grading.example(v, x=v)),
    "grading.example(x)": lambda v: _graded(lambda: tf.grading.example("ex3", x=v)),
    "grading.example(**v)": lambda v: _graded(lambda: tf.grading.example(
        "ex3", **(v if isinstance(v, dict) else {"x": v}))),
    "grading.fingerprint(model)": lambda v: tf.grading.fingerprint(v),
    "grading.given(name)": lambda v: _graded(lambda: tf.grading.given(v)),
    "grading.check_number(name, expected)": lambda v: _graded(
        lambda: tf.grading.check_number(v, v)),
    "grading.check_number(hint, rtol, atol)": lambda v: _graded(
        lambda: tf.grading.check_number("answer_3", 1.0, hint=v, rtol=v, atol=v)),
    "grading.check_answer(answer, model, fingerprint)": lambda v: _graded(
        lambda: tf.grading.check_answer(v, model=v, fingerprint=v)),
    "grading.check_answer(require, draws)": lambda v: _graded(
        lambda: tf.grading.check_answer("ex4", model="seed", fingerprint=SEED_PRINT,
                                        require=v, draws=v)),
    "grading.check_engine(name, programs)": lambda v: _graded(
        lambda: tf.grading.check_engine(v, programs=v)),
    "grading.gradient(model, weight, fingerprint)": lambda v: _graded(
        lambda: tf.grading.gradient(v, v, fingerprint=v, example="ex3")),
    "grading.gradient(weight, example)": lambda v: _graded(
        lambda: tf.grading.gradient("seed", v if isinstance(v, str) else "w",
                                    fingerprint=SEED_PRINT, example=v)),
    "grading.check_fit(answer, model, accuracy, starts)": lambda v: _graded(
        lambda: tf.grading.check_fit(v, model=v, data=DATA, accuracy=v, starts=v,
                                     max_iter=2)),
    "grading.check_fit(data, max_iter)": lambda v: _graded(
        lambda: tf.grading.check_fit("ex16", model="seed", data=v, starts=1,
                                     max_iter=v if isinstance(v, int) and v < 5 else 2)),
    "core grading.draw_example(seed, choices)": lambda v: grading.draw_example(v, v),
    "core grading.fingerprint(source, settings)": lambda v: grading.fingerprint(v, v),
    "core grading.student_seed(student, salt)": lambda v: grading.student_seed(v, v),
}


def _settle(result: Any) -> None:
    """Show a result as a notebook would (its views may fail only as a TenFlangError too)."""
    for show in ("_repr_html_", "__repr__"):
        if hasattr(result, show):
            getattr(result, show)()


@pytest.mark.parametrize("call", list(CALLS))
@hypothesis_settings(25)
@given(value=values)
def test_any_argument_gives_a_result_or_a_tenflang_error(call: str, value: Any) -> None:
    with np.errstate(all="ignore"):
        try:
            _settle(CALLS[call](value))
        except TenFlangError as err:
            assert str(err)  # it renders
            assert "\x1b" not in str(err)  # and escapes what it echoes


@pytest.mark.parametrize(("call", "value", "message"), [
    (lambda v: SEED.landscape_data(resolution=v), 1.5,
     "resolution must be an integer from 2 to 100,000 (or None: the default), not 1.5"),
    (lambda v: XOR.landscape_data(resolution=v), 5000,
     "resolution 5,000 makes 25,000,000 grid points on a plane (at most 4,000,000"),
    (lambda v: XOR.landscape_data(limits=v), (1, -1),
     "limits must be (low, high) with finite low < high, or one such pair per axis (2 here)"),
    (lambda v: XOR.landscape_data(limits=v), [(0, 1), (0, float("nan"))], "limits must be"),
    (lambda v: SEED.landscape_data(limits=v), (-1e308, 1e308), "limits must be"),
    (lambda v: SEED.landscape_data(through=v), [{"w": 0.0}, {"w": float("nan")}],
     "through: the weights of point 2 must be finite numbers"),
    (lambda v: SEED.landscape_data(paths=v), [SEED], "paths must be a dict of runs"),
    (lambda v: SEED.landscape_data(paths={"a": v}), "abc", "the run 'a' must be a model"),
    (lambda v: XOR.landscape_data(along=v), 3, "along must be one or two weight components"),
    (lambda v: XOR.gradcheck(max_components=v), 0, "max_components must be an integer >= 1"),
    (lambda v: SEED.gradcheck(rtol=v), float("nan"), "rtol must be a finite number >= 0"),
    (lambda v: SEED.cost(examples=v), 2.5, "examples must be an integer from 1 to 1,000,000"),
    (lambda v: SEED.cost(budget=v), -1, "budget must be a finite number >= 0 (seconds)"),
    (lambda v: SEED.show(v), ["graph", 3], "which must be view names, not 3"),
    (lambda v: SEED.show(v), "grpah", "unknown view 'grpah'"),
    (lambda v: SEED.training_panel(DATA, live=v), "yes", "live must be True or False"),
    (lambda v: TenFlangModel(SEED_EXAMPLE, v), "a\x1b[2J",
     "name must be a string without control characters, not 'a\\x1b[2J'"),
    (lambda v: TenFlangModel(v), None, "text must be a string, not None"),
    (lambda v: api.evaluate(PROGRAM, [{"x": 1.0}], {"w": v}), "abc",
     "value of 'w' is not a number or numbers: 'abc'"),
    (lambda v: api.train(GCP, DATA, start={"w": v}), float("nan"),
     "start['w'] must be finite numbers, not nan"),
    (lambda v: api.train(GCP, DATA, start=v), {"w": 1.0, "v": 2.0},
     "start: 'v' is not a weight of the program (the weights: w)"),
    (lambda v: api.initial_weights({"w": ()}, seed=v), -1,
     "seed must be an integer >= 0, not -1"),
    (lambda v: XOR.boundary_data(resolution=v), 1.5,
     "resolution must be an integer from 2 to 100,000 (or None: the default), not 1.5"),
    (lambda v: XOR.boundary_data(resolution=v), 5000,
     "resolution 5,000 makes 25,000,000 grid points on a plane (at most 4,000,000"),
    (lambda v: XOR.boundary_data(limits=v), ((0, 1), (1, 0)), "limits must be (low, high)"),
    (lambda v: XOR.boundary_data(output=v), 3, "output must be a string (or None"),
    (lambda v: XOR.training_panel(XOR.data, boundary=v), "yes", "boundary must be True or False"),
    (lambda v: datasets.moons(v), 10**9, "n must be an integer from 2 to 1,000,000"),
    (lambda v: datasets.moons(10, seed=v), -1, "seed must be an integer >= 0, not -1"),
    (lambda v: datasets.split(DATA, v), float("nan"), "test must be a share (0.25), a count"),
    (lambda v: SEED.with_gcp(v), None, "text must be a string, not None"),
    (lambda v: ops.value("mul", v, 2.0), "x", "operand 1 must be a number or numbers (a numpy "
     "array), not 'x'"),
    (lambda v: ops.local_partials("pow", 2.0, v), 1j, "operand 2 must be a number or numbers"),
    (lambda v: api.random_programs(0, v), 10**20, "count must be an integer from 1 to 1,000"),
    (lambda v: api.random_programs(v), -1, "seed must be an integer >= 0, not -1"),
    (lambda v: check_engine("forward", lambda p, x: x, seed=0, programs=v), 10**9,
     "programs must be an integer from 1 to 1,000"),
    (lambda v: check_engine(v, lambda p, x: x, seed=0), ["forward"],
     "name must be a part of an engine: forward, backprop_step or backward, not ['forward']"),
    (lambda v: api.steps(v), 3, "program must be a Program or its text, not 3"),
    (lambda v: api.interpret(PROGRAM, v), [1.0], "inputs must be a dict of values"),
    (lambda v: api.compare_modes(v), SEED_EXAMPLE[:20], "program must be a Program, not"),
    (lambda v: SEED.with_gcp(SEED.gcp, v), "a\x1b[2J",
     "name must be a string without control characters, not 'a\\x1b[2J'"),
    # an int beyond any float: refused as the number it is, not an OverflowError
    (lambda v: SEED.cost(budget=v), 10**400, "budget must be a finite number >= 0 (seconds), "
     "not 10000"),
    (lambda v: SEED.landscape_data(limits=v), (0, 10**400), "limits must be (low, high)"),
    (lambda v: api.evaluate(PROGRAM, [{"x": 1.0}], {"w": v}), 10**400,
     "value of 'w' is not a number or numbers"),
    (lambda v: grading.draw_example(0, {"x": v}), [],
     "x must be a list of finite numbers to pick from (1 to 1,000,000 of them), not []"),
    (lambda v: grading.draw_example(0, {"x": v}), [[1.0, 2.0]],
     "x must be a list of finite numbers to pick from"),
    (lambda v: tf.grading.fingerprint(v), "x", "model must be a model (what a %%tenflang NAME "
     "cell binds to NAME), not 'x'"),
])
def test_a_bad_argument_says_what_it_must_be(call: Callable[[Any], Any], value: Any,
                                             message: str) -> None:
    # before: TypeError, ValueError from numpy or linalg, a widget's TraitError, a hang
    with pytest.raises(TenFlangError) as info:
        call(value)
    assert message in str(info.value)


def test_arguments_and_settings_share_one_rule_and_one_wording() -> None:
    # the settings' table is made of the same Rule: the same message shape everywhere
    assert isinstance(SETTINGS["seed"], type(ARGUMENTS["seed"]))
    for rule in (SETTINGS["seed"], ARGUMENTS["seed"]):
        with pytest.raises(ArgumentError, match=r"^error: seed must be an integer >= 0, not -1$"):
            rule.check(-1)
    assert check_arguments(examples=3.0, budget=1, sweeps=None, full=np.bool_(True)) == (
        3, 1.0, None, True)
