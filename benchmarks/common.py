"""Shared helpers of the benchmark scripts: one BLAS thread for everyone, timing, tables.

Every contender runs in the same process under ``threadpool_limits(1)`` (which caps
OpenBLAS/MKL/OpenMP pools that numpy and PyTorch have loaded) and, for PyTorch, also
``torch.set_num_threads(1)``: a comparison is only fair when no one gets a second core.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from tenflang_nb.core.gradcheck import agree, nonfinite_sides, relative_error


def torch_or_none() -> Any:
    """PyTorch, single-threaded, or None when it is not installed (it is optional)."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only settable before any parallel work has started
        pass
    return torch


@contextmanager
def one_thread() -> Iterator[None]:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """Best wall time of ``repeat`` calls (the least disturbed by other processes) and the
    last call's result."""
    best = float("inf")
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def assert_same(got: Any, reference: Any, what: str, rtol: float = 1e-10,
                atol: float = 1e-12) -> float:
    """Check two contenders computed the same numbers, by the package's one rule (never
    where either side is NaN or infinite: the message says which); the largest relative
    error."""
    problem = nonfinite_sides({"the contender": got, "the reference": reference})
    assert problem is None, f"{what}: {problem}"
    ok = agree(got, reference, rtol, atol)
    worst = float(np.max(relative_error(got, reference), initial=0.0))
    assert ok.all(), f"{what}: {int(np.sum(~ok))} values differ (relative error {worst:.1e})"
    return worst


def machine() -> str:
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, numpy {np.__version__}")


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)), line]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def seconds(t: float) -> str:
    if t >= 100:
        return f"{t:.0f} s"
    if t >= 1:
        return f"{t:.2f} s"
    return f"{t * 1e3:.2f} ms"
