"""Which means for a fused engine (issue 19): every candidate measured on W1 and W2, with import
and compile times, on this CPU and under AVX2 emulation.

Contenders (workloads.py): tenflang's reference and fused engines; numpy by hand (float64,
float32, and over cache-sized blocks); numexpr; numba, one @njit loop per program written out
(fastmath off and on; libm's exp and tanh); PyTorch eager and jax.jit (float64 and float32).
All in one process, single-threaded, taking turns in each round (best of ``--repeat``); each
checked against tenflang's reference engine before a time is printed. Import times are of
fresh interpreters; "compile" is a contender's first call.

``--avx2`` also runs the study in a subprocess that hides AVX-512 from numpy
(NPY_DISABLE_CPU_FEATURES), OpenBLAS (OPENBLAS_CORETYPE=Haswell), numba (NUMBA_CPU_NAME=haswell),
PyTorch (ATEN_CPU_CAPABILITY=avx2, MKL_ENABLE_INSTRUCTIONS=AVX2) and XLA
(--xla_cpu_max_isa=AVX2), as on the issue's EPYC.

    python benchmarks/study_engines.py [--avx2] [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

AVX2 = {
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
    "OPENBLAS_CORETYPE": "Haswell",
    "NUMBA_CPU_NAME": "haswell",
    "NUMBA_CPU_FEATURES": "",  # the CPU name's own features (else the host's are kept)
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",  # PyTorch's BLAS (MKL) picks its kernels itself
}
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
os.environ["XLA_FLAGS"] = (XLA_ONE_THREAD + (" --xla_cpu_max_isa=AVX2"
                                             if os.environ.get("OPENBLAS_CORETYPE") else ""))

import numpy as np  # noqa: E402
import workloads  # noqa: E402
from common import one_thread, seconds, table  # noqa: E402


def cpu_flags() -> str:
    """What this process's numpy may use, and the CPU's AVX-512 as the kernel reports it."""
    from numpy._core._multiarray_umath import __cpu_features__ as features

    found = [f for f in ("AVX2", "FMA3", "AVX512F", "AVX512_SKX") if features.get(f)]
    with open("/proc/cpuinfo") as info:
        host = "avx512f" in info.read()
    emulated = " (AVX-512 hidden: AVX2 emulation)" if os.environ.get("OPENBLAS_CORETYPE") else ""
    return (f"CPU has AVX-512: {'yes' if host else 'no'}; numpy uses {' '.join(found)}"
            f"{emulated}; numba CPU {os.environ.get('NUMBA_CPU_NAME', 'host')}")


def import_seconds(statement: str, env: dict[str, str] | None = None, repeat: int = 3
                   ) -> float | None:
    """Best time of ``statement`` in a fresh interpreter (None when it fails)."""
    code = ("import time; t = time.perf_counter(); " + statement +
            "; print(time.perf_counter() - t)")
    best = None
    for _ in range(repeat):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, **(env or {})}, check=False)
        if done.returncode != 0:
            return None
        t = float(done.stdout.split()[-1])
        best = t if best is None else min(best, t)
    return best


def startup_table() -> str:
    vm = "from tenflang_nb.core import fused; assert fused.load() is not None"
    rows = []
    for label, statement, env in [
        ("numpy", "import numpy", None),
        ("tenflang_nb (core: parse, compile, train)", "import tenflang_nb.core.api", None),
        ("numexpr", "import numexpr", None),
        ("numba", "import numba", None),
        ("tenflang fused engine, numba + loops from the disk cache", vm, None),
        ("tenflang fused engine, compiled from scratch (a fresh cache)", vm,
         {"NUMBA_CACHE_DIR": tempfile.mkdtemp(prefix="tenflang-numba-")}),
        ("PyTorch", "import torch", None),
        ("jax (+ jaxlib)", "import jax; import jax.numpy", None),
    ]:
        t = import_seconds(statement, env, repeat=1 if env else 3)
        rows.append([label, "failed / not installed" if t is None else seconds(t)])
    return table(rows, ["import (fresh interpreter)", "time"])


def contenders(work: workloads.Workload, quick: bool) -> dict[str, workloads.Train]:
    found: dict[str, workloads.Train | None] = {
        "tenflang, reference engine": workloads.make_tenflang(work, "reference"),
        "tenflang, fused engine": workloads.make_tenflang(work, "fused"),
        "numpy by hand": workloads.make_numpy(work),
    }
    if quick:
        return {k: v for k, v in found.items() if v is not None}
    if "W1" not in work.start:
        found["numpy by hand, blocks of 4096"] = workloads.make_numpy(work, block=4096)
    found["numpy by hand, float32"] = workloads.make_numpy(work, np.float32)
    found["numexpr (1 thread)"] = workloads.make_numexpr(work)
    found["numba @njit per program, libm exp/tanh"] = workloads.make_numba(work, False)
    found["numba @njit per program, fastmath"] = workloads.make_numba(work, True)
    torch = workloads.optional("torch")
    if torch is not None:
        found["PyTorch eager, float64"] = workloads.make_torch(work, torch, torch.float64)
        found["PyTorch eager, float32"] = workloads.make_torch(work, torch, torch.float32)
    jax = workloads.optional("jax")
    if jax is not None:
        found["jax.jit, float64"] = workloads.make_jax(work, jax, "float64")
        found["jax.jit, float32"] = workloads.make_jax(work, jax, "float32")
    return {k: v for k, v in found.items() if v is not None}


def study(work: workloads.Workload, repeat: int, quick: bool) -> str:
    trains = contenders(work, quick)
    with one_thread():
        best, results = workloads.interleaved(trains, repeat)
    reference = results["tenflang, reference engine"]
    fused = best["tenflang, fused engine"]
    rows = []
    for name, t in best.items():
        rtol = 1e-3 if "float32" in name else 1e-7
        drift = workloads.check(reference, results[name], rtol)
        compile_seconds = getattr(trains[name], "compile_seconds", None)
        rows.append([name, seconds(t), f"{t / fused:.2f}",
                     "-" if compile_seconds is None else seconds(compile_seconds),
                     f"{drift:.0e}"])
    return work.name + "\n" + table(rows, ["contender", "time", "time / fused", "compile",
                                           "weights vs reference"])


def svml_status() -> str:
    try:
        from numba.misc.numba_sysinfo import get_sysinfo
    except ImportError:
        return "numba not installed"
    info = get_sysinfo()
    return (f"numba {info.get('Numba Version')}: SVML library loaded "
            f"{info.get('SVML Lib Loaded')}, llvmlite with the SVML patch "
            f"{info.get('LLVM SVML Patched')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--avx2", action="store_true", help="also under AVX2 emulation")
    parser.add_argument("--quick", action="store_true", help="tenflang and numpy only")
    parser.add_argument("--no-imports", action="store_true", help="skip the import times")
    args = parser.parse_args()
    print(f"study_engines: single-threaded, best of {args.repeat}; {cpu_flags()}")
    if not args.no_imports:
        print(startup_table())
    print(svml_status())
    for work in (workloads.w1(), workloads.w2()):
        print()
        print(study(work, args.repeat, args.quick))
    if args.avx2:
        print("\n" + "=" * 30 + " the same under AVX2 emulation " + "=" * 30, flush=True)
        again = [a for a in sys.argv[1:] if a != "--avx2"]
        subprocess.run([sys.executable, __file__, *again], env={**os.environ, **AVX2},
                       check=True)


if __name__ == "__main__":
    main()
