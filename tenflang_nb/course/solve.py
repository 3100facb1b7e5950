"""``tenflang-course solve DIR ASSIGNMENT STUDENT``: a right submission for one student, the
teacher's check of a course's set-up.

The released notebook with each answer cell holding the solution: the TenFlang and Python
answers as the source has them, each numeric answer as the number the autograder computes
from the solution for this student in this course (their example, the course's secret), so
that it is right for them and wrong for a classmate whose numbers differ. The notebook is
signed (an HMAC of the course's secret) so that ``report`` knows it for the teacher's.
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import json
import re
from pathlib import Path
from typing import Any

from .layout import ASSIGNMENTS, read_secret
from .new import CourseError

__all__ = ["SIGNATURE", "cell_source", "drawn_answer", "nbgrader_meta", "signature", "solve"]

SIGNATURE = "tenflang_solved"  # the notebook's metadata key that holds solve's signature


def nbgrader_meta(cell: dict[str, Any]) -> dict[str, Any]:
    return cell.get("metadata", {}).get("nbgrader", {})


def cell_source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def signature(secret: str, student: str, assignment: str, answers: list[str]) -> str:
    """What ``solve`` signs a submission with: its answers, for this student, by this
    course (a student, who has no secret, cannot make it)."""
    text = "\n\0".join([student, assignment, *answers])
    return hmac.new(secret.encode(), text.encode(), hashlib.sha256).hexdigest()


def read_notebook(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise CourseError(f"{path}: no such notebook") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        line = f", line {err.lineno}" if isinstance(err, json.JSONDecodeError) else ""
        raise CourseError(f"{path}{line}: not a notebook ({err})") from None


def solution(text: str) -> str:
    """A source answer cell as solved: nbgrader's region markers left out."""
    return "\n".join(line for line in text.split("\n") if "### BEGIN SOLUTION" not in line
                     and "### END SOLUTION" not in line)


def drawn_answer(solved: str, drawn: dict[str, str]) -> str:
    """A ``%%tenflang_check MODEL ANSWER`` solution for the student's own model when MODEL is
    drawn per student (``drawn``: name -> its text): the compiler's backward pass of their
    model, its ``define`` lines, the compiler's temporaries renamed (the practice solution is
    right for the practice variant alone). Any other solution as it is."""
    first, _, _ = solved.partition("\n")
    words = first.split()
    if len(words) < 2 or words[0] != "%%tenflang_check" or words[1] not in drawn:
        return solved
    from ..core import api
    from ..core.program import parse
    from ..core.syntax import Define

    lines = [str(line.statement) for line in api.compile(parse(drawn[words[1]]), full=True).lines
             if line.section == "backward" and isinstance(line.statement, Define)]
    renamed = [re.sub(r"d/(\w+)/d/(\w+):(\d+)", r"part_\1_\2_\3", line) for line in lines]
    return "\n".join([first, *renamed])


def _assigned(stub: str) -> list[str]:
    """The variables a released numeric answer cell sets (``answer_3 = None``)."""
    try:
        tree = ast.parse(stub)
    except SyntaxError:
        return []
    return [t.id for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)]


def _right(grader: Any, name: str) -> float:
    """The right number ``name`` for the grader's student: what its check expects, else what
    the solution computes on their example."""
    expected = grader.expected(name)
    return float(grader.numbers.value(name)) if expected is None else expected


def solve(course: str | Path, assignment: str, student: str) -> Path:
    """Write the right submission of ``student`` for ``assignment`` into the course's
    ``submitted/``; returns the notebook's path."""
    from ..grader.grade import Grader, TeacherCell

    course = Path(course)
    if assignment not in ASSIGNMENTS:
        raise CourseError(f"{assignment}: not a graded assignment of a TenFlang course "
                          f"({', '.join(ASSIGNMENTS)})")
    if not student or "/" in student or student.startswith("."):
        raise CourseError(f"{student!r}: not a student's id (nbgrader's, a folder name)")
    name = ASSIGNMENTS[assignment]
    source = read_notebook(course / "source" / assignment / name)
    released = course / "release" / assignment / name
    if not released.is_file():
        raise CourseError(f"{released}: not released yet (run `nbgrader generate_assignment "
                          f"{assignment}` in {course} first)")
    release = read_notebook(released)
    secret = read_secret(course)
    solutions = {nbgrader_meta(c)["grade_id"]: solution(cell_source(c))
                 for c in source["cells"] if nbgrader_meta(c).get("solution")}
    teacher = [TeacherCell(nbgrader_meta(c).get("grade_id", ""), cell_source(c),
                           bool(nbgrader_meta(c).get("solution")))
               for c in source["cells"] if c["cell_type"] == "code"]
    grader = Grader(teacher, solutions, student, secret=secret)
    answers = []
    for cell in release["cells"]:
        grade_id = nbgrader_meta(cell).get("grade_id")
        if not nbgrader_meta(cell).get("solution") or grade_id not in solutions:
            continue
        text = drawn_answer(solutions[grade_id], grader.drawn)
        if not text.startswith("%%") and not text.lstrip().startswith("def "):
            names = _assigned(cell_source(cell))
            if not names:
                raise CourseError(f"{released}: the answer cell {grade_id} sets no variable")
            text = "\n".join(f"{v} = {_right(grader, v)!r}  # for {student}" for v in names)
        cell["source"] = text
        answers.append(text)
    release.setdefault("metadata", {})[SIGNATURE] = signature(secret, student, assignment,
                                                              answers)
    folder = course / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(release, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return path
