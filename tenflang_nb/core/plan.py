"""The interpreter: a program planned once, then run over a whole batch of examples at a time.

The seed's interpreter walks the program once per example with a bindings dictionary. Here a
:class:`Plan` resolves every operator to a numpy kernel and every variable to a slot once; a
:class:`Run` binds it to N examples, allocating every buffer up front, so each later pass over
the program (one per gradient step) allocates nothing and touches each line once for all N
examples. NULL (a value that was never given, or given as None) propagates as in the seed:
an operator with a NULL operand yields NULL, decided once at bind time.

Every caller runs a program through one of the plan's entry points: :meth:`Plan.example`
(one example to its values: floats, arrays, None for NULL), :meth:`Plan.run` (a batch bound
and run once), :meth:`Plan.means` (a batch reduced to its means), or :meth:`Plan.bind` for a
run to pass over many times (training, timing, the loss landscape).

Every value has a leading batch axis: N for values that depend on the example, 1 for those
that do not (weights, constants, and lines computed only from them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from . import ops
from .arguments import check_instance, shown
from .bound import BoundProgram, Instruction, Mean, Operand, Slot, lifetimes, mean_slot
from .boundcalls import MeanContext, batch_mean, mean_call, operands
from .errors import TenFlangError
from .formatting import fmt_shape
from .guard import allow
from .lexical import GIVEN_KINDS
from .ops import Const, KernelSpec, Shape
from .program import Program, ancestors
from .syntax import Define

Array = np.ndarray
# the slots' offsets in a run's arena: multiples of 8 numbers (64 bytes, a cache line)
ARENA_ALIGN = 8


@dataclass
class _Step:
    kernel: Callable[..., Array]
    args: tuple[Array | np.float64, ...]
    out: Array
    define: Define
    line: Instruction


class Plan:
    """A program prepared for execution (built once, bound to many batches).

    >>> from tenflang_nb.core.program import parse
    >>> plan = Plan(parse("declare input x\\ndeclare output y\\ndefine y = mul x 2\\n"))
    >>> run = plan.bind({"x": np.array([1.0, 2.5])}, n=2)
    >>> run.run(); run.value("y")
    array([2., 5.])
    """

    def __init__(self, program: Program, targets: Sequence[str] | None = None) -> None:
        """``targets``: compute only these values and what they need (a GCP's loss alone is
        its forward pass); the default is every line, with the outputs and loss as results.

        >>> from tenflang_nb.core.program import parse
        >>> p = parse("declare input x\\ndeclare output y\\ndeclare output z\\n"
        ...           "define y = mul x 2\\ndefine z = exp x\\n")
        >>> [d.target for d in Plan(p, targets=["y"]).defines]
        ['y']
        """
        allow("the package's interpreter")  # every program runs through a Plan
        self.program = program
        self.given = program.names(*GIVEN_KINDS)
        self.defines = program.definitions()
        self.results = program.names("output", "loss")
        if targets is not None:
            needed: set[str] = set()
            for target in targets:
                needed |= ancestors(program, target)
            self.given = [n for n in self.given if n in needed]
            self.defines = [d for d in self.defines if d.target in needed]
            self.results = list(targets)

    def bind(self, data: Mapping[str, Array | float | None], n: int,
             means: list[str] | None = None) -> Run:
        """Bind values to the given variables (missing ones, and None, are NULL) for ``n``
        examples: a run to pass over many times (:meth:`Run.run`, :meth:`Run.set`) on the
        reference engine, and its :attr:`Run.bound` program (``bound.BoundProgram``: what
        runs, by slot name, for any engine).

        A value whose first axis has length ``n`` (and whose rank is one more than the
        variable's shape) is per-example; otherwise it is shared by every example. ``means``
        names values whose mean over the batch will be asked for (weight gradients), so the
        run can compute them without storing per-example tensors where the maths allows.
        """
        try:
            return Run(self, data, n, means or [])
        except MemoryError:
            program = self.program
            numbers = n * sum(math.prod(program.shapes[v]) for v in program.decls)
            raise TenFlangError.at(
                f"not enough memory to run this program on {n:,} examples (its values "
                f"take up to {numbers * 8 / 1e9:,.1f} GB)", file=program.file,
                hint="use fewer examples at a time (--batch-size), or smaller shapes"
            ) from None


    # ------------------------------------------------------------------ running it once

    def run(self, data: Mapping[str, Array | float | None], n: int = 1) -> Run:
        """A batch: ``data`` bound to ``n`` examples (as :meth:`bind`) and run once; read it
        with :meth:`Run.value` (per example) or :meth:`Run.mean`.

        >>> from tenflang_nb.core.program import parse
        >>> p = parse("declare input x\\ndeclare output y\\ndefine y = mul x 2\\n")
        >>> Plan(p).run({"x": np.array([1.0, 2.5])}, 2).value("y")
        array([2., 5.])
        """
        run = self.bind(data, n)
        run.run()
        return run

    def example(self, inputs: Mapping[str, Array | float | None],
                names: Sequence[str] | None = None) -> dict[str, float | Array | None]:
        """One example: the value of each of ``names`` (default: the outputs and the loss)
        as :func:`plain` gives it, None for NULL.

        >>> from tenflang_nb.core.program import parse
        >>> p = parse("declare input x\\ndeclare input v [2]\\ndeclare output y\\n"
        ...           "declare output u\\ndefine y = mul x 2\\ndefine u = mul v x\\n")
        >>> Plan(p).example({"x": 3.0, "v": None})
        {'y': 6.0, 'u': None}
        """
        run = self.run(inputs, 1)
        return {name: first_row(run.value(name))
                for name in (self.results if names is None else names)}

    def means(self, data: Mapping[str, Array | float | None], n: int,
              names: Sequence[str]) -> dict[str, Array | None]:
        """A batch reduced to its mean: each of ``names`` averaged over the ``n`` examples
        (None for NULL).

        >>> from tenflang_nb.core.program import parse
        >>> p = parse("declare input x\\ndeclare output y\\ndefine y = mul x 2\\n")
        >>> float(Plan(p).means({"x": np.array([1.0, 2.5])}, 2, ["y"])["y"])
        3.5
        """
        run = self.run(data, n)
        return {name: run.mean(name) for name in names}


class Run:
    """A plan bound to one batch on the reference engine (one numpy call per line, a buffer
    per slot of its :attr:`bound` program); :meth:`run` executes it, :meth:`value` reads
    results."""

    def __init__(self, plan: Plan, data: Mapping[str, Array | float | None], n: int,
                 means: list[str]) -> None:
        self.plan = plan
        self.n = n
        program = plan.program
        shapes = program.shapes
        self.values: dict[str, Array | None] = {}
        self.consts: dict[str, float] = {}
        # the bound program, as binding decides it (by slot name: see core/bound.py)
        self._slots: dict[str, Slot] = {}
        self._names: dict[str, str | None] = {}
        self._means: list[Mean] = []
        for name in plan.given:
            value = self.values[name] = self._given(name, data.get(name), shapes[name], n)
            self._slot(name, value, "given")
        self.steps: list[_Step] = []
        self.step_of: dict[str, _Step] = {}
        for d in plan.defines:
            self._plan_define(d, shapes)
        self.means: dict[str, Array | None] = {}
        self.mean_steps: list[Callable[[], object]] = []
        skipped = self._plan_means(means)
        self.steps = [s for s in self.steps if id(s) not in skipped]
        lines = tuple(s.line for s in self.steps)
        self.bound = BoundProgram(n, lifetimes(self._slots, lines, self._means),
                                  dict(self._names), lines, tuple(self._means),
                                  tuple(plan.given))
        self.arena, self.offsets = self._into_arena()
        # pre-bound calls with a positional ``out``: the cheapest dispatch for tiny arrays
        self.calls = [partial(s.kernel, *s.args, s.out) for s in self.steps]

    def _into_arena(self) -> tuple[Array, dict[str, int]]:
        """Every slot's buffer moved into one array, the arena (each at its offset, in
        numbers, 64-byte aligned): the storage the fused engine addresses by offset. The
        data and constants are copied in; the lines and means are rebuilt over it."""
        bound = self.bound
        offsets: dict[str, int] = {}
        total = 0
        for name, slot in bound.slots.items():
            offsets[name] = total
            total += -(-max(1, slot.rows * math.prod(slot.shape)) // ARENA_ALIGN) * ARENA_ALIGN
        arena = np.empty(total)
        slots: dict[str, Array] = {}
        for name, slot in bound.slots.items():
            size = slot.rows * math.prod(slot.shape)
            view = arena[offsets[name]:offsets[name] + size]
            slots[name] = view.reshape(slot.shape if slot.kind == "mean"
                                       else (slot.rows, *slot.shape))
            if slot.kind in ("given", "constant"):
                slots[name][...] = self.values[name]
        self.values = {k: None if slot is None else slots[slot]
                       for k, slot in bound.names.items()}
        for m in bound.means:
            view_of = self.values[str(m.out)] if m.how == "view" else None
            self.means[m.name] = (None if m.out is None else view_of[0, ...]  # type: ignore[index]
                                  if view_of is not None else slots[m.out])
        self.steps = [_Step(s.kernel, operands(s.line, self.values), slots[s.line.out],
                            s.define, s.line) for s in self.steps]
        self.step_of = {s.define.target: s for s in self.steps}
        self.mean_steps = [mean_call(m, self.n, self.values, self.means)
                           for m in bound.means if m.how in ("batch", "linear", "rule")]
        return arena, offsets

    def _slot(self, name: str, value: Array | None, kind: str) -> None:
        """Variable ``name`` holds ``value`` in a slot of its own (None: NULL)."""
        if value is None:
            self._names[name] = None
            return
        self._names[name] = name
        self._slots[name] = Slot(name, tuple(value.shape[1:]), value.shape[0], kind)

    # ------------------------------------------------------------------ binding

    def _given(self, name: str, value: Array | float | None, shape: Shape, n: int
               ) -> Array | None:
        if value is None:
            return None
        decl = self.plan.program.decls[name]
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):  # OverflowError: 10**400
            raise TenFlangError.at(f"value of '{name}' is not a number or numbers: "
                                   f"{shown(value)}",
                                   file=self.plan.program.file, line=decl.src.line,
                                   source=decl.src.text) from None
        if array.shape == (n, *shape) and n != 1:
            return array  # copied into the run's arena (callers may reuse theirs)
        if array.shape == shape:
            return array.reshape((1, *shape))
        if array.shape == (1, *shape):
            return array
        raise TenFlangError.at(
            f"value of '{name}' has shape {fmt_shape(array.shape)}, expected "
            f"{fmt_shape(shape)} (or {n} of them)", file=self.plan.program.file,
            line=self.plan.program.decls[name].src.line,
            source=self.plan.program.decls[name].src.text)

    def _plan_define(self, d: Define, shapes: dict[str, Shape]) -> None:
        values = self.values
        if d.op is None:
            arg = d.args[0]
            if isinstance(arg, Const):
                values[d.target] = np.full((1, *shapes[d.target]), arg.value)
                self.consts[d.target] = arg.value
                self._slot(d.target, values[d.target], "constant")
            else:
                values[d.target] = values[arg]  # an alias shares the buffer
                self._names[d.target] = self._names[arg]
                if arg in self.consts:
                    self.consts[d.target] = self.consts[arg]
            return
        op = ops.OPS[d.op]
        args: list[Array | float] = []
        for a in d.args:
            if isinstance(a, Const):
                args.append(a.value)
            elif a in self.consts:
                args.append(self.consts[a])
            else:
                v = values[a]
                if v is None:
                    values[d.target] = None
                    self._names[d.target] = None
                    return
                args.append(v)
        out_shape = shapes[d.target]
        arg_shapes = tuple(() if isinstance(a, float) else shapes[str(n)]
                           for a, n in zip(args, d.args, strict=True))
        consts = tuple(a if isinstance(a, float) else None for a in args)
        batched = tuple(not isinstance(a, float) and a.shape[0] == self.n and self.n != 1
                        for a in args)
        spec = KernelSpec(arg_shapes, out_shape, batched, consts)
        kernel = op.kernel(spec)
        if all(isinstance(a, float) for a in args):  # only constants: compute once
            with np.errstate(all="ignore"):
                out = np.asarray(kernel(*(np.full((1, *s), c) for s, c in
                                          zip(arg_shapes, consts, strict=True))))
            values[d.target] = out.reshape((1, *out_shape))
            self._slot(d.target, values[d.target], "constant")
            if out_shape == ():
                self.consts[d.target] = float(out.reshape(-1)[0])
            return
        alias = ops.identity_operand(d.op, consts)
        if alias is not None and arg_shapes[alias] == out_shape:
            values[d.target] = args[alias]  # type: ignore[assignment]
            self._names[d.target] = self._names[str(d.args[alias])]
            return
        rows = self.n if any(batched) else 1
        out = np.empty((rows, *out_shape))
        prepared: list[Array | np.float64] = []
        for a, s in zip(args, arg_shapes, strict=True):
            if isinstance(a, float):
                prepared.append(np.float64(a))
            elif op.elementwise and len(s) < len(out_shape):
                # align per-example axes: numpy would align the batch axis with a data axis
                prepared.append(a.reshape((a.shape[0],) + (1,) * (len(out_shape) - len(s)) + s))
            else:
                prepared.append(a)
        self._slot(d.target, out, "line")
        reads = tuple(Operand(None, float(a), ()) if isinstance(a, float)
                      else Operand(self._names[str(name)], None, tuple(p.shape[1:]))
                      for a, name, p in zip(args, d.args, prepared, strict=True))
        line = Instruction(op.name, d.target, reads, spec, d)
        step = _Step(kernel, tuple(prepared), out, d, line)
        self.steps.append(step)
        self.step_of[d.target] = step
        values[d.target] = out

    def _plan_means(self, names: list[str]) -> set[int]:
        """Plan the batch means of ``names``; returns the ids of the steps they make redundant.

        A line whose only use is a mean (a weight's gradient, or a term of a sum that is one)
        need not be computed per example when its operator has a batch-mean hook (see
        ``ops.Op``). Both passes are loops, never recursion: a gradient may be a sum of
        thousands of terms.
        """
        n = self.n
        uses: dict[str, int] = {}
        for d in self.plan.defines:
            for a in d.variables():
                uses[a] = uses.get(a, 0) + 1
        # top-down: which names need a mean, and whether only their mean is ever read
        private: dict[str, bool] = {}
        pending = [(name, True) for name in names]
        while pending:
            name, top = pending.pop()
            if name in private:
                continue
            step = self.step_of.get(name)
            only_mean = step is not None and uses.get(name, 0) == (0 if top else 1)
            private[name] = only_mean
            if only_mean and step is not None and _linear(step):
                pending.extend((str(a), False) for a in step.define.args)
        # bottom-up, in program order: a line's operands are planned before the line
        index = {d.target: i for i, d in enumerate(self.plan.defines)}
        skipped: set[int] = set()
        for name in sorted(private, key=lambda v: index.get(v, -1)):
            value = self.values.get(name)
            if value is None:
                self.means[name] = None
                self._means.append(Mean(name, None, "null"))
                continue
            if value.shape[0] != n or n == 1:
                self.means[name] = value[0, ...]  # the same for every example: a view
                self._means.append(Mean(name, self._names[name], "view"))
                continue
            out = np.empty(value.shape[1:])
            step = self.step_of.get(name)
            mean: Callable[[], object] | None = None
            how = "batch"
            if step is not None and private[name]:
                if _linear(step):
                    means = [self.means[str(a)] for a in step.define.args]
                    if all(m is not None for m in means):
                        mean, how = partial(step.kernel, *means, out=out), "linear"
                else:
                    rule = ops.OPS[str(step.define.op)].batch_mean
                    mean, how = rule(MeanContext(n, step.args, out)) if rule else None, "rule"
            if mean is None:
                mean, how = batch_mean(value, out), "batch"
            else:
                skipped.add(id(step))
            self.mean_steps.append(mean)
            self._slots[mean_slot(name)] = Slot(mean_slot(name), tuple(out.shape), 1, "mean")
            self._means.append(
                Mean(name, mean_slot(name), how, self._names[name] if how == "batch" else None,
                     step.line if how != "batch" and step is not None else None,
                     tuple(map(str, step.define.args)) if how == "linear" and step else ()))
            self.means[name] = out
        return skipped

    # ------------------------------------------------------------------ running

    def set(self, name: str, value: Array | float) -> None:
        """Overwrite a bound input (a weight) in place; its shape must not change."""
        target = self.values[name]
        assert target is not None, name
        target[...] = value

    def run(self) -> None:
        """One pass over the program for the whole batch.

        Overflow to inf/NaN is not an error here (callers check the results and can ask
        :meth:`first_nonfinite` which line produced it), so numpy's warnings are silenced.
        """
        with np.errstate(all="ignore"):
            for call in self.calls:
                call()
            for mean in self.mean_steps:
                mean()

    def value(self, name: str) -> Array | None:
        """The value of ``name`` for every example: shape (N,)+shape, or (1,)+shape."""
        v = self.values.get(name)
        if v is None:
            return None
        if v.shape[0] != self.n:
            return np.broadcast_to(v, (self.n, *v.shape[1:]))
        return v

    def mean(self, name: str) -> Array | None:
        """Mean over the batch of ``name``, as of the last :meth:`run` (a name listed in
        ``means`` at bind time is averaged by the run itself, cheaply)."""
        if name in self.means:
            result = self.means[name]
            return None if result is None else np.array(result)  # its buffer is reused
        v = self.values.get(name)
        return None if v is None else v.mean(axis=0)

    def finite(self, only: set[str] | None = None) -> bool:
        """Whether every value the last pass computed (of the lines defining ``only``) is
        finite. A sum is NaN or infinite when a term is (or when finite terms overflow: then
        the exact test decides); summing reads each buffer once and allocates nothing.

        >>> from tenflang_nb.core.program import parse
        >>> run = Plan(parse("declare input x\\ndeclare output y\\ndefine y = ln x\\n")).run(
        ...     {"x": np.array([1.0, 0.0])}, 2)
        >>> run.finite(), run.finite(set())
        (False, True)
        """
        with np.errstate(all="ignore"):
            return all(np.isfinite(s.out.sum()) or bool(np.isfinite(s.out).all())
                       for s in self.steps if only is None or s.define.target in only)

    def first_nonfinite(self, only: set[str] | None = None) -> Define | None:
        """Re-run step by step; the first line whose value is NaN or infinite (diagnostics).

        ``only`` limits the search to lines defining those names (what the loss and the
        gradients depend on): an unused line may overflow harmlessly.
        """
        with np.errstate(all="ignore"):
            for step in self.steps:
                step.kernel(*step.args, out=step.out)
                if (only is None or step.define.target in only) and not np.all(
                        np.isfinite(step.out)):
                    return step.define
        return None


def _linear(step: _Step) -> bool:
    d = step.define
    return ops.OPS[str(d.op)].linear and all(isinstance(a, str) for a in d.args)


@dataclass(frozen=True)
class TraceStep:
    """One executed line: its 1-based line number in the program's text, the variable it
    defines, and the value it computed (a float, an array, or None for NULL)."""

    line: int
    name: str
    value: float | Array | None


def trace(program: Program, inputs: Mapping[str, float | Array | None]) -> list[TraceStep]:
    """Run ``program`` on one input record; every definition in execution order, with the
    value it computed (what a stepper shows, one line at a time).

    >>> from tenflang_nb.core.program import parse
    >>> p = parse("declare input x\\ndeclare intvar y\\ndefine y = mul x 3\\n")
    >>> trace(p, {"x": 2.0})
    [TraceStep(line=3, name='y', value=6.0)]
    """
    plan = Plan(program)
    values = plan.example(inputs, [d.target for d in plan.defines])
    return [TraceStep(d.src.line, d.target, values[d.target]) for d in plan.defines]


def interpret(program: Program, inputs: Mapping[str, float | Array | None]
              ) -> dict[str, float | Array | None]:
    """Run ``program`` on one input vector; every ``output`` and ``loss`` value (None = NULL).

    This is the seed's interpreter: names not in ``inputs`` are NULL, and so is every value
    computed from a NULL.

    >>> from tenflang_nb.core.program import parse
    >>> p = parse('''declare input x
    ... declare weight w
    ... declare exp_output y
    ... declare output o
    ... declare intvar a
    ... declare intvar c
    ... define c = mul y w
    ... define a = mul x w
    ... define o = add a w''')
    >>> interpret(p, {"x": 3, "w": -2})
    {'o': -8.0}
    """
    check_instance("program", program, Program, "a Program")
    check_instance("inputs", inputs, Mapping, "a dict of values (name -> value)")
    return Plan(program).example(inputs)


def plain(value: Array | float) -> float | Array:
    """A value as callers keep it: a float for a scalar, else an array of its own.

    >>> plain(np.array(2.0)), plain([1, 2])
    (2.0, array([1., 2.]))
    """
    array = np.asarray(value, dtype=np.float64)
    return float(array) if array.ndim == 0 else np.array(array)


def first_row(values: Array | None) -> float | Array | None:
    """The first example's value of a run's value (:meth:`Run.value`), None for NULL."""
    return None if values is None else plain(values[0])
