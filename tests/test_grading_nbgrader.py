"""Every graded notebook through real nbgrader, as a course runs it.

A throwaway course in a temporary folder: the shipped notebooks with nbgrader markup are the
source of one assignment; ``nbgrader generate_assignment`` makes the student version, then
``nbgrader autograde`` grades four submissions of it:

* ``blank``: the student version as released;
* ``correct``: the source's solutions;
* ``partly``: every other answer wrong (a sign flipped, a number off by one, a usual
  mistake in an engine's function);
* ``cheating``: the tricks that scored full marks before the grading mode: ``--require``
  edited in an answer cell to ask for one line, an answer replaced by an object whose ``ok``
  is True, the compiler's backward pass pasted, numeric answers computed with the model;
  an engine's functions (07) asking the package's interpreter and compiler for the answer,
  or taking differences of the operator table's values.

The scores are read from nbgrader's gradebook: 0, full, partial and not full marks.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from nbgrader_support import PATH, run_nbgrader

from tenflang_nb.course.solve import drawn_answer
from tenflang_nb.grader.grade import Grader, TeacherCell

pytest.importorskip("nbgrader", reason="nbgrader is in the test extra: pip install -e .[test]")

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENT = "lab"
STUDENTS = ("blank", "correct", "partly", "cheating")

# Numeric answers computed with the model: what grading mode withholds. One per numeric
# answer cell of every graded notebook (a test below holds the table complete).
COMPUTED_WITH_THE_MODEL = {
    # an engine's functions (07: the body after the answer's `def` line) asking the package's
    # interpreter or compiler, what its checks switch off, or taking differences of the
    # operator table's values, which relu's kink gives away
    ("07_your_own_engine", "forward_answer"): """\
    from tenflang_nb.core.plan import Plan  # the package's interpreter
    names = [step.target for step in tf.steps(program)]
    return {**values, **Plan(program).example(values, names)}""",
    ("07_your_own_engine", "step_answer"): """\
    operands = [values[o] if isinstance(o, str) else o for o in step.operands]
    for i, operand in enumerate(step.operands):
        if isinstance(operand, str):
            up, down = list(operands), list(operands)
            up[i] += 1e-6
            down[i] -= 1e-6
            slope = (tf.ops.value(step.op, *up) - tf.ops.value(step.op, *down)) / 2e-6
            adjoints[operand] += adjoints[step.target] * slope""",
    ("07_your_own_engine", "backward_answer"): """\
    from tenflang_nb.core.plan import Plan
    gcp = tf.compile(program, full=True).program()  # the package's compiler
    names = {v: f"d/{program.loss}/d/{v}" for v in program.decls
             if f"d/{program.loss}/d/{v}" in gcp.decls}
    found = Plan(gcp).example(values, list(names.values()))
    return {v: found[name] for v, name in names.items()}""",
    ("05_exercises", "ex3_answer"): 'seed.weights["w"] = 0.0\n'
                                    'answer_3 = float(seed.values(example_3)["w"][1])',
    ("05_exercises", "ex9_answer"): 'seed.train(example_3, lr=2, max_iter=1, tol=0)\n'
                                    'answer_9 = float(seed.weights["w"])',
    # 06 asks for what one measures with the models: its cheats take a number from the text
    # or from the model without measuring what the exercise asks
    ("06_when_training_fails", "ex1_answer"): "answer_1 = round(top.lr_limit, 2)",  # 0.37
    ("06_when_training_fails", "ex2_answer"): "answer_2 = 300",  # section 2's lr
    ("06_when_training_fails", "ex3_answer"): 'answer_3 = size["d/L/d/w1"] / size["d/L/d/w8"]',
    ("06_when_training_fails", "ex4_answer"): "answer_4 = 24  # 4!, no sign flips, 4 units",
}
# Answers that are a model (the check trains it): a wrong one, and one that cheats.
MODEL_ANSWERS = {
    ("05_exercises", "ex16_answer"): {
        # one layer: XOR is not linearly separable
        "wrong": "declare input x [2]\ndeclare exp_output y\ndeclare weight w [2]\n"
                 "declare weight b\ndeclare intvar a\ndeclare intvar z\ndeclare output o\n"
                 "declare intvar e\ndeclare loss L\ndefine a = matmul x w\n"
                 "define z = add a b\ndefine o = logistic z\ndefine e = sub o y\n"
                 "define L = mul e e",
        # the output copied from the expected output, a weight added for show
        "cheat": "declare input x [2]\ndeclare exp_output y\ndeclare weight w [2]\n"
                 "declare intvar a\ndeclare output o\ndeclare intvar e\ndeclare loss L\n"
                 "define a = matmul x w\ndefine o = add y a\ndefine e = sub o y\n"
                 "define L = mul e e",
    },
}
# An engine's function (07) made partly wrong: a usual mistake in it
SPOILED = {
    ("07_your_own_engine", "forward_answer"): ("values = dict(values)", "values = {}"),
    ("07_your_own_engine", "step_answer"): ("adjoints[operand] += ", "adjoints[operand] = "),
    ("07_your_own_engine", "backward_answer"): ("reversed(tf.steps(program))",
                                                "tf.steps(program)"),
}
TRICKS = ("require", "fake", "paste")
FAKE_RESULT = """class Passed:
    ok = True
    def report(self):
        return "all right"
{name} = Passed()"""


def _meta(cell: dict[str, Any]) -> dict[str, Any]:
    return cell.get("metadata", {}).get("nbgrader", {})


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _graded_notebooks() -> list[Path]:
    return [p for p in sorted((REPO / "notebooks").glob("[0-9]*.ipynb"))
            if any(_meta(c).get("grade") for c in json.loads(p.read_text("utf-8"))["cells"])]


GRADED = _graded_notebooks()


def _solution(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if "SOLUTION" not in line)


def _code_cell(text: str) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": text}


def _sign_flipped(answer: str) -> str:
    """A %%tenflang_check answer with the value of its last definition negated."""
    lines = answer.split("\n")
    last = max(i for i, line in enumerate(lines) if line.startswith("define "))
    target, expression = lines[last][len("define "):].split("=", 1)
    lines[last:last + 1] = [f"define flipped_ ={expression}",
                            f"define {target.strip()} = neg flipped_"]
    return "\n".join(lines)


def _spoiled(name: str, grade_id: str, answer: str) -> str:
    """A Python answer made wrong: its usual mistake (:data:`SPOILED`), else its number + 1."""
    if (name, grade_id) not in SPOILED:
        return answer + "\n" + f"{answer.split('=', 1)[0].strip()} += 1"
    old, new = SPOILED[(name, grade_id)]
    assert old in answer, (name, grade_id, old)
    return answer.replace(old, new)


def _pasted(answer: str, models: dict[str, str]) -> str:
    """The answer cell with the compiler's backward pass for its model pasted in."""
    import tenflang_nb as tf

    head = answer.split("\n", 1)[0]
    gcp = tf.compile(tf.parse(models[head.split()[1]]))
    return "\n".join([head] + [str(line.statement) for line in gcp.lines
                               if line.section == "backward"])


def _submission(student: str, name: str, source: dict[str, Any], release: dict[str, Any]
                ) -> tuple[dict[str, Any], set[str]]:
    """The submission of ``student`` and the grade ids it should not get marks for."""
    solutions = {_meta(c)["grade_id"]: _solution(_source(c)) for c in source["cells"]
                 if _meta(c).get("solution")}
    models = {_source(c).split("\n", 1)[0].split()[1]: _source(c).split("\n", 1)[1]
              for c in source["cells"] if _source(c).startswith("%%tenflang ")}
    # the models drawn for this student (05's) and their right answers
    teacher = [TeacherCell(_meta(c).get("grade_id", ""), _source(c), bool(_meta(c).get(
        "solution"))) for c in source["cells"] if c["cell_type"] == "code"]
    grader = Grader(teacher, solutions, student)
    drawn = grader.drawn
    models |= drawn
    solutions = {g: drawn_answer(t, drawn) for g, t in solutions.items()}
    if name in ("05_exercises", "06_when_training_fails"):  # numbers drawn per student
        for g, t in solutions.items():
            for v in re.findall(r"^(answer_\d+) = ", t, re.M)[:1]:
                if grader.expected(v) is not None:
                    solutions[g] = f"{v} = {grader.expected(v)!r}"
    nb = copy.deepcopy(release)
    if student == "blank":
        return nb, {_meta(c)["grade_id"] for c in nb["cells"] if _meta(c).get("grade")}
    answers = [i for i, c in enumerate(nb["cells"]) if _meta(c).get("solution")]
    spoiled: set[str] = set()
    extra: dict[int, dict[str, Any]] = {}
    tricks = 0
    for k, i in enumerate(answers):
        cell = nb["cells"][i]
        grade_id = _meta(cell)["grade_id"]
        check = next(c for c in nb["cells"][i + 1:] if _meta(c).get("grade"))
        text = solutions[grade_id]
        checked = text.startswith("%%tenflang_check")
        if text.startswith("%%tenflang "):  # a model, the answer
            if student == "cheating" or (student == "partly" and k % 2 == 0):
                kind = "cheat" if student == "cheating" else "wrong"
                text = text.split("\n", 1)[0] + "\n" + MODEL_ANSWERS[(name, grade_id)][kind]
                spoiled.add(_meta(check)["grade_id"])
        elif student == "partly" and k % 2 == 0:
            text = _sign_flipped(text) if checked else _spoiled(name, grade_id, text)
            spoiled.add(_meta(check)["grade_id"])
        elif student == "cheating":
            if not checked:
                text = text.split("\n", 1)[0] + "\n" + COMPUTED_WITH_THE_MODEL[(name, grade_id)]
            else:
                adjoints = [line for line in text.split("\n") if line.startswith("define d/")]
                trick = TRICKS[tricks % len(TRICKS)]
                if trick == "require" and len(adjoints) < 2:  # one line is all it asks for
                    tricks += 1
                    trick = TRICKS[tricks % len(TRICKS)]
                tricks += 1
                magic = text.split("\n", 1)[0].split()
                if trick == "require":  # one adjoint asked for, one line written
                    text = (f"{' '.join(magic[:3])} --require {adjoints[0].split()[1]}\n"
                            f"{adjoints[0]}")
                elif trick == "fake":  # the answer left as released, its result replaced
                    text = _source(release["cells"][i])
                    extra[i] = _code_cell(FAKE_RESULT.format(name=magic[2]))
                else:
                    text = _pasted(text, models)
            spoiled.add(_meta(check)["grade_id"])
        cell["source"] = text
    for i in sorted(extra, reverse=True):
        nb["cells"].insert(i + 1, extra[i])
    return nb, spoiled


# the teachers' page's configuration: the grade computed in nbgrader's process, the
# submissions (and 07's functions) run in the sandbox where bubblewrap is installed
COURSE_CONFIG = f"""\
from tenflang_nb.grader.config import configure
c = get_config()
c.CourseDirectory.course_id = 'tenflang'
configure(c, __file__, sandbox={shutil.which("bwrap") is not None})
"""


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The course, graded: scores per student and notebook, what each should have lost."""
    from nbgrader.api import Gradebook

    root = tmp_path_factory.mktemp("course")
    (root / "nbgrader_config.py").write_text(COURSE_CONFIG)
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    for path in GRADED:
        (root / "source" / ASSIGNMENT / path.name).write_text(path.read_text("utf-8"))
    run_nbgrader(root, "generate_assignment", ASSIGNMENT, "--force")
    spoiled: dict[tuple[str, str], set[str]] = {}
    for student in STUDENTS:
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        for path in GRADED:
            source = json.loads(path.read_text("utf-8"))
            release = json.loads((root / "release" / ASSIGNMENT / path.name).read_text("utf-8"))
            nb, lost = _submission(student, path.stem, source, release)
            (folder / path.name).write_text(json.dumps(nb, indent=1))
            spoiled[(student, path.stem)] = lost
    for student in STUDENTS:  # the tutorials read ../examples/ (the course ships it beside)
        (root / "autograded" / student).mkdir(parents=True, exist_ok=True)
        (root / "autograded" / student / "examples").symlink_to(REPO / "examples")
    run_nbgrader(root, "autograde", ASSIGNMENT, "--force")
    scores: dict[tuple[str, str], dict[str, tuple[float, float]]] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", PATH)
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
            for student in STUDENTS:
                for nb in gb.find_submission(ASSIGNMENT, student).notebooks:
                    scores[(student, nb.name)] = {g.name: (g.score, g.max_score)
                                                  for g in nb.grades}
    return {"root": root, "scores": scores, "spoiled": spoiled}


def _total(scores: dict[str, tuple[float, float]]) -> tuple[float, float]:
    return sum(s for s, _ in scores.values()), sum(m for _, m in scores.values())


def test_there_is_a_graded_notebook() -> None:
    assert [p.name for p in GRADED] == ["05_exercises.ipynb"] or len(GRADED) > 1


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.stem)
def test_every_numeric_answer_has_its_cheat(path: Path) -> None:
    for cell in json.loads(path.read_text("utf-8"))["cells"]:
        if _meta(cell).get("solution") and not _source(cell).startswith("%%"):
            assert (path.stem, _meta(cell)["grade_id"]) in COMPUTED_WITH_THE_MODEL


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.stem)
def test_every_model_answer_has_a_wrong_one_and_a_cheat(path: Path) -> None:
    for cell in json.loads(path.read_text("utf-8"))["cells"]:
        if _meta(cell).get("solution") and _source(cell).startswith("%%tenflang "):
            assert set(MODEL_ANSWERS[(path.stem, _meta(cell)["grade_id"])]) == {"wrong", "cheat"}


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.stem)
def test_the_student_version_says_nothing_false(course: dict[str, Any], path: Path) -> None:
    released = (course["root"] / "release" / ASSIGNMENT / path.name).read_text("utf-8")
    for hidden in ("BEGIN HIDDEN TESTS", "teacher_copy", "check_number", "gradient(",
                   "BEGIN SOLUTION", "solutions filled in", "For teachers"):
        assert hidden not in released, hidden
    assert "tf.grading.start(" in released  # grading mode stays on in the student version


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.stem)
def test_the_scores(course: dict[str, Any], path: Path) -> None:
    scores = {s: course["scores"][(s, path.stem)] for s in STUDENTS}
    totals = {s: _total(scores[s]) for s in STUDENTS}
    full = totals["correct"][1]
    assert full > 0
    assert totals["blank"] == (0, full)
    assert totals["correct"] == (full, full)
    assert 0 < totals["partly"][0] < full
    assert totals["cheating"][0] < full
    for student in ("partly", "cheating"):
        lost = course["spoiled"][(student, path.stem)]
        for grade_id, (score, most) in scores[student].items():
            assert score == (0 if grade_id in lost else most), (student, grade_id)


def test_an_engines_cheats_are_named(course: dict[str, Any]) -> None:
    graded = course["root"] / "autograded" / "cheating" / ASSIGNMENT / "07_your_own_engine.ipynb"
    said = "\n".join(out["evalue"] for cell in json.loads(graded.read_text("utf-8"))["cells"]
                     if _meta(cell).get("grade") for out in cell.get("outputs", [])
                     if out["output_type"] == "error")
    assert "✗ forward: it asked for the package's interpreter, which the check switches off" \
        in said
    # its first line imports the interpreter (Plan), which the engine's process cannot load
    assert "✗ backward: it asked for the package's interpreter" in said
    assert "relu is at its kink here" in said  # differences of tf.ops.value


@pytest.mark.parametrize("path", GRADED, ids=lambda p: p.stem)
def test_a_failed_check_says_why_and_shows_no_traceback(course: dict[str, Any],
                                                        path: Path) -> None:
    messages: dict[str, str] = {}
    for student in ("blank", "cheating"):
        graded = course["root"] / "autograded" / student / ASSIGNMENT / path.name
        found = []
        for cell in json.loads(graded.read_text("utf-8"))["cells"]:
            if not _meta(cell).get("grade"):
                continue
            for out in cell.get("outputs", []):
                if out["output_type"] == "error":
                    assert out["ename"] == "GradingFailure", out["ename"]
                    text = "\n".join(out["traceback"])
                    assert "Traceback" not in text and "File " not in text
                    found.append(text)
        messages[student] = "\n".join(found)
    assert "is not answered yet" in messages["blank"]
    if path.stem == "05_exercises":  # each trick, as the student reads its verdict
        cheated = messages["cheating"]
        assert re.search(r"ex\d: ✗ so far so good .* but not written yet", cheated)  # --require
        # the answer left unanswered, its result replaced by an object whose ok is True
        assert re.search(r"ex\d+: ✗ line 2: this exercise is not answered yet", cheated)
        assert "your answer is the compiler's backward pass, pasted" in cheated
        # numbers computed with the model: the autograder reads none of them
        assert "answer_3 is no number the autograder can read in your answer cell" in cheated
        assert "answer_9 is no number the autograder can read in your answer cell" in cheated
        assert "o is computed from y, the expected output" in cheated  # the model's answer
