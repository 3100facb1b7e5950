"""One chunk size of a fused run: its bound program's stages (``fusedplan``) over the arena of
a reference run bound to that many rows, run at each chunk's first row; the numpy stages and
the means no group sums as the reference engine makes them (``boundcalls``), every group
verified when it is made (``fusedverify``) and, in the debug mode, every call's offsets.
"""

from __future__ import annotations

import math
import os
from types import ModuleType

import numpy as np

from . import fusedplan, fusedverify
from .boundcalls import line_call, mean_call
from .fusedplan import Group, Storage
from .plan import Run

__all__ = ["Part"]


class Part:
    """One chunk size: its bound program's stages over the buffers of a reference run bound
    to that many rows (which also recomputes what the fused pass does not store), run at
    ``offsets``. Built from the run's public parts only: its ``bound`` program, its arena
    (``arena``, ``offsets``) and its buffers (``values``, ``means``) by slot name."""

    def __init__(self, run: Run, offsets: list[int], keep: set[str],
                 whole: dict[str, np.ndarray] | None, vm: ModuleType,
                 check: set[str] | None = None, data: Storage | None = None) -> None:
        self.run, self.offsets = run, offsets
        bound, values = run.bound, run.values
        slots = Storage(run.arena, {name: (run.offsets[name], s.rows * math.prod(s.shape))
                                    for name, s in bound.slots.items()})
        self.schedule = plan = fusedplan.schedule(bound, slots, vm, keep, data, check)
        # in the debug mode, every offset and extent checked before each call (a scheduling
        # bug then raises, instead of reading or writing outside an arena)
        debug = os.environ.get("TENFLANG_FUSED_DEBUG") == "1"
        self.bounds = fusedverify.check_call if debug else None
        for stage in plan.stages:
            if isinstance(stage, Group):
                fusedverify.verify(stage, bound, vm, bound.n)
        outside = [line for line in [*plan.shared, *plan.stages] if not isinstance(line, Group)]
        # a checking pass's values outside the groups (numpy stages, shared lines): in buffers
        self.checked = [values[line.out] for line in outside
                        if line.define.target in (check or ())]
        self.shared = [line_call(line, values) for line in plan.shared]
        self.stages = [(s, s.freeze()) if isinstance(s, Group) else (line_call(s, values), None)
                       for s in plan.stages]
        self.means = [mean_call(m, bound.n, values, run.means) for m in plan.means]
        # data the numpy stages and mean rules read from this run's own input buffers
        self.copies = [k for k in whole or {} if bound.names.get(k) in plan.read]
        # the slots that hold their values after a fused pass
        self.stored = plan.written | {line.out for line in outside}
        self.stored |= {slot for k in bound.given if (slot := bound.names.get(k)) is not None}

    def execute(self, vm: ModuleType, start: int, whole: dict[str, np.ndarray] | None) -> None:
        run = self.run
        for name in self.copies:
            run.values[name][...] = whole[name][start:start + run.n]  # type: ignore[index]
        for call in self.shared:
            call()
        for stage, frozen in self.stages:
            if frozen is None:
                stage()
                continue
            for _, acc in stage.sums:
                acc[...] = 0.0
            for acc in stage.checks:
                acc[...] = 0.0
            for _, index in stage.data:
                frozen.base[index] = start
            if self.bounds is not None:
                self.bounds(stage, frozen, run.n)
            vm.execute(*frozen, int(run.n), int(stage.block))  # ints: one compiled signature
            for name, acc in stage.sums:
                run.means[name].reshape(-1)[...] = acc  # type: ignore[union-attr]
        for mean in self.means:
            mean()

    def finite(self) -> bool:
        """After a checking pass: whether the values it checked summed to finite numbers."""
        stages = [stage for stage, frozen in self.stages if frozen is not None]
        return all(np.isfinite(a.sum()) for a in [*self.checked,
                                                   *(c for g in stages for c in g.checks)])

    def reference(self, start: int, whole: dict[str, np.ndarray] | None,
                  compute: bool = True) -> None:
        """This chunk's data into the run's buffers (and the reference pass over them)."""
        for name, data in (whole or {}).items():
            buffer = self.run.values.get(name)
            if buffer is not None:
                buffer[...] = data[start:start + self.run.n]
        if compute:
            with np.errstate(all="ignore"):
                self.run.run()
