"""Grading that holds: the grading mode, the locked checks (``tf.grading``), per-student
numbers and the fingerprints of the shipped notebooks, through IPython's InteractiveShell.
Real nbgrader runs the graded notebooks in ``tests/test_grading_nbgrader.py``."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hint_support import notebook_models
from IPython.utils.capture import CapturedIO, capture_output

import tenflang_nb as tf
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.grading import (
    compiler_copy,
    fingerprint,
    rounded,
    student_id,
    student_seed,
)
from tenflang_nb.notebook.grading import GradingFailure
from tenflang_nb.notebook.grading_mode import GRADING
from tenflang_nb.notebook.verdicts import fit_verdict

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9]*.ipynb"))

QUAD = """\
declare input x
declare exp_output y
declare weight w
declare intvar s
declare intvar p
declare intvar e
declare loss L

define s = mul w w
define p = mul s x
define e = sub p y
define L = mul e e
"""
QUAD_RIGHT = """\
define d/L/d/e = add e e
define d/L/d/p = d/L/d/e
define d/L/d/s = mul d/L/d/p x
define two_w = add w w
define d/L/d/w = mul d/L/d/s two_w
"""
CHAIN = """\
declare input x
declare exp_output y
declare weight w1
declare weight w2
declare intvar a
declare intvar h
declare intvar z
declare output o
declare intvar e
declare loss L

define a = mul w1 x
define h = tanh a
define z = mul w2 h
define o = logistic z
define e = sub o y
define L = mul e e
"""
QUAD_PRINT = fingerprint(QUAD)


@pytest.fixture
def student(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A student named by JupyterHub and a fresh grading mode, set before the shell."""
    for name in ("NBGRADER_EXECUTION", "TENFLANG_STUDENT", "BINDER_REPO_URL",
                 "BINDER_LAUNCH_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUPYTERHUB_USER", "ada")
    GRADING.reset()
    yield
    GRADING.reset()


@pytest.fixture
def ip(student: None, ip: Any) -> Any:
    """The conftest's shell with the extension, for that student, tenflang_nb as tf."""
    ip.run_cell("import tenflang_nb as tf")
    return ip


def run(ip: Any, cell: str) -> tuple[Any, CapturedIO]:
    with capture_output() as cap:
        result = ip.run_cell(cell)
    return result, cap


def start(ip: Any, *, teacher: bool = False) -> str:
    cell = "tf.grading.start('lab', graded=['quad', 'chain'], no_training=['quad'])"
    _, cap = run(ip, cell + ("\ntf.grading.teacher_copy()" if teacher else ""))
    run(ip, "%%tenflang quad --show none\n" + QUAD)
    run(ip, "%%tenflang chain --show none\n" + CHAIN)
    return cap.stdout


def teacher(ip: Any) -> None:
    """The teacher's copy in a fresh grading mode: teacher_copy() in the setup cell."""
    GRADING.reset()
    start(ip, teacher=True)


def error_of(result: Any) -> BaseException:
    error = result.error_in_exec
    assert error is not None, "the cell passed"
    return error


def html(cap: CapturedIO) -> str:
    return "".join(o.data.get("text/html", "") for o in cap.outputs)


# ------------------------------------------------------------------------------ the core


def test_the_student_is_nbgraders_then_jupyterhubs_then_a_default() -> None:
    autograde = {"NBGRADER_EXECUTION": "autograde", "JUPYTERHUB_USER": "grader"}
    assert student_id(autograde, "/srv/course/autograded/bob/ps05") == \
        ("bob", "nbgrader autograde")
    # autograding elsewhere than nbgrader's layout: never the grader's own name
    assert student_id(autograde, "/srv/course/elsewhere")[0] == "student"
    assert student_id({"JUPYTERHUB_USER": "ada"}, "/home/ada") == ("ada", "JupyterHub user")
    assert student_id({}, "/tmp") == ("student", "default")
    # a BinderHub names its users anew at every launch: not an id to grade by
    binder = {"JUPYTERHUB_USER": "tenflang-tenflang-nb-1x2y3z", "BINDER_LAUNCH_HOST": "h"}
    assert student_id(binder, "/home/jovyan") == ("student", "default")
    # a teacher's choice wins, at autograde too
    assert student_id({**autograde, "TENFLANG_STUDENT": "s1"}, "/x/autograded/bob/ps") == \
        ("s1", "TENFLANG_STUDENT")


def test_seeds_differ_between_students_and_salts() -> None:
    seeds = {student_seed(s, salt) for s in ("ada", "bob") for salt in ("ex3", "ex9")}
    assert len(seeds) == 4
    assert student_seed("ada", "ex3") == student_seed("ada", "ex3")


def test_a_fingerprint_covers_the_program_and_the_settings_that_were_given() -> None:
    assert fingerprint(QUAD) == fingerprint(QUAD.replace("\n\n", "\n# a comment\n\n"))
    assert fingerprint(QUAD) == fingerprint(QUAD, tf.TrainSettings())
    assert fingerprint(QUAD) != fingerprint(QUAD.replace("mul w w", "mul w x"))
    assert fingerprint(QUAD) != fingerprint(QUAD, tf.TrainSettings(lr=2))


def _notebook_solutions() -> list[tuple[str, str]]:
    """(model text, answer text) of every %%tenflang_check solution in the notebooks."""
    found = []
    for path in NOTEBOOKS:
        cells = ["".join(c["source"]) for c in json.loads(path.read_text("utf-8"))["cells"]
                 if c["cell_type"] == "code"]
        models = notebook_models(path)
        for c in cells:
            if c.startswith("%%tenflang_check "):
                model = c.split("\n", 1)[0].split()[1]
                body = "\n".join(line for line in c.split("\n")[1:] if "SOLUTION" not in line)
                found.append((models[model], body))
    return found


def test_a_pasted_backward_pass_is_recognised_and_no_written_one_is() -> None:
    gcp = tf.compile(tf.parse(CHAIN))
    backward = [str(line.statement) for line in gcp.lines if line.section == "backward"]
    pasted = compiler_copy("\n".join(backward), [gcp])
    assert pasted is not None and "temporary the compiler names" in pasted.why
    # without the temporaries, its headers and declarations still show
    kept = [line for line in backward if ":" not in line.split("#")[0]]
    headers = compiler_copy("\n".join(kept), [gcp])
    assert headers is not None and "'# line N:' headers and declarations" in headers.why
    # the compiler's define lines alone are what a right answer often is: never refused
    defines = [line for line in kept if line.startswith("define")]
    assert compiler_copy("\n".join(defines), [gcp]) is None
    solutions = _notebook_solutions()
    assert len(solutions) >= 7
    for model, answer in solutions:
        program = tf.parse(model)
        assert compiler_copy(answer, [tf.compile(program), tf.compile(program, full=True)]) \
            is None, answer


# ------------------------------------------------------------------------------ the mode


WITHHELD = ["quad.gcp", "quad.gcp_full", "quad.compiled", "quad.compiled_full",
            "quad.compiled_forward", "quad.gcp_program", "quad.full_gcp_program",
            "quad.values({'x': 1.0, 'y': 0.5})", "quad.show_values({'x': 1.0, 'y': 0.5})",
            "quad.trace({'x': 1.0, 'y': 0.5})", "quad.gradcheck({'x': 1.0, 'y': 0.5})",
            "chain.values({'x': 1.0, 'y': 0.5})"]


@pytest.mark.parametrize("expression", WITHHELD)
def test_grading_mode_withholds_what_hands_over_an_answer(ip: Any, expression: str) -> None:
    start(ip)
    result, cap = run(ip, expression)
    error = error_of(result)
    assert isinstance(error, tf.TenFlangError)
    assert re.search(r"grading mode withholds .* of '(quad|chain)': an exercise grades this "
                     "model", str(error)), str(error)
    assert "Traceback" not in cap.stdout + cap.stderr


def test_the_teacher_copy_shows_everything(ip: Any) -> None:
    said = start(ip, teacher=True)
    assert "grading mode is off" in said
    for expression in WITHHELD:
        result, _ = run(ip, expression)
        assert result.error_in_exec is None, expression


def test_while_nbgrader_runs_grading_mode_stays_on(ip: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    start(ip, teacher=True)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert isinstance(error_of(run(ip, "quad.gcp")[0]), tf.TenFlangError)
    _, cap = run(ip, "tf.grading.teacher_copy()")
    assert "grading mode stays on" in cap.stdout
    assert isinstance(error_of(run(ip, "quad.gcp")[0]), tf.TenFlangError)


def test_models_no_exercise_grades_and_copies_of_graded_ones(ip: Any) -> None:
    start(ip)
    run(ip, "%%tenflang mine --show none\n" + QUAD.replace("mul w w", "mul w x"))
    assert run(ip, "mine.gcp")[0].error_in_exec is None
    run(ip, "%%tenflang copy --show none\n" + QUAD.replace("\n\n", "\n# mine\n\n"))
    assert "of 'copy'" in str(error_of(run(ip, "copy.gcp")[0]))


def test_the_views_say_what_is_withheld(ip: Any) -> None:
    start(ip)
    result, cap = run(ip, "%%tenflang quad --show graph,gcp\n" + QUAD)
    assert result.error_in_exec is None
    page = html(cap)
    assert "No GCP here:" in page and "grading mode withholds the backward pass" in page
    assert "d/L/d/w" not in page  # no line of the GCP
    assert "GCP withheld (grading mode)" in ip.user_ns["quad"]._repr_html_()
    result, cap = run(ip, "%%tenflang quad --show values --example \"{x: 1, y: 0.5}\"\n" + QUAD)
    assert "grading mode withholds the values and adjoints" in html(cap)


def test_the_stepper_shows_the_forward_half(ip: Any) -> None:
    start(ip)
    run_ = ip.user_ns["quad"].stepper_run({"x": 1.0, "y": 0.5})
    assert run_.steps and {s.phase for s in run_.steps} == {"forward"}
    assert "grading mode withholds the backward pass of 'quad'" in run_.intro
    page = ip.user_ns["quad"].stepper({"x": 1.0, "y": 0.5}).html
    assert "The forward pass only:" in page and "define d/L/d/" not in page
    # the final graph's caption promises no adjoints
    assert "After the last step, every value:" in page and "every value and adjoint" not in page
    teacher(ip)
    full = ip.user_ns["quad"].stepper_run({"x": 1.0, "y": 0.5})
    assert {s.phase for s in full.steps} == {"forward", "backward"} and not full.withheld


def test_predict_mode_asks_nothing_of_a_graded_model(ip: Any) -> None:
    """Predict mode's questions and hints are the backward half's: for a graded model none is
    computed or embedded (they would give the adjoints away), and the stepper says why."""
    start(ip)
    quad = ip.user_ns["quad"]
    asked = quad.stepper_run({"x": 1.0, "y": 0.5}, predict=True)
    assert asked.predicting and asked.withheld and asked.questions == ()
    example = '--example "{x: 1, y: 0.5}"'
    pages = [quad.stepper({"x": 1.0, "y": 0.5}, predict=True).html,
             html(run(ip, f"%%tenflang quad --show step --predict {example}\n" + QUAD)[1])]
    for page in pages:
        assert "nothing to predict here" in page and "grading mode leaves" in page
        assert '"predict":' not in page and "Predict d/L/d/" not in page
        assert "define d/L/d/" not in page  # no line of the backward pass
        assert "your value is" not in page and "local partial" not in page  # no hint
    # a model no exercise grades is asked about as ever, grading mode or not
    run(ip, "%%tenflang mine --show none\n" + QUAD.replace("mul w w", "mul w x"))
    mine = ip.user_ns["mine"].stepper_run({"x": 1.0, "y": 0.5}, predict=True)
    assert [q.adjoint for q in mine.questions][:2] == ["d/L/d/e", "d/L/d/p"]
    assert any(m.hint for q in mine.questions for m in q.mistakes)
    teacher(ip)
    full = quad.stepper_run({"x": 1.0, "y": 0.5}, predict=True)
    assert len(full.questions) == 4 and not full.withheld
    assert '"predict":' in quad.stepper({"x": 1.0, "y": 0.5}, predict=True).html


def test_training_is_withheld_where_an_exercise_asks_a_trained_number(ip: Any) -> None:
    start(ip)
    cell = "quad.train({'x': [1.0], 'y': [0.5]}, lr=2, max_iter=1)"
    assert "grading mode withholds training 'quad'" in str(error_of(run(ip, cell)[0]))
    data = "data = {'x': [1.0, 2.0], 'y': [0.5, 1.0]}"
    run(ip, data)
    result, cap = run(ip, "%%tenflang quad --show none --train data --no-live\n" + QUAD)
    assert result.error_in_exec is None and "withholds training" in html(cap)
    # chain is graded, but no exercise asks a trained number of it
    assert run(ip, "chain.train(data, max_iter=2)")[0].error_in_exec is None
    # what trains it in the open holds its GCP: the trainer, the panel (issue 24)
    for cell in ("chain.trainer(data).gcp_program", "chain.training_panel(data)"):
        assert "grading mode withholds the t" in str(error_of(run(ip, cell)[0])), cell


def test_an_edited_gcp_is_withheld_as_the_gcp_is(ip: Any) -> None:
    """``with_gcp`` and ``%%tenflang_gcp`` show the compiled GCP's lines (the edit's diff) and
    train with the answer: withheld for a graded model (a copy under another name too), with
    grading mode's message and nothing bound; given for the others and the teacher."""
    start(ip)
    ip.user_ns["edited"] = tf.compile(tf.parse(QUAD)).text.replace("define d/s/d/w = add w w",
                                                                    "define d/s/d/w = w")
    error = error_of(run(ip, "quad.with_gcp(edited)")[0])
    assert isinstance(error, tf.TenFlangError)
    assert "grading mode withholds the GCP, to edit (.with_gcp(), %%tenflang_gcp) of 'quad'" \
        in str(error)
    example = '--example "{x: 1, y: 0.5}"'
    for model in ("quad", "chain"):
        result, cap = run(ip, f"%%tenflang_gcp {model} broken {example}\n"
                          + ip.user_ns["edited"])
        assert result.error_in_exec is None and "broken" not in ip.user_ns
        page = html(cap)
        assert f"grading mode withholds the GCP, to edit (.with_gcp(), %%tenflang_gcp) of " \
               f"'{model}'" in page.replace("&#x27;", "'").replace("&#39;", "'"), page
        assert "Nothing was bound." in page and "define d/" not in page  # no line echoed
        assert "edited GCP has errors" not in page
    run(ip, "%%tenflang copy --show none\n" + QUAD.replace("\n\n", "\n# mine\n\n"))
    assert "of 'copy'" in str(error_of(run(ip, "copy.with_gcp(edited)")[0]))
    # a model no exercise grades is edited as ever
    run(ip, "%%tenflang mine --show none\n" + QUAD.replace("mul s x", "mul x s"))
    assert run(ip, "mine_broken = mine.with_gcp(edited.replace('mul s x', 'mul x s'))"
               )[0].error_in_exec is None
    mine_broken = ip.user_ns["mine_broken"]
    mine_broken.weights["w"] = 1.5  # away from 0, where 2 w and w agree
    assert mine_broken.gradcheck({"x": 1.0, "y": 0.5}).wrong == ["w"]
    teacher(ip)
    result, cap = run(ip, f"%%tenflang_gcp quad broken {example}\n" + ip.user_ns["edited"])
    assert result.error_in_exec is None and "broken" in ip.user_ns
    assert "define d/s/d/w = w" in html(cap) and ip.user_ns["broken"].gcp.count("= w\n") == 1


# ------------------------------------------------------------------------------ locked checks


def check_cell(answer: str = "ex4", **options: Any) -> str:
    given = ", ".join(f"{k}={v!r}" for k, v in options.items())
    return (f"tf.grading.check_answer({answer!r}, model='quad', fingerprint={QUAD_PRINT!r}"
            + (f", {given}" if given else "") + ")")


def test_a_right_answer_passes_its_locked_check(ip: Any) -> None:
    start(ip)
    run(ip, "%%tenflang_check quad ex4\n" + QUAD_RIGHT)
    result, cap = run(ip, check_cell())
    assert result.error_in_exec is None
    assert cap.stdout.startswith("✓ ex4 is right and complete")


def test_the_locked_requirements_count_not_the_answer_cells(ip: Any) -> None:
    start(ip)
    run(ip, "%%tenflang_check quad ex4 --require e\ndefine d/L/d/e = add e e\n")
    assert ip.user_ns["ex4"].ok  # what the answer cell asked for is there...
    error = error_of(run(ip, check_cell())[0])  # ...but the locked cell wants all of it
    assert isinstance(error, GradingFailure)
    # (by default an answer needs every weight's gradient: here d/L/d/w)
    assert str(error).startswith("ex4: ✗ so far so good (1 right), but not written yet: "
                                 "d/L/d/w\n")
    run(ip, "%%tenflang_check quad ex4\n" + QUAD_RIGHT.split("define two_w")[0])
    assert run(ip, check_cell(require=["d/L/d/e", "d/L/d/p"]))[0].error_in_exec is None


def test_an_object_whose_ok_is_true_changes_nothing(ip: Any) -> None:
    start(ip)
    run(ip, "class Passed:\n    ok = True\n    def report(self):\n        return ''\n"
            "ex4 = Passed()")
    error = error_of(run(ip, check_cell())[0])
    assert "ex4 is not answered yet" in str(error)
    run(ip, "%%tenflang_check quad ex4\ndefine d/L/d/w = mul 2 w\n")
    run(ip, "ex4 = Passed()")
    assert "first wrong line" in str(error_of(run(ip, check_cell())[0]))


def test_the_failure_is_the_report_not_a_traceback(ip: Any) -> None:
    start(ip)
    wrong = QUAD_RIGHT.replace("define d/L/d/w = mul d/L/d/s two_w",
                               "define d/L/d/w = mul d/L/d/s w")
    run(ip, "%%tenflang_check quad ex4\n" + wrong)
    error = error_of(run(ip, check_cell())[0])
    lines = error._render_traceback_()  # what IPython shows instead of a traceback
    assert lines[0] == "ex4: ✗ line 5 is the first wrong line"
    assert any("uses w twice" in line for line in lines)
    assert not any("Traceback" in line or "File " in line for line in lines)


def test_the_graded_model_is_the_locked_cells_whatever_is_redefined(ip: Any) -> None:
    start(ip)
    run(ip, "%%tenflang_check quad ex4\n" + QUAD_RIGHT)
    # quad redefined with another loss after the locked cell: the answer is still right for
    # the locked definition, found by its fingerprint
    run(ip, "%%tenflang quad --show none\n" + QUAD.replace("define L = mul e e",
                                                           "define L = add e e"))
    assert run(ip, check_cell())[0].error_in_exec is None
    # and a model cell re-run with other settings is another fingerprint
    run(ip, "%%tenflang quad --show none --lr 5\n" + QUAD)
    assert tf.grading.fingerprints()["quad"] != QUAD_PRINT


def test_a_locked_model_cell_never_run_is_named(ip: Any) -> None:
    run(ip, "tf.grading.start('lab', graded=['quad'])")
    run(ip, "%%tenflang quad --show none --lr 5\n" + QUAD)  # not the locked cell's settings
    run(ip, "%%tenflang_check quad ex4\n" + QUAD_RIGHT)
    error = error_of(run(ip, check_cell())[0])
    assert str(error).startswith("run the locked cell that defines quad")


def test_a_pasted_backward_pass_is_refused_in_grading_mode_only(ip: Any) -> None:
    start(ip)
    gcp = tf.compile(tf.parse(QUAD))
    pasted = "\n".join(str(line.statement) for line in gcp.lines if line.section == "backward")
    run(ip, "%%tenflang_check quad ex4\n" + pasted)
    message = str(error_of(run(ip, check_cell())[0]))
    assert "your answer is the compiler's backward pass, pasted" in message
    assert "nothing was checked" in message
    teacher(ip)
    run(ip, "%%tenflang_check quad ex4\n" + pasted)
    assert run(ip, check_cell())[0].error_in_exec is None


def test_no_hint_spells_out_the_compilers_formula_in_grading_mode(ip: Any) -> None:
    said = start(ip)
    assert "student 'ada' (your JupyterHub user)" in said
    wrong = "define d/L/d/a = mul d/L/d/h h\ndefine d/L/d/w1 = mul d/L/d/a x\n"
    _, cap = run(ip, "%%tenflang_check chain ex7 --require a\n" + wrong)
    report = ip.user_ns["ex7"].report()
    assert "where the local partial d/h/d/a belongs" in report
    assert "mul h h" not in report and "mul h h" not in html(cap)
    teacher(ip)
    run(ip, "%%tenflang_check chain ex7 --require a\n" + wrong)
    assert "d/h/d/a = sub 1 (mul h h)" in ip.user_ns["ex7"].report()


# ------------------------------------------------------------------------------ numbers


def test_a_numeric_answer_is_given_then_checked_by_hidden_code(ip: Any,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    start(ip)
    _, cap = run(ip, "example = tf.grading.example('ex3', x=[1, 2, 3], y=[0, 1], w=[0])")
    assert re.fullmatch(r"Your example for ex3: x = \d, y = \d, w = 0\n", cap.stdout)
    assert "answer_3 is not answered yet" in str(error_of(run(ip, "tf.grading.given("
                                                               "'answer_3')")[0]))
    run(ip, "answer_3 = 'a lot'")
    assert "should be a number, not 'a lot'" in str(error_of(run(ip, "tf.grading.given("
                                                                 "'answer_3')")[0]))
    run(ip, "answer_3 = 0.125")
    _, cap = run(ip, "tf.grading.given('answer_3')")
    assert cap.stdout == ("answer_3 = 0.125 is a number: the autograder reads the number "
                          "written in your answer cell and checks its value.\n")
    hidden = (f"expected = tf.grading.gradient('quad', 'w', fingerprint={QUAD_PRINT!r}, "
              "example='ex3')")
    # no kernel computes the answer, the student's or the one nbgrader runs: the autograder
    # computes it in its own process (tenflang_nb.grader)
    assert "computes an answer" in str(error_of(run(ip, hidden)[0]))
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert "computes an answer" in str(error_of(run(ip, hidden)[0]))
    ip.user_ns["expected"] = 0.0  # p = w² x: with w = 0 the gradient is 0
    run(ip, "answer_3 = 0.0")
    assert run(ip, "tf.grading.check_number('answer_3', expected)")[0].error_in_exec is None
    run(ip, "answer_3 = 0.5")
    message = str(error_of(run(ip, "tf.grading.check_number('answer_3', expected, "
                                   "hint='look again')")[0]))
    assert message == "answer_3 = 0.5 is not right: look again"
    # the teacher's hint is echoed with control characters escaped, as every echoed text
    message = str(error_of(run(ip, "tf.grading.check_number('answer_3', expected, "
                                   "hint='look\\x1b[2J again')")[0]))
    assert message == "answer_3 = 0.5 is not right: look\\x1b[2J again"


def test_a_student_gets_the_same_numbers_in_their_copy_and_at_autograde(
        ip: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def numbers() -> tuple[str, str]:
        GRADING.reset()  # a fresh kernel: the student is found when grading mode starts
        run(ip, "tf.grading.start('lab', graded=['quad'])")
        run(ip, "%%tenflang quad --show none\n" + QUAD)
        _, example = run(ip, "tf.grading.example('ex3', x=[1, 2, 3, 4, 5, 6], y=[0, 1, 2])")
        run(ip, "%%tenflang_check quad ex4\ndefine d/L/d/w = mul 2 w\n")
        return example.stdout, ip.user_ns["ex4"].report()

    in_their_copy = numbers()  # JupyterHub user ada
    autograded = tmp_path / "autograded" / "ada" / "ps05"
    autograded.mkdir(parents=True)
    monkeypatch.chdir(autograded)
    monkeypatch.setenv("JUPYTERHUB_USER", "grader")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert numbers() == in_their_copy
    monkeypatch.chdir(tmp_path / "autograded")
    (tmp_path / "autograded" / "bob" / "ps05").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "autograded" / "bob" / "ps05")
    assert numbers()[1] != in_their_copy[1]  # another student, other draws


# ------------------------------------------------------------------------------ notebooks


def _cells(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text("utf-8"))["cells"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_fingerprints_in_the_notebooks_are_current(path: Path, ip: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(path.parent)  # a locked cell may train on ../examples, as it runs there
    sources = ["".join(c["source"]) for c in _cells(path) if c["cell_type"] == "code"]
    named = [(m.group(1), m.group(2)) for s in sources for m in
             re.finditer(r'model="(\w+)",[^)]*?fingerprint="(\w+)"', s, re.S)]
    named += [(m.group(1), m.group(2)) for s in sources for m in
              re.finditer(r'gradient\("(\w+)", "\w+", fingerprint="(\w+)"', s)]
    if not named:
        pytest.skip("no graded model")
    locked = [c for c in _cells(path) if c["metadata"].get("nbgrader", {}).get("locked")]
    run(ip, "import tenflang_nb as tf")
    for cell in locked:
        source = "".join(cell["source"])
        if source.startswith("%%tenflang ") or "tf.grading.variant(" in source:
            run(ip, source)  # a model drawn per student is named by its template's print
    current = tf.grading.fingerprints()
    for model, written in named:
        assert model in current, f"no locked %%tenflang {model} cell in {path.name}"
        assert written == current[model], (
            f"{path.name}: the fingerprint of {model} is {current[model]}, not {written} "
            "(tf.grading.fingerprints() after running its locked cell)")


def test_at_autograde_a_check_holds_without_the_setup_cell(ip: Any,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    # the setup cell deleted, or called again to grade nothing: the locked check still
    # refuses the compiler's backward pass while nbgrader grades
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    run(ip, "tf.grading.start('lab', graded=[])")
    run(ip, "%%tenflang quad --show none\n" + QUAD)
    gcp = tf.compile(tf.parse(QUAD))
    pasted = "\n".join(str(line.statement) for line in gcp.lines if line.section == "backward")
    run(ip, "%%tenflang_check quad ex4\n" + pasted)
    assert "pasted" in str(error_of(run(ip, check_cell())[0]))
    run(ip, "tf.grading.start('lab', graded=['quad'])")
    run(ip, "tf.grading.start('lab', graded=[])")
    assert GRADING.graded == ("quad",)


# ------------------------------------------------------------------------------ a model, the answer

XOR_DATA = str(REPO / "examples" / "xor" / "training_data.txt")
XOR_NET = (REPO / "examples" / "xor" / "shape.tf").read_text("utf-8")
XOR_LINE = f"%%tenflang mine --train {XOR_DATA} --lr 2 --max-iter 3000 --no-live --show none\n"
LINEAR_XOR = """\
declare input x [2]
declare exp_output y
declare weight w [2]
declare weight b
declare intvar a
declare intvar z
declare output o
declare intvar e
declare loss L
define a = matmul x w
define z = add a b
define o = logistic z
define e = sub o y
define L = mul e e
"""


def fit_check() -> str:
    return f"tf.grading.check_fit('ex16', model='mine', data={XOR_DATA!r})"


def test_a_model_that_learns_xor_passes_its_check(ip: Any) -> None:
    start(ip)
    run(ip, XOR_LINE + XOR_NET)
    result, cap = run(ip, fit_check())
    assert result.error_in_exec is None
    assert cap.stdout.startswith("✓ ex16: mine learns it: 4 of 4 examples right")


@pytest.mark.parametrize(("body", "said"), [
    ("# YOUR CODE HERE\nraise NotImplementedError()", "ex16 is not answered yet"),
    (LINEAR_XOR, "classifies at best 2 of 4 examples right"),
    # the output copied from the expected output, through a weight that does nothing
    (LINEAR_XOR.replace("define o = logistic z", "define o = add y a")
     .replace("declare intvar z\n", "").replace("define z = add a b\n", ""),
     "o is computed from y, the expected output"),
    # XOR written out, a weight multiplied by 0: it fits before training, learns nothing
    ("declare input x [2]\ndeclare exp_output y\ndeclare weight w\ndeclare intvar s\n"
     "declare intvar r\ndeclare intvar q\ndeclare intvar t\ndeclare output o\n"
     "declare intvar e\ndeclare loss L\ndefine s = sum x\ndefine r = sub 2 s\n"
     "define q = mul s r\ndefine t = mul w 0\ndefine o = add q t\ndefine e = sub o y\n"
     "define L = mul e e\n", "fits without learning"),
    ("declare input x [2]\ndeclare exp_output y\ndeclare output o\ndeclare intvar e\n"
     "declare loss L\ndefine o = sum x\ndefine e = sub o y\ndefine L = mul e e\n",
     "o depends on no weight"),
])
def test_a_model_that_does_not_learn_xor_fails_saying_why(ip: Any, body: str, said: str
                                                          ) -> None:
    start(ip)
    _, cap = run(ip, XOR_LINE + body)
    if "NotImplementedError" in body:  # nbgrader's stub: a message, not a parse error
        assert "this exercise is not answered yet" in cap.stdout + html(cap)
        assert "unknown instruction" not in cap.stdout + html(cap)
    error = error_of(run(ip, fit_check())[0])
    assert type(error).__name__ == "GradingFailure" and said in str(error), str(error)


@pytest.mark.parametrize(("options", "said"), [
    ("starts=0", "starts must be an integer from 1 to 100, not 0"),
    ("starts=10**9", "starts must be an integer from 1 to 100, not 1000000000"),
    ("accuracy=float('nan')", "accuracy must be a number from 0 to 1, not nan"),
    ("accuracy=2", "accuracy must be a number from 0 to 1, not 2"),
    ("max_iter=-1", "max_iter must be an integer >= 0, not -1"),
])
def test_the_fit_check_refuses_bad_options_by_name(ip: Any, options: str, said: str) -> None:
    # (starts=0 raised a TypeError after training nothing)
    start(ip)
    run(ip, XOR_LINE + XOR_NET)
    error = error_of(run(ip, fit_check()[:-1] + f", {options})")[0])
    assert isinstance(error, TenFlangError) and said in error.render(), error


def test_the_fit_check_trains_the_text_whatever_the_cell_did(ip: Any) -> None:
    start(ip)
    run(ip, XOR_LINE + XOR_NET)
    # the student's model, trained and then set to weights that fit nothing
    run(ip, "for k in mine.weights: mine.weights[k] = mine.weights[k] * 0")
    run(ip, "mine.history = []")
    result, _ = run(ip, fit_check())
    assert result.error_in_exec is None, result.error_in_exec
    # the latest definition is the answer: a linear model defined after it fails
    run(ip, XOR_LINE + LINEAR_XOR)
    assert "classifies" in str(error_of(run(ip, fit_check())[0]))


NAN_XOR = XOR_NET.replace("declare output o", "declare intvar o\ndeclare intvar s\n"
                          "declare intvar t\ndeclare intvar u\ndeclare intvar r\n"
                          "declare output out").replace(
    "define diff = sub o y", "define s = sum x\ndefine t = sub s 1\ndefine u = mul t t\n"
    "define v = neg u\ndefine r = sqrt v\ndefine out = add o r\ndefine diff = sub o y").replace(
    "declare intvar r\n", "declare intvar r\ndeclare intvar v\n")


def test_outputs_that_are_not_finite_fail_the_fit_check(ip: Any) -> None:
    # out = o + sqrt(-(x1 + x2 - 1)^2): NaN on the class-0 examples, which NaN > 0.5 = False
    # counted right; the loss reads o alone, so training never sees the NaN (issue 16)
    start(ip)
    run(ip, XOR_LINE + NAN_XOR)
    error = error_of(run(ip, fit_check())[0])
    assert type(error).__name__ == "GradingFailure", error
    assert ("the outputs of mine are not finite: out is nan on example 1 (2 of 4 examples)"
            in str(error)), str(error)
    assert "(start 1 of 3)" in str(error)  # it stopped there: not "trained from 3 starts"


def test_a_vector_output_is_refused_by_the_fit_check(ip: Any) -> None:
    start(ip)
    run(ip, XOR_LINE + LINEAR_XOR.replace("declare weight w [2]", "declare weight w [2, 1]")
        .replace("declare intvar a", "declare intvar a [1]").replace(
            "declare intvar z", "declare intvar z [1]").replace(
            "declare output o", "declare output o [1]").replace(
            "declare intvar e", "declare intvar e [1]\ndeclare intvar q [1]").replace(
            "define L = mul e e", "define q = mul e e\ndefine L = sum q"))
    error = error_of(run(ip, fit_check())[0])
    assert "o must be one number (the class is 0 or 1), not of shape [1]" in str(error), error


@pytest.mark.parametrize(("cell", "said"), [
    ("tf.grading.start('lab', graded='quad')",  # a str: graded the models q, u, a and d
     "graded must be a list of model names (each a %%tenflang NAME), not 'quad'"),
    ("tf.grading.start('lab', graded=['quad', 1])", "graded must be a list of model names"),
    ("tf.grading.start('lab', graded=['quad'], no_training=None)",
     "no_training must be a list of model names (each a %%tenflang NAME), not None"),
    ("tf.grading.start(['lab'], graded=['quad'])", "assignment must be the assignment's name"),
    ("tf.grading.example('ex3', x=[])",
     "x must be a list of finite numbers to pick from (1 to 1,000,000 of them), not []"),
    ("tf.grading.example('ex3', x=[1, float('nan')])", "x must be finite numbers, not [1, nan]"),
    ("tf.grading.example('ex3', x=3)", "x must be a list of finite numbers to pick from"),
    ("tf.grading.example('ex3')", "an example needs values to pick from"),
    ("tf.grading.example(['ex3'], x=[1])", "name must be the example's name"),
    ("tf.grading.fingerprint('quad')",
     "model must be a model (what a %%tenflang NAME cell binds to NAME), not 'quad'"),
    ("tf.grading.given(['answer_3'])",
     "name must be the name of the Python variable that holds the answer, not ['answer_3']"),
    ("tf.grading.check_number('answer_3', float('nan'))",
     "expected must be a finite number (the right answer), not nan"),
    ("tf.grading.check_number('answer_3', 1.0, hint=3)", "hint must be a string"),
    ("tf.grading.check_number('answer_3', 1.0, rtol=-1)", "rtol must be a finite number >= 0"),
    (f"tf.grading.check_answer('ex4', model='quad', fingerprint={QUAD_PRINT!r}, require=[])",
     "require lists no adjoint"),
    (f"tf.grading.check_answer('ex4', model='quad', fingerprint={QUAD_PRINT!r}, draws=0)",
     "draws must be an integer from 1 to 100, not 0"),
    ("tf.grading.check_answer('ex4', model='quad', fingerprint='quad')",
     "fingerprint must be a model's fingerprint: 12 hex digits"),
    ("tf.grading.check_engine(['forward'])", "name must be a part of an engine"),
    (f"tf.grading.gradient('quad', 'x', fingerprint={QUAD_PRINT!r}, example={{'x': 1.0}})",
     "weight must be a weight of quad that is one number: w, not 'x'"),
    (f"tf.grading.gradient('quad', 'w', fingerprint={QUAD_PRINT!r}, example=[1.0])",
     "example must be the name an example was drawn under, or its values"),
])
def test_the_grading_calls_refuse_bad_arguments_by_name(ip: Any, cell: str, said: str) -> None:
    # before: a raw TypeError, AttributeError, numpy's 'high <= 0'; or silently wrong (a str of
    # graded models read as its letters, require=[] as 'every weight's gradient')
    start(ip, teacher=True)
    run(ip, "%%tenflang_check quad ex4\ndefine d/L/d/w = mul 2 w\n")
    graded = GRADING.graded
    error = error_of(run(ip, cell)[0])
    assert isinstance(error, TenFlangError), repr(error)
    assert said in error.render(), error.render()
    assert GRADING.graded == graded  # nothing recorded from a refused start


# ------------------------------------------------------------------------------ the kernel's holes


def cell(ip: Any, source: str) -> Any:
    """A cell run as a notebook runs it: its own execution count."""
    with capture_output():
        return ip.run_cell(source, store_history=True)


def test_grading_mode_stays_as_the_setup_cell_started_it(ip: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    cell(ip, "tf.grading.start('lab', graded=['quad'])")
    cell(ip, "%%tenflang quad --show none\n" + QUAD)
    # a student's cell cannot turn it off, start it for another assignment or as a classmate
    assert "only the setup cell of the teacher's copy" in str(
        error_of(cell(ip, "tf.grading.teacher_copy()")))
    assert GRADING.on
    assert "has started for lab already" in str(
        error_of(cell(ip, "tf.grading.start('other', graded=[])")))
    monkeypatch.setenv("TENFLANG_STUDENT", "bob")
    assert cell(ip, "tf.grading.start('lab', graded=[])").error_in_exec is None
    assert GRADING.student == "ada" and GRADING.graded == ("quad",)
    assert isinstance(error_of(cell(ip, "quad.gcp")), tf.TenFlangError)
    # an example once drawn stays
    cell(ip, "e = tf.grading.example('ex3', x=[1, 2, 3], w=[0])")
    assert cell(ip, "tf.grading.example('ex3', x=[1, 2, 3], w=[0])").error_in_exec is None
    assert "is drawn already" in str(error_of(cell(ip, "tf.grading.example('ex3', x=[7], "
                                                       "w=[0])")))
    # the teacher's copy: teacher_copy() in the cell that starts grading mode
    GRADING.reset()
    cell(ip, "tf.grading.start('lab', graded=['quad'])\ntf.grading.teacher_copy()")
    assert not GRADING.on


def test_a_number_is_an_int_or_a_float_exactly(ip: Any) -> None:
    start(ip)
    run(ip, "class Anything(float):\n    def __eq__(self, other): return True\n"
            "    __hash__ = float.__hash__\nanswer_3 = Anything(0.5)")
    assert "should be a number" in str(error_of(run(ip, "tf.grading.given('answer_3')")[0]))
    assert "not answered with a number" in str(
        error_of(run(ip, "tf.grading.check_number('answer_3', 0.5)")[0]))
    run(ip, "import numpy as np\nanswer_3 = np.float64(0.5)")
    assert run(ip, "tf.grading.check_number('answer_3', 0.5)")[0].error_in_exec is None


LINE = ("declare input x\ndeclare exp_output y\ndeclare weight a\ndeclare weight b\n"
        "declare intvar ax\ndeclare output o\ndeclare intvar diff\ndeclare loss lambda\n"
        "define ax = mul a x\ndefine o = add ax b\ndefine diff = sub o y\n"
        "define lambda = pow diff 2\n")


def test_a_measured_check_is_right_for_the_students_own_draw(ip: Any, tmp_path: Path) -> None:
    """The number is measured for the student's example: right rounded as the check says,
    wrong with the hint, never shown; another student's draw makes another number."""
    start(ip)
    cell = ("tf.grading.check_measured('answer_4', 'equivalent_copies', example='ex4', "
            "step=1, hint='per layer')")
    drawn = tf.grading.example("ex4", tanh=[3, 4, 5, 6, 7, 8], relu=[2, 3, 4])
    tanh, relu = int(drawn["tanh"]), int(drawn["relu"])
    right = 2**tanh * math.factorial(tanh) * math.factorial(relu)
    run(ip, "answer_4 = None")
    assert "not answered yet" in str(error_of(run(ip, cell)[0]))
    run(ip, f"answer_4 = {right + 1}")
    assert str(error_of(run(ip, cell)[0])) == (
        f"✗ answer_4 = {float(right + 1):g} is not right (rounded to a whole number): per layer")
    assert str(right) not in str(error_of(run(ip, cell)[0]))
    run(ip, f"answer_4 = {right}")
    result, cap = run(ip, cell)
    assert result.error_in_exec is None and cap.stdout.startswith(f"✓ answer_4 = {right:g} is")
    # a model and data: the largest stable learning rate of linear regression, by hand here
    data = tmp_path / "line.csv"
    x = np.linspace(-1, 3, 9)
    data.write_text("x,y\n" + "".join(f"{v},{2 * v + 1}\n" for v in x))
    run(ip, "%%tenflang lin --show none\n" + LINE)
    scale = tf.grading.example("ex1", scale=[1.5, 2.5, 3.5])["scale"]
    xs = scale * x
    h_max = np.linalg.eigvalsh(2 * np.array([[np.mean(xs * xs), np.mean(xs)],
                                             [np.mean(xs), 1.0]])).max()
    limit = float(np.floor(1000 * 2 / h_max) / 1000)
    check = (f"tf.grading.check_measured('answer_1', 'lr_limit', example='ex1', step=0.001, "
             f"model='lin', fingerprint={tf.grading.fingerprints()['lin']!r}, "
             f"data={str(data)!r})")
    run(ip, f"answer_1 = {limit + 0.001!r}")
    assert "is not right (rounded to a multiple of 0.001)" in str(error_of(run(ip, check)[0]))
    run(ip, f"answer_1 = {limit!r}")
    assert run(ip, check)[0].error_in_exec is None
    # a teacher's mistake is said as such
    assert "'nope' is not a measurement" in str(error_of(run(
        ip, "tf.grading.check_measured('answer_1', 'nope', step=1)")[0]))
    assert "takes tanh, relu, not third" in str(error_of(run(
        ip, "tf.grading.check_measured('answer_4', 'equivalent_copies', step=1, third=2, "
            "tanh=3)")[0]))


def test_a_measured_check_leaves_the_grade_to_the_autograder(ip: Any, monkeypatch: Any
                                                             ) -> None:
    """While nbgrader runs the notebook the kernel measures nothing: the grade is measured
    in nbgrader's process (tests/test_grader.py)."""
    start(ip)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    run(ip, "answer_4 = 1")
    result, cap = run(ip, "tf.grading.check_measured('answer_4', 'equivalent_copies', "
                          "tanh=3, step=1)")
    assert result.error_in_exec is None and "measures the right number" in cap.stdout


def test_a_model_that_is_the_answer_may_be_held_to_a_size(ip: Any) -> None:
    data = {"x": [[0, 0], [0, 1], [1, 0], [1, 1]], "y": [0, 1, 1, 0]}
    net = ("declare input x [2]\ndeclare exp_output y\ndeclare weight W1 [2, 4]\n"
           "declare weight W2 [4]\ndeclare intvar h\ndeclare output o\ndeclare intvar d\n"
           "declare loss L\ndefine h = matmul x W1\ndefine o = matmul h W2\n"
           "define d = sub o y\ndefine L = mul d d\n")
    with pytest.raises(GradingFailure, match="weights hold 12 numbers; this exercise allows "
                                             "at most 6"):
        fit_verdict("ex16", "mine", net, tf.TrainSettings(), data=data, seed=0,
                    max_weights=6)
    assert "at most 6" not in str(error_of(run(ip, "tf.grading.check_fit('ex16', model="
                                                   "'nothing', data={}, max_weights=6)")[0]))
    assert "a whole number of at least 1" in str(error_of(run(
        ip, "tf.grading.check_fit('ex16', model='mine', data={}, max_weights=0)")[0]))


@pytest.mark.parametrize(("options", "said"), [
    ({"step": 0}, "step must be a positive number"),
    ({"digits": 0}, "digits must be a whole number from 1 to 15"),
    ({}, "rounded one way"),
    ({"step": 1, "digits": 2}, "rounded one way"),
])
def test_a_number_is_rounded_one_way(options: dict[str, Any], said: str) -> None:
    with pytest.raises(tf.TenFlangError, match=said):
        rounded(0.5, **options)
