"""Random shape programs and bindings for the differential test of the fused engine (issue 23).

Drawn from a seed with numpy (not hypothesis): a failure names its seed, and
``trial(seed).describe()`` prints the program, the GCP kind and the batch again. Each program
is built from *motifs* that cover what the engines' first random suite missed:

* values the same for every example (weights, and values computed from weights only:
  ``softmax l``, ``exp s``, ``mul w w``) used in elementwise lines beside per-example ones of
  the same size, after per-example lines that free scratch arrays of that size;
* layer norm with a gain and a bias, softmax mixtures, attention-like
  ``softmax(scores) x values``, residual layers, L2 penalties;
* every operator of the table (``ops.OPS_LIST``), with broadcasting of every kind.

A :class:`Trial` is one program bound for one run: its GCP kind (``reverse``, ``full``,
``forward`` or ``hvp``), a batch size around a block or chunk boundary (with the block and
chunk sizes to patch), NULL inputs, inputs given once for every example, the means and the
values the caller reads.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tenflang_nb.core import api
from tenflang_nb.core.formatting import fmt_shape
from tenflang_nb.core.forward import compile_forward
from tenflang_nb.core.program import Program, parse

Shape = tuple[int, ...]

UNARY = ("neg", "exp", "ln", "logistic", "tanh", "relu", "sqrt", "abs", "step", "sign", "lnz")
BINARY = ("add", "sub", "mul", "div", "pow")
ROW = ("sum", "mean", "logsumexp", "softmax", "logsoftmax")
OTHER = ("matmul", "transpose", "outer", "sumto", "broadcast", "onehot")
EXPONENTS = (2.0, 0.5, 1.0, -1.0, 3.0, 1.5)  # pow's constant exponents: fused ones and not
CONSTANTS = (2.0, -1.0, 0.5, 3.0, 1e-5, 0.0)
KINDS = ("reverse", "full", "forward", "hvp")
# special values in the data: NaN and infinities propagate, zeros of either sign, numbers
# whose exponentials overflow or underflow, a subnormal one. No huge finite ones: +-1e200 in a
# batch mean cancel exactly or not with the order and fusing of its terms (a mean of 25 on
# one engine, 1e182 on the other), which no two summation orders need share
SPECIAL = (np.nan, np.inf, -np.inf, 0.0, -0.0, 750.0, -750.0, 1e-310)


@dataclass
class _Var:
    shape: Shape
    shared: bool  # the same for every example (computed from weights only)
    positive: bool = False  # ln and sqrt take it (never NaN)
    risky: bool = False  # may be NaN (ln or sqrt of a negative number, ...)


class _Generator:
    """One shape program, motif after motif (see the module)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.vars: dict[str, _Var] = {}
        self.decls: list[str] = []
        self.body: list[str] = []
        self.used: Counter[str] = Counter()
        self.count = 0
        self.weights = 0
        self.inputs = 0

    # -- names

    def choice(self, items: Any) -> Any:
        return items[int(self.rng.integers(len(items)))]

    def declare(self, kind: str, name: str, shape: Shape, shared: bool,
                positive: bool = False) -> str:
        self.vars[name] = _Var(shape, shared, positive)
        self.decls.append(f"declare {kind} {name}" + (f" {fmt_shape(shape)}" if shape else ""))
        return name

    def weight(self, shape: Shape) -> str:
        self.weights += 1
        return self.declare("weight", f"w{self.weights}", shape, True)

    def input(self, shape: Shape) -> str:
        self.inputs += 1
        return self.declare("input", f"x{self.inputs}", shape, False)

    def define(self, op: str, *args: str, shape: Shape, positive: bool = False,
               kind: str | None = None) -> str:
        self.count += 1
        name = f"v{self.count}"
        operands = [self.vars[a] for a in args if a in self.vars]
        shared = all(v.shared for v in operands)
        # NaN where an operand may be, or where the operator leaves its domain
        risky = any(v.risky for v in operands) or (
            op in ("ln", "sqrt", "lnz", "pow") and not operands[0].positive) or (
            op == "div" and args[1] in self.vars and not self.vars[args[1]].positive)
        kind = kind or ("output" if self.rng.random() < 0.15 else "intvar")
        self.vars[name] = _Var(shape, shared, positive and not risky, risky)
        # declared at the top or just before its line; its shape written or inferred
        written = f" {fmt_shape(shape)}" if shape and self.rng.random() < 0.5 else ""
        (self.decls if self.rng.random() < 0.5 else self.body).append(
            f"declare {kind} {name}{written}")
        self.body.append(f"define {name} = {' '.join([op, *args])}")
        self.used.update(a for a in set(args) if a in self.vars)
        return name

    def pick(self, ok: Any = None, prefer: Any = None) -> str | None:
        """A variable satisfying ``ok``, an unused or ``prefer``red one most of the time."""
        names = [n for n, v in self.vars.items() if ok is None or ok(v)]
        if not names:
            return None
        better = [n for n in names if (prefer(self.vars[n]) if prefer else not self.used[n])]
        if better and self.rng.random() < 0.7:
            names = better
        weights = np.arange(1, len(names) + 1, dtype=float) ** 1.5  # later ones: chains
        return names[int(self.rng.choice(len(names), p=weights / weights.sum()))]

    def shape_of(self, name: str) -> Shape:
        return self.vars[name].shape

    # -- motifs: each appends lines and returns the last name

    def unary(self) -> str:
        op = self.choice(UNARY)
        positive_only = op in ("ln", "sqrt") and self.rng.random() < 0.85
        a = self.pick(lambda v: v.positive or not positive_only)
        if a is None:
            a = self.pick()
            op = "tanh"
        positive = op in ("exp", "logistic", "abs", "sqrt")
        return self.define(op, a, shape=self.shape_of(a), positive=positive)

    def binary(self) -> str:
        op = self.choice(BINARY)
        constant = op == "pow" and self.rng.random() < 0.75  # a constant exponent
        # a variable exponent only on a positive base: pow(NaN or -1, e) is 1 at e = 0 and
        # NaN elsewhere, so an exponent 0 on one engine and 1e-16 on the other disagree
        a = self.pick(lambda v: op != "pow" or v.positive or (constant and
                                                            self.rng.random() < 0.1))
        if a is None:
            op, constant = "mul", False
            a = self.pick()
        assert a is not None
        sa = self.shape_of(a)
        if constant:
            b = repr(self.choice(EXPONENTS))
        elif self.rng.random() < 0.15:
            b = repr(self.choice(CONSTANTS))
            if op == "div" and b == "1e-05":
                # x / 1e-5, squared in the loss: gradients of 1e10 whose terms can cancel
                # to 1e-4 (seed 3702: d/v5/d/v3 is 0 in exact arithmetic); no two correct
                # summation orders agree there to 1e-9 of the result
                b = "2.0"
        else:
            def fits(v: _Var) -> bool:
                if op == "pow" and v.shape:
                    return False
                try:
                    np.broadcast_shapes(sa, v.shape)
                except ValueError:
                    return False
                return op != "div" or v.positive or self.rng.random() < 0.2

            # a per-example value with a shared one (or the other way) most of the time
            b = self.pick(fits, prefer=lambda v: v.shared != self.vars[a].shared)
            b = b or repr(self.choice(CONSTANTS))
        if self.rng.random() < 0.3 and op != "pow":
            a, b = b, a
        shapes = [self.shape_of(x) for x in (a, b) if x in self.vars]
        shape = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
        positive = op in ("add", "mul", "div") and all(
            self.vars[x].positive if x in self.vars else float(x) > 0 for x in (a, b))
        return self.define(op, a, b, shape=shape, positive=positive)

    def row(self) -> str:
        op = self.choice(ROW)
        if op in ("sum", "mean"):
            a = self.pick(lambda v: bool(v.shape))
            if a is None:
                return self.define(op, self.pick() or "", shape=())  # sum of a scalar
            return self.define(op, a, shape=())
        a = self.pick(lambda v: len(v.shape) == 1) or self.vector()
        shape = () if op == "logsumexp" else self.shape_of(a)
        return self.define(op, a, shape=shape, positive=op == "softmax")

    def vector(self) -> str:
        return self.input((int(self.choice((2, 3, 5))),))

    def matmul(self) -> str:
        a = self.pick(lambda v: 1 <= len(v.shape) <= 2)
        if a is None:
            a = self.vector()
        inner = self.shape_of(a)[-1]
        b = self.pick(lambda v: 1 <= len(v.shape) <= 2 and v.shape[0] == inner
                      and self.vars[a].shared != v.shared)
        if b is None or self.rng.random() < 0.4:
            b = self.weight((inner, int(self.choice((1, 2, 3, 4)))) if self.rng.random() < 0.8
                            else (inner,))
        if self.rng.random() < 0.5 and len(self.shape_of(b)) == 2 and len(self.shape_of(a)) == 1:
            b = self.define("transpose", b, shape=self.shape_of(b)[::-1])
            a, b = b, a  # W^T x, matrix first
        sa, sb = self.shape_of(a), self.shape_of(b)
        return self.define("matmul", a, b, shape=sa[:-1] + sb[1:])

    def other(self) -> str:
        op = self.choice(OTHER)
        if op == "matmul":
            return self.matmul()
        if op == "transpose":
            a = self.pick(lambda v: 1 <= len(v.shape) <= 2) or self.vector()
            return self.define(op, a, shape=self.shape_of(a)[::-1])
        if op == "outer":
            a = self.pick(lambda v: len(v.shape) <= 1) or self.vector()
            b = self.pick(lambda v: len(v.shape) <= 1) or self.vector()
            return self.define(op, a, b, shape=self.shape_of(a) + self.shape_of(b))
        if op == "onehot":
            a = self.pick(lambda v: bool(v.shape)) or self.vector()
            index = int(self.rng.integers(math.prod(self.shape_of(a))))
            return self.define(op, a, repr(float(index)), shape=self.shape_of(a))
        if op == "sumto":  # a matrix down to one of its rows or columns, or a scalar
            a = self.pick(lambda v: len(v.shape) == 2) or self.other_matrix()
            rows, cols = self.shape_of(a)
            target = self.choice([(cols,), (1, cols), (rows, 1), ()])
            b = self.pick(lambda v: v.shape == target) or self.weight(target)
            return self.define(op, a, b, shape=target)
        # broadcast: a vector (or scalar) to a matrix of its width
        a = self.pick(lambda v: len(v.shape) <= 1) or self.vector()
        width = self.shape_of(a)[0] if self.shape_of(a) else 2
        b = self.pick(lambda v: len(v.shape) == 2 and v.shape[1] == width) \
            or self.weight((int(self.choice((2, 3))), width))
        return self.define(op, a, b, shape=self.shape_of(b))

    def other_matrix(self) -> str:
        a = self.pick(lambda v: len(v.shape) == 1) or self.vector()
        w = self.weight((int(self.choice((2, 3))),))
        return self.define("outer", a, w, shape=self.shape_of(a) + self.shape_of(w))

    def shared_elementwise(self) -> str:
        """The class of issue 23: a per-example chain that frees scratch arrays of size k,
        then a value of weights only, of size k, in an elementwise line."""
        a = self.pick(lambda v: len(v.shape) == 1 and not v.shared) or self.vector()
        k = self.shape_of(a)
        h = self.define(self.choice(("tanh", "logistic", "neg")), a, shape=k)
        h = self.define("mul", h, h, shape=k)
        s = self.weight(k)
        p = self.define(self.choice(("softmax", "exp", "tanh", "logistic")), s, shape=k,
                        positive=True)
        if self.rng.random() < 0.3:
            p = self.define("mul", p, s, shape=k)
        op = self.choice(("mul", "add", "sub", "div"))
        return self.define(op, *((h, p) if self.rng.random() < 0.6 else (p, h)), shape=k)

    def layer_norm(self) -> str:
        a = self.pick(lambda v: len(v.shape) == 1 and v.shape[0] > 1 and not v.shared) \
            or self.input((int(self.choice((3, 4, 8))),))
        k = self.shape_of(a)
        m = self.define("mean", a, shape=())
        c = self.define("sub", a, m, shape=k)
        c2 = self.define("mul", c, c, shape=k, positive=True)
        v = self.define("mean", c2, shape=())
        v = self.define("add", v, "1e-05", shape=(), positive=True)
        s = self.define("sqrt", v, shape=(), positive=True)
        nrm = self.define("div", c, s, shape=k)
        gn = self.define("mul", nrm, self.weight(k), shape=k)
        return self.define("add", gn, self.weight(k), shape=k)

    def mixture(self) -> str:
        a = self.pick(lambda v: len(v.shape) == 1 and not v.shared) or self.vector()
        k = self.shape_of(a)
        p = self.define("softmax", self.weight(k), shape=k, positive=True)
        e = self.define("mul", a, self.weight(k), shape=k)
        t = self.define(self.choice(("tanh", "logistic", "relu")), e, shape=k)
        q = self.define("mul", t, p, shape=k)
        return self.define("sum", q, shape=())

    def attention(self) -> str:
        """softmax(X q) x (X V): a per-example matrix of T tokens of d numbers."""
        t, d = int(self.choice((2, 3, 4))), int(self.choice((2, 3)))
        x = self.pick(lambda v: v.shape == (t, d) and not v.shared) or self.input((t, d))
        scores = self.define("matmul", x, self.weight((d,)), shape=(t,))
        if self.rng.random() < 0.5:
            scores = self.define("mul", scores, repr(1 / math.sqrt(d)), shape=(t,))
        a = self.define("softmax", scores, shape=(t,), positive=True)
        e = int(self.choice((1, 2, 3)))
        values = self.define("matmul", x, self.weight((d, e)), shape=(t, e))
        return self.define("matmul", a, values, shape=(e,))

    def residual(self) -> str:
        a = self.pick(lambda v: len(v.shape) == 1 and not v.shared) or self.vector()
        k = self.shape_of(a)
        h = self.define("matmul", self.weight((k[0], k[0])), a, shape=k)
        h = self.define("add", h, self.weight(k), shape=k)
        h = self.define(self.choice(("tanh", "relu", "logistic")), h, shape=k)
        return self.define("add", h, a, shape=k)

    def penalty(self) -> str:
        w = self.pick(lambda v: v.shared and bool(v.shape)) or self.weight((3,))
        k = self.shape_of(w)
        sq = self.define("mul", w, w, shape=k, positive=True)
        total = self.define("sum", sq, shape=())
        return self.define("mul", total, "0.01", shape=())

    MOTIFS = (("unary", 5), ("binary", 7), ("row", 3), ("other", 4), ("matmul", 2),
              ("shared_elementwise", 2), ("layer_norm", 1), ("mixture", 1),
              ("attention", 1), ("residual", 1), ("penalty", 1))

    def build(self) -> str:
        rng = self.rng
        for _ in range(int(rng.integers(1, 3))):
            self.input(self.choice(((), (2,), (3,), (4,), (2, 3), (8,))))
        for _ in range(int(rng.integers(0, 3))):
            self.weight(self.choice(((), (3,), (2,), (2, 3), (4,))))
        names, weights = zip(*self.MOTIFS, strict=True)
        p = np.array(weights, dtype=float) / sum(weights)
        for _ in range(int(rng.integers(2, 7))):
            getattr(self, names[int(rng.choice(len(names), p=p))])()
        return self.loss()

    def loss(self) -> str:
        """An output compared with an expected one, plus every other value nothing uses."""
        sinks = [n for n in self.vars if not self.used[n]]
        last = [n for n in sinks if n.startswith("v")][-1:] or [self.unary()]
        out = last[0]
        y = self.declare("exp_output", "y", self.shape_of(out), False)
        d = self.define("sub", out, y, shape=self.shape_of(out))
        d2 = self.define("mul", d, d, shape=self.shape_of(out))
        total = self.define(self.choice(("sum", "mean")), d2, shape=()) if self.shape_of(out) \
            else d2
        for other in sinks:
            if other == out:
                continue
            if self.shape_of(other):
                other = self.define("sum", other, shape=())
            other = self.define("mul", other, "0.1", shape=())
            total = self.define("add", total, other, shape=())
        self.decls.append("declare loss L")
        self.body.append(f"define L = add {total} 0")
        return "".join(f"{line}\n" for line in self.decls + self.body)


@dataclass
class Trial:
    """One random program on one batch (see the module)."""

    seed: int
    source: str
    kind: str
    n: int
    block: int | None  # fusedplan.BLOCK_NUMBERS to patch (None: the default)
    chunk: dict[str, int]  # fused's CHUNK_* to patch ({}: one binding)
    data: dict[str, Any] = field(repr=False)
    means: list[str]
    keep: set[str]
    program: Program = field(repr=False)
    finite: bool = True  # also compare training's finiteness checks (a second pass)
    adopt: bool = False  # the fused engine over a bound reference run (auto's switch)
    # new weights (and directions) set on the bound run and run again, as training does
    again: dict[str, Any] = field(default_factory=dict, repr=False)

    def describe(self) -> str:
        """What a failure prints: enough to run the trial again."""
        given = {k: ("NULL" if v is None else f"{np.shape(v)}") for k, v in self.data.items()}
        return (f"seed {self.seed}: {self.kind} GCP, n={self.n}, block={self.block}, "
                f"chunks={self.chunk}, adopted={self.adopt}, run again with new "
                f"{sorted(self.again)}, data {given}, means "
                f"{self.means}, keep "
                f"{sorted(self.keep)}\n--- shape program\n{self.source}")


def program_of(shape: Program, kind: str) -> Program:
    """The program an engine runs for ``kind`` (a GCP, the forward-mode or HVP one)."""
    if kind == "forward":
        return compile_forward(shape).program()
    if kind == "hvp":
        return api.compile_hvp(shape).program()
    return api.compile(shape, full=kind == "full").program()


def trial(seed: int) -> Trial:
    """The trial of ``seed`` (the same one every time)."""
    rng = np.random.default_rng(seed)
    source = _Generator(rng).build()
    shape = parse(source, f"random-{seed}.tf")
    kind = str(rng.choice(KINDS, p=[0.35, 0.15, 0.2, 0.3]))
    program = program_of(shape, kind)
    # batch sizes around a block's and a chunk's end
    width = max(1, max(math.prod(program.shapes[n]) for n in program.shapes))
    block = None if rng.random() < 0.3 else int(rng.choice((1, 3, 5, 16, 64, 200)))
    rows = max(1, (block or 4096) // width)
    chunk: dict[str, int] = {}
    if rng.random() < 0.3:
        per_chunk = int(rng.integers(2, 40))
        chunk = {"CHUNK_OVER": 0, "CHUNK_BYTES": per_chunk * 8 * _numbers(program),
                 "MIN_CHUNK": 2}
        edge = per_chunk * int(rng.integers(1, 5))
    else:
        edge = rows * int(rng.integers(1, 4)) if rows <= 150 else int(rng.integers(2, 150))
    n = max(1, min(600, edge + int(rng.integers(-1, 2)))) if rng.random() < 0.9 else 1
    data = _data(rng, program, set(shape.names("weight")), n)
    outputs = program.names("output", "loss")
    means = [o for o in outputs if rng.random() < 0.7]
    defined = [d.target for d in program.definitions()]
    keep = {d for d in defined if rng.random() < 0.15}
    again = {k: rng.normal(0, 0.7, np.shape(data[k])) for k in data
             if k in shape.names("weight") or k.startswith("v/")}
    return Trial(seed, source, kind, n, block, chunk, data, means, keep, program,
                 rng.random() < 0.6, not chunk and rng.random() < 0.25,
                 again if rng.random() < 0.3 else {})


def _numbers(program: Program) -> int:
    return sum(math.prod(s) for s in program.shapes.values())


def _data(rng: np.random.Generator, program: Program, weights: set[str], n: int
          ) -> dict[str, Any]:
    """Inputs per example (now and then NULL, or one value for every example); weights
    (inputs of a GCP) and directions (``v/w``) once."""
    data: dict[str, Any] = {}
    for name in program.names("input", "exp_output", "weight"):
        shape = program.shapes[name]
        r = rng.random()
        if name in weights or name.startswith("v/"):
            data[name] = rng.normal(0, 0.7, shape)
        elif r < 0.08:
            data[name] = None  # NULL
        elif r < 0.14:
            data[name] = rng.normal(0, 1, shape)  # shared by every example
        else:
            data[name] = rng.normal(0, 1, (n, *shape)) * rng.choice((1.0, 3.0))
            if rng.random() < 0.15:  # special values here and there
                where = rng.random(data[name].shape) < 0.05
                data[name][where] = rng.choice(SPECIAL, int(where.sum()))
    return data
