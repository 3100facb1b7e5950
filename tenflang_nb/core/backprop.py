"""The compile phase: a shape :class:`Program` -> its Gradient Computing Program (GCP).

For each variable ``v`` in reverse topological order the GCP defines the adjoint ``d/L/d/v``
as the SUM over every use of ``v`` (fan-out, and the same operand twice in one line) of
``d/L/d/p * d/p/d/v``, then the local partials ``d/v/d/m`` of ``v``'s own operands. Operators
that are not elementwise contribute vector-Jacobian products instead (see ``ops.py``).
Every emitted line records the shape-program line it derives from (its provenance).

The machinery that writes a derived program is shared with forward mode (``forward.py``):
:class:`LineEmitter` (derivative rules emit through it; it folds constants and identities),
:class:`Writer` (names, declarations, provenance), :func:`write_forward_pass`,
:func:`local_partial`, :func:`line_vjp`, :func:`describe_line` and :func:`check_loss`.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import numpy as np

from . import ops
from .errors import Diagnostic, TenFlangError
from .graph import DataFlowGraph
from .guard import allow
from .lexical import GIVEN_KINDS, adjoint_name, temp_name
from .ops import Const, Ref, Shape
from .perf import gc_paused
from .program import Program, parse
from .syntax import Comment, Declare, Define, Statement


@dataclass(slots=True)
class GcpLine:
    statement: Statement
    origin: int  # line of the shape program this line derives from (0: none)
    # "header", "forward" or "backward"; a forward-mode program has "partials" and "tangent"
    # where a GCP has "backward"
    section: str


@dataclass
class Gcp:
    """A generated Gradient Computing Program and where each of its lines came from: the
    ``shape_program`` it was compiled from, its ``lines``, and their ``text``."""

    shape_program: Program
    loss: str
    weights: list[str]
    full: bool
    lines: list[GcpLine] = field(default_factory=list)

    @property
    def shape(self) -> Program:
        """The shape program (the public name of ``shape_program``)."""
        return self.shape_program

    @property
    def text(self) -> str:
        return "".join(f"{line.statement}\n" for line in self.lines)

    def program(self) -> Program:
        """The GCP as a checked :class:`Program` (line numbers are those of ``text``)."""
        return parse(self.text, f"<GCP of {self.shape_program.file}>")

    def gradient_names(self) -> dict[str, str]:
        """Weight name -> name of its gradient output in the GCP."""
        return {w: adjoint_name(self.loss, w) for w in self.weights}

    def provenance(self) -> list[int]:
        """For each GCP text line (from 1), the shape-program line it derives from (0: none)."""
        return [line.origin for line in self.lines]


class Tmp:
    """A line a :class:`LineEmitter` holds, not yet named (the ``index``-th it emitted)."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class LineEmitter:
    """Collects the lines computing one named quantity; folds constants as it goes.

    >>> e = LineEmitter({"x": ()})
    >>> e("mul", "x", Const.of(1)), e("add", Const.of(2), Const.of(3))
    ('x', Const(value=5.0, text='5'))
    """

    def __init__(self, shapes: dict[str, Shape]) -> None:
        self.shapes = shapes
        self.instrs: list[tuple[str, tuple[Ref | Tmp, ...], Shape]] = []

    def shape(self, ref: Ref | Tmp) -> Shape:
        if isinstance(ref, Tmp):
            return self.instrs[ref.index][2]
        if isinstance(ref, Const):
            return ()
        return self.shapes[ref]

    def __call__(self, name: str, *args: Ref | Tmp) -> Ref | Tmp:  # type: ignore[override]
        folded = fold(name, args)
        if folded is not None:
            return folded
        self.instrs.append((name, args, self.result_shape(name, args)))
        return Tmp(len(self.instrs) - 1)

    def result_shape(self, name: str, args: tuple[Ref | Tmp, ...]) -> Shape:
        """The per-example shape of ``name args`` (the operator's shape rule)."""
        return ops.OPS[name].shape_rule(*(self.shape(a) for a in args))

    def towards(self, name: str) -> None:
        """The lines emitted next are on the way to ``name`` (forward mode names the lines it
        hoists after it; here, nothing to do)."""


def fold(name: str, args: tuple[Ref | Tmp, ...]) -> Ref | Tmp | None:
    """What ``name args`` is without a line: a constant, or the operand an identity keeps
    (``mul x 1`` is ``x``); None when it needs a line."""
    # identities keep the GCP readable; constants are scalars, so never change a shape
    if all(isinstance(a, Const) for a in args) and ops.OPS[name].elementwise:
        result = float(ops.value(name, *(a.value for a in args)))  # type: ignore[union-attr]
        return Const.of(result) if np.isfinite(result) else None
    consts = tuple(a.value if isinstance(a, Const) else None for a in args)
    keep = ops.identity_operand(name, consts)
    return None if keep is None else args[keep]


class Writer:
    """Writes a derived program's lines (with provenance), names its temporaries."""

    def __init__(self, loss: str, shapes: dict[str, Shape], section: str = "backward") -> None:
        allow("the package's compiler")  # every compiler writes with a Writer
        self.loss = loss
        self.shapes = shapes
        self.section = section  # of the lines added without one
        self.lines: list[GcpLine] = []
        self.counters: dict[str, int] = {}

    def fork(self, section: str | None = None) -> Writer:
        """A writer of another block of lines, sharing names and shapes with this one."""
        other = Writer(self.loss, self.shapes, section or self.section)
        other.counters = self.counters
        return other

    def add(self, statement: Statement, origin: int, section: str | None = None) -> None:
        self.lines.append(GcpLine(statement, origin, section or self.section))

    def fresh(self, base: str) -> str:
        k = self.counters.get(base, 0)
        self.counters[base] = k + 1
        return temp_name(base, k)

    def declare(self, kind: str, name: str, shape: Shape, origin: int) -> None:
        self.shapes[name] = shape
        self.add(Declare(kind, name, shape or None), origin)

    def zero_gradient(self, w: str, origin: int) -> None:
        """The output ``d/L/d/w`` = 0, of ``w``'s shape: a weight the loss does not change with."""
        e = LineEmitter(self.shapes)
        self.emit(adjoint_name(self.loss, w), e, ops.zeros_like(e, w), origin, kind="output")

    def emit(self, base: str, e: LineEmitter, result: Ref | Tmp, origin: int,
             kind: str = "intvar", name: str | None = None) -> str:
        """Write the emitter's lines; the last one (the result) is named ``name or base``."""
        target = name or base
        names: dict[int, str] = {}
        last = result.index if isinstance(result, Tmp) else -1

        def ref(a: Ref | Tmp) -> Ref:
            return names[a.index] if isinstance(a, Tmp) else a

        for i, (op, args, shape) in enumerate(e.instrs):
            if i == last:
                continue
            names[i] = self.fresh(base)
            self.declare("intvar", names[i], shape, origin)
            self.add(Define(names[i], op, tuple(ref(a) for a in args)), origin)
        if isinstance(result, Tmp):
            op, args, shape = e.instrs[last]
            self.declare(kind, target, shape, origin)
            self.add(Define(target, op, tuple(ref(a) for a in args)), origin)
        else:
            self.declare(kind, target, e.shape(result), origin)
            self.add(Define(target, None, (result,)), origin)
        return target


def compile_program(program: Program, full: bool = False) -> Gcp:
    """Differentiate a shape program: the GCP computing d(loss)/d(weight) for every weight.

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> from tenflang_nb.core.program import parse
    >>> gcp = compile_program(parse(SEED_EXAMPLE, "example_shape.tf"))
    >>> [l for l in gcp.text.splitlines() if l.startswith("define d/lambda/d/w")]
    ['define d/lambda/d/w = mul d/lambda/d/z d/z/d/w']
    """
    with gc_paused():
        return _compile(program, full)


def _compile(program: Program, full: bool) -> Gcp:
    loss = check_loss(program)
    graph = DataFlowGraph(program)
    topo = graph.topological_order([loss])  # ancestors of the loss, producers first
    position = {v: i for i, v in enumerate(reversed(topo))}
    weights = program.names("weight")
    ancestors = set(topo)
    if full:
        needed = ancestors
    else:
        needed = ancestors & graph.descendants([w for w in weights if w in ancestors])
    shapes = dict(program.shapes)
    out = Writer(loss, shapes)
    _forward(program, out, ancestors, full)

    origin_of = {n: d.src.line for n, d in program.decls.items()}
    origin_of.update({n: d.src.line for n, d in program.defs.items()})
    partial_name: dict[tuple[str, str], str] = {}  # (consumer, operand) -> local partial
    for v in reversed(topo):
        if v not in needed:
            continue
        origin = origin_of[v]
        out.add(Comment(describe_line(program, v)), origin)
        consumers = sorted((p for p in graph.consumers(v) if p in needed), key=position.get)
        if v == loss:
            if full:
                out.declare("intvar", adjoint_name(loss, loss), (), origin)
                out.add(Define(adjoint_name(loss, loss), None, (Const.of(1),)), origin)
        elif not (consumers == [loss] and partial_name.get((loss, v)) == adjoint_name(loss, v)):
            _adjoint(program, out, v, consumers, partial_name, origin)
        _local_partials(program, out, v, needed, graph, partial_name, origin)

    for w in weights:
        if w not in needed:
            origin = origin_of[w]
            out.add(Comment(f"weight {w} cannot affect {loss}: its gradient is 0"), origin)
            out.zero_gradient(w, origin)
    return Gcp(program, loss, weights, full, out.lines)


def check_loss(program: Program) -> str:
    """The loss of a shape program that can be differentiated (errors name every problem)."""
    loss = program.loss
    errors: list[Diagnostic] = []
    # d/a/d/b names belong to the compiler: d/L/d/<them> would not be a valid name, and a
    # user's d/L/d/w would clash with a generated one (e.g. compiling a GCP with --full)
    for name, decl in program.decls.items():
        if "/" in name:
            errors.append(decl.src.diag(
                f"'{name}' is a derivative name: a shape program cannot declare it", 2,
                hint="names with '/' are made by the compiler; is this file a GCP? "
                     "compile the shape program instead"))
    if loss not in program.defs:
        errors.append(program.decls[loss].src.diag(f"the loss '{loss}' is never defined", 2))
    for d in program.defs.values():
        for i, a in enumerate(d.args):
            if a == loss:
                errors.append(d.src.diag(
                    f"the loss '{loss}' cannot be used as an operand", d.operand_token(i),
                    hint="the loss must be the last value computed; use an intvar for "
                         "partial sums"))
    if errors:
        raise TenFlangError(errors)
    return loss


# Comment lines the compiler writes stay this short, so that whatever it writes reads back
# under the parser's line limit however many weights a program has.
COMMENT_WIDTH = 100


def _forward(program: Program, out: Writer, ancestors: set[str], full: bool) -> None:
    weights = program.names("weight")
    loss = program.loss
    header = [
        f"Gradient Computing Program generated by tfcompiler from {program_name(program)}",
        *wrap_comment(f"loss: {loss}; weights: {' '.join(weights) or '(none)'}"),
        *wrap_comment(f"outputs: {' '.join(adjoint_name(loss, w) for w in weights) or '(none)'}"),
    ]
    for text in header:
        out.add(Comment(text), 0, "header")
    write_forward_pass(program, out, ancestors, full)
    out.add(Comment(f"backward pass: adjoints d/{program.loss}/d/v, "
                    "loss first (reverse topological order)"), 0, "header")


def program_name(program: Program) -> str:
    """The shape program's file name, as a derived program's header names it."""
    return program.file.rsplit("/", 1)[-1]


def write_forward_pass(program: Program, out: Writer, keep: set[str], full: bool = False
                       ) -> None:
    """The shape program's lines that compute ``keep`` (all of them when ``full``), with
    inputs, expected outputs and weights declared ``input``, outputs ``intvar``."""
    out.add(Comment("forward pass: the shape program (inputs, expected outputs and weights "
                    "are inputs)"), 0, "header")
    for s in program.statements:
        if isinstance(s, Comment):
            continue
        if isinstance(s, Declare):
            if not (full or s.kind in GIVEN_KINDS or s.name in keep):
                continue
            kind = "input" if s.kind in GIVEN_KINDS else (
                "loss" if s.kind == "loss" else "intvar")
            shape = program.shapes[s.name]
            out.add(Declare(kind, s.name, shape or None), s.src.line, "forward")
        elif full or s.target in keep:
            out.add(Define(s.target, s.op, s.args), s.src.line, "forward")


def wrap_comment(text: str) -> list[str]:
    """A long header comment as several lines (continuations indented), breaking at spaces.

    >>> [len(line) for line in wrap_comment("outputs: " + " ".join(f"d/L/d/w{i}"
    ...                                                         for i in range(20)))]
    [98, 91, 11]
    """
    return textwrap.wrap(text, COMMENT_WIDTH, subsequent_indent="  ", break_long_words=False,
                         break_on_hyphens=False) or [text]


def describe_line(program: Program, v: str) -> str:
    """``line N: <the line defining v>`` (or declaring it), as the user wrote it."""
    d = program.defs.get(v)
    s: Statement = d if d is not None else program.decls[v]
    text = s.src.expansion or " ".join(s.src.tokens) or str(s)
    if len(text) > COMMENT_WIDTH:  # the block header names the line; the line is in the program
        text = text[:COMMENT_WIDTH - 3] + "..."
    return f"line {s.src.line}: {text}"


def _adjoint(program: Program, out: Writer, v: str, consumers: list[str],
             partial_name: dict[tuple[str, str], str], origin: int) -> None:
    loss = out.loss
    shapes = out.shapes
    e = LineEmitter(shapes)
    total: Ref | Tmp | None = None
    for p in consumers:
        d = program.defs[p]
        g: Ref = Const.of(1) if p == loss else adjoint_name(loss, p)
        op = ops.OPS[d.op] if d.op else None
        if op is None:  # a copy: d/p/d/v = 1
            term: Ref | Tmp = g
        elif op.partials is not None:
            partial = partial_name[(p, v)]
            term = e("mul", g, partial)
            if e.shape(term) != shapes[v]:
                term = e("sumto", term, v)
        else:
            term = line_vjp(e, d, v, g)
        total = term if total is None else e("add", total, term)
    assert total is not None
    kind = "output" if program.kind(v) == "weight" else "intvar"
    out.emit(adjoint_name(loss, v), e, total, origin, kind=kind)


def line_vjp(e: ops.Emitter, d: Define, m: str, g: Ref) -> Ref | Tmp:
    """The contribution of the line ``d`` (``v = op ...``, not elementwise) to the adjoint
    ``d/L/d/m`` of its operand ``m``, given ``g`` = ``d/L/d/v``: the operator's
    vector-Jacobian product, summed over the operands that are ``m`` (``matmul A A``)."""
    op = ops.OPS[str(d.op)]
    assert op.vjp is not None
    total: Ref | Tmp | None = None
    for i, a in enumerate(d.args):
        if a == m:
            term = op.vjp[i](e, g, *d.args, d.target)  # type: ignore[misc]
            total = term if total is None else e("add", total, term)
    assert total is not None
    return total


def _local_partials(program: Program, out: Writer, p: str, needed: set[str],
                    graph: DataFlowGraph, partial_name: dict[tuple[str, str], str],
                    origin: int) -> None:
    d = program.defs.get(p)
    if d is None or d.op is None or ops.OPS[d.op].partials is None:
        return
    loss = out.loss
    for m in dict.fromkeys(d.variables()):
        if m not in needed:
            continue
        e = LineEmitter(out.shapes)
        total = local_partial(e, d, m)
        base = adjoint_name(p, m)
        name = None
        kind = "intvar"
        if p == loss and [c for c in graph.consumers(m) if c in needed] != [loss]:
            # d/L/d/m is m's adjoint; this direct partial is only one of its terms
            name = out.fresh(base)
        elif p == loss and program.kind(m) == "weight":
            # this partial IS the weight's gradient d/L/d/m, so it is an output (the
            # original declared it an intvar, and gradient descent could not find it)
            kind = "output"
        partial_name[(p, m)] = out.emit(base, e, total, origin, kind=kind, name=name)


def local_partial(e: ops.Emitter, d: Define, m: str) -> Ref | Tmp:
    """The local partial ``d/v/d/m`` of the elementwise line ``d`` (``v = op ...``) with
    respect to its operand ``m``: for the same operand twice (``mul w w``), the sum of both
    operands' rules."""
    op = ops.OPS[str(d.op)]
    assert op.partials is not None
    total: Ref | Tmp | None = None
    for i, a in enumerate(d.args):
        if a == m:
            term = op.partials[i](e, *d.args, d.target)
            total = term if total is None else e("add", total, term)
    assert total is not None
    return total


__all__ = ["Gcp", "GcpLine", "LineEmitter", "Tmp", "Writer", "adjoint_name", "check_loss",
           "compile_program", "describe_line", "fold", "line_vjp", "local_partial",
           "wrap_comment", "write_forward_pass"]
