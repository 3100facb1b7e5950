"""An engine written by hand (notebook 07): what the package offers it (``tf.steps``,
``tf.ops.value``, ``tf.ops.local_partials``, random programs) and how it is checked
(``core/engine_check.py``, with the compilers switched off by ``core/guard.py``)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from helpers_fd import run_program

import tenflang_nb as tf
from tenflang_nb.core import ops
from tenflang_nb.core.agreement import agreement
from tenflang_nb.core.engine_check import STEP_LINES, check_engine
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.guard import Sealed, sealed
from tenflang_nb.core.lexical import adjoint_name
from tenflang_nb.core.random_programs import SAFE, UNARY, random_program, random_programs

ELEMENTWISE = [op.name for op in ops.OPS_LIST if op.partials is not None]
# operand values where every elementwise operator is smooth (lnz, ln, sqrt: positive a)
POINTS = [(0.7, 1.3), (1.9, -0.6), (0.35, 2.5)]


# ------------------------------------------------------------------------------ a right engine

def forward(program: Any, values: dict[str, float]) -> dict[str, float]:
    values = dict(values)
    for step in tf.steps(program):
        operands = [values[o] if isinstance(o, str) else o for o in step.operands]
        values[step.target] = tf.ops.value(step.op, *operands)
    return values


def backprop_step(step: Any, values: dict[str, float], adjoints: dict[str, float]) -> None:
    operands = [values[o] if isinstance(o, str) else o for o in step.operands]
    for operand, partial in zip(step.operands, tf.ops.local_partials(step.op, *operands),
                                strict=True):
        if isinstance(operand, str):
            adjoints[operand] += adjoints[step.target] * partial


def engine(step_function: Any = None, order: Any = reversed) -> Any:
    """``backward`` with its loop as given: the step (default :func:`backprop_step`) and the
    order of the steps (default: reversed)."""

    def backward(program: Any, values: dict[str, float]) -> dict[str, float]:
        values = forward(program, values)
        adjoints = {name: 0.0 for name in values}
        adjoints[program.loss] = 1.0
        for step in order(tf.steps(program)):
            (step_function or backprop_step)(step, values, adjoints)
        return adjoints

    return backward


backward = engine()


RIGHT = {"forward": forward, "backprop_step": backprop_step, "backward": backward}


# ------------------------------------------------------------------------------ the numbers

def _one_line(op: str, operands: str) -> Any:
    names = sorted({o for o in operands.split() if o.isalpha()})
    text = "".join(f"declare input {n}\n" for n in names)
    return tf.parse(text + f"declare loss v\ndefine v = {op} {operands}\n")


@pytest.mark.parametrize("op", ELEMENTWISE)
@pytest.mark.parametrize("point", POINTS, ids=str)
def test_local_partials_are_the_compilers(op: str, point: tuple[float, float]) -> None:
    arity = ops.OPS[op].arity
    program = _one_line(op, " ".join("ab"[:arity]))
    values = dict(zip("ab", point, strict=False))
    gcp = tf.compile(program, full=True)
    names = [adjoint_name("v", n) for n in "ab"[:arity]]
    expected = run_program(gcp.program(), values, names)
    got = ops.local_partials(op, *point[:arity])
    assert len(got) == arity
    for partial, name in zip(got, names, strict=True):
        assert isinstance(partial, float)
        assert agreement(partial, expected[name], rtol=1e-12).ok, (op, point, partial)


@pytest.mark.parametrize("op", [o for o in ELEMENTWISE if o not in ("step", "sign")])
@pytest.mark.parametrize("point", POINTS, ids=str)
def test_local_partials_match_finite_differences(op: str, point: tuple[float, float]) -> None:
    arity = ops.OPS[op].arity
    operands = list(point[:arity])
    h = 1e-6
    for i, partial in enumerate(ops.local_partials(op, *operands)):
        up, down = list(operands), list(operands)
        up[i] += h
        down[i] -= h
        slope = (ops.value(op, *up) - ops.value(op, *down)) / (2 * h)
        assert partial == pytest.approx(slope, rel=1e-6, abs=1e-8), (op, point, i)


def test_a_constant_exponent_and_the_kinks_follow_the_table() -> None:
    # a scalar operand is a constant, as the compiler sees `pow a 2`: its rule, mul 2 (pow a 1)
    assert ops.local_partials("pow", 3.0, 2.0) == (6.0, pytest.approx(9 * np.log(3.0)))
    # where there is no derivative, the convention the GCP uses (PyTorch's and JAX's)
    assert ops.local_partials("relu", 0.0) == (0.0,)
    assert ops.local_partials("abs", 0.0) == (0.0,)
    assert ops.local_partials("pow", 0.0, 0.0) == (0.0, 0.0)
    # the same operand twice: a partial per position, which the caller adds up
    assert ops.local_partials("mul", 2.5, 2.5) == (2.5, 2.5)
    assert ops.local_partials(None, 4.0) == (1.0,) and ops.value(None, 4.0) == 4.0


TENSORS = [
    ("matmul", (np.arange(6.0).reshape(2, 3) / 5, np.array([0.5, -1.0, 2.0]))),
    ("matmul", (np.array([0.5, -1.0]), np.arange(6.0).reshape(2, 3) - 2)),
    ("add", (np.ones((2, 3)), np.array([1.0, 2.0, 3.0]))),
    ("mul", (np.array([[1.0], [2.0]]), np.array([0.5, -0.5, 1.5]))),
    ("sum", (np.arange(6.0).reshape(2, 3),)),
    ("mean", (np.array([1.0, 2.0, 4.0]),)),
    ("softmax", (np.array([0.1, -2.0, 1.0]),)),
    ("logsoftmax", (np.array([0.1, -2.0, 1.0]),)),
    ("logsumexp", (np.array([0.1, -2.0, 1.0]),)),
    ("transpose", (np.arange(6.0).reshape(2, 3),)),
    ("outer", (np.array([1.0, 2.0]), np.array([3.0, -1.0, 0.5]))),
    ("tanh", (np.array([-1.0, 0.5]),)),
    ("pow", (np.array([0.5, 2.0]), 3.0)),
]


@pytest.mark.parametrize(("op", "operands"), TENSORS, ids=[t[0] for t in TENSORS])
def test_value_is_the_interpreters(op: str, operands: tuple[Any, ...]) -> None:
    names = "ab"[:len(operands)]
    decls = "".join(f"declare input {n} [{', '.join(map(str, np.shape(x)))}]\n"
                    if np.ndim(x) else f"declare input {n}\n"
                    for n, x in zip(names, operands, strict=True))
    program = tf.parse(decls + f"declare output v\ndefine v = {op} {' '.join(names)}\n")
    expected = run_program(program, dict(zip(names, operands, strict=True)), ["v"])["v"]
    got = ops.value(op, *operands)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-15)


def test_local_partials_of_arrays_are_elementwise() -> None:
    z = np.array([-1.0, 0.0, 2.0])
    (dz,) = ops.local_partials("tanh", z)
    np.testing.assert_allclose(dz, 1 - np.tanh(z) ** 2)
    da, db = ops.local_partials("mul", z, 2.0)
    assert da == 2.0  # the partial for a: the constant 2, a float
    np.testing.assert_array_equal(db, z)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: ops.value("logstic", 1.0), "tf.ops.value: error: unknown operator 'logstic'\n"
                                        "    hint: did you mean 'logistic' or 'log'?"),
    (lambda: ops.local_partials("mul", 1.0), "mul takes 2 operands, not 1"),
    (lambda: ops.local_partials("matmul", np.ones(2), np.ones(2)),
     "'matmul' is not elementwise: it has no local partials"),
    (lambda: ops.value("matmul", np.ones(2), np.ones(3)), "inner dimensions 2 and 3 differ"),
])
def test_the_numbers_refuse_clearly(call: Any, message: str) -> None:
    with pytest.raises(TenFlangError) as caught:
        call()
    assert message in str(caught.value)


# ------------------------------------------------------------------------------ the steps

PROGRAMS = [tf.parse(SEED_EXAMPLE), tf.parse_file("examples/digits/shape.tf"),
            *(case.program for case in random_programs(3, 4, kink=True))]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: f"{p.file}:{len(p.defs)}")
def test_steps_are_in_topological_order(program: Any) -> None:
    known = set(program.names("input", "exp_output", "weight"))
    found = tf.steps(program)
    assert sorted(s.target for s in found) == sorted(program.defs)
    for step in found:
        define = program.defs[step.target]
        assert step.line == define.src.line and str(step) == str(define)
        for operand in step.operands:
            assert isinstance(operand, str | float)
            if isinstance(operand, str):
                assert operand in known, f"{step}: {operand} before its line"
        known.add(step.target)


def test_a_step_of_a_copy_and_of_constants() -> None:
    program = tf.parse("declare input x\ndeclare intvar c\ndeclare loss L\n"
                       "define c = x\ndefine L = sub 1 c\n")
    copy, last = tf.steps(program)
    assert (copy.op, copy.operands, str(copy)) == (None, ("x",), "define c = x")
    assert (last.op, last.operands) == ("sub", (1.0, "c"))
    assert tf.steps("declare input x\ndeclare loss L\ndefine L = pow x 0.5\n")[0].operands \
        == ("x", 0.5)


# ------------------------------------------------------------------------------ random programs

def test_random_programs_are_the_same_for_a_seed_and_differ_between_seeds() -> None:
    texts = [[c.program.text() for c in random_programs(seed, 4)] for seed in (5, 5, 6)]
    assert texts[0] == texts[1] != texts[2]
    assert len(set(texts[0])) == 4


@pytest.mark.parametrize("seed", range(40))
def test_random_programs_have_what_an_engine_gets_wrong(seed: int) -> None:
    case = random_program(seed, kink=seed % 2 == 0)
    program = case.program
    assert case.repeated and case.fan_out and case.kink == (seed % 2 == 0)
    assert set(case.values) == set(program.names("input", "exp_output", "weight"))
    assert not program.warnings  # every input and weight reaches the loss, all is used
    for d in program.definitions():
        assert d.op is not None and ops.OPS[d.op].partials is not None
        assert d.op in UNARY or ops.OPS[d.op].arity == 2
        assert all(program.shapes[a] == () for a in d.variables())
    values = run_program(program, case.values, list(program.defs))
    for name, value in values.items():
        assert value is not None and np.isfinite(value) and abs(value) <= SAFE ** 2, name
    # a right engine's adjoints are the compiler's (its partials at the kink too)
    gcp = tf.compile(program, full=True)
    adjoints = backward(program, case.values)
    names = [v for v in program.decls
             if v != "L" and adjoint_name("L", v) in gcp.program().decls]
    expected = run_program(gcp.program(), case.values, [adjoint_name("L", v) for v in names])
    for v in names:
        assert agreement(adjoints[v], expected[adjoint_name("L", v)], rtol=1e-9,
                         floor=1e-12).ok, v


# ------------------------------------------------------------------------------ the checks

@pytest.mark.parametrize("seed", [0, 11, 2024])
@pytest.mark.parametrize("name", list(RIGHT))
def test_a_right_engine_passes(name: str, seed: int) -> None:
    result = check_engine(name, RIGHT[name], seed)
    assert result.ok, result.text
    assert result.text.startswith(f"✓ {name} is right: its ")


def _wrong(name: str, function: Any, seed: int = 1) -> str:
    result = check_engine(name, function, seed)
    assert not result.ok
    assert result.text.startswith(f"✗ {name}")
    assert "Traceback" not in result.text
    return result.text


def assign(step: Any, values: dict[str, float], adjoints: dict[str, float]) -> None:
    operands = [values[o] if isinstance(o, str) else o for o in step.operands]
    for operand, partial in zip(step.operands, tf.ops.local_partials(step.op, *operands),
                                strict=True):
        if isinstance(operand, str):
            adjoints[operand] = adjoints[step.target] * partial


def test_overwriting_an_adjoint_is_named() -> None:
    text = _wrong("backprop_step", assign)
    assert re.search(r"before it: d/L/d/[ab] should become -?[\d.]+, not -?[\d.]+\n", text)
    assert "add to it (+=), do not replace it (=)" in text


def test_a_line_using_an_operand_twice_is_named() -> None:
    def first_use_only(step: Any, values: dict[str, float], adjoints: dict[str, float]
                       ) -> None:
        if step.operands == ("a", "a"):
            (a, _), g = tf.ops.local_partials(step.op, values["a"], values["a"]), \
                adjoints[step.target]
            adjoints["a"] += g * a
            return
        backprop_step(step, values, adjoints)

    text = _wrong("backprop_step", first_use_only)
    assert text.startswith("✗ backprop_step: on `define v = mul a a` with a = ")
    assert "a is both operands of this line: it gets a term per position" in text


def test_the_wrong_order_is_named() -> None:
    text = _wrong("backward", engine(order=list))
    assert "no term reached it: the loop goes over the steps from the last to the first" in text
    assert "program 1 of 8, on x1 = " in text  # the program, with its values


def test_a_fan_out_missed_is_named() -> None:
    text = _wrong("backward", engine(assign))
    first = text.splitlines()[0]
    assert first.startswith("✗ backward: program 1 of 8: d/L/d/") and ", not " in first
    assert "its adjoint is the sum of a term per use (+= in backprop_step, not =)" in text


def test_differences_of_the_values_fail_at_the_kink() -> None:
    def differences(step: Any, values: dict[str, float], adjoints: dict[str, float]) -> None:
        operands = [values[o] if isinstance(o, str) else o for o in step.operands]
        for i, operand in enumerate(step.operands):
            if isinstance(operand, str):
                up, down = list(operands), list(operands)
                up[i] += 1e-6
                down[i] -= 1e-6
                slope = (tf.ops.value(step.op, *up) - tf.ops.value(step.op, *down)) / 2e-6
                adjoints[operand] += adjoints[step.target] * slope

    text = _wrong("backprop_step", differences)
    assert text.startswith("✗ backprop_step: on `define v = relu a` with a = 0,")
    assert "relu is at its kink here" in text
    assert len(STEP_LINES) > len(UNARY) + 5


@pytest.mark.parametrize("cheat", ["compile", "interpret", "swallowed", "model"])
def test_an_engine_asking_the_package_fails(cheat: str) -> None:
    def asking(program: Any, values: dict[str, float]) -> dict[str, float]:
        if cheat == "compile":
            tf.compile(program)
        elif cheat == "interpret":
            tf.interpret(program, values)
        elif cheat == "model":
            from tenflang_nb.notebook.model import TenFlangModel

            TenFlangModel(program.text())
        else:
            try:
                tf.compile(program)
            except Exception:
                pass
        return backward(program, values)

    text = _wrong("backward", asking)
    what = "interpreter" if cheat == "interpret" else "compiler"
    assert text == (f"✗ backward: it asked for the package's {what}, which the check switches "
                    "off: it grades your engine, not the package's. Compute the values with "
                    "tf.ops.value and the adjoints with tf.ops.local_partials")
    assert tf.compile(SEED_EXAMPLE).loss == "lambda"  # on again after the check


def test_what_the_function_raises_is_a_verdict() -> None:
    def stub(program: Any, values: dict[str, float]) -> dict[str, float]:
        raise NotImplementedError()

    def calls_a_stub(program: Any, values: dict[str, float]) -> dict[str, float]:
        return stub(program, values)

    def breaks(program: Any, values: dict[str, float]) -> dict[str, float]:
        return {step.target: values[step.target] for step in tf.steps(program)}

    assert _wrong("backward", stub).startswith("✗ backward: stub is not answered yet")
    assert _wrong("backward", calls_a_stub).startswith("✗ backward: stub is not answered yet")
    text = _wrong("forward", breaks)
    assert text.startswith("✗ forward: program 1 of 8: it raised KeyError: 'v1' (in breaks, "
                           "line ")
    assert "return {step.target: values[step.target] for step in tf.steps(program)})" in text

    def in_numpy(program: Any, values: dict[str, float]) -> dict[str, float]:
        return {"inverse": np.linalg.inv(np.zeros((2, 2)))}

    # raised inside numpy: the line named is the student's, not numpy's
    assert "LinAlgError: Singular matrix (in in_numpy, line " in _wrong("forward", in_numpy)


@pytest.mark.parametrize(("function", "verdict"), [
    (None, "✗ forward is not defined yet: run the cell that defines it (def forward(...))"),
    (3, "✗ forward should be a function, not int"),
    (lambda program, values: None, "✗ forward: program 1 of 8: it returned NoneType, not a "
                                   "dict of every variable's value"),
    (lambda program, values: {**forward(program, values), "v1": "one"},
     "✗ forward: program 1 of 8: v1 is 'one', not "),
    (lambda program, values: {**forward(program, values), "v2": float("nan")},
     "✗ forward: program 1 of 8: v2 is nan, not "),
])
def test_what_the_function_returns_is_judged(function: Any, verdict: str) -> None:
    assert _wrong("forward", function).startswith(verdict)


def test_the_seal() -> None:
    program = tf.parse(SEED_EXAMPLE)
    with sealed("a test runs") as asked:
        for refused in (lambda: tf.compile(program), lambda: tf.compile_forward(program),
                        lambda: tf.compile_hvp(program), lambda: tf.interpret(program, {})):
            with pytest.raises(Sealed, match="is switched off while a test runs"):
                refused()
        with sealed("an inner one runs") as inner:
            with pytest.raises(Sealed, match="while an inner one runs"):
                tf.compile(program)
        assert tf.steps(program) and ops.value("mul", 2.0, 3.0) == 6.0  # still there
        with pytest.raises(Sealed, match="while a test runs"):
            tf.compile(program)
    assert len(asked) == 5 and len(inner) == 1
    assert tf.compile(program).loss == "lambda"
