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

Every hint lives in this package, in layers each built on the one before: ``base`` (the
shared vocabulary), ``rewritten`` (the line written otherwise), ``shapes``, ``terms`` (an
adjoint's terms, local partials, :data:`SLIPS`), and here the order they are tried in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import numpy as np

from ...formatting import fmt_value
from ...lexical import derivative_parts
from ...ops import Shape
from ..reference import Reference
from ..report import LineVerdict
from .base import RELATION_TO_IT, Written
from .rewritten import Variant, variants
from .terms import SLIPS, TermHints

__all__ = ["SLIPS", "Variant", "Written", "hint", "mistakes", "misused_helper_hint", "rewrites",
           "shape_error_hint", "variants"]

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
    t (line 3) is right as a part of the local partial d/o/d/z of `define o = logistic z` \
(line 10 of seed.tf), where the logistic's slope is o(1 - o): the compiler's d/o/d/z:0 = \
sub 1 o, but here the local partial d/o/d/z = mul o (sub 1 o) belongs (0.2391 on draw 1)
    """
    hints = _Hints(ref)
    relation = hints.relation(ref.values[equals], value)
    rewritten = hints._rewritten(written, value) if written and not relation else None
    return (f"{helper} (line {line}) is right as {hints.what(equals)}, but here "
            f"{hints.what(belongs)} belongs ({fmt_value(value[ref.shown], 'report')} {ref.at})"
            + (f": {helper} is {RELATION_TO_IT[relation]}" if relation else "")
            + (f": in line {line}, {rewritten}" if rewritten else ""))


def shape_error_hint(ref: Reference, written: Written, shapes: Mapping[str, Shape],
                     want: Shape | None = None) -> str | None:
    """Why the student's line cannot run, its operands having the ``shapes`` given: the axes
    that do not fit, the shape the line should give (an adjoint's is its variable's; a
    helper's, ``want``, what the lines using it need) and the line written otherwise that
    gives it (a transpose, swapped operands, another product).

    >>> from tenflang_nb.core.program import parse
    >>> from tenflang_nb.core.syntax import Define
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


class _Hints(TermHints):
    """Every hypothesis about the lines of one check, and which comes first."""

    def hint(self, v: LineVerdict, actual: Array, written: Written | None) -> str | None:
        self.written = written
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
        return (found or (rewritten() if rewritten else None)
                or self._constant_hint(actual, expected))

    def _helper_hint(self, v: LineVerdict, actual: Array, expected: Array,
                     rewritten: Callable[[], str | None] | None) -> str:
        assert v.reference is not None
        name = v.reference
        hint = (f"{v.name} should be {self.what(name)} "
                f"({fmt_value(expected[self.ref.shown], 'report')} {self.ref.at})")
        parts = derivative_parts(name.split(":")[0]) if not name.startswith("the ") else None
        if parts is not None and parts[0] != self.loss and parts[0] in self.ref.values:
            p = parts[0]
            if self.close(actual, self.ref.values[p]):
                return hint + f": yours is the value of {p}, not its local partial"
            if swapped := self._input_for_value(name, actual):
                return hint + f": {swapped}"
        relation = self.relation(actual, expected)
        if relation == "zero" and rewritten and (found := rewritten()):
            return hint + f": {found}"  # 0: `sub w w` for `add w w`?
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
