"""The Hessian-vector program: the GCP compiled again, forward mode over reverse mode.

The GCP is a TenFlang program, so it can be differentiated like any other. Its outputs are
the gradient ``g(w) = d/L/d/w``; the derivative of the gradient along a direction ``v`` (a
value for every weight, given as data) is the Hessian times ``v``: ``H v = d/de g(w + e v)``
at ``e = 0``. That is one forward-mode sweep over the GCP (see ``forward.py``) whose seed is
not one weight component but the whole direction: each weight's tangent is its part of
``v``, the input ``v/<w>``, and every GCP line the gradients need gets the tangent
``dv/<name>`` (the derivative of its value along ``v``) from its operands' tangents, with the
operator table's tangent rules. The tangents of the gradients, ``dv/d/L/d/w``, are the
outputs; their mean over the examples is ``H v`` for the mean loss, as the GCP's mean is its
gradient.

Why forward over reverse: reverse mode over the GCP would go backwards from ``g . v``
through the backward pass and then the forward pass, and on the digits network it builds
per-example outer products (about 12 times the GCP's cost, measured on a prototype); one
forward sweep over the GCP costs a small constant times the GCP
(``benchmarks/bench_hvp.py``).

The program is the GCP as ``tfcompiler`` writes it (only its first comment line differs, so
GCP line N is line N here too), then the tangent pass, each block headed by a comment naming
the GCP line it differentiates, as the GCP's blocks name the shape program's lines.

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.core.program import parse
>>> hvp = compile_hvp(parse(SEED_EXAMPLE, "example_shape.tf"))
>>> hvp.directions, hvp.hvp_names()
({'w': 'v/w'}, {'w': 'dv/d/lambda/d/w'})
>>> [l for l in hvp.text.splitlines() if l.startswith("define dv/z")]
['define dv/z = mul x v/w']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from . import ops
from .backprop import (
    COMMENT_WIDTH,
    Gcp,
    GcpLine,
    LineEmitter,
    Tmp,
    Writer,
    compile_program,
    fold,
    local_partial,
    program_name,
    wrap_comment,
)
from .errors import TenFlangError
from .forward import line_tangent
from .graph import DataFlowGraph
from .lexical import adjoint_name, direction_name, tangent_name
from .ops import Const, Ref, Shape
from .perf import gc_paused
from .program import Program, parse
from .syntax import Comment, Define

__all__ = ["HvpProgram", "compile_hvp"]


@dataclass
class HvpProgram(Gcp):
    """A Hessian-vector program: a :class:`Gcp` (the same loss and gradient outputs) that also
    takes a direction ``v/<w>`` for each weight and outputs ``dv/d/L/d/w``, the part of
    ``H v`` for ``w`` (averaged over examples, the Hessian of the mean loss times ``v``)."""

    directions: dict[str, str] = field(default_factory=dict)  # weight -> its input v/<w>
    gcp_lines: int = 0  # the first gcp_lines lines are the GCP's (the first one aside)

    def program(self) -> Program:
        """The program as a checked :class:`Program` (line numbers are those of ``text``)."""
        return parse(self.text, f"<HVP program of {self.shape.file}>")

    def hvp_names(self) -> dict[str, str]:
        """Weight name -> name of its part of H v in the program (``dv/d/L/d/w``)."""
        return {w: tangent_name(adjoint_name(self.loss, w)) for w in self.weights}


def compile_hvp(source: Program | Gcp) -> HvpProgram:
    """The Hessian-vector program of a shape program (or of its GCP, which is compiled
    again): forward mode over the GCP in the direction ``v/<w>`` (see the module's
    docstring)."""
    if isinstance(source, HvpProgram):  # its names dv/... would be made a second time
        raise TenFlangError.at("this is a Hessian-vector program already: compile the shape "
                               "program (or its GCP)", file=source.shape.file)
    with gc_paused():
        gcp = source if isinstance(source, Gcp) else compile_program(source)
        return _Compiler(gcp).compile()


class _Compiler:
    def __init__(self, gcp: Gcp) -> None:
        self.gcp = gcp
        self.program = gcp.program()  # line N of the GCP's text is line N here
        self.loss = gcp.loss
        self.gradients = {w: adjoint_name(gcp.loss, w) for w in gcp.weights}
        # a tangent for what the weights change on the way to a gradient: nothing else
        # differs from 0 along v, or is used by a gradient
        self.needed = (_differentiable_ancestors(self.program, self.gradients.values())
                       & DataFlowGraph(self.program).descendants(gcp.weights))
        self.out = Writer(self.loss, dict(self.program.shapes), "tangent")
        # a tangent's temporaries are dv/<name>:<k>, and so is the tangent of the GCP's own
        # temporary <name>:<k>: number them after the GCP's, so no two names clash
        for n in self.program.decls:
            base, colon, k = n.rpartition(":")
            if colon:
                key = tangent_name(base)
                self.out.counters[key] = max(self.out.counters.get(key, 0), int(k) + 1)
        # what the GCP computes, by operator and operands: a tangent rule that needs the same
        # (a local partial of the forward pass, logsoftmax's exp) uses the GCP's line
        self.computed: dict[tuple[str, tuple[str | float, ...]], str] = {}
        for d in self.program.definitions():
            if d.op is not None:
                self.computed.setdefault((d.op, _key(d.args)), d.target)
        self.tangent: dict[str, Ref] = {}

    def compile(self) -> HvpProgram:
        gcp, out = self.gcp, self.out
        first = GcpLine(Comment(
            f"Hessian-vector program generated by tfcompiler --hvp from "
            f"{program_name(gcp.shape)}: its GCP, then H v"), 0, "header")
        self._header()
        shape_decls = gcp.shape.decls
        for w in gcp.weights:
            v = direction_name(w)
            out.declare("input", v, self.program.shapes[w], shape_decls[w].src.line)
            self.tangent[w] = v
        for d in self.program.definitions():
            if d.target in self.needed and d.target not in self.tangent:
                self._line(d)
        for w, g in self.gradients.items():
            if g not in self.tangent:
                origin = shape_decls[w].src.line
                out.add(Comment(f"{g} does not change along v (no weight changes it): its "
                                "derivative is 0"), origin)
                e = LineEmitter(out.shapes)
                out.emit(tangent_name(g), e, ops.zeros_like(e, g), origin, kind="output")
        lines = [first, *gcp.lines[1:], *out.lines]
        return HvpProgram(gcp.shape, gcp.loss, gcp.weights, gcp.full, lines,
                          {w: direction_name(w) for w in gcp.weights}, len(gcp.lines))

    def _header(self) -> None:
        out = self.out
        texts = [
            "H v, the Hessian times a direction v: forward mode over the GCP above. The "
            "direction is data, v/<w> for each weight w; dv/<name> is the derivative along v "
            "of the GCP value <name> (dv/<w> = v/<w>), for the values a weight changes on the "
            "way to a gradient; each block is headed by the GCP line it differentiates",
            "outputs: " + (" ".join(tangent_name(g) for g in self.gradients.values())
                           + " (averaged over the examples: H v, H the Hessian of the mean "
                             "loss)" if self.gradients else "(none)"),
        ]
        for text in texts:
            for line in wrap_comment(text):
                out.add(Comment(line), 0, "header")

    def _line(self, d: Define) -> None:
        """The tangent of one GCP line, if any of its operands changes along v."""
        out = self.out
        e = _Reusing(out.shapes, self.computed)
        result = line_tangent(e, d, self.tangent, lambda m: local_partial(e, d, m))
        if result is None:
            return
        line = d.src.line
        origin = self.gcp.lines[line - 1].origin
        text = f"GCP line {line}: {d}"
        if len(text) > COMMENT_WIDTH:
            text = text[:COMMENT_WIDTH - 3] + "..."
        out.add(Comment(text), origin)
        name = tangent_name(d.target)
        kind = "output" if d.target in self.gradients.values() else "intvar"
        self.tangent[d.target] = out.emit(name, e, result, origin, kind=kind, name=name)


def _differentiable_ancestors(program: Program, names: Iterable[str]) -> set[str]:
    """What ``names`` depend on through operands that change their value: not through one
    that only gives a shape (``broadcast g ylogp`` changes with ``g``, not with ``ylogp``)."""
    seen = set(names)
    stack = list(seen)
    while stack:
        d = program.defs.get(stack.pop())
        if d is None:
            continue
        fixed = ops.OPS[d.op].constant_in if d.op is not None else ()
        for i, a in enumerate(d.args):
            if isinstance(a, str) and i not in fixed and a not in seen:
                seen.add(a)
                stack.append(a)
    return seen


def _key(args: tuple[Ref | Tmp, ...]) -> tuple[str | float, ...]:
    return tuple(a.value if isinstance(a, Const) else a for a in args)  # type: ignore[misc]


class _Reusing(LineEmitter):
    """An emitter that names, instead of a new line, the GCP's line computing the same."""

    def __init__(self, shapes: dict[str, Shape],
                 computed: dict[tuple[str, tuple[str | float, ...]], str]) -> None:
        super().__init__(shapes)
        self.computed = computed

    def __call__(self, name: str, *args: Ref | Tmp) -> Ref | Tmp:  # type: ignore[override]
        if fold(name, args) is None and not any(isinstance(a, Tmp) for a in args):
            found = self.computed.get((name, _key(args)))
            if found is not None:
                return found
        return super().__call__(name, *args)
