"""Dimension analysis of a GCP line, in words: the shapes it reads and makes, and why a
vector-Jacobian product (VJP) has its form. The stepper's captions show it for every line
that touches a tensor.

Nothing here is a second table of rules: a VJP is the operator table's rule run on the
line's own operands (``backprop.line_vjp``, as the compiler runs it), written out with the
table's formulas; "the only product of the two with that shape" is found by trying every
product of the table's bilinear operators (linear in each operand: ``mul``, ``matmul``,
``outer``) on the two factors and their transposes, with the table's shape rules and
kernels; the axes a broadcast repeats along are ``ops.sumto_axes``'.

>>> from tenflang_nb.core.program import parse
>>> from tenflang_nb.core.backprop import compile_program
>>> p = parse("declare input h [3]\\ndeclare weight W [3, 2]\\ndeclare intvar a\\n"
...           "declare loss L\\ndefine a = matmul h W\\ndefine L = sum a\\n")
>>> gcp = compile_program(p)
>>> dims = Dimensions.of(gcp)
>>> print(dims.adjoint(dims.defs["d/L/d/W"], "W", ["a"]))
d/L/d/a is [2] and h is [3]: d/L/d/W = h_i × d/L/d/a_j is [3, 2], W's shape; the only product \
of the two with that shape
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import ops
from .agreement import entrywise_agreement
from .backprop import Gcp, LineEmitter, Tmp, line_vjp
from .describe_ops import formula
from .formatting import fmt_list, fmt_shape
from .lexical import adjoint_name
from .ops import Const, Ref, Shape, ShapeError, sumto_axes
from .program import Program
from .syntax import Declare, Define

__all__ = ["Dimensions", "Tree", "render"]

# an expression: a name, a constant, or (operator, operands)
Tree = Ref | tuple[str, tuple["Tree", ...]]
# the products the table has: binary operators linear in each operand
BILINEAR = tuple(op.name for op in ops.OPS_LIST if op.arity == 2 and op.linear_in == (0, 1))
PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def render(tree: Tree) -> str:
    """An expression in the table's formulas (``ops.py``'s ``math``).

    >>> render(("matmul", ("g", ("transpose", ("W",)))))
    'g @ W^T'
    """
    if isinstance(tree, tuple):
        return formula(tree[0], [render(a) for a in tree[1]])
    return str(tree)


def _is(text: str, shape: Shape) -> str:
    return f"{text} is {fmt_shape(shape)}" if shape else f"{text} is a scalar"


def _axes(axes: Sequence[int], shape: Shape) -> str:
    """``axis 0 (5 times)``: the axes of ``shape`` something is repeated along."""
    count = int(np.prod([shape[i] for i in axes])) if axes else 1
    word = "axis" if len(axes) == 1 else "axes"
    return f"{word} {fmt_list([str(i) for i in axes])} ({count} times)"


@dataclass(frozen=True)
class _Factor:
    text: str
    shape: Shape
    value: np.ndarray


def _apply(op: str, *values: np.ndarray) -> np.ndarray:
    """The table's kernel of ``op`` on per-example values (a batch of one)."""
    shapes = tuple(v.shape for v in values)
    out = ops.OPS[op].shape_rule(*shapes)
    spec = ops.KernelSpec(shapes, out, (True,) * len(values), (None,) * len(values))
    return np.asarray(ops.OPS[op].kernel(spec)(*(v[None] for v in values)))[0]


class Dimensions:
    """The dimension analysis of the lines of one GCP: ``program`` (the shape program), its
    ``loss``, the ``shapes`` of every name of the GCP and its definitions ``defs``."""

    def __init__(self, program: Program, loss: str, shapes: Mapping[str, Shape],
                 defs: Mapping[str, Define]) -> None:
        self.program = program
        self.loss = loss
        self.shapes = dict(shapes)
        self.defs = defs

    @staticmethod
    def of(gcp: Gcp) -> Dimensions:
        shapes: dict[str, Shape] = dict(gcp.shape_program.shapes)
        defs: dict[str, Define] = {}
        for line in gcp.lines:
            s = line.statement
            if isinstance(s, Declare):
                shapes[s.name] = s.shape or ()
            elif isinstance(s, Define):
                defs[s.target] = s
        return Dimensions(gcp.shape_program, gcp.loss, shapes, defs)

    def shape(self, ref: Ref) -> Shape:
        return () if isinstance(ref, Const) else self.shapes[ref]

    def _scalars(self, d: Define) -> bool:
        return all(self.shape(a) == () for a in (*d.variables(), d.target))

    def _text(self, p: str) -> str:
        return str(self.program.defs[p])[len("define "):]

    # -------------------------------------------------------------------------- lines

    def forward(self, d: Define) -> str:
        """The shapes of a forward line: ``x is [64] and W1 is [64, 32], so a1 is [32]``;
        an elementwise operator says which operand it repeats (broadcasts)."""
        if self._scalars(d):
            return ""
        return self._generic(d)

    def _repeat(self, a: str, shape: Shape) -> str:
        if not self.shape(a):
            return f"the scalar {a} used for each entry"
        return f"{a} repeated along {_axes(sumto_axes(shape, self.shape(a)), shape)}"

    def _generic(self, d: Define) -> str:
        """``a is [3] and b is [3], so v is [3]``; an elementwise operator says it works
        entry by entry, and which operand it repeats (broadcasts)."""
        operands = fmt_list([_is(a, self.shape(a)) for a in dict.fromkeys(d.variables())])
        target = self.shape(d.target)
        result = _is(d.target, target)
        head = f"{operands}, so {result}" if operands else result
        if d.op is None or not ops.OPS[d.op].elementwise or not target:
            return head
        repeated = [self._repeat(a, target) for a in dict.fromkeys(d.variables())
                    if self.shape(a) != target]
        return head + (f", with {fmt_list(repeated)}" if repeated else ", entry by entry")

    def partial(self, d: Define, p: str, m: str, complete: bool) -> str:
        """A line of the local partial ``d/p/d/m`` of an elementwise line (``complete``: the
        line that makes it, not a step towards it)."""
        sp, sm, st = self.shape(p), self.shape(m), self.shape(d.target)
        if not complete or (not sp and not sm):
            return "" if self._scalars(d) else self._generic(d)
        op = self.program.defs[p].op
        if not st:
            return (f"{d.target} is a scalar: the same slope for every entry of {p} "
                    f"({fmt_shape(sp)})")
        if st == sp == sm:
            return (f"{d.target} is {fmt_shape(st)}, like {m}: {op} works entry by entry, so "
                    f"the Jacobian of {p} with respect to {m} ({fmt_shape(sp + sm)}) is "
                    "diagonal, and the GCP keeps only its diagonal: one slope per entry")
        if st == sp:
            return (f"{d.target} is {fmt_shape(st)}, the shape of {p}, not {m}'s "
                    f"{fmt_shape(sm)}: {m} is repeated in {p}, so there is one slope per entry "
                    f"of {p}, and {m}'s adjoint sums over the repeats")
        return (f"{d.target} is {fmt_shape(st)}: one slope per entry, repeated to {p}'s shape "
                f"{fmt_shape(sp)} when it multiplies d/{self.loss}/d/{p}")

    def adjoint(self, d: Define, v: str, users: Sequence[str]) -> str:
        """A line of ``v``'s adjoint block, the contributions of ``users`` in it (none: ``v``
        cannot affect the loss)."""
        if self._scalars(d):
            return ""
        sv, st = self.shape(v), self.shape(d.target)
        if not users:
            return f"{_is(d.target, sv)}: 0 for every entry of {v}"
        if d.op == "sumto":
            return self._sum_down(d, v, users)
        if len(users) == 1 and (p_def := self.program.defs.get(users[0])) is not None \
                and p_def.op is not None and ops.OPS[p_def.op].vjp is not None:
            why = self._vjp(d, v, users[0])
            if why:
                return why
        head = self._generic(d)
        elementwise = all(self.program.defs[p].op is None
                          or ops.OPS[str(self.program.defs[p].op)].elementwise
                          for p in users if p in self.program.defs)
        if not elementwise or d.op is None or not ops.OPS[d.op].elementwise:
            return head
        if st == sv:
            return f"{head}: {v}'s shape"
        return (f"{head}: the shape of {fmt_list(users)}, not {v}'s {fmt_shape(sv)}, so the "
                "next line sums it down")

    def _sum_down(self, d: Define, v: str, users: Sequence[str]) -> str:
        a = d.args[0]
        sa, sv = self.shape(a), self.shape(v)
        axes = sumto_axes(sa, sv)
        where = fmt_list([self._text(p) for p in users]) or "its use"
        rows = (" (one term per row: per example, when the rows are a batch)"
                if axes and axes[0] == 0 and len(sa) > len(sv) and len(sa) == 2 else "")
        them = "it" if len(axes) == 1 else "them"
        return (f"{_is(str(a), sa)}, but {_is(v, sv)}: {v} was repeated along "
                f"{_axes(axes, sa)} in {where}, so its adjoint sums over {them}{rows}: "
                f"{d.target} is {fmt_shape(sv)}, {v}'s shape")

    # -------------------------------------------------------------------------- VJPs

    def _vjp(self, d: Define, v: str, p: str) -> str | None:
        """Why the line that completes ``v``'s contribution through ``p`` (not elementwise)
        has its form; None for a line on the way there."""
        p_def = self.program.defs[p]
        g: Ref = Const.of(1) if p == self.loss else adjoint_name(self.loss, p)
        e = LineEmitter(dict(self.shapes))
        rule = emitted_tree(e, line_vjp(e, p_def, v, g))
        if defined_tree(self.defs, d.target, adjoint_name(self.loss, v)) != rule:
            return None
        op = ops.OPS[str(p_def.op)]
        sv = self.shape(v)
        leaves = list(dict.fromkeys(x for x in _leaves(rule) if isinstance(x, str)))
        given = fmt_list([_is(x, self.shape(x)) for x in sorted(leaves, key=lambda x: x != g)])
        result = f"{_is(f'{d.target} = {render(rule)}', sv)}, {v}'s shape"
        uses = [i for i, a in enumerate(p_def.args) if a == v]
        other = [a for a in p_def.variables() if a != v]
        if len(uses) == 1 and uses[0] in op.constant_in:
            return (f"{self._text(p)} only reads {v}'s shape, so {v}'s adjoint is 0: "
                    f"{result}")
        if isinstance(g, str) and len(other) == 1:
            product = self._product(rule, g, other[0], p_def, v)
            if product:
                return f"{given}: {result}; {product}"
        if len(uses) == 1 and uses[0] in op.linear_in:
            how = self._spread(rule)
            return (f"{given}: {result}; {self._text(p)} is linear in {v}, so its VJP applies "
                    f"the transposed map to {g}{': ' + how if how else ''}")
        if not self.shape(p):
            return (f"{given}: {result}; {p} is a scalar, so its Jacobian with respect to {v} "
                    f"is one slope per entry of {v} ({fmt_shape(sv)}), and the VJP scales it "
                    f"by {g}")
        jacobian = fmt_shape(self.shape(p) + sv)
        return (f"{given}: {result}; the Jacobian of {p} with respect to {v} is {jacobian} "
                f"(a row per entry of {p}, a column per entry of {v}): the VJP multiplies "
                f"{g} by it without ever forming it")

    def _spread(self, rule: Tree) -> str:
        """What a broadcast or a sum down in the VJP does, in words."""
        for op, args in _nodes(rule):
            if op not in ("broadcast", "sumto"):
                continue
            x, like = args
            sx, sl = self._tree_shape(x), self._tree_shape(like)
            if op == "broadcast" and not sx:
                return f"{render(x)}, a scalar, copied to each of the {int(np.prod(sl))} " \
                       f"entries of {render(like)}"
            if op == "broadcast":
                return f"{render(x)} copied along {_axes(sumto_axes(sl, sx), sl)}"
            return f"{render(x)} summed over {_axes(sumto_axes(sx, sl), sx)}"
        return ""

    def _tree_shape(self, tree: Tree) -> Shape:
        if isinstance(tree, tuple):
            return ops.OPS[tree[0]].shape_rule(*(self._tree_shape(a) for a in tree[1]))
        return self.shape(tree)

    def _product(self, rule: Tree, g: str, other: str, p_def: Define, v: str) -> str | None:
        """When the VJP is a product of ``g`` and ``other`` (or their transposes): is it the
        only product of the two with ``v``'s shape?"""
        if not (isinstance(rule, tuple) and rule[0] in BILINEAR):
            return None
        factors = [_factor(x) for x in rule[1]]
        if None in factors or {f[0] for f in factors if f} != {g, other}:
            return None
        shapes = {g: self.shape(g), other: self.shape(other)}
        fits = _products(shapes, g, other, self.shape(v))
        if len(fits) <= 1:
            return "the only product of the two with that shape"
        generic = _generic_shapes(p_def, self.shapes)
        if generic is None:
            return None
        sizes = {g: generic[p_def.target], other: generic[other]}
        if len(_products(sizes, g, other, generic[v])) == 1:
            return (f"here some sizes are equal, so {len(fits)} different products of the two "
                    "(each as it is or transposed) have that shape; with unequal sizes only "
                    "this one would")
        return None


def _factor(tree: Tree) -> tuple[str, bool] | None:
    """A factor of a product: a name, or the transpose of one."""
    if isinstance(tree, str):
        return tree, False
    if isinstance(tree, tuple) and tree[0] == "transpose" and isinstance(tree[1][0], str):
        return tree[1][0], True
    return None


def _forms(name: str, shape: Shape, value: np.ndarray) -> list[_Factor]:
    forms = [_Factor(name, shape, value)]
    if len(shape) == 2:
        forms.append(_Factor(formula("transpose", [name]), shape[::-1], _apply("transpose",
                                                                                 value)))
    return forms


def _products(shapes: Mapping[str, Shape], x: str, y: str, target: Shape
              ) -> list[list[str]]:
    """The distinct products of ``x`` and ``y`` (each as it is or transposed, in either
    order, by each bilinear operator) that have the shape ``target``: groups of formulas
    equal on every value (``g @ W^T`` and ``W @ g`` for a vector ``g`` are one)."""
    rng = np.random.default_rng(0)
    values = {n: rng.normal(size=shapes[n]) for n in (x, y)}
    groups: list[tuple[list[str], np.ndarray]] = []
    for a, b in itertools.product(_forms(x, shapes[x], values[x]),
                                  _forms(y, shapes[y], values[y])):
        for left, right in ((a, b), (b, a)):
            for op in BILINEAR:
                try:
                    shape = ops.OPS[op].shape_rule(left.shape, right.shape)
                except ShapeError:
                    continue
                if shape != target:
                    continue
                value = _apply(op, left.value, right.value)
                text = formula(op, [left.text, right.text])
                same = next((grp for grp, val in groups
                             if entrywise_agreement(value, val, rtol=1e-5, atol=1e-8)), None)
                if same is None:
                    groups.append(([text], value))
                else:
                    same.append(text)
    return [texts for texts, _ in groups]


def _generic_shapes(d: Define, shapes: Mapping[str, Shape]) -> dict[str, Shape] | None:
    """The shapes of ``d``'s operands and result with every size that may differ made
    different (the table's shape rule says which must match): what "with unequal sizes"
    means. None when the rule accepts no such sizes."""
    operands = list(dict.fromkeys(d.variables()))
    axes = [(a, k) for a in operands for k in range(len(shapes[a]))]
    classes: dict[int, list[tuple[str, int]]] = {}
    for a, k in axes:
        classes.setdefault(shapes[a][k], []).append((a, k))
    options = [list(_partitions(members)) for members in classes.values()]
    tried = sorted(itertools.product(*options), key=lambda c: -sum(len(p) for p in c))
    rule = ops.OPS[str(d.op)].shape_rule
    for choice in tried:
        size: dict[tuple[str, int], int] = {}
        blocks = [block for partition in choice for block in partition]
        for prime, block in zip(PRIMES, blocks, strict=False):
            for axis in block:
                size[axis] = prime
        if len(size) != len(axes):
            continue
        generic = {a: tuple(size[(a, k)] for k in range(len(shapes[a]))) for a in operands}
        try:
            generic[d.target] = rule(*(generic[a] if isinstance(a, str) else ()
                                       for a in d.args))
        except ShapeError:
            continue
        return generic
    return None


def _partitions(items: list[tuple[str, int]]) -> Iterator[list[list[tuple[str, int]]]]:
    """Every way to split ``items`` into groups."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for partition in _partitions(rest):
        yield [[first], *partition]
        for i in range(len(partition)):
            yield [*partition[:i], [first, *partition[i]], *partition[i + 1:]]


def _leaves(tree: Tree) -> Iterator[Ref]:
    if isinstance(tree, tuple):
        for a in tree[1]:
            yield from _leaves(a)
    else:
        yield tree


def _nodes(tree: Tree) -> Iterator[tuple[str, tuple[Tree, ...]]]:
    if isinstance(tree, tuple):
        yield tree
        for a in tree[1]:
            yield from _nodes(a)


def emitted_tree(e: LineEmitter, ref: Ref | Tmp) -> Tree:
    """What an emitter computed for ``ref``, as one expression."""
    if isinstance(ref, Tmp):
        op, args, _ = e.instrs[ref.index]
        return op, tuple(emitted_tree(e, a) for a in args)
    return ref


def defined_tree(defs: Mapping[str, Define], name: str, base: str) -> Tree:
    """The definition of ``name`` as one expression, its temporaries (``base:k``) written
    in, as :func:`emitted_tree` gives the emitter's."""
    d = defs[name]

    def arg(a: Ref) -> Tree:
        if isinstance(a, str) and a.rsplit(":", 1)[0] == base and ":" in a and a in defs:
            return defined_tree(defs, a, base)
        return a

    if d.op is None:
        return arg(d.args[0])
    return d.op, tuple(arg(a) for a in d.args)
