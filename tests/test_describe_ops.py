"""The Guide's operator table (``core/describe_ops.py``) against what the compilers write, and
the operator table's derived rules (``linear_in``, ``constant_in``) against the kernels.

Every row's derivative cells must be what ``tfcompiler`` and ``tfcompiler --forward`` emit
for a real program holding the line ``v = op a b``: the table is written by driving the rules
on symbolic operands, and this holds it to whole compiled programs.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers_fd import assert_agree

from tenflang_nb.core import ops
from tenflang_nb.core.backprop import compile_program
from tenflang_nb.core.describe_ops import (
    derivative_cells,
    derivative_table,
    describe_operators,
    operator_table,
)
from tenflang_nb.core.formatting import fmt_shape
from tenflang_nb.core.forward import compile_forward
from tenflang_nb.core.ops import Const, Shape
from tenflang_nb.core.program import Program, parse

# the table's symbols for the names the compilers write
SYMBOLS = {"d/L/d/v": "g", "d/a/d/w": "da", "d/b/d/w": "db"}


def _decl(kind: str, name: str, shape: Shape = ()) -> str:
    return f"declare {kind} {name}" + (f" {fmt_shape(shape)}" if shape else "") + "\n"


def _program(op: ops.Op, shapes: tuple[Shape, ...]) -> Program:
    """``v = op a b`` inside a program whose weight w moves both operands (a = P w, b = Q w),
    so that a forward sweep carries both tangents d/a/d/w and d/b/d/w."""
    names = ("a", "b")[:op.arity]
    out = op.shape_rule(*shapes)
    text = _decl("weight", "w") + _decl("input", "C", out)
    for name, given, shape in zip(names, "PQ", shapes, strict=False):
        text += _decl("input", given, shape) + _decl("intvar", name)
    text += _decl("intvar", "v") + _decl("intvar", "r") + _decl("loss", "L")
    for name, given in zip(names, "PQ", strict=False):
        text += f"define {name} = mul {given} w\n"
    text += f"define v = {op.name} {' '.join(names)}\ndefine r = mul v C\ndefine L = sum r\n"
    return parse(text)


def _nested(program: Program, name: str) -> str:
    """The value of ``name`` as the table writes it: temporaries (``d/v/d/a:0``) inlined in
    parentheses, the compilers' names of the adjoint and tangents as the table's symbols."""

    def text(ref: str | Const, nested: bool) -> str:
        if isinstance(ref, Const):
            return str(ref)
        d = program.defs.get(ref)
        if d is None or (":" not in ref and ref != name):
            return SYMBOLS.get(ref, ref)
        if d.op is None:
            return text(d.args[0], nested)
        inner = " ".join([d.op, *(text(a, True) for a in d.args)])
        return f"({inner})" if nested else inner

    return text(name, False)


CASES = [(op, shapes) for op in ops.OPS_LIST
         for shapes in (op.guide_shapes or (((() if op.elementwise else (3,)),) * op.arity,))]


@pytest.mark.parametrize(("op", "shapes"), CASES,
                         ids=[f"{op.name}{list(map(list, s))}" for op, s in CASES])
def test_the_table_writes_what_the_compilers_emit(op: ops.Op, shapes: tuple[Shape, ...]
                                                  ) -> None:
    reverse, forward = derivative_cells(op)
    program = _program(op, shapes)
    gcp = compile_program(program).program()
    for m in ("a", "b")[:op.arity]:
        if op.elementwise:  # the GCP's local partial d/v/d/m
            assert f"d/v/d/{m} = `{_nested(gcp, f'd/v/d/{m}')}`" in reverse
        else:  # the vector-Jacobian product: m's adjoint, m having one use
            assert f"d/L/d/{m} += `{_nested(gcp, f'd/L/d/{m}')}`" in reverse
    tangents = compile_forward(program).program()
    if "d/v/d/w" in tangents.defs:
        assert f"d/v/d/w = `{_nested(tangents, 'd/v/d/w')}`" in forward
    else:
        assert forward.startswith("none: v does not change")


def _rows(table: str) -> dict[str, list[str]]:
    """A generated table's rows by operator keyword, as their cells."""
    rows = [line.strip("| ").split(" | ") for line in table.splitlines()[2:]]
    return {cells[0].split(" / ")[0].strip("`"): cells for cells in rows}


def test_rows_read_as_the_derivatives_a_student_knows() -> None:
    rows = {name: " | ".join(cells) for name, cells in _rows(derivative_table()).items()}
    assert "d/v/d/a = `mul v (sub 1 v)`" in rows["logistic"]  # o (1 - o)
    assert "d/v/d/a = `sub 1 (mul v v)`" in rows["tanh"]
    assert "d/v/d/a = `b`<br>d/v/d/b = `a`" in rows["mul"]
    assert "d/v/d/w = `add (mul d/v/d/a da) (mul d/v/d/b db)`" in rows["mul"]
    # a dense layer x W: the weight's gradient is the outer product of input and adjoint
    assert ("*a [3], b [3, 2]:*<br>d/L/d/a += `matmul g (transpose b)`<br>"
            "d/L/d/b += `outer a g`") in rows["matmul"]
    assert "d/v/d/w = `add (matmul da b) (matmul a db)`" in rows["matmul"]
    assert "*a [3]:* d/L/d/a += `div (broadcast g a) 3`" in rows["mean"]


def test_every_operator_has_a_row_in_each_table() -> None:
    names = [op.name for op in ops.OPS_LIST]
    operators, derivatives = _rows(operator_table()), _rows(derivative_table())
    assert list(operators) == list(derivatives) == names
    for op in ops.OPS_LIST:
        assert operators[op.name][1:] == [str(op.arity), op.doc + " (helper)" * op.helper,
                                          f"`{op.math}`"]
        reverse, forward = derivatives[op.name][1:]
        assert "`" in reverse and ("`" in forward or forward.startswith("none")), op.name
    assert describe_operators() == operator_table() + "\n" + derivative_table()


# ------------------------------------------------------------------------ derived rules

RNG = np.random.default_rng(7)


def _kernel_case(op: ops.Op) -> tuple[tuple[Shape, ...], ops.Kernel]:
    shapes = (op.guide_shapes or (((() if op.elementwise else (3,)),) * op.arity,))[0]
    spec = ops.KernelSpec(shapes, op.shape_rule(*shapes), (True,) * op.arity,
                          (None,) * op.arity)
    return shapes, op.kernel(spec)


@pytest.mark.parametrize("op", [op for op in ops.OPS_LIST if op.linear_in],
                         ids=lambda op: op.name)
def test_operators_are_linear_where_the_table_says(op: ops.Op) -> None:
    """Forward mode's JVP in such an operand is the operator applied to the tangent: right
    only if f(x + 2y) = f(x) + 2 f(y) while the other operands stay fixed."""
    shapes, kernel = _kernel_case(op)
    base = [RNG.uniform(0.5, 1.5, size=(1, *s)) for s in shapes]
    for i in op.linear_in:
        x, y = (RNG.normal(size=(1, *shapes[i])) for _ in range(2))

        def at(value: np.ndarray, i: int = i) -> np.ndarray:
            args = list(base)
            args[i] = value
            return np.asarray(kernel(*args), dtype=float)

        assert_agree(at(x + 2 * y), at(x) + 2 * at(y), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", [op for op in ops.OPS_LIST if op.constant_in],
                         ids=lambda op: op.name)
def test_operands_that_only_give_a_shape_do_not_move_the_value(op: ops.Op) -> None:
    shapes, kernel = _kernel_case(op)
    base = [RNG.normal(size=(1, *s)) for s in shapes]
    for i in op.constant_in:
        moved = list(base)
        moved[i] = base[i] + 1e-3 * RNG.normal(size=base[i].shape)
        np.testing.assert_array_equal(kernel(*moved), kernel(*base))


def test_linear_operators_write_only_their_reverse_rule() -> None:
    """JAX's ``deflinear``: where an operator is linear in an operand (or the operand only
    gives a shape), its forward rule is derived, never written a second time."""
    for op in ops.OPS_LIST:
        if op.jvp is None:
            assert op.partials is not None, op.name
            continue
        for i, rule in enumerate(op.jvp):
            derived = "_linear_tangent" in rule.__qualname__ or rule is ops._no_tangent
            assert derived == (i in op.linear_in or i in op.constant_in), (op.name, i)


def test_an_operator_without_a_rule_for_an_operand_is_refused() -> None:
    with pytest.raises(TypeError, match="operand 0 needs a jvp rule"):
        ops.Op("twice", 1, "twice", "2 a", lambda a: a, lambda spec: np.add,
               vjp=(lambda e, g, a, v: g,), elementwise=False)
