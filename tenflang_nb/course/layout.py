"""Where a course keeps what its commands share: the secret (read by the grader, never by a
student's kernel), the graded assignments, the source folder.

>>> ASSIGNMENTS["05_exercises"]
'05_exercises.ipynb'
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

__all__ = ["ASSIGNMENTS", "SECRET_FILE", "SHIPPED", "installed", "read_secret",
           "shipped_example", "write_secret"]

REPO = Path(__file__).resolve().parents[2]
SHIPPED = Path(__file__).resolve().parent / "assignments"  # the wheel's copy (pyproject.toml)

SECRET_FILE = ".tenflang-secret"  # in the course folder, mode 0600: the grader's alone
# the graded notebooks: nbgrader's assignment name -> the notebook in it
ASSIGNMENTS = {"05_exercises": "05_exercises.ipynb",
               "06_when_training_fails": "06_when_training_fails.ipynb",
               "07_your_own_engine": "07_your_own_engine.ipynb"}


def read_secret(course: str | Path) -> str:
    """The course's secret ("" when it has none: the practice variant's numbers)."""
    try:
        return (Path(course) / SECRET_FILE).read_text("utf-8").strip()
    except FileNotFoundError:
        return ""


def write_secret(course: str | Path, secret: str) -> Path:
    """Store ``secret`` in the course folder, readable by its owner alone."""
    path = Path(course) / SECRET_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(secret + "\n")
    return path


def installed() -> tuple[Path, Path] | None:
    """(the graded notebooks' folder, the examples' folder): the wheel's copy, else the
    repository's (None: neither holds the graded notebooks)."""
    for notebooks, examples in ((SHIPPED / "notebooks", SHIPPED / "examples"),
                                (REPO / "notebooks", REPO / "examples")):
        if all((notebooks / name).is_file() for name in ASSIGNMENTS.values()):
            return notebooks, examples
    return None


def shipped_example(path: str) -> Path:
    """The data file a graded notebook's check names (``examples/linear/x.csv`` in a course,
    ``../examples/linear/x.csv`` in the repository), read from the package's own copy: the
    grader measures on the data the teacher shipped, never on a file beside a submission.

    >>> shipped_example("examples/linear/training_data.csv").name
    'training_data.csv'
    >>> shipped_example("../../etc/passwd")
    Traceback (most recent call last):
    ...
    ValueError: ../../etc/passwd: not a file of the examples the graded notebooks ship
    """
    parts = PurePosixPath(path).parts
    if parts[:1] == ("..",):
        parts = parts[1:]
    found = installed()
    if (found is None or len(parts) < 2 or parts[0] != "examples"
            or any(p in ("..", ".", "") for p in parts)):
        raise ValueError(f"{path}: not a file of the examples the graded notebooks ship")
    return found[1].joinpath(*parts[1:])
