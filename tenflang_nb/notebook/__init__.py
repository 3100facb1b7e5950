"""The notebook layer: the ``%%tenflang`` magic, its model object and its views.

Loaded by ``%load_ext tenflang_nb``; it renders and wires widgets, the maths is in
``tenflang_nb.core``.

>>> from tenflang_nb.notebook import TenFlangModel
>>> TenFlangModel("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n", "sq")
<TenFlang model 'sq': 2 variables, 1 weight>
"""

from __future__ import annotations

from .model import TenFlangModel
from .results import Evaluation, GradCheck

__all__ = ["Evaluation", "GradCheck", "TenFlangModel"]
