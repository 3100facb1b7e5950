"""The weight-calculation phase: gradient descent driven by a GCP alone.

The weights are the GCP's ``input`` variables ``w`` for which it has an ``output`` named
``d/L/d/w`` (L its ``loss``). Each step runs the GCP once over the whole training set (one
batched pass), takes the mean loss and mean gradient, and moves ``w <- w - lr * grad`` until
``||grad||_2 <= tol`` or ``max_iter`` updates, as the seed's pseudocode does. How to train is
one :class:`~tenflang_nb.core.settings.TrainSettings`.

:class:`GradientDescent` is a small state machine (``step()`` one gradient evaluation and
update at a time) so a notebook can run it in chunks, show progress, stop and reset it; all
that changes while it trains is one :class:`TrainState`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

from .arguments import Rule, check_arguments, check_instance, check_values
from .engines import REFERENCE, BoundRun
from .errors import ComputeError, Diagnostic, TenFlangError
from .formatting import fmt_shape
from .fused import bind
from .history import History, Packing, Record
from .lexical import adjoint_name
from .optimizers import OPTIMIZERS, OptimizerState
from .plan import Plan, plain
from .program import Program, ancestors
from .settings import SETTINGS, TrainSettings

Weights = dict[str, "float | np.ndarray"]

# Every value the loss and gradients come from is checked for NaN and infinity at the step
# that ends training (so no run "converges" through a -inf) and every this many steps
# between: at every step the check cost 24 % of a step of the digits network, 70 % of XOR's.
CHECK_VALUES_EVERY = 32


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run BLAS on one thread inside the block.

    TenFlang's matrices are small and the batch is split by numpy anyway; here OpenBLAS's
    threads made a [1797, 64] x [64, 32] product 30x slower than one thread. Scoped to our
    loops so a notebook user's own numpy keeps its settings.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        yield


@dataclass
class TrainResult:
    weights: Weights
    history: list[Record]
    converged: bool
    iterations: int

    @property
    def loss(self) -> float:
        return self.history[-1].loss if self.history else float("nan")


def gcp_weights(gcp_program: Program) -> tuple[str, dict[str, str]]:
    """The GCP's loss name and {weight: gradient output name}, found from the GCP alone.

    >>> from tenflang_nb.core.program import parse
    >>> p = parse("declare input w\\ndeclare loss L\\ndefine L = mul w w\\n"
    ...           "declare output d/L/d/w\\ndefine d/L/d/w = add w w\\n")
    >>> gcp_weights(p)
    ('L', {'w': 'd/L/d/w'})
    """
    losses = gcp_program.losses
    if len(losses) != 1:
        raise TenFlangError([Diagnostic(
            "not a gradient program: it must declare exactly one loss "
            f"(found {len(losses)})", gcp_program.file,
            hint="make it with: tfcompiler SHAPE.tf -o gcp.tf")])
    loss = losses[0]
    outputs = set(gcp_program.names("output"))
    # in the weights' declaration order, as the user wrote them (not the backward order)
    grads = {w: adjoint_name(loss, w) for w in gcp_program.names("input", "weight")
             if adjoint_name(loss, w) in outputs}
    if not grads:
        raise TenFlangError([Diagnostic(
            f"not a gradient program: no output named d/{loss}/d/<weight>",
            gcp_program.file)])
    return loss, grads


def nonfinite_error(run: BoundRun, targets: Sequence[str], what: str, where: str, hint: str
                    ) -> ComputeError:
    """The error for a run whose ``targets`` (``what``: "the loss or a gradient") came out NaN
    or infinite ``where`` ("at iteration 12"): it names the first line on their way that
    did."""
    needed: set[str] = set()
    for target in targets:
        needed |= ancestors(run.plan.program, target)
    bad = run.first_nonfinite(needed)
    if bad is None:
        return ComputeError([Diagnostic(f"{what} is NaN or infinite {where}",
                                        run.plan.program.file, hint=hint)])
    return ComputeError([bad.src.diag(
        f"first NaN or infinite value {where} appeared on this line", 1, hint=hint)])


def initial_weights(shapes: Mapping[str, tuple[int, ...]], init: str = "auto", seed: int = 0,
                    scale: float | None = None) -> Weights:
    """Starting weights. ``zeros``: all 0 (the original's choice). ``normal``: every weight
    drawn from N(0, s^2) with s = ``scale`` or 1/sqrt(fan_in) (fan_in = first dimension, 1 for
    scalars). ``auto`` (default): matrices as ``normal`` (all-zero matrices keep hidden units
    identical forever), scalars and vectors 0.

    >>> initial_weights({"w": (), "W": (2, 3)}, "zeros")["W"].shape
    (2, 3)
    """
    init, seed = SETTINGS["init"].check(init), SETTINGS["seed"].check(seed)
    (scale,) = check_arguments(scale=scale)
    check_instance("shapes", shapes, Mapping, "a dict of weight shapes")
    for name, shape in shapes.items():
        if not (isinstance(shape, tuple | list) and all(
                isinstance(d, int | np.integer) and d >= 1 for d in shape)):
            raise Rule(f"the shape of {name!r}", tuple, "a tuple of integers >= 1").error(shape)
    rng = np.random.default_rng(seed)
    weights: Weights = {}
    for name, shape in shapes.items():
        draw = init == "normal" or (init == "auto" and len(shape) >= 2)
        try:
            if draw:
                s = scale if scale is not None else 1.0 / np.sqrt(shape[0] if shape else 1)
                value = rng.normal(0.0, s, size=shape)
            else:
                value = np.zeros(shape)
        except MemoryError:
            raise TenFlangError([Diagnostic(
                f"not enough memory for the weight '{name}' of shape {fmt_shape(shape)}")]
            ) from None
        weights[name] = float(value) if shape == () else value
    return weights


def _checked_start(start: Mapping[str, object], shapes: Mapping[str, tuple[int, ...]],
                   file: str) -> Weights:
    """Starting weights given by the caller: a finite value of the right shape for every
    weight, and no other name."""
    check_instance("start", start, Mapping, "a dict of weights (or None)")
    for name in start:
        if name not in shapes:
            raise TenFlangError.at(f"start: {name!r} is not a weight of the program (the "
                                   f"weights: {', '.join(shapes)})", file=file)
    for name, shape in shapes.items():
        if name not in start:
            raise TenFlangError.at(f"start gives no value for the weight '{name}'", file=file)
        check_values(f"start[{name!r}]", start[name], shape)
    return dict(start)  # type: ignore[arg-type]


def _sum_of_squares(arrays: list[np.ndarray]) -> float:
    """The sum of every entry squared: a dot product an array (a step's cheapest reduction);
    inf or NaN when an entry is, or when the squares of finite values overflow.

    >>> _sum_of_squares([np.array(3.0), np.array([4.0])])
    25.0
    """
    total = 0.0
    with np.errstate(all="ignore"):  # an overflow is the answer inf, not a warning
        for a in arrays:
            flat = np.ravel(a)
            total += float(np.dot(flat, flat))
    return total


def _norm(arrays: list[np.ndarray], squares: float | None = None) -> float:
    """||(a_1, a_2, ...)||_2 without overflow or underflow for large or tiny finite values
    (``squares``: their :func:`_sum_of_squares`, when known).

    >>> _norm([np.array(3.0), np.array([4.0])])
    5.0
    >>> [float(f"{_norm([np.array([3.0, 4.0]) * k]) / k:.12g}") for k in (1e200, 1e-200)]
    [5.0, 5.0]
    """
    total = _sum_of_squares(arrays) if squares is None else squares
    if 1e-250 < total < 1e250:  # no square overflowed, none that matters underflowed
        return math.sqrt(total)
    scale = max((float(np.max(np.abs(a))) for a in arrays if np.size(a)), default=0.0)
    if scale == 0.0:
        return 0.0
    return scale * float(np.sqrt(sum(float(np.sum((a / scale) ** 2)) for a in arrays)))


class _BatchStream:
    """Indices of successive mini-batches: each epoch a fresh shuffle, every batch full.

    A batch that runs past the end of an epoch continues into the next shuffle, so every
    example is used equally often and no batch is smaller than the others.

    >>> stream = _BatchStream(5, 2, seed=0)
    >>> sorted(int(i) for _ in range(5) for i in stream.next())
    [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    """

    def __init__(self, n: int, size: int, seed: int) -> None:
        self.n = n
        self.size = size
        self.rng = np.random.default_rng(seed)
        self.pending = np.empty(0, dtype=np.intp)

    def next(self) -> np.ndarray:
        while len(self.pending) < self.size:
            self.pending = np.concatenate([self.pending, self.rng.permutation(self.n)])
        batch, self.pending = self.pending[:self.size], self.pending[self.size:]
        return batch


@dataclass
class TrainState:
    """Everything that changes while training, so that starting over is making a new one."""

    weights: Weights
    iterations: int = 0  # updates made
    converged: bool = False
    done: bool = False
    history: History = field(default_factory=History)
    optimizer: OptimizerState = field(default_factory=OptimizerState)
    batches: _BatchStream | None = None


T = TypeVar("T")


class _FromState(Generic[T]):
    """A read-only attribute of the trainer that is a field of its :class:`TrainState`."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, trainer: GradientDescent, owner: type | None = None) -> T:
        return getattr(trainer.state, self.name)  # type: ignore[no-any-return]


class GradientDescent:
    """Gradient descent on a GCP over a training set bound once.

    ``data`` maps each GCP input (not a weight) to an array whose first axis is the example.
    The default is the seed's full-batch gradient descent; ``settings.batch_size`` trains on
    shuffled mini-batches instead (each step's loss, gradient and convergence test are then
    those of its batch), and ``settings.optimizer`` picks the update rule. ``settings`` may
    be replaced between steps (the notebook's sliders do): it is read at every step.
    ``test`` (``(data, n)``, as ``data`` and ``n``): test data, whose mean loss each record
    also holds (``Record.test_loss``), computed by the GCP's forward pass at the same weights.
    """

    def __init__(self, gcp_program: Program, data: Mapping[str, np.ndarray], n: int,
                 settings: TrainSettings | None = None, start: Weights | None = None,
                 test: tuple[Mapping[str, np.ndarray], int] | None = None) -> None:
        self.gcp_program = gcp_program
        self.data = data
        self.n = n
        self.settings = settings or TrainSettings()
        self.loss_name, self.grad_names = gcp_weights(gcp_program)
        s = self.settings
        # one batch holding everything is full-batch descent
        self.batch_size = s.batch_size if s.batch_size is not None and s.batch_size < n else None
        shapes = {w: gcp_program.shapes[w] for w in self.grad_names}
        self.initial = _checked_start(start, shapes, gcp_program.file) if start is not None \
            else initial_weights(shapes, s.init, s.seed)
        self._plan, self._engine = Plan(gcp_program), s.engine
        self._bound: BoundRun | None = None
        self._batch_buffers: dict[str, np.ndarray] = {}
        if self._run.values.get(self.loss_name) is None:
            raise TenFlangError([Diagnostic(
                f"the loss '{self.loss_name}' is null: the training data lacks a value it "
                "needs", gcp_program.file)])
        # every value the loss and the gradients are computed from: any of them NaN or
        # infinite stops training (a -inf that a saturated logistic turns into a gradient of
        # exactly 0 would otherwise read as "converged")
        self._needed: set[str] = set()
        for target in (self.loss_name, *self.grad_names.values()):
            self._needed |= ancestors(gcp_program, target)
        self._test = None if test is None else self._bind_test(*test)
        self._packing = Packing.of(self.initial)  # how its records keep their weights
        self.state = self._start(self.initial)

    @property
    def _run(self) -> BoundRun:
        """The GCP bound to the training data (a batch's rows of it): bound when first
        needed, and again after :meth:`release`."""
        if self._bound is None:
            rows = self.batch_size or self.n
            first = {k: np.asarray(v)[:rows] for k, v in self.data.items()}
            # the loss is averaged by the run too: the fused engine never stores it per example
            run = self._bound = bind(self._plan, {**first, **self.initial}, rows,
                                     means=[*self.grad_names.values(), self.loss_name],
                                     engine=self._engine, keep=())
            # mini-batches are copied into the bound input buffers: the plan is bound once
            self._batch_buffers = {k: v for k in self.data
                                   if (v := run.values.get(k)) is not None}
        return self._bound

    def release(self) -> None:
        """Let go of the bound run: every line's values for every example, 38 MB reserved
        for the digits network on its 1797 images (about 6 MB of it resident), which a
        finished training panel kept for as long as the kernel lived (issue 26). The next
        step binds it again (each step sets the weights and the batch anew, so the run goes
        on the same)."""
        self._bound = None
        self._batch_buffers = {}

    def _bind_test(self, data: Mapping[str, np.ndarray], n: int) -> BoundRun:
        """The forward pass (only what the loss needs) bound to the test data once."""
        plan = Plan(self.gcp_program, targets=[self.loss_name])
        run = REFERENCE.bind(plan, {**data, **self.initial}, n, [self.loss_name], set())
        if run.values.get(self.loss_name) is None:
            raise TenFlangError([Diagnostic(
                f"the loss '{self.loss_name}' is null on the test data: it lacks a value the "
                "loss needs", self.gcp_program.file)])
        return run

    def test_loss(self, weights: Mapping[str, object] | None = None) -> float | None:
        """The mean loss over the test data at ``weights`` (default: the current ones);
        None without test data."""
        run = self._test
        if run is None:
            return None
        for w, value in (weights if weights is not None else self.state.weights).items():
            run.set(w, value)
        with np.errstate(all="ignore"):  # a NaN or infinite test loss is a value to show
            run.run()
            mean = run.mean(self.loss_name)
        return None if mean is None else float(mean)

    @property
    def gcp(self) -> Program:
        """The GCP it descends (the public name of ``gcp_program``)."""
        return self.gcp_program

    def _start(self, weights: Weights) -> TrainState:
        batches = (_BatchStream(self.n, self.batch_size, self.settings.seed)
                   if self.batch_size else None)
        return TrainState({w: plain(v) for w, v in weights.items()}, batches=batches)

    def reset(self, weights: Weights | None = None) -> None:
        """Back to the initial weights (or ``weights``), forgetting the history."""
        self.state = self._start(weights if weights is not None else self.initial)
        self._packing = Packing.of(self.state.weights)

    # the state, read-only, under the names a caller expects of a trainer
    weights: _FromState[Weights] = _FromState()
    iterations: _FromState[int] = _FromState()
    converged: _FromState[bool] = _FromState()
    done: _FromState[bool] = _FromState()
    history: _FromState[History] = _FromState()

    def evaluate(self) -> tuple[float, dict[str, np.ndarray]]:
        """Mean loss and mean gradient at the current weights (one pass over the data)."""
        loss, grads, _ = self._evaluate()
        return loss, grads

    def _evaluate(self) -> tuple[float, dict[str, np.ndarray], float]:
        """:meth:`evaluate`, and the gradients' sum of squares it checked them by."""
        run = self._run
        for w, value in self.state.weights.items():
            run.set(w, value)
        if self.state.batches is not None:
            index = self.state.batches.next()
            for name, buffer in self._batch_buffers.items():
                np.take(np.asarray(self.data[name]), index, axis=0, out=buffer)
        with np.errstate(all="ignore"):
            run.run()
            loss = float(run.mean(self.loss_name))  # type: ignore[arg-type]
            grads = {}
            for w, name in self.grad_names.items():
                g = run.mean(name)
                grads[w] = np.zeros(np.shape(self.state.weights[w])) if g is None else g
        # a finite sum of squares has finite terms; an infinite one may be finite values'
        # squares overflowing, so each gradient is looked at then
        squares = _sum_of_squares(list(grads.values()))
        if not np.isfinite(loss) or (not math.isfinite(squares) and not all(
                np.all(np.isfinite(g)) for g in grads.values())):
            self._nonfinite()
        return loss, grads, squares

    def _nonfinite(self) -> None:
        hint = "try a smaller learning rate" if self.state.iterations else (
            "check the training data and the program")
        raise nonfinite_error(self._run, [self.loss_name, *self.grad_names.values()],
                              "the loss or a gradient", f"at iteration {self.state.iterations}",
                              hint)

    def _nonfinite_weight(self, w: str) -> None:
        # a finite gradient times a huge learning rate can overflow: reported like a NaN in
        # the loss, never trained on (a weight of inf makes every gradient 0: "converged")
        decl = self.gcp_program.decls[w]
        raise ComputeError([decl.src.diag(
            f"weight '{w}' became NaN or infinite at iteration {self.state.iterations + 1} "
            f"(the update from iteration {self.state.iterations} overflowed)", 2,
            hint="try a smaller learning rate")])

    def step(self) -> Record:
        """Evaluate the gradient; stop if it is ~0 or max-iter is reached, else update."""
        state, s = self.state, self.settings
        if state.done:
            raise RuntimeError("training is finished; call reset() to start again")
        loss, grads, squares = self._evaluate()
        norm = _norm(list(grads.values()), squares)
        ends = norm <= s.tol or state.iterations >= s.max_iter
        if (ends or state.iterations % CHECK_VALUES_EVERY == 0) and not self._run.finite(
                self._needed):
            self._nonfinite()
        snapshot = self._packing.pack(state.weights)
        record = Record(state.iterations, loss, norm, snapshot, self.test_loss(state.weights))
        state.history.append(record)
        if norm <= s.tol:
            state.converged = state.done = True
        elif state.iterations >= s.max_iter:
            state.done = True
        else:
            with np.errstate(all="ignore"):  # overflow is checked just below
                steps = OPTIMIZERS[s.optimizer].step(state.optimizer, grads, lr=s.lr,
                                                     momentum=s.momentum)
                updated = {w: state.weights[w] - step for w, step in steps.items()}
            if not math.isfinite(_sum_of_squares(list(updated.values()))):
                for w, new in updated.items():  # which one (or finite squares overflowing)
                    if not np.all(np.isfinite(new)):
                        self._nonfinite_weight(w)
            for w, new in updated.items():
                state.weights[w] = float(new) if np.ndim(new) == 0 else new
            state.iterations += 1
        return record

    def run(self, callback: Callable[[GradientDescent, Record], bool | None] | None = None
            ) -> TrainResult:
        """Step until done; ``callback(self, record)`` returning True stops early."""
        with single_threaded_blas():
            while not self.state.done:
                record = self.step()
                if callback is not None and callback(self, record):
                    break
        return self.result()

    def result(self) -> TrainResult:
        state = self.state
        return TrainResult(dict(state.weights), list(state.history), state.converged,
                           state.iterations)
