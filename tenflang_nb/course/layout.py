"""Where a course keeps what its commands share: the secret (read by the grader, never by a
student's kernel), the graded assignments, the source folder.

>>> ASSIGNMENTS["05_exercises"]
'05_exercises.ipynb'
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ASSIGNMENTS", "SECRET_FILE", "read_secret", "write_secret"]

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
