"""What the tests that run real nbgrader share: its command, run in a course folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# nbgrader runs the `alembic` command (its gradebook's migrations): the one beside this Python
PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


def run_nbgrader(root: Path, *args: str, timeout: float = 1800) -> None:
    """``nbgrader ARGS`` in the course ``root``, with no student's id in its environment;
    a failure shows the end of what it said."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("JUPYTERHUB_USER", "NBGRADER_EXECUTION", "TENFLANG_STUDENT")}
    env["PATH"] = PATH
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args,
                           f"--CourseDirectory.root={root}"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-5000:]
