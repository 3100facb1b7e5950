"""notebooks/05_exercises.ipynb as nbgrader sees it (and, at the end, 07_your_own_engine).

The committed notebook is nbgrader's *source* version: it holds the solutions and the hidden
tests, and nbval checks its stored outputs (the teacher's copy: grading mode off) like every
tutorial's. Here nbgrader's own preprocessors make the student version (``ClearSolutions`` and
``ClearHiddenTests``, as ``nbgrader generate_assignment`` runs them), the student version is
executed as a student runs it (grading mode on), and every check must then fail with a
message that says what to do, never with a traceback. ``tests/test_grading_nbgrader.py`` runs
the whole of nbgrader (generate, autograde) on it.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "05_exercises.ipynb"

CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"  # nbgrader's, for Python
POINTS = 54


def _load() -> dict[str, Any]:
    return json.loads(NOTEBOOK.read_text("utf-8"))


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _meta(cell: dict[str, Any]) -> dict[str, Any]:
    return cell.get("metadata", {}).get("nbgrader", {})


def student_version(path: Path = NOTEBOOK) -> Any:
    """The student version, as ``nbgrader generate_assignment`` makes it from the source."""
    import nbformat
    from nbgrader.nbgraderformat import MetadataValidator
    from nbgrader.preprocessors import ClearHiddenTests, ClearOutput, ClearSolutions

    nb = nbformat.read(path, as_version=4)
    MetadataValidator().validate_nb(nb)  # raises on bad nbgrader metadata
    for preprocessor in (ClearSolutions(), ClearOutput(), ClearHiddenTests()):
        nb, _ = preprocessor.preprocess(copy.deepcopy(nb), {})
    return nb


# ------------------------------------------------------------------------------ the markup

def test_the_nbgrader_markup() -> None:
    cells = _load()["cells"]
    marked = [c for c in cells if _meta(c)]
    ids = [_meta(c)["grade_id"] for c in marked]
    assert len(ids) == len(set(ids)), "grade ids must be unique"
    for cell in marked:
        meta = _meta(cell)
        assert meta["schema_version"] == 3 and meta["task"] is False
        assert {"grade", "solution", "locked", "grade_id"} <= set(meta)
        if meta["grade"]:
            assert meta["points"] >= 0 and meta["locked"] and not meta["solution"]
        if meta["solution"]:
            assert not meta["locked"] and "BEGIN SOLUTION" in _source(cell)
    for i, cell in enumerate(cells):
        if "BEGIN SOLUTION" in _source(cell):
            assert _meta(cell).get("solution"), f"cell {i} has solution markers"
        if "BEGIN HIDDEN TESTS" in _source(cell):
            assert _meta(cell).get("grade"), f"cell {i}: hidden tests in a cell nbgrader " \
                                             "does not grade (generate_assignment refuses it)"
        if _source(cell).startswith("%%tenflang ") and not _meta(cell).get("solution"):
            assert _meta(cell).get("locked"), f"cell {i}: a model cell that is not locked"
    checks = [c for c in cells if _meta(c).get("grade")]
    assert sum(_meta(c)["points"] for c in checks) == POINTS
    assert len([c for c in checks if _meta(c)["points"]]) >= 8, "about eight exercises"
    setup = next(c for c in cells if c["cell_type"] == "code")
    assert _meta(setup)["grade_id"] == "setup" and _meta(setup)["points"] == 0
    assert "tf.grading.start(" in _source(setup)


def test_every_answer_cell_is_followed_by_its_locked_check() -> None:
    cells = [c for c in _load()["cells"] if c["cell_type"] == "code"]
    answers = [i for i, c in enumerate(cells) if _meta(c).get("solution")]
    assert answers
    for i in answers:
        answer, check = _source(cells[i]), _source(cells[i + 1])
        assert _meta(cells[i + 1]).get("grade"), f"no check after answer cell {i}"
        if answer.startswith("%%tenflang_check"):
            model, bound = answer.split("\n", 1)[0].split()[1:3]  # MODEL RESULT
            assert f'tf.grading.check_answer("{bound}", model="{model}",' in check
            assert "assert" not in check  # the variable the answer binds is not graded
        elif answer.startswith("%%tenflang "):  # the model is the answer: its check trains it
            model = answer.split()[1]
            exercise = _meta(cells[i])["grade_id"].removesuffix("_answer")
            assert f'tf.grading.check_fit("{exercise}", model="{model}",' in check
            assert "fingerprint" not in check
        else:
            name = re.match(r"(\w+) = None", answer)
            assert name, "a Python answer starts as None: unanswered, its check still runs"
            assert f'tf.grading.given("{name.group(1)}")' in check
            hidden = check.split("### BEGIN HIDDEN TESTS", 1)
            assert len(hidden) == 2 and f'check_number(\n    "{name.group(1)}"' in hidden[1]


def test_the_student_version() -> None:
    nb = student_version()
    text = "\n".join(c.source for c in nb.cells)
    for gone in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "teacher_copy", "gradient(",
                 "solutions filled in", "For teachers"):
        assert gone not in text, gone
    answers = [c for c in nb.cells if _meta(c).get("solution")]
    for cell in answers:
        assert "define d/" not in cell.source and CODE_STUB in cell.source
    first = answers[0].source.splitlines()
    assert first == ["%%tenflang_check seed ex1 --require d/lambda/d/diff", *CODE_STUB.split("\n")]


def _headings() -> list[tuple[int, int, int]]:
    """(exercise, points, minutes) from every exercise's heading."""
    return [(int(m.group(1)), int(m.group(2)), int(m.group(3))) for c in _load()["cells"]
            if c["cell_type"] == "markdown" and (m := re.search(
                r"^## Exercise (\d+) · .* \((\d+) points?, (\d+) minutes\)", _source(c), re.M))]


def test_every_heading_gives_the_points_its_check_is_worth_and_its_minutes() -> None:
    headings = _headings()
    assert [n for n, _, _ in headings] == list(range(1, len(headings) + 1))
    checks = [c for c in _load()["cells"] if _meta(c).get("grade") and _meta(c)["points"]]
    worth: dict[int, int] = {}
    for cell in checks:
        number = int(re.match(r"ex(\d+)_check", _meta(cell)["grade_id"]).group(1))
        worth[number] = _meta(cell)["points"]
        assert f"autograder check ({_meta(cell)['points']} points)" in _source(cell)
    assert worth == {n: points for n, points, _ in headings}
    assert sum(minutes for *_, minutes in headings) >= 90  # a 90-minute lab, and more


def _plan() -> dict[str, tuple[int, int, list[tuple[str, int, int, int]]]]:
    """The lab plan of notebooks/README.md: per part (its ### heading), the points and
    minutes the heading states and its rows (step, points, minutes, a fast student's)."""
    readme = (REPO / "notebooks" / "README.md").read_text("utf-8")
    plan = readme.split("## A 90-minute lab", 1)[1].split("\n## ", 1)[0]
    parts = {}
    for part in plan.split("\n### ")[1:]:
        title, _, body = part.partition("\n")
        stated = re.fullmatch(r"(.+) \((\d+) points, (\d+) minutes\)", title.strip())
        assert stated, f"a part's heading states its points and minutes: {title}"
        rows = [(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)))
                for m in re.finditer(r"^\| *(\w+) *\|[^|]*\| *(\d+) *\| *(\d+) *\| *(\d+) *\|$",
                                     body, re.M)]
        parts[stated.group(1)] = (int(stated.group(2)), int(stated.group(3)), rows)
    return parts


def test_the_lab_plans_minutes_add_up_to_each_heading() -> None:
    parts = _plan()
    assert set(parts) == {"The lab", "Homework"}
    for title, (points, minutes, rows) in parts.items():
        assert rows, title
        assert sum(p for _, p, _, _ in rows) == points, title
        assert sum(m for _, _, m, _ in rows) == minutes, title
        for step, _, median, fast in rows:  # a median student needs 1.5 times a fast one's
            assert median == 1.5 * fast, (title, step)
    assert parts["The lab"][1] == 90


def test_the_lab_plan_lists_every_exercise_as_its_heading_does() -> None:
    listed = [(int(step), p, m) for _, _, rows in _plan().values() for step, p, m, _ in rows
              if step.isdigit()]
    assert sorted(listed) == sorted(_headings())  # each exercise once, as its heading says


def test_the_first_cell_states_the_totals() -> None:
    intro = _source(_load()["cells"][0])
    headings = {n: (p, m) for n, p, m in _headings()}
    stated = re.search(r"(\d+) exercises, (\d+) points\.", intro)
    assert stated and tuple(map(int, stated.groups())) == (
        len(headings), sum(p for p, _ in headings.values()))
    parts = _plan()
    for title, words in (("The lab", "The lab"), ("Homework", "The homework")):
        points, minutes, rows = parts[title]
        numbers = [int(step) for step, *_ in rows if step.isdigit()]
        said = re.search(words + r" \(exercises ([^:]+): (\d+) points, (?:about )?(\d+) minutes",
                         intro.replace("\n", " "))
        assert said, title
        named = {int(n) for n in re.findall(r"\d+", said.group(1))}
        ranges = re.findall(r"(\d+) to (\d+)", said.group(1))
        named |= {n for a, b in ranges for n in range(int(a), int(b) + 1)}
        assert named == set(numbers), title
        assert (int(said.group(2)), int(said.group(3))) == (points, minutes), title


# ------------------------------------------------------------------------------ the student version

@pytest.fixture(scope="module")
def student_run() -> dict[str, Any]:
    """The student version, executed top to bottom in a student's copy (errors allowed)."""
    from nbclient import NotebookClient

    nb = student_version()
    env = {k: os.environ.pop(k) for k in ("NBGRADER_EXECUTION", "JUPYTERHUB_USER",
                                          "TENFLANG_STUDENT") if k in os.environ}
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    finally:
        os.environ.update(env)
    return nb


def _errors(cell: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in cell.get("outputs", []) if o["output_type"] == "error"]


def _text(cell: dict[str, Any]) -> str:
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "")
                   for o in cell.get("outputs", []))


def test_grading_mode_is_on_in_the_student_version(student_run: dict[str, Any]) -> None:
    setup = next(c for c in student_run["cells"] if _meta(c).get("grade_id") == "setup")
    assert not _errors(setup)
    said = _text(setup)
    assert said.startswith("Grading mode is on for seed, quad, fan, ratio, chain, classifier, "
                           "gates, relu, batch, bias, mlp and net")
    assert "teacher's copy" not in said


def test_every_check_fails_with_a_helpful_message(student_run: dict[str, Any]) -> None:
    checks = [c for c in student_run["cells"] if _meta(c).get("grade") and _meta(c)["points"]]
    for cell in checks:
        errors = _errors(cell)
        assert len(errors) == 1, f"{_meta(cell)['grade_id']}: {errors}"
        error = errors[0]
        # the grading's verdict, never a NameError or a traceback
        assert error["ename"] == "GradingFailure", (_meta(cell)["grade_id"], error["ename"])
        assert "not answered yet" in error["evalue"], error["evalue"]
        assert not any("Traceback" in line for line in error["traceback"])


def test_the_rest_of_the_student_version_runs(student_run: dict[str, Any]) -> None:
    for i, cell in enumerate(student_run["cells"]):
        if cell["cell_type"] != "code" or _meta(cell).get("grade"):
            continue
        errors = _errors(cell)
        if _meta(cell).get("solution") and not _source(cell).startswith("%%"):
            # nbgrader's Python stub raises, as it should in an unanswered cell
            assert [e["ename"] for e in errors] == ["NotImplementedError"], i
            continue
        assert not errors, f"cell {i}: {errors}"
        if _meta(cell).get("solution") and _source(cell).startswith("%%tenflang"):
            assert "this exercise is not answered yet" in _text(cell)
            assert "replace this line" in _text(cell)
        if _meta(cell).get("grade_id") == "ex3_example":
            assert re.fullmatch(r"Your example for ex3: x = -?[\d.]+, y = [\d.]+, w = 0\n",
                                _text(cell))


# ------------------------------------------------------------------------------ a wrong answer

@pytest.fixture
def ip(ip: Any) -> Iterator[Any]:
    """The conftest's shell with the extension, in a fresh grading mode."""
    from tenflang_nb.notebook.grading_mode import GRADING

    GRADING.reset()
    yield ip
    GRADING.reset()


def test_a_wrong_answer_fails_its_check_naming_the_first_wrong_line(ip: Any) -> None:
    from IPython.utils.capture import capture_output

    cells = [_source(c) for c in student_version().cells if c.cell_type == "code"]
    setup = cells[0]
    model = next(c for c in cells if 'tf.grading.variant("fan"' in c)  # the practice draw
    answer = next(_source(c) for c in _load()["cells"]
                  if _source(c).startswith("%%tenflang_check fan ex5"))
    check = next(c for c in cells if 'check_answer("ex5"' in c)
    wrong = answer.replace("define d/L/d/a = add via_b via_c", "define d/L/d/a = via_b")
    assert wrong != answer
    with capture_output():
        ip.run_cell(setup)
        ip.run_cell(model)
        ip.run_cell(wrong)
        result = ip.run_cell(check)
    error = result.error_in_exec
    assert type(error).__name__ == "GradingFailure" and isinstance(error, AssertionError)
    message = str(error)
    assert message.startswith("ex5: ✗ line 10 is the first wrong line")
    assert "fan-out: a is used 2 times" in message
    assert "misses the term via define c = exp a" in message  # code shown plain


# ------------------------------------------------------------------------- 07, one's own engine
# 07_your_own_engine.ipynb: the answers are Python functions (an engine's forward,
# backprop_step and backward), each checked by tf.grading.check_engine

ENGINE = REPO / "notebooks" / "07_your_own_engine.ipynb"
ENGINE_POINTS = {"forward_check": 2, "step_check": 4, "backward_check": 4}


def _engine() -> list[dict[str, Any]]:
    return json.loads(ENGINE.read_text("utf-8"))["cells"]


def test_the_engines_nbgrader_markup() -> None:
    cells = _engine()
    marked = [c for c in cells if _meta(c)]
    ids = [_meta(c)["grade_id"] for c in marked]
    assert len(ids) == len(set(ids)), "grade ids must be unique"
    for cell in marked:
        meta = _meta(cell)
        assert meta["schema_version"] == 3 and meta["task"] is False
        if meta["grade"]:
            assert meta["points"] >= 0 and meta["locked"] and not meta["solution"]
        if meta["solution"]:
            assert not meta["locked"] and "BEGIN SOLUTION" in _source(cell)
        if _source(cell).startswith("%%tenflang "):
            assert meta["locked"], "a model cell that is not locked"
    for cell in cells:
        if "BEGIN HIDDEN TESTS" in _source(cell):
            assert _meta(cell).get("grade"), "hidden tests in a cell nbgrader does not grade"
    points = {_meta(c)["grade_id"]: _meta(c)["points"] for c in cells
              if _meta(c).get("grade") and _meta(c)["points"]}
    assert points == ENGINE_POINTS
    setup = next(c for c in cells if c["cell_type"] == "code")
    assert _meta(setup)["grade_id"] == "setup" and _meta(setup)["points"] == 0
    assert 'tf.grading.start("07_your_own_engine", graded=[])' in _source(setup)
    # every exercise's heading gives its points and minutes, and so does the first cell's table
    headings = re.findall(r"^## Exercise (\d) · .* \((\d+) points, about (\d+) minutes\)",
                          "\n".join(_source(c) for c in cells), re.M)
    table = re.findall(r"^\| (\d) \| `\w+\(.*\| (\d+) \| (\d+) \|$", _source(cells[0]), re.M)
    assert headings == table and [int(p) for _, p, _ in headings] == list(ENGINE_POINTS.values())
    readme = (REPO / "notebooks" / "README.md").read_text("utf-8")
    plan = readme.split("## An hour with `07_your_own_engine.ipynb`", 1)[1].split("\n## ")[0]
    rows = re.findall(r"^\| exercise (\d) \|[^|]*\| (\d+) \| (\d+) \|$", plan, re.M)
    assert rows == headings  # the lab plan, as the headings say
    minutes = sum(int(m) for m in re.findall(r"^\|[^|]*\|[^|]*\| *\d* *\| (\d+) \|$", plan, re.M))
    assert f"{minutes} minutes of work, {sum(ENGINE_POINTS.values())} points" in plan


def test_every_engine_answer_is_a_function_checked_by_the_next_cell() -> None:
    cells = [c for c in _engine() if c["cell_type"] == "code"]
    answers = [i for i, c in enumerate(cells) if _meta(c).get("solution")]
    assert [re.match(r"def (\w+)\(", _source(cells[i])).group(1) for i in answers] == \
        ["forward", "backprop_step", "backward"]
    for i in answers:
        name = re.match(r"def (\w+)\(", _source(cells[i])).group(1)
        assert _meta(cells[i + 1]).get("grade")
        assert f'tf.grading.check_engine("{name}")' in _source(cells[i + 1])


def test_the_engines_student_version() -> None:
    nb = student_version(ENGINE)
    text = "\n".join(c.source for c in nb.cells)
    for gone in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "teacher_copy"):
        assert gone not in text, gone
    solutions = {_meta(c)["grade_id"]: _source(c) for c in _engine() if _meta(c).get("solution")}
    stub = CODE_STUB.replace("\n", "\n    ")
    for cell in (c for c in nb.cells if _meta(c).get("solution")):
        assert f"    {stub}" in cell.source  # the function's body, nbgrader's stub
        solution = solutions[_meta(cell)["grade_id"]].split("### BEGIN SOLUTION")[1]
        for line in solution.split("### END SOLUTION")[0].splitlines():
            if line.strip() and not line.strip().startswith("#"):
                assert line not in cell.source.splitlines(), line


@pytest.fixture(scope="module")
def engine_run() -> dict[str, Any]:
    """07's student version, executed top to bottom in a student's copy (errors allowed)."""
    from nbclient import NotebookClient

    nb = student_version(ENGINE)
    env = {k: os.environ.pop(k) for k in ("NBGRADER_EXECUTION", "JUPYTERHUB_USER",
                                          "TENFLANG_STUDENT") if k in os.environ}
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(ENGINE.parent)}}).execute()
    finally:
        os.environ.update(env)
    return nb


def test_the_engines_student_version_runs_and_fails_every_check_helpfully(
        engine_run: dict[str, Any]) -> None:
    for i, cell in enumerate(engine_run["cells"]):
        if cell["cell_type"] != "code":
            continue
        errors = _errors(cell)
        meta = _meta(cell)
        if meta.get("grade_id") == "setup":
            assert not errors
            assert _text(cell).startswith("Grading mode is on. The checks' random programs are "
                                          "drawn for the default student id 'student'")
        elif meta.get("grade"):  # the verdict, never a NameError or a traceback
            assert [e["ename"] for e in errors] == ["GradingFailure"], meta["grade_id"]
            assert "is not answered yet" in errors[0]["evalue"]
            assert not any("Traceback" in line for line in errors[0]["traceback"])
        elif meta.get("solution"):  # the cell tries its function, nbgrader's stub raises
            assert [e["ename"] for e in errors] == ["NotImplementedError"], i
        else:
            assert not errors, f"cell {i}: {errors}"


def _engine_cells(**changes: tuple[str, str]) -> dict[str, str]:
    """07's code cells as a student runs them: the student version's setup and checks, and
    the source's answers with ``changes`` (grade id -> (old, new)) made."""
    student = {(_meta(c).get("grade_id") or str(i)): c.source
               for i, c in enumerate(student_version(ENGINE).cells) if c.cell_type == "code"}
    for cell in _engine():
        grade_id = _meta(cell).get("grade_id")
        if _meta(cell).get("solution"):
            text = _source(cell)
            if grade_id in changes:
                old, new = changes[grade_id]
                assert old in text, old
                text = text.replace(old, new)
            student[grade_id] = text
    return student


def _run_engine(ip: Any, cells: dict[str, str], check: str) -> BaseException | None:
    from IPython.utils.capture import capture_output

    with capture_output():
        for grade_id, text in cells.items():
            if grade_id.endswith("_check"):
                continue
            ip.run_cell(text)
        return ip.run_cell(cells[check]).error_in_exec


def test_a_wrong_engine_fails_its_checks_naming_the_program_and_the_variable(ip: Any
                                                                            ) -> None:
    cells = _engine_cells(step_answer=("adjoints[operand] += ", "adjoints[operand] = "))
    error = _run_engine(ip, cells, "step_check")
    assert type(error).__name__ == "GradingFailure"
    message = str(error)
    assert message.startswith("✗ backprop_step: on `define v = mul a b` with a = ")
    assert "before it: d/L/d/a should become" in message
    assert "add to it (+=), do not replace it (=)" in message
    error = ip.run_cell(cells["backward_check"]).error_in_exec
    message = str(error)
    assert re.match(r"✗ backward: program 1 of 8: d/L/d/v\d+ is -?[\d.]+, not -?[\d.]+\n", message)
    assert "its adjoint is the sum of a term per use (+= in backprop_step, not =)" in message
    assert "program 1 of 8, on x1 = " in message and "define L = mul" in message
    assert error._render_traceback_() == message.splitlines()  # type: ignore[union-attr]


def test_an_engine_that_asks_the_compiler_fails(ip: Any) -> None:
    asked = ("    values = forward(program, values)",
             "    gcp = tf.compile(program, full=True)  # the package's adjoints\n"
             "    values = forward(program, values)")
    error = _run_engine(ip, _engine_cells(backward_answer=asked), "backward_check")
    assert str(error).startswith("✗ backward: it asked for the package's compiler, which the "
                                 "check switches off")
    # once the check is over the package compiles again
    assert not ip.run_cell("tf.compile(seed.program)").error_in_exec


def test_the_checks_draw_each_students_programs(ip: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    cells = _engine_cells(forward_answer=("values = dict(values)", "values = {}"))
    seen = []
    from tenflang_nb.notebook.grading_mode import GRADING

    for student in ("ada", "bob", "ada"):
        monkeypatch.setenv("TENFLANG_STUDENT", student)
        GRADING.reset()  # a kernel of their own: the student stays as grading mode found it
        seen.append(str(_run_engine(ip, cells, "forward_check")))
    assert seen[0] == seen[2] != seen[1]
    # what the function raised, where, and on which program: no traceback
    assert re.match(r"✗ forward: program 1 of 8: it raised KeyError: '\w+' \(in forward, "
                    r"line 7: operands = \[values\[o\] if ", seen[0])
