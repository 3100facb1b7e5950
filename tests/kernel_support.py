"""A notebook run top to bottom in a kernel of its own, measured from outside the kernel
(``/proc/PID``): what a student's kernel costs (issue 26). Used by tests/test_kernel_memory.py
and benchmarks/bench_class.py."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")

# the first cell of a kernel without the fused engine: as if numba were not installed
NO_NUMBA = "import sys\nsys.modules['numba'] = sys.modules['llvmlite'] = None\n"
# numba, or llvmlite (which the fused engine imports to ask for the CPU's features first)
LOADED = "import sys\nprint(int(any(sys.modules.get(m) for m in ('numba', 'llvmlite'))))\n"
# the fused engine for every binding (auto in a kernel never loads it for a notebook's sizes:
# core.fused.load_in_background): what a kernel costs that asked for it
FORCED = "from tenflang_nb.core import fused\nfused.AUTO_NUMBERS = 0\nfused.load()\n"
MODES = {"fused": "", "reference": NO_NUMBA, "forced": FORCED}


def status(pid: int, key: str) -> int:
    """A ``/proc/PID/status`` figure in bytes (VmRSS: resident now, VmHWM: its peak)."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))


def cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and of its children it waited for (user and system)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / TICK


def run_notebook(path: Path, mode: str) -> dict[str, Any]:
    """``path`` run top to bottom in a fresh kernel (nbclient; the notebook's folder as its
    working directory, as Jupyter runs it): resident memory at the start, after the last cell
    and its peak, CPU seconds and wall time of the cells, resident memory after each cell,
    and whether numba (or llvmlite) was loaded. ``mode``: a key of :data:`MODES`."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    for cell in cells:
        cell.outputs = []
    nb.cells = ([nbformat.v4.new_code_cell(MODES[mode])] if MODES[mode] else []) + cells + [
        nbformat.v4.new_code_cell(LOADED)]
    first = 1 if MODES[mode] else 0
    seen: dict[str, Any] = {"cells": []}

    def pid() -> int:
        return client.km.provisioner.process.pid

    def executed(cell: Any, cell_index: int, execute_reply: Any) -> None:
        if cell_index == first - 1:
            return
        if cell_index == len(nb.cells) - 1:
            return
        seen["cells"].append((cell_index - first, status(pid(), "VmRSS:"),
                              cell.source.splitlines()[0][:60] if cell.source else ""))
        if cell_index == len(nb.cells) - 2:
            seen["end"], seen["peak"] = status(pid(), "VmRSS:"), status(pid(), "VmHWM:")
            seen["cpu"] = cpu(pid()) - seen["cpu0"]
            seen["wall"] = time.perf_counter() - seen["wall0"]

    def started(**_: Any) -> None:
        seen["start"], seen["cpu0"] = status(pid(), "VmRSS:"), cpu(pid())
        seen["wall0"] = time.perf_counter()

    client = NotebookClient(nb, timeout=900, kernel_name="python3", on_notebook_start=started,
                            on_cell_executed=executed,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [f"{o.get('ename')}: {o.get('evalue')}" for c in nb.cells
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        raise RuntimeError(f"{path.name} ({mode}): {errors[0]}")
    loaded = "".join(o.get("text", "") for o in nb.cells[-1].outputs).strip()
    return {**{k: seen[k] for k in ("start", "end", "peak", "cpu", "wall", "cells")},
            "numba": loaded == "1"}
