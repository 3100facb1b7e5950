"""``tenflang-course new DIR``: a ready nbgrader course in ``DIR``.

The hardened ``nbgrader_config.py`` (``grader.config.configure``), the sandbox's kernelspec,
``source/`` with the graded notebooks (05, 06, 07) and every file they read inside their own
assignment folder (06's examples: ``examples/...``, never ``../examples``), and the course's
secret in ``DIR/.tenflang-secret`` (mode 0600), which the grader reads and no released
notebook holds.
"""

from __future__ import annotations

import re
import secrets
import shutil
from pathlib import Path

from .layout import ASSIGNMENTS, SHIPPED, installed, write_secret

__all__ = ["CourseError", "new_course", "notebooks_folder"]

# a file a tutorial reads from the repository's examples/ (06): copied into the assignment
EXAMPLE_FILE = re.compile(r"\.\./examples/([A-Za-z0-9_/.-]+\.[a-z]+)")
CONFIG = """\
# A TenFlang course (tenflang-course new): the grade is computed in nbgrader's process,
# the submissions run in a bubblewrap sandbox, the course's secret is read from
# .tenflang-secret beside this file (see the teachers' page: docs/teachers.md).
from tenflang_nb.grader.config import configure

c = get_config()  # noqa: F821 (nbgrader defines it)
c.CourseDirectory.course_id = {course_id!r}
configure(c, __file__)
"""


class CourseError(Exception):
    """A course command cannot do what it was asked (the message says why)."""


def notebooks_folder() -> tuple[Path, Path]:
    """(the graded notebooks' folder, the examples' folder): the wheel's copy, else the
    repository's."""
    found = installed()
    if found is None:
        raise CourseError(f"the graded notebooks are not installed ({SHIPPED / 'notebooks'}): "
                          "reinstall tenflang_nb")
    return found


def new_course(folder: str | Path, secret: str | None = None) -> Path:
    """Write the course into ``folder`` (new or empty) with ``secret`` (a fresh one when
    None). Returns the folder."""
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise CourseError(f"{folder}: not an empty folder; a course is written into a new "
                          "or empty one (nothing was changed)")
    if secret is not None and not secret.strip():
        raise CourseError("--secret: the course's secret must not be blank")
    notebooks, examples = notebooks_folder()
    from ..grader.sandbox import install_kernelspec

    made = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        write_secret(folder, secret.strip() if secret else secrets.token_hex(16))
        name = re.sub(r"[^A-Za-z0-9_-]+", "_", folder.resolve().name) or "tenflang"
        (folder / "nbgrader_config.py").write_text(CONFIG.format(course_id=name), "utf-8")
        install_kernelspec(folder, folder / "jupyter")
        for assignment, notebook in ASSIGNMENTS.items():
            target = folder / "source" / assignment
            target.mkdir(parents=True)
            text = (notebooks / notebook).read_text("utf-8")
            for relative in sorted(set(EXAMPLE_FILE.findall(text))):
                source = examples / relative
                if not source.is_file():
                    raise CourseError(f"{notebooks / notebook}: it reads ../examples/"
                                      f"{relative}, which is not installed")
                (target / "examples" / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target / "examples" / relative)
            (target / notebook).write_text(text.replace("../examples/", "examples/"), "utf-8")
    except BaseException:
        # nothing half-written: the folder as it was (new, or empty)
        if made:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            for entry in folder.iterdir():
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        raise
    return folder
