"""The vocabulary every hint of the checker shares: the student's line as written
(:class:`Written`), the compiler's values named as a hint names them (:meth:`HintsBase.what`),
which of the model's variables a value is, and the relations that need no knowledge of the
program (a sign, a factor of 2, a 0)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ...lexical import adjoint_name, derivative_parts, split_derivative
from ...ops import Const, Ref
from ...syntax import Define
from ..reference import Reference, code, run_line

__all__ = ["RELATION_FACTOR", "RELATION_HINT", "RELATION_TO_IT", "SLOPES", "HintsBase",
           "Written"]

Array = np.ndarray

# The slope of each one-operand operator in the maths, {a} its input and {v} its value: how a
# hint speaks of a piece of a local partial (never only of the compiler's temporary)
SLOPES = {"tanh": "tanh's slope is 1 - {v}²", "logistic": "the logistic's slope is {v}(1 - {v})",
          "exp": "exp's slope is its value {v}", "ln": "ln's slope is 1/{a}",
          "sqrt": "sqrt's slope is 1/(2{v})", "relu": "relu's slope is 1 where {a} > 0, else 0"}


@dataclass(frozen=True)
class Written:
    """The student's ``line`` as written, for the hypotheses about the line itself: the
    isolated values of its ``operands`` (none for a line that cannot run) and the ``lines``
    where the student's own names are defined (a hint names a helper's line)."""

    line: Define
    operands: Mapping[str, Array] = field(default_factory=dict)
    lines: Mapping[str, int] = field(default_factory=dict)
    adjoint_of: str | None = None  # the variable whose adjoint the line (or its user) makes

    def name(self, a: Ref) -> str:
        """An operand as a hint names it: ``Wt (line 5)`` for a helper of the student's."""
        return f"{a} (line {self.lines[a]})" if a in self.lines else str(a)


class HintsBase:
    """The hypotheses about the lines of one check (they read the compiler's side): what
    every layer of them uses."""

    def __init__(self, ref: Reference) -> None:
        self.ref = ref
        self.loss = ref.loss
        self.program = ref.program
        self.close = ref.close
        self.written: Written | None = None  # the line a hint is about, when known
        # the variables a line may use, as the student names them: the model's, and their
        # adjoints
        self.names = [n for n in (*self.program.decls,
                                  *(adjoint_name(self.loss, v) for v in self.program.decls))
                      if n in ref.values]

    def what(self, name: str) -> str:
        """A value of the compiler's, as a hint names it: "the local partial d/o/d/z = ...",
        "the incoming adjoint d/L/d/o", "the compiler's d/o/d/z:0 = ...", or a term."""
        if name.startswith("the "):  # a term, a whole adjoint: already in words
            return name
        split = split_derivative(name)
        if split is not None and split[0] == self.loss and split[2] is not None:
            v = split[1]  # a temporary of the adjoint: which term of it, in words
            for use, term in self.ref.terms(v) if len(self.ref.uses(v)) > 1 else []:
                if self.close(self.ref.values[name], term):
                    formula = self.ref.formula(name)
                    return (f"the term of {adjoint_name(self.loss, v)} via "
                            f"{self.ref.use_text(use)}" + (f", {formula}" if formula else ""))
        if split is not None and split[0] != self.loss and split[2] is not None:
            # a piece of a local partial: the partial in the maths first, then the piece
            p, m = split[0], split[1]
            d = self.program.defs.get(p)
            if d is not None:
                slope = SLOPES.get(d.op or "") if len(d.args) == 1 else None
                return (f"a part of the local partial {adjoint_name(p, m)} of `{code(d)}` "
                        f"({self._where(d)})"
                        + (f", where {slope.format(a=m, v=p)}" if slope else "")
                        + f": the compiler's {self.ref.describe(name)}")
        parts = derivative_parts(name)
        kind = ("the local partial " if parts and parts[0] != self.loss else
                "the incoming adjoint " if parts else "the compiler's ")
        return kind + self.ref.describe(name)

    def _input_for_value(self, name: str, actual: Array) -> str | None:
        """``actual`` as the piece ``name`` of a local partial ``d/p/d/m`` written with the
        operator's input ``m`` where its value ``p`` belongs (``mul z1 z1`` for ``mul h h``,
        the square of tanh's slope)."""
        split = split_derivative(name)
        d = self.ref.gcp_program.defs.get(name)
        if split is None or split[0] == self.loss or split[2] is None or d is None:
            return None
        p, m = split[0], split[1]
        values = self.ref.values
        if (d.op is None or p not in d.args or p not in self.program.defs or m not in values
                or values[m].shape != values[p].shape):
            return None
        args = [a if isinstance(a, Const) else values[m] if a == p else values.get(a)
                for a in d.args]
        if any(x is None for x in args):
            return None
        got = run_line(d.op, args, self.ref.n)  # type: ignore[arg-type]
        if got is None or not self.close(actual, got):
            return None
        line = self.program.defs[p]
        return f"{m} is used where {p} belongs" + (
            f": {line.op}'s slope is written with its value {p}, not its input {m}"
            if line.op in SLOPES else "")

    def _named(self, value: Array, exclude: str | None = None, variables: bool = False
               ) -> str | None:
        """The first variable (or adjoint, unless ``variables``) of :attr:`names` whose value
        ``value`` is, on every draw; None for none, or for a constant or a single draw: it
        equals them by chance."""
        if self.ref.n == 1 or np.all(value == value.flat[0]):
            return None
        found = set(self.ref.matches(value)) - {exclude}
        return next((n for n in self.names if n in found
                     and (not variables or n in self.program.decls)), None)

    def _swapped_name(self, actual: Array, expected: Array) -> str | None:
        """"x is used where h belongs", when the two values are those variables'."""
        right = self._named(expected)
        wrong = self._named(actual, exclude=right) if right is not None else None
        return f"{wrong} is used where {right} belongs" if wrong else None

    def _where(self, d: Define) -> str:
        return f"line {d.src.line} of {self.program.file.rsplit('/', 1)[-1]}"

    def relation(self, actual: Array, expected: Array) -> str | None:
        """The relations that need no knowledge of the program: a sign, a factor of 2, a 0."""
        if self.close(expected, np.zeros_like(expected)):
            return None
        for name, factor in RELATION_FACTOR.items():
            if self.close(actual, factor * expected):
                return name
        return None

    def _scale_hint(self, actual: Array, expected: Array) -> str | None:
        relation = self.relation(actual, expected)
        if relation is None:
            return None
        # one example (the stepper's) has no draws to be 0 on
        return (RELATION_HINT[relation].removesuffix(" on every draw")
                if self.ref.example else RELATION_HINT[relation])

    def _constant_hint(self, actual: Array, expected: Array) -> str | None:
        """The right value is the same multiple of the student's on every draw and entry (a
        constant of the model's forgotten, or the wrong one); None on one example or draw,
        where any two numbers have a ratio."""
        if self.ref.n == 1 or self.ref.example:
            return None
        mine = np.abs(actual) > 1e-12
        if not mine.any() or self.close(expected, np.zeros_like(expected)):
            return None
        k = float(expected[mine].flat[0] / actual[mine].flat[0])
        if not np.isfinite(k) or abs(k) < 1e-9 or not self.close(expected, k * actual):
            return None
        return (f"the right value is {k:.4g} times yours on every draw: a constant factor is "
                "missing or wrong (a constant of the model, as in `mul 3 q`, multiplies the "
                "adjoint of its other operand; a square `mul e e` gives 2e)")


# the wrong value of each relation, as a multiple of the right one
RELATION_FACTOR = {"negative": -1.0, "twice": 2.0, "half": 0.5, "zero": 0.0}
RELATION_HINT = {
    "negative": "your value is the negative of the right one: check the signs (the local "
                "partial of `sub a b` with respect to b is -1; `neg` flips a sign)",
    "twice": "your value is twice the right one: a term or a factor 2 too many?",
    "half": "your value is half the right one: a factor 2 is missing (a square `mul e e` or "
            "`pow e 2` has the local partial 2e)",
    "zero": "your value is 0 on every draw",
}
RELATION_TO_IT = {"negative": "its negative", "twice": "twice that", "half": "half of that",
                  "zero": "0 on every draw"}
