"""The fused engine's plan: a bound program's lines cut into groups the block loop runs in one
pass.

A :class:`~tenflang_nb.core.bound.BoundProgram` says, for one batch, every line's operator,
operands (NULL, constants, aliases and identities resolved) and slot, and how each batch
mean is taken. :func:`schedule` reads that, by slot name, and splits the lines into
*stages*, in program order:

* lines whose values are the same for every example (``transpose W2``) run once, first,
  with their numpy kernels;
* a maximal run of lines that the block loop can do (every elementwise operator, sums,
  means, softmax and friends, broadcasts: see ``UNARY``, ``BINARY``, ``ROWWISE``) becomes one
  :class:`Group` of instructions for ``fusedvm.execute``;
* any other line (a matrix product: BLAS does it best) is a stage of its own, its numpy
  kernel as the reference engine runs it.

Inside a group, a value lives in a block-sized scratch array unless something outside the
group reads it (a later stage, a batch-mean rule such as the ``outer`` GEMM, or a name the
caller wants to read): only those are written to their slots' buffers. A batch mean of a value
the group computes is summed in the same pass (``ACCSUM``, or ``ACCDOT`` for the mean of a
product of two per-example scalars), so a weight's gradient line may never be stored at all.

Everything here is numpy: the instructions (``Code``, ``Kind``, ``Unary``, ...) come from the
compiled module's one table (``isa``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import NamedTuple

import numpy as np

from .bound import BoundProgram, Instruction, Mean, Operand

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

ALIGN = 8  # offsets in a group's own arena: multiples of 8 numbers (64 bytes, a cache line)


@dataclass(frozen=True)
class Storage:
    """Values in one arena: each slot's (offset, length) in it, in numbers (a run's slots,
    or the whole data set an engine taking chunks reads from)."""

    arena: np.ndarray
    extents: Mapping[str, tuple[int, int]]


class Call(NamedTuple):
    """The arguments of ``fusedvm.execute`` but ``rows`` and ``block``: the instructions,
    the three arenas (``fusedvm.Space``), and per array index its arena, offset, numbers a
    row, whether it is block scratch and its first row (``base``, set before each call)."""

    head: np.ndarray
    code: np.ndarray
    run: np.ndarray
    group: np.ndarray
    data: np.ndarray
    space: np.ndarray
    offset: np.ndarray
    size: np.ndarray
    scratch: np.ndarray
    base: np.ndarray
    consts: np.ndarray
    maps: np.ndarray


@dataclass
class Group:
    """One ``fusedvm.execute`` call: its arrays (each an extent of one of three arenas: the
    run's slots, the group's own scratch and accumulators, the whole data) and its
    instructions."""

    width: int = 8  # numbers in an instruction (fusedvm.WIDTH)
    space: list[int] = field(default_factory=list)  # the arena of each array (fusedvm.Space)
    offset: list[int] = field(default_factory=list)  # where it starts there, in numbers
    length: list[int] = field(default_factory=list)  # how many numbers it spans
    size: list[int] = field(default_factory=list)
    scratch: list[int] = field(default_factory=list)
    consts: list[float] = field(default_factory=list)
    maps: list[int] = field(default_factory=list)
    # the instructions (``fusedvm.Code`` tuples): ``head`` once per call, ``code`` per block
    head: list[tuple[int, ...]] = field(default_factory=list)
    code: list[tuple[int, ...]] = field(default_factory=list)
    block: int = 1
    # the arenas: the run's slots, the group's own (allocated by ``finish``), the data
    run: np.ndarray = field(default_factory=lambda: np.zeros(1))
    arena: np.ndarray = field(default_factory=lambda: np.zeros(1))
    whole: np.ndarray = field(default_factory=lambda: np.zeros(1))
    # (input name, array index): data read straight from the whole data set, from the row
    # where the chunk starts (set in ``base`` before each call)
    data: list[tuple[str, int]] = field(default_factory=list)
    # (mean's name, accumulator): the batch mean, as terms weighted 1/N summed over the
    # rows (zeroed before each chunk)
    sums: list[tuple[str, np.ndarray]] = field(default_factory=list)
    # sums of the values a checking schedule checks (NaN or infinite when a value is)
    checks: list[np.ndarray] = field(default_factory=list)
    # for the listing (core/fusedlisting.py) and the verifier (core/fusedverify.py): what
    # each array is, the slot of a stored one (None: scratch, an accumulator), and the line
    # each instruction of ``code`` computes (None: a broadcast into scratch for the next one)
    labels: list[str] = field(default_factory=list)
    slots: list[str | None] = field(default_factory=list)
    lines: list[Instruction | None] = field(default_factory=list)
    _own: int = 0  # numbers of the group's own arena so far

    def add(self, space: int, offset: int | None, length: int, size: int,
            scratch: bool = False, label: str = "", slot: str | None = None) -> int:
        """A new array: ``length`` numbers at ``offset`` of arena ``space`` (None: the
        next free extent of the group's own)."""
        if offset is None:
            offset = self._own
            self._own += -(-max(1, length) // ALIGN) * ALIGN
        self.space.append(space)
        self.offset.append(offset)
        self.length.append(length)
        self.size.append(size)
        self.scratch.append(int(scratch))
        self.labels.append(label)
        self.slots.append(slot)
        return len(self.space) - 1

    def own(self, index: int) -> np.ndarray:
        """The numbers of array ``index`` of the group's own arena (after ``finish``)."""
        return self.arena[self.offset[index]:self.offset[index] + self.length[index]]

    def finish(self, sums: list[tuple[str, int]], checks: list[int]) -> None:
        """The group's own arena allocated, and its accumulators' views in it."""
        self.arena = np.zeros(max(1, self._own))
        self.sums = [(name, self.own(i)) for name, i in sums]
        self.checks = [self.own(i) for i in checks]

    def const(self, value: float) -> int:
        self.consts.append(float(value))
        return len(self.consts) - 1

    def freeze(self) -> Call:
        """The arguments of ``fusedvm.execute`` but ``rows`` and ``block`` (``base`` is
        filled by the caller)."""
        def table(rows: list[tuple[int, ...]]) -> np.ndarray:
            return np.array(rows, dtype=np.int64).reshape(-1, self.width)

        def ints(values: list[int]) -> np.ndarray:
            return np.array(values, dtype=np.int64)

        return Call(table(self.head), table(self.code), self.run, self.arena, self.whole,
                    ints(self.space), ints(self.offset), ints(self.size), ints(self.scratch),
                    np.zeros(len(self.space), dtype=np.int64), np.array(self.consts or [0.0]),
                    ints(self.maps or [0]))


@dataclass
class Schedule:
    """A bound program's lines as stages (see the module): ``shared`` lines first, then
    ``stages`` in order (a :class:`Group` or a line run by its numpy kernel), then the batch
    means no group sums (``means``, in the bound program's order)."""

    shared: list[Instruction]
    stages: list[Group | Instruction]
    means: list[Mean]
    summed: list[str]  # the means the groups sum
    written: set[str]  # the slots the groups fill
    read: set[str]  # the slots numpy stages and the means outside the groups read


def _fusable(line: Instruction) -> bool:
    if line.op == "pow":
        exponent = line.operands[1]
        return exponent.slot is None and float(exponent.const or 0.0) in POW
    return line.op in UNARY or line.op in BINARY or line.op in ROWWISE or line.op == "broadcast"


def _size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def schedule(bound: BoundProgram, slots: Storage, isa: ModuleType, keep: set[str],
             data: Storage | None = None, check: set[str] | None = None) -> Schedule:
    """The stages of ``bound`` (module docstring), in the instructions of ``isa`` (fusedvm),
    over its slots in the arena ``slots``. ``keep``: names whose per-example values the
    caller will read. ``data``: per-example inputs that groups read from the whole data set
    (from the chunk's first row) instead of their slots. ``check``: lines
    whose values the groups also sum, in the pass, into their ``checks`` (whether they are
    all finite, without storing them)."""
    per_row = [line for line in bound.instructions if bound.per_example(line.out)]
    shared = [line for line in bound.instructions if not bound.per_example(line.out)]
    items: list[list[Instruction] | Instruction] = []
    for line in per_row:
        if not _fusable(line):
            items.append(line)
        elif items and isinstance(items[-1], list):
            items[-1].append(line)
        else:
            items.append([line])
    producer = {line.out: i for i, item in enumerate(items)
                if isinstance(item, list) for line in item}
    given = {slot for k in bound.given if (slot := bound.names.get(k)) is not None}
    # a batch mean is summed by the last group that computes one of its sources, when every
    # other source is a given value or another group's
    sums: dict[int, list[tuple[str, list[str]]]] = {}
    closures: list[Mean] = []
    read: set[str] = set()
    for mean in bound.means:
        if mean.how in ("view", "null"):
            continue
        sources = _mean_sources(bound, mean)
        places = [producer.get(s) for s in sources or []]
        if sources and any(p is not None for p in places) and all(
                p is not None or s in given for s, p in zip(sources, places, strict=True)):
            sums.setdefault(max(p for p in places if p is not None), []).append(
                (mean.name, sources))
            continue
        closures.append(mean)
        read.update(mean.slots())
    outside = set(read)  # values read outside the group that computes them
    for i, item in enumerate(items):
        for line in item if isinstance(item, list) else [item]:
            for a in line.slots():
                if producer.get(a, i) != i:
                    outside.add(a)
                if not isinstance(item, list):
                    read.add(a)
        for _, sources in sums.get(i, []):
            outside.update(s for s in sources if producer.get(s, i) != i)
    # kept values, and the values whose mean is a view of their slot (the same for every
    # example, or a batch of one)
    outside.update(slot for k in keep if (slot := bound.names.get(k)) is not None)
    outside.update(m.out for m in bound.means if m.how == "view" and m.out is not None)
    stages: list[Group | Instruction] = [
        _Builder(bound, slots, isa, data, outside, check or set()).group(
            item, sums.get(i, []))
        if isinstance(item, list) else item for i, item in enumerate(items)]
    return Schedule(shared, stages, closures,
                    [name for group in sums.values() for name, _ in group],
                    {a for a in outside if a in producer}, read)


def _mean_sources(bound: BoundProgram, mean: Mean) -> list[str] | None:
    """The per-example slots whose column sums give this mean: the value itself, or the two
    per-example scalars whose product it is (ops' ``_product_mean``); None: neither."""
    if mean.how == "batch" and mean.source is not None:
        return [mean.source]
    line = mean.line
    if mean.how == "rule" and line is not None and line.op == "mul":
        slots = [o.slot for o in line.operands]
        if all(s is not None and o.shape == () and bound.slots[s].rows == bound.n
               for s, o in zip(slots, line.operands, strict=True)):
            return slots  # type: ignore[return-value]
    return None


class _Builder:
    """Instructions for one group: operands resolved, block-sized scratch arrays shared by
    values of the same size whose lives do not overlap."""

    def __init__(self, bound: BoundProgram, slots: Storage, isa: ModuleType,
                 data: Storage | None, outside: set[str], check: set[str]) -> None:
        self.isa = isa
        self.check = check
        self.bound = bound
        self.slots = slots
        self.n = bound.n
        self.whole = data
        self.outside = outside
        self.g = Group(width=isa.WIDTH, run=slots.arena,
                       whole=data.arena if data is not None else np.zeros(1))
        self.own = isa.Space.GROUP
        self.sums: list[tuple[str, int]] = []  # (mean's name, its accumulator's index)
        self.checks: list[int] = []
        self.index: dict[str, int] = {}  # a stored slot -> its array index
        self.scratch_of: dict[str, int] = {}  # a slot kept in scratch -> its array index
        self.free: dict[int, list[int]] = {}  # size -> scratch arrays free for reuse
        # (a shared slot, shape) -> its tile (see _binary_operand): never freed
        self.tiles: dict[tuple[str, tuple[int, ...]], int] = {}

    def shared(self, slot: str) -> bool:
        return self.bound.slots[slot].rows == 1 and self.n != 1

    def group(self, lines: list[Instruction], sums: list[tuple[str, list[str]]]) -> Group:
        g, slots = self.g, self.bound.slots
        width = max([_size(slots[line.out].shape) for line in lines]
                    + [_size(o.shape) for line in lines for o in line.operands if o.slot])
        g.block = max(1, BLOCK_NUMBERS // width)
        last: dict[str, int] = {}
        for i, line in enumerate(lines):
            last.update((a, i) for a in line.slots())
        for _, sources in sums:
            last.update((s, len(lines)) for s in sources)
        for i, line in enumerate(lines):
            size = _size(slots[line.out].shape)
            if line.out in self.outside:
                out = self._buffer(line.out)
            else:
                out = self.scratch_of[line.out] = self._temporary(size)
            first = len(g.code)
            temporaries = self._emit(line, out)
            g.lines.extend([None] * (len(g.code) - first - 1) + [line])
            if line.define.target in self.check:  # summed while the value is in the block
                acc = g.add(self.own, None, size, size, label=f"check {line.define.target}")
                g.code.append(self.isa.Code(self.isa.Kind.ACCSUM, out=acc, a=out, b=out,
                                            extra=g.const(1.0)))
                g.lines.append(None)
                self.checks.append(acc)
            for t in temporaries:
                self._release(t)
            for a in set(line.slots()):
                if last.get(a) == i and a in self.scratch_of:
                    self._release(self.scratch_of.pop(a))
        for name, sources in sums:
            size = _size(slots[sources[0]].shape)
            index = g.add(self.own, None, size, size, label=f"sum {name}")
            a, b = (self._operand(s) for s in (sources * 2)[:2])
            kind = self.isa.Kind.ACCDOT if len(sources) == 2 else self.isa.Kind.ACCSUM
            g.code.append(self.isa.Code(kind, out=index, a=a, b=b,
                                        extra=g.const(1.0 / self.n)))
            g.lines.append(None)
            self.sums.append((name, index))
        g.finish(self.sums, self.checks)
        return g

    # -- arrays

    def _buffer(self, slot: str) -> int:
        """The array index of a slot (or of the whole data it stands for)."""
        if slot not in self.index:
            size = _size(self.bound.slots[slot].shape)
            if self.whole is not None and slot in self.whole.extents:
                offset, length = self.whole.extents[slot]
                index = self.g.add(self.isa.Space.DATA, offset, length, size, label=slot,
                                   slot=slot)
                self.g.data.append((slot, index))
            else:
                offset, length = self.slots.extents[slot]
                index = self.g.add(self.isa.Space.RUN, offset, length, size, label=slot,
                                   slot=slot)
            self.index[slot] = index
        return self.index[slot]

    def _temporary(self, size: int) -> int:
        free = self.free.get(size)
        if free:
            return free.pop()
        return self.g.add(self.own, None, self.g.block * size, size, scratch=True,
                          label=f"s{len(self.g.space)}")

    def _release(self, index: int) -> None:
        self.free.setdefault(self.g.size[index], []).append(index)

    def _operand(self, slot: str) -> int:
        return self.scratch_of[slot] if slot in self.scratch_of else self._buffer(slot)

    # -- instructions

    def _emit(self, line: Instruction, out: int) -> list[int]:
        """Append ``line``'s instructions; the scratch arrays to release after it."""
        g, isa, name = self.g, self.isa, line.op
        shape = self.bound.slots[line.out].shape
        first = line.operands[0]
        if name in ROWWISE:
            temporaries = []
            if name not in ("sum", "mean"):  # shifted rows, exponentials, maxima, sums
                temporaries.append(self._temporary(2 * _size(first.shape) + 2))
            g.code.append(isa.Code(isa.Kind.ROW, isa.Row[ROWWISE[name]], out,
                                   self._operand(str(first.slot)),
                                   extra=temporaries[0] if temporaries else -1))
            return temporaries
        if name == "pow" or name in UNARY:
            op = POW[float(line.operands[1].const or 0.0)] if name == "pow" else UNARY[name]
            g.code.append(isa.Code(isa.Kind.UNARY, isa.Unary[op], out,
                                   self._operand(str(first.slot))))
        elif name == "broadcast":
            if first.slot is not None:
                aligned = (1,) * (len(shape) - len(first.shape)) + first.shape
                g.code.append(self._expand(first, aligned, shape, out))
            else:
                g.code.append(isa.Code(isa.Kind.FILL, out=out,
                                       a=g.const(float(first.const or 0.0))))
        else:
            temporaries = []
            (a, mode_a), (b, mode_b) = (self._binary_operand(x, shape, temporaries)
                                        for x in line.operands)
            g.code.append(isa.Code(isa.Kind.BINARY, isa.Binary[BINARY[name]], out, a, b,
                                   mode_a, mode_b))
            return temporaries
        return []

    def _binary_operand(self, a: Operand, shape: tuple[int, ...], temporaries: list[int]
                        ) -> tuple[int, int]:
        """An operand of an elementwise line, as the instruction reads it: a constant, a
        shared scalar, or an array of the result's size (broadcast into scratch first when
        it is not: once per call for a value shared by every row, else per block)."""
        g, isa = self.g, self.isa
        if a.slot is None:
            return g.const(float(a.const or 0.0)), isa.Mode.CONST
        shared = self.shared(a.slot)
        if shared and _size(a.shape) == 1:
            return self._buffer(a.slot), isa.Mode.SHARED
        if not shared and a.shape == shape:
            return self._operand(a.slot), isa.Mode.ARRAY
        if shared:
            # a tile of block rows, filled once by the head and read by every block: it
            # needs a scratch array of its own. One from the free pool was written, block
            # after block, by the line that used it before, overwriting the tile (issue 23)
            key = (a.slot, shape)
            if key not in self.tiles:
                self.tiles[key] = self.g.add(
                    self.own, None, self.g.block * math.prod(shape), math.prod(shape),
                    scratch=True, label=f"tile {a.slot}")
                g.head.append(self._expand(a, a.shape, shape, self.tiles[key]))
            return self.tiles[key], isa.Mode.ARRAY
        temp = self._temporary(math.prod(shape))
        g.code.append(self._expand(a, a.shape, shape, temp))
        temporaries.append(temp)
        return temp, isa.Mode.ARRAY

    def _expand(self, a: Operand, aligned: tuple[int, ...], shape: tuple[int, ...],
                out: int) -> tuple[int, ...]:
        """The instruction: ``out`` = ``a`` (per-example shape ``aligned``) broadcast to
        ``shape``."""
        g, slot = self.g, str(a.slot)
        index_map = np.broadcast_to(np.arange(_size(a.shape)).reshape(aligned),
                                    shape).reshape(-1)
        offset = len(g.maps)
        g.maps.extend(int(i) for i in index_map)
        mode = self.isa.Mode.SHARED if self.shared(slot) else self.isa.Mode.ARRAY
        return self.isa.Code(self.isa.Kind.EXPAND, out=out, a=self._operand(slot),
                             mode_a=mode, extra=offset)


__all__ = ["BINARY", "POW", "ROWWISE", "UNARY", "Call", "Group", "Schedule", "Storage", "schedule"]
