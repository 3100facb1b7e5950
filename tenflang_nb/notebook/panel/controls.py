"""The training panel's controls: one per training setting it lets you change.

The controls are the training settings of :data:`~tenflang_nb.core.settings.SETTINGS` (their
labels, help and defaults); :data:`PARAMETERS` adds only how each is shown (widget, range).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from ...core.formatting import fmt_number
from ...core.settings import SETTINGS, Setting

__all__ = ["PARAMETERS", "Parameter"]


@dataclass(frozen=True)
class Parameter:
    """How the panel shows one training setting: a control, and its initial range
    (``low`` / ``high``, widened to fit a value outside it).

    >>> lr = PARAMETERS[0]
    >>> lr.label, lr.widget, lr.default
    ('learning rate', 'FloatLogSlider', 0.1)
    """

    name: str  # the setting (a field of TrainSettings)
    widget: str  # "FloatLogSlider", "SelectionSlider" (a log slider with 0) or "BoundedIntText"
    low: float
    high: float
    step: float = 0.1  # slider step; for a log slider, in decades
    zero: str = ""  # a SelectionSlider's readout of its 0 position, at its left end

    @property
    def setting(self) -> Setting:
        return SETTINGS[self.name]

    @property
    def label(self) -> str:
        return self.setting.label

    @property
    def default(self) -> Any:
        return self.setting.default

    @property
    def option(self) -> str:
        return self.setting.option

    def check(self, value: float) -> str | None:
        """Why this control cannot show ``value`` (a valid setting), or None if it can."""
        if self.widget == "FloatLogSlider" and value <= 0:
            return (f"{self.label} must be > 0 to be shown on a log slider; "
                    f"use a tiny value such as {fmt_number(self.low)}")
        return None

    def control(self, value: float) -> widgets.ValueWidget:
        """The ipywidgets control showing ``value`` (the range widens to include it).

        >>> PARAMETERS[0].control(100.0).value
        100.0
        """
        common: dict[str, Any] = {
            "description": self.label, "tooltip": self.setting.help,
            "style": {"description_width": "initial"}}
        if self.widget == "FloatLogSlider":
            lo, hi = math.log10(self.low), math.log10(self.high)
            if value > 0:
                # ipywidgets clamps a value outside the range without a word.
                lo = min(lo, math.floor(math.log10(value)))
                hi = max(hi, math.ceil(math.log10(value)))
            return widgets.FloatLogSlider(
                value=value, base=10, min=lo, max=hi, step=self.step, readout_format=".3g",
                continuous_update=False, layout=widgets.Layout(width="340px"), **common)
        if self.widget == "SelectionSlider":
            return widgets.SelectionSlider(
                options=self._log_grid(value), value=value, continuous_update=False,
                layout=widgets.Layout(width="340px"), **common)
        if self.widget == "BoundedIntText":
            return widgets.BoundedIntText(
                value=int(value), min=int(self.low), max=max(int(self.high), int(value)),
                layout=widgets.Layout(width="220px"), **common)
        raise ValueError(f"unknown widget kind {self.widget!r} for parameter {self.name!r}")

    def _log_grid(self, value: float) -> list[tuple[str, float]]:
        """A SelectionSlider's positions: 0, then ``step`` decades apart from ``low`` to
        ``high`` (numbers of 3 digits: the readout is the value), and ``value`` itself
        (beyond the range, a position of its own at its end: 1e-300 adds one, not 3,000).

        >>> grid = PARAMETERS[1]._log_grid(5e-4)
        >>> grid[:2], [label for label, _ in grid[47:50]]
        ([('0 (off)', 0.0), ('1e-08', 1e-08)], ['0.000398', '0.0005', '0.000631'])
        """
        lo, hi = math.log10(self.low), math.log10(self.high)
        count = round((hi - lo) / self.step)
        exponents = [lo + k * self.step for k in range(count + 1)]
        if value > 0:  # the value given, exactly, in place of the grid's nearest point
            near = math.log10(value)
            exponents = [e for e in exponents if abs(e - near) >= self.step / 2]
        grid = [float(f"{10 ** e:.3g}") for e in exponents] + ([value] if value > 0 else [])
        return [(self.zero, 0.0), *((_label(v), v) for v in sorted(grid))]


def _label(value: float) -> str:
    """A position's readout: the value to 3 digits, more where it has more."""
    return f"{value:.3g}" if float(f"{value:.3g}") == value else fmt_number(value, 6)


# The settings the panel has controls for, in display order.
PARAMETERS: tuple[Parameter, ...] = (
    Parameter("lr", "FloatLogSlider", 1e-4, 10.0),
    # 0 (no convergence test: all max-iter steps) must be a position, not a setting replaced
    Parameter("tol", "SelectionSlider", 1e-8, 1e-1, zero="0 (off)"),
    Parameter("max_iter", "BoundedIntText", 0, 1_000_000),
)
