"""The operator table as the Guide and ``tfcompiler --list-ops`` show it, derivative rules
written out as the TenFlang the compilers emit.

Each rule of ``ops.py`` runs on symbolic operands through the compilers' own code
(``backprop.local_partial``, ``backprop.line_vjp``, ``forward.line_tangent`` and the
``LineEmitter`` that folds constants), so the table cannot drift from what the compilers
write. The names are those of a line ``v = op a b``: ``g`` stands for the adjoint
``d/L/d/v`` that reaches it, ``da`` and ``db`` for its operands' tangents ``d/a/d/w`` and
``d/b/d/w``; the lines the compilers write one by one are shown nested, in parentheses.

>>> print(derivative_cells(ops.OPS["logistic"])[0])
d/v/d/a = `mul v (sub 1 v)`
>>> print(derivative_cells(ops.OPS["matmul"])[1])
d/v/d/w = `add (matmul da b) (matmul a db)`
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from . import ops
from .backprop import LineEmitter, Tmp, line_vjp, local_partial
from .formatting import fmt_shape
from .forward import line_tangent
from .lexical import adjoint_name
from .ops import Const, Op, Ref, Shape
from .syntax import Define

__all__ = ["derivative_cells", "derivative_table", "describe_operators", "formula",
           "operator_table"]

OPERANDS = ("a", "b")
RESULT = "v"
ADJOINT = "g"  # d/L/d/v
TANGENTS = {"a": "da", "b": "db"}  # d/a/d/w, d/b/d/w
WRT = "w"  # the weight of a forward sweep
_DEFAULT_TENSOR_SHAPE: Shape = (3,)


_OPERAND_RE = re.compile(r"(?<![A-Za-z])([ab])(?![A-Za-z])")


def _group(text: str) -> str:
    return f"({text})" if " " in text or text.startswith("-") else text


def formula(op: str | None, args: Sequence[str]) -> str:
    """The operator's formula (the table's ``math``) with the operands written in, as the
    stepper's captions show a line.

    >>> formula("logistic", ["z"]), formula("mul", ["2", "diff"]), formula("sub", ["1", "-0.5"])
    ('1 / (1 + exp(-z))', '2 × diff', '1 - (-0.5)')
    >>> formula(None, ["x"]), formula("matmul", ["g", formula("transpose", ["W"])])
    ('x', 'g @ W^T')
    """
    if op is None:
        return args[0]
    named = dict(zip("ab", (_group(a) for a in args), strict=False))
    text = _OPERAND_RE.sub(lambda m: named.get(m.group(1), m.group(1)), ops.OPS[op].math)
    return text.replace(" * ", " × ")


def _cases(op: Op) -> tuple[tuple[Shape, ...], ...]:
    if op.guide_shapes:
        return op.guide_shapes
    return (((() if op.elementwise else _DEFAULT_TENSOR_SHAPE),) * op.arity,)


def _text(e: LineEmitter, ref: Ref | Tmp, nested: bool = False) -> str:
    """``ref`` as TenFlang: the lines it needs inlined, each in parentheses."""
    if not isinstance(ref, Tmp):
        return str(ref)
    name, args, _ = e.instrs[ref.index]
    text = " ".join([name, *(_text(e, a, True) for a in args)])
    return f"({text})" if nested else text


class _Symbolic:
    """One operator at one case of operand shapes: the line ``v = op a b`` and the shapes of
    every name its rules may read."""

    def __init__(self, op: Op, shapes: tuple[Shape, ...]) -> None:
        self.op = op
        self.operands = OPERANDS[:op.arity]
        self.line = Define(RESULT, op.name, self.operands)
        self.shapes = dict(zip(self.operands, shapes, strict=True))
        self.shapes[RESULT] = self.shapes[ADJOINT] = op.shape_rule(*shapes)
        for a in self.operands:
            self.shapes[TANGENTS[a]] = self.shapes[a]

    def emitter(self) -> LineEmitter:
        return LineEmitter(dict(self.shapes))

    def partial(self, m: str) -> str:
        e = self.emitter()
        return _text(e, local_partial(e, self.line, m))

    def vjp(self, m: str) -> str:
        e = self.emitter()
        return _text(e, line_vjp(e, self.line, m, ADJOINT))

    def tangent(self) -> str | None:
        e = self.emitter()

        def partial(m: str) -> Ref:
            # as forward mode does: a constant partial is used as it is, any other by its name
            p = self.emitter()
            value = local_partial(p, self.line, m)
            if isinstance(value, Const):
                return value
            name = adjoint_name(RESULT, m)
            e.shapes[name] = p.shape(value)
            return name

        result = line_tangent(e, self.line, TANGENTS, partial)
        return None if result is None else _text(e, result)


def _reverse(s: _Symbolic) -> str:
    if s.op.partials is not None:  # the GCP names the local partials, then multiplies
        return "<br>".join(f"{adjoint_name(RESULT, m)} = `{s.partial(m)}`" for m in s.operands)
    return "<br>".join(f"{adjoint_name('L', m)} += `{s.vjp(m)}`" for m in s.operands)


def _forward(s: _Symbolic) -> str:
    tangent = s.tangent()
    if tangent is None:
        return f"none: {RESULT} does not change with " + " or ".join(s.operands)
    return f"{adjoint_name(RESULT, WRT)} = `{tangent}`"


def derivative_cells(op: Op) -> tuple[str, str]:
    """The reverse-mode (GCP) and forward-mode cells of ``op``'s row: local partials for an
    elementwise operator, else vector-Jacobian products (reverse) and the Jacobian-vector
    product (forward), one line per case of ``op.guide_shapes``. A tensor operator's cases
    are labelled by their operand shapes: always in reverse mode, whose rules read them
    (``mean``'s count, ``matmul``'s ``outer``), in forward mode where the rule differs."""
    cases = [_Symbolic(op, shapes) for shapes in _cases(op)]
    cells: list[str] = []
    for write, always in ((_reverse, True), (_forward, False)):
        texts = [write(s) for s in cases]
        if op.elementwise or (not always and len(set(texts)) == 1):
            cells.append(texts[0])
            continue
        labels = (", ".join(f"{a} {fmt_shape(s.shapes[a])}" for a in s.operands)
                  for s in cases)
        # a label on a line of its own above the lines of a binary operator's case
        cells.append("<br>".join(f"*{label}:*{'<br>' if '<br>' in t else ' '}{t}"
                                 for label, t in zip(labels, texts, strict=True)))
    return cells[0], cells[1]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")  # a bare '|' would end the Markdown cell


def operator_table() -> str:
    """The operators as Markdown: keyword, operands, meaning and value.

    >>> operator_table().splitlines()[2]
    '| `add` | 2 | sum of two values | `a + b` |'
    """
    rows = ["| operator | operands | meaning | value |", "|---|---|---|---|"]
    for op in ops.OPS_LIST:
        doc = op.doc + (" (helper)" if op.helper else "")
        rows.append(f"| {_names(op)} | {op.arity} | {_cell(doc)} | `{op.math}` |")
    return "\n".join(rows) + "\n"


def derivative_table() -> str:
    """The derivative rules as Markdown: per operator, reverse mode and forward mode.

    >>> derivative_table().splitlines()[2]
    '| `add` | d/v/d/a = `1`<br>d/v/d/b = `1` | d/v/d/w = `add da db` |'
    """
    rows = ["| operator | reverse mode (the GCP) | forward mode |", "|---|---|---|"]
    for op in ops.OPS_LIST:
        reverse, forward = derivative_cells(op)
        rows.append(f"| {_names(op)} | {_cell(reverse)} | {_cell(forward)} |")
    return "\n".join(rows) + "\n"


def describe_operators() -> str:
    """Both tables, as ``tfcompiler --list-ops`` prints them (the Guide's section 5 has them
    with text between)."""
    return operator_table() + "\n" + derivative_table()


def _names(op: Op) -> str:
    return " / ".join(f"`{n}`" for n in (op.name, *op.aliases))
