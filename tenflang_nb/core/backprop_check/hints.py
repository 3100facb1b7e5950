"""Hints for a wrong line of a backward pass: hypotheses tested on the numbers (each must
hold on every draw), the entry point :func:`hint`.

The hypotheses, in order: a value that is not a number; a wrong shape (which axes differ;
the transpose of the right value, a sum over the rows of a broadcast missing); for a helper,
what it should have been; for an adjoint, a missing fan-out term (the value is the sum of
some of the per-use terms), a sign or a factor of 2, the local partial without the incoming
adjoint or the adjoint without the local partial, the value used where the local partial
belongs, a usual slip in a local partial (:data:`SLIPS`: tanh's slope ``1 - c`` for
``1 - c²``, a product where a division belongs), one variable used where another belongs, a
transpose missing in a matrix product's adjoint; for a local partial, the value itself, a
slip, another variable. Last, the student's own line written otherwise (:class:`Variant`):
an operand transposed, the operands swapped, another operator (``mul`` for ``div``, an
elementwise product for a matrix product), another variable in an operand's place. A line
whose operands' shapes do not fit its operator gets :func:`shape_error_hint`; a line that
uses a right helper where another value belongs gets :func:`misused_helper_hint`.

A variable used twice by one line (``mul z z``) has a term, and a local partial, per use:
each is named by its operand ("the first operand") with its own formula and value. Code in
a hint is between backticks: the report prints it plain, the notebook as code. With the
reference's ``formulas`` off (grading mode) a hint names the mistake, never the compiler's
formula nor the line as it would be right.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..formatting import fmt_list, fmt_shape, fmt_value
from ..lexical import adjoint_name, derivative_parts, split_derivative
from ..ops import OPS, Const, Ref, Shape, ShapeError, sumto_axes
from ..program import ancestors
from ..syntax import Define
from .reference import Reference, Use, code, ordinal, run_line
from .report import LineVerdict

__all__ = ["SLIPS", "Variant", "Written", "hint", "mistakes", "misused_helper_hint", "rewrites",
           "shape_error_hint"]

Array = np.ndarray


def hint(ref: Reference, v: LineVerdict, actual: Array, written: Written | None = None
         ) -> str | None:
    """Why the wrong line ``v`` is wrong, when a hypothesis explains it: ``actual`` is its
    value in isolation (its operands right), ``v.expected`` the right one (per draw). With
    the line as the student ``written`` it, also that line written otherwise
    (:class:`Variant`).

    >>> from tenflang_nb.core.program import parse
    >>> ref = Reference(parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n"), 2, 0)
    >>> right = ref.adjoint("w")
    >>> hint(ref, LineVerdict(1, "d/L/d/w", "", "adjoint", "wrong", right), -right)[:43]
    'your value is the negative of the right one'
    """
    return _Hints(ref).hint(v, actual, written)


def mistakes(ref: Reference, v: str) -> list[Array]:
    """The usual wrong values of the adjoint ``d/L/d/v`` (one per draw, as ``ref`` has them):
    the values the hypotheses of :func:`hint` describe, so that a caller can ask for each
    one's hint in advance (the stepper's predict mode embeds them as a table). Some may get
    no hint (:func:`hint` decides); a value may appear twice.

    >>> from tenflang_nb.core.program import parse
    >>> square = parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n")
    >>> ref = Reference(square, 1, 0, given={"w": 3.0})
    >>> sorted({float(x[0]) for x in mistakes(ref, "w")})  # the right value is 6
    [-6.0, 0.0, 1.0, 3.0, 4.0, 6.0, 9.0, 12.0]
    >>> hint(ref, LineVerdict(1, "d/L/d/w", "", "adjoint", "wrong", ref.adjoint("w")),
    ...      mistakes(ref, "w")[0])[:47]
    '`define L = mul w w` (line 3 of <program>) uses'
    """
    return _Hints(ref).mistakes(v)


def misused_helper_hint(ref: Reference, helper: str, line: int, equals: str, belongs: str,
                        value: Array, written: Written | None = None) -> str:
    """A line that uses the helper ``helper`` (its ``line``), right as the compiler's value
    ``equals``, where the compiler's value ``belongs`` (``value`` per draw) goes; and how
    the two relate (a sign, a factor of 2), or how the helper's line as ``written`` would
    give ``value`` (another operand), when they do.

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> from tenflang_nb.core.program import parse
    >>> ref = Reference(parse(SEED_EXAMPLE, "seed.tf"), 1, 0)
    >>> print(misused_helper_hint(ref, "t", 3, "d/o/d/z:0", "d/o/d/z", ref.values["d/o/d/z"]))
    t (line 3) is right as the compiler's d/o/d/z:0 = sub 1 o, but here the local partial \
d/o/d/z = mul o (sub 1 o) belongs (0.2391 on draw 1)
    """
    hints = _Hints(ref)
    relation = hints.relation(ref.values[equals], value)
    rewritten = hints._rewritten(written, value) if written and not relation else None
    return (f"{helper} (line {line}) is right as {hints.what(equals)}, but here "
            f"{hints.what(belongs)} belongs ({fmt_value(value[0], 'report')} {ref.at})"
            + (f": {helper} is {RELATION_TO_IT[relation]}" if relation else "")
            + (f": in line {line}, {rewritten}" if rewritten else ""))


def shape_error_hint(ref: Reference, written: Written, shapes: Mapping[str, Shape],
                     want: Shape | None = None) -> str | None:
    """Why the student's line cannot run, its operands having the ``shapes`` given: the axes
    that do not fit, the shape the line should give (an adjoint's is its variable's; a
    helper's, ``want``, what the lines using it need) and the line written otherwise that
    gives it (a transpose, swapped operands, another product).

    >>> from tenflang_nb.core.program import parse
    >>> ref = Reference(parse("declare input x [3]\\ndeclare weight W [3, 2]\\ndeclare intvar z"
    ...     "\\ndeclare loss L\\ndefine z = matmul x W\\ndefine L = sum z\\n"), 1, 0)
    >>> line = Written(Define("d/L/d/x", "matmul", ("d/L/d/z", "W")))
    >>> print(shape_error_hint(ref, line, {"d/L/d/z": (2,), "W": (3, 2)}))
    axis 0 of d/L/d/z [2] (2) does not match axis 0 of W [3, 2] (3); d/L/d/x should have \
the shape of x, [3]: a transpose is missing: W [3, 2] enters transposed \
(`matmul d/L/d/z (transpose W)` has that shape)
    """
    return _Hints(ref).shape_error(written, shapes, want)


def rewrites(ref: Reference, written: Written) -> Iterator[tuple[Variant, Array]]:
    """The student's line ``written`` otherwise (:func:`variants`, most likely first), each
    with its value on the draws of ``ref``, its operands as ``written`` has them (a variant
    whose operands do not fit is left out)."""
    return _Hints(ref).rewrites(written)


# The usual slips in a local partial: per operator, (the operand, the wrong partial from the
# operands' values and the result's, what the student wrote, why it is wrong); {a} and {b}
# stand for the operands and {v} for the result, as the shape program names them.
Slip = tuple[int, Callable[..., Array], str, str]
SLIPS: dict[str, tuple[Slip, ...]] = {
    "tanh": ((0, lambda a, v: 1 - v, "1 - {v}",
              "the square is missing (tanh's slope is 1 - {v}²)"),
             (0, lambda a, v: 1 - a * a, "1 - {a}²",
              "tanh's slope is written with its value {v}, not its input {a}"),
             (0, lambda a, v: v * (1 - v), "{v}(1 - {v})",
              "that is the logistic's slope, not tanh's")),
    "logistic": ((0, lambda a, v: 1 - v, "1 - {v}",
                  "the factor {v} is missing (the logistic's slope is {v}(1 - {v}))"),
                 (0, lambda a, v: a * (1 - a), "{a}(1 - {a})",
                  "the logistic's slope is written with its value {v}, not its input {a}"),
                 (0, lambda a, v: 1 - v * v, "1 - {v}²",
                  "that is tanh's slope, not the logistic's")),
    "div": ((0, lambda a, b, v: b, "{b}",
             "a product with {b} (`mul`) where a division by {b} (`div`) belongs"),
            (1, lambda a, b, v: -1 / (b * b), "-1/{b}²", "the numerator {a} is missing"),
            (1, lambda a, b, v: -v, "-{a}/{b}", "one division by {b} is missing")),
    "mul": ((0, lambda a, b, v: 1 / b, "1/{b}",
             "a division by {b} (`div`) where a product with {b} (`mul`) belongs"),
            (1, lambda a, b, v: 1 / a, "1/{a}",
             "a division by {a} (`div`) where a product with {a} (`mul`) belongs")),
    "ln": ((0, lambda a, v: a, "{a}",
            "a product with {a} (`mul`) where a division by {a} (`div`) belongs"),),
    "pow": ((0, lambda a, b, v: a ** (b - 1), "{a}^({b} - 1)",
             "the exponent {b} is not brought down as a factor"),
            (0, lambda a, b, v: b * v, "{b}·{v}", "the exponent is not lowered by 1")),
}

# What another operator in a line's place would mean, for the line written otherwise
OTHER_OPS = {"mul": ("div", "matmul", "outer"), "div": ("mul",), "add": ("sub",),
             "sub": ("add",), "matmul": ("mul", "outer"), "outer": ("mul", "matmul")}
OP_WORDS = {"mul": "an elementwise product (`mul`)", "div": "a division (`div`)",
            "add": "a sum (`add`)", "sub": "a difference (`sub`)",
            "matmul": "a matrix product (`matmul`)", "outer": "an outer product (`outer`)"}
# operators whose operands may be swapped (a swap of `sub`'s is a sign: the relations say it)
ORDERED = ("matmul", "outer", "div", "pow", "sumto", "broadcast")


@dataclass(frozen=True)
class Variant:
    """The student's line written otherwise: operator ``op`` on ``args``, the operands at the
    indices ``transposed`` entering transposed; ``kind`` is the edit (``transpose``,
    ``swap``, ``op``, ``name``: an operand replaced by another variable)."""

    op: str | None
    args: tuple[Ref, ...]
    kind: str
    transposed: frozenset[int] = frozenset()

    def text(self) -> str:
        """The line's right-hand side, a transposed operand written ``(transpose W)``.

        >>> Variant("matmul", ("g", "W"), "transpose", frozenset({1})).text()
        'matmul g (transpose W)'
        """
        args = [f"(transpose {a})" if i in self.transposed else str(a)
                for i, a in enumerate(self.args)]
        return " ".join([self.op, *args] if self.op else args)


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


class _Hints:
    """The hypotheses about the lines of one check (they read the compiler's side)."""

    def __init__(self, ref: Reference) -> None:
        self.ref = ref
        self.loss = ref.loss
        self.program = ref.program
        self.close = ref.close
        # the variables a line may use, as the student names them: the model's, and their
        # adjoints
        self.names = [n for n in (*self.program.decls,
                                  *(adjoint_name(self.loss, v) for v in self.program.decls))
                      if n in ref.values]

    def hint(self, v: LineVerdict, actual: Array, written: Written | None) -> str | None:
        expected = v.expected
        assert expected is not None
        if not np.all(np.isfinite(actual)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(actual.reshape(len(actual), -1)),
                                             axis=1))[0]) + 1
            return (f"your value is not a number (NaN or infinite) on draw {bad}: "
                    "an ln, sqrt or pow of a negative number, or a division by 0?")
        rewritten = (lambda: self._rewritten(written, expected)) if written else None
        if actual.shape != expected.shape:
            return self._shape_hint(v, actual, expected, rewritten)
        if v.reference is not None:
            return self._helper_hint(v, actual, expected, rewritten)
        parts = derivative_parts(v.name)
        found = None
        if rewritten and not np.any(actual):  # 0: a sum with no terms, or `sub e e`?
            found = rewritten()
        if found:
            return found
        if v.role == "adjoint" and parts is not None:
            found = self._adjoint_hint(parts[1], actual, expected)
        elif v.role == "partial" and parts is not None:
            found = self._partial_hint(parts[0], parts[1], actual, expected)
        else:
            found = self._scale_hint(actual, expected)
        return found or (rewritten() if rewritten else None)

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
        parts = derivative_parts(name)
        kind = ("the local partial " if parts and parts[0] != self.loss else
                "the incoming adjoint " if parts else "the compiler's ")
        return kind + self.ref.describe(name)

    def _named(self, value: Array, exclude: str | None = None) -> str | None:
        """The first variable (or adjoint) of :attr:`names` whose value ``value`` is, on every
        draw; None for none (or for a constant: it equals constants by chance)."""
        if self.ref.n > 1 and np.all(value == value.flat[0]):
            return None
        found = set(self.ref.matches(value)) - {exclude}
        return next((n for n in self.names if n in found), None)

    # -------------------------------------------------------------- shapes

    def _shape_hint(self, v: LineVerdict, actual: Array, expected: Array,
                    rewritten: Callable[[], str | None] | None) -> str:
        got, want = actual.shape[1:], expected.shape[1:]
        parts = derivative_parts(v.name)
        adjoint = v.role == "adjoint" and parts is not None
        whose = (f"an adjoint has the shape of its variable: {parts[1]} has shape "
                 if adjoint and parts else f"{v.name} should have shape ")
        hint = f"{whose}{fmt_shape(want)}, but this line gives {fmt_shape(got)}"
        if len(want) == 2 and got == want[::-1] and self.close(np.swapaxes(actual, 1, 2),
                                                               expected):
            found = rewritten() if rewritten else None
            return hint + ": it is the transpose of the right value" + (
                f": {found}" if found else " (swap the operands?)")
        hint += f" ({difference(got, want)})" if difference(got, want) else ""
        axes = _summed_axes(got, want)
        if axes and self.close(actual.sum(axis=tuple(1 + a for a in axes)).reshape(
                expected.shape), expected):
            return hint + ": " + self._missing_sum(parts[1] if adjoint and parts else None,
                                                   got, axes)
        found = (rewritten() if rewritten else None) or (
            self._alone(parts[1], actual) if adjoint and parts else None)
        return hint + (f": {found}" if found else "")

    def _alone(self, v: str, actual: Array) -> str | None:
        """An adjoint of ``v`` that is one factor of a term alone: the incoming adjoint of a
        line using ``v``, or another operand of that line."""
        found = set(self.ref.matches(actual)) if self._named(actual) else set()
        for p, _ in self.ref.uses(v) if found else []:
            d = self.program.defs[p]
            gname = adjoint_name(self.loss, p)
            others = [str(a) for a in dict.fromkeys(d.args) if a != v]
            named = next((str(a) for a in d.args if a in found and a != v), None)
            if gname in found:
                return (f"yours is the incoming adjoint {gname} alone: `{code(d)}` "
                        f"({self._where(d)}) combines {v} with {fmt_list(others)}, which "
                        f"enter{'s' * (len(others) == 1)} {adjoint_name(self.loss, v)} too")
            if named is not None:
                return f"yours is {named} alone: the incoming adjoint {gname} is missing"
        return None

    def _missing_sum(self, v: str | None, got: Shape, axes: tuple[int, ...]) -> str:
        """A value summed over ``axes`` would be right: where ``v`` is broadcast, and why."""
        rows = axes == (0,) and len(got) == 2
        text = (f"summed over its {got[0]} rows (axis 0) it is right" if rows else
                f"summed over {_axes(axes)} it is right")
        shapes = self.program.shapes
        for p, _ in self.ref.uses(v) if v is not None else []:
            if shapes[p] != shapes[v]:
                d = self.program.defs[p]
                spread = sumto_axes(shapes[p], shapes[v])
                per = ("row" if spread == (0,) and len(shapes[p]) == 2
                       else f"entry along {_axes(spread)}")
                return (text + f": `{code(d)}` ({self._where(d)}) uses {v} "
                        f"{fmt_shape(shapes[v])} once per {per} of its "
                        f"{fmt_shape(shapes[p])} value (broadcast), so "
                        f"{adjoint_name(self.loss, v)} sums the incoming adjoint over "
                        f"{'the rows' if per == 'row' else _axes(spread)} (`sumto` sums down "
                        "to a shape)")
        return text + " (a sum is missing: `sumto` sums down to a shape)"

    def shape_error(self, written: Written, shapes: Mapping[str, Shape],
                    want: Shape | None) -> str | None:
        line = written.line

        def shape_of(a: Ref) -> Shape:
            return () if isinstance(a, Const) else shapes[a]

        if line.op is None or any(isinstance(a, str) and a not in shapes for a in line.args):
            return None
        parts = [_axes_text(line.op, [written.name(a) for a in line.args],
                            [shape_of(a) for a in line.args])]
        should = self._want(line.target) or (
            ("the shape the lines using it need", want) if want is not None else None)
        if should is not None:
            whose, shape = should
            parts.append(f"{line.target} should have {whose}, {fmt_shape(shape)}")
            for variant in variants(line, shape_of, []):
                if _variant_shape(variant, shape_of) == shape:
                    parts[-1] += ": " + self._mistake(written, variant, shape_of) + (
                        f" (`{variant.text()}` has that shape)" if self.ref.formulas else "")
                    break
        return "; ".join(p for p in parts if p) or None

    def _want(self, name: str) -> tuple[str, Shape] | None:
        """What the line defining ``name`` should give: (whose shape, the shape)."""
        parts = derivative_parts(name)
        if parts is not None and parts[0] == self.loss and parts[1] in self.program.shapes:
            return f"the shape of {parts[1]}", self.program.shapes[parts[1]]
        if name in self.ref.values:
            return "the shape of the compiler's", self.ref.values[name].shape[1:]
        return None

    # -------------------------------------------------------------- the line written otherwise

    def rewrites(self, written: Written) -> Iterator[tuple[Variant, Array]]:
        operands = written.operands

        def value(a: Ref) -> Array | Const:
            return a if isinstance(a, Const) else operands.get(a, self.ref.values.get(a))

        def shape_of(a: Ref) -> Shape:
            return () if isinstance(a, Const) else np.shape(value(a))[1:]

        for variant in variants(written.line, shape_of, self._usable(written)):
            if _variant_shape(variant, shape_of) is None:
                continue
            args = [value(a) for a in variant.args]
            args = [np.swapaxes(a, 1, 2) if i in variant.transposed else a
                    for i, a in enumerate(args)]
            got = (np.asarray(args[0]) if variant.op is None
                   else run_line(variant.op, args, self.ref.n))
            if got is not None:
                yield variant, got

    def _usable(self, written: Written) -> list[str]:
        """The names an operand of the line ``written`` may be replaced by: the model's
        variables, and the adjoints a backward pass has before that of ``adjoint_of``
        (those of the variables computed from it; none in a local partial)."""
        v = written.adjoint_of
        parts = derivative_parts(written.line.target)
        partial = parts is not None and parts[0] != self.loss
        return [n for n in self.names if n != written.line.target and (
            n in self.program.decls or (not partial and (
                v is None or v in ancestors(self.program, n.rsplit("/", 1)[-1]) - {
                    n.rsplit("/", 1)[-1]})))]

    def _rewritten(self, written: Written, expected: Array) -> str | None:
        """The first variant of the student's line that gives ``expected``, as a hint."""
        for variant, got in self.rewrites(written):
            if got.shape == expected.shape and self.close(got, expected):
                return self._mistake(written, variant) + (
                    f"; `{variant.text()}` is right" if self.ref.formulas else "")
        return None

    def _mistake(self, written: Written, variant: Variant,
                 shape_of: Callable[[Ref], Shape] | None = None) -> str:
        """What ``variant`` corrects in the line ``written``, in words."""
        line, operands, name = written.line, written.operands, written.name
        if shape_of is None:
            def shape_of(a: Ref) -> Shape:
                return () if isinstance(a, Const) else operands[a].shape[1:]

        if variant.kind == "transpose":
            [i] = variant.transposed
            a = line.args[i]
            original = (self._named(np.swapaxes(operands[a], 1, 2))
                        if a in operands else None)
            if original is not None:
                return f"a transpose too many: {name(a)} is {original} transposed"
            return (f"a transpose is missing: {name(a)} {fmt_shape(shape_of(a))} enters "
                    "transposed")
        if variant.kind == "swap":
            a, b = map(name, line.args)
            return f"the operands of `{line.op}` are swapped: {a} and {b} trade places"
        if variant.kind == "name":
            [(a, b)] = [(a, b) for a, b in zip(line.args, variant.args, strict=True) if a != b]
            return f"{name(a)} is used where {b} belongs"
        assert line.op is not None and variant.op is not None
        scalars = all(shape_of(a) == () for a in line.args)
        words = {**OP_WORDS, "mul": "a product (`mul`)"} if scalars else OP_WORDS
        also = [f"{variant.args[i]} transposed" for i in sorted(variant.transposed)]
        if variant.args != line.args:
            also.append("the operands swapped")
        return (f"{words[line.op]} where {words[variant.op]} belongs"
                + (f", with {fmt_list(also)}" if also else ""))

    # -------------------------------------------------------------- helpers

    def _helper_hint(self, v: LineVerdict, actual: Array, expected: Array,
                     rewritten: Callable[[], str | None] | None) -> str:
        assert v.reference is not None
        name = v.reference
        hint = (f"{v.name} should be {self.what(name)} "
                f"({fmt_value(expected[0], 'report')} {self.ref.at})")
        parts = derivative_parts(name.split(":")[0]) if not name.startswith("the ") else None
        if parts is not None and parts[0] != self.loss and parts[0] in self.ref.values:
            p = parts[0]
            if self.close(actual, self.ref.values[p]):
                return hint + f": yours is the value of {p}, not its local partial"
        relation = self.relation(actual, expected)
        if relation:
            return hint + f": yours is {RELATION_TO_IT[relation]}"
        if parts is not None and ":" not in name and parts[0] != self.loss:
            slip = self._slip_hint(parts[0], parts[1], actual, formula=False)
            if slip:
                return hint + f": yours is {slip}"
        found = self._swapped_name(actual, expected) or (rewritten and rewritten())
        if not found and (mine := self._named(actual)) is not None:
            found = f"yours is the value of {mine}"
        return hint + (f": {found}" if found else "")

    def _swapped_name(self, actual: Array, expected: Array) -> str | None:
        """"x is used where h belongs", when the two values are those variables'."""
        right = self._named(expected)
        wrong = self._named(actual, exclude=right) if right is not None else None
        return f"{wrong} is used where {right} belongs" if wrong else None

    # -------------------------------------------------------------- adjoints

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
                    if self.close(actual, partial_sum):
                        return self._fanout_hint(v, name, uses, subset)
        scale = self._scale_hint(actual, expected)
        if scale:
            return scale
        for p in dict.fromkeys(p for p, _ in uses):
            if self.close(actual, ref.values[p]):
                return (f"your value is {p} itself, the value of "
                        f"`{code(self.program.defs[p])}`: {name} is a derivative "
                        f"({fmt_value(expected[0], 'report')} {ref.at})")
        several = len(terms) > 1

        def alone() -> str | None:  # one term, wrong, and the others missing
            for use, term in terms if several else []:
                hint = self._use_hint(use, term, actual, several)
                if hint:
                    return hint + (f"; and {self._fanout_hint(v, name, uses, (uses.index(use),))}")
            return None

        # the same number on every draw is a number written down, not a sum with a sign
        # flipped (1 = a - w where a = add w 1): first the hypotheses about one term alone
        if np.all(actual == actual[:1]) and (hint := alone()):
            return hint
        for use, term in terms:
            rest = expected - term
            hint = self._use_hint(use, term, actual - rest, several)
            if hint:
                return hint
            if several and self.close(actual, rest - term):
                return f"the term via {self.ref.use_text(use)} has the wrong sign"
        return alone() or self._alone(v, actual)

    def _fanout_hint(self, v: str, name: str, uses: list[Use],
                     kept: tuple[int, ...]) -> str:
        missing = [u for i, u in enumerate(uses) if i not in kept]
        lines = list(dict.fromkeys(p for p, _ in uses))
        if len(lines) == 1:
            d = self.program.defs[uses[0][0]]
            many = "twice" if len(uses) == 2 else f"{len(uses)} times"
            has = ("none of them" if not kept else
                   "only one of them" if len(kept) == 1 else f"only {len(kept)} of them")
            return (f"`{code(d)}` ({self._where(d)}) uses {v} {many}, so {name} has one "
                    f"term per use: {' + '.join(self._term_text(u, labelled=True) for u in uses)}"
                    f"; your value has {has}")
        defs = [self.program.defs[p] for p in lines]
        listing = fmt_list([f"`{code(d)}`" for d in defs])
        where = (f"lines {fmt_list([str(d.src.line) for d in defs])} of "
                 f"{self.program.file.rsplit('/', 1)[-1]}")
        missed = fmt_list([f"{self.ref.use_text(u)} ({self._term_text(u)})" for u in missing])
        s = "s" if len(missing) > 1 else ""
        return (f"fan-out: {v} is used {len(uses)} times, by {listing} ({where}), so {name} "
                f"is the sum of one term per use; your value misses the term{s} via {missed}")

    def _where(self, d: Define) -> str:
        return f"line {d.src.line} of {self.program.file.rsplit('/', 1)[-1]}"

    def _term_text(self, use: Use, labelled: bool = False) -> str:
        """One use's term of the adjoint, as a formula: ``d/L/d/p · d/p/d/v``; where the line
        uses the variable twice, with that operand's own partial (``d/L/d/s · z``) and, when
        ``labelled``, the operand named: ``(first operand)``."""
        p, i = use
        v = str(self.program.defs[p].args[i])
        info = self.ref.partial(use)
        repeated = self.ref.repeated(use)
        own = info[0] if info is not None and info[0] else None
        if p == self.loss:
            text = own or f"the term via {self.ref.use_text(use)}"
        elif repeated:
            text = (f"{adjoint_name(self.loss, p)} · "
                    + (own or f"the local partial of the {ordinal(i)} operand"))
        else:
            text = f"{adjoint_name(self.loss, p)} · {adjoint_name(p, v)}"
        return text + (f" ({ordinal(i)} operand)" if labelled and repeated else "")

    def _use_hint(self, use: Use, term: Array, mine: Array, several: bool) -> str | None:
        """Hypotheses about one term: ``mine`` is what the student has in its place."""
        p, i = use
        where = f" (in the term via {self.ref.use_text(use)})" if several else ""
        factors = self._factors(use, term)
        if factors is None:
            return next((text + where for wrong, text in self._wrong_terms(use, term)
                         if self.close(mine, wrong)), None)
        g, partial, formula = factors
        v = str(self.program.defs[p].args[i])
        gname = adjoint_name(self.loss, p)
        pname = adjoint_name(p, v)
        if self.ref.repeated(use):  # the partial of this operand alone, not d/p/d/v
            described = f"of the {ordinal(i)} operand, {formula or '?'}"
            inside = alone = described + ","  # followed by more of the sentence
            product = f"{gname} · {formula or '?'}"
            short = f"the {ordinal(i)} operand's local partial"
        else:
            described = inside = self.ref.describe(pname)
            alone = pname
            product, short = f"{gname} · {pname}", pname
        ones = np.ones_like(partial)
        if p != self.loss and not self.close(g, ones) and self.close(mine, partial):
            return (f"your value is the local partial {alone} alone{where}: multiply it "
                    f"by the incoming adjoint {gname} (chain rule: {product})")
        if p != self.loss and not self.close(partial, ones) and self.close(mine, g):
            return (f"your value is the incoming adjoint {gname} alone{where}: multiply it "
                    f"by the local partial {described} "
                    f"({fmt_value(partial[0], 'report')} {self.ref.at})")
        for what, label in ((f"the value of {p}", p), (f"{v} itself", v)):
            value = self.ref.values[label]
            if value.shape == term.shape and self.close(mine, g * value):
                return (f"you used {what} where the local partial {inside} belongs{where}: "
                        f"{self.ref.at}, {label} = {fmt_value(value[0], 'report')} but {short} = "
                        f"{fmt_value(partial[0], 'report')}")
        return next((text + where for wrong, text in self._wrong_terms(use, term)
                     if self.close(mine, wrong)), None)

    def _factors(self, use: Use, term: Array) -> tuple[Array, Array, str | None] | None:
        """A use's term as the incoming adjoint times the local partial (with the partial's
        formula); None where it is no such product (a VJP, a broadcast operand's sum)."""
        info = self.ref.partial(use)
        if info is None:
            return None
        formula, partial = info
        g = self.ref.adjoint(use[0])
        if not g.shape == partial.shape == term.shape:
            return None  # a broadcast operand: its term is a sum, not a product
        return g, partial, formula

    def _wrong_terms(self, use: Use, term: Array) -> Iterator[tuple[Array, str]]:
        """Usual wrong values of one use's term, each with its hint: a slip in the local
        partial (:data:`SLIPS`), another variable where the partial's belongs, a transpose
        missing in a matrix product's adjoint."""
        p, i = use
        d = self.program.defs[p]
        g = self.ref.adjoint(p)
        gname = adjoint_name(self.loss, p)
        factors = self._factors(use, term)
        if factors is not None and not self.ref.repeated(use):
            partial = factors[1]
            pname = adjoint_name(p, str(d.args[i]))
            right = f" ({self.ref.describe(pname)})" if self.ref.formulas else ""
            for wrong, what, why in self._slips(use):
                yield g * wrong, f"your value is {gname} · {_grouped(what)}: {why}{right}"
            u = self._named(partial)
            for other in self._same_shape(u, partial) if u is not None else ():
                yield (g * self.ref.values[other],
                       f"you used {other} where {u} belongs: the local partial {pname} is "
                       f"{u}" if self.ref.formulas else
                       f"you used {other} where {u} belongs (in the local partial {pname})")
        if factors is None and d.op is not None:  # a vector-Jacobian product's term
            if g.shape == term.shape and not self.close(g, term):
                yield g, (f"your value is the incoming adjoint {gname} alone: `{code(d)}` "
                          f"({self._where(d)}) changes it on its way back to {d.args[i]}")
            for other in dict.fromkeys(a for k, a in enumerate(d.args) if k != i):
                value = self.ref.values.get(str(other))
                if value is not None and value.shape == term.shape:
                    yield value, (f"your value is {other} alone: multiply by the incoming "
                                  f"adjoint {gname} (chain rule)")
        if d.op == "matmul" and isinstance(d.args[1 - i], str):
            b = str(d.args[1 - i])  # the other operand: g @ b^T or b^T @ g is right
            if len(self.program.shapes[b]) == 2:
                values = self.ref.values
                for other in (b, *self._same_shape(b, values[b])):
                    value = values[b] if other == b else np.swapaxes(values[other], 1, 2)
                    wrong = run_line("matmul", [g, value] if i == 0 else [value, g],
                                     self.ref.n)
                    if wrong is not None and wrong.shape == term.shape:
                        yield wrong, (f"a transpose is missing: {b} "
                                      f"{fmt_shape(self.program.shapes[b])} enters the "
                                      "product transposed" if other == b else
                                      f"you used {other} where {b} belongs")

    def _same_shape(self, name: str, value: Array) -> list[str]:
        """The model's other variables of ``value``'s shape (and other values)."""
        return [n for n in self.program.decls if n != name and n in self.ref.values
                and self.ref.values[n].shape == value.shape
                and not self.close(self.ref.values[n], value)]

    def _slips(self, use: Use) -> list[tuple[Array, str, str]]:
        """The usual slips in the local partial of ``use`` (:data:`SLIPS`): the wrong
        partial's value, what the student wrote and why it is wrong."""
        p, i = use
        d = self.program.defs[p]
        found = []
        names = dict(zip("ab", map(str, d.args), strict=False), v=p)
        values = [a.value if isinstance(a, Const) else self.ref.values[a] for a in d.args]
        for k, wrong, what, why in SLIPS.get(d.op or "", ()):
            if k != i:
                continue
            with np.errstate(all="ignore"):
                value = np.broadcast_to(wrong(*values, self.ref.values[p]),
                                        self.ref.values[p].shape)
            found.append((value, what.format(**names), why.format(**names)))
        return found

    def _slip_hint(self, p: str, m: str, actual: Array, formula: bool = True) -> str | None:
        """``actual`` as a slip in the local partial ``d/p/d/m``: "1 - h: the square ...",
        with the right ``formula`` when the reference shows formulas."""
        d = self.program.defs.get(p)
        if d is None or sum(1 for a in d.args if a == m) != 1:
            return None
        use = (p, d.args.index(m))
        right = (f" ({self.ref.describe(adjoint_name(p, m))})"
                 if formula and self.ref.formulas else "")
        return next((f"{what}: {why}{right}" for wrong, what, why in self._slips(use)
                     if self.close(actual, wrong)), None)

    def mistakes(self, v: str) -> list[Array]:
        """The wrong values of ``d/L/d/v`` that the hypotheses of :meth:`_adjoint_hint`
        describe, as values (see :func:`mistakes`)."""
        ref = self.ref
        expected = ref.adjoint(v)
        terms = ref.terms(v) if ref.uses(v) else []
        several = len(terms) > 1
        found: list[Array] = []
        for keep in range(len(terms) - 1, -1, -1) if several else ():  # fan-out: some terms
            for subset in itertools.combinations(range(len(terms)), keep):
                found.append(sum((terms[i][1] for i in subset), np.zeros_like(expected)))
        for (p, i), term in terms:
            rest = expected - term
            factors = self._factors((p, i), term)
            theirs = [wrong for wrong, _ in self._wrong_terms((p, i), term)]
            if factors is not None:
                g, partial, _ = factors
                theirs += [partial, g] + [g * ref.values[x] for x in (p, str(
                    self.program.defs[p].args[i])) if ref.values[x].shape == term.shape]
            found += [rest + x for x in theirs]
            if several:  # that one term, wrong, and the others missing
                found += theirs
                found.append(rest - term)  # that term's sign
        found += [ref.values[p] for p in dict.fromkeys(p for (p, _), _ in terms)
                  if ref.values[p].shape == expected.shape]  # the value of a line using v
        return found + [factor * expected for factor in RELATION_FACTOR.values()]

    # -------------------------------------------------------------- local partials

    def _partial_hint(self, p: str, m: str, actual: Array, expected: Array) -> str | None:
        values = self.ref.values
        right = (f"{self.ref.describe(adjoint_name(p, m))} "
                 f"({fmt_value(expected[0], 'report')} {self.ref.at})")
        if p in values and self.close(actual, values[p]):
            return f"your value is {p} itself, not its local partial: {right}"
        if m in values and self.close(actual, values[m]):
            return f"your value is {m} itself, not the local partial of {p}: {right}"
        scale = self._scale_hint(actual, expected)
        if scale:
            return scale
        slip = self._slip_hint(p, m, actual)
        if slip:
            return f"your {adjoint_name(p, m)} is {slip}"
        return self._swapped_name(actual, expected)

    # -------------------------------------------------------------- signs and factors

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
        return RELATION_HINT[relation] if relation else None


def variants(line: Define, shape_of: Callable[[Ref], Shape], names: list[str]
             ) -> Iterator[Variant]:
    """The student's ``line`` written otherwise, most likely first: an operand transposed,
    the operands swapped, another operator (a matrix product with its operands in any order
    and transposed), an operand replaced by one of ``names``.

    >>> line = Define("t", "mul", ("g", "W"))
    >>> [v.text() for v in variants(line, {"g": (3,), "W": (2, 3)}.__getitem__, [])][:4]
    ['mul g (transpose W)', 'div g W', 'matmul g W', 'matmul g (transpose W)']
    """
    op, args = line.op, line.args
    matrices = [i for i, a in enumerate(args) if isinstance(a, str) and len(shape_of(a)) == 2]
    for i in matrices:
        yield Variant(op, args, "transpose", frozenset({i}))
    if op in ORDERED and len(args) == 2 and args[0] != args[1]:
        yield Variant(op, args[::-1], "swap")
    for other in OTHER_OPS.get(op or "", ()):
        arrangements = [args, args[::-1]] if other in ("matmul", "outer") else [args]
        for arranged in arrangements:
            mats = [i for i, a in enumerate(arranged) if isinstance(a, str)
                    and len(shape_of(a)) == 2] if other == "matmul" else []
            for k in range(len(mats) + 1):
                for chosen in itertools.combinations(mats, k):
                    yield Variant(other, arranged, "op", frozenset(chosen))
    for i, a in enumerate(args):
        if isinstance(a, str):
            for name in names:
                if name != a:
                    yield Variant(op, (*args[:i], name, *args[i + 1:]), "name")


def _variant_shape(variant: Variant, shape_of: Callable[[Ref], Shape]) -> Shape | None:
    """The shape a variant gives (None: its operands do not fit its operator)."""
    shapes = [shape_of(a)[::-1] if i in variant.transposed else shape_of(a)
              for i, a in enumerate(variant.args)]
    if variant.op is None:
        return shapes[0]
    try:
        return OPS[variant.op].shape_rule(*shapes)
    except ShapeError:
        return None


def difference(got: Shape, want: Shape) -> str:
    """Which axes of a value of shape ``got`` differ from the shape ``want``.

    >>> difference((8, 32), (32,)), difference((32, 32), (64, 32)), difference((3,), (3, 1))
    ('an extra axis 0 of length 8', 'axis 0 is 32 where 64 belongs', 'axis 1 is missing')
    """
    extra = len(got) - len(want)
    if extra > 0 and got[extra:] == want:
        s = "es" if extra > 1 else "is"
        return f"an extra ax{s} {fmt_list([str(a) for a in range(extra)])} of length " + \
            fmt_list([str(n) for n in got[:extra]])
    if extra < 0 and want[:len(got)] == got:
        return fmt_list([f"axis {a}" for a in range(len(got), len(want))]) + " is missing"
    if extra == 0:
        return fmt_list([f"axis {a} is {g} where {w} belongs"
                         for a, (g, w) in enumerate(zip(got, want, strict=True)) if g != w])
    return ""


def _summed_axes(got: Shape, want: Shape) -> tuple[int, ...]:
    """The axes ``sumto`` sums over from ``got`` to ``want`` (none when it cannot)."""
    try:
        OPS["sumto"].shape_rule(got, want)
    except ShapeError:
        return ()
    return sumto_axes(got, want)


def _axes_text(op: str, named: list[str], shapes: list[Shape]) -> str:
    """The axes of a line's operands (``named``, of ``shapes``) that do not fit ``op``."""
    operands = [f"{n} {fmt_shape(s)}" for n, s in zip(named, shapes, strict=True)]
    if op == "matmul" and all(shapes):
        a, b = shapes
        return (f"axis {len(a) - 1} of {operands[0]} ({a[-1]}) does not match axis 0 of "
                f"{operands[1]} ({b[0]})") if a[-1] != b[0] else ""
    if OPS[op].elementwise and len(shapes) == 2:
        a, b = shapes
        clash = [(len(a) - k, len(b) - k, x, y) for k, (x, y) in enumerate(
            zip(a[::-1], b[::-1], strict=False), 1) if x != y and 1 not in (x, y)]
        return fmt_list([f"axis {i} of {operands[0]} ({x}) does not match axis {j} of "
                         f"{operands[1]} ({y})" for i, j, x, y in clash]) + (
            " (broadcasting aligns the last axes)" if clash else "")
    return f"{fmt_list(operands)} do not fit `{op}`"


def _axes(axes: tuple[int, ...]) -> str:
    """``axis 0`` or ``axes 0 and 1``."""
    return f"ax{'es' if len(axes) > 1 else 'is'} {fmt_list([str(a) for a in axes])}"


def _grouped(text: str) -> str:
    return f"({text})" if " " in text else text


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
