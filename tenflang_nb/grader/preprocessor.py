"""The grade of a TenFlang notebook, computed by nbgrader's autograde in its own process.

``TenFlangGrade`` runs after nbgrader's ``Execute`` (the student's kernel, whose outputs are
feedback only) and before ``SaveAutoGrades``: it reads the teacher's cells from the gradebook
and the student's answer cells from the submission as data (:mod:`.grade`), and replaces the
outputs of every check cell worth points by the verdict computed here (an error output when
it fails), so that nbgrader's own scoring records the grade this process computed. A course's
``nbgrader_config.py``::

    from tenflang_nb.grader.preprocessor import autograde_pipeline
    c.Autograde.autograde_preprocessors = autograde_pipeline()
"""

from __future__ import annotations

from typing import Any

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode, from_dict
from nbgrader import utils
from nbgrader.api import Gradebook
from nbgrader.converters import Autograde, GenerateFeedback
from nbgrader.preprocessors import ClearHiddenTests, Execute, NbGraderPreprocessor, SaveAutoGrades
from traitlets import Bool, List, Unicode

from .grade import Grader, TeacherCell
from .skip import NOTE, SKIP, needs

__all__ = ["HideHiddenTests", "SkipUnneeded", "TenFlangGrade", "autograde_pipeline",
           "feedback_pipeline"]


def _source(cell: NotebookNode) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _outputs(ok: bool, text: str) -> list[NotebookNode]:
    if ok:
        return [from_dict({"output_type": "stream", "name": "stdout", "text": text + "\n"})]
    return [from_dict({"output_type": "error", "ename": "GradingFailure", "evalue": text,
                       "traceback": text.splitlines()})]


class TenFlangGrade(NbGraderPreprocessor):
    """The check cells' verdicts, computed in nbgrader's process from the answers' text."""

    sandbox = List(Unicode(), help="The command prefix that starts the fresh process an "
                   "engine's functions (notebook 07) are checked in (the sandbox's, "
                   "e.g. tenflang_nb.grader.sandbox.engine_prefix()).").tag(config=True)
    secret = Unicode("", help="The course's secret: it enters every student's draws (set by "
                     "configure() from the course folder's secret file).").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict
                   ) -> tuple[NotebookNode, ResourcesDict]:
        about = resources["nbgrader"]
        with Gradebook(about["db_url"]) as gb:
            notebook = gb.find_notebook(about["notebook"], about["assignment"])
            answers = {c.name for c in notebook.solution_cells}
            points = {c.name: c.max_score for c in notebook.grade_cells}
            teacher = [TeacherCell(c.name, c.source, c.name in answers)
                       for c in notebook.source_cells if c.cell_type == "code"]
        submitted: dict[str, str] = {}
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.cell_type == "code" and utils.is_solution(cell) and grade_id in answers:
                submitted.setdefault(grade_id, _source(cell))
        _skipped(nb)
        grader = Grader(teacher, submitted, about["student"], sandbox=self.sandbox,
                        secret=self.secret)
        try:
            for cell in nb.cells:
                grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
                if (cell.cell_type != "code" or not utils.is_grade(cell)
                        or utils.is_solution(cell) or not points.get(grade_id)):
                    continue
                verdict = grader.verdict(grade_id)
                cell.outputs = _outputs(verdict.ok, verdict.text)
                self.log.info("%s: %s", grade_id, "passed" if verdict.ok else "failed")
        finally:
            grader.close()
        return nb, resources


def _tags(cell: NotebookNode) -> list[str]:
    return [t for t in cell.metadata.get("tags", []) if t != SKIP]


class SkipUnneeded(NbGraderPreprocessor):
    """Tag the cells the kernel need not run (:mod:`.skip`): nbgrader's ``Execute`` skips
    them when ``c.Execute.skip_cells_with_tag`` is :data:`~.skip.SKIP` (``configure``)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict
                   ) -> tuple[NotebookNode, ResourcesDict]:
        code = [c for c in nb.cells if c.cell_type == "code"]
        runs = needs([_source(c) for c in code], [bool(c.metadata.get("nbgrader")) for c in code])
        for cell, run in zip(code, runs, strict=True):
            tags = _tags(cell)
            if not run:
                tags.append(SKIP)
            if tags:
                cell.metadata["tags"] = tags
            else:
                cell.metadata.pop("tags", None)
        self.log.info("the kernel runs %d of %d code cells", sum(runs), len(code))
        return nb, resources


def _skipped(nb: NotebookNode) -> None:
    """The cells the kernel skipped get a note as their output, and their tag off."""
    for cell in nb.cells:
        if SKIP in cell.metadata.get("tags", []):
            if cell.get("execution_count") is None and not cell.get("outputs"):
                cell.outputs = [from_dict({"output_type": "stream", "name": "stdout",
                                           "text": NOTE})]
            tags = _tags(cell)
            if tags:
                cell.metadata["tags"] = tags
            else:
                cell.metadata.pop("tags", None)


def autograde_pipeline() -> list[Any]:
    """nbgrader's autograde preprocessors with :class:`SkipUnneeded` before its kernel's run
    and :class:`TenFlangGrade` before its scoring."""
    steps = list(Autograde.class_traits()["autograde_preprocessors"].default())
    steps.insert(steps.index(Execute), SkipUnneeded)
    steps.insert(steps.index(SaveAutoGrades), TenFlangGrade)
    assert Execute in steps  # the student's kernel still runs: its outputs are feedback
    return steps


class HideHiddenTests(ClearHiddenTests):
    """The hidden tests taken out of the feedback: autograde runs the teacher's cells as the
    gradebook holds them (hidden tests included), and nbgrader's feedback would show them."""

    enforce_metadata = Bool(False)  # a feedback is written whatever a cell's metadata says


def feedback_pipeline() -> list[Any]:
    """nbgrader's feedback preprocessors with :class:`HideHiddenTests` first."""
    steps = list(GenerateFeedback.class_traits()["preprocessors"].default())
    return [HideHiddenTests, *steps]
