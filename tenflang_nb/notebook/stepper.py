"""What the stepper shows at each line of a GCP run on one example, computed in Python.

The stepper (``model.stepper()``, ``--show step``) executes the GCP one line at a time: the
forward pass, then the backward pass. :func:`stepper_run` turns the run's trace
(``model.trace(example)``) into a :class:`StepperRun` of :class:`Step` records: the node and
edges a line belongs to, a caption saying what it computes (which operator, which rule), the
same with its numbers in, and how the graph's labels change. Captions are made here, not in
the browser, so they are tested like any other text; the ``step`` view (``views/step.py``)
only renders them. ``model.stepper_run(example)`` builds one.

Which node does a GCP line belong to? A forward line to the variable it defines; the adjoint
``d/L/d/v`` and its temporaries ``d/L/d/v:k`` to ``v``; a local partial ``d/p/d/m`` and its
temporaries to the edge ``m -> p``. The block the compiler writes for the loss itself holds
the loss's local partials ``d/L/d/m``: the edge ``m -> L`` (and, when the loss is the only
line that uses ``m``, ``m``'s whole adjoint already).

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.notebook.model import TenFlangModel
>>> run = TenFlangModel(SEED_EXAMPLE, "net").stepper_run({"x": 1.0, "y": 0.5})
>>> step = run.steps[9]
>>> step.line, step.node, step.edges
(32, 'z', (('z', 'o'),))
>>> step.caption
"d/lambda/d/z = d/lambda/d/o × d/o/d/z: the chain rule through o = logistic z, z's only use"
>>> step.numbers
'= 0 × 0.25 = 0'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core import ops
from ..core.backprop import Gcp
from ..core.describe_ops import formula
from ..core.dimensions import Dimensions
from ..core.formatting import fmt_assignments, fmt_list, fmt_value
from ..core.graph import DataFlowGraph
from ..core.lexical import GIVEN_KINDS, adjoint_name, split_derivative
from ..core.ops import Const, Ref
from ..core.plan import TraceStep
from ..core.program import Program
from ..core.syntax import Comment, Define
from .predict import Question, first_grad_steps, questions

__all__ = ["HEATMAP_MAX", "Step", "StepperRun", "formula", "label_text", "stepper_run"]

NOT_YET = "?"  # a label whose line has not run yet
# entries: a tensor up to this size is drawn as a heatmap on its node (views/heatmap.py); a
# bigger one is labelled with its range
HEATMAP_MAX = 400


@dataclass(frozen=True)
class Step:
    """One executed GCP line, as the stepper shows it."""

    line: int  # in the GCP text, from 1
    name: str  # the variable the line defines
    value: str  # its value, short (a tensor: its shape and a few entries)
    phase: str  # "forward" or "backward"
    node: str | None  # the shape-program variable whose node lights up (None: an edge's line)
    edges: tuple[tuple[str, str], ...]  # (operand, consumer): the edges the line reads
    caption: str  # what the line computes, in words
    numbers: str  # the same with the numbers in: "= 0.5 × 0.25 = 0.125"
    updates: tuple[tuple[str, str, str], ...]  # (variable, "value" or "grad", new label text)
    # the dimension analysis of a line on tensors ("" on scalars): core/dimensions.py
    shapes: str = ""
    # (variable, row, value) of the updates whose value is a tensor (what a heatmap shows)
    tensors: tuple[tuple[str, str, np.ndarray], ...] = ()
    array: np.ndarray | None = None  # the line's value, when it is a tensor


@dataclass(frozen=True)
class StepperRun:
    """A GCP run on one example, explained line by line (see :func:`stepper_run`)."""

    name: str  # the model's name
    program: Program  # the shape program, whose graph the stepper draws
    graph: DataFlowGraph
    example: str  # the example, short: "{x: 1.5, y: 0.2}"
    weights: str  # the weights, short: "w = 0.8"
    loss: str
    gcp: Gcp
    steps: list[Step]
    # variable -> {"value": text, "grad": text}: the labels before any line has run (a grad
    # row only for variables that get an adjoint) and the widest text each row ever shows
    start: dict[str, dict[str, str]]
    widest: dict[str, dict[str, str]]
    skipped: int  # steps beyond the listed lines (a GCP too long to step through whole)
    # the tensors among the values in the graph before any line has run (inputs, weights)
    start_tensors: dict[str, np.ndarray] = field(default_factory=dict)
    # predict mode: what the stepper asks before each adjoint's value (notebook/predict.py)
    questions: tuple[Question, ...] = ()
    predicting: bool = False  # asked for predict mode (it may find nothing to ask)
    withheld: str = ""  # grading mode's message when the backward half is left out
    # predict mode: an open question's line shows no right-hand side, no later line shows
    hide_lines: bool = True

    @property
    def intro(self) -> str:
        """What the stepper says before the first line runs."""
        weights = f" and the weights ({self.weights})" if self.weights else ""
        if self.withheld:
            return (f"Before the first line: the example {self.example}{weights} are in the "
                    "graph. Step (or press →) to run the forward pass one line at a time; "
                    f"the backward pass is left out ({self.withheld}).")
        return (f"Before the first line: the example {self.example}{weights} are in the "
                "graph. Step (or press →) to run the GCP one line at a time: the forward pass "
                f"computes every value, then the backward pass computes the adjoints "
                f"d/{self.loss}/d/v from the loss (whose own adjoint is 1) back to the weights.")


def _ref(a: Ref) -> str:
    return a.text if isinstance(a, Const) else a


# ------------------------------------------------------------------------------ the GCP


class _GcpIndex:
    """The GCP's lines indexed: where each name is defined, which backward block each line is
    in, and which block is the loss's own (its local partials)."""

    def __init__(self, gcp: Gcp, program: Program, graph: DataFlowGraph) -> None:
        self.gcp = gcp
        self.program = program
        self.graph = graph
        self.loss = gcp.loss
        self.dims = Dimensions.of(gcp)
        self.defs: dict[str, tuple[int, Define]] = {}
        self.block: dict[int, int] = {}
        first_origin: int | None = None
        block = -1
        for number, line in enumerate(gcp.lines, 1):
            s = line.statement
            if line.section == "backward":
                if isinstance(s, Comment):
                    block += 1
                    if block == 0:
                        first_origin = line.origin
                self.block[number] = block
            if isinstance(s, Define):
                self.defs[s.target] = (number, s)
        # blocks run in reverse topological order, so the loss's comes first, when there is one
        loss_def = program.defs.get(self.loss)
        self.loss_block = 0 if (first_origin is not None and loss_def is not None
                                and first_origin == loss_def.src.line) else None
        # the adds that sum a variable's contributions: v -> the names they define
        self.sums: dict[str, set[str]] = {}
        for name, (number, d) in self.defs.items():
            parts = split_derivative(name)
            if (d.op == "add" and parts is not None and parts[0] == self.loss
                    and not self.in_loss_block(number)):
                self.sums.setdefault(parts[1], set()).add(name)
        # the terms those adds add up: v -> names
        self.terms: dict[str, set[str]] = {
            v: {a for n in names for a in self.defs[n][1].variables() if a not in names}
            for v, names in self.sums.items()}

    def in_loss_block(self, number: int) -> bool:
        return self.loss_block is not None and self.block.get(number) == self.loss_block

    def text(self, v: str) -> str:
        """``o = logistic z``: how the shape program defines ``v``."""
        d = self.program.defs.get(v)
        return f"{v} = {v}'s value" if d is None else str(d)[len("define "):]

    def users(self, v: str) -> list[str]:
        """The lines (their variables) whose adjoint reaches ``v``'s: those the GCP
        differentiates (the loss, and every variable with an adjoint)."""
        return [p for p in self.graph.consumers(v)
                if p == self.loss or adjoint_name(self.loss, p) in self.defs]

    def inline(self, name: str, base: str) -> str:
        """The formula defining ``name`` with the temporaries of ``base`` written in."""
        _, d = self.defs[name]
        args = []
        for a in d.args:
            parts = split_derivative(a) if isinstance(a, str) else None
            if isinstance(a, str) and parts is not None and parts[2] is not None \
                    and a.rsplit(":", 1)[0] == base and a in self.defs:
                args.append(self.inline(a, base))
            else:
                args.append(_ref(a))
        return formula(d.op, args)

    def contributions(self, name: str, v: str) -> list[str]:
        """The users of ``v`` whose contribution the line defining ``name`` holds."""
        number, d = self.defs[name]
        if self.in_loss_block(number):
            return [self.loss]
        found: list[str] = []
        for a in d.variables():
            parts = split_derivative(a)
            if parts is None:
                continue
            of, wrt, k = parts
            if of == self.loss and wrt == v and k is not None and a in self.defs:
                found += self.contributions(a, v)
            elif of == self.loss and wrt != v:
                found.append(wrt)  # d/L/d/p: the adjoint of a user p
            elif of != self.loss and wrt == v:
                found.append(of)  # d/p/d/v: the local partial of a user p
        if not found:  # nothing named: the user is the loss (its adjoint 1 was folded away)
            users = self.users(v)
            found = [self.loss] if self.loss in users else users
        return list(dict.fromkeys(found))


# ------------------------------------------------------------------------------ captions


def _forward_caption(d: Define) -> str:
    if d.op is None:
        arg = d.args[0]
        what = "a constant" if isinstance(arg, Const) else "a copy"
        return f"{d.target} = {_ref(arg)}: forward pass ({what})"
    op = ops.OPS[d.op]
    return (f"{d.target} = {formula(d.op, [_ref(a) for a in d.args])}: forward pass "
            f"({d.op}: {op.doc})")


def _partial_caption(g: _GcpIndex, number: int, d: Define, p: str, m: str, k: int | None) -> str:
    base = adjoint_name(p, m)
    head = f"{d.target} = {g.inline(d.target, base)}"
    shape_def = g.program.defs[p]
    what = f"the local partial of {g.text(p)} with respect to {m}"
    twice = shape_def.args.count(m) > 1
    if k is not None and not (p == g.loss and not _used_in_block(g, d.target, number)):
        return f"{head}: a step towards {base}, {what}"
    why = what + (f" ({m} is both operands: the two partials add up)" if twice else "")
    if p == g.loss:
        if k is None:
            why += f"; {m}'s only use is the loss, so this is already {m}'s adjoint"
        else:
            why += f"; one term of d/{g.loss}/d/{m} ({m} has other users too)"
    else:
        why += f" (how much {p} moves per unit of {m})"
    return f"{head}: {why}"


def _used_in_block(g: _GcpIndex, name: str, number: int) -> bool:
    block = g.block.get(number)
    return any(name in d.variables() for n, d in g.defs.values()
               if n > number and g.block.get(n) == block)


def _adjoint_caption(g: _GcpIndex, d: Define, v: str, k: int | None, users: list[str]) -> str:
    loss = g.loss
    args = [_ref(a) for a in d.args]
    head = f"{d.target} = {formula(d.op, args)}"
    if loss not in g.graph.descendants([v]):
        return f"{head}: {v} cannot affect the loss, so its gradient is 0"
    named = {a: split_derivative(a) for a in d.variables()}
    all_users = g.users(v)
    if d.op == "mul" and len(users) == 1 and len(named) == 2 and all(
            parts is not None and parts[2] is None for parts in named.values()):
        p = users[0]
        if {adjoint_name(loss, p), adjoint_name(p, v)} == set(named):
            rule = f"the chain rule through {g.text(p)}"
            if k is not None:
                return f"{head}: the contribution of {v}'s use in {p}, {rule}"
            only = f", {v}'s only use" if all_users == [p] else ""
            return f"{head}: {rule}{only}"
    if d.op == "add" and set(d.variables()) <= g.terms.get(v, set()) | g.sums.get(v, set()):
        if k is None:
            return (f"{head}: {v} is used by {len(users)} lines ({fmt_list(users)}): its adjoint "
                    "is the sum of the contributions through each use")
        return f"{head}: the contributions through {fmt_list(users)} so far, added up"
    if d.op is None and isinstance(d.args[0], Const):
        return f"{head}: the loss is a copy of {v}, so {v}'s adjoint is 1"
    if d.op is None and len(users) == 1 and g.program.defs[users[0]].op is None:
        return (f"{head}: {users[0]} = {v} is a copy, so the adjoint passes back unchanged")
    if d.op == "sumto":
        shape = g.program.shapes[v]
        to = f"{v}'s shape {list(shape)}" if shape else f"a scalar like {v}"
        return (f"{head}: summed down to {to} "
                f"(undoing the broadcast in {fmt_list([g.text(p) for p in users])})")
    through = fmt_list([g.text(p) for p in users])
    if k is not None:
        return f"{head}: a step of {v}'s contribution through {through}"
    return f"{head}: the vector-Jacobian product through {through}"


def _numbers(d: Define, env: Mapping[str, Any], value: str) -> str:
    """``= 0.5 × 0.25 = 0.125`` for a line on scalars; ``= value`` otherwise."""
    shown = []
    for a in d.args:
        if isinstance(a, Const):
            shown.append(a.text)
            continue
        v = env.get(a)
        if v is not None and np.ndim(v) != 0:
            return f"= {value}"
        shown.append(fmt_value(v, "step"))
    if d.op is None or (d.op is not None and not ops.OPS[d.op].elementwise):
        return f"= {value}"
    return f"= {formula(d.op, shown)} = {value}"


# ------------------------------------------------------------------------------ the run


def stepper_run(*, name: str, gcp: Gcp, program: Program, graph: DataFlowGraph,
                trace: Sequence[TraceStep], record: Mapping[str, Any],
                weights: Mapping[str, Any], listed_lines: int,
                predict: bool = False, withheld: str = "", hide_lines: bool = True
                ) -> StepperRun:
    """Explain each line of ``trace``, the GCP ``gcp`` of ``program`` run on the example
    ``record`` with ``weights`` (as ``model.trace`` runs it): node, edges, caption, numbers,
    label updates. Only the first ``listed_lines`` lines of the GCP (those the stepper
    lists) are stepped through. ``name``: the model's, for the title. ``predict``: with the
    questions of predict mode (``notebook/predict.py``). ``withheld``: grading mode's message
    when ``gcp`` and ``trace`` hold only the forward half; predict mode then asks nothing
    (its questions and hints are the backward half's). ``hide_lines``: predict mode hides
    the formula of the line a question stops before, and the lines after it, until answered.
    """
    g = _GcpIndex(gcp, program, graph)
    loss = gcp.loss
    given = {n: record.get(n) for n in program.names(*GIVEN_KINDS) if n not in weights}
    env: dict[str, Any] = {**given, **weights}
    start: dict[str, dict[str, str]] = {
        v: {"value": label_text(env[v]) if v in env else NOT_YET} for v in program.decls}
    pending: dict[str, list[tuple[str, str]]] = {}
    steps: list[Step] = []
    listed = [t for t in trace if t.line <= listed_lines]
    first_backward = True
    for t in listed:
        number = t.line
        line = gcp.lines[number - 1]
        d = line.statement
        assert isinstance(d, Define)
        value = fmt_value(t.value, "step")
        label = label_text(t.value)
        updates: list[tuple[str, str, str]] = []
        if line.section == "forward":
            node: str | None = d.target
            edges = tuple((a, d.target) for a in dict.fromkeys(d.variables()))
            caption = _forward_caption(d)
            shapes = g.dims.forward(d)
            updates.append((d.target, "value", label))
        else:
            if first_backward:
                first_backward = False
                if adjoint_name(loss, loss) not in g.defs:  # the pruned GCP leaves it out
                    updates.append((loss, "grad", "1"))
            node, edges, caption, shapes = _backward(g, number, d)
            updates += _grad_updates(g, number, d, label, pending)
        env[t.name] = t.value
        steps.append(Step(number, t.name, value, line.section, node, edges, caption,
                          _numbers(d, env, value), tuple(updates), shapes,
                          _tensors(updates, t.name, env, pending),
                          np.asarray(t.value, dtype=float) if np.ndim(t.value) else None))

    for v, row, _ in (u for s in steps for u in s.updates):
        if row == "grad":
            start[v].setdefault("grad", NOT_YET)
    widest = {v: dict(rows) for v, rows in start.items()}
    for s in steps:
        for v, row, text in s.updates:
            if len(text) > len(widest[v].get(row, "")):
                widest[v][row] = text
    example_text = "{" + ", ".join(f"{n}: {fmt_value(x, 'step')}" for n, x in given.items()) + "}"
    start_tensors = {v: np.asarray(x, dtype=float) for v, x in {**given, **weights}.items()
                     if x is not None and np.ndim(x) > 0}
    asked: tuple[Question, ...] = ()
    if predict and not withheld:
        asked = questions(program=program, graph=graph, loss=loss,
                          first_grad=first_grad_steps([s.updates for s in steps]),
                          adjoints={v: env.get(adjoint_name(loss, v)) for v in program.decls},
                          given={**given, **weights})
    return StepperRun(name, program, graph, example_text, fmt_assignments(weights, "step"), loss,
                      gcp, steps, start, widest, len(trace) - len(listed), start_tensors,
                      asked, predict, withheld, hide_lines)


def label_text(value: Any) -> str:
    """A value as a node's label shows it: a tensor with its shape and first entries, or,
    too big for a heatmap, its range.

    >>> label_text(np.arange(3.0)), label_text(np.zeros((20, 30)))
    ('[3] 0, 1, 2', '[20×30] from 0 to 0')
    """
    big = value is not None and np.size(value) > HEATMAP_MAX
    return fmt_value(value, "range" if big else "step")


def _tensors(updates: Sequence[tuple[str, str, str]], name: str, env: Mapping[str, Any],
             pending: Mapping[str, list[tuple[str, str]]]
             ) -> tuple[tuple[str, str, np.ndarray], ...]:
    """The tensor values behind a step's label updates: the line's value, or the sum of the
    terms of an adjoint that have arrived so far."""
    found = []
    for v, row, _ in updates:
        terms = [n for n, _ in pending.get(v, [])] if row == "grad" else []
        parts = [env.get(n) for n in terms] if terms else [env.get(name)]
        if any(x is None or np.ndim(x) == 0 for x in parts):
            continue
        found.append((v, row, np.sum([np.asarray(x, dtype=float) for x in parts], axis=0)))
    return tuple(found)


def _backward(g: _GcpIndex, number: int, d: Define
              ) -> tuple[str | None, tuple[tuple[str, str], ...], str, str]:
    """The node, the edges, the caption and the dimension analysis of a backward line."""
    loss = g.loss
    parts = split_derivative(d.target)
    if parts is None:  # never emitted by the compiler; say what it is, no more
        return None, (), f"{d.target} = {formula(d.op, [_ref(a) for a in d.args])}", ""
    of, wrt, k = parts
    if wrt == loss and of == loss:
        return loss, (), f"{d.target} = {_ref(d.args[0])}: the loss's own adjoint is 1", ""
    if of != loss or g.in_loss_block(number):
        caption = _partial_caption(g, number, d, of, wrt, k)
        # the loss's local partials d/L/d/m[:k] are (terms of) m's adjoint: m's node lights up
        node = wrt if of == loss else None
        return node, ((wrt, of),), caption, g.dims.partial(d, of, wrt, k is None)
    users = g.contributions(d.target, wrt)
    edges = tuple((wrt, p) for p in users)
    shapes = g.dims.adjoint(d, wrt, users if loss in g.graph.descendants([wrt]) else [])
    return wrt, edges, _adjoint_caption(g, d, wrt, k, users), shapes


def _grad_updates(g: _GcpIndex, number: int, d: Define, value: str,
                  pending: dict[str, list[tuple[str, str]]]) -> list[tuple[str, str, str]]:
    """How the ``grad`` row of a node changes: a complete adjoint replaces it; the terms of a
    sum arrive one by one (``0.86 + 0.5``) and are replaced by their sum when it is made."""
    parts = split_derivative(d.target)
    if parts is None or parts[0] != g.loss:
        return []
    _, v, k = parts
    if v not in g.program.decls:
        return []
    if k is None:
        pending.pop(v, None)
        return [(v, "grad", value)]
    shown = pending.setdefault(v, [])
    if d.target in g.sums.get(v, set()):
        operands = [a for a in d.variables() if any(a == n for n, _ in shown)]
        at = min((i for i, (n, _) in enumerate(shown) if n in operands), default=len(shown))
        shown[:] = [x for x in shown if x[0] not in operands]
        shown.insert(min(at, len(shown)), (d.target, value))
    elif d.target in g.terms.get(v, set()):
        shown.append((d.target, value))
    else:
        return []
    return [(v, "grad", " + ".join(text for _, text in shown))]
