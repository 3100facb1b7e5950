"""Cheats against the autograde of notebooks 05 and 07 (issue 24), through real nbgrader in a course
configured as the teachers' page says (``tenflang_nb.grader.config.configure``): the grade
computed in nbgrader's own process, the submissions run in the sandboxed kernel.

Each cheat is a class: the cells it adds after the setup cell, what it writes into answer
cells, the files it submits beside the notebook, and the checks it goes for. A blank
submission scores 0, the solutions full marks, and each cheat at most 10% of the points it
went for. (``grade_course(root, PLAIN)`` grades the same submissions under nbgrader's own
configuration: there, with the package as it was before issue 24, they scored.) 07's cheats
(``engine_cheats.py``: the compilers' switch turned back on from inside a function, the
verdict's token read from memory) score at most a tenth too, and ``tenflang-course report``
flags each of them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, ClassVar

import pytest
from engine_cheats import ENGINE_CHEATS, EngineCheat
from nbgrader_support import PATH, run_nbgrader

from tenflang_nb.course.solve import drawn_answer
from tenflang_nb.grader.grade import Grader, TeacherCell

pytest.importorskip("nbgrader", reason="nbgrader is in the test extra: pip install -e .[test]")

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "05_exercises.ipynb"
ENGINE = REPO / "notebooks" / "07_your_own_engine.ipynb"
ASSIGNMENT = "lab"
NUMBERS = {"ex3_check", "ex9_check"}  # the checks of the numeric answers
HARDENED = """\
from tenflang_nb.grader.config import configure
c = get_config()
c.CourseDirectory.course_id = 'tenflang'
configure(c, __file__)
"""
PLAIN = "c = get_config()\nc.CourseDirectory.course_id = 'tenflang'\n"


def _meta(cell: dict[str, Any]) -> dict[str, Any]:
    return cell.get("metadata", {}).get("nbgrader", {})


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _code(text: str) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": text}


class Cheat:
    """A way to score without answering: cells after the setup cell, answers, files."""

    name: ClassVar[str]
    went_for: ClassVar[set[str] | None] = None  # the checks it goes for (None: all)
    cells: ClassVar[tuple[str, ...]] = ()
    # where the cells go: added after the setup cell (None), or at the top of an answer cell
    # (the kernel runs an added cell only when an answer reads what it sets)
    into: ClassVar[str | None] = None
    answers: ClassVar[dict[str, str]] = {}  # grade id -> the answer cell's new source

    def files(self, folder: Path, root: Path) -> None:
        """Files submitted beside the notebook."""

    def code(self, root: Path) -> list[str]:
        return [c.replace("{ROOT}", str(root)) for c in self.cells]


class ReplaceTheChecks(Cheat):
    name = "replace_checks"
    cells = ("import tenflang_nb as tf\n"
             "def _passed(*args, **kwargs):\n    print('✓ right')\n"
             "for _name in ('check_answer', 'check_fit', 'given', 'check_number'):\n"
             "    setattr(tf.grading, _name, _passed)",)


class TransformerPasses(Cheat):
    name = "input_transformer"
    cells = ("def _no_checks(lines):\n"
             "    return ['pass\\n'] if any('tf.grading.' in line for line in lines) else lines\n"
             "get_ipython().input_transformers_post.append(_no_checks)",)


NUMBERS_FROM_THE_KERNEL = {
    "ex3_answer": "answer_3 = tf.grading.gradient('seed', 'w', fingerprint='716879be5b9d', "
                  "example='ex3')",
    "ex9_answer": "answer_9 = 0.0 - 2 * answer_3"}


class NoNbgraderExecution(Cheat):
    name = "no_nbgrader_execution"
    went_for = NUMBERS
    cells = ("import os\nos.environ.pop('NBGRADER_EXECUTION', None)\n"
             "tf.grading.teacher_copy()",)
    answers: ClassVar[dict[str, str]] = NUMBERS_FROM_THE_KERNEL


class TeacherCopy(Cheat):
    name = "teacher_copy"
    went_for = NUMBERS
    cells = ("tf.grading.teacher_copy()",)
    answers: ClassVar[dict[str, str]] = NUMBERS_FROM_THE_KERNEL


class FloatSubclass(Cheat):
    name = "float_subclass"
    went_for = NUMBERS
    # equal to anything, and as a float the answer itself, computed when the check asks
    cells = ("class Anything(float):\n    def __eq__(self, other):\n        return True\n"
             "    __hash__ = float.__hash__\n"
             "    def __float__(self):\n"
             "        g = tf.grading.gradient('seed', 'w', fingerprint='716879be5b9d', "
             "example='ex3')\n"
             "        return g if self.real == 3 else 0.0 - 2 * g",)
    answers: ClassVar[dict[str, str]] = {"ex3_answer": "answer_3 = Anything(3)",
                                         "ex9_answer": "answer_9 = Anything(9)"}


class ShadowPackage(Cheat):
    """A ``tenflang_nb/`` folder beside the notebook whose checks all pass."""

    name = "shadow_package"

    def files(self, folder: Path, root: Path) -> None:
        (folder / "tenflang_nb").mkdir()
        (folder / "tenflang_nb" / "__init__.py").write_text(
            "class _Grading:\n    def __getattr__(self, name):\n"
            "        return lambda *args, **kwargs: print('✓ right')\n"
            "grading = _Grading()\n"
            "def load_ipython_extension(ip):\n    pass\n")


class ReadTheSource(Cheat):
    """The teacher's solutions, read from ``source/``, put in place of every stub as the
    kernel runs the cell (an input transformer): the kernel's checks see right answers."""

    name = "read_source"
    into = "ex3_answer"
    cells = ("import glob, json\n"
             "found = glob.glob('../../../source/*/05_exercises.ipynb') + "
             "glob.glob('{ROOT}/source/*/05_exercises.ipynb')\n"
             "_solutions = {}\n"
             "for cell in json.load(open(found[0]))['cells']:\n"
             "    if cell['metadata'].get('nbgrader', {}).get('solution'):\n"
             "        text = ''.join(cell['source'])\n"
             "        _solutions[text.split('\\n', 1)[0]] = text\n"
             "def _solved(lines):\n"
             "    first = lines[0].rstrip('\\n') if lines else ''\n"
             "    return _solutions[first].splitlines(True) if first in _solutions else lines\n"
             "get_ipython().input_transformers_cleanup.append(_solved)",)


class WriteTheGradebook(Cheat):
    """Full marks written into the gradebook, for every student graded so far."""

    name = "write_gradebook"
    into = "ex3_answer"
    cells = ("import glob, sqlite3\n"
             "found = glob.glob('../../../gradebook.db') + glob.glob('{ROOT}/gradebook.db')\n"
             "with sqlite3.connect(found[0]) as db:\n"
             "    db.execute('update grade set manual_score = (select max_score from '\n"
             "               'grade_cells where grade_cells.id = grade.cell_id)')",)


CHEATS = [ReplaceTheChecks(), TransformerPasses(), NoNbgraderExecution(), TeacherCopy(),
          FloatSubclass(), ShadowPackage(), ReadTheSource(), WriteTheGradebook()]


def _as_cheat(engine: EngineCheat) -> Cheat:
    """07's cheat (answer cells only) as a submission of this file's kind."""
    return type(type(engine).__name__, (Cheat,), {
        "name": engine.name, "went_for": engine.went_for, "answers": engine.answers})()


CHEATS_07 = [_as_cheat(c) for c in ENGINE_CHEATS]


def _submission(release: dict[str, Any], source: dict[str, Any], cheat: Cheat | None,
                solved: bool, root: Path, student: str) -> dict[str, Any]:
    nb = json.loads(json.dumps(release))
    if solved:
        solutions = {_meta(c)["grade_id"]: "\n".join(
            line for line in _source(c).split("\n") if "SOLUTION" not in line)
            for c in source["cells"] if _meta(c).get("solution")}
        # the right answers for the models and numbers drawn for this student
        teacher = [TeacherCell(_meta(c).get("grade_id", ""), _source(c), bool(_meta(c).get(
            "solution"))) for c in source["cells"] if c["cell_type"] == "code"]
        grader = Grader(teacher, solutions, student)
        for cell in nb["cells"]:
            if _meta(cell).get("solution"):
                text = drawn_answer(solutions[_meta(cell)["grade_id"]], grader.drawn)
                for v in re.findall(r"^(answer_\d+) = ", text, re.M)[:1]:
                    if grader.expected(v) is not None:
                        text = f"{v} = {grader.expected(v)!r}"
                cell["source"] = text
    if cheat is not None:
        for cell in nb["cells"]:
            if _meta(cell).get("grade_id") in cheat.answers:
                cell["source"] = cheat.answers[_meta(cell)["grade_id"]]
        if cheat.into is not None:
            (cell,) = [c for c in nb["cells"] if _meta(c).get("grade_id") == cheat.into]
            cell["source"] = "\n".join([*cheat.code(root), _source(cell)])
        else:
            setup = next(i for i, c in enumerate(nb["cells"])
                         if _meta(c).get("grade_id") == "setup")
            nb["cells"][setup + 1:setup + 1] = [_code(c) for c in cheat.code(root)]
    return nb


def grade_course(root: Path, config: str, notebook: Path = NOTEBOOK,
                 cheats: list[Cheat] = CHEATS) -> dict[str, dict[str, tuple[float, float]]]:
    """A course in ``root`` with ``config`` as its nbgrader_config.py: ``notebook`` released,
    a blank, a solved and one submission per cheat autograded; the scores by student and
    check."""
    from nbgrader.api import Gradebook

    (root / "nbgrader_config.py").write_text(config)
    (root / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(notebook, root / "source" / ASSIGNMENT / notebook.name)
    run_nbgrader(root, "generate_assignment", ASSIGNMENT, "--force")
    source = json.loads(notebook.read_text("utf-8"))
    release = json.loads((root / "release" / ASSIGNMENT / notebook.name).read_text("utf-8"))
    # autograded in the order of their ids: the gradebook's writer after the blank one
    students: dict[str, tuple[Cheat | None, bool]] = {"blank": (None, False),
                                                      "solved": (None, True)}
    students.update({f"cheat_{c.name}": (c, False) for c in cheats})
    for student, (cheat, solved) in students.items():
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nb = _submission(release, source, cheat, solved, root, student)
        (folder / notebook.name).write_text(json.dumps(nb, indent=1))
        if cheat is not None:
            cheat.files(folder, root)
    run_nbgrader(root, "autograde", ASSIGNMENT, "--force")
    scores: dict[str, dict[str, tuple[float, float]]] = {}
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = PATH  # the gradebook's migrations run `alembic`
    try:
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
            for student in students:
                (nb,) = gb.find_submission(ASSIGNMENT, student).notebooks
                scores[student] = {g.name: (g.score, g.max_score) for g in nb.grades}
    finally:
        os.environ["PATH"] = old
    return scores


def _went_for(cheat: Cheat, scores: dict[str, tuple[float, float]]) -> tuple[float, float]:
    checks = cheat.went_for or {g for g, (_, most) in scores.items() if most}
    return (sum(scores[g][0] for g in checks), sum(scores[g][1] for g in checks))


@pytest.fixture(scope="module")
def hardened(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if shutil.which("bwrap") is None:
        pytest.skip("the sandbox needs bubblewrap (scripts/setup installs it)")
    root = tmp_path_factory.mktemp("course")
    scores = grade_course(root, HARDENED)
    for cheat in CHEATS:  # the table, in the log: what each cheat got of what it went for
        got, most = _went_for(cheat, scores[f"cheat_{cheat.name}"])
        print(f"{cheat.name}: {got:g} of {most:g} points")
    return {"root": root, "scores": scores}


def test_blank_scores_nothing_and_the_solutions_everything(hardened: dict[str, Any]) -> None:
    scores = hardened["scores"]
    full = sum(most for _, most in scores["solved"].values())
    assert full == 54
    assert sum(s for s, _ in scores["blank"].values()) == 0
    assert sum(s for s, _ in scores["solved"].values()) == full


@pytest.mark.parametrize("cheat", CHEATS, ids=lambda c: c.name)
def test_a_cheat_scores_at_most_a_tenth_of_what_it_went_for(hardened: dict[str, Any],
                                                          cheat: Cheat) -> None:
    got, most = _went_for(cheat, hardened["scores"][f"cheat_{cheat.name}"])
    assert most > 0 and got <= 0.1 * most, (cheat.name, got, most)


def test_the_sandbox_hides_the_course_and_keeps_its_files(hardened: dict[str, Any]) -> None:
    root = hardened["root"]
    graded = root / "autograded" / "cheat_write_gradebook" / ASSIGNMENT / NOTEBOOK.name
    said = json.dumps(json.loads(graded.read_text("utf-8"))["cells"])
    assert "IndexError" in said  # neither ../../../gradebook.db nor the course's own path
    read = root / "autograded" / "cheat_read_source" / ASSIGNMENT / NOTEBOOK.name
    assert "IndexError" in json.dumps(json.loads(read.read_text("utf-8"))["cells"])
    # a cell the student added that sets nothing an answer reads is not run at all (its
    # note says so); replace_checks's is run (it imports tf again, which the checks read)
    added = root / "autograded" / "cheat_input_transformer" / ASSIGNMENT / NOTEBOOK.name
    cells = json.loads(added.read_text("utf-8"))["cells"]
    setup = next(i for i, c in enumerate(cells) if _meta(c).get("grade_id") == "setup")
    assert "not run by the autograder" in json.dumps(cells[setup + 1]["outputs"])


@pytest.fixture(scope="module")
def engine_course(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """07 graded in the sandbox: a blank, a solved and one submission per engine cheat, and
    the report on them (``report`` reads the course's assignment by its own name)."""
    if shutil.which("bwrap") is None:
        pytest.skip("the sandbox needs bubblewrap (scripts/setup installs it)")
    from tenflang_nb.course.report import report

    root = tmp_path_factory.mktemp("engine_course")
    scores = grade_course(root, HARDENED, ENGINE, CHEATS_07)
    # report knows the graded assignments by their names: the same course, named as it does
    for folder in [root / "source", root / "release", *(root / "submitted").iterdir()]:
        (folder / ASSIGNMENT).rename(folder / ENGINE.stem)
    flags = {s.student: [f.kind for f in s.flags] for s in report(root, ENGINE.stem)}
    for cheat in CHEATS_07:
        got, most = _went_for(cheat, scores[f"cheat_{cheat.name}"])
        print(f"{cheat.name}: {got:g} of {most:g} points; report: {flags[f'cheat_{cheat.name}']}")
    return {"scores": scores, "flags": flags}


def test_07_blank_scores_nothing_and_the_solutions_everything(engine_course: dict[str, Any]
                                                              ) -> None:
    scores = engine_course["scores"]
    assert sum(most for _, most in scores["solved"].values()) == 10
    assert sum(s for s, _ in scores["blank"].values()) == 0
    assert sum(s for s, _ in scores["solved"].values()) == 10
    assert engine_course["flags"]["blank"] == []


@pytest.mark.parametrize("cheat", CHEATS_07, ids=lambda c: c.name)
def test_an_engine_cheat_scores_at_most_a_tenth_and_is_flagged(engine_course: dict[str, Any],
                                                               cheat: Cheat) -> None:
    got, most = _went_for(cheat, engine_course["scores"][f"cheat_{cheat.name}"])
    assert most > 0 and got <= 0.1 * most, (cheat.name, got, most)
    assert "reaches into the grading" in engine_course["flags"][f"cheat_{cheat.name}"]
