"""The object ``%%tenflang NAME`` binds: a checked program with its graph, GCP and weights.

It only wires the core together (parse, compile, plan, train) and hands results to the views;
every number it shows is computed by the core's interpreter. The model computes, the views
render what it computed: no view calls back into a method that renders.

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> net = TenFlangModel(SEED_EXAMPLE, "net")
>>> net
<TenFlang model 'net': 7 variables, 1 weight>
>>> result = net.train({"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}, max_iter=50)
>>> len(net.history), net.result is result, net.weights == result.weights
(51, True, True)
>>> net.evaluate([{"x": 0.0}])
[{'o': 0.5, 'lambda': None}]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import api
from ..core.backprop import Gcp
from ..core.bindings import check_names, training_columns
from ..core.datafiles import DataTable, from_records, value_shape
from ..core.errors import TenFlangError
from ..core.gradcheck import GradRow, check_gradients
from ..core.graph import DataFlowGraph
from ..core.lexical import GIVEN_KINDS, adjoint_name
from ..core.plan import Plan, TraceStep, trace
from ..core.program import Program
from ..core.settings import TrainSettings
from ..core.train import GradientDescent, Record, TrainResult, Weights, initial_weights
from . import views
from .views_html import Rendered

if TYPE_CHECKING:
    from .panel import TrainingPanel

__all__ = ["Evaluation", "GradCheck", "TenFlangModel", "as_examples"]


def as_examples(data: Any, program: Program | None = None) -> DataTable:
    """Examples from a file path, a dict of arrays, a DataFrame, a list of dicts, or ONE
    example written as a dict of values (``{"x": 1.0, "y": 0.5}``).

    A dict is one example when a value is a plain number (columns need an example axis) or,
    given the ``program``, when every value has its variable's shape exactly.

    >>> len(as_examples({"x": 1.0, "y": 0.5})), len(as_examples({"x": [1.0, 2.0]}))
    (1, 2)
    """
    if isinstance(data, Mapping) and data and _one_example(data, program):
        return from_records([dict(data)], "<example>")
    return api.load_data(data)


def _one_example(data: Mapping[str, Any], program: Program | None) -> bool:
    # value_shape, not np.ndim / np.shape: those raise on a ragged value ([[0, 0], None])
    values = [v for v in data.values() if v is not None]
    if any(value_shape(v) == () for v in values):
        return True
    if program is None:
        return False
    shapes = program.shapes
    return all(name in shapes and (value is None or value_shape(value) == shapes[name])
               for name, value in data.items())


class Evaluation(list):  # type: ignore[type-arg]
    """The outputs and loss per input record (a list of dicts) that displays as a table."""

    def __init__(self, results: list[dict[str, Any]], inputs: DataTable) -> None:
        super().__init__(results)
        self.inputs = inputs

    def _repr_html_(self) -> str:
        return views.evaluation_html(self)


class GradCheck(list):  # type: ignore[type-arg]
    """Rows ``{weight, gcp, numeric, rel_error, ok}``: the GCP's gradient against central
    finite differences of the loss, one row per weight component."""

    def __init__(self, rows: list[GradRow], eps: float, rtol: float, skipped: int) -> None:
        super().__init__(dataclasses.asdict(row) for row in rows)
        self.eps, self.rtol, self.skipped = eps, rtol, skipped

    @property
    def ok(self) -> bool:
        """True when every component agrees."""
        return all(row["ok"] for row in self)

    @property
    def max_rel_error(self) -> float:
        return max((row["rel_error"] for row in self), default=0.0)

    def _repr_html_(self) -> str:
        return views.gradcheck_html(self)


class TenFlangModel:
    """A TenFlang program ready to look at, train and evaluate.

    Attributes: ``name``, ``source`` (the cell), ``program`` (core ``Program``), ``graph``
    (``DataFlowGraph``), ``compiled`` (the pruned ``Gcp``; None without a loss), ``settings``
    (the ``TrainSettings`` training starts from), ``weights`` (name -> value), ``history``
    (training ``Record`` list), ``result`` (last ``TrainResult``), ``data`` (the last
    training data), ``panel`` (last training panel).
    """

    def __init__(self, source: str, name: str = "model", settings: TrainSettings | None = None,
                 **options: Any) -> None:
        self.name = name
        self.source = source
        self.settings = TrainSettings.of(settings, **options)
        self.program: Program = api.parse(source, f"{name}.tf")
        self.graph = DataFlowGraph(self.program)
        # a program without a loss still has a graph and outputs; only gradients need one
        self.compiled: Gcp | None = api.compile(self.program) if self.program.losses else None
        self._full: Gcp | None = None
        self._gcp_program: Program | None = None
        self._full_program: Program | None = None
        self.weights: Weights = initial_weights(
            {w: self.program.shapes[w] for w in self.program.names("weight")},
            self.settings.init, self.settings.seed)
        self.history: list[Record] = []
        self.result: TrainResult | None = None
        self.data: DataTable | None = None
        self.panel: TrainingPanel | None = None

    # ------------------------------------------------------------------ the compiled forms

    @property
    def loss(self) -> str | None:
        return self.compiled.loss if self.compiled is not None else None

    @property
    def warnings(self) -> list[Any]:
        return list(self.program.warnings)

    def _need_gcp(self) -> Gcp:
        if self.compiled is None:
            raise TenFlangError.at(
                f"'{self.name}' declares no loss, so it has no gradient program",
                file=self.program.file, hint="add 'declare loss <name>' and define it")
        return self.compiled

    @property
    def gcp(self) -> str:
        """The (pruned) Gradient Computing Program as TenFlang text."""
        return self._need_gcp().text

    @property
    def compiled_full(self) -> Gcp:
        """The full GCP: every adjoint ``d/L/d/v``, not only those the weights need."""
        if self._full is None:
            self._need_gcp()
            self._full = api.compile(self.program, full=True)
        return self._full

    @property
    def gcp_full(self) -> str:
        return self.compiled_full.text

    @property
    def gcp_program(self) -> Program:
        """The pruned GCP parsed back (what training runs)."""
        if self._gcp_program is None:
            self._gcp_program = self._need_gcp().program()
        return self._gcp_program

    @property
    def full_gcp_program(self) -> Program:
        """The full GCP parsed back (what shows every variable's adjoint)."""
        if self._full_program is None:
            self._full_program = self.compiled_full.program()
        return self._full_program

    @property
    def adjoints(self) -> dict[str, str]:
        """Variable -> the name of its adjoint ``d/L/d/v``, for the variables that have one
        (those that reach the loss)."""
        if self.loss is None:
            return {}
        declared = self.full_gcp_program.decls
        return {v: adjoint_name(self.loss, v) for v in self.graph.nodes
                if adjoint_name(self.loss, v) in declared}

    # ------------------------------------------------------------------ training

    def trainer(self, data: Any, settings: TrainSettings | None = None, **options: Any
                ) -> GradientDescent:
        """A fresh core ``GradientDescent`` on ``data``, from this model's initial weights,
        with this model's ``settings`` changed by ``settings`` / ``options``."""
        chosen = TrainSettings.of(settings or self.settings, **options)
        return api.trainer(self.gcp_program, as_examples(data, self.program), chosen)

    def train(self, data: Any, settings: TrainSettings | None = None, **options: Any
              ) -> TrainResult:
        """Gradient descent to the end (blocking); keeps the weights and the history.

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> TenFlangModel(SEED_EXAMPLE).train({"x": [1.0], "y": [0.7]}, max_iter=3).iterations
        3
        """
        table = as_examples(data, self.program)
        t = self.trainer(table, settings, **options)
        with np.errstate(all="ignore"):
            t.run()
        self.adopt(t, table)
        assert self.result is not None
        return self.result

    def training_panel(self, data: Any, settings: TrainSettings | None = None, *,
                       live: bool = True, **options: Any) -> TrainingPanel:
        """A training panel (sliders, Train/Stop/Reset, live loss curve) on ``data``.

        Each finished run updates ``weights``/``history``. Display it, then ``.start()``
        (live) or call ``.run_sync()`` first for one deterministic run.
        """
        from .panel import TrainingPanel  # widgets and matplotlib only when training

        table = as_examples(data, self.program)
        chosen = TrainSettings.of(settings or self.settings, **options)
        # built now so bad data raises here, where the caller can show it, not in the panel
        first = [self.trainer(table, chosen)]

        def make(settings: TrainSettings) -> GradientDescent:
            if first:
                t = first.pop()
                t.settings = settings
                return t
            return self.trainer(table, settings)

        self.panel = TrainingPanel(make, chosen, live=live,
                                   on_finish=lambda t: self.adopt(t, table))
        return self.panel

    def adopt(self, trainer: GradientDescent, table: DataTable) -> None:
        """Keep a finished run's weights and history (and its data, for ``values(i)``)."""
        result = trainer.result()
        self.result = result
        self.weights = {w: (np.array(v) if np.ndim(v) else float(v))
                        for w, v in result.weights.items()}
        self.history = list(result.history)
        self.data = table

    def training_summary(self) -> Rendered:
        """The last training run: iterations, final loss, convergence, weights."""
        return views.training_summary(self)

    # ------------------------------------------------------------------ running

    def evaluate(self, inputs: Any) -> Evaluation:
        """Outputs and loss for each input record with the current weights.

        ``inputs``: a dict of arrays, a list of dicts, a DataFrame, a file path, or one
        example as a dict of numbers. Displays as a table; it is a list of dicts.
        """
        table = as_examples(inputs, self.program)
        return Evaluation(api.evaluate(self.program, table, self.weights), table)

    def example(self, example: Any = None) -> DataTable:
        """One or more examples: an index into the training data (default 0) or the data
        itself (a dict, a list of dicts, a path...)."""
        if example is None:
            example = 0
        if isinstance(example, int | np.integer) and not isinstance(example, bool):
            if self.data is None:
                raise TenFlangError.at(
                    "no training data yet: give the example itself, e.g. "
                    "{'x': 1.0, 'y': 0.5}", file=self.program.file)
            n = len(self.data)
            if not -n <= int(example) < n:
                raise TenFlangError.at(
                    f"example {int(example)} is out of range: the training data has {n}",
                    file=self.program.file)
            return from_records([self.data.record(int(example))], "<example>")
        return as_examples(example, self.program)

    def _data_names(self, program: Program) -> list[str]:
        return [n for n in program.names(*GIVEN_KINDS) if n not in self.weights]

    def values(self, example: Any = None) -> dict[str, tuple[Any, Any]]:
        """Each variable's value and adjoint ``d/L/d/v`` on one example (None: NULL, or no
        adjoint because the variable does not reach the loss).

        ``example``: an index into the training data (default 0) or a dict.
        """
        table = self.example(example)
        if len(table) != 1:
            raise TenFlangError.at(f"give one example, not {len(table)}", file=table.file)
        program = self.full_gcp_program if self.compiled is not None else self.program
        check_names(program, table, "the example", set(self._data_names(program)))
        data = {n: table.columns[n] for n in table.names if table.present[n][0]}
        run = Plan(program).bind({**data, **self.weights}, 1)
        with np.errstate(all="ignore"):
            run.run()
        adjoints = self.adjoints
        out: dict[str, tuple[Any, Any]] = {}
        for v in self.graph.nodes:
            value = run.value(v)
            grad = run.value(adjoints[v]) if v in adjoints else None
            out[v] = (None if value is None else np.array(value[0]),
                      None if grad is None else np.array(grad[0]))
        return out

    def trace(self, example: Any = None) -> list[TraceStep]:
        """The GCP run on one example, line by line: each step's ``.line`` (1-based, in
        ``self.gcp``), ``.name`` (the variable it defines) and ``.value`` (float, array, or
        None for NULL), in execution order: the forward pass, then the backward pass.

        ``example``: as for :meth:`values` (an index into the training data, default 0, or
        the example itself).

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> steps = TenFlangModel(SEED_EXAMPLE).trace({"x": 1.0, "y": 0.5})
        >>> [(s.name, round(s.value, 4)) for s in steps][:3]
        [('z', 0.0), ('o', 0.5), ('diff', 0.0)]
        """
        table = self.example(example)
        if len(table) != 1:
            raise TenFlangError.at(f"give one example, not {len(table)}", file=table.file)
        program = self.gcp_program
        check_names(program, table, "the example", set(self._data_names(program)))
        data = {n: table.columns[n][0] for n in table.names if table.present[n][0]}
        with np.errstate(all="ignore"):
            return trace(program, {**data, **self.weights})

    def show_values(self, example: Any = None) -> Rendered:
        """The graph with each node's value and gradient ``d/L/d/v`` on one example.

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> TenFlangModel(SEED_EXAMPLE, "net").show_values({"x": 1.0, "y": 0.5})
        <TenFlang values of 'net' on {x: 1.0, y: 0.5}>
        """
        return views.values_view(self, example)

    def gradcheck(self, example: Any = None, *, eps: float = 1e-6, rtol: float = 1e-4,
                  atol: float = 1e-7, max_components: int = 20) -> GradCheck:
        """Compare the GCP's gradient with central finite differences of the loss.

        ``example``: an index into the training data (default 0), a dict, or several
        examples (then the mean loss, as training uses). At most ``max_components`` entries
        of each tensor weight are checked. Displays as a table; ``.ok`` says if all agree.

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> TenFlangModel(SEED_EXAMPLE).gradcheck({"x": 1.5, "y": 0.2}).ok
        True
        """
        gcp = self._need_gcp()
        table = self.example(example)
        names = list(self.weights)
        if not names:
            raise TenFlangError.at(f"'{self.name}' has no weights to check",
                                   file=self.program.file)
        columns = training_columns(self.gcp_program, table, names,
                                   [gcp.loss, *gcp.gradient_names().values()])
        rows, skipped = check_gradients(
            self.program, self.gcp_program, gcp.loss, columns, len(table), self.weights,
            eps=eps, rtol=rtol, atol=atol, max_components=max_components)
        return GradCheck(rows, eps, rtol, skipped)

    # ------------------------------------------------------------------ display

    def show(self, which: str | list[str] | None = None, *, full: bool = False,
             example: Any = None) -> Rendered:
        """The views by name, as the magic's ``--show`` (default: the default views;
        ``views.describe_views()`` lists them).

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> TenFlangModel(SEED_EXAMPLE, "net").show("order")
        <TenFlang views of 'net': order>
        """
        names = views.parse_views(which) if isinstance(which, str | None) else list(which)
        return views.program_view(self, names, full=full, example=example)

    def dot(self) -> str:
        """The data-flow graph as Graphviz DOT text."""
        return views.dot_source(self)

    def __repr__(self) -> str:
        n_vars = len(self.program.decls)
        n_w = len(self.weights)
        return (f"<TenFlang model '{self.name}': {n_vars} variable{'s' * (n_vars != 1)}, "
                f"{n_w} weight{'s' * (n_w != 1)}>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": repr(self), "text/html": views.model_html(self)}

    def _repr_html_(self) -> str:
        return views.model_html(self)
