"""A course's autograde configuration, in one call from its ``nbgrader_config.py``::

    from tenflang_nb.grader.config import configure
    c = get_config()
    c.CourseDirectory.course_id = "..."
    configure(c, __file__)  # after c.Exchange.root, when the course sets it

The grade is computed in nbgrader's process (``TenFlangGrade`` in the autograde pipeline);
with ``sandbox=True`` (the default) the students' notebooks run in the sandboxed kernel
(``sandbox.py``: its kernelspec is written into the course folder's ``jupyter/kernels/``,
found through ``JUPYTER_PATH``) and an engine's functions are checked under the sandbox too.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..course.layout import read_secret
from .preprocessor import autograde_pipeline, feedback_pipeline
from .sandbox import KERNEL, engine_prefix, install_kernelspec
from .skip import SKIP

__all__ = ["configure"]


def configure(c: Any, config_file: str | Path, *, sandbox: bool = True) -> None:
    """Set nbgrader's configuration ``c`` for the course whose ``nbgrader_config.py`` is
    ``config_file``."""
    course = Path(config_file).resolve().parent
    c.Autograde.autograde_preprocessors = autograde_pipeline()
    c.GenerateFeedback.preprocessors = feedback_pipeline()  # no hidden test in the feedback
    c.Execute.skip_cells_with_tag = SKIP  # the kernel runs the cells the feedback needs
    # the course's secret (tenflang-course new writes it): every student's draws are theirs
    c.TenFlangGrade.secret = read_secret(course)
    if not sandbox:
        return
    if shutil.which("bwrap") is None:
        raise RuntimeError("the sandbox needs bubblewrap: apt-get install bubblewrap (or "
                           "configure(c, __file__, sandbox=False) to grade without it)")
    where = course / "jupyter"
    # the exchange, where it is not nbgrader's default: every student's submissions
    hide = [str(c.Exchange.root)] if "root" in c.Exchange else []
    install_kernelspec(course, where, hide)
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [str(where), *filter(None, os.environ.get("JUPYTER_PATH", "").split(os.pathsep))])
    # the kernel talks to nbgrader over Unix sockets (it has no network), in a folder that
    # holds nothing but this run's kernel
    runtime = tempfile.mkdtemp(prefix="tenflang-autograde-")
    atexit.register(shutil.rmtree, runtime, ignore_errors=True)  # this nbgrader command's
    c.KernelManager.transport = "ipc"
    c.KernelManager.connection_file = os.path.join(runtime, "kernel.json")
    c.Execute.kernel_name = KERNEL
    c.TenFlangGrade.sandbox = engine_prefix(str(course), hide)
