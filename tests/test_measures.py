"""Notebook 06's exercises, measured per student (issue 24, item 3): each measurement
(``notebook/measures.py``) is checked against what it claims by other means, every draw of a
class is graded right with its own number, the practice solutions and a classmate's numbers
are right for few, and the kernel measures what the grader measures."""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from IPython.utils.capture import capture_output

from tenflang_nb.core import api
from tenflang_nb.core.grading import COURSE_KEY, rounded, student_key
from tenflang_nb.course.solve import cell_source, nbgrader_meta, solution
from tenflang_nb.grader.grade import Grader, TeacherCell
from tenflang_nb.notebook.grading_mode import GRADING
from tenflang_nb.notebook.measures import MEASURES
from tenflang_nb.notebook.model import TenFlangModel

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "06_when_training_fails.ipynb"
SECRET = "a course's secret"
STUDENTS = [f"student{k:02d}" for k in range(40)]
CLASSES = [pytest.param(STUDENTS[:4], id="4 students"),
           pytest.param(STUDENTS, id="40 students", marks=pytest.mark.slow)]
ANSWERS = [f"answer_{n}" for n in range(1, 5)]


def _cells() -> list[dict[str, Any]]:
    return json.loads(NOTEBOOK.read_text("utf-8"))["cells"]


def _model(name: str) -> TenFlangModel:
    """The notebook's first ``%%tenflang NAME`` cell's model, its settings the cell's."""
    from tenflang_nb.notebook.magic import model_line

    for cell in _cells():
        first, _, body = cell_source(cell).partition("\n")
        if first.startswith(f"%%tenflang {name} "):
            return TenFlangModel(body, name, model_line(first.split(None, 1)[1])[1])
    raise AssertionError(f"no %%tenflang {name} cell")


def _teacher() -> tuple[list[TeacherCell], dict[str, str], dict[str, str]]:
    """The teacher's cells, the solutions by answer cell, the answer cell of each answer."""
    cells = [c for c in _cells() if c["cell_type"] == "code"]
    teacher = [TeacherCell(nbgrader_meta(c).get("grade_id", ""), cell_source(c),
                           bool(nbgrader_meta(c).get("solution"))) for c in cells]
    solutions = {nbgrader_meta(c)["grade_id"]: solution(cell_source(c)) for c in cells
                 if nbgrader_meta(c).get("solution")}
    cell_of = {f"answer_{n}": f"ex{n}_answer" for n in range(1, 5)}
    return teacher, solutions, cell_of


# ---------------------------------------------------------------------- each measurement


@pytest.mark.parametrize("scale", [1.5, 2.3, 3.95])
def test_lr_limit_is_where_descent_stops_converging(scale: float) -> None:
    """2 / h_max from the Hessian written by hand, rounded down to 0.001; and gradient
    descent at it shrinks the loss while 0.001 more makes it grow."""
    lin = _model("lin")
    table = api.load_data(REPO / "examples/linear/training_data.csv")
    limit = MEASURES["lr_limit"].measure({"model": lin, "data": table}, scale=scale)
    xs = scale * table.columns["x"]
    hessian = 2 * np.array([[np.mean(xs * xs), np.mean(xs)], [np.mean(xs), 1.0]])
    assert limit == pytest.approx(np.floor(1000 * 2 / np.linalg.eigvalsh(hessian).max()) / 1000)
    scaled = {"x": xs, "y": table.columns["y"]}
    first = lin.train(scaled, lr=limit, tol=0, max_iter=1).loss
    assert lin.train(scaled, lr=limit, tol=0, max_iter=2000).loss < first
    assert lin.train(scaled, lr=limit + 0.001, tol=0, max_iter=2000).loss > first


@pytest.mark.parametrize("tol", [0.0005, 0.0011])
def test_plateau_lr_is_the_first_whole_lr_on_the_plateau(tol: float) -> None:
    seed = _model("seed")
    table = api.load_data(REPO / "examples/logistic/training_data.txt")
    found = MEASURES["plateau_lr"].measure({"model": seed, "data": table}, tol=tol)
    minimum = seed.train(table, lr=2, tol=1e-7, max_iter=50_000).loss
    assert seed.train(table, lr=found, tol=tol).loss > 10 * minimum
    assert seed.train(table, lr=found - 1, tol=tol).loss < 2 * minimum


@pytest.mark.parametrize("seed", [0, 9, 41])
def test_adjoint_ratio_agrees_with_finite_differences(seed: int) -> None:
    chain = _model("chain")
    ratio = MEASURES["adjoint_ratio"].measure({"model": chain}, of=["w1", "w8"],
                                              replace={"logistic t": "tanh t"}, seed=seed)
    tanh = TenFlangModel(chain.source.replace("logistic t", "tanh t"), "t", init="normal",
                         seed=seed)

    start = dict(tanh.weights)

    def loss(weights: dict[str, Any]) -> float:
        tanh.weights = weights
        return float(tanh.values({"x": 1.0, "y": 1.0})["L"][0])

    def slope(w: str) -> float:  # central differences, with the step scaled to the slope
        h = 1e-4
        up = dict(start, **{w: start[w] + h})
        down = dict(start, **{w: start[w] - h})
        return (loss(up) - loss(down)) / (2 * h)

    assert ratio == pytest.approx(abs(slope("w1")) / abs(slope("w8")), rel=1e-4)


def _net(weights: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    w1, b1, w2, b2, w3 = weights
    return np.maximum(np.tanh(x @ w1 + b1) @ w2 + b2, 0) @ w3


def _relabelled(weights: list[np.ndarray], order: tuple[tuple[int, ...], ...],
                signs: tuple[np.ndarray, np.ndarray]) -> list[np.ndarray]:
    """Units of each hidden layer reordered and sign-flipped (a unit's incoming weights and
    bias, and its outgoing weights), as the next layer reads them."""
    w1, b1, w2, b2, w3 = weights
    (p, q), (s, t) = order, signs
    w1, b1 = w1[:, list(p)] * s, b1[list(p)] * s
    w2 = (w2[list(p), :] * s[:, None])[:, list(q)] * t
    b2, w3 = b2[list(q)] * t, w3[list(q)] * t
    return [w1, b1, w2, b2, w3]


@pytest.mark.parametrize(("tanh", "relu"), [(2, 2), (3, 2)])
def test_equivalent_copies_counts_every_setting_of_a_small_network(tanh: int,
                                                                   relu: int) -> None:
    """Every relabelling of a random tanh-then-relu network and every sign flip of its tanh
    units computes the same outputs, all with different weights, as many as the measurement
    counts; a sign flip of a relu unit changes the outputs."""
    rng = np.random.default_rng(tanh * 10 + relu)
    weights = [rng.normal(size=s) for s in ((2, tanh), (tanh,), (tanh, relu), (relu,),
                                            (relu,))]
    x = rng.normal(size=(50, 2))
    seen = set()
    kept = np.ones(relu)
    for p, q in itertools.product(itertools.permutations(range(tanh)),
                                  itertools.permutations(range(relu))):
        for s in itertools.product([1.0, -1.0], repeat=tanh):
            copy = _relabelled(weights, (p, q), (np.array(s), kept))
            assert np.allclose(_net(copy, x), _net(weights, x))
            seen.add(tuple(np.round(np.concatenate([w.ravel() for w in copy]), 12)))
    assert len(seen) == MEASURES["equivalent_copies"].measure({}, tanh=tanh, relu=relu)
    for unit in range(relu):
        flipped = np.where(np.arange(relu) == unit, -1.0, 1.0)
        copy = _relabelled(weights, (tuple(range(tanh)), tuple(range(relu))),
                           (np.ones(tanh), flipped))
        assert not np.allclose(_net(copy, x), _net(weights, x))


# ---------------------------------------------------------------------- a class


def _right(grader: Grader) -> dict[str, float]:
    return {name: grader.expected(name) for name in ANSWERS}  # type: ignore[misc]


def _same(name: str, a: float, b: float) -> bool:
    """Two numbers the check of ``name`` cannot tell apart (its rounding)."""
    how = {"answer_1": {"step": 0.001}, "answer_3": {"digits": 2}}.get(name, {"step": 1})
    return rounded(a, **how) == rounded(b, **how)


@pytest.mark.parametrize("students", CLASSES)
def test_each_student_has_their_own_numbers(students: list[str]) -> None:
    """The grader grades each student's own right numbers right (as ``solve`` writes them),
    and the practice solutions and a neighbour's numbers earn few of the points."""
    teacher, solutions, cell_of = _teacher()
    rights, practice = [], 0
    for k, student in enumerate(students):
        grader = Grader(teacher, solutions, student, secret=SECRET)
        right = _right(grader)
        rights.append(right)
        practice += sum(grader.verdict(f"ex{n}_check").ok for n in range(1, 5))
        if k < 2:  # the whole way, as solve's notebook goes through nbgrader
            mine = {cell_of[a]: f"{a} = {v!r}" for a, v in right.items()}
            graded = Grader(teacher, mine, student, secret=SECRET)
            for n in range(1, 5):
                assert graded.verdict(f"ex{n}_check").ok, graded.verdict(f"ex{n}_check").text
    shared = sum(_same(a, mine[a], theirs[a]) for mine, theirs in
                 zip(rights, rights[-1:] + rights[:-1], strict=True) for a in ANSWERS)
    checks = 4 * len(students)
    print(f"of {checks} checks, the practice solution passes {practice}, a neighbour's "
          f"numbers {shared}")
    assert practice <= 0.1 * checks and shared <= 0.1 * checks
    # the numbers differ between students: no exercise has one answer for most of them
    for a in ANSWERS:
        assert len({rounded(r[a], step=1e-6) for r in rights}) >= 0.5 * len(students), a


@pytest.fixture
def notebooks_folder() -> Iterator[None]:
    here = os.getcwd()
    os.chdir(REPO / "notebooks")  # the checks read ../examples as the notebook does
    GRADING.reset()
    yield
    GRADING.reset()
    os.chdir(here)


@pytest.mark.slow  # the kernel's side alone is in tests/test_grading.py's fast tests
@pytest.mark.parametrize("student", STUDENTS[:2])
def test_the_kernel_measures_what_the_grader_measures(ip: Any, notebooks_folder: None,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      student: str) -> None:
    """The locked cells of 06 run in a kernel for a course's student with the numbers the
    grader computes for them: every visible check says right; one off says wrong."""
    for name in ("NBGRADER_EXECUTION", "JUPYTERHUB_USER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TENFLANG_STUDENT", student)
    monkeypatch.setenv(COURSE_KEY, student_key(SECRET, student))
    teacher, solutions, _ = _teacher()
    right = _right(Grader(teacher, solutions, student, secret=SECRET))
    needed = [c for c in teacher if not c.answer and (
        c.grade_id or c.source.startswith(("%%tenflang lin ", "%%tenflang seed ",
                                           "%%tenflang chain ")))]
    said = []
    for cell in needed:
        source = cell.source.replace("tf.grading.teacher_copy()", "")
        if cell.grade_id.endswith("_check"):
            n = cell.grade_id[2]
            ip.run_cell(f"answer_{n} = {right[f'answer_{n}']!r}")
        with capture_output() as cap:
            result = ip.run_cell(source)
        assert result.error_in_exec is None, (cell.grade_id, result.error_in_exec)
        said.append(cap.stdout)
    assert sum("is right" in s for s in said) == 4
    ip.run_cell(f"answer_2 = {right['answer_2'] + 1!r}")
    check = next(c.source for c in teacher if c.grade_id == "ex2_check")
    with capture_output():
        result = ip.run_cell(check)
    assert "is not right" in str(result.error_in_exec)
    assert str(int(right["answer_2"])) not in str(result.error_in_exec)


def test_the_grader_reads_only_the_shipped_examples() -> None:
    """A check whose data names a file outside the examples the package ships is no grade:
    the grader never reads a file of the submission's folder."""
    teacher, solutions, _ = _teacher()
    changed = [TeacherCell(c.grade_id, c.source.replace("../examples/linear/training_data.csv",
                                                        "my_points.csv"), c.answer)
               for c in teacher]
    verdict = Grader(changed, solutions, "ada").verdict("ex1_check")
    assert not verdict.ok and "not a file of the examples the graded notebooks ship" in \
        verdict.text
    assert math.isfinite(Grader(teacher, solutions, "ada").expected("answer_1") or math.nan)
