"""The fused engine's plan: a bound run's lines cut into groups the block loop runs in one pass.

A :class:`~tenflang_nb.core.plan.Run` already knows, for one batch, every line's kernel,
operands (NULL, constants, aliases and identities resolved) and buffer, and how each batch
mean is taken. :func:`schedule` reads that and splits the lines into *stages*, in program
order:

* lines whose values are the same for every example (``transpose W2``) run once, first,
  with their numpy kernels;
* a maximal run of lines that the block loop can do (every elementwise operator, sums,
  means, softmax and friends, broadcasts: see ``UNARY``, ``BINARY``, ``ROWWISE``) becomes one
  :class:`Group` of instructions for ``fusedvm.execute``;
* any other line (a matrix product: BLAS does it best) is a stage of its own, its numpy
  kernel as the reference engine runs it.

Inside a group, a value lives in a block-sized scratch array unless something outside the
group reads it (a later stage, a batch-mean rule such as the ``outer`` GEMM, or a name the
caller wants to read): only those are written to the run's buffers. A batch mean of a value
the group computes is summed in the same pass (``ACCSUM``, or ``ACCDOT`` for the mean of a
product of two per-example scalars), so a weight's gradient line may never be stored at all.

Everything here is numpy: the instructions' numbers come from the compiled module (``isa``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from .ops import OPS
from .plan import Run
from .syntax import Define


class _Step(Protocol):
    """A planned line, as ``plan.Run`` keeps it (its ``steps``)."""

    kernel: Callable[..., Any]
    args: tuple[Any, ...]
    out: np.ndarray
    define: Define

# TenFlang operators the block loop runs (by ops.py name), and the name of the loop's operator
# (``fusedvm`` holds the numbers: the compiled file is the one source of the instruction set,
# so that numba's cache, keyed by that file's text, can never hold loops of another set).
# Any other operator runs as numpy.
UNARY = {"neg": "NEG", "exp": "EXP", "ln": "LN", "logistic": "LOGISTIC", "tanh": "TANH",
         "relu": "RELU", "sqrt": "SQRT", "abs": "ABS", "step": "STEP", "sign": "SIGN",
         "lnz": "LNZ"}
BINARY = {"add": "ADD", "sub": "SUB", "mul": "MUL", "div": "DIV"}
ROWWISE = {"sum": "SUM", "mean": "MEAN", "softmax": "SOFTMAX", "logsoftmax": "LOGSOFTMAX",
           "logsumexp": "LOGSUMEXP"}
# pow with these constant exponents is what ops._pow_kernel makes it: the same arithmetic
POW = {2.0: "SQUARE", 1.0: "COPY", 0.5: "SQRT", -1.0: "RECIP"}

BLOCK_NUMBERS = 4096  # numbers per value in one block: 32 KB, the working set stays in L2


def _address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


@dataclass
class Group:
    """One ``fusedvm.execute`` call: arrays (kept alive here) and the instructions."""

    width: int = 8  # numbers in an instruction (fusedvm.WIDTH)
    arrays: list[np.ndarray] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    scratch: list[int] = field(default_factory=list)
    consts: list[float] = field(default_factory=list)
    maps: list[int] = field(default_factory=list)
    head: list[list[int]] = field(default_factory=list)
    code: list[list[int]] = field(default_factory=list)
    block: int = 1
    # (input name, array index): data read straight from the whole data set, from the row
    # where the chunk starts (set in ``base`` before each call)
    data: list[tuple[str, int]] = field(default_factory=list)
    # (mean's name, accumulator): the batch mean, as terms weighted 1/N summed over the
    # rows (zeroed before each chunk)
    sums: list[tuple[str, np.ndarray]] = field(default_factory=list)
    # sums of the values a checking schedule checks (NaN or infinite when a value is)
    checks: list[np.ndarray] = field(default_factory=list)
    # for the listing (core/fusedlisting.py): what each array is, and the line each
    # instruction of ``code`` computes (None: a broadcast into scratch for the next one)
    labels: list[str] = field(default_factory=list)
    lines: list[Define | None] = field(default_factory=list)

    def add(self, array: np.ndarray, size: int, scratch: bool = False, label: str = "") -> int:
        self.arrays.append(array)
        self.size.append(size)
        self.scratch.append(int(scratch))
        self.labels.append(label)
        return len(self.arrays) - 1

    def const(self, value: float) -> int:
        self.consts.append(float(value))
        return len(self.consts) - 1

    def freeze(self) -> tuple[np.ndarray, ...]:
        """The arguments of ``fusedvm.execute`` but ``rows`` and ``block`` (base is
        filled by the caller)."""
        def table(rows: list[list[int]]) -> np.ndarray:
            return np.array(rows, dtype=np.int64).reshape(-1, self.width)

        return (table(self.head), table(self.code),
                np.array([_address(a) for a in self.arrays], dtype=np.int64),
                np.array(self.size, dtype=np.int64), np.array(self.scratch, dtype=np.int64),
                np.zeros(len(self.arrays), dtype=np.int64),
                np.array(self.consts or [0.0]), np.array(self.maps or [0], dtype=np.int64))


@dataclass
class Schedule:
    """A bound run's lines as stages (see the module): ``shared`` steps first, then
    ``stages`` in order (a :class:`Group` or a step run by its numpy kernel), then the batch
    means no group sums (``mean_steps``: the run's own closures, in its order)."""

    shared: list[_Step]
    stages: list[Group | _Step]
    mean_steps: list[object]
    summed: list[str]  # the means the groups sum
    written: set[int]  # addresses of the run buffers the groups fill
    read: set[int]  # addresses of the run buffers numpy stages and mean closures read


def _op(step: _Step) -> str:
    return OPS[str(step.define.op)].name


def _fusable(step: _Step) -> bool:
    name = _op(step)
    if name == "pow":
        exponent = step.args[1]
        return not isinstance(exponent, np.ndarray) and float(exponent) in POW
    return name in UNARY or name in BINARY or name in ROWWISE or name == "broadcast"


def _arrays(values: object) -> list[np.ndarray]:
    return [v for v in values if isinstance(v, np.ndarray)]  # type: ignore[attr-defined]


def schedule(run: Run, isa: ModuleType, keep: set[str],
             data: dict[str, np.ndarray] | None = None,
             check: set[str] | None = None) -> Schedule:
    """The stages of ``run`` (module docstring), in the instructions of ``isa`` (fusedvm).
    ``keep``: names whose per-example values the caller will read. ``data``: per-example
    inputs that groups read from these whole arrays (from the chunk's first row) instead of
    the run's buffers. ``check``: lines whose values the groups also sum, in the pass, into
    their ``checks`` (whether they are all finite, without storing them)."""
    n = run.n
    per_row = [s for s in run.steps if s.out.shape[0] == n or n == 1]
    shared = [s for s in run.steps if not (s.out.shape[0] == n or n == 1)]
    items: list[list[_Step] | _Step] = []
    for step in per_row:
        if not _fusable(step):
            items.append(step)
        elif items and isinstance(items[-1], list):
            items[-1].append(step)
        else:
            items.append([step])
    producer = {_address(s.out): i for i, item in enumerate(items)
                if isinstance(item, list) for s in item}
    given = {_address(v) for k in run.plan.given if (v := run.values.get(k)) is not None}
    # a batch mean is summed by the last group that computes one of its sources, when every
    # other source is a given value or another group's
    sums: dict[int, list[tuple[str, list[np.ndarray]]]] = {}
    closures = []
    read: set[int] = set()
    for (name, how, step), mean in zip(run.mean_plan, run.mean_steps, strict=True):
        sources = _mean_sources(how, step, run.values[name], n)
        places = [producer.get(_address(s)) for s in sources or []]
        if sources and any(p is not None for p in places) and all(
                p is not None or _address(s) in given
                for s, p in zip(sources, places, strict=True)):
            sums.setdefault(max(p for p in places if p is not None), []).append(
                (name, sources))
            continue
        closures.append(mean)
        if how == "batch":
            read.update(_address(v) for v in _arrays([run.values[name]]))
        elif how == "rule" and step is not None:
            read.update(_address(a) for a in _arrays(step.args))
    outside = set(read)  # values read outside the group that computes them
    for i, item in enumerate(items):
        for step in item if isinstance(item, list) else [item]:
            for a in _arrays(step.args):
                if producer.get(_address(a), i) != i:
                    outside.add(_address(a))
                if not isinstance(item, list):
                    read.add(_address(a))
        for _, sources in sums.get(i, []):
            outside.update(_address(s) for s in sources if producer.get(_address(s), i) != i)
    # kept values, and the values whose mean is a view of their buffer (the same for every
    # example, or a batch of one)
    stepped = {name for name, _, _ in run.mean_plan}
    kept = set(keep) | {k for k in run.means if k not in stepped}
    outside.update(_address(v) for k in kept if (v := run.values.get(k)) is not None)
    names: dict[int, str] = {}  # for the listing: a buffer by the first name it holds
    for name, value in run.values.items():
        if value is not None:
            names.setdefault(_address(value), name)
    stages: list[Group | _Step] = [
        _Builder(run, isa, data or {}, outside, check or set(), names).group(
            item, sums.get(i, []))
        if isinstance(item, list) else item for i, item in enumerate(items)]
    return Schedule(shared, stages, closures,
                    [name for group in sums.values() for name, _ in group],
                    {a for a in outside if a in producer}, read)


def _mean_sources(how: str, step: _Step | None, value: np.ndarray | None, n: int
                  ) -> list[np.ndarray] | None:
    """The per-example arrays whose column sums give this mean: the value itself, or the two
    per-example scalars whose product it is (ops' ``_product_mean``); None: neither."""
    if how == "batch" and value is not None:
        return [value]
    if how == "rule" and step is not None and _op(step) == "mul":
        a, b = step.args
        if all(isinstance(x, np.ndarray) and x.shape == (n,) for x in (a, b)):
            return [a, b]  # type: ignore[list-item]
    return None


class _Builder:
    """Instructions for one group: operands resolved, block-sized scratch arrays shared by
    values of the same size whose lives do not overlap."""

    def __init__(self, run: Run, isa: ModuleType, data: dict[str, np.ndarray],
                 outside: set[int], check: set[str], names: dict[int, str]) -> None:
        self.isa = isa
        self.check = check
        self.n = run.n
        self.data = {_address(v): k for k in data if (v := run.values.get(k)) is not None}
        self.names = names  # address of a run buffer -> the first name it holds
        self.whole = data
        self.outside = outside
        self.g = Group(width=isa.WIDTH)
        self.index: dict[int, int] = {}  # address of a run buffer -> its array index
        self.scratch_of: dict[int, int] = {}  # address of a value kept in scratch -> index
        self.free: dict[int, list[int]] = {}  # size -> scratch arrays free for reuse
        # (address of a shared value, shape) -> its tile (see _binary_operand): never freed
        self.tiles: dict[tuple[int, tuple[int, ...]], int] = {}

    def group(self, steps: list[_Step], sums: list[tuple[str, list[np.ndarray]]]) -> Group:
        g = self.g
        width = max([s.out[0].size for s in steps]
                    + [a[0].size for s in steps for a in _arrays(s.args)])
        g.block = max(1, BLOCK_NUMBERS // width)
        last: dict[int, int] = {}
        for i, step in enumerate(steps):
            last.update((_address(a), i) for a in _arrays(step.args))
        for _, sources in sums:
            last.update((_address(s), len(steps)) for s in sources)
        for i, step in enumerate(steps):
            address = _address(step.out)
            if address in self.outside:
                out = self._buffer(step.out)
            else:
                out = self.scratch_of[address] = self._temporary(step.out[0].size)
            first = len(g.code)
            temporaries = self._emit(step, out)
            g.lines.extend([None] * (len(g.code) - first - 1) + [step.define])
            if step.define.target in self.check:  # summed while the value is in the block
                acc = np.zeros(step.out[0].size)
                g.code.append([self.isa.ACCSUM_I, 0,
                               g.add(acc, acc.size, label=f"check {step.define.target}"),
                               out, out, 0, 0, g.const(1.0)])
                g.lines.append(None)
                g.checks.append(acc)
            for t in temporaries:
                self._release(t)
            for a in {_address(a) for a in _arrays(step.args)}:
                if last.get(a) == i and a in self.scratch_of:
                    self._release(self.scratch_of.pop(a))
        for name, sources in sums:
            size = sources[0][0].size
            acc = np.zeros(size)
            index = g.add(acc, size, label=f"sum {name}")
            a, b = (self._operand(s) for s in (sources * 2)[:2])
            kind = self.isa.ACCDOT_I if len(sources) == 2 else self.isa.ACCSUM_I
            g.code.append([kind, 0, index, a, b, 0, 0, g.const(1.0 / self.n)])
            g.lines.append(None)
            g.sums.append((name, acc))
        return g

    # -- arrays

    def _buffer(self, array: np.ndarray) -> int:
        """The array index of a run buffer (or of the whole data array it stands for)."""
        address = _address(array)
        if address not in self.index:
            name = self.data.get(address)
            source = self.whole[name] if name is not None else array
            index = self.index[address] = self.g.add(source.reshape(-1), array[0].size,
                                                     label=self.names.get(address, "?"))
            if name is not None:
                self.g.data.append((name, index))
        return self.index[address]

    def _temporary(self, size: int) -> int:
        free = self.free.get(size)
        if free:
            return free.pop()
        return self.g.add(np.empty(self.g.block * size), size, scratch=True,
                          label=f"s{len(self.g.arrays)}")

    def _release(self, index: int) -> None:
        self.free.setdefault(self.g.size[index], []).append(index)

    def _operand(self, array: np.ndarray) -> int:
        address = _address(array)
        return self.scratch_of[address] if address in self.scratch_of else self._buffer(array)

    # -- instructions

    def _emit(self, step: _Step, out: int) -> list[int]:
        """Append ``step``'s instructions; the scratch arrays to release after it."""
        g, isa, name = self.g, self.isa, _op(step)
        shape = step.out.shape[1:]
        first = step.args[0]
        if name in ROWWISE:
            temporaries = []
            if name not in ("sum", "mean"):  # shifted rows, exponentials, maxima, sums
                temporaries.append(self._temporary(2 * first[0].size + 2))
            g.code.append([isa.ROW_I, getattr(isa, ROWWISE[name]), out, self._operand(first),
                           0, 0, 0, temporaries[0] if temporaries else -1])
            return temporaries
        if name == "pow" or name in UNARY:
            op = POW[float(step.args[1])] if name == "pow" else UNARY[name]
            g.code.append([isa.UNARY_I, getattr(isa, op), out, self._operand(first),
                           0, 0, 0, 0])
        elif name == "broadcast":
            if isinstance(first, np.ndarray):
                aligned = (1,) * (len(shape) - (first.ndim - 1)) + first.shape[1:]
                g.code.append(self._expand(first, aligned, shape, out))
            else:
                g.code.append([isa.FILL_I, 0, out, g.const(float(first)), 0, 0, 0, 0])
        else:
            temporaries = []
            (a, mode_a), (b, mode_b) = (self._binary_operand(x, shape, temporaries)
                                        for x in step.args)
            g.code.append([isa.BINARY_I, getattr(isa, BINARY[name]), out, a, b, mode_a,
                           mode_b, 0])
            return temporaries
        return []

    def _binary_operand(self, a: object, shape: tuple[int, ...], temporaries: list[int]
                        ) -> tuple[int, int]:
        """An operand of an elementwise line, as the instruction reads it: a constant, a
        shared scalar, or an array of the result's size (broadcast into scratch first when
        it is not: once per call for a value shared by every row, else per block)."""
        g, isa = self.g, self.isa
        if not isinstance(a, np.ndarray):
            return g.const(float(a)), isa.MODE_CONST  # type: ignore[arg-type]
        shared = a.shape[0] == 1 and self.n != 1
        if shared and a[0].size == 1:
            return self._buffer(a), isa.MODE_SHARED
        if not shared and a.shape[1:] == shape:
            return self._operand(a), isa.MODE_ARRAY
        if shared:
            # a tile of block rows, filled once by the head and read by every block: it
            # needs a scratch array of its own. One from the free pool was written, block
            # after block, by the line that used it before, overwriting the tile (issue 23)
            key = (_address(a), shape)
            if key not in self.tiles:
                self.tiles[key] = self.g.add(
                    np.empty(self.g.block * math.prod(shape)), math.prod(shape), scratch=True,
                    label=f"tile {self.names.get(key[0], '?')}")
                g.head.append(self._expand(a, a.shape[1:], shape, self.tiles[key]))
            return self.tiles[key], isa.MODE_ARRAY
        temp = self._temporary(math.prod(shape))
        g.code.append(self._expand(a, a.shape[1:], shape, temp))
        temporaries.append(temp)
        return temp, isa.MODE_ARRAY

    def _expand(self, a: np.ndarray, aligned: tuple[int, ...], shape: tuple[int, ...],
                out: int) -> list[int]:
        """The instruction: ``out`` = ``a`` (per-example shape ``aligned``) broadcast to
        ``shape``."""
        g = self.g
        index_map = np.broadcast_to(np.arange(a[0].size).reshape(aligned), shape).reshape(-1)
        offset = len(g.maps)
        g.maps.extend(int(i) for i in index_map)
        shared = a.shape[0] == 1 and self.n != 1
        mode = self.isa.MODE_SHARED if shared else self.isa.MODE_ARRAY
        return [self.isa.EXPAND_I, 0, out, self._operand(a), 0, mode, 0, offset]
