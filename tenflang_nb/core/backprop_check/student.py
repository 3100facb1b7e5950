"""The student's side of a check: their text parsed (every error at once, each naming the
student's line), and their lines run after the shape program's forward pass, twice:

* *chained* (as written: each operand has the student's own value);
* *isolated* (each operand that is an adjoint, or a local partial ``d/p/d/m`` named as the
  compiler names it, replaced by its right value; helpers recomputed from those).

An adjoint the student uses but does not define takes the compiler's value (it is *given*),
so one block of the backward pass can be checked at a time. A checked line whose value has
the wrong shape is *detached*: the lines after it run on its right value (they are
``tainted``: wrong only because of it), so one wrong shape does not stop the check; a line
whose operands' shapes do not fit its operator is an error whose hint says why
(``hints.shape_error_hint``).
"""

from __future__ import annotations

import dataclasses
import math
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from .. import lexical
from ..errors import Diagnostic, TenFlangError
from ..formatting import did_you_mean
from ..lexical import GIVEN_KINDS, adjoint_name, derivative_parts, derived_names
from ..ops import OPS, Const, Shape, ShapeError
from ..plan import Plan
from ..program import Program, check
from ..syntax import Comment, Declare, Define, Statement, parse_line
from .hints import Written, shape_error_hint
from .reference import Reference, run_line, too_large

__all__ = ["StudentLines", "parse_student"]

Array = np.ndarray

OWN_KINDS = ("intvar", "output")  # what a student may declare their own names as
# why a derivative-like name is refused (it must say how to name a helper instead)
NAMING_RULE = ("names of the form d/x/d/y are adjoints (d/{loss}/d/v) or local partials "
               "(d/p/d/v) of the model's variables; call a helper t1 or slope")


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
        return [diag(f"'{of}' is not the loss of the model ('{loss}') nor one of its variables: "
                     + NAMING_RULE.format(loss=loss), token,
                     hint=f"the adjoint of a variable w is d/{loss}/d/w")]
    if wrt not in program.decls:
        return [diag(f"'{wrt}' is not a variable of the model: " + NAMING_RULE.format(loss=loss),
                     token, hint=f"variables: {' '.join(program.decls)}")]
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
        self.role, self.expected = self._roles()
        own, self._known, failed = self._shapes()
        self.lines = {d.target: d.src.line for d in self.defines}
        used = {a for d in self.defines for a in d.variables()}
        # A checked line of the wrong shape that later lines use keeps its value under another
        # name: those lines get the right value (and inherit the mistake, ``tainted``).
        self.detached = {t for t, shape in own.items() if t in self.expected and t in used
                         and shape != self.expected[t].shape[1:]}
        self.tainted: set[str] = set()
        for d in self.defines:
            if any(a in self.detached or a in self.tainted for a in d.variables()):
                self.tainted.add(d.target)
        assembled, self.given, rename = self._assemble(file, failed)
        self.shapes = {**assembled.shapes,
                       **{t: assembled.shapes[r] for t, r in rename.items()}}
        n = ref.n
        # the run keeps every value once, the chained and isolated values copy the student's
        per_draw = sum(math.prod(s) for s in self.shapes.values()) + 2 * sum(
            math.prod(self.shapes[d.target]) for d in self.defines)
        too_large(n * per_draw, "your backward pass, run after the forward pass,", per_draw,
                  n, file)
        run = Plan(assembled).run({**ref.data, **{g: ref.values[g] for g in self.given},
                                   **{t: self.expected[t] for t in self.detached}}, n)
        self.chained = {d.target: np.array(np.broadcast_to(
            run.value(rename.get(d.target, d.target)), (n, *self.shapes[d.target])))
            for d in self.defines}
        self.iso = self.isolated(self.defines, {})

    def _roles(self) -> tuple[dict[str, str], dict[str, Array]]:
        """Each line's role (``adjoint``, ``partial`` or ``helper``) and the right value of
        each checked line (an adjoint or a local partial the compiler names so)."""
        role: dict[str, str] = {}
        expected: dict[str, Array] = {}
        for d in self.defines:
            parts = derivative_parts(d.target)
            if parts is not None and parts[0] == self.loss:
                role[d.target] = "adjoint"
                expected[d.target] = self.ref.adjoint(parts[1])
            elif parts is not None and d.target in self.ref.values:
                role[d.target] = "partial"
                expected[d.target] = self.ref.values[d.target]
            else:
                role[d.target] = "helper"
        return role, expected

    def _shapes(self) -> tuple[dict[str, Shape], dict[str, Shape], list[Define]]:
        """Each line's own shape by the operators' shape rules; the shape each name has for
        the lines that use it (a checked line's is the right one's); the lines whose operands'
        shapes do not fit their operator."""
        known = dict(self.program.shapes)
        known.update({adjoint_name(self.loss, v): s for v, s in self.program.shapes.items()})
        own: dict[str, Shape] = {}
        failed = []
        for d in self.defines:
            shapes = [() if isinstance(a, Const) else known.get(a) for a in d.args]
            if any(s is None for s in shapes) or (d.op is not None and d.op not in OPS):
                continue  # the program's check reports it
            try:
                shape = shapes[0] if d.op is None else OPS[d.op].shape_rule(*shapes)
            except ShapeError:
                failed.append(d)
                continue
            own[d.target] = shape
            known[d.target] = (self.expected[d.target].shape[1:] if d.target in self.expected
                               else shape)
        return own, known, failed

    # -------------------------------------------------------------- assembling and running

    def _assemble(self, file: str, failed: list[Define]
                  ) -> tuple[Program, list[str], dict[str, str]]:
        """Forward pass + the compiler's adjoints the student uses without defining them +
        the student's lines (declared intvar where they did not declare them; a detached
        line renamed, its name given the right value): the program, the adjoints given, the
        detached lines' new names. A line whose operands do not fit gets its hint here."""
        program = self.program
        statements: list[Statement] = []
        for s in program.statements:
            if isinstance(s, Declare):
                kind = "input" if s.kind in GIVEN_KINDS else "intvar"
                statements.append(Declare(kind, s.name, program.shapes[s.name] or None, s.src))
            elif isinstance(s, Define):
                statements.append(s)
        taken = {*program.decls, *self.targets, *(s.name for s in self.statements
                                                  if isinstance(s, Declare))}
        rename = {t: derived_names(t, [".yours"], taken)[0] for t in self.detached}
        mine = [_renamed(s, rename) for s in self.statements if not isinstance(s, Comment)]
        declared = {s.name for s in mine if isinstance(s, Declare)}
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
        for t in self.detached:
            statements.append(Declare("input", t, self.expected[t].shape[1:] or None))
        for d in self.defines:
            target = rename.get(d.target, d.target)
            if target not in declared:
                declared.add(target)
                statements.append(Declare("intvar", target, None, d.src))
        statements.extend(mine)
        try:
            return check(statements, file), given, rename
        except TenFlangError as err:
            raise self._explained(err, failed) from None

    def _explained(self, err: TenFlangError, failed: list[Define]) -> TenFlangError:
        """``err`` with a hint for each line whose operands' shapes do not fit."""
        lines = {d.src.line: d for d in failed}
        wanted = self._wanted()
        diagnostics = []
        for diag in err.diagnostics:
            d = lines.get(diag.line)
            why = (shape_error_hint(self.ref, Written(d, lines=self.lines), self._known,
                                    wanted.get(d.target)) if d is not None else None)
            # a diagnostic's hint quotes code as the others do ('...'), not between backticks
            diagnostics.append(dataclasses.replace(diag, hint=why.replace("`", "'"))
                               if why else diag)
        return TenFlangError(diagnostics)

    def _wanted(self) -> dict[str, Shape]:
        """The shape each helper should have, where the lines using it tell: a checked
        line's, passed back through elementwise lines and copies."""
        wanted = {t: e.shape[1:] for t, e in self.expected.items()}
        for d in reversed(self.defines):
            shape = wanted.get(d.target)
            if shape is not None and (d.op is None or OPS[d.op].elementwise):
                for a in d.variables():
                    if self.role.get(a) == "helper":
                        wanted.setdefault(a, shape)
        return wanted

    def written(self, d: Define) -> Written:
        """The line ``d`` as a hint reads it: its operands' isolated values, the lines of the
        student's names, the variable whose adjoint it (or the first adjoint using it)
        makes."""
        reached = {d.target}
        for e in self.defines[self.defines.index(d):]:
            if e is d or any(a in reached for a in e.variables()):
                reached.add(e.target)
                parts = derivative_parts(e.target)
                if parts is not None and parts[0] == self.loss:
                    return Written(d, self.operands(d), self.lines, parts[1])
        return Written(d, self.operands(d), self.lines)

    def operands(self, d: Define) -> dict[str, Array]:
        """The isolated values of the operands of the line ``d``."""
        return {a: self._operand(a, self.iso) for a in d.variables()}

    def _operand(self, a: str, local: Mapping[str, Array]) -> Array:
        if a in self.expected:  # a checked line: its right value
            return self.expected[a]
        if a in local:
            return local[a]
        return self.ref.values[a]

    def isolated(self, lines: Iterable[Define], start: Mapping[str, Array]
                 ) -> dict[str, Array]:
        """The isolated values of ``lines`` (in order), from the values in ``start``."""
        local = dict(start)
        for d in lines:
            if d.target not in local:
                value = self._run(d, local)
                assert value is not None
                local[d.target] = value
        return local

    def recompute(self, lines: Iterable[Define], overrides: Mapping[str, Array]
                  ) -> Mapping[str, Array] | None:
        """The isolated values again with ``overrides`` in place: ``lines`` (in order, every
        line that depends on an override) recomputed, every other line as it was; None when
        an override's shape does not fit a line using it."""
        local = ChainMap({}, dict(overrides), self.iso)
        for d in lines:
            value = self._run(d, local)
            if value is None:
                return None
            local[d.target] = value
        return local

    def _run(self, d: Define, local: Mapping[str, Array]) -> Array | None:
        """One line on its own, by the planner, its operands isolated (as in ``local``)."""
        return run_line(d.op, [self._operand(a, local) if isinstance(a, str) else a
                               for a in d.args], self.ref.n)


def _renamed(s: Statement, rename: Mapping[str, str]) -> Statement:
    """The student's statement ``s`` with the names it declares or defines renamed."""
    if isinstance(s, Declare) and s.name in rename:
        return Declare(s.kind, rename[s.name], s.shape, s.src)
    if isinstance(s, Define) and s.target in rename:
        return Define(rename[s.target], s.op, s.args, s.src)
    return s
