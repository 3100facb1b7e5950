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
    widget: str  # "FloatLogSlider" or "BoundedIntText"
    low: float
    high: float
    step: float = 0.1  # slider step; for a log slider, in decades

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
        if self.widget == "BoundedIntText":
            return widgets.BoundedIntText(
                value=int(value), min=int(self.low), max=max(int(self.high), int(value)),
                layout=widgets.Layout(width="220px"), **common)
        raise ValueError(f"unknown widget kind {self.widget!r} for parameter {self.name!r}")


# The settings the panel has controls for, in display order.
PARAMETERS: tuple[Parameter, ...] = (
    Parameter("lr", "FloatLogSlider", 1e-4, 10.0),
    Parameter("tol", "FloatLogSlider", 1e-8, 1e-1),
    Parameter("max_iter", "BoundedIntText", 0, 1_000_000),
)
