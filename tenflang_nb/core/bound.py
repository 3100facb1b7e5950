"""The bound program: what runs for one batch of N examples, the same for every engine.

Binding a plan to a batch (``Plan.bind``) decides everything that does not change from one
pass to the next: which values are NULL, which lines fold to constants, which names share a
value (an alias, ``mul x 1``), which values are per example and which are the same for
every example, and how each batch mean is taken. :class:`BoundProgram` writes those
decisions down by name, with no memory in it:

* a :class:`Slot` per stored value, named for the first variable it holds (its aliases map
  to it through :attr:`BoundProgram.names`): its per-example shape, its rows (N: one per
  example; 1: shared by every example), what fills it, and its lifetime in the
  instructions (the one defining it, the last one reading it);
* the :class:`Instruction` s of one pass, in order: an ``ops`` operator by name, its result
  slot, its operands (a slot or a constant, with the per-example shape the kernel reads);
* the :class:`Mean` s the run takes over the batch, and how (see :class:`Mean`).

Every engine builds from it (the reference engine in ``plan``, the fused one in
``fusedplan``), storage by slot name; ``engines`` holds the one interface callers use.

>>> from tenflang_nb.core.plan import Plan
>>> from tenflang_nb.core.program import parse
>>> p = parse("declare input x\\ndeclare weight w\\ndeclare output y\\ndeclare intvar z\\n"
...           "define z = mul x w\\ndefine y = exp z\\n")
>>> print(Plan(p).bind({"x": np.zeros(4), "w": 2.0}, 4, means=["y"]).bound.text())
bound program on 4 examples
  x [] per example, given (last read by 0)
  w [] shared, given (last read by 0)
  z [] per example, line 0 (last read by 1)
  y [] per example, line 1 (last read by the means)
  mean y [] shared, mean
  0: z = mul x w
  1: y = exp z
  mean y = batch y
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .formatting import fmt_number, fmt_shape
from .ops import KernelSpec, Shape
from .syntax import Define

__all__ = ["BoundProgram", "Instruction", "Mean", "Operand", "Slot", "lifetimes", "mean_slot"]

Array = np.ndarray


@dataclass(frozen=True)
class Slot:
    """One stored value. ``kind``: ``given`` (data or a weight), ``constant`` (a literal, or
    a line computed from literals only, at bind time), ``line`` (written by instruction
    ``defined``), ``mean`` (a batch mean). ``last_use``: the last instruction that reads it
    (-1: none does; the means are taken after every instruction)."""

    name: str
    shape: Shape
    rows: int
    kind: str
    defined: int | None = None
    last_use: int = -1

    @property
    def shared(self) -> bool:
        """The same for every example (one row)."""
        return self.rows == 1


@dataclass(frozen=True)
class Operand:
    """An operand: a slot (``slot``) or a constant (``const``), and the per-example shape the
    kernel reads it as (an elementwise line aligns a smaller operand on the last axes)."""

    slot: str | None
    const: float | None
    shape: Shape

    def __str__(self) -> str:
        return self.slot if self.slot is not None else fmt_number(float(self.const or 0.0))


@dataclass(frozen=True)
class Instruction:
    """One line of the pass: ``out = op operands`` (``op`` an ``ops.OPS`` name)."""

    op: str
    out: str
    operands: tuple[Operand, ...]
    spec: KernelSpec
    define: Define

    def slots(self) -> list[str]:
        """The slots it reads."""
        return [o.slot for o in self.operands if o.slot is not None]

    def __str__(self) -> str:
        return f"{self.out} = {self.op} {' '.join(map(str, self.operands))}"


@dataclass(frozen=True)
class Mean:
    """The batch mean of ``name``, into slot ``out`` (None: ``name`` is NULL). ``how``:

    * ``view``: the value is the same for every example (or the batch is one example):
      ``out`` is the value's own slot;
    * ``batch``: the mean over the rows of slot ``source``;
    * ``linear``: ``line`` (a linear operator, not run per example) applied to the means of
      ``operands`` (names listed before it);
    * ``rule``: the operator's batch-mean rule (``ops.Op.batch_mean``) over ``line``'s
      operands, ``line`` not run per example.
    """

    name: str
    out: str | None
    how: str
    source: str | None = None
    line: Instruction | None = None
    operands: tuple[str, ...] = ()

    def slots(self) -> list[str]:
        """The slots of per-example values it reads."""
        if self.how == "batch" and self.source is not None:
            return [self.source]
        if self.how == "rule" and self.line is not None:
            return self.line.slots()
        return []


def mean_slot(name: str) -> str:
    """The name of the slot holding ``name``'s batch mean (no variable has a space)."""
    return f"mean {name}"


@dataclass(frozen=True)
class BoundProgram:
    """A plan bound to ``n`` examples (see the module): slots, instructions, means."""

    n: int
    slots: Mapping[str, Slot]
    names: Mapping[str, str | None]  # every bound variable -> its slot (None: NULL)
    instructions: tuple[Instruction, ...]
    means: tuple[Mean, ...]
    given: tuple[str, ...]

    def slot(self, name: str) -> Slot | None:
        """The slot holding variable ``name`` (None: NULL, or not bound)."""
        slot = self.names.get(name)
        return None if slot is None else self.slots[slot]

    def skipped(self, name: str) -> bool:
        """Whether ``name`` is a line no pass computes (only its batch mean is taken, another
        way): its slot holds no value."""
        slot = self.slot(name)
        return slot is not None and slot.kind == "line" and slot.defined is None

    def per_example(self, slot: str) -> bool:
        """Whether slot ``slot`` holds one row per example (a batch of one: every slot)."""
        return self.slots[slot].rows == self.n or self.n == 1

    def text(self) -> str:
        """The program, listed (for maintainers and tests)."""
        out = [f"bound program on {self.n:,} examples"]
        for s in self.slots.values():
            where = "shared" if s.shared and self.n != 1 else "per example"
            what = s.kind if s.defined is None else f"line {s.defined}"
            use = ("" if s.last_use < 0 else " (last read by the means)"
                   if s.last_use == len(self.instructions) else f" (last read by {s.last_use})")
            out.append(f"  {s.name} {fmt_shape(s.shape)} {where}, {what}{use}")
        out.extend(f"  {i}: {line}" for i, line in enumerate(self.instructions))
        for m in self.means:
            how = {"batch": f"batch {m.source}", "view": f"view of {m.out}",
                   "linear": f"linear {m.line}", "rule": f"rule {m.line}",
                   "null": "NULL"}.get(m.how, m.how)
            out.append(f"  mean {m.name} = {how}")
        return "\n".join(out)


def lifetimes(slots: Mapping[str, Slot], instructions: Sequence[Instruction],
              means: Iterable[Mean]) -> dict[str, Slot]:
    """``slots`` with each one's defining instruction and last use filled in."""
    defined: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, line in enumerate(instructions):
        for s in line.slots():
            last[s] = i
        defined[line.out] = i
    after = len(instructions)
    for m in means:
        for s in m.slots():
            last[s] = after
    return {name: Slot(s.name, s.shape, s.rows, s.kind, defined.get(name),
                       last.get(name, -1)) for name, s in slots.items()}
