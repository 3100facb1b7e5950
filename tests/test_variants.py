"""The models of notebook 05 drawn per student (issue 24, item 3; issue 25): every draw
holds. Over the students of a course, each model drawn for a student has a right answer
that its locked check passes, as the grader and ``tenflang-course solve`` draw it; the
kernel draws what the grader draws; the practice solution (the shipped notebook's) is right
for few; a classmate's answers are right for few."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hint_support import NOTEBOOK, drawn_right_answer, drawn_variants

import tenflang_nb as tf
from tenflang_nb.core.grading import COURSE_KEY, student_key
from tenflang_nb.course.solve import cell_source, drawn_answer, nbgrader_meta, solution
from tenflang_nb.grader.grade import Grader, TeacherCell
from tenflang_nb.notebook.grading_mode import GRADING

SECRET = "a course's secret"
STUDENTS = [f"student{k:02d}" for k in range(40)]
# a class of 8 in the fast lane, of 40 in the slow one (each student grades every check)
CLASSES = [pytest.param(STUDENTS[:8], id="8 students"),
           pytest.param(STUDENTS, id="40 students", marks=pytest.mark.slow)]


def _notebook() -> tuple[list[TeacherCell], dict[str, str], dict[str, int]]:
    """The teacher's cells, the solutions, and the checks of drawn models with their points."""
    cells = json.loads(Path(NOTEBOOK).read_text("utf-8"))["cells"]
    teacher = [TeacherCell(nbgrader_meta(c).get("grade_id", ""), cell_source(c),
                           bool(nbgrader_meta(c).get("solution"))) for c in cells
               if c["cell_type"] == "code"]
    solutions = {nbgrader_meta(c)["grade_id"]: solution(cell_source(c)) for c in cells
                 if nbgrader_meta(c).get("solution")}
    drawn = set(drawn_variants())
    checks = {nbgrader_meta(c)["grade_id"]: nbgrader_meta(c)["points"] for c in cells
              if nbgrader_meta(c).get("points") and any(
                  f'model="{name}"' in cell_source(c) for name in drawn)}
    return teacher, solutions, checks


def _key(student: str) -> str:
    return student_key(SECRET, student)


def test_every_backward_pass_draws_its_model() -> None:
    _, _, checks = _notebook()
    assert set(checks) == {f"ex{n}_check" for n in (1, 2, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15)}


@pytest.mark.parametrize("students", CLASSES)
def test_every_draw_has_its_right_answer_and_the_grader_draws_it(students: list[str]) -> None:
    teacher, solutions, checks = _notebook()
    texts: dict[str, set[str]] = {check: set() for check in checks}
    for student in students:
        drawn = drawn_variants(student, _key(student))
        grader = Grader(teacher, solutions, student, secret=SECRET)
        assert grader.drawn == {name: text for name, (text, _) in drawn.items()}
        mine = {g: drawn_answer(t, grader.drawn) for g, t in solutions.items()}  # solve's
        by_hand = dict(solutions)
        for grade_id, text in solutions.items():
            name = text.split("\n", 1)[0].split()[1] if text.startswith("%%tenflang_check") \
                else None
            if name in drawn:
                by_hand[grade_id] = (text.split("\n", 1)[0] + "\n"
                                     + drawn_right_answer(name, drawn[name][1]))
                texts[f"ex{grade_id[2:].split('_')[0]}_check"].add(by_hand[grade_id])
        for answers in (mine, by_hand):
            right = Grader(teacher, answers, student, secret=SECRET)
            for check in checks:
                assert right.verdict(check).ok, (student, check, right.verdict(check).text)
    for check, seen in texts.items():  # the lines a right answer needs differ between students
        assert len(seen) >= 0.5 * len(students), (check, len(seen))


@pytest.mark.parametrize("students", CLASSES)
def test_the_practice_solution_and_a_classmates_answers_are_right_for_few(
        students: list[str]) -> None:
    teacher, solutions, checks = _notebook()
    most = sum(checks.values())
    practice, copied = [], []
    for k, student in enumerate(students):
        grader = Grader(teacher, solutions, student, secret=SECRET)
        practice.append(sum(p for c, p in checks.items() if grader.verdict(c).ok))
        neighbour = students[k - 1]
        theirs = Grader(teacher, solutions, neighbour, secret=SECRET).drawn
        answers = {g: drawn_answer(t, theirs) for g, t in solutions.items()}
        mine = Grader(teacher, answers, student, secret=SECRET)
        copied.append(sum(p for c, p in checks.items() if mine.verdict(c).ok))
    assert sum(practice) <= 0.05 * most * len(students), practice
    assert sum(copied) <= 0.05 * most * len(students), copied


@pytest.fixture
def course_kernel(monkeypatch: pytest.MonkeyPatch) -> Any:
    GRADING.reset()
    yield monkeypatch
    GRADING.reset()


@pytest.mark.parametrize("student", STUDENTS[:4])
def test_the_kernel_draws_what_the_grader_draws(course_kernel: Any, student: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    teacher, solutions, _ = _notebook()
    environ = {"TENFLANG_STUDENT": student, COURSE_KEY: _key(student)}
    GRADING.start("05_exercises", ["batch"], environ=environ, cwd="/tmp")
    from hint_support import variant_calls

    calls = [c for cell in teacher for c in variant_calls(cell.source)]
    drawn = Grader(teacher, solutions, student, secret=SECRET).drawn
    for name, template, choices in calls:
        model = tf.grading.variant(name, template, **choices)
        assert model.source == drawn[name]
        assert f"Your model {name}, drawn for you:" in capsys.readouterr().out
        assert GRADING.definition(tf.grading.fingerprints()[name]).source == drawn[name]
