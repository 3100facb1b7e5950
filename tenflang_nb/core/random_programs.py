"""Random scalar programs, with values on which every line is well defined: what an engine
written by hand is checked on (notebook 07), drawn from a seed (a student's own).

Each program has one or two inputs, an expected output ``y``, two or three weights and a
few lines of elementwise operators on scalars, and ends in the loss ``L = (s - y)^2`` of the
lines nothing else uses, added up in ``s``. Every program has the two cases an engine gets
wrong first: an operand used twice by one line (``mul v2 v2``, ``sub w1 w1``) and a variable
used by two lines (fan-out). Operands are drawn from everything defined so far, the unused
first, so every input and weight reaches the loss; now and then one is a constant. Values
are drawn to two decimals; each line is computed as it is drawn (``ops.value``), and a line
that would leave its operator's safe domain (``ln`` of a small number, a denominator near 0,
``relu`` near its kink) is drawn again, or becomes ``tanh``. With ``kink`` a weight equal to
a constant ``c`` feeds ``relu (sub w c)``: ``relu`` exactly at its kink, where the table's
partial is 0 (as PyTorch's) and a difference quotient would say 0.5.

>>> case = random_program(7)
>>> case.repeated and case.fan_out, case.program.loss, sorted(case.values)[:2]
(True, 'L', ['w1', 'w2'])
>>> [c.program.text() == d.program.text() for c, d in zip(random_programs(1, 3),
...                                                        random_programs(1, 3))]
[True, True, True]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import ops
from .arguments import check_arguments
from .ops import Const
from .program import Program, parse

__all__ = ["RandomProgram", "random_program", "random_programs"]

SAFE = 50.0  # the largest magnitude a value may reach
MARGIN = 0.25  # distance kept from a kink, a pole and the edge of a domain
UNARY = ("logistic", "exp", "ln", "neg", "tanh", "relu", "sqrt", "abs")
BINARY = ("add", "sub", "mul", "div", "pow")
# what a line with the same operand twice may be (sub v v is 0: its terms must cancel)
TWICE = ("mul", "mul", "add", "sub", "div")
CONSTANTS = (2.0, 0.5, 3.0, -1.0, 1.5)
KINKS = (0.5, -0.5, 1.0)
# where each operator is smooth and tame, given its operands' values
SAFE_AT: dict[str, Callable[..., bool]] = {
    "exp": lambda a: a <= 3,
    "ln": lambda a: a >= MARGIN,
    "sqrt": lambda a: a >= MARGIN,
    "relu": lambda a: abs(a) >= MARGIN,
    "abs": lambda a: abs(a) >= MARGIN,
    "div": lambda a, b: abs(b) >= MARGIN,
    "pow": lambda a, b: a >= MARGIN and abs(b) <= 3,
}


@dataclass(frozen=True)
class RandomProgram:
    """A random program and values of its inputs, expected output and weights."""

    program: Program
    values: dict[str, float]

    @property
    def uses(self) -> Counter[str]:
        """How many times each variable is an operand (a line using it twice counts 2)."""
        return Counter(a for d in self.program.definitions() for a in d.variables())

    @property
    def repeated(self) -> bool:
        """A line uses one variable twice (``mul v v``)."""
        return any(len(set(d.variables())) < len(d.variables())
                   for d in self.program.definitions())

    @property
    def fan_out(self) -> bool:
        """A variable is an operand of two lines or more."""
        lines = Counter(a for d in self.program.definitions() for a in set(d.variables()))
        return any(k > 1 for k in lines.values())

    @property
    def kink(self) -> bool:
        """``relu`` is evaluated exactly at its kink."""
        return any(d.op == "relu" and self._value(d.args[0]) == 0
                   for d in self.program.definitions())

    def _value(self, ref: str | Const) -> float:
        if isinstance(ref, Const):
            return ref.value
        if ref in self.values:
            return self.values[ref]
        d = self.program.defs[ref]
        return float(ops.value(d.op, *(self._value(a) for a in d.args)))


def random_programs(seed: int, count: int = 8, kink: bool = False) -> list[RandomProgram]:
    """``count`` programs from ``seed`` (the same ones for the same seed); with ``kink`` the
    last one has ``relu`` at its kink."""
    seed, count, kink = check_arguments(seed=seed, count=count, kink=kink)
    return [random_program(seed * 1000 + i, kink=kink and i == count - 1)
            for i in range(count)]


def random_program(seed: int, lines: int = 6, kink: bool = False) -> RandomProgram:
    """A program of ``lines`` random lines (before the loss's), with an operand used twice and
    fan-out (see the module), and its values, from ``seed``."""
    return _Builder(np.random.default_rng(seed), lines, kink).build()


class _Builder:
    def __init__(self, rng: np.random.Generator, lines: int, kink: bool) -> None:
        self.rng = rng
        self.lines = lines
        self.kink = kink
        self.values: dict[str, float] = {}
        self.given: dict[str, str] = {}  # name -> kind
        self.defines: list[str] = []
        self.order: list[str] = []  # every variable, in the order it exists
        self.used: Counter[str] = Counter()  # how many lines use each variable

    def draw(self) -> float:
        return float(np.round(self.rng.uniform(0.3, 1.5), 2) * self.rng.choice((-1.0, 1.0)))

    def build(self) -> RandomProgram:
        rng = self.rng
        for kind, names in (("input", [f"x{i + 1}" for i in range(rng.integers(1, 3))]),
                            ("weight", [f"w{i + 1}" for i in range(rng.integers(2, 4))])):
            for name in names:
                self.given[name] = kind
                self.values[name] = self.draw()
                self.order.append(name)
        kinked = names[-1] if self.kink else None
        if kinked is not None:  # the weight equal to the constant of its relu's kink
            self.values[kinked] = float(rng.choice(KINKS))
        twice = int(rng.integers(1, self.lines))  # the line using an operand twice
        for i in range(self.lines):
            self.line(twice=i == twice)
        if not any(k > 1 for k in self.used.values()):
            self.define("tanh", (self.operand(fan_out=True),))
        if kinked is not None:
            hinge = self.define("sub", (kinked, Const.of(self.values[kinked]).text))
            self.define("relu", (hinge,))
        self.loss()
        text = "".join(f"declare {kind} {name}\n" for name, kind in self.given.items())
        text += "".join(f"declare intvar {name}\n" for name in self.order
                        if name not in self.given and name != "L")
        text += "declare loss L\n\n" + "".join(f"{d}\n" for d in self.defines)
        given = {n: self.values[n] for n in self.given}
        case = RandomProgram(parse(text, "random program"), given)
        assert case.repeated and case.fan_out and case.kink == self.kink, text
        return case

    # -------------------------------------------------------------- lines

    def value(self, ref: str) -> float:
        return self.values[ref] if ref in self.values else float(ref)

    def define(self, op: str, args: tuple[str, ...]) -> str:
        name = f"v{sum(1 for n in self.order if n[0] == 'v') + 1}"
        return self.emit(name, op, args)

    def emit(self, name: str, op: str, args: tuple[str, ...]) -> str:
        self.values[name] = float(ops.value(op, *(self.value(a) for a in args)))
        self.defines.append(f"define {name} = {op} {' '.join(args)}")
        self.used.update({a for a in args if a in self.values})  # lines, not operands
        self.order.append(name)
        return name

    def tame(self, op: str, args: tuple[str, ...]) -> bool:
        numbers = [self.value(a) for a in args]
        if not SAFE_AT.get(op, lambda *_: True)(*numbers):
            return False
        result = float(ops.value(op, *numbers))
        return bool(np.isfinite(result)) and abs(result) <= SAFE

    def operand(self, fan_out: bool = False) -> str:
        """An unused variable when there is one (most of the time), else any; with
        ``fan_out``, one used already."""
        unused = [n for n in self.order if not self.used[n]]
        pool = ([n for n in self.order if self.used[n]] if fan_out else
                unused if unused and self.rng.random() < 0.7 else self.order)
        pool = pool or self.order
        # later variables more often: chains, not only lines of the inputs
        weights = np.arange(1, len(pool) + 1, dtype=float)
        return str(self.rng.choice(pool, p=weights / weights.sum()))

    def line(self, twice: bool) -> None:
        rng = self.rng
        fan_out = not any(k > 1 for k in self.used.values()) and rng.random() < 0.5
        for _ in range(12):
            a = self.operand(fan_out)
            if twice:
                op, args = str(rng.choice(TWICE)), (a, a)
            elif rng.random() < 0.4:
                op, args = str(rng.choice(UNARY)), (a,)
            else:
                op = str(rng.choice(BINARY))
                b = (Const.of(float(rng.choice(CONSTANTS))).text if rng.random() < 0.25
                     else self.operand())
                args = (a, b) if rng.random() < 0.7 else (b, a)
            if self.tame(op, args):
                self.define(op, args)
                return
        self.define("tanh", (self.operand(),))

    def loss(self) -> None:
        sinks = [n for n in self.order if not self.used[n]]
        total = sinks[0]
        for other in sinks[1:]:
            total = self.define("add", (total, other))
        self.given["y"] = "exp_output"
        self.values["y"] = self.draw()
        error = self.define("sub", (total, "y"))
        self.emit("L", "mul", (error, error))
