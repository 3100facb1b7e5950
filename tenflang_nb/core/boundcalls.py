"""A bound program's lines and means as numpy calls over buffers by slot name: how the reference
engine (``plan.Run``) runs them, and the fused engine its numpy stages (a matrix product), the
lines that are the same for every example, and the means it does not sum in its block loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

import numpy as np

from . import ops
from .bound import Instruction, Mean

__all__ = ["MeanContext", "batch_mean", "line_call", "mean_call", "operands"]

Array = np.ndarray


def operands(line: Instruction, values: Mapping[str, Array | None]
             ) -> tuple[Array | np.float64, ...]:
    """``line``'s operands as its numpy kernel takes them, from buffers by slot name."""
    out: list[Array | np.float64] = []
    for o in line.operands:
        if o.slot is None:
            out.append(np.float64(o.const))
            continue
        a = values[o.slot]
        assert a is not None, o.slot
        out.append(a if a.shape[1:] == o.shape else a.reshape((a.shape[0], *o.shape)))
    return tuple(out)


def line_call(line: Instruction, values: Mapping[str, Array | None]) -> Callable[[], object]:
    """``line`` as one numpy call over the buffers ``values`` (by slot name), as the
    reference engine runs it."""
    return partial(ops.OPS[line.op].kernel(line.spec), *operands(line, values),
                   values[line.out])


def mean_call(mean: Mean, n: int, values: Mapping[str, Array | None],
              means: Mapping[str, Array | None]) -> Callable[[], object]:
    """The batch mean ``mean`` (``batch``, ``linear`` or ``rule``) as the reference engine
    takes it, from the buffers ``values`` into ``means[mean.name]``."""
    out = means[mean.name]
    assert out is not None, mean.name
    line = mean.line
    if mean.how == "linear" and line is not None:
        return partial(ops.OPS[line.op].kernel(line.spec), *(means[a] for a in mean.operands),
                       out=out)
    if mean.how == "rule" and line is not None:
        rule = ops.OPS[line.op].batch_mean
        call = rule(MeanContext(n, operands(line, values), out)) if rule else None
        assert call is not None, mean.name  # it was not None when binding decided so
        return call
    source = values[str(mean.source)]
    assert source is not None, mean.name
    return batch_mean(source, out)


def batch_mean(value: Array, out: Array | None = None) -> Callable[[], Array]:
    """Mean over the batch axis as one BLAS product (3x faster than ``mean(axis=0)``), into
    ``out`` (the per-example shape) when given.

    >>> batch_mean(np.array([[1.0, 2.0], [3.0, 6.0]]))()
    array([2., 4.])
    """
    n = value.shape[0]
    weights = np.full(n, 1.0 / n)
    flat = value.reshape(n, -1)
    result = np.empty(value.shape[1:]) if out is None else out
    flat_out = result.reshape(-1)  # a view: the product lands in ``result``

    def mean() -> Array:
        np.matmul(weights, flat, out=flat_out)
        return result

    return mean


@dataclass(frozen=True)
class MeanContext:
    """What an operator's batch-mean rule sees (``ops.MeanContext``)."""

    n: int
    args: tuple[Array | np.float64, ...]
    out: Array
