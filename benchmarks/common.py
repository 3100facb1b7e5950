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
from pathlib import Path
from typing import Any

import numpy as np

from tenflang_nb.core.agreement import entrywise_agreement

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


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
    """Check two contenders computed the same numbers, by the package's one rule
    (``core.agreement.entrywise_agreement``: never where either side is NaN or infinite, the
    message says which); the largest relative error."""
    found = entrywise_agreement(got, reference, rtol=rtol, atol=atol)
    problem = found.reason("the contender", "the reference")
    if found.nonfinite is None and found.shapes is None and found.each is not None:
        problem = f"{int(np.sum(~found.each))} values differ ({problem})"
    assert found.ok, f"{what}: {problem}"
    return found.error


def cpu_name() -> str:
    """The CPU's model name, family and model, and widest vector extension as the kernel
    reports them (lscpu's "Model name", "CPU family", "Model" and flags): "AMD EPYC (family 25
    model 17), AVX-512"."""
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return platform.processor() or platform.machine()
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                 if line.startswith("model name")), platform.machine())
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines()
                  if line.startswith("flags")), [])
    widest = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(":")
                                                   for line in info.split("\n\n")[0].splitlines())}
    model = (f" (family {fields['cpu family']} model {fields['model']})"
             if "cpu family" in fields and "model" in fields else "")
    guest = ", in a virtual machine (hypervisor flag)" if "hypervisor" in flags else ""
    return f"{name}{model}, {widest}{guest}"


def machine() -> str:
    return (f"{cpu_name()}, {os.cpu_count()} cores, "
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


def model_cases() -> list[tuple[str, Any, Any]]:
    """The three models the mode benchmarks compare on: (name, shape program, training data
    or None for random inputs): the seed example, the XOR network, the digits network."""
    from tenflang_nb.core import api
    from tenflang_nb.core.examples import SEED_EXAMPLE

    return [
        ("seed example", api.parse(SEED_EXAMPLE), None),
        ("xor 2-4-1", api.parse_file(EXAMPLES / "xor" / "shape.tf"),
         api.load_data(EXAMPLES / "xor" / "training_data.txt")),
        ("digits 64-32-10", api.parse_file(EXAMPLES / "digits" / "shape.tf"),
         api.load_data(EXAMPLES / "digits" / "digits.npz")),
    ]
