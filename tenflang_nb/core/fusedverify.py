"""The fused program checked before it runs: a scheduling bug becomes an exception (and the
reference engine runs), never a wrong number or a crash of the student's kernel.

``fusedvm`` reads and writes raw addresses: an instruction that indexes past an array, or a
block scratch array overwritten while its value is still to be read, would silently give
wrong numbers (issue 23: a shared tile overwritten by an earlier line trained models to
wrong weights) or crash the process. :func:`verify` walks one group's instructions as the
block loop will run them and checks, for ``rows`` example rows a call:

* every index (array, constant, map entry) is in range, and every array holds what the
  instruction reads or writes (a scratch array a block of rows, a run buffer every row, a
  value shared by every example one row, read only as shared);
* the sizes of operands and results agree with the instruction's kind;
* no instruction writes the data, or a tile the head fills once per call;
* every operand read from a block scratch array still holds the value the line reads (the
  array was last written by the line computing that value, or by a broadcast of it).

It costs one pass over the instructions, once per binding.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from .bound import BoundProgram
from .fusedplan import Call, Group

__all__ = ["ScheduleError", "check_call", "verify"]


class ScheduleError(AssertionError):
    """The fused engine's schedule is wrong: a bug of the package, never of the program."""


def _arenas(group: Group, isa: ModuleType) -> dict[int, np.ndarray]:
    return {isa.Space.RUN: group.run, isa.Space.GROUP: group.arena, isa.Space.DATA: group.whole}


def _extent(group: Group, arenas: dict[int, Any], i: int, offset: int) -> None:
    """Array ``i`` of ``group``, at ``offset``, lies inside its arena."""
    arena = arenas.get(int(group.space[i]))
    if arena is None:
        raise ScheduleError(f"fused schedule: {group.labels[i]} is in no arena "
                            f"({group.space[i]})")
    if offset < 0 or offset + group.length[i] > arena.size:
        raise ScheduleError(
            f"fused schedule: {group.labels[i]} ({group.length[i]} numbers at offset "
            f"{offset}) lies outside its arena of {arena.size} numbers")


def check_call(group: Group, call: Call, rows: int) -> None:
    """Before one ``fusedvm.execute(*call, rows, ...)`` of ``group`` (the debug mode): the
    arguments are the group's, every array at its offset lies inside its arena, and the data
    read from row ``base`` on holds ``rows`` more rows. Raises :class:`ScheduleError`."""
    count = len(group.space)
    if not all(len(a) == count for a in (call.space, call.offset, call.size, call.scratch,
                                         call.base)):
        raise ScheduleError("fused schedule: the call's array tables differ in length")
    arenas = {int(space): arena for space, arena in
              zip((0, 1, 2), (call.run, call.group, call.data), strict=True)}
    for i in range(count):
        if (call.space[i], call.size[i], call.scratch[i]) != (
                group.space[i], group.size[i], group.scratch[i]):
            raise ScheduleError(f"fused schedule: the call's tables differ from the group's "
                                f"at {group.labels[i]}")
        _extent(group, arenas, i, int(call.offset[i]))
        if call.base[i] and (call.base[i] < 0 or (call.base[i] + rows) * call.size[i]
                             > group.length[i]):
            raise ScheduleError(f"fused schedule: {group.labels[i]} read from row "
                                f"{call.base[i]} for {rows} rows, past its end")


def verify(group: Group, bound: BoundProgram, isa: ModuleType, rows: int) -> None:
    """Raise :class:`ScheduleError` where ``group`` (of the program ``bound``) would go wrong
    on ``rows`` rows a call."""
    _Verifier(group, bound, isa, rows).check()


class _Verifier:
    def __init__(self, group: Group, bound: BoundProgram, isa: ModuleType, rows: int) -> None:
        self.g, self.bound, self.isa, self.rows = group, bound, isa, rows
        count = len(group.space)
        if not (len(group.size) == len(group.scratch) == len(group.labels) == len(group.offset)
                == len(group.length) == len(group.slots) == count):
            raise ScheduleError("the group's array tables differ in length")
        arenas = _arenas(group, isa)
        for i in range(count):
            _extent(group, arenas, i, group.offset[i])
        self.data = {index for _, index in group.data}
        # the value a stored array (a slot's buffer, or the whole data standing for one)
        # holds: its slot's name
        for i, slot in enumerate(group.slots):
            if slot is not None and slot not in bound.slots:
                raise ScheduleError(f"the group's array {i} stands for an unknown slot {slot}")
        self.tiles = {int(row[2]) for row in group.head}
        # what each scratch array holds now: the slot of a value, or ("broadcast", it)
        self.held: dict[int, Any] = {}
        self.row_kinds = {int(m): m.name for m in isa.Row}

    def fail(self, where: str, message: str) -> None:
        raise ScheduleError(f"fused schedule, {where}: {message}")

    # -- arrays

    def index(self, where: str, i: int) -> int:
        if not 0 <= i < len(self.g.space):
            self.fail(where, f"array index {i} out of range")
        return i

    def holds(self, where: str, i: int, numbers: int) -> None:
        if self.g.length[i] < numbers:
            self.fail(where, f"{self.g.labels[i]} holds {self.g.length[i]} numbers, "
                             f"the instruction needs {numbers}")

    def per_row(self, where: str, i: int) -> None:
        """Array ``i`` read or written one row per example row of the call."""
        size = self.g.size[i]
        needed = (self.g.block if self.g.scratch[i] else self.rows) * size
        self.holds(where, i, needed)

    def shared(self, where: str, i: int, numbers: int) -> None:
        self.holds(where, i, numbers)

    def written(self, where: str, i: int, value: Any) -> None:
        if i in self.data:
            self.fail(where, f"writes the data {self.g.labels[i]}")
        if i in self.tiles and not where.startswith("head"):
            self.fail(where, f"writes {self.g.labels[i]}, filled once per call by the head")
        if self.g.scratch[i]:
            self.held[i] = value

    def read(self, where: str, i: int, value: Any) -> None:
        """Scratch array ``i`` read for ``value`` (None: not known, not checked)."""
        if value is None or not self.g.scratch[i]:
            return
        if i not in self.held:
            self.fail(where, f"reads {self.g.labels[i]} before anything was written to it")
        if self.held[i] != value and self.held[i] != ("broadcast", value):
            self.fail(where, f"reads {self.g.labels[i]} for another value than it holds "
                             "(overwritten while still to be read)")

    # -- instructions

    def check(self) -> None:
        for k, row in enumerate(self.g.head):
            self.instruction(f"head instruction {k}", row, None)
        lines = self.g.lines or [None] * len(self.g.code)
        if len(lines) != len(self.g.code):
            self.fail("code", "a line is not known for every instruction")
        for k, (row, line) in enumerate(zip(self.g.code, lines, strict=True)):
            operands = [o.slot for o in line.operands] if line is not None else []
            where = f"instruction {k} ({line.define})" if line else f"instruction {k}"
            self.instruction(where, row, operands, line.out if line is not None else None)

    def instruction(self, where: str, row: Any, operands: list[Any] | None,
                    value: Any = None) -> None:
        isa, g = self.isa, self.g
        if len(row) != isa.WIDTH:
            self.fail(where, f"has {len(row)} numbers, not {isa.WIDTH}")
        kind, op, out, a, b, mode_a, mode_b, extra = (int(v) for v in row)
        expected = (operands or []) + [None, None]
        if kind in (isa.Kind.ACCSUM, isa.Kind.ACCDOT):
            out, a, b = (self.index(where, i) for i in (out, a, b))
            if not 0 <= extra < len(g.consts):  # the terms' weight (1/N for a mean)
                self.fail(where, f"constant index {extra} out of range")
            self.per_row(where, a)
            self.read(where, a, None)
            if kind == isa.Kind.ACCDOT:
                self.per_row(where, b)
                if g.size[a] != 1 or g.size[b] != 1:
                    self.fail(where, "a product's mean needs one number a row on each side")
            self.shared(where, out, g.size[a] if kind == isa.Kind.ACCSUM else 1)
            return
        out = self.index(where, out)
        if kind == isa.Kind.UNARY:
            a = self.index(where, a)
            self.per_row(where, a)
            self.same_size(where, out, a)
            self.read(where, a, expected[0])
        elif kind == isa.Kind.BINARY:
            for i, (operand, mode) in enumerate(((a, mode_a), (b, mode_b))):
                self.operand(where, out, operand, mode, expected[i])
        elif kind == isa.Kind.EXPAND:
            a = self.index(where, a)
            if mode_a == isa.Mode.SHARED:
                self.shared(where, a, g.size[a])
            else:
                self.per_row(where, a)
                self.read(where, a, expected[0] if value is not None else None)
            mapped = np.asarray(g.maps[extra:extra + g.size[out]])
            if extra < 0 or len(mapped) != g.size[out] or (
                    len(mapped) and (mapped.min() < 0 or mapped.max() >= g.size[a])):
                self.fail(where, "its broadcast map is out of range")
            source = self.held.get(a) if g.scratch[a] else g.slots[a]
            if value is None:  # a broadcast into scratch for the next instruction
                self.per_row(where, out)
                self.written(where, out, ("broadcast", _value(source)))
                return
        elif kind == isa.Kind.FILL:
            if not 0 <= a < len(g.consts):
                self.fail(where, f"constant index {a} out of range")
        elif kind == isa.Kind.ROW:
            a = self.index(where, a)
            self.per_row(where, a)
            self.read(where, a, expected[0])
            name = self.row_kinds.get(op)
            if name is None:
                self.fail(where, f"unknown row operator {op}")
            one = name in ("SUM", "MEAN", "LOGSUMEXP")
            if g.size[out] != (1 if one else g.size[a]):
                self.fail(where, f"{name} gives {1 if one else g.size[a]} numbers a row, "
                                 f"{g.labels[out]} holds {g.size[out]}")
            if extra >= 0:
                self.index(where, extra)
                if not g.scratch[extra] or g.size[extra] < 2 * g.size[a] + 2:
                    self.fail(where, "its scratch is too small")
                self.per_row(where, extra)
                self.written(where, extra, ("temporary",))
            elif name not in ("SUM", "MEAN"):
                self.fail(where, f"{name} needs scratch")
        else:
            self.fail(where, f"unknown instruction kind {kind}")
        self.per_row(where, out)
        self.written(where, out, value)

    def operand(self, where: str, out: int, i: int, mode: int, value: Any) -> None:
        isa, g = self.isa, self.g
        if mode == isa.Mode.CONST:
            if not 0 <= i < len(g.consts):
                self.fail(where, f"constant index {i} out of range")
            return
        i = self.index(where, i)
        if mode == isa.Mode.SHARED:
            self.shared(where, i, 1)
            return
        if mode != isa.Mode.ARRAY:
            self.fail(where, f"unknown operand mode {mode}")
        self.per_row(where, i)
        self.same_size(where, out, i)
        self.read(where, i, value)

    def same_size(self, where: str, out: int, a: int) -> None:
        if self.g.size[out] != self.g.size[a]:
            self.fail(where, f"{self.g.labels[a]} has {self.g.size[a]} numbers a row, "
                             f"{self.g.labels[out]} {self.g.size[out]}")


def _value(held: Any) -> Any:
    """The value a broadcast stands for (a broadcast of a broadcast is of the same value)."""
    return held[1] if isinstance(held, tuple) and held[0] == "broadcast" else held
