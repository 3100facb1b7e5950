"""``tenflang-course``: a course made by ``new``, checked by ``solve``, looked at by
``report``; in the slow lane, graded by real nbgrader in the sandbox.

The slow test's students, in a course with a secret: ``ada``'s submissions are ``solve``'s
(full marks), ``bea`` hands in a copy of ada's (the numbers drawn for ada are wrong for
him: at most a tenth of the points whose numbers vary; the rest is right for everybody and
``report`` says he copied), ``cyd`` hands in the released notebook (0), ``dan`` the public
practice solutions (wrong for the models and numbers drawn for him, but for what is right
for everybody, such as exercise 16's model and 07's engine: ``report`` says he copied them).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hint_support import drawn_variants

from tenflang_nb.core.grading import student_key, student_seed
from tenflang_nb.course.layout import ASSIGNMENTS, SECRET_FILE
from tenflang_nb.course.new import new_course
from tenflang_nb.course.report import report, suspicious_names
from tenflang_nb.course.solve import cell_source, nbgrader_meta, solution

SECRET = "course-secret-for-the-tests"
PROBE = "examples/xor/training_data.txt"  # a file 06's assignment holds


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tenflang_nb.course.cli", *args],
                          capture_output=True, text=True, timeout=120)


def test_new_writes_a_course_with_its_files_inside_each_assignment(tmp_path: Path) -> None:
    course = new_course(tmp_path / "c", SECRET)
    secret = course / SECRET_FILE
    assert secret.read_text().strip() == SECRET
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert "configure(c, __file__)" in (course / "nbgrader_config.py").read_text()
    spec = json.loads((course / "jupyter/kernels/tenflang-sandbox/kernel.json").read_text())
    assert "tenflang_nb.grader.sandbox" in spec["argv"]
    for assignment, notebook in ASSIGNMENTS.items():
        text = (course / "source" / assignment / notebook).read_text("utf-8")
        assert "../" not in text and SECRET not in text
    six = course / "source" / "06_when_training_fails"
    read = {p.relative_to(six).as_posix() for p in (six / "examples").rglob("*") if p.is_file()}
    assert read == {"examples/linear/shape.tf", "examples/linear/training_data.csv",
                    "examples/logistic/training_data.txt", "examples/xor/training_data.txt"}
    assert "examples/xor/training_data.txt" in (six / ASSIGNMENTS[six.name]).read_text()


def test_new_makes_a_secret_and_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    done = _cli("new", str(tmp_path / "c"))
    assert done.returncode == 0, done.stderr
    made = (tmp_path / "c" / SECRET_FILE).read_text().strip()
    assert len(made) == 32 and int(made, 16) >= 0
    again = _cli("new", str(tmp_path / "c"), "--secret", "x")
    assert again.returncode == 1
    assert again.stderr == (f"tenflang-course: error: {tmp_path / 'c'}: not an empty folder; "
                            "a course is written into a new or empty one (nothing was "
                            "changed)\n")
    assert (tmp_path / "c" / SECRET_FILE).read_text().strip() == made


def test_bad_commands_say_why_without_a_traceback(tmp_path: Path) -> None:
    new_course(tmp_path / "c", SECRET)
    for args, said in [(("solve", str(tmp_path / "c"), "08_x", "ada"), "08_x: not a graded"),
                       (("solve", str(tmp_path / "c"), "05_exercises", "ada"),
                        "not released yet (run `nbgrader generate_assignment 05_exercises`"),
                       (("report", str(tmp_path / "nowhere"), "05_exercises"),
                        "05_exercises.ipynb: no such notebook")]:
        done = _cli(*args)
        assert done.returncode == 1 and said in done.stderr and "Traceback" not in done.stderr


def test_the_secret_enters_every_draw() -> None:
    plain = student_seed("ada", "05_exercises/example/ex3")
    keyed = {student_seed("ada", "05_exercises/example/ex3", student_key(s, "ada"))
             for s in ("one", "two")}
    assert plain not in keyed and len(keyed) == 2


def test_a_kernel_with_the_students_key_draws_what_the_grader_draws() -> None:
    from tenflang_nb.grader.grade import Grader, TeacherCell
    from tenflang_nb.notebook.grading_mode import GradingMode

    mode = GradingMode()
    mode.start("05_exercises", [], environ={"TENFLANG_STUDENT": "ada",
                                            "TENFLANG_COURSE_KEY": student_key(SECRET, "ada")})
    setup = [TeacherCell("setup", "tf.grading.start('05_exercises', graded=[])", False)]
    with_secret = Grader(setup, {}, "ada", secret=SECRET)._seed("example/ex3")
    assert mode.seed("example/ex3") == with_secret
    assert with_secret != Grader(setup, {}, "ada")._seed("example/ex3")


def test_the_reports_module_needs_no_ipython() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys, tenflang_nb.course.report, "
                           "tenflang_nb.course.new; print('IPython' in sys.modules)"],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_suspicious_names_leave_honest_python_alone() -> None:
    assert suspicious_names("x3, y3 = example_3['x'], example_3['y']\n"
                            "answer_3 = 2 * (0.5 - y3) * 0.25 * x3  # by the chain rule") == []
    assert suspicious_names("import importlib\n__import__('os').environ") == [
        "importlib", "__import__"]


def _submit(course: Path, student: str, answers: dict[str, str],
            added: str | None = None) -> Path:
    """A submission of 05 in ``course``: the released notebook (the source, its answer cells
    stubbed), ``answers`` by grade id, ``added`` as a code cell the student added."""
    source = json.loads((course / "source/05_exercises/05_exercises.ipynb").read_text())
    for cell in source["cells"]:
        if nbgrader_meta(cell).get("solution"):
            cell["source"] = answers.get(nbgrader_meta(cell)["grade_id"],
                                         cell_source(cell).split("\n", 1)[0] + "\n"
                                         "raise NotImplementedError()")
    if added is not None:
        source["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [],
                                "execution_count": None, "source": added})
    folder = course / "submitted" / student / "05_exercises"
    folder.mkdir(parents=True)
    (folder / "05_exercises.ipynb").write_text(json.dumps(source))
    return folder


def test_report_flags_each_kind_and_leaves_an_honest_submission_alone(tmp_path: Path) -> None:
    import tenflang_nb as tf

    course = new_course(tmp_path / "c", SECRET)
    (course / "release/05_exercises").mkdir(parents=True)
    def compiled(student: str) -> list[str]:  # the compiler's pass of the quad drawn for them
        quad = drawn_variants(student, student_key(SECRET, student))["quad"][0]
        return [str(line.statement) for line in tf.compile(tf.parse(quad)).lines
                if line.section == "backward"]

    renamed = [line.replace(":", "_") for line in reversed(compiled("renamed"))
               if line.startswith("define")]
    head = "%%tenflang_check quad ex4\n"
    _submit(course, "honest", {"ex1_answer": "%%tenflang_check seed ex1 --require "
                               "d/lambda/d/diff\ndefine d/lambda/d/diff = add diff diff",
                               "ex3_answer": "answer_3 = 0.125  # by the chain rule, eval'd"})
    _submit(course, "twin", {"ex1_answer": "%%tenflang_check seed ex1 --require "
                             "d/lambda/d/diff\ndefine d/lambda/d/diff = add diff diff",
                             "ex3_answer": "answer_3 = 0.125  # by the chain rule, eval'd"})
    _submit(course, "python", {"ex1_answer": "%%tenflang_check seed ex1\nimport os\n"
                               "define d/lambda/d/diff = add diff diff",
                               "ex3_answer": "answer_3 = eval('0.125')"},
            added="get_ipython().input_transformers_cleanup.clear()")
    shadow = _submit(course, "shadow", {}) / "tenflang_nb"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("")
    _submit(course, "pasted", {"ex4_answer": head + "\n".join(compiled("pasted"))})
    _submit(course, "renamed", {"ex4_answer": head + "\n".join(renamed)})
    said = {s.student: [(f.kind, f.cell, f.detail) for f in s.flags]
            for s in report(course, "05_exercises")}
    assert said["honest"] == said["twin"] == []  # two short answers alike: no copy
    assert said["python"] == [
        ("reaches into the grading", "(a cell the student added)", "get_ipython"),
        ("Python in a TenFlang answer", "ex1_answer", "line 2"),
        ("reaches into the grading", "ex3_answer", "eval")]
    assert said["shadow"] == [("file beside the notebook", "", "tenflang_nb/__init__.py")]
    assert [k for k, _, _ in said["pasted"]] == ["the compiler's backward pass"]
    assert said["renamed"] == [("the compiler's backward pass", "ex4_answer", "its adjoints "
                                "are the compiler's, up to renaming and order")]
    done = _cli("report", str(course), "05_exercises", "--json")
    listed = json.loads(done.stdout)["students"]
    assert {s: [(f["kind"], f["cell"], f["detail"]) for f in v["flags"]]
            for s, v in listed.items()} == said
    text = _cli("report", str(course), "05_exercises").stdout
    assert "honest: nothing to look at\n" in text
    assert "  - file beside the notebook: tenflang_nb/__init__.py\n" in text


# ---------------------------------------------------------------------- real nbgrader

STUDENTS = {"05_exercises": ("ada", "bea", "cyd", "dan"),
            # eve: solve's answers and a line that reads a file of the assignment's
            "06_when_training_fails": ("ada", "bea", "dan", "eve"),
            "07_your_own_engine": ("ada", "bea", "dan")}
# the checks whose right answer depends on the student's numbers (05's examples, 06's) or on
# the model drawn for them (05's exercises 1, 2, 4 to 8 and 10 to 15; 16's model is anybody's)
VARYING = {"05_exercises": {f"ex{n}_check" for n in range(1, 16)},
           "06_when_training_fails": {f"ex{n}_check" for n in range(1, 5)}}


def _numbers(path: Path) -> list[str]:
    return [cell_source(c) for c in json.loads(path.read_text())["cells"]
            if nbgrader_meta(c).get("solution") and not cell_source(c).startswith("%%")]


def _solved_for(course: Path, assignment: str, student: str) -> Path:
    """``solve``'s notebook for ``student`` (the numbers the course draws for them), read and
    removed."""
    done = _cli("solve", str(course), assignment, student)
    assert done.returncode == 0, done.stderr
    folder = course / "submitted" / student / assignment
    kept = course.parent / f"solved-{student}" / assignment  # nbgrader grades submitted/
    kept.parent.mkdir(exist_ok=True)
    folder.rename(kept)
    if not any(folder.parent.iterdir()):
        folder.parent.rmdir()
    return kept / ASSIGNMENTS[assignment]


def _practice(source: dict[str, Any], release: dict[str, Any]) -> dict[str, Any]:
    answers = {nbgrader_meta(c)["grade_id"]: solution(cell_source(c)) for c in source["cells"]
               if nbgrader_meta(c).get("solution")}
    for cell in release["cells"]:
        if nbgrader_meta(cell).get("solution"):
            cell["source"] = answers[nbgrader_meta(cell)["grade_id"]]
    return release


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("nbgrader", reason="nbgrader is in the test extra")
    if shutil.which("bwrap") is None:
        pytest.skip("the sandbox needs bubblewrap (scripts/setup installs it)")
    from nbgrader.api import Gradebook
    from nbgrader_support import PATH, run_nbgrader

    course = new_course(tmp_path_factory.mktemp("course") / "course", SECRET)
    scores: dict[tuple[str, str], dict[str, tuple[float, float]]] = {}
    reports: dict[str, Any] = {}
    for assignment, students in STUDENTS.items():
        notebook = ASSIGNMENTS[assignment]
        run_nbgrader(course, "generate_assignment", assignment, "--force")
        done = _cli("solve", str(course), assignment, "ada")
        assert done.returncode == 0, done.stderr
        solved = course / "submitted" / "ada" / assignment / notebook
        if assignment in VARYING:  # a classmate whose numbers differ from ada's (most do)
            assert _numbers(solved) != _numbers(_solved_for(course, assignment, "bea"))
        release = course / "release" / assignment
        for student in students[1:]:
            folder = course / "submitted" / student / assignment
            if student == "bea":
                folder.mkdir(parents=True)
                shutil.copy(solved, folder / notebook)
            elif student == "eve":
                nb = json.loads(_solved_for(course, assignment, "eve").read_text())
                (answer,) = [c for c in nb["cells"] if nbgrader_meta(c).get("solution")][:1]
                answer["source"] = f"print(open({PROBE!r}).readline())\n" + cell_source(answer)
                shutil.copytree(release, folder)
                (folder / notebook).write_text(json.dumps(nb))
            else:  # as released, with the examples beside it
                shutil.copytree(release, folder)
            if student == "dan":
                source = json.loads((course / "source" / assignment / notebook).read_text())
                nb = _practice(source, json.loads((folder / notebook).read_text()))
                (folder / notebook).write_text(json.dumps(nb))
        run_nbgrader(course, "autograde", assignment, "--force")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PATH", PATH)
            with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
                for student in students:
                    (nb,) = gb.find_submission(assignment, student).notebooks
                    scores[(assignment, student)] = {g.name: (g.score, g.max_score)
                                                     for g in nb.grades}
        run_nbgrader(course, "generate_feedback", assignment, "--force")
        said = _cli("report", str(course), assignment)
        print(said.stdout)  # the flags, in the log
        reports[assignment] = {s.student: s for s in report(course, assignment)}
        assert said.returncode == 0
    return {"course": course, "scores": scores, "reports": reports}


def _total(scores: dict[str, tuple[float, float]], only: set[str] | None = None
           ) -> tuple[float, float]:
    chosen = [v for g, v in scores.items() if only is None or g in only]
    return sum(s for s, _ in chosen), sum(m for _, m in chosen)


@pytest.mark.slow
@pytest.mark.parametrize("assignment", list(STUDENTS))
def test_solve_gets_full_marks_and_blank_none(graded: dict[str, Any], assignment: str) -> None:
    got, most = _total(graded["scores"][(assignment, "ada")])
    assert most > 0 and got == most
    if "cyd" in STUDENTS[assignment]:
        assert _total(graded["scores"][(assignment, "cyd")])[0] == 0


@pytest.mark.slow
def test_the_sandboxed_kernel_reads_the_files_inside_the_assignment(graded: dict[str, Any]
                                                                     ) -> None:
    course, six = graded["course"], "06_when_training_fails"
    cells = json.loads((course / "autograded/eve" / six / ASSIGNMENTS[six]).read_text())["cells"]
    assert [o for c in cells for o in c.get("outputs", []) if o["output_type"] == "error"] == []
    (answer,) = [c for c in cells if nbgrader_meta(c).get("solution")][:1]
    first = (course / "release" / six / PROBE).read_text().splitlines()[0]
    assert first and first in "".join(o.get("text", "") if isinstance(o.get("text"), str)
                                      else "".join(o.get("text", []))
                                      for o in answer["outputs"])
    assert _total(graded["scores"][(six, "eve")])[0] == _total(graded["scores"][(six, "ada")])[0]


@pytest.mark.slow
def test_the_kernel_runs_only_what_the_answers_need(graded: dict[str, Any]) -> None:
    """At autograde the kernel runs the nbgrader cells and the cells they read from: 06's
    tutorial cells get a note instead of outputs; 07's helper that its answer cells call runs
    (no answer cell fails for want of it)."""
    course = graded["course"]
    ran = {}
    for assignment in ("06_when_training_fails", "07_your_own_engine"):
        cells = [c for c in json.loads((course / "autograded/ada" / assignment
                                        / ASSIGNMENTS[assignment]).read_text())["cells"]
                 if c["cell_type"] == "code"]
        said = json.dumps([c.get("outputs", []) for c in cells])
        assert "not run by the autograder" in said
        assert '"output_type": "error"' not in said
        ran[assignment] = {cell_source(c).split("(")[0]: c["execution_count"] is not None
                           for c in cells if cell_source(c).startswith("def ")}
    assert ran["07_your_own_engine"]["def rounded"]  # the answers' helper


@pytest.mark.slow
@pytest.mark.parametrize("assignment", list(VARYING))
def test_a_classmates_numbers_are_wrong_for_anybody_else(graded: dict[str, Any],
                                                         assignment: str) -> None:
    varying = VARYING[assignment]
    assert _total(graded["scores"][(assignment, "ada")], varying)[0] > 0
    got, most = _total(graded["scores"][(assignment, "bea")], varying)
    assert most > 0 and got <= 0.1 * most


@pytest.mark.slow
@pytest.mark.parametrize(("assignment", "points"), [("05_exercises", 54),
                                                    ("06_when_training_fails", 8)])
def test_a_copy_and_the_practice_solutions_earn_at_most_a_tenth(graded: dict[str, Any],
                                                                assignment: str,
                                                                points: int) -> None:
    """Issue 24's "Done when" for 05 and 06: a solved submission earns full marks for its
    student, a classmate's copy of it and the public practice solutions at most a tenth of
    the points in the course; what they keep (05's exercise 16's model, right for
    everybody) ``report`` flags, and it flags both as copies."""
    got, most = _total(graded["scores"][(assignment, "ada")])
    assert most == points and got == most
    for student, what in (("bea", "a classmate's copy"), ("dan", "the practice solutions")):
        scores = graded["scores"][(assignment, student)]
        got, most = _total(scores)
        flags = [(f.kind, f.cell, f.detail) for f in graded["reports"][assignment][student].flags]
        print(f"{assignment[:2]}, {what} ({student}): {got:g} of {most:g} points "
              f"({got / most:.1%}), earned by {sorted(g for g, (s, _) in scores.items() if s)}; "
              f"flags: {flags}")
        assert got <= 0.1 * most
        assert flags  # the copies are what report shows the lecturer
    kinds = {f.kind for f in graded["reports"][assignment]["dan"].flags}
    assert "the practice solution" in kinds


@pytest.mark.slow
def test_report_flags_the_copies_and_never_an_honest_submission(graded: dict[str, Any]
                                                                ) -> None:
    for assignment, students in STUDENTS.items():
        seen = graded["reports"][assignment]
        assert seen["ada"].teachers and not seen["ada"].flags
        kinds = {s: {f.kind for f in seen[s].flags} for s in students[1:]}
        if "bea" in kinds:
            assert "identical submissions" in kinds["bea"]
        if "cyd" in kinds:
            assert kinds["cyd"] == set()
        if "dan" in kinds:  # in 07 the practice solution is solve's too: identical
            assert "the practice solution" in kinds["dan"]
            assert kinds["dan"] <= {"the practice solution", "identical submissions"}


def _hidden_lines(notebook: dict[str, Any]) -> list[str]:
    """The lines of the hidden tests of a source notebook (between nbgrader's markers), but
    for those its visible code holds too (a visible check and a hidden one may share a
    hint's line)."""
    found = []
    marked = r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS"
    for cell in notebook["cells"]:
        source = cell_source(cell)
        visible = {line.strip() for line in re.sub(marked, "", source, flags=re.S).splitlines()}
        for part in re.findall(marked, source, re.S):
            found += [line.strip() for line in part.splitlines()
                      if line.strip() and line.strip() not in visible]
    return found


@pytest.mark.slow
@pytest.mark.parametrize("assignment", list(STUDENTS))
def test_the_feedback_shows_no_hidden_test(graded: dict[str, Any], assignment: str) -> None:
    course = graded["course"]
    notebook = ASSIGNMENTS[assignment]
    hidden = _hidden_lines(json.loads((course / "source" / assignment / notebook).read_text()))
    assert hidden  # every graded notebook has some (its setup cell's teacher_copy())
    for student in STUDENTS[assignment]:
        page = (course / "feedback" / student / assignment
                / notebook.replace(".ipynb", ".html")).read_text("utf-8")
        text = html.unescape(re.sub(r"<[^>]+>", "", page))
        shown = [line for line in hidden if line in text]
        assert shown == [] and "HIDDEN TESTS" not in text, (student, shown[:3])
