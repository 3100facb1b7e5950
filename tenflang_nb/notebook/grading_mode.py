"""The grading mode of one kernel: whether it is on, whose numbers the kernel draws, which
models it grades, and what the kernel recorded (every model a ``%%tenflang`` cell defined,
the answer text of every ``%%tenflang_check`` cell).

A graded notebook's locked setup cell turns it on (``tf.grading.start``); the teacher's copy
turns it off again in a hidden region nbgrader leaves out of the student version. While
nbgrader runs a notebook (``NBGRADER_EXECUTION``: autograde, validate) it is on whatever the
cells say. The model asks :data:`GRADING` what to withhold; the locked cells' API
(``notebook/grading.py``) reads what was recorded. Nothing here imports the model.

>>> GRADING.reset(); GRADING.withheld("seed", "define L = mul w w", "the GCP") is None
True
>>> GRADING.start("ps", ["seed"], environ={}, cwd="/tmp")
>>> print(GRADING.withheld("seed", "define L = mul w w", "the GCP (.gcp)"))
grading mode withholds the GCP (.gcp) of 'seed': an exercise grades this model
>>> GRADING.reset()
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..core.grading import COURSE_KEY, fingerprint, program_key, student_id, student_seed
from ..core.settings import TrainSettings

__all__ = ["GRADING", "Answer", "Definition", "GradingMode"]


@dataclass(frozen=True)
class Definition:
    """A model a ``%%tenflang NAME`` cell defined: its name, program text, settings."""

    name: str
    source: str
    settings: TrainSettings

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.source, self.settings)


@dataclass(frozen=True)
class Answer:
    """The text a ``%%tenflang_check MODEL NAME`` cell checked, under its answer NAME."""

    name: str
    model: str
    text: str


@dataclass
class GradingMode:
    """The grading mode and the kernel's records (one per kernel: :data:`GRADING`)."""

    started: bool = False
    switched_on: bool = False  # as the cells set it; autograding overrides it
    assignment: str = ""
    graded: tuple[str, ...] = ()
    untrained: tuple[str, ...] = ()  # models whose training is withheld
    student: str = ""
    student_source: str = ""
    key: str = ""  # the student's key in a course with a secret (none: the practice variant)
    started_in: int | None = None  # the cell (execution count) that started it
    definitions: list[Definition] = field(default_factory=list)
    answers: dict[str, Answer] = field(default_factory=dict)
    examples: dict[str, dict[str, float]] = field(default_factory=dict)
    # models drawn per student, by the fingerprint of their template and choices
    variants: dict[str, Definition] = field(default_factory=dict)

    def reset(self) -> None:
        """Forget everything (a fresh kernel)."""
        self.__init__()  # type: ignore[misc]

    def start(self, assignment: str, graded: Iterable[str], untrained: Iterable[str] = (),
              *, environ: Mapping[str, str] | None = None, cwd: str | None = None,
              cell: int | None = None) -> None:
        """Grading mode on for the models ``graded`` (and their training withheld for
        ``untrained``), the student found (see ``core.grading.student_id``) in the cell
        ``cell``. Called again, it adds models and changes nothing else: what a kernel grades
        never shrinks, and the assignment, the student and the cell that started it stay
        (a student's cell cannot start it again as a classmate, or off)."""
        if not self.started:
            self.assignment = assignment
            self.student, self.student_source = student_id(environ, cwd)
            self.key = (os.environ if environ is None else environ).get(COURSE_KEY, "").strip()
            self.started_in = cell
        self.started = True
        self.switched_on = True
        self.graded = tuple(dict.fromkeys([*self.graded, *graded]))
        self.untrained = tuple(dict.fromkeys([*self.untrained, *untrained]))

    @staticmethod
    def nbgrader_running() -> str | None:
        """What nbgrader is doing with this notebook (autograde, validate), or None."""
        return os.environ.get("NBGRADER_EXECUTION") or None

    @property
    def on(self) -> bool:
        """Grading mode is on: the cells turned it on, or nbgrader runs the notebook (even
        one whose setup cell a student deleted)."""
        return (self.started and self.switched_on) or self.nbgrader_running() is not None

    def seed(self, salt: str) -> int | None:
        """The student's seed for ``salt`` once grading has started (None before)."""
        if not self.started:
            return None
        return student_seed(self.student, f"{self.assignment}/{salt}", self.key)

    # -------------------------------------------------------------- what is withheld

    def _among(self, names: tuple[str, ...], name: str, source: str) -> bool:
        """The model is one of ``names``, or a copy of one under another name."""
        if name in names:
            return True
        key = program_key(source)
        return any(d.name in names and program_key(d.source) == key for d in self.definitions)

    def withheld(self, name: str, source: str, what: str) -> str | None:
        """The message saying that ``what`` of the model ``name`` (program ``source``) is
        withheld; None when grading mode is off or no exercise grades the model."""
        if not self.on or not self._among(self.graded, name, source):
            return None
        return f"grading mode withholds {what} of '{name}': an exercise grades this model"

    def training_withheld(self, name: str, source: str) -> str | None:
        """The message saying that training the model is withheld (an exercise asks for a
        number training would give), or None."""
        if not self.on or not self._among(self.untrained, name, source):
            return None
        return (f"grading mode withholds training '{name}': an exercise asks for a number "
                "that training it would give")

    # -------------------------------------------------------------- the records

    def define(self, name: str, source: str, settings: TrainSettings) -> None:
        """Record a model a ``%%tenflang NAME`` cell defined."""
        definition = Definition(name, source, settings)
        if definition in self.definitions:  # a cell run again: kept once, as the latest
            self.definitions.remove(definition)
        self.definitions.append(definition)

    def answer(self, name: str, model: str, text: str) -> None:
        """Record the text a ``%%tenflang_check MODEL NAME`` cell checked."""
        self.answers[name] = Answer(name, model, text)

    def definition(self, print_: str) -> Definition | None:
        """The latest recorded definition with the fingerprint ``print_`` (a model drawn for
        the student: the fingerprint of its template)."""
        if print_ in self.variants:
            return self.variants[print_]
        return next((d for d in reversed(self.definitions) if d.fingerprint == print_), None)


GRADING = GradingMode()
