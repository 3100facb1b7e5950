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

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.core.program import parse
>>> c = compare_modes(parse(SEED_EXAMPLE), examples=4, budget=0.0)
>>> (c.forward.sweeps, c.reverse.sweeps), (c.forward.lines, c.reverse.lines)
((1, 1), (9, 10))
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .backprop import Gcp, compile_program
from .datafiles import DataTable
from .draws import draw_values
from .errors import TenFlangError
from .forward import ForwardProgram, compile_forward
from .lexical import GIVEN_KINDS
from .plan import Plan
from .program import Program
from .syntax import Define
from .train import Weights, initial_weights, single_threaded_blas

__all__ = ["ModeComparison", "ModeCost", "compare_modes", "count_lines", "peak_values"]


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


def _time_per_run(program: Program, values: Mapping[str, Any], n: int, means: list[str],
                  budget: float) -> float:
    """The best of several timed runs (after one untimed run), in seconds."""
    run = Plan(program).bind(values, n, means=means)
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
                  budget: float = 0.2, forward: ForwardProgram | None = None,
                  gcp: Gcp | None = None) -> ModeComparison:
    """Forward mode against reverse mode for the shape program ``program`` (see the module).

    ``data``: a :class:`DataTable` or columns (name -> array, the first axis the example), of
    which the first ``examples`` are run; random values for what it does not give.
    ``weights``: default the usual initial weights. ``budget``: seconds to spend timing each
    program (at least 3 runs). The compiled programs may be passed in when the caller has
    them.
    """
    if not program.names("weight"):
        raise TenFlangError.at(f"{program.file} has no weights: there is no gradient to cost",
                               file=program.file)
    forward = forward if forward is not None else compile_forward(program)
    gcp = gcp if gcp is not None else compile_program(program)
    if weights is None:
        weights = initial_weights({w: program.shapes[w] for w in program.names("weight")})
    columns, n, synthetic = _examples(program, data, examples)
    values = {**columns, **weights}
    means = list(gcp.gradient_names().values())
    costs = []
    for mode, derived, sweeps in (("forward", forward, len(forward.sweeps)),
                                  ("reverse", gcp, 1)):
        derived_program = derived.program()
        pass_lines = sum(line.section == "forward" and isinstance(line.statement, Define)
                         and line.statement.op is not None for line in derived.lines)
        costs.append(ModeCost(mode, sweeps, count_lines(derived_program), pass_lines,
                              peak_values(derived_program),
                              _time_per_run(derived_program, values, n, means, budget)))
    components = sum(int(np.prod(program.shapes[w], dtype=np.int64))
                     for w in program.names("weight"))
    return ModeComparison(costs[0], costs[1], components, n, synthetic)
