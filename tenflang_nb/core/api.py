"""The documented Python API: the three phases as plain functions.

>>> from tenflang_nb.core.api import parse, compile, train, evaluate
>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> program = parse(SEED_EXAMPLE)
>>> gcp = compile(program)
>>> result = train(gcp, {"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}, max_iter=50)
>>> len(result.history), result.converged
(51, False)
>>> evaluate(program, [{"x": 0.0}], result.weights)
[{'o': 0.5, 'lambda': None}]
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from . import bindings, fused
from .arguments import check_arguments, check_instance
from .backprop import Gcp, compile_program
from .datafiles import DataTable
from .errors import TenFlangError
from .forward import ForwardProgram
from .forward import compile_forward as compile_forward_program
from .graph import Step
from .graph import steps as program_steps
from .hvp import HvpProgram
from .hvp import compile_hvp as compile_hvp_program
from .lexical import GIVEN_KINDS, direction_name, tangent_name
from .plan import Plan, interpret, plain
from .preprocess import preprocess_text
from .program import Program, ancestors, check, parse
from .settings import SETTINGS, TrainSettings
from .textio import read_text
from .train import GradientDescent, TrainResult, Weights, gcp_weights, initial_weights

if TYPE_CHECKING:  # what the names imported on first use are, for type checkers and editors
    from .backprop_check import BackpropCheck
    from .cost import ModeComparison, compare_modes
    from .curvature import Curvature, Eigen
    from .fusedlisting import Listing
    from .random_programs import RandomProgram, random_programs

# The checker, the cost of modes, curvature (and the landscape), the fusion listing and random
# programs are imported on first use: a command that trains (tfweightcalc) starts without
# them, 50-65 ms of CPU sooner (a fifth of its start-up beyond numpy's).
_ON_FIRST_USE = {"BackpropCheck": ".backprop_check", "ModeComparison": ".cost",
                 "compare_modes": ".cost", "Curvature": ".curvature", "Eigen": ".curvature",
                 "Listing": ".fusedlisting", "RandomProgram": ".random_programs",
                 "random_programs": ".random_programs"}

__all__ = [
    "BackpropCheck", "Curvature", "DataTable", "Eigen", "ForwardProgram", "Gcp",
    "GradientDescent", "HvpProgram", "ModeComparison", "Program", "RandomProgram", "Step",
    "TenFlangError", "TrainResult", "TrainSettings", "check", "check_backprop", "compare_modes",
    "compile", "compile_forward", "compile_hvp", "curvature", "evaluate", "first_nonfinite",
    "gcp_weights", "initial_weights", "interpret", "load_data", "parse", "parse_file",
    "preprocess", "random_programs", "steps", "train", "trainer",
]


def parse_file(path: str | os.PathLike[str]) -> Program:
    """Read and parse a TenFlang file (errors name the file and line)."""
    return parse(read_text(path), os.fspath(path))


def preprocess(text: str, file: str = "<program>") -> str:
    """The program with the original's vectors and macros expanded (``tfcompiler --expand``).

    >>> print(preprocess("declare_vector input x 2\\n"), end="")
    declare input x.0
    declare input x.1
    """
    return preprocess_text(text, file)


def steps(program: Program | str) -> list[Step]:
    """A program's lines (or its text's) as an engine written by hand reads them, in
    topological order: each :class:`Step` has its ``target``, ``op`` (None for a copy),
    ``operands`` (names, and floats for constants) and ``line``. Evaluate one with
    ``tf.ops.value(step.op, ...)``, differentiate it with ``tf.ops.local_partials`` (notebook
    07).

    >>> [str(s) for s in steps("declare input x\\ndeclare loss L\\ndefine L = mul x x\\n")]
    ['define L = mul x x']
    """
    return program_steps(_shape_program(program))


def compile(program: Program | str, full: bool = False) -> Gcp:
    """Compile a shape program (or its text) to its Gradient Computing Program.

    ``full`` keeps every partial (as the seed's example does); the default emits only what
    some weight's gradient needs.
    """
    (full,) = check_arguments(full=full)
    return compile_program(_shape_program(program), full=full)


def _shape_program(program: Program | str) -> Program:
    if isinstance(program, str):
        return parse(program)
    return check_instance("program", program, Program, "a Program or its text")


def compile_forward(program: Program | str) -> ForwardProgram:
    """Compile a shape program (or its text) to its forward-mode program
    (``tfcompiler --forward``): the same outputs ``d/L/d/w`` as the GCP, computed by one
    forward sweep per weight component. It trains like a GCP (``train(forward, data)``).

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> forward = compile_forward(SEED_EXAMPLE)
    >>> len(forward.sweeps), forward.gradient_names()
    (1, {'w': 'd/lambda/d/w'})
    """
    return compile_forward_program(_shape_program(program))


def compile_hvp(program: Program | Gcp | str) -> HvpProgram:
    """Compile a shape program (or its text, or its GCP) to its Hessian-vector program
    (``tfcompiler --hvp``): the GCP, then the derivative along a direction ``v/<w>`` (one
    input per weight) of every value the gradients need; its outputs ``dv/d/L/d/w``,
    averaged over examples, are H v.

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> hvp = compile_hvp(SEED_EXAMPLE)
    >>> hvp.directions, hvp.hvp_names(), hvp.gradient_names()
    ({'w': 'v/w'}, {'w': 'dv/d/lambda/d/w'}, {'w': 'd/lambda/d/w'})
    """
    if isinstance(program, str):
        program = parse(program)
    return compile_hvp_program(check_instance("program", program, Program | Gcp,
                                              "a Program, its Gcp or its text"))


def curvature(program: Program | Gcp | str, data: Any, weights: Weights, *,
              engine: str = "auto") -> Curvature:
    """The curvature of the mean loss over ``data`` at ``weights``: ``.hvp(v)`` (H v),
    ``.gradient()``, ``.top_eigenvalue()`` (power iteration) and ``.newton()`` (Newton's
    method by conjugate gradients), each from runs of the Hessian-vector program, on the
    ``engine`` training would use (the training setting).

    ``program``: a shape program (or its text, or its GCP), compiled with
    :func:`compile_hvp`; or a Hessian-vector program (an :class:`HvpProgram`, or parsed).

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> c = curvature(SEED_EXAMPLE, {"x": [1.0, -1.0], "y": [0.9, 0.1]}, {"w": 0.0})
    >>> round(c.top_eigenvalue().value, 6), round(c.hvp({"w": 2.0})["w"], 6)
    (0.125, 0.25)
    """
    from .curvature import Curvature

    engine = SETTINGS["engine"].check(engine)
    if isinstance(program, HvpProgram):
        hvp_program = program.program()
    elif isinstance(program, Program) and any(direction_name(w) in program.decls
                                                for w in program.names("input")):
        hvp_program = program
    else:
        hvp = compile_hvp(program)
        if not hvp.weights:
            raise TenFlangError.at(f"{hvp.shape.file} has no weights: its loss has no gradient, "
                                   "so no Hessian", file=hvp.shape.file)
        hvp_program = hvp.program()
    table = load_data(data)
    loss, grads = gcp_weights(hvp_program)
    hv = [tangent_name(g) for g in grads.values()]
    columns = bindings.training_columns(
        hvp_program, table, [*grads, *(direction_name(w) for w in grads)],
        [loss, *grads.values(), *hv])
    return Curvature(hvp_program, columns, len(table), weights, engine=engine)


def check_backprop(shape: Program | str, text: str, *, require: Any = None,
                   draws: int = 5, seed: int = 0, name: str | None = None,
                   formulas: bool = True) -> BackpropCheck:
    """Check backward lines written by hand for ``shape`` (a program or its text) against
    the compiler's GCP, line by line, on ``draws`` random draws of the inputs and weights.

    The result has ``.ok``, ``.first_wrong_line`` (the root wrong line, 1-based in ``text``,
    or None), ``.lines`` and ``.adjoints`` (each right, wrong or missing) and ``.report()``.
    ``require``: the adjoints ``ok`` needs (default: all the weights' gradients need).
    ``formulas=False``: no hint spells out the compiler's formula (grading mode).

    >>> r = check_backprop("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n",
    ...                    "define d/L/d/w = mul 2 w")
    >>> r.ok, r.first_wrong_line, r.right
    (True, None, ['d/L/d/w'])
    """
    from .backprop_check import check_backprop as _check_backprop

    program = parse(shape) if isinstance(shape, str) else shape
    return _check_backprop(program, text, require=require, draws=draws, seed=seed, name=name,
                           formulas=formulas)


def load_data(data: Any, file: str = "<data>") -> DataTable:
    """Data from a path (str / PathLike) or from Python values; see ``bindings.as_table``."""
    return bindings.load(data, file)


def _gcp_program(gcp: Gcp | Program | str) -> Program:
    if isinstance(gcp, Gcp):
        return gcp.program()
    if isinstance(gcp, str):
        return parse(gcp, "<GCP>")
    return check_instance("gcp", gcp, Program, "a Gcp, a Program or its text")


def trainer(gcp: Gcp | Program | str, data: Any, settings: TrainSettings | None = None, *,
            start: Weights | None = None, test: Any = None, **options: Any) -> GradientDescent:
    """A :class:`GradientDescent` bound to the training ``data`` (not yet run).

    ``options`` (``lr=0.5``, ...) change ``settings`` (default: :class:`TrainSettings`());
    ``start`` gives initial weights instead of ``settings.init``; ``test``: test data, whose
    mean loss every record of the history also holds (``record.test_loss``).

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> t = trainer(compile(SEED_EXAMPLE), {"x": [1.0], "y": [0.9]}, test={"x": [2.0], "y": [0.5]},
    ...             max_iter=2)
    >>> [round(r.test_loss, 4) for r in t.run().history]
    [0.0, 0.0001, 0.0004]
    """
    chosen = TrainSettings.of(settings, **options)  # checked before any data is read
    gcp_program = _gcp_program(gcp)
    if start is not None:
        check_instance("start", start, Mapping, "a dict of weights (or None)")
    table = load_data(data)
    loss, grads = gcp_weights(gcp_program)
    columns = bindings.training_columns(gcp_program, table, list(grads),
                                        [loss, *grads.values()])
    held_out = None
    if test is not None:
        test_table = load_data(test, "<test data>")
        held_out = (bindings.training_columns(gcp_program, test_table, list(grads), [loss]),
                    len(test_table))
    return GradientDescent(gcp_program, columns, len(table), chosen, start, held_out)


def fusion(gcp: Gcp | Program | str, examples: int = 10_000) -> Listing:
    """How the fused engine runs ``gcp`` in training on ``examples`` examples: which lines
    go through one pass over blocks of examples, what stays in cache, what goes to BLAS
    (``Listing.passes``; ``Listing.text()`` lists every instruction). Loads numba.

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> [p.how for p in fusion(compile(SEED_EXAMPLE)).passes]  # doctest: +SKIP
    ['block loop']
    >>> fusion(compile(SEED_EXAMPLE), examples=0)
    Traceback (most recent call last):
    ...
    tenflang_nb.core.arguments.ArgumentError: error: examples must be an integer from 1 to \
1,000,000, not 0
    """
    program = _gcp_program(gcp)
    (n,) = check_arguments(examples=examples)
    vm = fused.load(wait=True)
    if vm is None:
        raise TenFlangError.at(f"the fused engine is unavailable here: {fused.status()}")
    loss, grads = gcp_weights(program)
    shapes = program.shapes
    # the weights are the same for every example, the rest is data
    data = {name: np.zeros(shapes[name] if name in grads else (n, *shapes[name]))
            for name in program.names(*GIVEN_KINDS)}
    run = fused.FusedEngine(vm).bind(Plan(program), data, n, [*grads.values(), loss], set())
    from .fusedlisting import listing

    return listing(run)


def train(gcp: Gcp | Program | str, data: Any, settings: TrainSettings | None = None, *,
          start: Weights | None = None, test: Any = None, **options: Any) -> TrainResult:
    """Gradient descent to convergence (see :func:`trainer` and :class:`TrainSettings`)."""
    return trainer(gcp, data, settings, start=start, test=test, **options).run()


def evaluate(program: Program, inputs: Any, weights: Weights | None = None
             ) -> list[dict[str, Any]]:
    """Run ``program`` once per input record with ``weights``: its output and loss values.

    Inputs of kind ``input`` and the weights are required; a missing ``exp_output`` is NULL
    (so the loss is None). Examples are run together, grouped by which values are NULL.
    """
    check_instance("program", program, Program, "a Program")
    if weights is not None:
        check_instance("weights", weights, Mapping, "a dict of weights (or None)")
    table = load_data(inputs)
    from_data = weights is None  # the input records carry the weights themselves
    weights = dict(weights or {})
    for name in weights:
        if name not in program.decls or program.kind(name) not in GIVEN_KINDS:
            raise TenFlangError.at(f"'{name}' is not a weight of {program.file}")
    data_names = [n for n in program.names(*GIVEN_KINDS) if n not in weights]
    bindings.check_names(program, table, "the inputs", set(data_names))
    if not from_data:
        missing_w = [w for w in program.names("weight") if w not in weights]
        if missing_w:
            decl = program.decls[missing_w[0]]
            raise TenFlangError.at(f"the weights give no value for weight '{missing_w[0]}'",
                                   file=program.file, line=decl.src.line, source=decl.src.text)
    required = [n for n in data_names if program.kind(n) in ("input", "weight")]
    bindings.require(program, table, required, f"{program.file} declares it")
    plan = Plan(program)
    results: list[dict[str, Any]] = [{} for _ in range(len(table))]
    pattern = np.zeros((len(table), len(data_names)), dtype=bool)
    for j, name in enumerate(data_names):
        if name in table.present:
            pattern[:, j] = table.present[name]
    groups: dict[bytes, list[int]] = {}
    for i, row in enumerate(pattern):
        groups.setdefault(row.tobytes(), []).append(i)
    for rows in groups.values():
        index = np.array(rows)
        present = pattern[rows[0]]
        data: dict[str, Any] = {n: table.columns[n][index]
                                for j, n in enumerate(data_names) if present[j]}
        run = plan.run({**data, **weights}, len(rows))
        for name in plan.results:
            values = run.value(name)
            for k, i in enumerate(rows):
                results[i][name] = None if values is None else plain(values[k])
    return results


def first_nonfinite(program: Program, inputs: dict[str, Any], name: str) -> Any:
    """The first line whose value is NaN or infinite on the way to ``name`` (or None)."""
    check_instance("inputs", inputs, Mapping, "a dict of values")
    return Plan(program).bind(inputs, n=1).first_nonfinite(ancestors(program, name))


def __getattr__(name: str) -> Any:
    """The names imported on first use (see ``_ON_FIRST_USE``)."""
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = getattr(importlib.import_module(_ON_FIRST_USE[name], __package__), name)
    return globals()[name]
