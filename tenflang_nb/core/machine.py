"""How many CPUs this process may use: its affinity (``taskset``, a pod's cpuset), capped by
its control group's CPU quota (a Binder or JupyterHub pod limited to one CPU, ``docker
--cpus``). ``os.cpu_count()`` counts the machine's.

>>> 0 < cpus() <= (os.cpu_count() or 1)
True
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cpus"]

CGROUPS = Path("/sys/fs/cgroup")


def cpus() -> float:
    """The CPUs this process may use (a quota of 150 ms a 100 ms period: 1.5)."""
    try:
        count = float(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        count = float(os.cpu_count() or 1)
    quota = _quota()
    return count if quota is None else max(min(count, quota), 0.01)


def _quota() -> float | None:
    """The tightest CPU quota of this process's control group and its parents, in CPUs
    (cgroup v2's ``cpu.max``, v1's ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``), or None."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    found: list[float] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: one hierarchy
            for folder in _folders(CGROUPS, path):
                found += _ratio(folder / "cpu.max", None)
        elif "cpu" in controllers.split(","):
            for root in (CGROUPS / controllers, CGROUPS / "cpu", CGROUPS / "cpu,cpuacct"):
                for folder in _folders(root, path):
                    found += _ratio(folder / "cpu.cfs_quota_us", folder / "cpu.cfs_period_us")
    return min(found, default=None)


def _folders(root: Path, path: str) -> list[Path]:
    """``root``/``path`` and its parents up to ``root`` (a container sees its own group as
    the root: the path /proc names may not exist under its mount)."""
    folder = root / path.lstrip("/")
    return [folder, *(p for p in folder.parents if p.is_relative_to(root))]


def _ratio(quota_file: Path, period_file: Path | None) -> list[float]:
    """The quota in a v2 ``cpu.max`` ("max 100000", "50000 100000") or a v1 pair of files, in
    CPUs; [] when unlimited or unreadable."""
    try:
        if period_file is None:
            quota, period = quota_file.read_text().split()[:2]
        else:
            quota, period = quota_file.read_text().strip(), period_file.read_text().strip()
        if quota in ("max", "-1") or int(period) <= 0:
            return []
        return [int(quota) / int(period)]
    except (OSError, ValueError):
        return []
