"""A model's compiled forms and what grading mode withholds of them: the part of
:class:`~tenflang_nb.notebook.model.TenFlangModel` that compiles.

The pruned GCP is made with the model; the full GCP, forward mode's program and the
Hessian-vector program (and each parsed back) when first asked for, then kept. The public
names are guarded by grading mode (``notebook/grading_mode.py``); the model itself uses the
private ones, so what it computes for a view or a check never trips the guard.

>>> from tenflang_nb.notebook.model import TenFlangModel
>>> sq = TenFlangModel("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n", "sq")
>>> sq.loss, [line for line in sq.gcp.splitlines() if line.startswith("define d/")]
('L', ['define d/L/d/w = add w w'])
>>> sq.adjoints, sq.compiled_full is sq.compiled_full  # made once, then kept
({'w': 'd/L/d/w', 'L': 'd/L/d/L'}, True)
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from ..core import api
from ..core.backprop import Gcp
from ..core.errors import TenFlangError
from ..core.forward import ForwardProgram
from ..core.graph import DataFlowGraph
from ..core.hvp import HvpProgram
from ..core.lexical import adjoint_name
from ..core.program import Program
from .grading_mode import GRADING

__all__ = ["CompiledForms"]


class CompiledForms:
    """The compiled forms of a model's ``program`` (its ``_compiled`` GCP: None without a
    loss) and grading mode's guards, by the model's ``name`` and ``source``."""

    name: str
    source: str
    program: Program
    graph: DataFlowGraph
    _compiled: Gcp | None

    # ------------------------------------------------------------------ grading mode

    @property
    def withheld(self) -> str | None:
        """Grading mode's message when this model's backward pass is withheld, else None."""
        return GRADING.withheld(self.name, self.source, "the backward pass")

    def _guard(self, what: str) -> None:
        """Raise grading mode's message when ``what`` of this model is withheld."""
        message = GRADING.withheld(self.name, self.source, what)
        if message is not None:
            raise TenFlangError.at(message, file=self.program.file,
                                   hint="your %%tenflang_check cells check your answers line "
                                        "by line and say what is right")

    def _guard_training(self) -> None:
        message = GRADING.training_withheld(self.name, self.source)
        if message is not None:
            raise TenFlangError.at(message, file=self.program.file,
                                   hint="work the number out by hand, from the rule w <- w - "
                                        "lr · d/L/d/w")

    # ------------------------------------------------------------------ the compiled forms
    # (the pruned GCP is made at once; the others when first asked for, then kept; the
    # public names are guarded by grading mode, the model itself uses the private ones)

    @property
    def loss(self) -> str | None:
        return self._compiled.loss if self._compiled is not None else None

    @property
    def warnings(self) -> list[Any]:
        return list(self.program.warnings)

    def _need_gcp(self) -> Gcp:
        if self._compiled is None:
            raise TenFlangError.at(
                f"'{self.name}' declares no loss, so it has no gradient program",
                file=self.program.file, hint="add 'declare loss <name>' and define it")
        return self._compiled

    @property
    def compiled(self) -> Gcp | None:
        """The pruned GCP (a core ``Gcp``); None without a loss."""
        self._guard("the GCP (.compiled)")
        return self._compiled

    @property
    def gcp(self) -> str:
        """The (pruned) Gradient Computing Program as TenFlang text."""
        self._guard("the GCP (.gcp)")
        return self._need_gcp().text

    @cached_property
    def _compiled_full(self) -> Gcp:
        self._need_gcp()
        return api.compile(self.program, full=True)

    @property
    def compiled_full(self) -> Gcp:
        """The full GCP: every adjoint ``d/L/d/v``, not only those the weights need."""
        self._guard("the full GCP (.compiled_full)")
        return self._compiled_full

    @property
    def gcp_full(self) -> str:
        self._guard("the full GCP (.gcp_full)")
        return self._compiled_full.text

    @cached_property
    def _compiled_forward(self) -> ForwardProgram:
        self._need_gcp()
        return api.compile_forward(self.program)

    @property
    def compiled_forward(self) -> ForwardProgram:
        """The forward-mode program (``tfcompiler --forward``): the GCP's outputs, computed
        by one sweep per weight component (``.text``, ``.lines``, ``.sweeps``)."""
        self._guard("the forward-mode program (.compiled_forward)")
        return self._compiled_forward

    @cached_property
    def _compiled_hvp(self) -> HvpProgram:
        return api.compile_hvp(self._need_gcp())

    @property
    def compiled_hvp(self) -> HvpProgram:
        """The Hessian-vector program (``tfcompiler --hvp``): the GCP, then the derivative of
        every gradient along a direction ``v/<w>`` (``.text``, ``.lines``, ``.hvp_names()``)."""
        self._guard("the Hessian-vector program (.compiled_hvp)")
        return self._compiled_hvp

    @cached_property
    def _hvp_program(self) -> Program:
        return self._compiled_hvp.program()

    @property
    def hvp_program(self) -> Program:
        """The Hessian-vector program parsed back (what :meth:`hvp` runs)."""
        self._guard("the Hessian-vector program (.hvp_program)")
        return self._hvp_program

    @cached_property
    def _gcp_program(self) -> Program:
        return self._need_gcp().program()

    @property
    def gcp_program(self) -> Program:
        """The pruned GCP parsed back (what training runs)."""
        self._guard("the GCP (.gcp_program)")
        return self._gcp_program

    @gcp_program.setter
    def gcp_program(self, program: Program) -> None:  # a GCP of one's own to train with
        self.__dict__["_gcp_program"] = program

    @cached_property
    def _full_gcp_program(self) -> Program:
        return self._compiled_full.program()

    @property
    def full_gcp_program(self) -> Program:
        """The full GCP parsed back (what shows every variable's adjoint)."""
        self._guard("the full GCP (.full_gcp_program)")
        return self._full_gcp_program

    @property
    def adjoints(self) -> dict[str, str]:
        """Variable -> the name of its adjoint ``d/L/d/v``, for the variables that have one
        (those that reach the loss)."""
        if self.loss is None:
            return {}
        declared = self._full_gcp_program.decls
        return {v: adjoint_name(self.loss, v) for v in self.graph.nodes
                if adjoint_name(self.loss, v) in declared}
