"""The tutorials' stored outputs compare equal on any machine, not only on this one.

OpenBLAS picks its kernels by CPU model and numpy its SIMD loops by CPU features, so the last
digits of sums (and of exp, log, tanh) move from one machine to the next. The notebooks show
numbers as a student reads them (rounded), so their saved outputs must still match when the
notebooks run with other kernels: here nbval reruns every tutorial twice more, once with an
old CPU's kernels (OpenBLAS and numpy at their x86-64 baseline) and once with AVX2 ones, in
fresh processes (both libraries choose their kernels when they load).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# numpy 2's CPU feature groups above the x86-64 baseline, all switched off (names a CPU lacks
# are ignored), and the same for OpenBLAS with its oldest kernel set
OLD_X86 = {"OPENBLAS_CORETYPE": "Prescott",
           "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR AVX2 FMA3 "
                                       "AVX512F AVX512_SKX"}


def _has_avx2() -> bool:
    try:
        return " avx2" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def _variants() -> dict[str, dict[str, str]]:
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        variants = {"old-x86": OLD_X86}
        if _has_avx2():
            variants["haswell"] = {"OPENBLAS_CORETYPE": "Haswell"}
        else:
            variants["nehalem"] = {"OPENBLAS_CORETYPE": "Nehalem"}
        return variants
    if machine in ("aarch64", "arm64"):
        return {"armv8": {"OPENBLAS_CORETYPE": "ARMV8"},
                "neoversen1": {"OPENBLAS_CORETYPE": "NEOVERSEN1"}}
    return {}


VARIANTS = _variants()


@pytest.mark.slow
@pytest.mark.skipif(not VARIANTS, reason=f"no kernel sets known for {platform.machine()}")
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_notebooks_compare_equal_under_other_kernels(variant: str) -> None:
    env = {**os.environ, **VARIANTS[variant]}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
         "--nbval-current-env", "--nbval-sanitize-with", "notebooks/sanitize.cfg",
         "notebooks"], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    tail = "\n".join(proc.stdout.splitlines()[-30:])
    assert proc.returncode == 0, f"{variant}: {VARIANTS[variant]}\n{tail}\n{proc.stderr[-2000:]}"
    assert " passed" in tail and "failed" not in tail
