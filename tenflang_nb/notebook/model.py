"""The object ``%%tenflang NAME`` binds: a checked program with its graph, GCP and weights.

It only wires the core together (parse, compile, plan, train) and hands results to the views;
every number it shows is computed by the core's interpreter. The model computes, the views
render what it computed: a view reads the model (``views.base.Shown``) and calls none of its
methods; what a view shows beyond the program, the model computes first (``View.computes``).

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> net = TenFlangModel(SEED_EXAMPLE, "net")
>>> net
<TenFlang model 'net': 7 variables, 1 weight>
>>> result = net.train({"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}, max_iter=50)
>>> len(net.history), net.result is result, net.weights == result.weights
(51, True, True)
>>> net.evaluate([{"x": 0.0}])
#  x  o    lambda
0  0  0.5  null
>>> net.evaluate([{"x": 0.0}]) == [{"o": 0.5, "lambda": None}]
True
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import api
from ..core.arguments import ArgumentError, check_arguments, check_instance, check_name
from ..core.backprop import Gcp
from ..core.backprop_check import BackpropCheck
from ..core.bindings import as_examples, check_names, training_columns
from ..core.datafiles import DataTable
from ..core.edited import EditedGcp, edit_gcp
from ..core.errors import TenFlangError
from ..core.fusedlisting import Listing
from ..core.gradcheck import check_gradients
from ..core.grading import compiler_copy, not_answered
from ..core.graph import DataFlowGraph
from ..core.lexical import GIVEN_KINDS, split_lines
from ..core.plan import Plan, TraceStep, plain, trace
from ..core.program import Program
from ..core.settings import SETTINGS_ARGUMENT, TrainSettings
from ..core.train import GradientDescent, Record, TrainResult, Weights, initial_weights
from . import stepper, views
from .explorations import Explorations
from .grading_mode import GRADING
from .results import CheckReport, Cost, Evaluation, GradCheck
from .stepper import StepperRun
from .views import card, drawing
from .views.html import Rendered
from .views.listing import MAX_LISTED
from .views.step import stepper_view
from .views.values import ExampleValues, values_view

if TYPE_CHECKING:
    from .panel.widget import TrainingPanel

__all__ = ["CheckReport", "Cost", "Evaluation", "GradCheck", "TenFlangModel", "as_examples"]


def program_file(name: str) -> str:
    """The file name a model's program is read as, which its errors name: ``NAME.tf``."""
    return f"{name}.tf"


def _array(value: float | np.ndarray | None) -> np.ndarray | None:
    """A value as :meth:`TenFlangModel.values` gives it: an array (0-d for a scalar)."""
    return None if value is None else np.array(value)


class TenFlangModel(Explorations):
    """A TenFlang program ready to look at, train and evaluate.

    Attributes: ``name``, ``source`` (the cell), ``program`` (core ``Program``), ``graph``
    (``DataFlowGraph``), ``compiled`` (the pruned ``Gcp``; None without a loss), ``settings``
    (the ``TrainSettings`` training starts from), ``weights`` (name -> value), ``history``
    (training ``Record`` list), ``result`` (last ``TrainResult``), ``data`` (the last
    training data), ``panel`` (last training panel), ``costs`` (the last :meth:`cost`),
    ``test_data`` (the test data of the last training run, if it had any).

    In grading mode (``notebook/grading_mode.py``), for a model an exercise grades, what would
    hand over an answer raises a :class:`TenFlangError` saying so: the compiled forms, the
    values and adjoints on an example, the gradient check, the stepper's backward half (its
    forward half is shown), and training when an exercise asks for a trained number.
    ``withheld`` is then the message (None otherwise): the views read it.

    The compiled forms and grading mode's guards are :class:`CompiledForms`'s
    (``notebook/forms.py``); the landscape, the boundary, the curvature and the cost
    :class:`Explorations`'s (``notebook/explorations.py``).
    """

    def __init__(self, source: str, name: str = "model", settings: TrainSettings | None = None,
                 **options: Any) -> None:
        check_name("name", name)
        check_instance("settings", settings, TrainSettings | None, SETTINGS_ARGUMENT)
        self.name = name
        self.source = source
        self.settings = TrainSettings.of(settings, **options)
        self.program: Program = api.parse(source, program_file(name))
        self.graph = DataFlowGraph(self.program)
        # a program without a loss still has a graph and outputs; only gradients need one
        self._compiled: Gcp | None = (api.compile(self.program) if self.program.losses
                                      else None)
        self.costs: Cost | None = None
        self.weights: Weights = initial_weights(
            {w: self.program.shapes[w] for w in self.program.names("weight")},
            self.settings.init, self.settings.seed)
        self.history: list[Record] = []
        self.result: TrainResult | None = None
        self.data: DataTable | None = None
        self.panel: TrainingPanel | None = None

    # ------------------------------------------------------------------ training

    def trainer(self, data: Any, settings: TrainSettings | None = None, *, test: Any = None,
                **options: Any) -> GradientDescent:
        """A fresh core ``GradientDescent`` on ``data``, from this model's initial weights,
        with this model's ``settings`` changed by ``settings`` / ``options``; ``test``: test
        data, whose loss each record of the history also holds (``record.test_loss``)."""
        self._guard_training()
        self._guard("the trainer (it holds the GCP)")
        return self._trainer(data, settings, test=test, **options)

    def _trainer(self, data: Any, settings: TrainSettings | None = None, *, test: Any = None,
                 **options: Any) -> GradientDescent:
        check_instance("settings", settings, TrainSettings | None, SETTINGS_ARGUMENT)
        self._guard_training()
        chosen = TrainSettings.of(settings or self.settings, **options)
        held_out = None if test is None else as_examples(test, self.program)
        return api.trainer(self._gcp_program, as_examples(data, self.program), chosen,
                           test=held_out)

    def train(self, data: Any, settings: TrainSettings | None = None, *, test: Any = None,
              **options: Any) -> TrainResult:
        """Gradient descent to the end (blocking); keeps the weights and the history.
        ``test``: test data, its loss computed at every step (``record.test_loss``).

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> TenFlangModel(SEED_EXAMPLE).train({"x": [1.0], "y": [0.7]}, max_iter=3).iterations
        3
        """
        check_instance("settings", settings, TrainSettings | None, SETTINGS_ARGUMENT)
        table = as_examples(data, self.program)
        held_out = None if test is None else as_examples(test, self.program)
        t = self._trainer(table, settings, test=held_out, **options)
        with np.errstate(all="ignore"):
            t.run()
        self.adopt(t, table)
        self.test_data = held_out
        assert self.result is not None
        return self.result

    def training_panel(self, data: Any, settings: TrainSettings | None = None, *,
                       live: bool = True, landscape: bool = False, test: Any = None,
                       boundary: bool = False, **options: Any) -> TrainingPanel:
        """A training panel (sliders, Train/Stop/Reset, live loss curve) on ``data``;
        ``landscape=True`` ticks its box: the loss landscape with the path of descent beside
        the curve (as :meth:`landscape` draws it by default). ``test``: test data, its loss
        a dashed curve beside the training loss. A model with a two-component input and a
        scalar output gets a **boundary** box (``boundary=True`` ticks it): the output over
        the input plane with the training and test points, as :meth:`boundary` draws it. A
        model made by :meth:`with_gcp` also trains the true GCP, from the same start with the
        same settings, and draws its loss as a second curve.

        Each finished run updates ``weights``/``history``. Display it, then ``.start()``
        (live) or call ``.run_sync()`` first for one deterministic run.
        """
        check_instance("settings", settings, TrainSettings | None, SETTINGS_ARGUMENT)
        check_arguments(live=live, landscape=landscape, boundary=boundary)
        from .panel.widget import TrainingPanel  # widgets and matplotlib only when training

        self._guard_training()
        self._guard("the training panel (its trainers hold the GCP)")
        table = as_examples(data, self.program)
        held_out = None if test is None else as_examples(test, self.program)
        chosen = TrainSettings.of(settings or self.settings, **options)
        # built now so bad data raises here, where the caller can show it, not in the panel
        first = self.trainer(table, chosen, test=held_out)
        plane = self.boundary_evaluator(table, test=held_out, resolution=50) if (
            boundary or self._has_plane()) else None
        original = self._compiled.original if isinstance(self._compiled, EditedGcp) else None
        reference = None if original is None else api.trainer(
            original.program(), table, chosen, start=first.initial, test=held_out)

        def finished(trainer: GradientDescent) -> None:
            self.adopt(trainer, table)
            self.test_data = held_out

        self.panel = TrainingPanel(
            lambda s: self.trainer(table, s, test=held_out), chosen, trainer=first, live=live,
            landscape=landscape, boundary=plane, show_boundary=boundary, reference=reference,
            label="edited GCP" if reference else None, reference_label="true GCP",
            on_finish=finished)
        return self.panel

    def newton(self, data: Any, *, start: Weights | None = None, max_iter: int = 20,
               tol: float | None = None, cg_tol: float = 1e-10,
               cg_iterations: int | None = None) -> TrainResult:
        """Newton's method on ``data`` from this model's initial weights (or ``start``), as
        :meth:`train` starts: each step solves ``H d = -g`` by conjugate gradients on products
        ``H v`` (:meth:`hvp`), until ``|g| <= tol`` (default: the settings' tol) or
        ``max_iter`` steps; keeps the weights and the history, as training does.

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> net = TenFlangModel(SEED_EXAMPLE)
        >>> result = net.newton({"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}, tol=1e-8)
        >>> result.iterations, result.converged, round(net.weights["w"], 4)
        (7, True, 2.1408)
        """
        table = as_examples(data, self.program)
        weights = start if start is not None else initial_weights(
            {w: self.program.shapes[w] for w in self.weights}, self.settings.init,
            self.settings.seed)
        curvature = api.curvature(self.hvp_program, table, weights,
                                  engine=self.settings.engine)
        result = curvature.newton(max_iter, self.settings.tol if tol is None else tol,
                                  cg_tol, cg_iterations)
        self._keep(result, table)
        return result

    def adopt(self, trainer: GradientDescent, table: DataTable) -> None:
        """Keep a finished run's weights and history (and its data, for ``values(i)``)."""
        self._keep(trainer.result(), table)

    def _keep(self, result: TrainResult, table: DataTable) -> None:
        self.result = result
        self.weights = {w: plain(v) for w, v in result.weights.items()}
        self.history = list(result.history)
        self.data = table

    def training_summary(self) -> Rendered:
        """The last training run: iterations, final loss, convergence, weights."""
        return card.training_summary(self)

    # ------------------------------------------------------------------ running

    def evaluate(self, inputs: Any) -> Evaluation:
        """Outputs and loss for each input record with the current weights.

        ``inputs``: a dict of arrays, a list of dicts, a DataFrame, a file path, or one
        example as a dict of numbers. Displays as a table; it is a list of dicts.
        """
        table = as_examples(inputs, self.program)
        return Evaluation(api.evaluate(self.program, table, self.weights), table)

    def _data_names(self, program: Program) -> list[str]:
        return [n for n in program.names(*GIVEN_KINDS) if n not in self.weights]

    def values(self, example: Any = None) -> dict[str, tuple[Any, Any]]:
        """Each variable's value and adjoint ``d/L/d/v`` on one example (None: NULL, or no
        adjoint because the variable does not reach the loss).

        ``example``: an index into the training data (default 0) or a dict.
        """
        self._guard("the values and adjoints on an example (.values(), .show_values())")
        table = self.example(example)
        if len(table) != 1:
            raise TenFlangError.at(f"give one example, not {len(table)}", file=table.file)
        program = self._full_gcp_program if self._compiled is not None else self.program
        check_names(program, table, "the example", set(self._data_names(program)))
        data = {n: table.columns[n] for n in table.names if table.present[n][0]}
        adjoints = self.adjoints
        values = Plan(program).example({**data, **self.weights},
                                       [*self.graph.nodes, *adjoints.values()])
        return {v: (_array(values[v]), _array(values[adjoints[v]]) if v in adjoints else None)
                for v in self.graph.nodes}

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
        self._guard("the GCP's trace (.trace())")
        return self._trace(example)

    def _trace(self, example: Any) -> list[TraceStep]:
        table = self.example(example)
        if len(table) != 1:
            raise TenFlangError.at(f"give one example, not {len(table)}", file=table.file)
        program = self._gcp_program
        check_names(program, table, "the example", set(self._data_names(program)))
        data = {n: table.columns[n][0] for n in table.names if table.present[n][0]}
        return trace(program, {**data, **self.weights})

    def stepper(self, example: Any = None, *, predict: bool = False) -> Rendered:
        """Step through the GCP on one example, a line at a time: the graph and the GCP
        listing with a control bar (first, back, step, end, play/pause, a slider, the arrow
        keys); each value and adjoint appears on its node, a caption says what each line
        computes. Self-contained HTML: it needs no kernel once displayed.

        ``example``: as for :meth:`values` (an index into the training data, default 0, or
        the example itself). ``predict``: in the backward pass the stepper stops before
        each adjoint's value and asks for it (a number; for a tensor, one entry); a right
        answer reveals the line, a wrong one gets the hint of the usual mistake it matches.

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> TenFlangModel(SEED_EXAMPLE, "net").stepper({"x": 1.0, "y": 0.5})
        <TenFlang stepper of 'net' on {x: 1, y: 0.5}: 12 steps>
        >>> TenFlangModel(SEED_EXAMPLE, "net").stepper({"x": 1.5, "y": 0.2}, predict=True)
        <TenFlang stepper of 'net' on {x: 1.5, y: 0.2}: 12 steps, 4 to predict>
        """
        return stepper_view(self.stepper_run(example, predict=predict), self.source)

    def stepper_run(self, example: Any = None, *, predict: bool = False) -> StepperRun:
        """What the stepper shows: the GCP run on one example (:meth:`trace`), each line
        explained (its node, edges, caption, numbers; see ``notebook/stepper.py``), and with
        ``predict`` the questions of predict mode (``notebook/predict.py``). For a model
        grading mode grades, the forward half only (``run.withheld`` says why): no line,
        question or hint of the backward pass.

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> run = TenFlangModel(SEED_EXAMPLE, "net").stepper_run({"x": 1.0, "y": 0.5})
        >>> run.example, len(run.steps), run.steps[0].caption
        ('{x: 1, y: 0.5}', 12, 'z = x × w: forward pass (mul: product (elementwise for tensors))')
        """
        check_arguments(predict=predict)
        gcp, steps = self._need_gcp(), self._trace(example)
        withheld = GRADING.withheld(self.name, self.source, "the backward pass")
        if withheld is not None:  # the forward half only: the lines before the backward pass
            cut = max(i for i, line in enumerate(gcp.lines) if line.section == "forward") + 1
            gcp = dataclasses.replace(gcp, lines=gcp.lines[:cut])
            steps = [t for t in steps if t.line <= cut]
        return stepper.stepper_run(
            name=self.name, gcp=gcp, program=self.program, graph=self.graph,
            trace=steps, record=self.example(example).record(0), weights=self.weights,
            listed_lines=MAX_LISTED, predict=predict, withheld=withheld or "")

    def fusion(self, example: Any = None, *, examples: int = 10_000) -> Listing:
        """What the ``fusion`` view shows: how the fused engine runs the GCP in training on
        ``examples`` examples (``example`` is not used: the schedule is the same for every
        example). Loads the fused engine; its ``text()`` lists every instruction. Withheld
        in grading mode, as the GCP is (its lines are the GCP's)."""
        self._guard("the fused program (fusion)")
        return api.fusion(self._need_gcp(), examples)

    def show_values(self, example: Any = None) -> Rendered:
        """The graph with each node's value and gradient ``d/L/d/v`` on one example.

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> TenFlangModel(SEED_EXAMPLE, "net").show_values({"x": 1.0, "y": 0.5})
        <TenFlang values of 'net' on {x: 1.0, y: 0.5}>
        """
        return values_view(self, self.values_on(example))

    def values_on(self, example: Any = None) -> ExampleValues:
        """What the ``values`` view shows: each variable's value and adjoint on one example
        (:meth:`values`), with the example and which variables have an adjoint."""
        table = self.example(example)
        index = (example or 0) if isinstance(example, int | None) else None
        return ExampleValues(table.record(0), index, self.values(table), set(self.adjoints),
                             self.loss)

    def gradcheck(self, example: Any = None, *, eps: float = 1e-6, rtol: float = 1e-4,
                  atol: float = 1e-7, max_components: int = 20) -> GradCheck:
        """Compare the GCP's gradient with central finite differences of the loss.

        ``example``: an index into the training data (default 0), a dict, or several
        examples (then the mean loss, as training uses). At most ``max_components`` entries
        of each tensor weight are checked. A component agrees when it is within ``rtol`` of
        the central difference, or ``atol`` where that is about 0, and both are finite (the
        package's one rule, ``core.agreement``); a row says which side was NaN or infinite.
        Displays as a table; ``.ok`` says if all agree.

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> TenFlangModel(SEED_EXAMPLE).gradcheck({"x": 1.5, "y": 0.2}).ok
        True
        """
        self._guard("the gradient check (.gradcheck())")
        gcp = self._need_gcp()
        table = self.example(example)
        names = list(self.weights)
        if not names:
            raise TenFlangError.at(f"'{self.name}' has no weights to check",
                                   file=self.program.file)
        columns = training_columns(self._gcp_program, table, names,
                                   [gcp.loss, *gcp.gradient_names().values()])
        rows, skipped = check_gradients(
            self.program, self._gcp_program, gcp.loss, columns, len(table), self.weights,
            eps=eps, rtol=rtol, atol=atol, max_components=max_components)
        return GradCheck(rows, eps, rtol, skipped)

    def check_backprop(self, text: str, *, require: Any = None, draws: int = 5,
                       seed: int | None = None, grading: bool | None = None) -> CheckReport:
        """Check backward lines written by hand (``d/L/d/v`` definitions and any helpers)
        against this model's GCP on ``draws`` random draws of the inputs and weights.

        ``require``: the adjoints that must be written for ``.ok`` (``d/L/d/w`` or ``w``;
        default: all the weights' gradients need). ``seed`` of the draws: default 0, or the
        student's own once grading has started (``tf.grading.start``). The result has
        ``.ok``, ``.first_wrong_line`` (1-based in ``text``; None when all is right),
        ``.lines``, ``.adjoints``, ``.report()``, and displays as HTML. Text that still holds
        nbgrader's stub is "not answered yet"; in grading mode (``grading``; default: when an
        exercise grades this model), the compiler's backward pass pasted is refused and no
        hint spells out the compiler's formula.

        >>> sq = TenFlangModel("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n", "sq")
        >>> r = sq.check_backprop("define d/L/d/w = w")
        >>> r.ok, r.first_wrong_line
        (False, 1)
        """
        check_instance("the backward pass", text, str, "text (a str)")
        check_arguments(grading=grading)
        gcp = self._need_gcp()
        if seed is None:
            seed = GRADING.seed(f"check/{self.name}") or 0
        file = f"{self.name} (your backward pass)"
        if grading is None:
            grading = self.withheld is not None
        refused = not_answered(text, file, gcp.loss)
        if refused is None and grading:
            copied = compiler_copy(text, [gcp, self._compiled_full])
            if copied is not None:
                refused = TenFlangError.at(
                    copied.why, file=file, line=copied.line, column=copied.column,
                    length=copied.length, source=split_lines(text)[copied.line - 1],
                    hint="grading mode refuses it: write the backward pass yourself, one line "
                         "of the model at a time")
        if refused is not None:
            required = require if isinstance(require, list | tuple) else []
            return CheckReport.of(BackpropCheck.failed(self.name, file, gcp.loss, text,
                                                       refused, required))
        result = api.check_backprop(self.program, text, require=require, draws=draws,
                                    seed=seed, name=self.name, formulas=not grading)
        return CheckReport.of(result)

    # ------------------------------------------------------------------ an edited GCP

    def with_gcp(self, text: str, name: str | None = None) -> TenFlangModel:
        """A variant of this model that trains with ``text``, this model's GCP edited by hand
        (a fan-out term deleted, a sign flipped...): its ``gcp`` is the edited one, and
        ``train``, ``training_panel``, ``gradcheck`` and ``trace`` use it.

        The text is parsed like any program (errors name ``NAME (edited GCP)`` and the line)
        and must keep the GCP's interface: its inputs, the loss, an output ``d/L/d/w`` for
        every weight. ``gradcheck`` then names the weights whose gradient the edit broke
        (against finite differences of the unedited shape program's loss); the training
        panel draws the true GCP's run beside the edited one; ``landscape(paths=...)`` shows
        where the wrong gradient walks. ``name``: the variant's (default ``NAME_edited``).
        Grading mode withholds it for a model an exercise grades (the edit shows the GCP).

        >>> sq = TenFlangModel("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n",
        ...                    "sq")
        >>> broken = sq.with_gcp(sq.gcp.replace("add w w", "w"))
        >>> broken.gcp.splitlines()[10], broken.compiled.changed
        ('define d/L/d/w = w', (11,))
        >>> broken.weights["w"] = 1.0
        >>> check = broken.gradcheck({})
        >>> check.ok, check.wrong, round(check[0]["gcp"], 3), round(check[0]["numeric"], 3)
        (False, ['w'], 1.0, 2.0)
        """
        (text,) = check_arguments(text=text)
        name = f"{self.name}_edited" if name is None else check_name("name", name)
        # the edit's diff shows the compiled GCP's lines: grading mode withholds it
        self._guard("the GCP, to edit (.with_gcp(), %%tenflang_gcp)")
        compiled = self._need_gcp()
        if isinstance(compiled, EditedGcp) and compiled.original is not None:
            compiled = compiled.original  # an edit of an edit: still against the true GCP
        edited = edit_gcp(compiled, text, f"{self.name} (edited GCP)")
        variant = copy.copy(self)
        for cached in ("_gcp_program", "_compiled_hvp", "_hvp_program"):
            variant.__dict__.pop(cached, None)  # the edited GCP's, when first asked for
        variant.name = name
        variant._compiled = edited
        variant.weights = initial_weights(
            {w: self.program.shapes[w] for w in self.program.names("weight")},
            self.settings.init, self.settings.seed)
        variant.history, variant.result, variant.data, variant.test_data = [], None, None, None
        variant.panel, variant.costs = None, None
        return variant

    # ------------------------------------------------------------------ display

    def show(self, which: str | list[str] | None = None, *, full: bool = False,
             example: Any = None, predict: bool = False) -> Rendered:
        """The views by name, as the magic's ``--show`` (default: the default views;
        ``views.describe_views()`` lists them). ``predict``: the stepper in predict mode.

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> TenFlangModel(SEED_EXAMPLE, "net").show("order")
        <TenFlang views of 'net': order>
        """
        check_arguments(full=full, predict=predict)
        if not isinstance(which, str | None):  # a list of names: as one text, checked alike
            check_instance("which", which, list | tuple, "view names (a str or a list of them)")
            which = ",".join(check_instance("which", name, str, "view names") for name in which)
        try:
            names = views.parse_views(which)
        except ValueError as exc:
            raise ArgumentError(str(exc)) from None
        given = {"predict": predict}
        computed = {}
        for name in names:  # the model computes; the views only render what it hands them
            view = views.VIEWS[name]
            if view.computes is not None:
                options = {k: given[k] for k in view.options}
                try:
                    computed[name] = getattr(self, view.computes)(example, **options)
                except TenFlangError as err:
                    computed[name] = err
        return views.program_view(self, names, full=full, example=example, computed=computed)

    def dot(self) -> str:
        """The data-flow graph as Graphviz DOT text."""
        return drawing.dot_source(self.program, self.graph)

    def __repr__(self) -> str:
        n_vars = len(self.program.decls)
        n_w = len(self.weights)
        return (f"<TenFlang model '{self.name}': {n_vars} variable{'s' * (n_vars != 1)}, "
                f"{n_w} weight{'s' * (n_w != 1)}>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": repr(self), "text/html": card.model_html(self)}

    def _repr_html_(self) -> str:
        return card.model_html(self)
