"""``auto`` with one CPU (core/machine.py, core/fused.py): a Binder or hub pod with one CPU, or
``taskset -c``. Loading numba beside a run would take the run's own CPU, so ``auto`` keeps a
batch of the in-between size on the reference engine throughout (the same weights, exactly)
and never imports numba; with two CPUs it loads numba in the background. Each case runs in a
process of its own, pinned by ``taskset`` or placed in a control group with a CPU quota.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# the seed model on 100,000 rows (1.2 million numbers a pass: auto's in-between size), 20
# steps on auto and on the reference; numba would start loading after the first pass
RUN = """
import json, sys
import numpy as np
from tenflang_nb.core import api, fused
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.machine import cpus
fused.AUTO_AFTER = 0.0
rng = np.random.default_rng(0)
x = rng.uniform(-3, 3, 100_000)
data = {"x": x, "y": 1 / (1 + np.exp(-1.7 * x))}
gcp = api.compile(api.parse(SEED_EXAMPLE))
runs = {e: api.trainer(gcp, data, engine=e, tol=0.0, max_iter=20) for e in ("auto", "reference")}
kind = type(runs["auto"]._run).__name__
weights = {e: t.run().weights["w"] for e, t in runs.items()}
print(json.dumps({"cpus": cpus(), "kind": kind, "numba": "numba" in sys.modules,
                  "same": float(weights["auto"]) == float(weights["reference"])}))
"""


def _report(prefix: list[str]) -> dict:
    result = subprocess.run([*prefix, sys.executable, "-c", RUN], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.skipif(not shutil.which("taskset"), reason="needs taskset")
def test_auto_pinned_to_one_cpu_stays_on_the_reference_without_numba() -> None:
    report = _report(["taskset", "-c", str(min(os.sched_getaffinity(0)))])
    assert report == {"cpus": 1.0, "kind": "Run", "numba": False, "same": True}, report


@pytest.mark.skipif(len(getattr(os, "sched_getaffinity", lambda _: ())(0)) < 2,
                    reason="needs two CPUs")
def test_auto_with_two_cpus_loads_numba_beside_the_run() -> None:
    cpu = sorted(os.sched_getaffinity(0))[:2]
    report = _report(["taskset", "-c", ",".join(map(str, cpu))])
    if report["cpus"] < 2:
        pytest.skip(f"a CPU quota of {report['cpus']} here")
    assert report["kind"] == "_Deferred", report


def _quota_group() -> Iterator[Path]:
    """A control group of this test's own with a quota of one CPU (cgroup v1's cpu
    controller, or v2 with cpu enabled), removed afterwards; skips where none can be made."""
    v1 = Path("/sys/fs/cgroup/cpu")
    v2 = Path("/sys/fs/cgroup")
    if (v1 / "cpu.cfs_quota_us").exists():
        root, files = v1, {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "100000"}
    elif "cpu" in (v2 / "cgroup.subtree_control").read_text().split() \
            if (v2 / "cgroup.subtree_control").exists() else False:
        root, files = v2, {"cpu.max": "100000 100000"}
    else:
        pytest.skip("no cgroup cpu controller here")
    group = root / f"tenflang-test-{os.getpid()}"
    try:
        group.mkdir()
        for name, value in files.items():
            (group / name).write_text(value)
    except OSError as err:
        if group.exists():
            group.rmdir()
        pytest.skip(f"cannot make a control group here: {err}")
    try:
        yield group
    finally:
        # what the run left there (numba compiling in a child, say) back to the parent group
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (root / "cgroup.procs").write_text(pid)
        group.rmdir()


@pytest.fixture
def one_cpu_group() -> Iterator[Path]:
    yield from _quota_group()


def test_auto_in_a_control_group_of_one_cpu_stays_on_the_reference(one_cpu_group: Path
                                                                    ) -> None:
    """As a pod with ``cpu: 1``: every CPU of the machine in the affinity, a quota of one."""
    report = _report(["sh", "-c", f'echo $$ > {one_cpu_group / "cgroup.procs"} && exec "$@"',
                      "sh"])
    assert report == {"cpus": 1.0, "kind": "Run", "numba": False, "same": True}, report
