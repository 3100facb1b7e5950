"""Hints about shapes: a value of the wrong shape (which axes differ; the transpose of the
right value; a sum over the rows of a broadcast missing; a factor of a term alone), and a
line whose operands' shapes do not fit its operator (both shapes, the axes, the shape the
line should give and the line written otherwise that gives it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ...formatting import fmt_list, fmt_shape
from ...lexical import adjoint_name, derivative_parts
from ...ops import OPS, Const, Ref, Shape, ShapeError, sumto_axes
from ..reference import code
from ..report import LineVerdict
from .base import Written
from .rewritten import RewriteHints, variant_shape, variants

__all__ = ["ShapeHints", "difference"]

Array = np.ndarray


class ShapeHints(RewriteHints):
    """The hypotheses about shapes."""

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
        line using ``v``, its local partial, or another operand of that line (transposed)."""
        if self.ref.n > 1 and np.all(actual == actual.flat[0]):
            return None  # a number: it equals constants of the compiler's by chance
        found = set(self.ref.matches(actual))
        flipped = (set(self.ref.matches(np.swapaxes(actual, 1, 2))) if actual.ndim == 3
                   else set())
        for p, _ in self.ref.uses(v) if found | flipped else []:
            d = self.program.defs[p]
            gname = adjoint_name(self.loss, p)
            others = [str(a) for a in dict.fromkeys(d.args) if a != v]
            if gname in found:
                return (f"yours is the incoming adjoint {gname} alone: `{code(d)}` "
                        f"({self._where(d)}) combines {v} with {fmt_list(others)}, which "
                        f"enter{'s' * (len(others) == 1)} {adjoint_name(self.loss, v)} too")
            if adjoint_name(p, v) in found:
                return (f"yours is the local partial {adjoint_name(p, v)} alone: multiply it "
                        f"by the incoming adjoint {gname}")
            for a in others:
                if a in found or a in flipped:
                    alone = a if a in found else f"{a} transposed"
                    return f"yours is {alone} alone: the incoming adjoint {gname} is missing"
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
                if variant_shape(variant, shape_of) == shape:
                    mistake, right = self._mistake(written, variant, shape_of)
                    parts[-1] += f": {mistake}" + (
                        f" (`{right.text()}` has that shape)" if self.ref.formulas else "")
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
