"""The compiler's side of a check: the full GCP of the shape program, run on random draws of
its inputs and weights (:mod:`~tenflang_nb.core.draws`), and what it knows about each
variable: its adjoint, its uses, the term and the local partial of each use, a value's
formula; and the one test of a value against the compiler's (:meth:`Reference.close`).

A draw is kept only when every value of the compiler's GCP on it is finite and at most 1e6
times its usual size (no ``ln`` of a negative number, no division by almost 0; a loss scaled
by 1e10 is as checkable as any). Where draws were set aside, those kept may all give an adjoint
of exactly 0 (``exp (mul 1000 w)`` underflows where it does not overflow): an answer of 0
would then pass, so such an adjoint is :meth:`Reference.undecided`. The draws are made in
batches that fit :data:`MAX_FLOATS`; a model whose GCP cannot be held on the draws asked for is
refused before anything is allocated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..agreement import agreement
from ..backprop import compile_program
from ..draws import draw_values
from ..errors import TenFlangError
from ..lexical import GIVEN_KINDS, adjoint_name, derivative_parts, derived_names
from ..ops import OPS, Const
from ..plan import Plan
from ..program import Program, ancestors, check
from ..syntax import Declare, Define, Statement

__all__ = ["FLOOR", "MAX_FLOATS", "Reference", "TooLarge", "Use", "code", "run_line", "too_large"]

Array = np.ndarray

# A draw on which a value of the GCP exceeds LIMIT times its usual size (its median over the
# draws, taken as at least 1) is too close to a pole to judge by.
LIMIT = 1e6
# A value agrees with the compiler's within RTOL of the compiler's size on each draw; that
# size is at least FLOOR times the draw's largest adjoint, so a value of about 0 (a sum that
# cancels) is not asked to agree to the last bit, while every adjoint of a loss scaled by
# 1e-10 is still judged on its own scale.
RTOL = 1e-6
FLOOR = 1e-6
# The numbers a check may hold at once (8 bytes each: 400 MB): the compiler's values on the
# draws, a batch of candidate draws, the student's values.
MAX_FLOATS = 50_000_000
ORDINAL = ("first", "second")
STACK_SIZE = 10_000  # values of at most this many numbers per draw are matched side by side

Use = tuple[str, int]  # a use of a variable: (the line's target, the operand's index)


class Reference:
    """The compiler's full GCP, run on ``draws`` random draws of the inputs and weights of
    ``program`` (the shape program) from ``seed``: ``data`` holds the draws of the given
    values, ``values`` every value of the GCP on them (axis 0: the draw), ``floor`` the least
    size a value is judged by on each draw (see :meth:`close`). With ``formulas`` False
    (grading mode) no text made from it spells out the compiler's formulas. With ``given``
    (the inputs and weights of one example, as the stepper runs it), that example is draw 1
    and ``draws - 1`` random draws follow it: a hypothesis about a value must hold on them
    too, not by a coincidence of the example's numbers; the hints then say "here", not "on
    draw 1" (``at``). ``shown``: the draw (from 0) whose numbers the hints quote.

    >>> from tenflang_nb.core.program import parse
    >>> square = parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n")
    >>> Reference(square, 1, 0, given={"w": 3.0}).adjoint("w"), Reference(square, 1, 0).at
    (array([6.]), 'on draw 1')
    >>> Reference(square, 3, 0, given={"w": 3.0}).adjoint("w")[0], Reference(square, 3, 0).n
    (np.float64(6.0), 3)
    """

    def __init__(self, program: Program, draws: int, seed: int, formulas: bool = True,
                 given: Mapping[str, Any] | None = None) -> None:
        self.program = program
        self.formulas = formulas
        self.loss = program.loss
        self.gcp_program = compile_program(program, full=True).program()
        pruned = compile_program(program)
        self.expected_adjoints = list(dict.fromkeys(
            s.name for s in (line.statement for line in pruned.lines)
            if isinstance(s, Declare) and (parts := derivative_parts(s.name)) is not None
            and parts[0] == self.loss and parts[1] in program.decls and parts[1] != self.loss))
        self.discarded = 0  # candidate draws set aside as too near a pole (see _tame)
        self.example = given is not None
        self.shown = 0  # the draw whose numbers the hints quote (see ``at``)
        if given is None:
            self.data, self.values = self._draw(draws, seed)
        else:
            self.data, self.values = self._given(given, draws - 1, seed)
        self.n = len(next(iter(self.values.values()))) if self.values else 1
        self.floor = FLOOR * self._adjoint_scale()
        self._uses: dict[str, list[Use]] = {}
        self._terms: dict[str, list[tuple[Use, Array]]] = {}
        self._partials: dict[Use, tuple[str | None, Array]] = {}
        self._term_formulas: dict[Use, str | None] = {}  # a use's term, where no partial is
        self._stacks: dict[tuple[int, ...], tuple[list[str], Array | None]] | None = None

    # -------------------------------------------------------------- the draws

    def _draw(self, draws: int, seed: int) -> tuple[dict[str, Array], dict[str, Array]]:
        program = self.program
        gcp = self.gcp_program
        per_draw = self._fits(draws)
        k = max(32, 8 * draws)  # candidates, of which the first ``draws`` valid ones are kept
        # all the candidates at once where they fit (small models), else a few at a time
        batch = k if k * per_draw <= MAX_FLOATS else max(1, MAX_FLOATS // 4 // per_draw)
        rng = np.random.default_rng(seed)
        names = program.names(*GIVEN_KINDS)
        plan = Plan(gcp)
        kept: list[tuple[dict[str, Array], dict[str, Array]]] = []
        found = tried = 0
        while found < draws and tried < k:
            size = min(batch, k - tried)
            data = draw_values(program, names, size, rng)
            run = plan.run(data, size)
            valid = np.ones(size, dtype=bool)
            for n in gcp.decls:
                v = run.value(n)
                if v is not None:
                    valid &= _tame(v.reshape(size, -1))
            rows = np.flatnonzero(valid)[:draws - found]
            # the candidates looked at up to the last one kept (all of them when too few)
            seen = size if found + len(rows) < draws else int(rows[-1]) + 1
            self.discarded += seen - len(rows)
            if len(rows):
                kept.append(({n: v[rows] for n, v in data.items()},
                             {n: np.array(v[rows]) for n in gcp.decls
                              if (v := run.value(n)) is not None}))
            found += len(rows)
            tried += size
            del run
        if not found:
            raise TenFlangError.at(
                f"could not draw inputs and weights on which {program.file} is defined "
                f"({k} random draws tried: every one gave a NaN, an infinity or a value "
                f"beyond {LIMIT:g})", file=program.file)
        return tuple(  # type: ignore[return-value]
            {n: np.concatenate([part[i][n] for part in kept]) for n in kept[0][i]}
            for i in (0, 1))

    def _fits(self, draws: int) -> int:
        """The numbers the full GCP holds per draw; refused when ``draws`` of them do not fit."""
        per_draw = sum(math.prod(self.gcp_program.shapes[n]) for n in self.gcp_program.decls)
        too_large(draws * per_draw, f"the full GCP of {self.program.file}", per_draw, draws,
                  self.program.file)
        return per_draw

    @property
    def at(self) -> str:
        """Where the hints' numbers come from: "on draw 3", or "here" (one example's)."""
        return "here" if self.example and self.shown == 0 else f"on draw {self.shown + 1}"

    def _given(self, given: Mapping[str, Any], more: int, seed: int
               ) -> tuple[dict[str, Array], dict[str, Array]]:
        """One example's data and every value of the full GCP on it (draw 0), then those of
        ``more`` random draws (none where the model has none to give)."""
        gcp = self.gcp_program
        self._fits(1 + max(0, more))
        data = {n: np.asarray(v, dtype=float)[None] for n, v in given.items() if v is not None}
        run = Plan(gcp).run(data, 1)
        values = {n: np.array(v) for n in gcp.decls if (v := run.value(n)) is not None}
        if more < 1:
            return data, values
        try:
            extra_data, extra = self._draw(more, seed)
        except TenFlangError:
            return data, values
        self.discarded = 0  # the example is judged as given, the draws only test hypotheses
        return ({n: np.concatenate([v, extra_data[n]]) for n, v in data.items()
                 if n in extra_data},
                {n: np.concatenate([v, extra[n]]) for n, v in values.items() if n in extra})

    def _adjoint_scale(self) -> Array:
        """The largest magnitude of the adjoints on each draw (the loss's own, 1, left out:
        a loss scaled by 1e-10 scales every other adjoint, and so this)."""
        scale = np.zeros(self.n)
        for name, value in self.values.items():
            parts = derivative_parts(name)
            if parts is not None and parts[0] == self.loss and parts[1] != self.loss:
                scale = np.maximum(scale, np.abs(value.reshape(self.n, -1)).max(axis=1,
                                                                                initial=0.0))
        return scale

    def undecided(self, names: Sequence[str]) -> tuple[str, ...]:
        """The adjoints among ``names`` that are exactly 0 on every draw kept while draws were
        set aside: the draws cannot tell the right answer from 0 (a gradient genuinely 0
        everywhere, ``sub w w``, sets no draw aside).

        >>> from tenflang_nb.core.program import parse
        >>> pole = parse("declare weight w\\ndeclare intvar a\\ndeclare loss L\\n"
        ...              "define a = mul 1000 w\\ndefine L = exp a\\n")
        >>> Reference(pole, 5, 0).undecided(["d/L/d/w"]), Reference(pole, 5, 1).undecided(
        ...     ["d/L/d/w"])
        (('d/L/d/w',), ())
        """
        if not self.discarded:
            return ()
        return tuple(n for n in names if n in self.values and not np.any(self.values[n]))

    # -------------------------------------------------------------- agreement

    def close(self, actual: Array, reference: Array) -> bool:
        """``actual`` equals ``reference`` on every draw: the same shape, finite, and within
        :data:`RTOL` of the reference's size on the draw (at least ``floor``).

        >>> from tenflang_nb.core.program import parse
        >>> ref = Reference(parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n"),
        ...                 2, 0)
        >>> g = ref.adjoint("w")
        >>> ref.close(g * (1 + 1e-9), g), ref.close(g * 1e-3, g), ref.close(g[:1], g)
        (True, False, False)
        """
        return actual.shape == reference.shape and agreement(
            actual, reference, rtol=RTOL, floor=self.floor, rows=True).ok

    def first_wrong(self, actual: Array, reference: Array) -> int:
        """The first draw (from 0) on which ``actual`` does not equal ``reference`` by
        :meth:`close`: where a wrong line shows its mistake (0 when they never agree, or
        always).

        >>> from tenflang_nb.core.program import parse
        >>> ref = Reference(parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n"),
        ...                 3, 0)
        >>> g = ref.adjoint("w")
        >>> ref.first_wrong(np.array([g[0], g[1], 0.0]), g), ref.first_wrong(g[:1], g)
        (2, 0)
        """
        if actual.shape != reference.shape:
            return 0
        row = agreement(actual, reference, rtol=RTOL, floor=self.floor, rows=True).row
        return row if isinstance(row, int) else 0

    def matches(self, value: Array) -> list[str]:
        """The names of the values of the compiler's GCP that ``value`` equals on every draw,
        in the GCP's order."""
        if not np.all(np.isfinite(value)):
            return []
        if self._stacks is None:  # values of one shape side by side (small shapes only)
            groups: dict[tuple[int, ...], list[str]] = {}
            for name, v in self.values.items():
                groups.setdefault(v.shape, []).append(name)
            self._stacks = {s: (names, np.stack([self.values[n] for n in names])
                                if math.prod(s) <= STACK_SIZE else None)
                            for s, names in groups.items()}
        names, stack = self._stacks.get(value.shape, ([], None))
        if stack is None:
            return [n for n in names if self.close(value, self.values[n])]
        each = agreement(np.broadcast_to(value, stack.shape), stack, rtol=RTOL,
                         floor=self.floor, rows=2).each
        assert each is not None
        return [names[int(k)] for k in np.flatnonzero(np.all(each, axis=1))]

    # -------------------------------------------------------------- formulas

    def formula(self, name: str) -> str | None:
        """The compiler's definition of ``name``, its temporaries written inline:
        ``mul o (sub 1 o)`` for ``d/o/d/z`` when ``o = logistic z``."""
        if not self.formulas:
            return None
        return _formula(self.gcp_program.defs, name)

    def _cut_formula(self, cut_gcp: Program, name: str, stop: str, v: str) -> str | None:
        """A use's own formula, from the GCP compiled with the other uses cut off."""
        return _formula(cut_gcp.defs, name, {stop: v}) if self.formulas else None

    def describe(self, name: str) -> str:
        """``name = its formula`` (or just the name)."""
        formula = self.formula(name)
        return f"{name} = {formula}" if formula and formula != name else name

    # -------------------------------------------------------------- a variable's uses

    def adjoint(self, v: str) -> Array:
        """The right ``d/L/d/v`` on every draw (0 for a variable that cannot affect L)."""
        name = adjoint_name(self.loss, v)
        if name in self.values:
            return self.values[name]
        return np.zeros((self.n, *self.program.shapes[v]))

    def uses(self, v: str) -> list[Use]:
        """Every use of ``v`` on the way to the loss: (consumer, operand index)."""
        if v not in self._uses:
            reach = ancestors(self.program, self.loss)
            self._uses[v] = [(p, i) for p, d in self.program.defs.items() if p in reach
                             for i, a in enumerate(d.args) if a == v]
        return self._uses[v]

    def repeated(self, use: Use) -> bool:
        """Whether the line of ``use`` uses the same variable more than once (``mul w w``)."""
        d = self.program.defs[use[0]]
        return sum(1 for a in d.args if a == d.args[use[1]]) > 1

    def terms(self, v: str) -> list[tuple[Use, Array]]:
        """``d/L/d/v`` split into one term per use of ``v`` (each by compiling the program
        with the other uses cut off: the compiler, not a second set of rules, makes them)."""
        if v not in self._terms:
            uses = self.uses(v)
            if len(uses) == 1:
                self._terms[v] = [(uses[0], self.adjoint(v))]
            else:
                self._terms[v] = [(use, self._cut(v, use)) for use in uses]
        return self._terms[v]

    def partial(self, use: Use) -> tuple[str | None, Array] | None:
        """The local partial of one use of ``v`` alone, as (its formula, its value): for
        ``s = mul z z``, ``z`` for each operand (not ``add z z``, the partial of both).
        None for an operator without local partials (a vector-Jacobian product)."""
        p, i = use
        d = self.program.defs[p]
        if d.op is None or OPS[d.op].partials is None:
            return None
        v = str(d.args[i])
        if use not in self._partials:
            if len(self.uses(v)) > 1 and (self.repeated(use) or p == self.loss):
                self.terms(v)  # the programs cut for each use find its partial too
            elif p == self.loss:  # the loss's line: its only term is the partial
                self._partials[use] = (self.formula(adjoint_name(p, v)), self.adjoint(v))
            elif adjoint_name(p, v) in self.values:
                name = adjoint_name(p, v)
                self._partials[use] = (self.formula(name), self.values[name])
        return self._partials.get(use)

    def term_formula(self, use: Use) -> str | None:
        """The formula of one use's term of ``d/L/d/v`` where its line has no local partials
        (``matmul d/L/d/M (transpose W)`` for the first operand of ``M = matmul W W``)."""
        self.terms(str(self.program.defs[use[0]].args[use[1]]))
        return self._term_formulas.get(use)

    def _cut(self, v: str, use: Use) -> Array:
        """The term via ``use`` of ``d/L/d/v``: the program compiled with every other use of
        ``v`` reading a copy of it, an input (whose adjoint nobody asks for)."""
        program = self.program
        uses = self.uses(v)
        [stop] = derived_names(v, [".stop"], program.decls)
        cut = set(uses) - {use}
        statements: list[Statement] = [Declare("input", stop, program.shapes[v] or None)]
        for s in program.statements:
            if isinstance(s, Define) and any((s.target, i) in cut for i in range(len(s.args))):
                args = tuple(stop if (s.target, i) in cut else a for i, a in enumerate(s.args))
                s = Define(s.target, s.op, args, s.src)
            statements.append(s)
        cut_gcp = compile_program(check(statements, program.file), full=True).program()
        run = Plan(cut_gcp).run({**self.data, stop: self.values[v]}, self.n)
        p = use[0]
        partial = run.value(adjoint_name(p, v))
        if partial is not None and p != self.loss:
            self._partials[use] = (self._cut_formula(cut_gcp, adjoint_name(p, v), stop, v),
                                   np.array(partial))
        value = run.value(adjoint_name(self.loss, v))
        if partial is None and p != self.loss:  # a vector-Jacobian product: the term whole
            self._term_formulas[use] = self._cut_formula(cut_gcp, adjoint_name(self.loss, v),
                                                         stop, v)
        if p == self.loss and value is not None:  # the loss's line: the term is the partial
            self._partials[use] = (self._cut_formula(cut_gcp, adjoint_name(p, v), stop, v),
                                   np.array(value))
        return np.zeros_like(self.values[v]) if value is None else np.array(value)

    def use_text(self, use: Use) -> str:
        """A use as the student reads it: `` `define o = mul w w` ``, or "the second operand
        of" it when the line uses the variable more than once."""
        p, i = use
        text = f"`{code(self.program.defs[p])}`"
        if self.repeated(use):
            text = f"the {ordinal(i)} operand of {text}"
        return text


def _tame(flat: Array) -> Array:
    """Which draws (rows) of one value are finite and within LIMIT of its usual size.

    >>> _tame(np.array([[1.0], [2e7], [np.nan], [-3.0]])).tolist()
    [True, False, False, True]
    >>> _tame(np.array([[1e10], [2e10], [3e10]])).tolist()  # a value large on every draw
    [True, True, True]
    """
    finite = np.all(np.isfinite(flat), axis=1)
    size = np.abs(np.where(np.isfinite(flat), flat, 0.0)).max(axis=1, initial=0.0)
    usual = max(1.0, float(np.median(size[finite]))) if finite.any() else 1.0
    return finite & (size <= LIMIT * usual)


def ordinal(i: int) -> str:
    """ "first", "second", "3rd" ... for the operand of index ``i``."""
    return ORDINAL[i] if i < len(ORDINAL) else f"{i + 1}th"


def _formula(defs: Mapping[str, Define], name: str,
             rename: Mapping[str, str] | None = None) -> str | None:
    """``name``'s definition in a GCP, its temporaries written inline, ``rename`` applied."""
    if name not in defs:
        return None
    names = rename or {}

    def render(d: Define) -> str:
        args = [f"({render(defs[a])})" if isinstance(a, str) and ":" in a and a in defs
                else names.get(str(a), str(a)) for a in d.args]
        return " ".join([d.op, *args] if d.op else args)

    return render(defs[name])


class TooLarge(TenFlangError):
    """A check that would not fit in :data:`MAX_FLOATS` numbers (refused before running)."""


def too_large(numbers: int, what: str, per_draw: int, draws: int, file: str) -> None:
    """Refuse, before allocating, a check that would hold more than :data:`MAX_FLOATS`
    numbers: ``what`` holds ``per_draw`` numbers on each of ``draws`` draws."""
    if numbers <= MAX_FLOATS:
        return
    fits = MAX_FLOATS // max(1, numbers // draws)
    raise TooLarge.at(
        f"too large to check: {what} holds {per_draw:,} numbers per draw, "
        f"{numbers * 8 / 1e9:,.2g} GB on {draws} draw{'s' * (draws != 1)}, more than the "
        f"{MAX_FLOATS * 8 / 1e9:g} GB a check allows for them", file=file,
        hint=f"check on {fits} draw{'s' * (fits != 1)} (draws={fits}, --draws {fits})"
        if fits else "check a backward pass on a smaller model of the same form (smaller "
        "shapes): its lines are the same")


def run_line(op: str | None, args: Sequence[Array | Const], n: int) -> Array | None:
    """One line ``op args`` run by the planner on ``n`` draws (an array operand holds a value
    per draw, on axis 0); None when the operands' shapes do not fit the operator.

    >>> run_line("matmul", [np.ones((2, 3)), np.ones((2, 3, 4))], 2).shape
    (2, 4)
    >>> run_line("matmul", [np.ones((2, 3)), np.ones((2, 4, 3))], 2) is None
    True
    """
    names = [f"a{i}" for i in range(len(args))]
    statements: list[Statement] = [Declare("input", a, tuple(v.shape[1:]) or None)
                                   for a, v in zip(names, args, strict=True)
                                   if isinstance(v, np.ndarray)]
    operands = tuple(a if isinstance(v, np.ndarray) else v for a, v in zip(names, args,
                                                                         strict=True))
    statements += [Declare("intvar", "t", None), Define("t", op, operands)]
    try:
        program = check(statements, "<line>")
    except TenFlangError:
        return None
    env = {a: v for a, v in zip(names, args, strict=True) if isinstance(v, np.ndarray)}
    value = Plan(program).run(env, n).value("t")
    assert value is not None
    return np.array(np.broadcast_to(value, (n, *program.shapes["t"])))


def code(d: Define | None) -> str:
    """A shape program's line as its author wrote it (a macro's expansion as written)."""
    if d is None:
        return ""
    return d.src.expansion or " ".join(d.src.tokens) or str(d)
