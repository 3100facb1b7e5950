"""Why backprop wins: what one gradient costs in forward mode and in reverse mode.

Both programs compute the same outputs ``d/L/d/w`` (``forward.py`` and ``backprop.py``). For
one loss and many weights, reverse mode needs one backward sweep; forward mode needs one
sweep per weight component. :func:`compare_modes` counts, for a shape program:

* the sweeps: one per weight component that reaches the loss, against one;
* the lines executed per gradient: the ``define`` lines with an operator (a copy costs
  nothing: the interpreter aliases it), the shape program's own forward pass included;
* the values kept in memory: the most numbers per example held at once if each value were
  freed after its last use (outputs and the loss are kept to the end);
* the measured time per gradient: both programs planned and run by the interpreter on the
  same examples and weights, as training runs them (the batch means of the gradients). Times
  vary between machines and runs; the counts do not.

Forward mode's memory grows with the square of the weight components (each sweep holds
values the size of its weight, and there is a sweep per component: one 1000 x 10 weight made
3.3 GB for one example). So with more than ``sweeps`` sweeps (or more than fit in
:data:`MEMORY_BUDGET`) only a sample of them is run, the first of each weight in proportion
to its sweeps: the time is the program without its sweeps plus the sample's sweeps, scaled
to all of them (:attr:`ModeComparison.timing_note` says so); the counts are exact, each
sweep of a weight having the same lines as the others.

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.core.program import parse
>>> c = compare_modes(parse(SEED_EXAMPLE), examples=4, budget=0.0)
>>> (c.forward.sweeps, c.reverse.sweeps), (c.forward.lines, c.reverse.lines)
((1, 1), (9, 10))
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .arguments import check_arguments, check_instance
from .backprop import Gcp, compile_program
from .datafiles import DataTable
from .draws import draw_values
from .engines import BoundRun
from .errors import TenFlangError
from .formatting import fmt_number
from .forward import ForwardProgram, compile_forward
from .fused import bind
from .lexical import GIVEN_KINDS
from .plan import Plan
from .program import Program, parse
from .syntax import Define
from .train import Weights, initial_weights, single_threaded_blas

__all__ = ["MEMORY_BUDGET", "SWEEPS", "ModeComparison", "ModeCost", "compare_modes",
           "count_lines", "peak_values"]

SWEEPS = 256  # forward sweeps run at most by default; the others extrapolated
MEMORY_BUDGET = 512 * 2**20  # bytes the values of one measured program may take


@dataclass(frozen=True)
class ModeCost:
    """What one gradient costs in one mode."""

    mode: str  # "forward" or "reverse"
    sweeps: int  # derivative sweeps per gradient
    lines: int  # lines with an operator executed per gradient (the forward pass included)
    pass_lines: int  # of which the shape program's forward pass
    values_kept: int  # numbers per example held at once, at the peak
    seconds: float  # measured time per gradient (varies with the machine)


@dataclass(frozen=True)
class ModeComparison:
    """Forward mode against reverse mode for one shape program (see the module)."""

    forward: ModeCost
    reverse: ModeCost
    components: int  # weight components (numbers) the gradient has
    examples: int  # the batch the times were measured on
    synthetic: bool  # some or all of the examples' values were random, not data
    measured_sweeps: int = 0  # forward sweeps run and timed (0: all of them)

    @property
    def extrapolated(self) -> bool:
        """Whether forward mode's time comes from a sample of its sweeps (see the module)."""
        return 0 < self.measured_sweeps < self.forward.sweeps

    @property
    def timing_note(self) -> str:
        """How forward mode's time was found, when it was not by running every sweep."""
        if not self.extrapolated:
            return ""
        f = self.forward
        return (f"Forward mode's time is extrapolated: {self.measured_sweeps:,} of its "
                f"{f.sweeps:,} sweeps were run (the first of each weight) and the others "
                "taken to cost as much each (running them all would take too long or too "
                "much memory); its lines and numbers are counted for every sweep.")

    @property
    def time_ratio(self) -> float:
        """How many times longer a gradient takes in forward mode (measured)."""
        return self.forward.seconds / self.reverse.seconds if self.reverse.seconds else np.inf

    @property
    def line_ratio(self) -> float:
        """How many times more lines forward mode executes per gradient."""
        return self.forward.lines / max(self.reverse.lines, 1)


def count_lines(program: Program) -> int:
    """The ``define`` lines with an operator: what the interpreter executes per run.

    >>> from tenflang_nb.core.program import parse
    >>> count_lines(parse("declare input x\\ndeclare intvar a\\ndeclare output y\\n"
    ...                   "define a = mul x 2\\ndefine y = a\\n"))
    1
    """
    return sum(d.op is not None for d in program.definitions())


def peak_values(program: Program) -> int:
    """The most numbers per example a run of ``program`` holds at once, if each computed
    value were freed after its last use; outputs and the loss are kept to the end, a copy
    shares its operand's storage, and given values (inputs, weights) are not counted.

    >>> from tenflang_nb.core.program import parse
    >>> peak_values(parse("declare input x [3]\\ndeclare intvar a\\ndeclare intvar b\\n"
    ...                   "declare output y\\ndefine a = mul x 2\\ndefine b = sum a\\n"
    ...                   "define y = mul b b\\n"))
    4
    """
    defs = program.definitions()
    storage: dict[str, str] = {}  # name -> the defined value whose storage it uses
    born: dict[str, int] = {}
    size: dict[str, int] = {}
    last: dict[str, int] = {}
    kept: set[str] = set()
    results = set(program.names("output", "loss"))
    for i, d in enumerate(defs):
        for a in d.variables():
            if a in storage:
                last[storage[a]] = i
        source = d.args[0] if d.op is None else None
        if isinstance(source, str):
            if source not in storage:
                continue  # a copy of an input: nothing computed, nothing stored
            storage[d.target] = storage[source]
        else:
            storage[d.target] = d.target
            born[d.target] = i
            size[d.target] = int(np.prod(program.shapes[d.target], dtype=np.int64))
        if d.target in results:
            kept.add(storage[d.target])
    dies: dict[int, list[str]] = {}
    for value, i in born.items():
        if value not in kept:
            dies.setdefault(max(last.get(value, i), i), []).append(value)
    live = peak = 0
    for i, d in enumerate(defs):
        if born.get(d.target) == i:
            live += size[d.target]
            peak = max(peak, live)
        for value in dies.get(i, ()):
            live -= size[value]
    return peak


def _examples(program: Program, data: Mapping[str, Any] | DataTable | None, examples: int
              ) -> tuple[dict[str, np.ndarray], int, bool]:
    """``examples`` examples from ``data``, with random draws for what it does not give
    (values do not change the counts, and hardly the times)."""
    if isinstance(data, DataTable):
        data = {n: data.columns[n] for n in data.names if bool(np.all(data.present[n]))}
    names = [n for n in program.names(*GIVEN_KINDS) if program.kind(n) != "weight"]
    given = {k: np.asarray(v, dtype=np.float64) for k, v in (data or {}).items()
             if k in names and v is not None}
    n = min((len(v) for v in given.values() if v.ndim), default=0)
    if not given or n == 0:
        given, n = {}, examples
    n = min(n, examples)
    drawn = draw_values(program, [k for k in names if k not in given], n,
                        np.random.default_rng(0))
    columns = {k: given[k][:n] if k in given else drawn[k] for k in names}
    return columns, n, len(given) < len(names)


def _bind(program: Program, values: Mapping[str, Any], n: int, means: list[str]
          ) -> tuple[BoundRun | None, float]:
    """``program`` bound to the examples, and the bytes a pass touches; no run (and an
    estimate, or inf) when its buffers would be far beyond :data:`MEMORY_BUDGET` or could
    not be had. (Binding touches little: the buffers of lines a mean makes unnecessary are
    never written, 6.6 GB of the digits network's 6.9 on 100 examples, run in 0.3 GB.)"""
    allocated = _allocated_bytes(program, values, n)
    if allocated > 16 * MEMORY_BUDGET:
        return None, allocated
    try:
        run = bind(Plan(program), values, n, means=means, keep=())  # the engine training uses
    except TenFlangError:  # out of memory already
        return None, np.inf
    return run, _touched_bytes(run)


def _allocated_bytes(program: Program, values: Mapping[str, Any], n: int) -> int:
    """What binding ``program`` to ``n`` examples allocates at most, without binding it: a
    buffer for each line with an operator (as if no mean made one unnecessary), with a row
    per example where an example's data reaches it, one row otherwise (weights)."""
    rows: dict[str, int] = {}
    total = 0
    for name in program.names(*GIVEN_KINDS):
        size = math.prod(program.shapes[name])
        rows[name] = n if n != 1 and np.shape(values.get(name)) == (n, *program.shapes[name]) \
            else 1
        total += rows[name] * size
    for d in program.definitions():
        rows[d.target] = max((rows.get(a, 1) for a in d.variables()), default=1)
        if d.op is not None:
            total += rows[d.target] * math.prod(program.shapes[d.target])
    return 8 * total


def _touched_bytes(run: BoundRun) -> int:
    """The memory a pass of ``run`` writes or reads: its given values, the outputs of the
    lines it runs and its means (a buffer bound for a line that a mean made unnecessary is
    never touched, so it takes no memory)."""
    arrays = [run.values.get(name) for name in run.plan.given]
    arrays += [run.values[line.out] for line in run.bound.instructions]
    arrays += list(run.means.values())
    unique = {}
    for a in arrays:
        while isinstance(a, np.ndarray) and isinstance(a.base, np.ndarray):
            a = a.base  # a view (a reshaped operand, a mean of one row) is its base's memory
        if isinstance(a, np.ndarray):
            unique[id(a)] = a
    return sum(a.nbytes for a in unique.values())


def _fitting(run: BoundRun | None, need: float, program: Program, n: int, mode: str) -> BoundRun:
    """The run, or the refusal of a measurement that would take more than
    :data:`MEMORY_BUDGET`, before any of its memory is touched."""
    if run is not None and need <= MEMORY_BUDGET:
        return run
    shown = (f"{'' if run else 'up to '}{fmt_number(need / 2**30, 2)} GB"
             if np.isfinite(need) else "more memory than there is")
    fit = int(n * MEMORY_BUDGET / need) if np.isfinite(need) else n // 10
    raise TenFlangError.at(
        f"measuring {mode} mode on {n:,} example{'s' * (n != 1)} needs {shown} (more than "
        f"the {MEMORY_BUDGET // 2**20} MB a measurement may take)", file=program.file,
        hint=f"measure on fewer examples: cost(examples={fit})" if fit >= 1 else
        "even one example is too many: the model is too large to measure here")


def _time_per_run(run: BoundRun, budget: float) -> float:
    """The best of several timed runs (after one untimed run), in seconds."""
    best = np.inf
    with single_threaded_blas():  # as training runs it
        run.run()
        spent, runs = 0.0, 0
        while runs < 3 or (spent < budget and runs < 1000):
            start = time.perf_counter()
            run.run()
            took = time.perf_counter() - start
            best, spent, runs = min(best, took), spent + took, runs + 1
    return float(best)


def compare_modes(program: Program, data: Mapping[str, Any] | DataTable | None = None,
                  weights: Weights | None = None, *, examples: int = 100,
                  budget: float = 0.2, sweeps: int | None = SWEEPS,
                  forward: ForwardProgram | None = None, gcp: Gcp | None = None
                  ) -> ModeComparison:
    """Forward mode against reverse mode for the shape program ``program`` (see the module).

    ``data``: a :class:`DataTable` or columns (name -> array, the first axis the example), of
    which the first ``examples`` are run; random values for what it does not give.
    ``weights``: default the usual initial weights. ``budget``: seconds to spend timing each
    program (at least 3 runs). ``sweeps``: forward sweeps to run at most (None: all), the
    others extrapolated (see the module). The compiled programs may be passed in when the
    caller has them. A measurement that would take more than :data:`MEMORY_BUDGET` is
    refused before it allocates, saying how many examples would fit.
    """
    examples, budget, sweeps = check_arguments(examples=examples, budget=budget, sweeps=sweeps)
    check_instance("program", program, Program, "a Program")
    if not program.names("weight"):
        raise TenFlangError.at(f"{program.file} has no weights: there is no gradient to cost",
                               file=program.file)
    gcp = gcp if gcp is not None else compile_program(program)
    if weights is None:
        weights = initial_weights({w: program.shapes[w] for w in program.names("weight")})
    columns, n, synthetic = _examples(program, data, examples)
    values = {**columns, **weights}
    means = list(gcp.gradient_names().values())
    forward, forward_program, forward_run = _forward_sample(program, values, n, means, sweeps,
                                                            forward)
    costs = []
    for mode, derived in (("forward", forward), ("reverse", gcp)):
        derived_program = forward_program if derived is forward else derived.program()
        pass_lines = sum(line.section == "forward" and isinstance(line.statement, Define)
                         and line.statement.op is not None for line in derived.lines)
        lines = count_lines(derived_program)
        run = forward_run if derived is forward else _fitting(
            *_bind(derived_program, values, n, means), derived_program, n, mode)
        seconds = _time_per_run(run, budget)
        sweeps = 1
        if isinstance(derived, ForwardProgram):
            sweeps = derived.total_sweeps
            if derived.sampled:
                lines += _unsampled_lines(derived)
                head = _without_sweeps(derived)
                head_run = _fitting(*_bind(head, values, n, []), head, n, mode)
                head_seconds = _time_per_run(head_run, budget)
                seconds = head_seconds + max(0.0, seconds - head_seconds) * (
                    sweeps / len(derived.sweeps))
        costs.append(ModeCost(mode, sweeps, lines, pass_lines, peak_values(derived_program),
                              seconds))
    components = sum(int(np.prod(program.shapes[w], dtype=np.int64))
                     for w in program.names("weight"))
    return ModeComparison(costs[0], costs[1], components, n, synthetic, len(forward.sweeps))


def _forward_sample(program: Program, values: Mapping[str, Any], n: int, means: list[str],
                    sweeps: int | None, given: ForwardProgram | None
                    ) -> tuple[ForwardProgram, Program, BoundRun]:
    """The forward-mode program to measure, bound: all of it (``given``, if any, is that)
    when it has at most ``sweeps`` sweeps, else a sample of at most ``sweeps``, fewer if
    they would not fit in :data:`MEMORY_BUDGET` (each weight keeps three)."""
    forward = given if given is not None and (sweeps is None or len(given.sweeps) <= sweeps) \
        else compile_forward(program, sample=sweeps)
    measured = forward.program()
    if forward.sampled:  # as many as fit (the allocation is an upper bound of the need)
        allocated = _allocated_bytes(measured, values, n)
        if allocated > MEMORY_BUDGET:
            fewer = int(len(forward.sweeps) * MEMORY_BUDGET / allocated)
            forward = compile_forward(program, sample=max(1, fewer))
            measured = forward.program()
    return forward, measured, _fitting(*_bind(measured, values, n, means), measured, n,
                                       "forward")


def _without_sweeps(forward: ForwardProgram) -> Program:
    """A forward-mode program without its sweeps: its forward pass and the shared lines."""
    return parse("".join(f"{line.statement}\n" for line in forward.lines
                         if line.section != "tangent"), forward.shape_program.file)


def _unsampled_lines(forward: ForwardProgram) -> int:
    """The lines the sweeps a sample left out would run: each weight's later sweeps run
    the lines of its last one sampled (the second and later are alike)."""
    last: dict[str, int] = {}
    taken: dict[str, int] = {}
    for sweep, lines in zip(forward.sweeps, forward.sweep_lines, strict=True):
        last[sweep.weight] = lines
        taken[sweep.weight] = taken.get(sweep.weight, 0) + 1
    shapes = forward.shape_program.shapes
    return sum((int(np.prod(shapes[w], dtype=np.int64)) - taken[w]) * last[w] for w in last)
