"""What the model's methods return that displays itself: :class:`Evaluation`
(``model.evaluate``), :class:`GradCheck` (``model.gradcheck``), :class:`CheckReport`
(``model.check_backprop``) and :class:`Cost` (``model.cost``). Each holds numbers the core
computed and shows them through a renderer of ``views`` (HTML in a notebook, a short stable
text elsewhere).

>>> from tenflang_nb.core.gradcheck import GradRow
>>> check = GradCheck([GradRow("w", 0.5, 0.5, 0.0, True)], eps=1e-6, rtol=1e-4, skipped=0)
>>> check.ok, check.max_rel_error
(True, 0.0)
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..core.backprop_check import BackpropCheck
from ..core.cost import ModeComparison
from ..core.datafiles import DataTable
from ..core.gradcheck import GradRow, disagreeing
from .views.check import backprop_check_html
from .views.cost import cost_html
from .views.results import evaluation_html, evaluation_text, gradcheck_html, gradcheck_text

__all__ = ["CheckReport", "Cost", "Evaluation", "GradCheck"]


class _Table(list):  # type: ignore[type-arg]
    """Result rows (a list) that display as a table: HTML in a notebook, and as text numbers
    to 6 digits, not the list's full-precision floats (what a terminal shows, and what a saved
    notebook's text/plain keeps: last digits would move with the CPU)."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


class Evaluation(_Table):
    """The outputs and loss per input record (a list of dicts)."""

    def __init__(self, results: list[dict[str, Any]], inputs: DataTable) -> None:
        super().__init__(results)
        self.inputs = inputs

    def _repr_html_(self) -> str:
        return evaluation_html(self, self.inputs)

    def __repr__(self) -> str:
        return evaluation_text(self, self.inputs)


class GradCheck(_Table):
    """Rows ``{weight, gcp, numeric, rel_error, ok, problem}``: the GCP's gradient against
    central finite differences of the loss, one row per weight component (``problem``: which
    side is NaN or infinite, when one is)."""

    def __init__(self, rows: list[GradRow], eps: float, rtol: float, skipped: int) -> None:
        super().__init__(dataclasses.asdict(row) for row in rows)
        self.eps, self.rtol, self.skipped = eps, rtol, skipped

    @property
    def ok(self) -> bool:
        """True when every component agrees."""
        return all(row["ok"] for row in self)

    @property
    def wrong(self) -> list[str]:
        """The weights with a component whose gradient disagrees, in order (``W`` for
        ``W[0, 1]``): after an edit of the GCP, the weights whose gradient it broke."""
        return disagreeing(self)

    @property
    def max_rel_error(self) -> float:
        return max((row["rel_error"] for row in self), default=0.0)

    def _repr_html_(self) -> str:
        return gradcheck_html(self, self.eps, self.rtol, self.skipped)

    def __repr__(self) -> str:
        return gradcheck_text(self)


class CheckReport(BackpropCheck):
    """A checked backward pass (see ``core.backprop_check.BackpropCheck``: ``ok``,
    ``first_wrong_line``, ``lines``, ``adjoints``, ``report()``) that displays as HTML."""

    @classmethod
    def of(cls, result: BackpropCheck) -> CheckReport:
        return cls(**{f.name: getattr(result, f.name) for f in dataclasses.fields(result)})

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.report(), "text/html": backprop_check_html(self)}

    def _repr_html_(self) -> str:
        return backprop_check_html(self)

    def __repr__(self) -> str:
        return self.report()


class Cost(ModeComparison):
    """What one gradient costs in forward mode and in reverse mode (``model.cost()``).

    Attributes: ``forward`` and ``reverse`` (each with ``sweeps``, ``lines``,
    ``pass_lines``, ``values_kept``, ``seconds``), ``components``, ``examples``,
    ``synthetic``, ``line_ratio``, ``time_ratio``. Displays as a plain table; its text omits
    the times, which vary between machines and runs.
    """

    @classmethod
    def of(cls, comparison: ModeComparison) -> Cost:
        return cls(**{f.name: getattr(comparison, f.name)
                      for f in dataclasses.fields(comparison)})

    def _repr_html_(self) -> str:
        return cost_html(self)

    def __repr__(self) -> str:
        f, r = self.forward, self.reverse
        return (f"<TenFlang cost of one gradient: forward mode {f.sweeps:,} "
                f"sweep{'s' * (f.sweeps != 1)}, {f.lines:,} lines; reverse mode "
                f"{r.sweeps:,} sweep, {r.lines:,} lines>")
