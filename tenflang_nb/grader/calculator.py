"""Numbers read from a cell's source as data: literals and arithmetic on them, never run.

A numeric answer cell (``answer_3 = 0.1875``, or arithmetic on numbers and on the values of
the student's example, ``2 * (0.5 - y3) * 0.25 * x3``) is read here statement by statement:
an assignment whose right side is a number, a name read before, an example's entry
(``example_3["x"]``), arithmetic (``+ - * / // % **``, unary ``-``) or one of a few pure
functions (``abs``, ``float``, ``int``, ``round``, ``min``, ``max``, ``math.exp`` and the like)
binds its names; any other assignment makes its names *unreadable*, with the reason. Nothing
the student's kernel held is used: a name is only what this cell's text says.

>>> env = Calculator({"example_3": {"x": 2.0, "y": 0.25}})
>>> env.run("answer_3 = None\\nx3, y3 = example_3['x'], example_3['y']\\n"
...         "answer_3 = 2 * (0.5 - y3) * 0.25 * x3")
>>> env.value("answer_3")
0.25
>>> env.run("answer_9 = float(seed.values(example_3)['w'][1])")
>>> env.value("answer_9")
Traceback (most recent call last):
...
tenflang_nb.grader.calculator.Unreadable: line 1: seed.values(...) is no number written in \
the cell
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Calculator", "Unreadable", "evaluate"]

Number = int | float
MAX_EXPONENT = 1024  # beyond it an int power is taken as a float (no 2 ** 10**9 in a grader)

BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow}
UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs, "float": float, "int": int, "round": round, "min": min, "max": max,
    **{f"{module}.{f}": getattr(math, f) for module in ("math", "np", "numpy")
       for f in ("exp", "log", "sqrt", "tanh", "floor", "ceil")},
    "math.factorial": math.factorial}


class Unreadable(Exception):
    """A value the cell's text does not give as a number (the message says where, why)."""


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _shown(node: ast.expr) -> str:
    text = ast.unparse(node)
    if isinstance(node, ast.Call):
        text = ast.unparse(node.func) + "(...)"
    return text if len(text) <= 60 else text[:57] + "..."


def evaluate(node: ast.expr, names: Mapping[str, Any],
             calls: Mapping[str, Callable[..., Any]] | None = None) -> Any:
    """The value of the expression ``node``: numbers, ``None``, the ``names`` given, their
    entries by a literal key, arithmetic, :data:`FUNCTIONS` and the ``calls`` given (by their
    dotted names, with literal arguments). Raises :class:`Unreadable` for anything else."""
    def no() -> Unreadable:
        return Unreadable(f"{_shown(node)} is no number written in the cell")

    if isinstance(node, ast.Constant):
        if node.value is None or type(node.value) in (int, float):
            return node.value
        raise no()
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise Unreadable(f"{node.id} is not given in the answer cells")
        return names[node.id]
    if isinstance(node, ast.Subscript):
        base = evaluate(node.value, names, calls)
        if not isinstance(base, Mapping) or not isinstance(node.slice, ast.Constant) \
                or node.slice.value not in base:
            raise no()
        return base[node.slice.value]
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        return UNARY[type(node.op)](_number(evaluate(node.operand, names, calls), node))
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left = _number(evaluate(node.left, names, calls), node.left)
        right = _number(evaluate(node.right, names, calls), node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            left = float(left)
        try:
            return _number(BINARY[type(node.op)](left, right), node)
        except (ArithmeticError, ValueError) as err:
            raise Unreadable(f"{_shown(node)}: {err}") from None
    if isinstance(node, ast.Call) and not any(isinstance(a, ast.Starred) for a in node.args):
        name = _dotted(node.func)
        if name in FUNCTIONS:
            args = [_number(evaluate(a, names, calls), a) for a in node.args]
            if node.keywords:
                raise no()
            try:
                return _number(FUNCTIONS[name](*args), node)
            except (ArithmeticError, ValueError, TypeError) as err:
                raise Unreadable(f"{_shown(node)}: {err}") from None
        if calls is not None and name in calls:
            try:
                args = [ast.literal_eval(a) for a in node.args]
                kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords
                          if k.arg is not None}
            except ValueError:
                raise Unreadable(f"{_shown(node)}: its arguments must be written out") from None
            return calls[name](*args, **kwargs)
    raise no()


def _number(value: Any, node: ast.expr) -> Number:
    """``value`` when it is an int or a float (of exactly those types), finite."""
    if type(value) not in (int, float):
        raise Unreadable(f"{_shown(node)} is no number")
    if isinstance(value, float) and not math.isfinite(value):
        raise Unreadable(f"{_shown(node)} is not finite")
    if isinstance(value, int) and abs(value) > 10 ** 300:
        raise Unreadable(f"{_shown(node)} is too large")
    return value


def _stored(node: ast.stmt) -> list[str]:
    """The names a statement assigns (anywhere inside it)."""
    return [n.id for n in ast.walk(node)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


class Calculator:
    """The names the answer cells give, read in order (:meth:`run` each cell's source)."""

    def __init__(self, names: Mapping[str, Any] | None = None) -> None:
        self.names: dict[str, Any] = dict(names or {})
        self.unreadable: dict[str, str] = {}

    def _bind(self, name: str, value: Any) -> None:
        self.names[name] = value
        self.unreadable.pop(name, None)

    def _lose(self, name: str, why: str) -> None:
        self.names.pop(name, None)
        self.unreadable[name] = why

    def run(self, source: str) -> None:
        """Read one cell's statements (a cell that is no Python leaves what it assigns
        unreadable: nothing is bound from it)."""
        try:
            tree = ast.parse(source)
        except SyntaxError as err:
            self.unreadable["*"] = f"line {err.lineno}: the cell is no Python ({err.msg})"
            return
        except (RecursionError, MemoryError, ValueError):  # nested beyond any parser
            self.unreadable["*"] = "the cell is too deeply nested to read"
            return
        for statement in tree.body:
            try:
                self._statement(statement)
            except (RecursionError, MemoryError):
                for name in _stored(statement):
                    self._lose(name, f"line {statement.lineno}: too deeply nested to read")

    def _statement(self, node: ast.stmt) -> None:
        where = f"line {node.lineno}"
        if isinstance(node, ast.Assign):
            pairs = self._pairs(node.targets, node.value)
            if pairs is not None:
                for target, value in pairs:
                    try:
                        self._bind(target, evaluate(value, self.names))
                    except Unreadable as why:
                        self._lose(target, f"{where}: {why}")
                return
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) \
                and type(node.op) in BINARY:
            name = node.target.id
            fake = ast.BinOp(ast.Name(name, ast.Load()), node.op, node.value)
            try:
                self._bind(name, evaluate(ast.fix_missing_locations(
                    ast.copy_location(fake, node)), self.names))
            except Unreadable as why:
                self._lose(name, f"{where}: {why}")
            return
        if isinstance(node, ast.Expr | ast.Pass | ast.Assert):
            return  # a value shown, a check: it binds nothing
        for name in _stored(node):  # a loop, a def, an import...: what it sets is unread
            self._lose(name, f"{where}: set by a statement the autograder does not run "
                             f"({type(node).__name__.lower()})")

    @staticmethod
    def _pairs(targets: list[ast.expr], value: ast.expr
               ) -> list[tuple[str, ast.expr]] | None:
        """(name, expression) for ``a = 1``, ``a = b = 1`` and ``a, b = 1, 2``."""
        pairs: list[tuple[str, ast.expr]] = []
        for target in targets:
            if isinstance(target, ast.Name):
                pairs.append((target.id, value))
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(
                    target.elts) == len(value.elts) and all(
                    isinstance(t, ast.Name) for t in target.elts):
                pairs.extend((t.id, v) for t, v in zip(target.elts, value.elts, strict=True))
            else:
                return None
        return pairs

    def value(self, name: str) -> Any:
        """The value the cells give ``name`` (None: not given, or given as None); raises
        :class:`Unreadable` when a cell sets it in a way the autograder does not read."""
        if name in self.unreadable:
            raise Unreadable(self.unreadable[name])
        if name not in self.names and "*" in self.unreadable:
            raise Unreadable(self.unreadable["*"])
        return self.names.get(name)
