"""The student's side of a check: their text parsed (every error at once, each naming the
student's line), and their lines run after the shape program's forward pass, twice:

* *chained* (as written: each operand has the student's own value);
* *isolated* (each operand that is an adjoint, or a local partial ``d/p/d/m`` named as the
  compiler names it, replaced by its right value; helpers recomputed from those).

An adjoint the student uses but does not define takes the compiler's value (it is *given*),
so one block of the backward pass can be checked at a time.
"""

from __future__ import annotations

import math
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from .. import lexical
from ..errors import Diagnostic, TenFlangError
from ..formatting import did_you_mean
from ..lexical import GIVEN_KINDS, adjoint_name, derivative_parts
from ..plan import Plan
from ..program import Program, check
from ..syntax import Comment, Declare, Define, Statement, parse_line
from .reference import Reference, too_large

__all__ = ["StudentLines", "parse_student"]

Array = np.ndarray

OWN_KINDS = ("intvar", "output")  # what a student may declare their own names as


def parse_student(text: str, file: str, program: Program, loss: str) -> list[Statement]:
    """The student's lines as statements; every error at once (syntax and names alike).

    >>> from tenflang_nb.core.program import parse
    >>> sq = parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n", "sq.tf")
    >>> [str(s) for s in parse_student("define d/L/d/w = add w w", "mine", sq, "L")]
    ['define d/L/d/w = add w w']
    >>> try:
    ...     parse_student("define w = mul 2 w", "mine", sq, "L")
    ... except TenFlangError as err:
    ...     print(err.first.message)
    'w' is a variable of the model (sq.tf, line 1): its value comes from the forward pass
    """
    errors: list[Diagnostic] = []
    statements: list[Statement] = []
    for number, line in enumerate(lexical.split_lines(text), 1):
        tokens = lexical.split_tokens(line)
        if len(line) > lexical.MAX_LINE_LENGTH:
            errors.append(Diagnostic(f"line is {len(line)} characters long", file, number,
                                     source=line[:80]))
            continue
        if tokens and tokens[0] in (*lexical.VECTOR_INSTRUCTIONS, lexical.MACRO_DIRECTIVE):
            errors.append(lexical.TokenLine.of(file, number, line).error(
                f"'{tokens[0]}' is not available in a backward pass", 0,
                hint="write one 'define' line per value").first)
            continue
        try:
            statement = parse_line(line, number, file)
        except TenFlangError as err:
            errors.extend(err.diagnostics)
            continue
        if isinstance(statement, Declare):
            errors.extend(_check_own_name(statement.name, statement.src.diag, 2, program, loss))
            if statement.name not in program.decls and statement.kind not in OWN_KINDS:
                errors.append(statement.src.diag(
                    f"your backward pass defines its values: declare '{statement.name}' "
                    "intvar (or leave the declaration out)", 1))
        elif isinstance(statement, Define):
            errors.extend(_check_own_name(statement.target, statement.src.diag, 1, program,
                                          loss))
        if statement is not None:
            statements.append(statement)
    errors.extend(_undefined(statements, program, loss))
    if errors:
        raise TenFlangError(errors)
    if not any(isinstance(s, Define) for s in statements):
        raise TenFlangError.at(
            "nothing to check: your backward pass defines nothing", file=file,
            hint=f"write lines like 'define d/{loss}/d/w = mul d/{loss}/d/z x'")
    return statements


def _check_own_name(name: str, diag: Callable[..., Diagnostic], token: int, program: Program,
                    loss: str) -> list[Diagnostic]:
    """A name the student declares or defines: not one of the model's, and a derivative name
    ``d/a/d/b`` only for the loss or a variable of the model."""
    if name in program.decls:
        line = program.decls[name].src.line
        return [diag(f"'{name}' is a variable of the model ({program.file}, line {line}): its "
                     "value comes from the forward pass", token,
                     hint=f"its adjoint is d/{loss}/d/{name}; give helpers names of their own")]
    parts = derivative_parts(name)
    if parts is None:
        return []
    of, wrt = parts
    if of != loss and of not in program.decls:
        return [diag(f"'{of}' is not the loss of the model ('{loss}') nor one of its variables",
                     token, hint=f"the adjoint of a variable w is d/{loss}/d/w")]
    if wrt not in program.decls:
        return [diag(f"'{wrt}' is not a variable of the model", token,
                     hint=f"variables: {' '.join(program.decls)}")]
    return []



def _undefined(statements: list[Statement], program: Program, loss: str) -> list[Diagnostic]:
    """An operand that nothing defines: not the model's, not an adjoint the compiler gives,
    not defined by the student (a name defined on a later line is the checker's error, "used
    before it is defined"). Declarations are optional here, so the way out is to define it.
    """
    targets = {s.target for s in statements if isinstance(s, Define)}
    declared = {s.name for s in statements if isinstance(s, Declare)}
    adjoints = [adjoint_name(loss, v) for v in program.decls]
    defined: list[str] = []
    errors = []
    for s in statements:
        if not isinstance(s, Define):
            continue
        for i, a in enumerate(s.args):
            parts = derivative_parts(a) if isinstance(a, str) else None
            if (not isinstance(a, str) or a in program.decls or a in targets or a in declared
                    or (parts is not None and parts[0] == loss and parts[1] in program.decls)):
                continue
            partial = parts is not None and parts[0] in program.decls
            what = f"the local partial {a}" if partial else f"'{a}'"
            define = (f"define it on an earlier line ('define {a} = ...'): a backward pass "
                      "needs no declarations")
            suggestion = None if partial else did_you_mean(a, [*program.decls, *defined,
                                                               *adjoints])
            errors.append(s.src.diag(f"{what} is not defined before this line",
                                     s.operand_token(i),
                                     hint=f"{suggestion} If not, {define}" if suggestion
                                     else define))
        defined.append(s.target)
    return errors


class StudentLines:
    """The student's ``statements`` run on the draws of ``ref``: ``chained`` and ``iso``
    (isolated) values of every line, each line's ``role`` (``adjoint``, ``partial`` or
    ``helper``), and the ``expected`` value of each checked line (adjoints and partials)."""

    def __init__(self, ref: Reference, statements: list[Statement], file: str) -> None:
        self.ref = ref
        self.program = ref.program
        self.loss = ref.loss
        self.statements = statements
        self.defines = [s for s in statements if isinstance(s, Define)]
        self.targets = {d.target for d in self.defines}
        assembled, self.given = self._assemble(file)
        self.shapes = assembled.shapes
        n = ref.n
        # the run keeps every value once, the chained and isolated values copy the student's
        per_draw = sum(math.prod(s) for s in self.shapes.values()) + 2 * sum(
            math.prod(self.shapes[d.target]) for d in self.defines)
        too_large(n * per_draw, "your backward pass, run after the forward pass,", per_draw,
                  n, file)
        run = Plan(assembled).run({**ref.data, **{g: ref.values[g] for g in self.given}}, n)
        self.chained = {d.target: np.array(np.broadcast_to(
            run.value(d.target), (n, *self.shapes[d.target]))) for d in self.defines}
        self.expected: dict[str, Array] = {}
        self.role: dict[str, str] = {}
        for d in self.defines:
            parts = derivative_parts(d.target)
            if parts is not None and parts[0] == self.loss:
                self.role[d.target] = "adjoint"
                self.expected[d.target] = ref.adjoint(parts[1])
            elif parts is not None and d.target in ref.values:
                self.role[d.target] = "partial"
                self.expected[d.target] = ref.values[d.target]
            else:
                self.role[d.target] = "helper"
        # an operand replaced by its right value in isolation: checked, and of the right shape
        self.substitute = {c for c, e in self.expected.items()
                           if self.chained[c].shape == e.shape}
        self.iso = self.isolated(self.defines, {})

    # -------------------------------------------------------------- assembling and running

    def _assemble(self, file: str) -> tuple[Program, list[str]]:
        """Forward pass + the compiler's adjoints the student uses without defining them +
        the student's lines (declared intvar where they did not declare them)."""
        program = self.program
        statements: list[Statement] = []
        for s in program.statements:
            if isinstance(s, Declare):
                kind = "input" if s.kind in GIVEN_KINDS else "intvar"
                statements.append(Declare(kind, s.name, program.shapes[s.name] or None, s.src))
            elif isinstance(s, Define):
                statements.append(s)
        declared = {s.name for s in self.statements if isinstance(s, Declare)}
        given: list[str] = []
        for d in self.defines:
            for a in d.variables():
                parts = derivative_parts(a)
                if (parts is not None and parts[0] == self.loss and parts[1] in program.decls
                        and a not in self.targets | declared and a not in given):
                    given.append(a)
                    statements.append(Declare("input", a, program.shapes[parts[1]] or None))
                    if a not in self.ref.values:  # a variable that cannot affect the loss
                        self.ref.values[a] = self.ref.adjoint(parts[1])
        for d in self.defines:
            if d.target not in declared:
                declared.add(d.target)
                statements.append(Declare("intvar", d.target, None, d.src))
        statements.extend(s for s in self.statements if not isinstance(s, Comment))
        return check(statements, file), given

    def _operand(self, a: str, local: Mapping[str, Array]) -> Array:
        if a in self.substitute:
            return self.expected[a]
        if a in local:
            return local[a]
        if a in self.chained:  # a checked line of the wrong shape: its own value
            return self.chained[a]
        return self.ref.values[a]

    def isolated(self, lines: Iterable[Define], start: Mapping[str, Array]
                 ) -> dict[str, Array]:
        """The isolated values of ``lines`` (in order), from the values in ``start``."""
        local = dict(start)
        for d in lines:
            if d.target not in local:
                env = {a: self._operand(a, local) for a in d.variables()}
                local[d.target] = self._evaluate(d, env)
        return local

    def recompute(self, lines: Iterable[Define], overrides: Mapping[str, Array]
                  ) -> Mapping[str, Array]:
        """The isolated values again with ``overrides`` in place: ``lines`` (in order, every
        line that depends on an override) recomputed, every other line as it was."""
        local = ChainMap({}, dict(overrides), self.iso)
        for d in lines:
            env = {a: self._operand(a, local) for a in d.variables()}
            local[d.target] = self._evaluate(d, env)
        return local

    def _evaluate(self, d: Define, env: Mapping[str, Array]) -> Array:
        """One line on its own, by the planner, with the given operand values."""
        names = list(env)
        statements: list[Statement] = [Declare("input", a, self.shapes[a] or None)
                                       for a in names]
        statements += [Declare("intvar", d.target, None), Define(d.target, d.op, d.args)]
        value = Plan(check(statements, "<line>")).run(env, self.ref.n).value(d.target)
        assert value is not None
        return np.array(np.broadcast_to(value, (self.ref.n, *self.shapes[d.target])))

