"""notebooks/05_exercises.ipynb as nbgrader sees it.

The committed notebook is nbgrader's *source* version: it holds the solutions, and nbval checks
its stored outputs like every tutorial's. Here the solutions are stripped as nbgrader's
``ClearSolutions`` preprocessor does (``nbgrader generate_assignment``), the student version is
executed, and every autograder check must then fail with a message that says what to do, never
with a bare traceback (a ``NameError``, say). nbgrader itself is not a dependency: its
documented behaviour is implemented below, and compared with nbgrader's own preprocessor when
nbgrader is installed.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "05_exercises.ipynb"

# nbgrader's defaults (ClearSolutions.code_stub["python"], text_stub, the delimiters)
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
TEXT_STUB = "YOUR ANSWER HERE"
BEGIN, END = "BEGIN SOLUTION", "END SOLUTION"
POINTS = 25


def _load() -> dict[str, Any]:
    return json.loads(NOTEBOOK.read_text("utf-8"))


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _meta(cell: dict[str, Any]) -> dict[str, Any]:
    return cell.get("metadata", {}).get("nbgrader", {})


def clear_solutions(nb: dict[str, Any]) -> dict[str, Any]:
    """The student version, as nbgrader's ClearSolutions makes it (documented in nbgrader's
    "student version" configuration page): in every cell, each region from a line containing
    ``BEGIN SOLUTION`` to a line containing ``END SOLUTION`` becomes the stub (the code stub in
    a code cell, the text stub in a Markdown cell), indented like the ``BEGIN`` line; a solution
    cell without such a region is replaced whole. Outputs go too (generate_assignment clears
    them)."""
    nb = copy.deepcopy(nb)
    for cell in nb["cells"]:
        stub = CODE_STUB if cell["cell_type"] == "code" else TEXT_STUB
        lines, kept, inside, replaced = _source(cell).split("\n"), [], False, False
        for line in lines:
            if BEGIN in line:
                assert not inside, "nested solution regions"
                inside = replaced = True
                indent = re.match(r"\s*", line).group(0)  # type: ignore[union-attr]
                kept.extend(indent + s for s in stub.split("\n"))
            elif END in line:
                inside = False
            elif not inside:
                kept.append(line)
        assert not inside, "a solution region without its end"
        assert replaced <= bool(_meta(cell).get("solution")), \
            "a solution region in a cell that is not a solution cell: nbgrader refuses that"
        cell["source"] = "\n".join(kept)
        if _meta(cell).get("solution") and not replaced:
            cell["source"] = stub
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
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
            assert meta["points"] > 0 and meta["locked"] and not meta["solution"]
        if meta["solution"]:
            assert not meta["locked"] and BEGIN in _source(cell) and END in _source(cell)
    for i, cell in enumerate(cells):
        if BEGIN in _source(cell) or END in _source(cell):
            assert _meta(cell).get("solution"), f"cell {i} has solution markers"
    checks = [c for c in cells if _meta(c).get("grade")]
    assert sum(_meta(c)["points"] for c in checks) == POINTS
    assert len(checks) >= 8, "about eight graded exercises"


def test_every_answer_cell_is_followed_by_its_check() -> None:
    cells = [c for c in _load()["cells"] if c["cell_type"] == "code"]
    answers = [i for i, c in enumerate(cells) if _meta(c).get("solution")]
    assert answers
    for i in answers:
        answer, check = _source(cells[i]), _source(cells[i + 1])
        assert _meta(cells[i + 1]).get("grade"), f"no check after answer cell {i}"
        if answer.startswith("%%tenflang_check"):
            bound = answer.split("\n", 1)[0].split()[2]  # %%tenflang_check MODEL RESULT
            assert f"assert {bound}.ok, {bound}.report()" in check
        else:
            name = re.match(r"(\w+) = None", answer)
            assert name, "a Python answer starts as None: unanswered, its check still runs"
            assert f"assert {name.group(1)} is not None" in check


def test_stripping_leaves_the_magic_line_and_nbgraders_stub() -> None:
    nb = clear_solutions(_load())
    answers = [c for c in nb["cells"] if _meta(c).get("solution")]
    for cell in answers:
        source = _source(cell)
        assert "BEGIN" not in source and "define d/" not in source and CODE_STUB in source
    first = _source(answers[0]).splitlines()
    assert first == ["%%tenflang_check seed ex1 --require d/lambda/d/diff", *CODE_STUB.split("\n")]


def test_our_stripping_is_nbgraders() -> None:
    pytest.importorskip("nbgrader", reason="nbgrader is not installed (pip install nbgrader)")
    import nbformat
    from nbgrader.nbgraderformat import MetadataValidator
    from nbgrader.preprocessors import ClearSolutions

    nb = nbformat.read(NOTEBOOK, as_version=4)
    MetadataValidator().validate_nb(nb)  # raises on bad nbgrader metadata
    theirs, _ = ClearSolutions().preprocess(copy.deepcopy(nb), {})
    ours = clear_solutions(_load())
    assert [c.source for c in theirs.cells] == [_source(c) for c in ours["cells"]]


# ------------------------------------------------------------------------------ the student version

@pytest.fixture(scope="module")
def student_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The student version, executed top to bottom as the autograder would (errors allowed)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.from_dict(clear_solutions(_load()))
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    return nb


def _errors(cell: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for o in cell.get("outputs", []) if o["output_type"] == "error"]


def test_every_check_fails_with_a_helpful_message(student_run: dict[str, Any]) -> None:
    checks = [c for c in student_run["cells"] if _meta(c).get("grade")]
    for cell in checks:
        errors = _errors(cell)
        assert len(errors) == 1, f"{_meta(cell)['grade_id']}: {errors}"
        error = errors[0]
        # an assertion with a message, never a NameError or a traceback alone
        assert error["ename"] == "AssertionError", (_meta(cell)["grade_id"], error["ename"])
        assert "not answered yet" in error["evalue"], error["evalue"]
        assert len(error["evalue"]) > 40


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
        if _source(cell).startswith("%%tenflang_check"):
            text = "".join(o.get("data", {}).get("text/plain", "") for o in cell["outputs"])
            assert "this exercise is not answered yet" in text
            assert "replace this line" in text


# ------------------------------------------------------------------------------ a wrong answer

@pytest.fixture
def shell() -> Iterator[Any]:
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "tenflang_nb")
    yield ip
    ip.run_line_magic("unload_ext", "tenflang_nb")
    InteractiveShell.clear_instance()


def test_a_wrong_answer_fails_its_check_naming_the_first_wrong_line(shell: Any) -> None:
    from IPython.utils.capture import capture_output

    cells = [_source(c) for c in _load()["cells"] if c["cell_type"] == "code"]
    model = next(c for c in cells if c.startswith("%%tenflang fan"))
    answer = next(c for c in cells if c.startswith("%%tenflang_check fan ex5"))
    check = cells[cells.index(answer) + 1]
    wrong = answer.replace("define d/L/d/a = add via_b via_c", "define d/L/d/a = via_b")
    assert wrong != answer
    with capture_output():
        shell.run_cell(model)
        shell.run_cell(wrong)
        result = shell.run_cell(check)
    error = result.error_in_exec
    assert isinstance(error, AssertionError)
    message = str(error)
    assert message.startswith("✗ line 8 is the first wrong line")
    assert "fan-out: a is used 2 times" in message
    assert "misses the term via define c = tanh a" in message  # code shown plain
