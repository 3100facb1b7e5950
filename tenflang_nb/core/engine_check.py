"""An engine written by hand in Python (notebook 07), checked against the package's own.

A student writes three functions over a parsed program's :func:`~.graph.steps`, with the
operator table's numbers (``ops.value``, ``ops.local_partials``):

* ``forward(program, values)``: every variable's value, given the inputs' and weights';
  checked against the interpreter's values;
* ``backprop_step(step, values, adjoints)``: one line's contributions added to its
  operands' adjoints, in place; checked on a line of every scalar operator, an operand used
  twice (``mul a a``), a constant operand, and adjoints that already hold another use's
  term, against the compiler's GCP of a small program made so that its adjoints are exactly
  those sums;
* ``backward(program, values)``: the adjoint ``d/L/d/v`` of every variable; checked against
  the compiler's full GCP on random programs with fan-out and operands used twice, the last
  one with ``relu`` at its kink.

Every comparison is the package's one rule (``agreement``, with the backprop checker's
tolerance). The student's function runs with the package's compilers and interpreter
switched off (``guard.sealed``): an engine that asks the package for its answer fails. A
verdict is text naming the program, the variable, the expected and the actual value, and a
hint; an exception the function raises is a verdict too (its type, message and line), never
a traceback.

>>> from tenflang_nb.core import ops
>>> def forward(program, values):
...     values = dict(values)
...     for step in steps(program):
...         operands = [values[o] if isinstance(o, str) else o for o in step.operands]
...         values[step.target] = ops.value(step.op, *operands)
...     return values
>>> print(check_engine("forward", forward, seed=1))
✓ forward is right: its values agree with the interpreter's on 8 random programs
>>> print(check_engine("forward", lambda program, values: values, seed=1).text.splitlines()[0])
✗ forward: program 1 of 8: its result has no value for v1 (line 20: define v1 = add w3 0.5)
"""

from __future__ import annotations

import math
import os
import sysconfig
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .agreement import agreement, real_number
from .arguments import Rule, check_arguments
from .backprop import compile_program
from .backprop_check.reference import FLOOR, RTOL
from .formatting import fmt_assignments, fmt_list, fmt_value
from .graph import DataFlowGraph, Step, steps
from .guard import sealed
from .lexical import adjoint_name
from .plan import Plan
from .program import Program, ancestors, parse
from .random_programs import SAFE_AT, UNARY, RandomProgram, random_programs

__all__ = ["CHECKS", "EngineCheck", "RaisedElsewhere", "check_engine", "engine_part"]

PROGRAMS = 8  # random programs per check
# where code that is not the student's lives: this package, the installed ones, Python's own
LIBRARIES = tuple(dict.fromkeys(
    os.path.abspath(p) + os.sep for p in (
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")))))


@dataclass(frozen=True)
class EngineCheck:
    """The verdict on one function of an engine: ``ok`` and its ``text``."""

    name: str
    ok: bool
    text: str

    def report(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


class _Wrong(Exception):
    """A verdict found while checking (its message is the text after ``✗ name: ``)."""


class RaisedElsewhere(Exception):
    """What the student's function raised in the process that ran it (the autograder runs
    it in one of its own): the exception's type name, its message, where in their code."""

    def __init__(self, kind: str, message: str, frame: traceback.FrameSummary | None,
                 inside: str | None) -> None:
        super().__init__(message)
        self.kind, self.frame, self.inside = kind, frame, inside


def check_engine(name: str, function: Any, seed: int, programs: int = PROGRAMS
                 ) -> EngineCheck:
    """Check the student's ``function`` as the part ``name`` of an engine (a key of
    :data:`CHECKS`) on cases drawn from ``seed``."""
    name = engine_part(name)
    seed, programs = check_arguments(seed=seed, programs=programs)
    if function is None:
        return EngineCheck(name, False, f"✗ {name} is not defined yet: run the cell that "
                                        f"defines it (def {name}(...))")
    if not callable(function):
        return EngineCheck(name, False, f"✗ {name} should be a function, not "
                                        f"{type(function).__name__}")
    try:
        done = CHECKS[name](function, seed, programs)
    except _Wrong as wrong:
        return EngineCheck(name, False, f"✗ {name}: {wrong}")
    return EngineCheck(name, True, f"✓ {name} is right: {done}")


# ------------------------------------------------------------------------------ running it

def engine_part(name: Any) -> str:
    """``name`` when it is a part of an engine that can be checked (a key of :data:`CHECKS`).

    >>> engine_part("forward")
    'forward'
    """
    return Rule("name", str, f"a part of an engine: {fmt_list(list(CHECKS), 'or')}",
                choices=tuple(CHECKS)).check(name)


def _run(name: str, function: Callable[..., Any], args: Sequence[Any], where: str,
         listing: str = "") -> Any:
    """``function(*args)`` with the package's compilers and interpreter switched off; what
    went wrong as a :class:`_Wrong` saying ``where`` (and showing ``listing``)."""
    with sealed(f"the check runs {name}") as asked:
        try:
            result = function(*args)
        except Exception as exc:
            if asked:
                raise _Wrong(_asked(asked)) from None
            kind = type(exc).__name__
            frame, inside = _their_frame(exc)
            if isinstance(exc, RaisedElsewhere):
                kind, frame, inside = exc.kind, exc.frame, exc.inside
            if isinstance(exc, NotImplementedError) or kind == "NotImplementedError":
                raise _Wrong(f"{inside or name} is not answered yet: write its body in "
                             "place of '# YOUR CODE HERE' and 'raise NotImplementedError()', "
                             "and run its cell") from None
            line = (f" (in {inside or name}, line {frame.lineno}: "
                    f"{(frame.line or '').strip()})" if frame is not None else "")
            raise _Wrong(f"{where}: it raised {kind}: {exc}{line}"
                         + (f"\n{listing}" if listing else "")) from None
    if asked:
        raise _Wrong(_asked(asked))
    return result


def _asked(asked: list[str]) -> str:
    return (f"it asked for {asked[0]}, which the check switches off: it grades your engine, "
            "not the package's. Compute the values with tf.ops.value and the adjoints with "
            "tf.ops.local_partials")


def _their_frame(exc: BaseException) -> tuple[traceback.FrameSummary | None, str | None]:
    """The innermost frame of the student's code (not the package's, numpy's or Python's
    own) in ``exc``'s traceback, and the function it is in (a comprehension's frame is its
    function's)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not os.path.abspath(f.filename).startswith(LIBRARIES)]
    named = [f.name for f in frames if not f.name.startswith("<")]
    return (frames[-1] if frames else None), (named[-1] if named else None)


def _mapping(name: str, result: Any, what: str, where: str) -> Mapping[Any, Any]:
    if not isinstance(result, Mapping):
        raise _Wrong(f"{where}: it returned {type(result).__name__}, not a dict of {what}")
    return result


def _agrees(got: float, expected: float, floor: float) -> bool:
    return agreement(got, expected, rtol=RTOL, floor=floor).ok


def _shown(value: float) -> str:
    return fmt_value(value, "report")


def _listing(case: RandomProgram, k: int, count: int) -> str:
    body = "\n".join(f"    line {d.src.line}: {d}" for d in case.program.definitions())
    return f"program {k} of {count}, on {fmt_assignments(case.values)}:\n{body}"


def _line(step: Step) -> str:
    return f"line {step.line}: {step}"


# ------------------------------------------------------------------------------ forward

def _check_forward(forward: Callable[..., Any], seed: int, count: int) -> str:
    cases = random_programs(seed, count)
    for k, case in enumerate(cases, 1):
        order = steps(case.program)
        expected = Plan(case.program).example(case.values, [s.target for s in order])
        where = f"program {k} of {count}"
        result = _mapping("forward", _run("forward", forward, (case.program, dict(case.values)),
                                          where, _listing(case, k, count)),
                          "every variable's value", where)
        scale = max(abs(float(v)) for v in expected.values())  # type: ignore[arg-type]
        for step in order:
            reference = float(expected[step.target])  # type: ignore[arg-type]
            if step.target not in result:
                raise _Wrong(f"{where}: its result has no value for {step.target} "
                             f"({_line(step)})\n{_listing(case, k, count)}")
            got = real_number(result[step.target])
            if got is None or not _agrees(got, reference, FLOOR * scale):
                shown = _shown(got) if got is not None else repr(result[step.target])
                raise _Wrong(
                    f"{where}: {step.target} is {shown}, not {_shown(reference)} "
                    f"({_line(step)})\n    hint: {_forward_hint(step)}\n"
                    f"{_listing(case, k, count)}")
    return f"its values agree with the interpreter's on {count} random programs"


def _forward_hint(step: Step) -> str:
    constant = [o for o in step.operands if not isinstance(o, str)]
    if constant:
        return (f"the value is tf.ops.value({step.op!r}, ...) at its operands' values; "
                f"{_shown(constant[0])} is a constant operand: a number in step.operands, "
                "not a name")
    return ("the value is tf.ops.value(step.op, *the operands' values), after the lines "
            "its operands come from (tf.steps(program) is in that order)")


# ------------------------------------------------------------------------------ one step

# the lines backprop_step is checked on (a, b variables; numbers constants; "" a copy), the
# last one relu at its kink (a = 0), where the table's partial is 0: a difference quotient
# of tf.ops.value would say 0.5
STEP_LINES: tuple[tuple[str, ...], ...] = (
    ("mul", "a", "b"), ("add", "a", "b"), ("sub", "a", "b"), ("div", "a", "b"),
    ("pow", "a", "b"), ("pow", "a", "2"), ("sub", "1", "a"), ("div", "1", "a"),
    ("mul", "a", "a"), ("sub", "a", "a"), ("div", "a", "a"), ("", "a"),
    *((op, "a") for op in UNARY), ("relu", "a"),
)


def _check_step(backprop_step: Callable[..., Any], seed: int, count: int) -> str:
    rng = np.random.default_rng(seed)
    for k, (op, *operands) in enumerate(STEP_LINES, 1):
        names = list(dict.fromkeys(o for o in operands if o.isalpha()))
        values = _step_values(rng, op, operands) if k < len(STEP_LINES) else {"a": 0.0}
        before = {n: float(np.round(rng.uniform(-1, 1), 2)) if rng.random() < 0.6 else 0.0
                  for n in names}
        g = float(np.round(rng.uniform(0.5, 2) * rng.choice((-1, 1)), 2))
        program = _step_program(op, operands)
        given = {**values, **{f"p{n}": before[n] for n in names}, "g": g}
        gcp = compile_program(program, full=True)
        expected = Plan(gcp.program()).example(given, [adjoint_name("L", n) for n in names])
        step = next(s for s in steps(program) if s.target == "v")
        v = Plan(program).example(given, ["v"])["v"]
        adjoints = {"v": g, **before}
        where = f"on `{step}` with {fmt_assignments(values)}"
        _run("backprop_step", backprop_step, (step, {**values, "v": v}, adjoints), where)
        for n in names:
            reference = float(expected[adjoint_name("L", n)])  # type: ignore[arg-type]
            got = real_number(adjoints.get(n))
            if got is None or not _agrees(got, reference, FLOOR * max(1.0, abs(g))):
                shown = _shown(got) if got is not None else repr(adjoints.get(n))
                raise _Wrong(
                    f"{where},\n    d/L/d/v = {_shown(g)} and d/L/d/{n} = {_shown(before[n])} "
                    f"before it: d/L/d/{n} should become {_shown(reference)}, not {shown}\n"
                    f"    hint: {_step_hint(step, n, got, reference, before[n], values)}")
    return (f"its adjoints agree with the compiler's on {len(STEP_LINES)} lines: every "
            "scalar operator, a copy, an operand used twice, constant operands, adjoints that "
            "held another use's term already, and relu at its kink")


def _step_program(op: str, operands: Sequence[str]) -> Program:
    """``v = op operands`` in a program whose loss is ``g v + pa a (+ pb b)``: its adjoint
    of ``a`` is ``g`` times v's partials plus ``pa``, what one step adds to an adjoint."""
    names = list(dict.fromkeys(o for o in operands if o.isalpha()))
    lines = [f"declare input {n}" for n in [*names, *(f"p{n}" for n in names), "g"]]
    lines += [f"declare intvar {n}" for n in ["v", "t", *(f"t{n}" for n in names), "s"]]
    lines += ["declare loss L", f"define v = {' '.join([op, *operands]).strip()}",
              "define t = mul g v", *(f"define t{n} = mul p{n} {n}" for n in names)]
    last = f"t{names[-1]}"
    lines += ["define s = add t ta" if len(names) == 2 else "define s = t",
              f"define L = add s {last}"]
    return parse("\n".join(lines) + "\n", "backprop_step's line")


def _step_values(rng: np.random.Generator, op: str, operands: Sequence[str]
                 ) -> dict[str, float]:
    """Values of the variables of ``op operands`` where the operator is smooth and tame."""
    names = list(dict.fromkeys(o for o in operands if o.isalpha()))
    rule = SAFE_AT.get(op, lambda *_: True)
    while True:
        values = {n: float(np.round(rng.uniform(0.3, 1.5) * rng.choice((-1, 1)), 2))
                  for n in names}
        if rule(*(values[o] if o in values else float(o) for o in operands)):
            return values


def _step_hint(step: Step, name: str, got: float | None, reference: float,
               before: float, values: Mapping[str, float]) -> str:
    term = reference - before
    if step.op == "relu" and values[name] == 0:
        return ("relu is at its kink here: the table's partial there is 0 "
                "(tf.ops.local_partials('relu', 0.0)), as PyTorch's; a difference quotient "
                "would say 0.5")
    if got is not None and math.isclose(got, before, rel_tol=1e-9, abs_tol=1e-12) and term:
        return (f"d/L/d/{name} did not change: backprop_step adds its terms to the adjoints "
                "dict it is given, in place (adjoints[operand] += ...)")
    if got is not None and before and math.isclose(got, term, rel_tol=1e-6, abs_tol=1e-12):
        return (f"d/L/d/{name} held {_shown(before)} already, another use's term: add to "
                "it (+=), do not replace it (=)")
    if step.operands.count(name) > 1:
        return (f"{name} is both operands of this line: it gets a term per position, "
                "d/L/d/v times each position's local partial")
    if got is not None and math.isclose(got - before, -term, rel_tol=1e-6, abs_tol=1e-12):
        return "the term's sign is wrong"
    return (f"the term is d/L/d/v times the local partial of v with respect to {name}: "
            f"tf.ops.local_partials({step.op!r}, ...) at the operands' values")


# ------------------------------------------------------------------------------ backward

def _check_backward(backward: Callable[..., Any], seed: int, count: int) -> str:
    cases = random_programs(seed, count, kink=True)
    for k, case in enumerate(cases, 1):
        program = case.program
        loss = program.loss
        gcp = compile_program(program, full=True).program()
        order = [v for v in reversed(DataFlowGraph(program).topological_order([loss]))
                 if v != loss and adjoint_name(loss, v) in gcp.decls]
        expected = Plan(gcp).example(case.values, [adjoint_name(loss, v) for v in order])
        where = f"program {k} of {count}"
        result = _mapping("backward", _run("backward", backward, (program, dict(case.values)),
                                           where, _listing(case, k, count)),
                          "every variable's adjoint", where)
        scale = max(abs(float(v)) for v in expected.values())  # type: ignore[arg-type]
        for v in order:
            reference = float(expected[adjoint_name(loss, v)])  # type: ignore[arg-type]
            if v not in result:
                raise _Wrong(f"{where}: its result has no adjoint for {v}: backward returns "
                             f"the adjoint dict, d/{loss}/d/v for every variable v\n"
                             f"{_listing(case, k, count)}")
            got = real_number(result[v])
            if got is None or not _agrees(got, reference, FLOOR * scale):
                shown = _shown(got) if got is not None else repr(result[v])
                raise _Wrong(
                    f"{where}: d/{loss}/d/{v} is {shown}, not {_shown(reference)}\n"
                    f"    hint: {_backward_hint(case, v, got, reference)}\n"
                    f"{_listing(case, k, count)}")
    kinked = " (the last with relu at its kink)" if cases[-1].kink else ""
    return (f"its adjoints agree with the compiler's on {count} random programs, each with "
            f"fan-out and an operand used twice{kinked}")


def _backward_hint(case: RandomProgram, v: str, got: float | None, reference: float) -> str:
    program = case.program
    users = [d for d in program.definitions() if v in d.variables()]
    if got == 0 and reference != 0:
        return ("no term reached it: the loop goes over the steps from the last to the "
                "first (reversed(tf.steps(program))), starting from d/L/d/L = 1")
    if len(users) > 1 or any(d.variables().count(v) > 1 for d in users):
        uses = fmt_list([f"line {d.src.line} ({d})" for d in users])
        return (f"{v} is used by {uses}: its adjoint is the sum of a term per use "
                "(+= in backprop_step, not =)")
    if got is not None and math.isclose(got, -reference, rel_tol=1e-6):
        return "the sign is wrong"
    for d in program.definitions():
        if d.op == "relu" and case._value(d.args[0]) == 0 and v in ancestors(program, d.target):
            return (f"{d} is at relu's kink ({d.args[0]} = 0), where the table's partial is "
                    "0 (tf.ops.local_partials('relu', 0.0)), as PyTorch's")
    return (f"{v} is used by {fmt_list([str(d) for d in users])}: check its local partial "
            "there, and the adjoint it multiplies")


CHECKS: dict[str, Callable[[Callable[..., Any], int, int], str]] = {
    "forward": _check_forward,
    "backprop_step": _check_step,
    "backward": _check_backward,
}
