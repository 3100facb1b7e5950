"""A backward pass written by hand, checked line by line against the compiler's.

A student writes the backward lines of a shape program: definitions of adjoints
``d/<loss>/d/<v>`` and of any helper names (local partials, temporaries); declarations are
optional. :func:`check_backprop` parses them with the usual TenFlang errors (the file is
``NAME (your backward pass)``, ``line N`` is the student's line), runs them after the shape
program's forward pass on several random draws of the inputs and weights, and compares every
adjoint they define with the compiler's ``d/L/d/v`` on the same draws (the full GCP, so the
adjoints of inputs can be checked too). An adjoint the student uses but does not define takes
the compiler's value, so one block of the backward pass can be checked at a time; it is
listed as *missing*, not wrong.

How the draws are made: every input, expected output and weight gets, per draw, values of
magnitude 0.25 to 1.5 (divided by the square root of its number of rows for a matrix, as the
auto initial weights are, so that hidden units do not saturate). On half of the candidate
draws every value is positive (so ``ln``, ``sqrt`` and ``pow`` of a weighted input are
defined), on the other half signs are random (so ``relu``, ``abs`` or a sign mistake show).
An expected output that is a vector is drawn as a probability distribution (it sums to 1, as
a one-hot label does, so ``softmax - y`` is the softmax cross-entropy's gradient). A candidate
is kept only when every value of the compiler's GCP on it is finite and at most 1e6 in
magnitude (no ``ln`` of a negative number, no division by almost 0).

How blame is attributed (helpers have no reference value, so this is a choice):

* Every line is evaluated twice: *chained* (as written: each operand has the student's own
  value) and *isolated* (each operand that is an adjoint, or a local partial ``d/p/d/m``
  named as the compiler names it, replaced by its right value; helpers recomputed from
  those). A *checked* line (one defining an adjoint or a compiler-named local partial) is
  right when its chained value equals the compiler's on every draw. A wrong checked line
  whose isolated value is right only *inherits* the mistake of an earlier line; one whose
  isolated value is wrong holds a mistake of its own, in its line or in the helpers that
  feed it (its *block*).
* A helper is right when it feeds (through other helpers) a checked line that is right in
  isolation. In a wrong block, a helper is blamed when replacing its value by one of the
  compiler's values for that variable (a local partial, a piece of one, an incoming
  adjoint) makes the checked line right; otherwise the checked line itself is blamed.
* The blamed lines are the *root* wrong lines; ``first_wrong_line`` is the first of them.
  Lines that inherit a mistake name the root lines it comes from.

Hints test hypotheses on the numbers (they must hold on every draw): a missing fan-out term
(the value is the sum of some of the per-use terms), a sign, the local partial without the
incoming adjoint or the adjoint without the local partial, the value used where the local
partial belongs, a factor of 2.

>>> from tenflang_nb.core.program import parse
>>> square = parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n", "square.tf")
>>> check_backprop(square, "define d/L/d/w = add w w").ok
True
>>> result = check_backprop(square, "define d/L/d/w = w")
>>> result.ok, result.first_wrong_line
(False, 1)
>>> print(result.lines[0].hint.replace(": ", ":\\n"))
`define L = mul w w` (line 3 of square.tf) uses w twice, so d/L/d/w has one term per use (w + w):
your value has only one of them
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from . import lexical, ops
from .backprop import compile_program
from .errors import Diagnostic, TenFlangError
from .formatting import fmt_assignments, fmt_list, fmt_shape, fmt_value
from .lexical import GIVEN_KINDS, adjoint_name, derivative_parts
from .plan import Plan
from .program import Program, ancestors, check
from .syntax import Comment, Declare, Define, Statement, parse_line

__all__ = ["AdjointVerdict", "BackpropCheck", "LineVerdict", "check_backprop"]

Array = np.ndarray

DRAWS = 5  # random draws of inputs and weights an answer is checked on
LIMIT = 1e6  # a draw whose GCP values exceed this is too close to a pole to judge by
RTOL, ATOL = 1e-6, 1e-9
OWN_KINDS = ("intvar", "output")  # what a student may declare their own names as
ORDINAL = ("first", "second")


# ------------------------------------------------------------------------------ the result

@dataclass
class LineVerdict:
    """One line of the student's text that defines something, and what the check found.

    ``role``: ``adjoint`` (defines ``d/L/d/v``), ``partial`` (a local partial named as the
    compiler names it, ``d/p/d/m``) or ``helper`` (any other name). ``status``: ``right``,
    ``wrong`` (a root: the mistake is on this line), ``inherits`` (wrong only because it uses
    a wrong value: ``because`` lists the root lines), ``unchecked`` (a helper with no value
    to compare) or ``unused`` (a helper nothing checked uses). ``expected`` and ``actual``
    hold one value per draw (axis 0); ``expected`` is None when there is nothing to compare.
    """

    line: int
    name: str
    source: str
    role: str
    status: str
    expected: Array | None = None
    actual: Array | None = None
    hint: str | None = None
    because: tuple[int, ...] = ()
    reference: str | None = None  # the compiler's name for what this line should equal

    @property
    def wrong(self) -> bool:
        return self.status in ("wrong", "inherits")


@dataclass(frozen=True)
class AdjointVerdict:
    """One adjoint ``d/L/d/v``: ``right``, ``wrong`` or ``missing`` (not written; ``given``
    when the student's lines used the compiler's value instead)."""

    name: str
    variable: str
    status: str
    line: int | None = None
    given: bool = False


@dataclass
class BackpropCheck:
    """What :func:`check_backprop` found: ``ok``, ``first_wrong_line``, every defining line
    (``lines``), every adjoint (``adjoints``), the ``error`` when the text does not parse.

    ``str(result)`` (and :meth:`report`) is a plain-text report; the notebook renders the
    same content as HTML.
    """

    model: str
    file: str
    loss: str
    text: str
    lines: list[LineVerdict] = field(default_factory=list)
    adjoints: list[AdjointVerdict] = field(default_factory=list)
    required: tuple[str, ...] = ()
    draws: int = 0
    sample: dict[str, float] = field(default_factory=dict)
    error: TenFlangError | None = None

    @classmethod
    def failed(cls, model: str, file: str, loss: str, text: str, error: TenFlangError,
               required: Iterable[str] = ()) -> BackpropCheck:
        """A result for text that could not be checked (``error`` says why)."""
        return cls(model, file, loss, text, required=tuple(required), error=error)

    # -------------------------------------------------------------- verdicts

    @property
    def roots(self) -> list[LineVerdict]:
        """The root wrong lines, in text order (the first is ``first_wrong_line``)."""
        return [v for v in self.lines if v.status == "wrong"]

    @property
    def first_wrong_line(self) -> int | None:
        """The first line (1-based, in the student's text) that is wrong on its own, or that
        has an error; None when there is none."""
        if self.error is not None:
            line = self.error.first.line
            return line or None
        for verdicts in (self.roots, [v for v in self.lines if v.wrong]):
            if verdicts:
                return verdicts[0].line
        return None

    def _names(self, status: str) -> list[str]:
        return [a.name for a in self.adjoints if a.status == status]

    @property
    def right(self) -> list[str]:
        """The adjoints written and right."""
        return self._names("right")

    @property
    def wrong(self) -> list[str]:
        """The adjoints written and wrong (at the root or inherited)."""
        return self._names("wrong")

    @property
    def missing(self) -> list[str]:
        """The adjoints not written (the compiler's GCP needs them for a weight's gradient)."""
        return self._names("missing")

    @property
    def missing_required(self) -> list[str]:
        return [n for n in self.required if n in self.missing]

    @property
    def ok(self) -> bool:
        """No error, no wrong line, something checked, every required adjoint written."""
        return (self.error is None and bool(self.lines) and not any(v.wrong for v in self.lines)
                and not self.missing_required)

    def verdict(self, line: int) -> LineVerdict | None:
        """The verdict of a line of the student's text (None: it defines nothing)."""
        return next((v for v in self.lines if v.line == line), None)

    # -------------------------------------------------------------- text

    def headline(self) -> str:
        """One sentence: all right, the first wrong line, an error, or what is missing."""
        if self.error is not None:
            first = self.error.first
            where = f"line {first.line}: " if first.line else ""
            more = len(self.error.diagnostics) - 1
            others = f" (and {more} more error{'s' * (more > 1)})" if more else ""
            return f"✗ {where}{first.message}{others}: nothing was checked"
        if not self.lines:
            return f"✗ nothing to check: write lines like 'define d/{self.loss}/d/w = ...'"
        first = self.first_wrong_line
        if first is not None:
            return f"✗ line {first} is the first wrong line"
        if self.missing_required:
            return (f"✗ so far so good ({len(self.right)} right), but not written yet: "
                    + ", ".join(self.missing_required))
        n = len(self.missing)
        extra = f" ({n} other adjoint{'s' * (n != 1)} not written)" if n else ""
        return (f"✓ all right: {len(self.right)} adjoint{'s' * (len(self.right) != 1)} "
                f"checked on {self.draws} random draws{extra}")

    def report(self) -> str:
        """The whole check as plain text (what ``str()`` and the assert messages show)."""
        out = [self.headline()]
        if self.error is not None:
            out.append(self.error.render())
            return "\n".join(out)
        for v in self.roots:
            out.append(f"line {v.line}: {v.source.strip()}")
            out.extend("    " + t for t in explain(v))
        if self.lines:
            out.append(f"your lines (checked on {self.draws} random draws"
                       + (f"; draw 1: {fmt_assignments(self.sample)}" if self.sample else "")
                       + "):")
            width = max(len(v.source.strip()) for v in self.lines)
            for v in self.lines:
                out.append(f"  {v.line:>3}  {v.source.strip():<{width}}  {status_text(v)}")
        missing = [a for a in self.adjoints if a.status == "missing"]
        if missing:
            out.append("not written yet: " + ", ".join(
                a.name + (" (your lines used the compiler's value)" if a.given else "")
                for a in missing))
        return "\n".join(out)

    def __str__(self) -> str:
        return self.report()


def status_text(v: LineVerdict) -> str:
    """A line's verdict in words (the text report and the HTML share it).

    >>> status_text(LineVerdict(3, "t", "define t = mul e 2", "helper", "unused"))
    'helper, not used by any adjoint'
    """
    if v.status == "right":
        return "✓ right" if v.role != "helper" else "✓ helper, right"
    if v.status == "wrong":
        return "✗ wrong: the mistake is on this line"
    if v.status == "inherits":
        lines = ", ".join(str(n) for n in v.because)
        where = f"line{'s' * (len(v.because) > 1)} {lines}" if v.because else "an earlier line"
        return f"✗ wrong only because of {where}"
    if v.status == "unused":
        return "helper, not used by any adjoint"
    return "helper (no value of the compiler to compare with)"


def explain(v: LineVerdict) -> list[str]:
    """The sentences that explain a wrong line: expected/actual values on draw 1, the hint."""
    out = []
    if v.expected is not None and v.actual is not None:
        what = v.reference or v.name
        out.append(f"expected {what} = {fmt_value(v.expected[0], 'report')}, "
                   f"got {fmt_value(v.actual[0], 'report')} (draw 1)")
    if v.hint:
        out.append(f"hint: {v.hint}")
    return out


# ------------------------------------------------------------------------------ the checker

def check_backprop(shape: Program, text: str, *, name: str | None = None,
                   require: Iterable[str] | None = None, draws: int = DRAWS, seed: int = 0
                   ) -> BackpropCheck:
    """Check the backward lines ``text`` a student wrote for the shape program ``shape``.

    ``name`` labels the student's text in errors (``NAME (your backward pass)``; default:
    the shape program's file name). ``require`` lists the adjoints (``d/L/d/w`` or just
    ``w``) that must be written for ``ok``; default: every adjoint a weight's gradient needs
    (the pruned GCP's). ``draws`` random draws of the inputs and weights, from ``seed``.
    Errors in ``text`` are in the result (``.error``); a shape program without a loss, or a
    bad ``require``, raise :class:`TenFlangError`.

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> from tenflang_nb.core.program import parse
    >>> seed = parse(SEED_EXAMPLE, "seed.tf")
    >>> r = check_backprop(seed, "define d/lambda/d/diff = mul 2 diff", require=["diff"])
    >>> r.ok, r.right, r.missing
    (True, ['d/lambda/d/diff'], ['d/lambda/d/o', 'd/lambda/d/z', 'd/lambda/d/w'])
    """
    if not (isinstance(draws, int) and 1 <= draws <= 100):
        raise TenFlangError.at(f"draws must be a whole number from 1 to 100, not {draws!r}")
    loss = shape.loss
    label = name or shape.file.rsplit("/", 1)[-1].removesuffix(".tf")
    file = f"{label} (your backward pass)"
    reference = _Reference(shape, draws, seed)
    required = _required(shape, loss, reference.expected_adjoints, require)
    try:
        statements = _parse_student(text, file, shape, loss)
        checker = _Checker(reference, statements, file)
    except TenFlangError as err:  # every diagnostic names a line of the student's text
        return BackpropCheck.failed(label, file, loss, text, err, required)
    return checker.result(label, text, required)


def _required(shape: Program, loss: str, expected: list[str], require: Iterable[str] | None
              ) -> tuple[str, ...]:
    if require is None:
        return tuple(expected)
    names: list[str] = []
    for item in ([require] if isinstance(require, str) else require):
        item = item.strip()
        parts = derivative_parts(item)
        if parts is not None and parts[0] == loss and parts[1] in shape.decls:
            names.append(item)
        elif item in shape.decls:
            names.append(adjoint_name(loss, item))
        else:
            raise TenFlangError.at(
                f"require: '{item}' is neither a variable of {shape.file} nor its adjoint "
                f"d/{loss}/d/<variable>")
    return tuple(dict.fromkeys(names))


# ------------------------------------------------------------------------------ the compiler's side

class _Reference:
    """The compiler's full GCP, run on random draws of the inputs and weights."""

    def __init__(self, shape: Program, draws: int, seed: int) -> None:
        self.shape = shape
        self.loss = shape.loss
        self.gcp = compile_program(shape, full=True).program()
        pruned = compile_program(shape)
        self.expected_adjoints = list(dict.fromkeys(
            s.name for s in (line.statement for line in pruned.lines)
            if isinstance(s, Declare) and (parts := derivative_parts(s.name)) is not None
            and parts[0] == self.loss and parts[1] in shape.decls and parts[1] != self.loss))
        self.data, self.values = self._draw(draws, seed)
        self.n = len(next(iter(self.values.values()))) if self.values else 1
        self._terms: dict[str, list[tuple[tuple[str, int], Array]]] = {}

    def _draw(self, draws: int, seed: int) -> tuple[dict[str, Array], dict[str, Array]]:
        shape = self.shape
        rng = np.random.default_rng(seed)
        k = max(32, 8 * draws)
        positive = np.arange(k) % 2 == 1  # every other candidate: all values positive
        data: dict[str, Array] = {}
        for name in shape.names(*GIVEN_KINDS):
            s = shape.shapes[name]
            if shape.kind(name) == "exp_output" and len(s) == 1:
                data[name] = rng.dirichlet(np.ones(s[0]), size=k)
                continue
            magnitude = rng.uniform(0.25, 1.5, size=(k, *s))
            if len(s) == 2:  # as the auto initial weights: tanh units of x W do not saturate
                magnitude /= np.sqrt(s[0])
            sign = np.where(rng.random((k, *s)) < 0.5, -1.0, 1.0)
            sign[positive] = 1.0
            data[name] = magnitude * sign
        run = Plan(self.gcp).bind(data, k)
        with np.errstate(all="ignore"):
            run.run()
        values = {n: np.array(v) for n in self.gcp.decls if (v := run.value(n)) is not None}
        valid = np.ones(k, dtype=bool)
        for v in values.values():
            flat = v.reshape(k, -1)
            valid &= np.all(np.isfinite(flat) & (np.abs(flat) <= LIMIT), axis=1)
        rows = np.flatnonzero(valid)[:draws]
        if len(rows) == 0:
            raise TenFlangError.at(
                f"could not draw inputs and weights on which {shape.file} is defined "
                f"({k} random draws tried: every one gave a NaN, an infinity or a value "
                f"beyond {LIMIT:g})", file=shape.file)
        return ({n: v[rows] for n, v in data.items()},
                {n: v[rows] for n, v in values.items()})

    def formula(self, name: str) -> str | None:
        """The compiler's definition of ``name``, its temporaries written inline:
        ``mul o (sub 1 o)`` for ``d/o/d/z`` when ``o = logistic z``."""
        defs = self.gcp.defs
        if name not in defs:
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
        return np.zeros((self.n, *self.shape.shapes[v]))

    def uses(self, v: str) -> list[tuple[str, int]]:
        """Every use of ``v`` on the way to the loss: (consumer, operand index)."""
        reach = ancestors(self.shape, self.loss)
        return [(p, i) for p, d in self.shape.defs.items() if p in reach
                for i, a in enumerate(d.args) if a == v]

    def terms(self, v: str) -> list[tuple[tuple[str, int], Array]]:
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

    def _term(self, v: str, use: tuple[str, int], uses: list[tuple[str, int]]) -> Array:
        shape = self.shape
        stop = f"{v}.stop"
        while stop in shape.decls:
            stop += "_"
        cut = set(uses) - {use}
        statements: list[Statement] = [Declare("input", stop, shape.shapes[v] or None)]
        for s in shape.statements:
            if isinstance(s, Define) and any((s.target, i) in cut for i in range(len(s.args))):
                args = tuple(stop if (s.target, i) in cut else a for i, a in enumerate(s.args))
                s = Define(s.target, s.op, args, s.src)
            statements.append(s)
        gcp = compile_program(check(statements, shape.file), full=True).program()
        run = Plan(gcp).bind({**self.data, stop: self.values[v]}, self.n)
        with np.errstate(all="ignore"):
            run.run()
        value = run.value(adjoint_name(self.loss, v))
        return np.zeros_like(self.values[v]) if value is None else np.array(value)


# ------------------------------------------------------------------------------ the student's side

def _parse_student(text: str, file: str, shape: Program, loss: str) -> list[Statement]:
    """The student's lines as statements; every error at once (syntax and names alike)."""
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
            errors.extend(_check_own_name(statement.name, statement.src.diag, 2, shape, loss))
            if statement.name not in shape.decls and statement.kind not in OWN_KINDS:
                errors.append(statement.src.diag(
                    f"your backward pass defines its values: declare '{statement.name}' "
                    "intvar (or leave the declaration out)", 1))
        elif isinstance(statement, Define):
            errors.extend(_check_own_name(statement.target, statement.src.diag, 1, shape,
                                          loss))
        if statement is not None:
            statements.append(statement)
    if errors:
        raise TenFlangError(errors)
    if not any(isinstance(s, Define) for s in statements):
        raise TenFlangError.at(
            "nothing to check: your backward pass defines nothing", file=file,
            hint=f"write lines like 'define d/{loss}/d/w = mul d/{loss}/d/z x'")
    return statements


def _check_own_name(name: str, diag: Callable[..., Diagnostic], token: int, shape: Program,
                    loss: str) -> list[Diagnostic]:
    """A name the student declares or defines: not one of the model's, and a derivative name
    ``d/a/d/b`` only for the loss or a variable of the model."""
    if name in shape.decls:
        line = shape.decls[name].src.line
        return [diag(f"'{name}' is a variable of the model ({shape.file}, line {line}): its "
                     "value comes from the forward pass", token,
                     hint=f"its adjoint is d/{loss}/d/{name}; give helpers names of their own")]
    parts = derivative_parts(name)
    if parts is None:
        return []
    of, wrt = parts
    if of != loss and of not in shape.decls:
        return [diag(f"'{of}' is not the loss of the model ('{loss}') nor one of its variables",
                     token, hint=f"the adjoint of a variable w is d/{loss}/d/w")]
    if wrt not in shape.decls:
        return [diag(f"'{wrt}' is not a variable of the model", token,
                     hint=f"variables: {' '.join(shape.decls)}")]
    return []


class _Checker:
    """The student's lines evaluated, compared and blamed (see the module's docstring)."""

    def __init__(self, ref: _Reference, statements: list[Statement], file: str) -> None:
        self.ref = ref
        self.shape = ref.shape
        self.loss = ref.loss
        self.statements = statements
        self.defines = [s for s in statements if isinstance(s, Define)]
        self.targets = {d.target for d in self.defines}
        program, self.given = self._assemble(file)
        self.shapes = program.shapes
        n = ref.n
        run = Plan(program).bind({**ref.data, **{g: ref.values[g] for g in self.given}}, n)
        with np.errstate(all="ignore"):
            run.run()
        self.chained = {d.target: np.array(np.broadcast_to(
            run.value(d.target), (n, *program.shapes[d.target]))) for d in self.defines}
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
        self.iso = self._isolated(self.defines, {})

    # -------------------------------------------------------------- building and running

    def _assemble(self, file: str) -> tuple[Program, list[str]]:
        """Forward pass + the compiler's adjoints the student uses without defining them +
        the student's lines (declared intvar where they did not declare them)."""
        shape = self.shape
        statements: list[Statement] = []
        for s in shape.statements:
            if isinstance(s, Declare):
                kind = "input" if s.kind in GIVEN_KINDS else "intvar"
                statements.append(Declare(kind, s.name, shape.shapes[s.name] or None, s.src))
            elif isinstance(s, Define):
                statements.append(s)
        declared = {s.name for s in self.statements if isinstance(s, Declare)}
        given: list[str] = []
        for d in self.defines:
            for a in d.variables():
                parts = derivative_parts(a)
                if (parts is not None and parts[0] == self.loss and parts[1] in shape.decls
                        and a not in self.targets | declared and a not in given):
                    given.append(a)
                    statements.append(Declare("input", a, shape.shapes[parts[1]] or None))
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

    def _isolated(self, lines: Iterable[Define], start: Mapping[str, Array]
                  ) -> dict[str, Array]:
        local = dict(start)
        for d in lines:
            if d.target not in local:
                env = {a: self._operand(a, local) for a in d.variables()}
                local[d.target] = self._evaluate(d, env)
        return local

    def _evaluate(self, d: Define, env: Mapping[str, Array]) -> Array:
        """One line on its own, by the planner, with the given operand values."""
        names = list(env)
        statements: list[Statement] = [Declare("input", a, self.shapes[a] or None)
                                       for a in names]
        statements += [Declare("intvar", d.target, None), Define(d.target, d.op, d.args)]
        run = Plan(check(statements, "<line>")).bind(env, self.ref.n)
        with np.errstate(all="ignore"):
            run.run()
        value = run.value(d.target)
        assert value is not None
        return np.array(np.broadcast_to(value, (self.ref.n, *self.shapes[d.target])))

    # -------------------------------------------------------------- verdicts

    def result(self, model: str, text: str, required: tuple[str, ...]) -> BackpropCheck:
        chain_ok = {c: _close(self.chained[c], e) for c, e in self.expected.items()}
        iso_ok = {c: _close(self.iso[c], e) for c, e in self.expected.items()}
        order = [d.target for d in self.defines]
        line_of = {d.target: d.src.line for d in self.defines}
        define_of = {d.target: d for d in self.defines}
        helpers = [t for t in order if self.role[t] == "helper"]
        users: dict[str, list[str]] = {t: [] for t in order}
        for d in self.defines:
            for a in dict.fromkeys(d.variables()):
                if a in users:
                    users[a].append(d.target)
        feeds: dict[str, set[str]] = {}  # helper -> the checked lines it reaches via helpers
        for h in reversed(helpers):
            feeds[h] = set()
            for u in users[h]:
                feeds[h] |= {u} if u in self.expected else feeds[u]
        cone: dict[str, set[str]] = {}  # line -> the helpers feeding it via helpers
        for t in order:
            cone[t] = set()
            for a in define_of[t].variables():
                if a in feeds:
                    cone[t] |= {a} | cone[a]
        known_right = {h for h in helpers if any(iso_ok[c] for c in feeds[h])}

        blamed: dict[str, tuple[str | None, Array | None]] = {}
        for c in order:
            if c not in self.expected or chain_ok[c] or iso_ok[c]:
                continue
            block = cone[c] | {c}
            if any(a in self.expected and a not in self.substitute
                   for t in block for a in define_of[t].variables()):
                continue  # built on a value of the wrong shape: that line is the culprit
            culprit = self._repair(c, [h for h in order if h in cone[c] and h not in known_right],
                                   [define_of[t] for t in order if t in block])
            if culprit is None:
                blamed[c] = (None, None)
            elif culprit[0] not in blamed:
                blamed[culprit[0]] = culprit[1:]

        verdicts: dict[str, LineVerdict] = {}
        for t in order:
            d = define_of[t]
            role = self.role[t]
            expected = self.expected.get(t)
            reference = None
            if t in blamed:
                status = "wrong"
                reference, value = blamed[t]
                if value is not None:
                    expected = value
            elif role != "helper":
                status = "right" if chain_ok[t] else "inherits"
            elif not _close(self.chained[t], self.iso[t]):
                status = "inherits"
            elif not feeds[t]:
                status = "unused"
            elif t in known_right or self._matches_reference(self.iso[t]):
                status = "right"
            else:
                status = "unchecked"
            verdicts[t] = LineVerdict(d.src.line, t, d.src.text, role, status, expected,
                                      self.chained[t], reference=reference)
        for t in order:
            v = verdicts[t]
            if v.status == "inherits":
                v.because = self._roots_of(t, define_of, verdicts, line_of)
            elif v.status == "wrong":
                v.hint = self._hint(v)

        adjoints = self._adjoints(verdicts)
        sample = {n: float(v[0]) for n, v in self.ref.data.items() if v[0].shape == ()}
        return BackpropCheck(model, self.defines[0].src.file, self.loss, text,
                             [verdicts[t] for t in order], adjoints, required, self.ref.n,
                             sample)

    def _repair(self, c: str, suspects: list[str], block: list[Define]
                ) -> tuple[str, str, Array] | None:
        """The first helper of ``c``'s block that, replaced by one of the compiler's values
        for that variable, makes ``c`` right: (helper, the value's name, the value)."""
        if not suspects:
            return None
        # "this helper should be the whole answer" explains nothing: never a candidate
        candidates = [(n, v) for n, v in self._repair_values(c)
                      if not _close(v, self.expected[c])]
        outside = {t: v for t, v in self.iso.items() if t not in {d.target for d in block}}
        for h in suspects:
            for name, value in candidates:
                if value.shape != self.iso[h].shape or _close(value, self.iso[h]):
                    continue
                local = self._isolated(block, {**outside, h: value})
                if _close(local[c], self.expected[c]):
                    return h, name, value
        return None

    def _repair_values(self, c: str) -> list[tuple[str, Array]]:
        """What a helper in the block of ``c`` may stand for: the local partials of the
        variable's uses and their pieces, the incoming adjoints, the per-use terms."""
        parts = derivative_parts(c)
        assert parts is not None
        of, v = parts
        names: list[str] = []
        prefixes = [c]
        if of == self.loss:
            consumers = list(dict.fromkeys(p for p, _ in self.ref.uses(v)))
            prefixes += [adjoint_name(p, v) for p in consumers]
            names += [adjoint_name(self.loss, p) for p in consumers]
        # a name and its temporaries name:0, name:1, ...
        names += [n for n in self.ref.values
                  if any(n == p or n.startswith(p + ":") for p in prefixes)]
        out = [(n, self.ref.values[n]) for n in dict.fromkeys(names) if n in self.ref.values]
        if of == self.loss and len(self.ref.uses(v)) > 1:
            out += [(f"the term of d/{self.loss}/d/{v} via {self._use_text(use)}", t)
                    for use, t in self.ref.terms(v)]
        return out

    def _matches_reference(self, value: Array) -> bool:
        return any(_close(value, r) for r in self.ref.values.values())

    def _roots_of(self, t: str, define_of: Mapping[str, Define],
                  verdicts: Mapping[str, LineVerdict], line_of: Mapping[str, int]
                  ) -> tuple[int, ...]:
        seen: set[str] = set()
        stack = [a for a in define_of[t].variables() if a in define_of]
        roots: set[int] = set()
        wrong_operands = {line_of[a] for a in stack if verdicts[a].wrong}
        while stack:
            a = stack.pop()
            if a in seen:
                continue
            seen.add(a)
            if verdicts[a].status == "wrong":
                roots.add(line_of[a])
            stack.extend(b for b in define_of[a].variables() if b in define_of)
        return tuple(sorted(roots or wrong_operands))

    def _adjoints(self, verdicts: Mapping[str, LineVerdict]) -> list[AdjointVerdict]:
        written = [t for t in verdicts if self.role[t] == "adjoint"]
        out = []
        for name in list(dict.fromkeys([*self.ref.expected_adjoints, *written])):
            parts = derivative_parts(name)
            assert parts is not None
            if name in verdicts:
                v = verdicts[name]
                out.append(AdjointVerdict(name, parts[1], "wrong" if v.wrong else "right",
                                          v.line))
            else:
                out.append(AdjointVerdict(name, parts[1], "missing", given=name in self.given))
        return out

    # -------------------------------------------------------------- hints

    def _hint(self, v: LineVerdict) -> str | None:
        actual = self.iso[v.name]
        expected = v.expected
        assert expected is not None
        if not np.all(np.isfinite(actual)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(actual.reshape(len(actual), -1)),
                                             axis=1))[0]) + 1
            return (f"your value is not a number (NaN or infinite) on draw {bad}: "
                    "an ln, sqrt or pow of a negative number, or a division by 0?")
        if actual.shape != expected.shape:
            return self._shape_hint(v, actual, expected)
        if v.reference is not None:
            return self._helper_hint(v, actual, expected)
        parts = derivative_parts(v.name)
        if v.role == "adjoint" and parts is not None:
            return self._adjoint_hint(parts[1], actual, expected)
        if v.role == "partial" and parts is not None:
            return self._partial_hint(parts[0], parts[1], actual, expected)
        return _scale_hint(actual, expected)

    def _shape_hint(self, v: LineVerdict, actual: Array, expected: Array) -> str:
        got, want = actual.shape[1:], expected.shape[1:]
        parts = derivative_parts(v.name)
        whose = (f"an adjoint has the shape of its variable: {parts[1]} has shape "
                 if v.role == "adjoint" and parts else f"{v.name} should have shape ")
        hint = f"{whose}{fmt_shape(want)}, but this line gives {fmt_shape(got)}"
        if len(want) == 2 and got == want[::-1] and _close(np.swapaxes(actual, 1, 2), expected):
            hint += ": it is the transpose of the right value (swap the operands?)"
        return hint

    def _helper_hint(self, v: LineVerdict, actual: Array, expected: Array) -> str:
        assert v.reference is not None
        name = v.reference
        if name.startswith("the term"):
            what = name
        else:
            parts = derivative_parts(name.split(":")[0])
            kind = ("the local partial " if parts and parts[0] != self.loss and ":" not in name
                    else "the incoming adjoint " if parts and ":" not in name else
                    "the compiler's ")
            what = kind + self.ref.describe(name)
        hint = f"{v.name} should be {what} ({fmt_value(expected[0], 'report')} on draw 1)"
        parts = derivative_parts(name.split(":")[0]) if not name.startswith("the ") else None
        if parts is not None and parts[0] != self.loss and parts[0] in self.ref.values:
            p = parts[0]
            if _close(actual, self.ref.values[p]):
                return hint + f": yours is the value of {p}, not its local partial"
        relation = _relation(actual, expected)
        return hint + (f": yours is {RELATION_TO_IT[relation]}" if relation else "")

    def _adjoint_hint(self, v: str, actual: Array, expected: Array) -> str | None:
        ref = self.ref
        if v == self.loss:
            return f"the adjoint of the loss itself is 1 (d/{self.loss}/d/{self.loss} = 1)"
        terms = ref.terms(v) if ref.uses(v) else []
        uses = [u for u, _ in terms]
        name = adjoint_name(self.loss, v)
        if len(terms) > 1:
            for keep in range(len(terms) - 1, -1, -1):
                for subset in itertools.combinations(range(len(terms)), keep):
                    partial_sum = sum((terms[i][1] for i in subset), np.zeros_like(expected))
                    if _close(actual, partial_sum):
                        return self._fanout_hint(v, name, uses, subset)
        scale = _scale_hint(actual, expected)
        if scale:
            return scale
        several = len(terms) > 1
        for use, term in terms:
            rest = expected - term
            hint = self._use_hint(v, use, term, actual - rest, several)
            if hint:
                return hint
            if several and _close(actual, rest - term):
                return f"the term via {self._use_text(use)} has the wrong sign"
        for use, term in terms if several else []:  # one term, wrong, and the others missing
            hint = self._use_hint(v, use, term, actual, several)
            if hint:
                return hint + f"; and {self._fanout_hint(v, name, uses, (uses.index(use),))}"
        return None

    def _fanout_hint(self, v: str, name: str, uses: list[tuple[str, int]],
                     kept: tuple[int, ...]) -> str:
        missing = [u for i, u in enumerate(uses) if i not in kept]
        lines = list(dict.fromkeys(p for p, _ in uses))
        if len(lines) == 1:
            d = self.shape.defs[uses[0][0]]
            many = "twice" if len(uses) == 2 else f"{len(uses)} times"
            has = ("none of them" if not kept else
                   "only one of them" if len(kept) == 1 else f"only {len(kept)} of them")
            return (f"`{_code(d)}` ({self._where(d)}) uses {v} {many}, so {name} has one "
                    f"term per use ({' + '.join(self._term_text(u) for u in uses)}): "
                    f"your value has {has}")
        defs = [self.shape.defs[p] for p in lines]
        listing = fmt_list([f"`{_code(d)}`" for d in defs])
        where = (f"lines {fmt_list([str(d.src.line) for d in defs])} of "
                 f"{self.shape.file.rsplit('/', 1)[-1]}")
        missed = fmt_list([f"{self._use_text(u)} ({self._term_text(u)})" for u in missing])
        s = "s" if len(missing) > 1 else ""
        return (f"fan-out: {v} is used {len(uses)} times, by {listing} ({where}), so {name} "
                f"is the sum of one term per use; your value misses the term{s} via {missed}")

    def _where(self, d: Define) -> str:
        return f"line {d.src.line} of {self.shape.file.rsplit('/', 1)[-1]}"

    def _term_text(self, use: tuple[str, int]) -> str:
        p, i = use
        d = self.shape.defs[p]
        op = ops.OPS[d.op] if d.op else None
        if p == self.loss and op is not None and op.name == "mul":
            return str(d.args[1 - i])
        g = "1" if p == self.loss else adjoint_name(self.loss, p)
        return f"{g} · d/{p}/d/{d.args[i]}"

    def _use_text(self, use: tuple[str, int]) -> str:
        p, i = use
        d = self.shape.defs[p]
        text = f"`{_code(d)}`"
        if sum(1 for a in d.args if a == d.args[i]) > 1:
            text = f"the {ORDINAL[i] if i < 2 else str(i + 1) + 'th'} operand of {text}"
        return text

    def _use_hint(self, v: str, use: tuple[str, int], term: Array, mine: Array, several: bool
                  ) -> str | None:
        """Hypotheses about one term: ``mine`` is what the student has in its place."""
        p, _ = use
        ref = self.ref
        d = self.shape.defs[p]
        g = ref.adjoint(p)
        gname = adjoint_name(self.loss, p)
        op = ops.OPS[d.op] if d.op else None
        pname = adjoint_name(p, v)
        where = f" (in the term via {self._use_text(use)})" if several else ""
        elementwise = op is None or op.partials is not None
        if not elementwise or g.shape != term.shape or np.any(np.abs(g) < 1e-12):
            return None
        partial = term / g
        described = ref.describe(pname) if len(ref.terms(v)) == len(ref.uses(v)) else pname
        if not _close(g, np.ones_like(g)) and _close(mine, partial):
            return (f"your value is the local partial {pname} alone{where}: multiply it by "
                    f"the incoming adjoint {gname} (chain rule: {gname} · {pname})")
        if not _close(partial, np.ones_like(partial)) and _close(mine, g):
            return (f"your value is the incoming adjoint {gname} alone{where}: multiply it "
                    f"by the local partial {described} "
                    f"({fmt_value(partial[0], 'report')} on draw 1)")
        for what, label in ((f"the value of {p}", p), (f"{v} itself", v)):
            value = ref.values[label]
            if value.shape == term.shape and _close(mine, g * value):
                return (f"you used {what} where the local partial {described} belongs"
                        f"{where}: on draw 1, {label} = {fmt_value(value[0], 'report')} but "
                        f"{pname} = {fmt_value(partial[0], 'report')}")
        return None

    def _partial_hint(self, p: str, m: str, actual: Array, expected: Array) -> str | None:
        values = self.ref.values
        right = (f"{self.ref.describe(adjoint_name(p, m))} "
                 f"({fmt_value(expected[0], 'report')} on draw 1)")
        if p in values and _close(actual, values[p]):
            return f"your value is {p} itself, not its local partial: {right}"
        if m in values and _close(actual, values[m]):
            return f"your value is {m} itself, not the local partial of {p}: {right}"
        return _scale_hint(actual, expected)


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


def _relation(actual: Array, expected: Array) -> str | None:
    """The relations that need no knowledge of the program: a sign, a factor of 2, a 0."""
    if _close(expected, np.zeros_like(expected)):
        return None
    for name, factor in (("negative", -1.0), ("twice", 2.0), ("half", 0.5), ("zero", 0.0)):
        if _close(actual, factor * expected):
            return name
    return None


def _scale_hint(actual: Array, expected: Array) -> str | None:
    relation = _relation(actual, expected)
    return RELATION_HINT[relation] if relation else None


def _close(a: Array, b: Array) -> bool:
    """Equal on every draw (same shape, finite, within a relative 1e-6)."""
    if a.shape != b.shape:
        return False
    with np.errstate(all="ignore"):
        return bool(np.all(np.isfinite(a)) and np.allclose(a, b, rtol=RTOL, atol=ATOL))


def _code(d: Define | None) -> str:
    if d is None:
        return ""
    return d.src.expansion or " ".join(d.src.tokens) or str(d)
