"""The student's line written otherwise (:class:`Variant`): an operand transposed, the
operands swapped, another operator (``mul`` for ``div``, an elementwise product for a matrix
product), another variable in an operand's place; each run on the draws, and the first that
gives the right value named as the mistake."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ...formatting import fmt_list, fmt_shape
from ...lexical import derivative_parts
from ...ops import OPS, Const, Ref, Shape, ShapeError
from ...program import ancestors
from ...syntax import Define
from ..reference import run_line
from .base import HintsBase, Written

__all__ = ["OP_WORDS", "OTHER_OPS", "RewriteHints", "Variant", "variant_shape", "variants"]

Array = np.ndarray

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


class RewriteHints(HintsBase):
    """The hypotheses about the student's line as written."""

    def rewrites(self, written: Written) -> Iterator[tuple[Variant, Array]]:
        """Each variant of the line ``written`` that runs, with its value (see
        :func:`~tenflang_nb.core.backprop_check.hints.rewrites`)."""
        operands = written.operands

        def value(a: Ref) -> Array | Const:
            return a if isinstance(a, Const) else operands.get(a, self.ref.values.get(a))

        def shape_of(a: Ref) -> Shape:
            return () if isinstance(a, Const) else np.shape(value(a))[1:]

        for variant in variants(written.line, shape_of, self._usable(written)):
            if variant_shape(variant, shape_of) is None:
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
        # a name whose value is one number on every draw (d/L/d/L = 1), or on the one draw
        # checked, would fit by a coincidence of values, not as what the line means
        return [n for n in self.names if n != written.line.target and not self._constant(n) and (
            n in self.program.decls or (not partial and (
                v is None or v in ancestors(self.program, n.rsplit("/", 1)[-1]) - {
                    n.rsplit("/", 1)[-1]})))]

    def _constant(self, name: str) -> bool:
        value = self.ref.values[name]
        return self.ref.n == 1 or bool(np.all(value == value.flat[0]))

    def _rewritten(self, written: Written, expected: Array) -> str | None:
        """The first variant of the student's line that gives ``expected``, as a hint."""
        for variant, got in self.rewrites(written):
            if got.shape == expected.shape and self.close(got, expected):
                mistake, right = self._mistake(written, variant)
                return mistake + (f"; `{right.text()}` is right" if self.ref.formulas else "")
        return None

    def _mistake(self, written: Written, variant: Variant,
                 shape_of: Callable[[Ref], Shape] | None = None) -> tuple[str, Variant]:
        """What ``variant`` corrects in the line ``written``, in words; and the variant as
        the right line is best written (an operand's transpose undone by its original)."""
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
                args = (*line.args[:i], original, *line.args[i + 1:])
                return (f"a transpose too many: {name(a)} is {original} transposed",
                        Variant(line.op, args, "name"))
            return (f"a transpose is missing: {name(a)} {fmt_shape(shape_of(a))} enters "
                    "transposed", variant)
        if variant.kind == "swap":
            a, b = map(name, line.args)
            return f"the operands of `{line.op}` are swapped: {a} and {b} trade places", variant
        if variant.kind == "name":
            [(a, b)] = [(a, b) for a, b in zip(line.args, variant.args, strict=True) if a != b]
            return f"{name(a)} is used where {b} belongs", variant
        assert line.op is not None and variant.op is not None
        scalars = all(shape_of(a) == () for a in line.args)
        words = {**OP_WORDS, "mul": "a product (`mul`)"} if scalars else OP_WORDS
        also = [f"{variant.args[i]} transposed" for i in sorted(variant.transposed)]
        if variant.args != line.args:
            also.append("the operands swapped")
        return (f"{words[line.op]} where {words[variant.op]} belongs"
                + (f", with {fmt_list(also)}" if also else "")), variant


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


def variant_shape(variant: Variant, shape_of: Callable[[Ref], Shape]) -> Shape | None:
    """The shape a variant gives (None: its operands do not fit its operator)."""
    shapes = [shape_of(a)[::-1] if i in variant.transposed else shape_of(a)
              for i, a in enumerate(variant.args)]
    if variant.op is None:
        return shapes[0]
    try:
        return OPS[variant.op].shape_rule(*shapes)
    except ShapeError:
        return None
