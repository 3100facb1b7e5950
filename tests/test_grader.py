"""The autograder's own process (``tenflang_nb.grader``): answers read from a notebook as
data and checked there. nbgrader itself runs it in ``test_grading_nbgrader.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from engine_cheats import ENGINE_CHEATS, EngineCheat

from tenflang_nb.course.solve import drawn_answer
from tenflang_nb.grader.calculator import Calculator, Unreadable
from tenflang_nb.grader.engine import functions_of
from tenflang_nb.grader.grade import Grader, TeacherCell

REPO = Path(__file__).resolve().parents[1]
GRADED = ("05_exercises", "06_when_training_fails", "07_your_own_engine")


def _cells(name: str) -> tuple[list[TeacherCell], dict[str, str], list[str], dict[str, str]]:
    """The teacher's cells of a shipped notebook, its solutions, its checks worth points and
    its answer cells as released (nbgrader's stub in place of each solution)."""
    cells, solutions, checks, stubs = [], {}, [], {}
    for cell in json.loads((REPO / "notebooks" / f"{name}.ipynb").read_text("utf-8"))["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader")
        if cell["cell_type"] != "code" or not meta:
            continue
        source = "".join(cell["source"])
        lines = source.split("\n")
        plain = "\n".join(line for line in lines if "SOLUTION" not in line and "HIDDEN" not in line)
        cells.append(TeacherCell(meta["grade_id"], plain, bool(meta.get("solution"))))
        if meta.get("solution"):
            solutions[meta["grade_id"]] = plain
            head = lines[:lines.index("### BEGIN SOLUTION")] if "### BEGIN SOLUTION" in lines \
                else lines[:1]
            indent = "    " if head[-1].startswith("def ") else ""
            stubs[meta["grade_id"]] = "\n".join([*head, f"{indent}# YOUR CODE HERE",
                                                 f"{indent}raise NotImplementedError()"])
        if meta.get("grade") and meta.get("points"):
            checks.append(meta["grade_id"])
    return cells, solutions, checks, stubs


@pytest.mark.parametrize("name", GRADED)
def test_the_solutions_pass_and_the_stubs_fail_every_check(name: str) -> None:
    cells, solutions, checks, stubs = _cells(name)
    ada = Grader(cells, solutions, "ada")  # ada's own models and numbers: the practice's differ
    answers = {g: drawn_answer(t, ada.drawn) for g, t in solutions.items()}
    for g, text in solutions.items():  # a number: what its check computes for ada
        for v in re.findall(r"^(answer_\d+) = ", text, re.M)[:1]:
            if ada.expected(v) is not None:
                answers[g] = f"{v} = {ada.expected(v)!r}"
    right = Grader(cells, answers, "ada")
    blank = Grader(cells, stubs, "ada")
    for check in checks:
        assert right.verdict(check).ok, (check, right.verdict(check).text)
        assert not blank.verdict(check).ok, check


def test_a_numeric_answer_is_what_its_cell_says_not_what_a_kernel_held() -> None:
    cells, solutions, _, _ = _cells("05_exercises")
    for answer, said in [
            ("answer_3 = float(seed.values(example_3)['w'][1])", "seed.values(...) is no number"),
            ("import builtins\nanswer_3 = 0.0", None),  # an import sets no answer: still read
            ("for k in range(3):\n    answer_3 = k", "set by a statement the autograder"),
            ("answer_3 = tf.grading.gradient('seed', 'w', fingerprint='716879be5b9d', "
             "example='ex3')", "no number written in the cell"),
            ("answer_3 = 10 ** 10 ** 10", "out of range")]:
        grader = Grader(cells, {**solutions, "ex3_answer": answer}, "ada")
        verdict = grader.verdict("ex3_check")
        assert not verdict.ok, answer
        if said:
            assert said in verdict.text, verdict.text


def test_the_calculator_reads_arithmetic_and_nothing_else() -> None:
    numbers = Calculator({"example": {"x": 2.0}})
    numbers.run("a = 2 ** 8 * 40320\nb = -example['x'] / 4\nc = a\nc += 1\nd = abs(b)\n"
                "e = (lambda: 1)()\nf = __import__('os').getpid()\ng = True")
    assert [numbers.value(n) for n in "abcd"] == [10321920, -0.5, 10321921, 0.5]
    for name in "efg":
        with pytest.raises(Unreadable):
            numbers.value(name)


def test_only_the_functions_of_the_answer_cells_are_taken() -> None:
    sources = ["def forward(program, values):\n    return values\n\nprint(forward(1, 2))\n"
               "import os\nos.environ.clear()", "x = (", "def backward(p, v):\n    return {}"]
    text = functions_of(sources)
    assert "def forward" in text and "def backward" in text
    assert "print(" not in text and "os.environ" not in text


def test_an_engines_verdict_cannot_be_printed_by_its_functions() -> None:
    from tenflang_nb.grader.engine import engine_verdict

    forged = ("def forward(program, values):\n    import json, os, sys\n"
              "    sys.stdout.write('\\n' + json.dumps({'ok': True, 'text': '✓ forward is right'})"
              " + '\\n')\n    sys.stdout.flush()\n    os._exit(0)")
    ok, text = engine_verdict("forward", [forged], seed=1, programs=2)
    assert not ok and "stopped (exit status 0)" in text


@pytest.mark.parametrize("cheat", ENGINE_CHEATS, ids=lambda c: c.name)
def test_an_engine_cannot_bring_the_compiler_back(cheat: EngineCheat) -> None:
    """07's cheats against the grader's own check: the functions run in a process that holds
    no compiler and can load none; the verdict is computed in the grader's."""
    cells, _, _, stubs = _cells("07_your_own_engine")
    grader = Grader(cells, {**stubs, **cheat.answers}, "ada")
    try:
        verdicts = {c: grader.verdict(c) for c in cheat.went_for}
    finally:
        grader.close()
    assert not any(v.ok for v in verdicts.values()), verdicts
    said = " ".join(v.text for v in verdicts.values())
    assert cheat.refused in said, said


def test_the_engines_process_holds_no_compiler() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-I", "-c", "import sys, tenflang_nb.grader.engine_child"
                           " as c; print([m for m in c.COMPILERS if m in sys.modules])"],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr


def test_an_answer_too_deep_to_read_fails_its_check_and_crashes_nothing() -> None:
    cells, solutions, _, _ = _cells("05_exercises")
    for deep in ("answer_3 = " + "(" * 5000 + "1" + ")" * 5000,
                 "answer_3 = 1" + " + 1" * 3000, "answer_3 = 1" + " + 1" * 300_000):
        verdict = Grader(cells, {**solutions, "ex3_answer": deep}, "ada").verdict("ex3_check")
        assert not verdict.ok


def test_the_autograders_kernel_skips_the_cells_no_answer_needs() -> None:
    from tenflang_nb.grader.skip import needs

    cells = [("%load_ext tenflang_nb\nimport numpy as np\nimport tenflang_nb as tf", True),
             ("xor_data = tf.load_data('xor.txt')", False),  # read by the model answer
             ("fig = np.mean(xor_data)\nfig", False),  # sets what nothing reads
             ("def helper(v):\n    return 2 * v", False),  # the answer calls it
             ("model.weights['w'] = 1.0", False),  # changes model, which an answer reads
             ("tf.grading.check_answer = print", False),  # a module's attribute: skipped
             ("%%tenflang mine --train xor_data\ndeclare loss L", True),
             ("answer_3 = helper(0.5)\nprint(model)", True),
             ("x = (", False)]  # no Python: skipped
    runs = needs([c for c, _ in cells], [g for _, g in cells])
    assert runs == [True, True, False, True, True, False, True, True, False]


def test_the_shipped_notebooks_keep_every_cell_their_answers_use() -> None:
    from tenflang_nb.grader.skip import names, needs

    for name in GRADED:
        cells = [c for c in json.loads((REPO / "notebooks" / f"{name}.ipynb").read_text(
            "utf-8"))["cells"] if c["cell_type"] == "code"]
        sources = ["".join(c["source"]) for c in cells]
        runs = needs(sources, [bool(c["metadata"].get("nbgrader")) for c in cells])
        kept = set().union(*(names(s)[0] for s, r in zip(sources, runs, strict=True) if r))
        read = set().union(*(names(s)[2] for s, r in zip(sources, runs, strict=True) if r))
        skipped = set().union(*(names(s)[0] for s, r in zip(sources, runs, strict=True)
                                if not r))
        assert not (read & skipped) - kept, (name, (read & skipped) - kept)
