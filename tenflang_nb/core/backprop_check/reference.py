"""The compiler's side of a check: the full GCP of the shape program, run on random draws of
its inputs and weights (:mod:`~tenflang_nb.core.draws`), and what it knows about each
variable: its adjoint, its uses, the term each use adds, a value's formula.

A draw is kept only when every value of the compiler's GCP on it is finite and at most 1e6
in magnitude (no ``ln`` of a negative number, no division by almost 0).
"""

from __future__ import annotations

import numpy as np

from ..backprop import compile_program
from ..draws import draw_values
from ..errors import TenFlangError
from ..lexical import GIVEN_KINDS, adjoint_name, derivative_parts
from ..plan import Plan
from ..program import Program, ancestors, check
from ..syntax import Declare, Define, Statement

__all__ = ["Reference", "close", "code"]

Array = np.ndarray

LIMIT = 1e6  # a draw whose GCP values exceed this is too close to a pole to judge by
RTOL, ATOL = 1e-6, 1e-9
ORDINAL = ("first", "second")

Use = tuple[str, int]  # a use of a variable: (the line's target, the operand's index)


class Reference:
    """The compiler's full GCP, run on ``draws`` random draws of the inputs and weights of
    ``program`` (the shape program) from ``seed``: ``data`` holds the draws of the given
    values, ``values`` every value of the GCP on them (axis 0: the draw). With ``formulas``
    False (grading mode) no text made from it spells out the compiler's formulas."""

    def __init__(self, program: Program, draws: int, seed: int, formulas: bool = True) -> None:
        self.program = program
        self.formulas = formulas
        self.loss = program.loss
        self.gcp_program = compile_program(program, full=True).program()
        pruned = compile_program(program)
        self.expected_adjoints = list(dict.fromkeys(
            s.name for s in (line.statement for line in pruned.lines)
            if isinstance(s, Declare) and (parts := derivative_parts(s.name)) is not None
            and parts[0] == self.loss and parts[1] in program.decls and parts[1] != self.loss))
        self.data, self.values = self._draw(draws, seed)
        self.n = len(next(iter(self.values.values()))) if self.values else 1
        self._terms: dict[str, list[tuple[Use, Array]]] = {}

    def _draw(self, draws: int, seed: int) -> tuple[dict[str, Array], dict[str, Array]]:
        program = self.program
        k = max(32, 8 * draws)  # candidates, of which the first ``draws`` valid ones are kept
        data = draw_values(program, program.names(*GIVEN_KINDS), k, np.random.default_rng(seed))
        run = Plan(self.gcp_program).run(data, k)
        values = {n: np.array(v) for n in self.gcp_program.decls
                  if (v := run.value(n)) is not None}
        valid = np.ones(k, dtype=bool)
        for v in values.values():
            flat = v.reshape(k, -1)
            valid &= np.all(np.isfinite(flat) & (np.abs(flat) <= LIMIT), axis=1)
        rows = np.flatnonzero(valid)[:draws]
        if len(rows) == 0:
            raise TenFlangError.at(
                f"could not draw inputs and weights on which {program.file} is defined "
                f"({k} random draws tried: every one gave a NaN, an infinity or a value "
                f"beyond {LIMIT:g})", file=program.file)
        return ({n: v[rows] for n, v in data.items()},
                {n: v[rows] for n, v in values.items()})

    def formula(self, name: str) -> str | None:
        """The compiler's definition of ``name``, its temporaries written inline:
        ``mul o (sub 1 o)`` for ``d/o/d/z`` when ``o = logistic z``."""
        defs = self.gcp_program.defs
        if name not in defs or not self.formulas:
            return None

        def render(d: Define) -> str:
            args = [f"({render(defs[a])})" if isinstance(a, str) and ":" in a and a in defs
                    else str(a) for a in d.args]
            return " ".join([d.op, *args] if d.op else args)

        return render(defs[name])

    def describe(self, name: str) -> str:
        """``name = its formula`` (or just the name)."""
        formula = self.formula(name)
        return f"{name} = {formula}" if formula and formula != name else name

    def adjoint(self, v: str) -> Array:
        """The right ``d/L/d/v`` on every draw (0 for a variable that cannot affect L)."""
        name = adjoint_name(self.loss, v)
        if name in self.values:
            return self.values[name]
        return np.zeros((self.n, *self.program.shapes[v]))

    def uses(self, v: str) -> list[Use]:
        """Every use of ``v`` on the way to the loss: (consumer, operand index)."""
        reach = ancestors(self.program, self.loss)
        return [(p, i) for p, d in self.program.defs.items() if p in reach
                for i, a in enumerate(d.args) if a == v]

    def terms(self, v: str) -> list[tuple[Use, Array]]:
        """``d/L/d/v`` split into one term per use of ``v`` (each by compiling the program
        with the other uses cut off: the compiler, not a second set of rules, makes them)."""
        if v in self._terms:
            return self._terms[v]
        uses = self.uses(v)
        if len(uses) == 1:
            out = [(uses[0], self.adjoint(v))]
        else:
            out = [(use, self._term(v, use, uses)) for use in uses]
        self._terms[v] = out
        return out

    def _term(self, v: str, use: Use, uses: list[Use]) -> Array:
        program = self.program
        stop = f"{v}.stop"
        while stop in program.decls:
            stop += "_"
        cut = set(uses) - {use}
        statements: list[Statement] = [Declare("input", stop, program.shapes[v] or None)]
        for s in program.statements:
            if isinstance(s, Define) and any((s.target, i) in cut for i in range(len(s.args))):
                args = tuple(stop if (s.target, i) in cut else a for i, a in enumerate(s.args))
                s = Define(s.target, s.op, args, s.src)
            statements.append(s)
        cut_gcp = compile_program(check(statements, program.file), full=True).program()
        run = Plan(cut_gcp).run({**self.data, stop: self.values[v]}, self.n)
        value = run.value(adjoint_name(self.loss, v))
        return np.zeros_like(self.values[v]) if value is None else np.array(value)

    def use_text(self, use: Use) -> str:
        """A use as the student reads it: `` `define o = mul w w` ``, or "the second operand
        of" it when the line uses the variable more than once."""
        p, i = use
        d = self.program.defs[p]
        text = f"`{code(d)}`"
        if sum(1 for a in d.args if a == d.args[i]) > 1:
            text = f"the {ORDINAL[i] if i < 2 else str(i + 1) + 'th'} operand of {text}"
        return text


def close(a: Array, b: Array) -> bool:
    """Equal on every draw (same shape, finite, within a relative 1e-6).

    >>> close(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9])), close(np.ones(2), np.ones(3))
    (True, False)
    """
    if a.shape != b.shape:
        return False
    with np.errstate(all="ignore"):
        return bool(np.all(np.isfinite(a)) and np.allclose(a, b, rtol=RTOL, atol=ATOL))


def code(d: Define | None) -> str:
    """A shape program's line as its author wrote it (a macro's expansion as written)."""
    if d is None:
        return ""
    return d.src.expansion or " ".join(d.src.tokens) or str(d)
