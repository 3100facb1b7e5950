"""What a model offers to explore beyond training and running it: the loss landscape, the
decision boundary, the curvature (H v, the top eigenvalue) and the cost of a gradient in
forward and reverse mode; the part of :class:`~tenflang_nb.notebook.model.TenFlangModel`
that computes them, on the data it is asked about (an example, the training data).

Each method computes with the core and returns numbers, or draws them (matplotlib, off-screen,
imported only when drawing); the figures read what was computed, never the model.

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.notebook.model import TenFlangModel
>>> net = TenFlangModel(SEED_EXAMPLE)
>>> _ = net.train({"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}, lr=2, max_iter=20)
>>> net.landscape_data(resolution=3).loss.shape, net.curvature().top_eigenvalue().value > 0
((3,), True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import api
from ..core.arguments import check_arguments, check_instance, check_limits
from ..core.bindings import as_examples, training_columns
from ..core.boundary import Boundary, BoundaryEvaluator, plane_inputs
from ..core.cost import compare_modes
from ..core.curvature import Curvature
from ..core.datafiles import DataTable, from_records
from ..core.errors import TenFlangError
from ..core.landscape import Landscape, LossEvaluator, path_of, plane_for, plane_through
from ..core.landscape import landscape as compute_landscape
from ..core.train import Weights
from .forms import CompiledForms
from .results import Cost

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["Explorations"]


class Explorations(CompiledForms):
    """The landscape, the boundary, the curvature and the cost of a model at its ``weights``,
    by default on its training ``data`` (and ``test_data``); ``cost`` keeps its result in
    ``costs``."""

    weights: Weights
    data: DataTable | None
    test_data: DataTable | None = None
    costs: Cost | None

    # ------------------------------------------------------------------ the data asked about

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

    def _data_table(self, data: Any) -> DataTable:
        """``data`` as examples; None: the data of the last training run."""
        table = self.data if data is None else as_examples(data, self.program)
        if table is None:
            raise TenFlangError.at(
                f"'{self.name}' has no training data yet: train it first, or give data=...",
                file=self.program.file)
        return table

    # ------------------------------------------------------------------ the cost of a gradient

    def cost(self, data: Any = None, *, examples: int = 100, budget: float = 0.2) -> Cost:
        """What one gradient costs in forward mode and in reverse mode: sweeps, lines
        executed, numbers kept in memory (counted), and the time per gradient (measured by
        running both programs, ``budget`` seconds each at least, on the same ``examples``
        examples: from ``data``, else the training data, else random values). Displays as
        a table; the numbers are attributes. Also kept as ``costs`` (the ``cost`` view).
        With many weight components, forward mode's time comes from a sample of its sweeps
        (``.timing_note`` says so); a measurement too big for memory is refused, saying how
        many ``examples`` fit.

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> from tenflang_nb.notebook.model import TenFlangModel
        >>> c = TenFlangModel(SEED_EXAMPLE).cost(examples=4, budget=0.0)
        >>> c.forward.sweeps, c.reverse.sweeps, c.forward.lines, c.reverse.lines
        (1, 1, 9, 10)
        """
        gcp = self._need_gcp()
        if not self.weights:
            raise TenFlangError.at(f"'{self.name}' has no weights: there is no gradient to "
                                   "cost", file=self.program.file)
        table = self.data if data is None else as_examples(data, self.program)
        comparison = compare_modes(self.program, table, self.weights, examples=examples,
                                   budget=budget, gcp=gcp)
        self.costs = Cost.of(comparison)
        return self.costs

    # ------------------------------------------------------------------ curvature

    def curvature(self, data: Any = None) -> Curvature:
        """The curvature of the mean loss over ``data`` (default: the data of the last
        training run; an index: that training example) at the current weights, from the
        Hessian-vector program: ``.hvp(v)``, ``.gradient()``, ``.top_eigenvalue()`` (the
        largest eigenvalue of the Hessian by power iteration; ``.lr_limit`` is 2 / it) and
        ``.newton()``.

        >>> from tenflang_nb.notebook.model import TenFlangModel
        >>> lin = TenFlangModel("declare input x\\ndeclare weight a\\ndeclare loss L\\n"
        ...                     "declare intvar e\\ndefine e = mul a x\\ndefine L = mul e e\\n")
        >>> lin.curvature({"x": [1.0, 2.0]}).top_eigenvalue().value  # the mean of 2 x^2
        5.0
        """
        self._need_gcp()
        if not self.weights:
            raise TenFlangError.at(f"'{self.name}' has no weights: its loss has no gradient, "
                                   "so no Hessian", file=self.program.file)
        if isinstance(data, int | np.integer) and not isinstance(data, bool):
            table = self.example(data)
        else:
            table = self._data_table(data)
        return api.curvature(self.hvp_program, table, self.weights,
                             engine=self.settings.engine)

    def hvp(self, v: Weights, data: Any = None) -> Weights:
        """The Hessian of the mean loss over ``data`` (as :meth:`curvature` takes it) times
        the direction ``v`` (a value for each weight), at the current weights: one run of
        the Hessian-vector program (:attr:`compiled_hvp`).

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> from tenflang_nb.notebook.model import TenFlangModel
        >>> TenFlangModel(SEED_EXAMPLE).hvp({"w": 1.0}, {"x": [2.0], "y": [0.5]})
        {'w': 0.5}
        """
        return self.curvature(data).hvp(v)

    # ------------------------------------------------------------------ the loss landscape

    def loss_evaluator(self, data: Any = None) -> LossEvaluator:
        """The mean loss over ``data`` (default: the data of the last training run) at any
        weights, many settings at a time (``.losses(points)``; see ``core.landscape``)."""
        loss = self._need_gcp().loss
        table = self._data_table(data)
        weights = self.program.names("weight")
        columns = training_columns(self.program, table, weights, [loss])
        return LossEvaluator(self.program, columns, len(table), weights, loss,
                             engine=self.settings.engine)  # the engine training uses

    def landscape_data(self, along: Any = None, *, through: Any = None, seed: int = 0,
                       resolution: int | None = None, limits: Any = None, data: Any = None,
                       paths: Mapping[str, Any] | None = None) -> Landscape:
        """The numbers :meth:`landscape` draws: the grid's coordinates (``.grid``), the mean
        loss at each grid point (``.loss``), the slice (``.plane``) and the paths
        (``.paths``: each with ``.iterations``, ``.coords``, ``.loss``, ``.distance``).

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> from tenflang_nb.notebook.model import TenFlangModel
        >>> net = TenFlangModel(SEED_EXAMPLE)
        >>> _ = net.train({"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}, lr=2, max_iter=20)
        >>> land = net.landscape_data(resolution=5)
        >>> land.plane.labels, land.loss.shape, len(land.paths[0])
        (('w',), (5,), 21)
        """
        check_arguments(seed=seed, resolution=resolution)
        if through is not None:
            check_instance("through", through, Mapping | list | tuple,
                           "two or three weight settings (a list, or a dict naming them)")
        if paths is not None:
            check_instance("paths", paths, Mapping, "a dict of runs ({label: model, "
                           "TrainResult or list of Records})")
        evaluator = self.loss_evaluator(data)
        layout = evaluator.layout
        if through is not None:
            if along is not None:
                raise TenFlangError.at("give along= or through=, not both")
            if isinstance(through, Mapping):
                points = {str(k): getattr(v, "weights", v) for k, v in through.items()}
                plane = plane_through(layout, points)
            else:
                plane = plane_through(layout, [getattr(v, "weights", v) for v in through])
        else:
            if isinstance(along, str):
                along = [along]
            plane = plane_for(layout, self.weights, along, seed=seed)
        runs = {self.name: self} if paths is None else dict(paths)
        drawn = [path_of(plane, layout, run, str(label),
                         current=self.weights if run is self else None)
                 for label, run in runs.items()]
        return compute_landscape(evaluator, plane, drawn, resolution=resolution, limits=limits)

    def landscape(self, along: Any = None, *, through: Any = None, seed: int = 0,
                  resolution: int | None = None, limits: Any = None, data: Any = None,
                  paths: Mapping[str, Any] | None = None, log: bool | None = None,
                  title: str | None = None) -> Figure:
        """The loss landscape with the path of descent, as a matplotlib figure (shown as a
        PNG; made without pyplot, so your own figures are untouched).

        With one weight, the loss against it with the descent steps on the curve; with two,
        contours over both with the path. With more, a slice through the current (final)
        weights: ``along=("W1[0, 3]", "b2[1]")`` varies two weight components (one gives a
        curve), the default two random filter-normalised directions (Li et al. 2018) drawn
        with ``seed``, with the path projected onto the slice (the figure says how far off
        it the path runs). ``through=[w_a, w_b(, w_c)]`` (or ``{name: weights or model}``)
        draws the line or plane through those weight settings instead.

        ``paths``: the runs to draw, ``{label: model, TrainResult or list of Records}``
        (default: this model's last run, from its history; a long run keeps a thinned-out
        set of weight snapshots, the first and last always). ``resolution`` grid points
        per axis (201 for a curve, 50 for contours); ``limits`` (low, high) per axis (default:
        the path with a margin, and at least [-1, 1] for directions); ``data`` (default: the
        training data); ``log`` a logarithmic loss scale (default: when it spans more than
        three decades). ``.landscape`` on the figure holds the numbers
        (:meth:`landscape_data`).

        >>> from tenflang_nb.core.examples import SEED_EXAMPLE
        >>> from tenflang_nb.notebook.model import TenFlangModel
        >>> net = TenFlangModel(SEED_EXAMPLE)
        >>> _ = net.train({"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}, lr=2, max_iter=20)
        >>> fig = net.landscape()
        >>> fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel()
        ('w', 'mean loss lambda')
        """
        check_arguments(log=log, title=title)
        from .figures.landscape import landscape_figure  # matplotlib only when drawing

        land = self.landscape_data(along, through=through, seed=seed, resolution=resolution,
                                   limits=limits, data=data, paths=paths)
        return landscape_figure(land, title=title, log=log)

    # ------------------------------------------------------------------ decision boundary

    def _has_plane(self) -> bool:
        try:
            plane_inputs(self.program)
        except TenFlangError:
            return False
        return True

    def boundary_evaluator(self, data: Any = None, *, test: Any = None,
                           output: str | None = None, resolution: int | None = None,
                           limits: Any = None) -> BoundaryEvaluator:
        """The output over the input plane at any weights (``.at(weights)``), for a model
        whose input is one ``input x [2]`` or two scalar inputs; see :meth:`boundary`."""
        check_arguments(output=output, resolution=resolution)
        check_limits(limits, 2)
        table = self._data_table(data)
        held_out = self.test_data if test is None and data is None else (
            None if test is None else as_examples(test, self.program))
        return BoundaryEvaluator(self.program, plane_inputs(self.program, output), table,
                                 held_out, resolution=resolution, limits=limits)

    def boundary_data(self, data: Any = None, *, test: Any = None, output: str | None = None,
                      resolution: int | None = None, limits: Any = None) -> Boundary:
        """The numbers :meth:`boundary` draws: the grid (``.xs``, ``.ys``), the output on it
        (``.output``), the points (``.train``, ``.test``: ``.xy``, ``.labels``,
        ``.output``), ``.classes``, ``.level`` and the accuracies.

        >>> from tenflang_nb import datasets
        >>> from tenflang_nb.notebook.model import TenFlangModel
        >>> net = TenFlangModel("declare input x [2]\\ndeclare exp_output y\\n"
        ...     "declare weight w [2]\\ndeclare output o\\ndeclare intvar z\\n"
        ...     "declare intvar e\\ndeclare loss L\\ndefine z = matmul x w\\n"
        ...     "define o = logistic z\\ndefine e = sub o y\\ndefine L = mul e e\\n")
        >>> train, test = datasets.blobs(100, test=0.2)
        >>> _ = net.train(train, test=test, lr=2, max_iter=100)
        >>> b = net.boundary_data(resolution=20)
        >>> b.output.shape, b.level, b.train_accuracy > 0.9, len(b.test.xy)
        ((20, 20), 0.5, True, 20)
        """
        return self.boundary_evaluator(data, test=test, output=output, resolution=resolution,
                                       limits=limits).at(self.weights)

    def boundary(self, data: Any = None, *, test: Any = None, output: str | None = None,
                 resolution: int | None = None, limits: Any = None, title: str | None = None
                 ) -> Figure:
        """The decision boundary, as TensorFlow Playground draws it: the model's scalar
        output over the plane of its two input components (a heatmap, with a black line
        where it crosses midway between the two classes), the training points (circles) and
        the test points (triangles) coloured by class, as a matplotlib figure (a PNG).

        For a model whose input is one ``input x [2]`` or two scalar inputs. ``data``:
        the points (default: the last training data, and its test data), any data with the
        input column(s) (a file, a ``datasets`` set, a dict of columns); ``test``: test
        points; ``output``: which output, when there are several; ``resolution`` grid
        points per axis (default 60); ``limits`` ((x_low, x_high), (y_low, y_high)), by
        default the points' extent with a margin. ``.boundary`` on the figure holds the
        numbers (:meth:`boundary_data`).
        """
        check_arguments(title=title)
        from .figures.boundary import boundary_figure  # matplotlib only when drawing

        return boundary_figure(self.boundary_data(data, test=test, output=output,
                                                  resolution=resolution, limits=limits),
                               title=title)
