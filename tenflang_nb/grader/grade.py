"""A graded notebook's checks, done in the autograder's own process from data alone.

The teacher's cells (setup, models, examples, checks) come from nbgrader's gradebook, the
student's from the answer cells of the submission: their text (TenFlang, a model, an
engine's functions) and their numbers (read by :mod:`.calculator`, never run). Nothing the
student's kernel computed or held is used. A check cell may hold ``tf.grading`` calls only;
any other statement makes its verdict a failure that says so (a grade never falls back on
the kernel).

>>> from tenflang_nb.grader.grade import Grader, TeacherCell
>>> cells = [TeacherCell("setup", "import tenflang_nb as tf\\n"
...                      "tf.grading.start('ps', graded=[])", False),
...          TeacherCell("a", "answer_1 = None  # your number", True),
...          TeacherCell("a_check", "tf.grading.given('answer_1')\\n"
...                      "tf.grading.check_number('answer_1', 2 ** 3)", False)]
>>> Grader(cells, {"a": "answer_1 = 8"}, "ada").verdict("a_check").ok
True
>>> print(Grader(cells, {"a": "answer_1 = 7"}, "ada").verdict("a_check").text)
answer_1 = 7 is a number.
answer_1 = 7 is not right
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from IPython.core.inputtransformer2 import TransformerManager

from ..core.api import load_data
from ..core.backprop_check import DRAWS
from ..core.engine_check import PROGRAMS, engine_part
from ..core.errors import TenFlangError
from ..core.grading import (
    draw_example,
    draw_variant,
    student_key,
    student_seed,
    variant_fingerprint,
)
from ..core.grading import fingerprint as digest
from ..core.settings import TrainSettings
from ..course.layout import shipped_example
from ..notebook.magic import check_line, model_line
from ..notebook.measures import MEASURES
from ..notebook.model import TenFlangModel
from ..notebook.verdicts import (
    FIT_MAX_ITER,
    FIT_STARTS,
    GradingFailure,
    answer_verdict,
    exact_number,
    fit_verdict,
    gradient_on,
    measured_verdict,
    number_verdict,
)
from .calculator import Calculator, Unreadable, evaluate
from .engine import Engine, engine_verdict, functions_of

__all__ = ["Grader", "TeacherCell", "Verdict"]

GRADING = "tf.grading."


@dataclass(frozen=True)
class TeacherCell:
    """A cell as the teacher wrote it: its nbgrader id, its source (an answer cell's is
    the released stub or the solution), whether it is an answer cell."""

    grade_id: str
    source: str
    answer: bool


@dataclass(frozen=True)
class Verdict:
    """A check cell's verdict: every call in it passed (``ok``), and what each said."""

    ok: bool
    text: str


def _python(source: str) -> ast.Module:
    """A code cell's source as Python (IPython's ``%magic`` lines made calls)."""
    return ast.parse(TransformerManager().transform_cell(source))


def _calls(source: str) -> list[tuple[str, ast.Call]]:
    """The ``tf.grading.X(...)`` calls of a check cell, as (X, call); raises
    :class:`GradingFailure` for any other statement."""
    calls = []
    for node in _python(source).body:
        call = node.value if isinstance(node, ast.Expr) else None
        name = ast.unparse(call.func) if isinstance(call, ast.Call) else ""
        if not name.startswith(GRADING):
            raise GradingFailure(
                f"the autograder cannot grade this check: line {node.lineno} "
                f"({ast.unparse(node)[:60]}) is not a call of tf.grading (a check cell holds "
                "those only, so that its verdict needs nothing from the student's kernel)")
        calls.append((name[len(GRADING):], call))
    return calls


def _literals(call: ast.Call, skip: int = 0) -> tuple[list[Any], dict[str, Any]]:
    """A call's arguments (after the first ``skip``), each a literal."""
    try:
        return ([ast.literal_eval(a) for a in call.args[skip:]],
                {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg})
    except ValueError:
        raise GradingFailure(f"the autograder cannot grade this check: the arguments of "
                             f"{ast.unparse(call.func)} must be written out") from None


def _split(source: str) -> tuple[str, str]:
    """A cell magic's first line (after ``%%name``) and its body."""
    first, _, body = source.partition("\n")
    return first.split(None, 1)[1] if " " in first.strip() else "", body


class Grader:
    """The checks of one student's submission of one notebook: ``cells`` the teacher's (in
    their order), ``answers`` the submitted answer cells' sources by nbgrader id (in the
    submission's order), ``student`` the id their numbers are drawn for, ``secret`` the
    course's (none: the practice variant)."""

    def __init__(self, cells: Sequence[TeacherCell], answers: Mapping[str, str],
                 student: str, *, sandbox: Sequence[str] = (), secret: str = "") -> None:
        self.cells = {c.grade_id: c for c in cells}
        self.answers = dict(answers)
        self.student = os.environ.get("TENFLANG_STUDENT", "").strip() or student
        self.sandbox = tuple(sandbox)
        # the course's secret makes the student's draws theirs in this course alone
        self.key = student_key(secret, self.student) if secret else ""
        self.assignment = ""
        self._engine_process: Engine | None = None
        self._measurements: dict[str, tuple[str, float, dict[str, Any]]] = {}
        self.models: dict[str, tuple[str, str, TrainSettings]] = {}  # fingerprint -> ...
        examples: dict[str, tuple[str, dict[str, Any]]] = {}  # variable -> (name, choices)
        variants: list[tuple[str, str, dict[str, Any]]] = []  # models drawn per student
        self.drawn: dict[str, str] = {}  # a model drawn for this student: name -> its text
        for cell in cells:
            if cell.answer:
                continue
            if cell.source.startswith("%%tenflang "):
                line, body = _split(cell.source)
                name, settings = model_line(line)
                if name is not None:
                    self.models[digest(body, settings)] = (name, body, settings)
                continue
            try:
                tree = _python(cell.source)
            except SyntaxError:
                continue
            for node in tree.body:
                call = node.value if isinstance(node, ast.Expr | ast.Assign) else None
                if not isinstance(call, ast.Call):
                    continue
                what = ast.unparse(call.func)
                if what == GRADING + "start" and call.args:
                    self.assignment = ast.literal_eval(call.args[0])
                elif what == GRADING + "example" and isinstance(node, ast.Assign) \
                        and isinstance(node.targets[0], ast.Name):
                    (name,), choices = _literals(call)
                    examples[node.targets[0].id] = (name, choices)
                elif what == GRADING + "variant":
                    (name, template), choices = _literals(call)
                    variants.append((name, template, choices))
        for name, template, choices in variants:
            text, _ = draw_variant(self._seed(f"variant/{name}"), template, choices)
            self.models[variant_fingerprint(template, choices)] = (name, text, TrainSettings())
            self.drawn[name] = text
        self.examples = {name: draw_example(self._seed(f"example/{name}"), choices)
                         for name, choices in examples.values()}
        self.numbers = Calculator({v: self.examples[name] for v, (name, _) in examples.items()})
        for grade_id, source in self.answers.items():
            if not source.startswith("%%") and grade_id in self.cells:
                self.numbers.run(source)

    def close(self) -> None:
        """End the process the engine's functions ran in (if any)."""
        if self._engine_process is not None:
            self._engine_process.close()
            self._engine_process = None

    def _seed(self, salt: str) -> int:
        return student_seed(self.student, f"{self.assignment}/{salt}", self.key)

    def verdict(self, grade_id: str) -> Verdict:
        """The verdict of the check cell ``grade_id``."""
        said: list[str] = []
        try:
            checks = [(n, c) for n, c in _calls(self.cells[grade_id].source)
                      if n in self._checks()]
            if not checks:
                raise GradingFailure("the autograder cannot grade this check: it holds no "
                                     "check of tf.grading")
            for name, call in checks:
                said.append(self._checks()[name](call))
        except GradingFailure as failure:
            return Verdict(False, "\n".join([*said, str(failure)]))
        except TenFlangError as err:
            return Verdict(False, "\n".join([*said, f"✗ {err}"]))
        except (RecursionError, MemoryError, ValueError, SyntaxError, KeyError,
                TypeError) as err:  # an answer the checks cannot take: no grade, not a crash
            return Verdict(False, "\n".join([*said, f"✗ the autograder could not check this "
                                                    f"answer: {type(err).__name__}: {err}"]))
        return Verdict(True, "\n".join(said))

    def _checks(self) -> dict[str, Callable[[ast.Call], str]]:
        return {"check_answer": self._answer, "check_fit": self._fit,
                "check_engine": self._engine, "given": self._given,
                "check_number": self._number, "check_measured": self._measured}

    # ------------------------------------------------------------------ the checks

    def _model(self, model: str, print_: str) -> TenFlangModel:
        if print_ not in self.models:
            raise GradingFailure(f"the autograder finds no locked cell that defines {model} "
                                 f"with the fingerprint {print_}")
        _, body, settings = self.models[print_]
        return TenFlangModel(body, model, settings)

    def _answer_cell(self, magic: str, match: Callable[[str], bool]) -> str | None:
        """The submitted source of the answer cell whose teacher's first line, after
        ``magic``, ``match``es (None: there is none)."""
        for grade_id, cell in self.cells.items():
            if cell.answer and cell.source.startswith(magic + " ") and match(
                    _split(cell.source)[0]):
                return self.answers.get(grade_id)
        return None

    def _answer(self, call: ast.Call) -> str:
        (answer,), kw = _literals(call)
        graded = self._model(kw["model"], kw["fingerprint"])
        source = self._answer_cell("%%tenflang_check", lambda line: check_line(line)[1] == answer)
        text = None
        if source is not None and source.startswith("%%tenflang_check"):
            text = _split(source)[1]
        return answer_verdict(answer, graded, text, require=kw.get("require"),
                              draws=kw.get("draws", DRAWS), seed=self._seed(f"check/{graded.name}"))

    def _fit(self, call: ast.Call) -> str:
        (answer,), kw = _literals(call)
        model = kw["model"]
        source = self._answer_cell("%%tenflang", lambda line: model_line(line)[0] == model)
        body, settings = None, TrainSettings()
        if source is not None and source.startswith("%%tenflang "):
            line, text = _split(source)
            name, settings = model_line(line)
            body = text if name == model else None
        return fit_verdict(answer, model, body, settings, data=kw["data"],
                           seed=self._seed(f"fit/{model}") % 10_000,
                           accuracy=kw.get("accuracy", 1.0),
                           max_iter=kw.get("max_iter", FIT_MAX_ITER),
                           starts=kw.get("starts", FIT_STARTS),
                           max_weights=kw.get("max_weights"))

    def _engine(self, call: ast.Call) -> str:
        (name,), kw = _literals(call)
        name = engine_part(name)
        functions = [self.answers[g] for g, c in self.cells.items()
                     if c.answer and g in self.answers and c.source.lstrip().startswith("def ")]
        if self._engine_process is None:  # one process for the notebook's checks
            self._engine_process = Engine(functions_of(functions), self.sandbox)
        ok, text = engine_verdict(name, functions, self._seed(f"engine/{name}"),
                                  kw.get("programs", PROGRAMS), engine=self._engine_process)
        if not ok:
            raise GradingFailure(text)
        return text

    def _value(self, name: str) -> Any:
        try:
            value = self.numbers.value(name)
        except Unreadable as why:
            raise GradingFailure(
                f"{name} is no number the autograder can read in your answer cell ({why}): "
                "write your number there (a number, or arithmetic on numbers and on your "
                "example's values)") from None
        if value is None:
            raise GradingFailure(f"{name} is not answered yet: set {name} to your number "
                                 "(replace None) in its answer cell")
        if not exact_number(value):
            raise GradingFailure(f"{name} should be a number, not {type(value).__name__}")
        return value

    def _given(self, call: ast.Call) -> str:
        (name,), _ = _literals(call)
        return f"{name} = {self._value(name):g} is a number."

    def _number(self, call: ast.Call) -> str:
        if len(call.args) < 2:
            raise GradingFailure("the autograder cannot grade this check: check_number "
                                 "needs the expected value as its second argument")
        name = ast.literal_eval(call.args[0])
        try:
            expected = evaluate(call.args[1], {}, {GRADING + "gradient": self._gradient})
        except Unreadable as why:
            raise GradingFailure(f"the autograder cannot grade this check: the expected "
                                 f"value ({why})") from None
        kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        return number_verdict(name, self._value(name), float(expected), **kw)

    def _measurement(self, call: ast.Call) -> tuple[str, float, dict[str, Any]]:
        """A ``check_measured`` call's answer name, the right number for this student
        (measured here, once per check: a measurement may train hundreds of times), and its
        rounding and hint."""
        key = ast.dump(call)
        if key not in self._measurements:
            self._measurements[key] = self._measure(call)
        return self._measurements[key]

    def _measure(self, call: ast.Call) -> tuple[str, float, dict[str, Any]]:
        (name, measure), kw = _literals(call)
        found = MEASURES.get(measure)
        if found is None:
            raise GradingFailure(f"the autograder cannot grade this check: {measure!r} is not "
                                 "a measurement")
        compared = {k: kw.pop(k) for k in ("step", "digits", "hint") if k in kw}
        given: dict[str, Any] = {}
        model, print_ = kw.pop("model", None), kw.pop("fingerprint", "")
        if model is not None:
            given["model"] = self._model(model, print_)
        data = kw.pop("data", None)
        if data is not None:
            given["data"] = load_data(shipped_example(data))
        example = kw.pop("example", None)
        if example is not None and example not in self.examples:
            raise GradingFailure(f"the autograder finds no locked cell that draws {example}")
        drawn = self.examples[example] if example is not None else {}
        return name, found.measure(given, **{**drawn, **kw}), compared

    def _measured(self, call: ast.Call) -> str:
        name, expected, compared = self._measurement(call)
        return measured_verdict(name, self._value(name), expected, **compared)

    def expected(self, name: str) -> float | None:
        """The right value of the numeric answer ``name`` for this student, as its check
        computes it (None: no ``check_number`` checks it)."""
        for cell in self.cells.values():
            try:
                calls = [] if cell.answer else _calls(cell.source)
            except (GradingFailure, SyntaxError):  # not a check cell
                continue
            for what, call in calls:
                if what == "check_measured" and call.args and isinstance(
                        call.args[0], ast.Constant) and call.args[0].value == name:
                    return self._measurement(call)[1]
                if what == "check_number" and len(call.args) > 1 and isinstance(
                        call.args[0], ast.Constant) and call.args[0].value == name:
                    return float(evaluate(call.args[1], {},
                                          {GRADING + "gradient": self._gradient}))
        return None

    def _gradient(self, model: str, weight: str, *, fingerprint: str,
                  example: str | Mapping[str, float]) -> float:
        if isinstance(example, str):
            example = self.examples[example]
        return gradient_on(self._model(model, fingerprint), weight, example)
