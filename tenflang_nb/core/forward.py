"""Forward mode: a shape :class:`Program` -> its forward-mode (tangent) program.

Where the GCP (``backprop.py``) goes backwards once, from the loss to every weight, the
forward-mode program goes forwards once per weight component: a *sweep*. The sweep for a
weight ``w`` starts from the seed ``d/w/d/w = 1`` and carries, in topological order, the
*tangent* ``d/v/d/w`` (the total derivative dv/dw) of every variable on the way from ``w`` to
the loss; the loss's tangent ``d/L/d/w`` is the gradient, the same output the GCP computes. A
tensor weight has one sweep per component: ``W1 [64, 32]`` has 2,048, whose tangents are
named ``d/v/d/W1.0.0`` ... ``d/v/d/W1.63.31`` and whose seeds are ``onehot W1 k`` (1 at the
component, 0 elsewhere); ``d/L/d/W1`` is assembled from them as the sum of each component's
derivative times its seed.

Tangent rules come from the operator table: an elementwise line ``v = op a b`` has the tangent
``d/v/d/a * d/a/d/w + d/v/d/b * d/b/d/w``, with the local partials the GCP uses; every other
operator gives its Jacobian-vector product (``Op.jvp``; for an operator linear in the
operand, the operator applied to the tangent), both in :func:`line_tangent`. Whatever does not
depend on the sweep (the local partials, the softmax inside ``logsumexp``'s rule) is computed
once, before the sweeps, and shared by all of them. Lines are written with the GCP's own machinery
(``backprop.LineEmitter`` folds constants and identities, ``backprop.Writer`` names and
declares), each block headed by the shape-program line it differentiates.

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.core.program import parse
>>> fp = compile_forward(parse(SEED_EXAMPLE, "example_shape.tf"))
>>> [l for l in fp.text.splitlines() if l.startswith("define d/lambda/d/w")]
['define d/lambda/d/w = mul d/lambda/d/diff d/diff/d/w']
>>> fp.sweeps
[Sweep(weight='w', index=(), label='w')]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from . import ops
from .backprop import (
    Gcp,
    LineEmitter,
    Tmp,
    Writer,
    adjoint_name,
    check_loss,
    describe_line,
    fold,
    local_partial,
    program_name,
    wrap_comment,
    write_forward_pass,
)
from .graph import DataFlowGraph
from .lexical import derived_stem, is_digits
from .ops import Const, Ref, Shape
from .perf import gc_paused
from .program import Program, parse
from .syntax import Comment, Define

__all__ = ["ForwardProgram", "Sweep", "compile_forward", "line_tangent", "sweeps_of"]


@dataclass(frozen=True, slots=True)
class Sweep:
    """One forward sweep: the derivative of everything with respect to one weight component.

    >>> Sweep("W1", (3, 5), "W1.3.5").component
    'W1[3, 5]'
    """

    weight: str
    index: tuple[int, ...]  # the component; () for a scalar weight
    label: str  # the tangents of this sweep are named d/<v>/d/<label>

    @property
    def component(self) -> str:
        """The component as a student writes it: ``w`` or ``W1[3, 5]``."""
        if not self.index:
            return self.weight
        return f"{self.weight}[{', '.join(map(str, self.index))}]"


@dataclass
class ForwardProgram(Gcp):
    """A forward-mode program: a :class:`Gcp` (same outputs ``d/L/d/w``, same provenance)
    computed by one sweep per weight component instead of one backward pass.

    ``sweeps`` are the sweeps it runs and ``sweep_lines`` the lines with an operator each
    runs (its tangents, and its share of assembling ``d/L/d/W``). A *sample*
    (``compile_forward(program, sample=k)``: ``total_sweeps`` is more than ``len(sweeps)``)
    runs only the first few sweeps of each weight, to measure what the whole program costs
    without building it: its gradients add up the sampled components only.
    """

    sweeps: list[Sweep] = field(default_factory=list)
    sweep_lines: list[int] = field(default_factory=list)
    total_sweeps: int = 0  # the sweeps of the whole program (0: as many as it runs)

    def __post_init__(self) -> None:
        self.total_sweeps = self.total_sweeps or len(self.sweeps)

    @property
    def sampled(self) -> bool:
        """Whether it runs only a sample of the sweeps (see the class)."""
        return self.total_sweeps > len(self.sweeps)

    def program(self) -> Program:
        """The program as a checked :class:`Program` (line numbers are those of ``text``)."""
        return parse(self.text, f"<forward-mode program of {self.shape.file}>")


def sweeps_of(program: Program, weights: list[str], first: Mapping[str, int] | None = None
              ) -> list[Sweep]:
    """One sweep per component of each weight, labelled so no tangent name can clash;
    ``first``: only the first so many sweeps of the weights it names (a sample), found
    without going through the others (a 1500 x 1500 weight has 2,250,000).

    A component of ``W`` is labelled ``W.i.j``; should the program declare such a name
    itself, ``W_.i.j`` (and so on) instead. A label stays within the longest name a program
    may use (the weight's name is cut short if need be).

    >>> from tenflang_nb.core.program import parse
    >>> p = parse("declare weight W [1, 2]\\ndeclare weight b\\ndeclare weight W.0.1\\n")
    >>> [s.label for s in sweeps_of(p, ["W", "b"])]
    ['W_.0.0', 'W_.0.1', 'b']
    """
    taken: list[tuple[str, Shape]] = [(name, ()) for name in program.decls]
    sweeps: list[Sweep] = []
    for w in weights:
        shape = program.shapes[w]
        if not shape:
            sweeps.append(Sweep(w, (), w))
            continue
        longest = 1 + len(".".join(str(d - 1) for d in shape))  # the last index's suffix
        base = derived_stem(w, longest, lambda stem, shape=shape: not any(
            _labels_meet((stem, shape), other) for other in taken))
        taken.append((base, shape))
        count = min((first or {}).get(w, math.prod(shape)), math.prod(shape))
        sweeps.extend(Sweep(w, i, f"{base}.{'.'.join(map(str, i))}")
                      for i in itertools.islice(np.ndindex(shape), count))
    return sweeps


def _labels_meet(a: tuple[str, Shape], b: tuple[str, Shape]) -> bool:
    """Whether two families of labels ``base.i.j`` (a name: its shape ``()``, the name its
    only label) share a label: both are ``base.<index>``, one base possibly carrying the
    first parts of the other's index.

    >>> _labels_meet(("W", (2, 3)), ("W.1", (3,))), _labels_meet(("W", (2, 3)), ("W.2", (3,)))
    (True, False)
    >>> _labels_meet(("W", (2,)), ("W.1", ())), _labels_meet(("W", (2,)), ("W.01", ()))
    (True, False)
    """
    (short, short_shape), (long, long_shape) = sorted((a, b), key=lambda f: len(f[0]))
    if short == long:  # index 0 is common to any two shapes of one rank
        return len(short_shape) == len(long_shape) and bool(short_shape)
    if not short_shape or not long.startswith(short + "."):
        return False
    parts = long[len(short) + 1:].split(".")  # the first parts of an index of short_shape
    return (len(short_shape) == len(parts) + len(long_shape)
            and all(is_digits(p) and str(int(p)) == p and int(p) < d
                    for p, d in zip(parts, short_shape, strict=False)))


def compile_forward(program: Program, *, sample: int | None = None) -> ForwardProgram:
    """The forward-mode program of a shape program: ``d/L/d/w`` for every weight, one sweep
    per weight component (see the module's docstring). ``sample``: a program for measuring
    (see :class:`ForwardProgram`) that runs about ``sample`` sweeps in all: the first of each
    weight, as many as its share of all the sweeps (three at least).

    >>> from tenflang_nb.core.program import parse
    >>> p = parse("declare input x [5]\\ndeclare weight W [5]\\ndeclare loss L\\n"
    ...           "define L = matmul x W\\n")
    >>> f = compile_forward(p, sample=2)
    >>> [s.label for s in f.sweeps], f.total_sweeps, f.sampled, f.sweep_lines
    (['W.0', 'W.1', 'W.2'], 5, True, [3, 4, 4])
    """
    if sample is not None and sample < 1:
        raise ValueError(f"sample: at least 1 sweep per weight, not {sample}")
    with gc_paused():
        return _Compiler(program, sample).compile()


@dataclass(frozen=True)
class _SweepConst(Const):
    """A tangent that is a constant: a scalar weight's seed ``d/w/d/w = 1``, and what folds
    from it (``mul -1 1``). Written as a number, but a value of the sweep: a line that uses
    it stays in the sweep rather than being hoisted into the shared lines."""


SEED = _SweepConst(1.0, "1")


class _SweepEmitter(LineEmitter):
    """The emitter a tangent rule gets: lines that do not depend on the sweep are hoisted
    into the shared block of the shape line (computed once, before every sweep)."""

    def __init__(self, compiler: _Compiler, v: str) -> None:
        super().__init__(compiler.shapes)
        self.compiler = compiler
        self.v = v
        self.base = adjoint_name(v, v)  # a hoisted line's name: d/v/d/<operand>:k

    def __call__(self, name: str, *args: Ref | Tmp) -> Ref | Tmp:  # type: ignore[override]
        folded = fold(name, args)
        if isinstance(folded, Const) and any(isinstance(a, _SweepConst) for a in args):
            return _SweepConst(folded.value, folded.text)
        if folded is not None:
            return folded
        if all(self.compiler.shared(a) for a in args):
            return self.compiler.hoist(self.v, self.base, name, args,  # type: ignore[arg-type]
                                       self.result_shape(name, args))
        return super().__call__(name, *args)

    def towards(self, name: str) -> None:
        self.base = adjoint_name(self.v, name)


class _Compiler:
    def __init__(self, program: Program, sample: int | None = None) -> None:
        self.program = program
        self.sample = sample
        self.loss = check_loss(program)
        self.graph = DataFlowGraph(program)
        self.topo = self.graph.topological_order([self.loss])  # producers first
        self.ancestors = set(self.topo)
        self.shapes: dict[str, Shape] = dict(program.shapes)
        # the program's three parts: its head (header comments, forward pass), the shared
        # blocks of lines that no sweep changes, one per shape line, and the sweeps
        self.head = Writer(self.loss, self.shapes, "header")
        self.tangents = self.head.fork("tangent")
        self.blocks: dict[str, Writer] = {}  # v -> its shared lines (local partials...)
        self.partial_refs: dict[tuple[str, str], Ref] = {}  # (v, operand) -> d/v/d/operand
        self.hoisted: dict[tuple[str, str, tuple[Ref, ...]], str] = {}
        self.current: set[str] = set()  # names of the running sweep's tangents
        self.reach: dict[str, set[str]] = {}  # weight -> variables it changes
        self.origin = {n: d.src.line for n, d in program.decls.items()}
        self.origin.update({n: d.src.line for n, d in program.defs.items()})

    # ------------------------------------------------------------------ the program

    def compile(self) -> ForwardProgram:
        program, loss = self.program, self.loss
        weights = program.names("weight")
        live = [w for w in weights if w in self.ancestors]
        counts = {w: math.prod(program.shapes[w]) for w in live}
        every = sum(counts.values())
        share = None
        if self.sample is not None and self.sample < every:
            # about ``sample`` in all, each weight's share in proportion to its sweeps, and
            # three at least: the first, the last and one between are unlike each other (the
            # gradient's sum starts, goes on, ends), every later one is like the one between
            share = {w: min(n, max(3, round(self.sample * n / every)))
                     for w, n in counts.items()}
        sweeps = sweeps_of(program, live, share)
        self.sweep_lines: list[int] = []
        self._header(weights, every, len(sweeps))
        write_forward_pass(program, self.head, self.ancestors)
        for w in live:
            self.reach[w] = self.graph.descendants([w]) & self.ancestors
        done = 0
        for w in live:
            mine = [s for s in sweeps if s.weight == w]
            self._weight(w, mine, done, len(sweeps))
            done += len(mine)
        for w in weights:
            if w not in self.ancestors:
                origin = self.origin[w]
                self.tangents.add(Comment(f"weight {w} cannot affect {loss}: its gradient "
                                          "is 0 (no sweep)"), origin)
                self.tangents.zero_gradient(w, origin)
        if self.blocks:
            self.head.add(Comment("local partials d/v/d/a of each line, and what else does not "
                                 "depend on the weight: computed once, used by every sweep"), 0)
        lines = list(self.head.lines)
        for v in self.topo:  # producers first: a block reads only blocks above it
            if v in self.blocks:
                lines += self.blocks[v].lines
        lines += self.tangents.lines
        return ForwardProgram(program, loss, weights, False, lines, sweeps, self.sweep_lines,
                              every)

    def _header(self, weights: list[str], n_sweeps: int, written: int) -> None:
        loss = self.loss
        sample = (f"a sample of {written:,} of its {n_sweeps:,} sweeps, the first of each "
                  "weight, for measuring: the gradients add up only the sampled components"
                  ) if written < n_sweeps else (
                  f"{n_sweeps:,} sweep{'s' * (n_sweeps != 1)}, one per weight component")
        for text in (
            "Forward-mode program generated by tfcompiler --forward from "
            f"{program_name(self.program)}",
            *wrap_comment(f"loss: {loss}; weights: {' '.join(weights) or '(none)'}; "
                          f"{sample}"),
            *wrap_comment(f"outputs: {' '.join(adjoint_name(loss, w) for w in weights)}"
                          if weights else "outputs: (none)"),
        ):
            self.head.add(Comment(text), 0)

    # ------------------------------------------------------------------ sweeps

    def _weight(self, w: str, sweeps: list[Sweep], done: int, total: int) -> None:
        """Every sweep of weight ``w``; a tensor's gradient is assembled as they go."""
        loss, out = self.loss, self.tangents
        origin = self.origin[w]
        order = [v for v in self.topo if v in self.reach[w] and v != w]
        acc: str | None = None
        for k, sweep in enumerate(sweeps):
            start = len(out.lines)
            result = self._sweep(sweep, order, done + k + 1, total)
            if not sweep.index and result is None:
                out.add(Comment(f"{loss} does not change with {w}: its gradient is 0"), origin)
                out.zero_gradient(w, origin)
            elif sweep.index and result is not None:
                acc = self._assemble(sweep, result, acc, k == len(sweeps) - 1, len(sweeps))
            # (no result for a component: none changes the loss, the same lines in each sweep)
            self.sweep_lines.append(sum(isinstance(line.statement, Define)
                                        and line.statement.op is not None
                                        for line in out.lines[start:]))
        if sweeps[0].index and acc is None:
            out.add(Comment(f"{loss} does not change with {w}: its gradient is 0"), origin)
            out.zero_gradient(w, origin)

    def _assemble(self, sweep: Sweep, result: Ref, acc: str | None, last: bool,
                  count: int) -> str:
        """Add a tensor component's term to ``d/L/d/W``: the sum so far, or the output."""
        loss, out, w = self.loss, self.tangents, sweep.weight
        origin = self.origin[w]
        gradient = adjoint_name(loss, w)
        seed = adjoint_name(w, sweep.label)
        stem = sweep.label.rsplit(".", len(sweep.index))[0]  # W, or W_ when moved aside
        what = (f"the sum over its {count:,} components of "
                f"d/{loss}/d/{stem}.<i> * d/{w}/d/{stem}.<i>" if last else
                f"so far, + {result} * {seed}")
        out.add(Comment(f"{gradient}: {what}"), origin)
        e = LineEmitter(self.shapes)
        term_ref = e("mul", result, seed)
        if acc is not None:
            term = out.emit(gradient, e, term_ref, origin, name=out.fresh(gradient))
            e = LineEmitter(self.shapes)
            term_ref = e("add", acc, term)
        return out.emit(gradient, e, term_ref, origin, kind="output" if last else "intvar",
                        name=gradient if last else out.fresh(gradient))

    def _sweep(self, sweep: Sweep, order: list[str], number: int, total: int) -> Ref | None:
        """Write one sweep; the loss's tangent (None: the loss does not change)."""
        program, loss, out = self.program, self.loss, self.tangents
        w, label = sweep.weight, sweep.label
        origin = self.origin[w]
        self.current = set()
        tangent: dict[str, Ref] = {}
        what = f"weight {w}" if not sweep.index else sweep.component
        if not sweep.index:
            out.add(Comment(f"sweep {number:,} of {total:,} ({what}): d/v/d/{label} for every "
                            f"v from {w} to {loss}, from the seed d/{w}/d/{w} = 1"), origin)
            tangent[w] = SEED
        else:
            seed = adjoint_name(w, label)
            out.add(Comment(f"sweep {number:,} of {total:,} ({what}): d/v/d/{label} for every "
                            f"v from {w} to {loss}, from the seed {seed}: 1 at {what}"),
                    origin)
            flat = int(np.ravel_multi_index(sweep.index, self.shapes[w]))
            out.declare("intvar", seed, self.shapes[w], origin)
            out.add(Define(seed, "onehot", (w, Const.of(flat))), origin)
            tangent[w] = seed
            self.current.add(seed)
        for v in order:
            e = _SweepEmitter(self, v)
            result = line_tangent(e, program.defs[v], tangent, lambda m, v=v: self.partial(v, m))
            if result is None:
                continue  # v does not change with this component
            name = adjoint_name(v, label)
            line = describe_line(program, v)
            if result == name:  # the tangent IS the shared local partial of that name
                out.add(Comment(f"{line} -- {name} is its local partial, above"),
                        self.origin[v])
                tangent[v] = name
                self.current.add(name)
                continue
            out.add(Comment(line), self.origin[v])
            kind = "output" if v == loss and not sweep.index else "intvar"
            tangent[v] = out.emit(name, e, result, self.origin[v], kind=kind, name=name)
            self.current.add(name)
        return tangent.get(loss)

    # ------------------------------------------------------------------ shared lines

    def shared(self, ref: Ref | Tmp) -> bool:
        """Does ``ref`` have the same value in every sweep?"""
        if isinstance(ref, Const):
            return not isinstance(ref, _SweepConst)
        return isinstance(ref, str) and ref not in self.current

    def _block(self, v: str) -> Writer:
        block = self.blocks.get(v)
        if block is None:
            block = self.blocks[v] = self.head.fork("partials")
            block.add(Comment(describe_line(self.program, v)), self.origin[v])
        return block

    def hoist(self, v: str, base: str, name: str, args: tuple[Ref, ...], shape: Shape) -> str:
        """A line that does not depend on the sweep, written once into ``v``'s shared block
        (only there: a later block may not be read by an earlier one)."""
        key = (v, name, args)
        found = self.hoisted.get(key)
        if found is None:
            block = self._block(v)
            found = block.fresh(base)
            block.declare("intvar", found, shape, self.origin[v])
            block.add(Define(found, name, args), self.origin[v])
            self.hoisted[key] = found
        return found

    def partial(self, v: str, m: str) -> Ref:
        """The local partial ``d/v/d/m`` (elementwise ``v``), written once when first needed.

        For a scalar weight ``m`` the name ``d/v/d/m`` is also the tangent of ``v`` in
        ``m``'s sweep. When that tangent is exactly this partial (no other operand of ``v``
        changes with ``m``), they are one line, an ``output`` if ``v`` is the loss; otherwise
        the partial takes a temporary's name.
        """
        key = (v, m)
        if key in self.partial_refs:
            return self.partial_refs[key]
        d = self.program.defs[v]
        e = LineEmitter(self.shapes)
        result = local_partial(e, d, m)
        if isinstance(result, Const):
            self.partial_refs[key] = result
            return result
        base = adjoint_name(v, m)
        name: str | None = None
        kind = "intvar"
        if self.program.kind(m) == "weight" and not self.shapes[m]:
            others = [a for a in d.variables() if a != m and a in self.reach[m]]
            if others or e.shape(result) != self.shapes[v]:
                name = self._block(v).fresh(base)
            elif v == self.loss:
                kind = "output"  # this partial IS the weight's gradient
        ref = self._block(v).emit(base, e, result, self.origin[v], kind=kind, name=name)
        self.partial_refs[key] = ref
        return ref


def line_tangent(e: LineEmitter, d: Define, tangent: Mapping[str, Ref],
                 partial: Callable[[str], Ref | Tmp]) -> Ref | Tmp | None:
    """The tangent of the line ``d`` (``v = op ...``) from its operands' ``tangent``s (None
    when none of them changes): ``d/v/d/a * d/a/d/w`` summed over the operands of an
    elementwise line, with ``partial(a)`` its local partial ``d/v/d/a``; the operator's
    Jacobian-vector products for any other. A local partial that is the constant 0 (``step``'s,
    ``sign``'s) contributes no term."""
    v = d.target
    total: Ref | Tmp | None = None
    if d.op is None:  # a copy: the same tangent
        a = d.args[0]
        return tangent.get(a) if isinstance(a, str) else None
    op = ops.OPS[d.op]
    if op.partials is not None:
        for m in dict.fromkeys(d.variables()):
            if m in tangent:
                e.towards(m)
                local = partial(m)
                if isinstance(local, Const) and local.value == 0:
                    continue
                term = e("mul", local, tangent[m])
                total = term if total is None else e("add", total, term)
    else:
        assert op.jvp is not None
        for i, a in enumerate(d.args):  # per operand position: matmul A A has two terms
            if isinstance(a, str) and a in tangent:
                e.towards(a)
                term = op.jvp[i](e, tangent[a], *d.args, v)  # type: ignore[misc]
                if term is not None:
                    total = term if total is None else e("add", total, term)
    if total is not None and e.shape(total) != e.shape(v):
        total = e("broadcast", total, v)  # a scalar's tangent, broadcast like the scalar
    return total
