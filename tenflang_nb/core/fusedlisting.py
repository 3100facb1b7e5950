"""The fused program, listed: which GCP lines run together in one pass over blocks of
examples, which values stay in cache, which are stored, what goes to BLAS.

The fused engine (``fused``) runs a bound GCP as the stages ``fusedplan.schedule`` makes of
it. :func:`listing` reads those stages back (nothing is recomputed or re-derived), in two
readings of one :class:`Listing`: its :attr:`~Listing.passes`, for students (lines, not
instructions: the ``fusion`` view), and :meth:`Listing.text`, the maintainers' listing of
every instruction of the block loop, each with the array it writes::

    pass 2: block loop over 512 examples a block (lines 14-16)
      per block:
        s3 = EXP z                    # line 14: define e = exp z   [block scratch]
        o = MUL s3 w                  # line 15: define o = mul e w  [stored]
        sum d/L/d/w += o              # the batch mean of d/L/d/w, in the pass
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .formatting import fmt_number
from .fused import FusedRun
from .fusedplan import Group
from .syntax import Define

__all__ = ["Listing", "Pass", "listing"]


@dataclass(frozen=True)
class Pass:
    """One stage of the fused program, in program order.

    ``how``: ``"once"`` (lines whose values are the same for every example: computed once
    per step by numpy), ``"block loop"`` (one pass over the examples, ``block`` at a time),
    or ``"numpy"`` (one numpy call over all the examples: a matrix product goes to BLAS).
    ``cached``: values that live only in the block's scratch arrays (in cache, never
    stored); ``stored``: values written out for a later stage or the caller; ``summed``:
    the batch means (weight gradients, the loss) summed in the pass.
    """

    how: str
    lines: tuple[Define, ...]
    block: int = 0
    cached: tuple[str, ...] = ()
    stored: tuple[str, ...] = ()
    summed: tuple[str, ...] = ()
    instructions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Listing:
    """A fused program on ``examples`` examples: its passes, and the batch means numpy takes
    after them (``means``)."""

    examples: int
    passes: tuple[Pass, ...]
    means: tuple[str, ...]

    def text(self) -> str:
        """The maintainers' listing: every pass, and every instruction of a block loop."""
        count = len(self.passes)
        out = [f"fused program on {self.examples:,} examples: {count} pass{'es' * (count != 1)}"]
        for i, p in enumerate(self.passes, 1):
            lines = _line_span(p.lines)
            if p.how == "block loop":
                out.append(f"pass {i}: block loop over {p.block:,} examples a block{lines}")
                out.extend(f"  {row}" for row in p.instructions)
            else:
                what = ("once per step (the same for every example)" if p.how == "once"
                        else "numpy over all examples")
                out.append(f"pass {i}: {what}{lines}")
                out.extend(f"  {_define(d)}" for d in p.lines)
        if self.means:
            out.append("then the batch means of " + ", ".join(self.means) + " (numpy)")
        return "\n".join(out)


def listing(run: FusedRun) -> Listing:
    """The listing of a run bound on the fused engine (of its first chunk size: every chunk
    runs the same stages)."""
    schedule = run.parts[0].schedule
    passes: list[Pass] = []
    if schedule.shared:
        passes.append(Pass("once", tuple(s.define for s in schedule.shared)))
    for stage in schedule.stages:
        if isinstance(stage, Group):
            passes.append(_group_pass(stage, run.vm))
        else:
            passes.append(Pass("numpy", (stage.define,)))
    return Listing(run.n, tuple(passes), tuple(m.name for m in schedule.means))


def _group_pass(group: Group, isa: ModuleType) -> Pass:
    decode = _Decoder(group, isa)
    head = [decode.row(row, None) for row in group.head]
    lines = [line.define if line is not None else None for line in group.lines]
    body = [decode.row(row, line) for row, line in zip(group.code, lines, strict=True)]
    defines = tuple(d for d in lines if d is not None)
    scratch = {row[2] for row in group.code if group.scratch[row[2]]}
    cached = tuple(d.target for d, row in zip(lines, group.code, strict=True)
                   if d is not None and row[2] in scratch)
    stored = tuple(d.target for d, row in zip(lines, group.code, strict=True)
                   if d is not None and row[2] not in scratch)
    instructions = ([*(["once per call:"] + [f"  {r}" for r in head] if head else [])]
                    + ["per block:"] + [f"  {r}" for r in body])
    return Pass("block loop", defines, group.block, cached, stored,
                tuple(name for name, _ in group.sums), tuple(instructions))


class _Decoder:
    """Instructions back to text: operator names from the instruction set, arrays by what
    they hold (a scratch array by the value it was last written with)."""

    def __init__(self, group: Group, isa: ModuleType) -> None:
        self.g, self.isa = group, isa
        self.held: dict[int, str] = {}  # scratch array -> the value in it now
        self.unary = {int(m): m.name for m in isa.Unary}
        self.binary = {int(m): m.name for m in isa.Binary}
        self.rowwise = {int(m): m.name for m in isa.Row}

    def name(self, index: int) -> str:
        label = self.g.labels[index]
        held = self.held.get(index)
        return f"{label}({held})" if held else label

    def operand(self, index: int, mode: int) -> str:
        if mode == self.isa.Mode.CONST:
            return fmt_number(self.g.consts[index])
        return self.name(index)

    def row(self, row: Any, line: Define | None) -> str:
        isa = self.isa
        kind, op, out, a, b, mode_a, mode_b, _ = (int(v) for v in row)
        if kind == isa.Kind.UNARY:
            text = f"{self.unary[op]} {self.name(a)}"
        elif kind == isa.Kind.BINARY:
            text = f"{self.binary[op]} {self.operand(a, mode_a)} {self.operand(b, mode_b)}"
        elif kind == isa.Kind.EXPAND:
            text = f"BROADCAST {self.name(a)}"
        elif kind == isa.Kind.FILL:
            text = f"FILL {fmt_number(self.g.consts[a])}"
        elif kind == isa.Kind.ROW:
            text = f"{self.rowwise[op]} of each row of {self.name(a)}"
        else:  # ACCSUM_I, ACCDOT_I: a batch mean (or a finiteness check) summed in the pass
            what = self.name(a) if kind == isa.Kind.ACCSUM else f"{self.name(a)} * {self.name(b)}"
            return f"{self.g.labels[out]} += {what}"
        if self.g.scratch[out] and not self.g.labels[out].startswith("tile"):
            self.held[out] = line.target if line is not None else "broadcast"
        target = self.name(out)
        if line is None:
            return f"{target} = {text}"
        where = "block scratch" if self.g.scratch[out] else "stored"
        return f"{target} = {text}    # {_define(line)}  [{where}]"


def _define(d: Define) -> str:
    return f"line {d.src.line}: {d}" if d.src.line else str(d)


def _line_span(defines: tuple[Define, ...]) -> str:
    numbers = [d.src.line for d in defines if d.src.line]
    if not numbers:
        return ""
    low, high = min(numbers), max(numbers)
    return f" (line {low})" if low == high else f" (lines {low}-{high})"
