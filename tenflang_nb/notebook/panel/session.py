"""A training session: gradient descent you can start, stop, continue and reset, with its
state, status line and history: the training panel without its widgets (testable without
ipywidgets and without a kernel; the panel in ``panel/widget.py`` only wires controls to it).

Live training is an asyncio task on the kernel's running loop, stepping the trainer in chunks
of about :data:`CHUNK_SECONDS` and yielding between chunks, so widget events (a slider, Stop)
are handled while it runs. Threads are not an option: ipykernel drops display and widget
updates made from them.

Behaviour:

- **Train** (:meth:`TrainingSession.train`) when idle starts from the initial weights; after
  **Stop** it continues from the current weights and iteration count, with the current
  settings; after a finished run (converged or max iterations) or an error it **starts over**
  from the initial weights, so each curve shown is one run and "change a slider, press Train"
  compares settings. The note says which of these happened.
- Settings changes apply at once, also to a running run (the trainer's ``lr`` / ``tol`` /
  ``max_iter`` are plain fields read at every step).
- **Reset** stops a running run and restores the initial weights, clearing the history; it
  keeps the settings.
- Errors raised while training (:class:`~tenflang_nb.core.errors.TenFlangError`, e.g. a
  ``ComputeError`` when a value turns NaN, naming the GCP line) are kept in :attr:`error`
  and leave the state ``"stopped"``: no traceback, no stuck task.
- Without a running event loop (plain IPython, scripts) or with ``live=False`` (nbval,
  ``--no-live``), training is synchronous and deterministic.
- A ``reference`` trainer (the true GCP's, beside an edited one) runs in lockstep with the
  trainer, from the same start with the same settings; a run ends when both have. Its
  errors stop it alone (:attr:`reference_error`).

Whoever shows the session (a :class:`Display`) hears of every change.

>>> from tenflang_nb.core.api import TrainSettings, compile, parse, trainer
>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> gcp = compile(parse(SEED_EXAMPLE))
>>> data = {"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}
>>> session = TrainingSession(lambda settings: trainer(gcp, data, settings),
...                           TrainSettings(lr=0.1, tol=1e-3, max_iter=50), live=False)
>>> session.run_sync().iterations, session.state, session.note
(50, 'done', 'finished: Train starts over from the initial weights')
>>> session.status
'iteration 50/50 · loss 0.0351 · |grad| 0.0839 · reached max iterations'
>>> session.reset()
>>> session.state, session.trainer.iterations, len(session.history)
('idle', 0, 0)
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Literal, Protocol

import numpy as np

from ...core.errors import TenFlangError, printable
from ...core.formatting import fmt_number
from ...core.settings import TrainSettings
from ...core.train import GradientDescent, Record, TrainResult, single_threaded_blas
from ..loop import live_loop

__all__ = ["CHUNK_SECONDS", "Display", "State", "TrainingSession", "stop_live_runs"]

logger = logging.getLogger(__name__)

State = Literal["idle", "running", "stopped", "done"]
# Steps per chunk are sized by time, not count: one step costs microseconds for the seed
# example and seconds for a big tensor program, and what matters is how long the kernel is
# deaf to widget events between yields.
CHUNK_SECONDS = 0.05


class Display(Protocol):
    """What shows a session (the training panel): told of every change."""

    def update(self, redraw: bool) -> None:
        """Show the state now; ``redraw``: the pictures too (the curve changed)."""

    def progress(self) -> None:
        """A live chunk ran: show the status, and redraw when it is due."""

    def publish(self) -> None:
        """A run ended or was reset: what a saved notebook keeps changed."""


class TrainingSession:
    """Gradient descent started, stopped, continued and reset (see the module docstring).

    ``make_trainer(settings)`` builds the :class:`GradientDescent`; it is called once (again
    only if it failed), or not at all when ``trainer`` is one already built. ``settings``:
    what training starts with (:attr:`settings` changes them, also mid-run).
    ``on_finish(trainer)`` is called whenever a run ends by finishing or by Stop, not after
    an error (then :attr:`error` is set and the state is ``"stopped"``) nor on Reset.
    ``display`` hears of every change. ``reference``: a second trainer run beside it (see
    the module docstring).
    """

    chunk_seconds: float = CHUNK_SECONDS

    def __init__(self, make_trainer: Callable[[TrainSettings], GradientDescent],
                 settings: TrainSettings | None = None, *, live: bool,
                 trainer: GradientDescent | None = None,
                 on_finish: Callable[[GradientDescent], None] | None = None,
                 display: Display | None = None,
                 reference: GradientDescent | None = None) -> None:
        self._make_trainer = make_trainer
        self._settings = settings or TrainSettings()
        self.live = live
        self.on_finish = on_finish
        self.display = display
        self.state: State = "idle"
        self.trainer: GradientDescent | None = None
        self.error: BaseException | None = None
        self.note = ""  # what just happened, or what Train does next
        self.chunks = 0  # live chunks run (tests check the chunking)
        self.runs = 0  # counts runs that start over, so a picture knows a new one
        self.task: asyncio.Task[None] | None = None  # kept: the loop holds tasks weakly
        self._token: object | None = None  # identifies the live run allowed to step
        self.reference = reference
        self.reference_error: TenFlangError | None = None
        if reference is not None:
            reference.settings = self.settings
        if trainer is None:
            self._build_trainer()
        else:
            self.trainer = trainer
            trainer.settings = self.settings

    # --- what it shows -------------------------------------------------------------------

    @property
    def settings(self) -> TrainSettings:
        """The settings the next step trains with; setting them applies them at once."""
        return self._settings

    @settings.setter
    def settings(self, settings: TrainSettings) -> None:
        self._settings = settings
        for trainer in (self.trainer, self.reference):
            if trainer is not None:
                trainer.settings = settings

    @property
    def history(self) -> Sequence[Record]:
        """The current run's records, one per iteration (empty before training)."""
        return self.trainer.history if self.trainer is not None else []

    @property
    def status(self) -> str:
        """The status line, e.g. ``iteration 120/1000 · loss 0.0123 · |grad| 4.1e-3 · running``."""
        t = self.trainer
        parts = []
        if t is not None:
            parts.append(f"iteration {t.iterations}/{self.settings.max_iter}")
            if t.history:
                last = t.history[-1]
                parts.append(f"loss {fmt_number(last.loss, 3, notation='short')}")
                if last.test_loss is not None:
                    parts.append(f"test loss {fmt_number(last.test_loss, 3, notation='short')}")
                parts.append(f"|grad| {fmt_number(last.grad_norm, 3, notation='short')}")
        parts.append(self._state_words())
        return " · ".join(parts)

    @property
    def error_text(self) -> str:
        """The error that stopped the run, as the user reads it ("" without one)."""
        err = self.error
        if err is None:
            return ""
        if isinstance(err, TenFlangError):
            return err.render()
        return printable(f"internal error: {type(err).__name__}: {err}")

    @property
    def train_action(self) -> str:
        """What Train does next."""
        if self.state == "stopped" and self.error is None and self.trainer is not None:
            return f"continue from iteration {self.trainer.iterations}"
        if self.state in ("done", "stopped"):
            return "start over from the initial weights"
        return "train from the initial weights"

    def result(self) -> TrainResult:
        """The current run as a :class:`TrainResult` (so far, when it has not ended)."""
        if self.trainer is None:
            return TrainResult({}, [], False, 0)
        return self.trainer.result()

    # --- what it does --------------------------------------------------------------------

    def train(self) -> None:
        """What the Train button does: :meth:`start` a live run, or :meth:`run_sync` one
        when the session is not live."""
        if self.state == "running":
            return
        if self.live:
            self.start()
        else:
            self.run_sync()

    def run_sync(self) -> TrainResult:
        """Train to the end, blocking; deterministic.

        Same start rule as Train (continue after Stop, start over after done). Errors are
        kept in :attr:`error`, not raised; the result then holds the iterations made so far.
        """
        if self.state == "running":  # a live run: take it over from where it is
            self._token = None
            self.state = "stopped"
        if not self._begin(redraw=False):
            return self.result()
        trainer = self.trainer
        assert trainer is not None
        try:
            with np.errstate(all="ignore"):
                trainer.run()
                self._run_reference()
        except KeyboardInterrupt:
            # An interrupted kernel must not leave a panel that claims to be running.
            self._end("stopped")
            raise
        except Exception as err:
            self._fail(err)
            return self.result()
        self._end("done")
        return self.result()

    def start(self) -> None:
        """Start (or continue) training as an asyncio task; falls back to :meth:`run_sync`.

        Needs a running event loop, as in an ipykernel cell or a widget callback. In plain
        IPython or a script there is none (a loop IPython runs only for an ``await`` cell does
        not run between cells), so the run is synchronous instead.
        """
        if self.state == "running":
            return
        loop = live_loop()
        if loop is None:
            self.run_sync()
            return
        token = self._begin(redraw=True)
        if token is not None:
            self.task = loop.create_task(self.run_live(token))
            _LIVE.add(self)

    def stop(self, at_iteration: int | None = None) -> None:
        """Stop a live run after the current chunk; Train then continues from here.

        With ``at_iteration``, the run is first brought to exactly that iteration, going on
        or (when it is past it) starting over from the initial weights: gradient descent is
        deterministic, so where it stops is the same every time.
        """
        if self.state != "running":
            return
        # The task notices the token change at its next resume and exits without stepping:
        # handlers run between chunks on the same loop, so the trainer is never mid-step.
        self._token = None
        trainer = self.trainer
        if at_iteration is None or trainer is None:
            self._end("stopped")
            return
        if trainer.iterations > at_iteration:
            trainer.reset()
        try:
            with np.errstate(all="ignore"):
                while trainer.iterations < at_iteration and not trainer.done:
                    trainer.step()
                self._run_reference(at_iteration)
        except Exception as err:
            self._fail(err)
            return
        self._end("done" if self._finished() else "stopped")

    def reset(self) -> None:
        """Stop any run, restore the initial weights and clear the history."""
        self._token = None
        self.runs += 1
        if self.trainer is None:
            self._build_trainer()
        else:
            self.trainer.reset()
            self.error = None
        self._reset_reference()
        if self.trainer is not None:
            self.state = "idle"
            self.note = "reset to the initial weights"
        self._update(redraw=True)
        self.publish()

    def publish(self) -> None:
        """Hand the state to what a saved notebook keeps again (a run that ended by itself
        between cells: see :func:`stop_live_runs`)."""
        if self.display is not None:
            self.display.publish()

    async def run_live(self, token: object | None = None) -> None:
        """The live run: chunks of steps, yielding to the loop between them.

        :meth:`start` begins the run and passes its token; awaited directly (tests), it
        begins the run itself.
        """
        if token is None:
            token = self._begin(redraw=True)
            if token is None:
                return
        trainer = self.trainer
        assert trainer is not None
        clock = time.perf_counter
        try:
            while self._token is token:
                deadline = clock() + self.chunk_seconds
                # errstate per chunk, never across an await: on older numpy it is per thread
                # and would leak into whatever else the loop runs meanwhile.
                with np.errstate(all="ignore"):
                    while not self._finished():
                        self._step()
                        if clock() >= deadline:
                            break
                self.chunks += 1
                if self._finished():
                    self._end("done")
                    return
                if self.display is not None:
                    self.display.progress()
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            if self._token is token:
                self._token = None
                self._end("stopped")
            raise
        except Exception as err:
            if self._token is token:
                self._fail(err)

    # --- internals -------------------------------------------------------------------------

    def _update(self, redraw: bool) -> None:
        if self.display is not None:
            self.display.update(redraw)

    def _build_trainer(self) -> None:
        try:
            self.trainer = self._make_trainer(self.settings)
        except TenFlangError as err:
            self.trainer = None
            self.error = err
            self.state = "stopped"
        else:
            self.error = None

    def _begin(self, redraw: bool) -> object | None:
        """Prepare a run (start over or continue) and enter "running"; the run's token."""
        if self.trainer is None:
            self._build_trainer()
            if self.trainer is None:
                self._update(redraw)
                return None
        trainer = self.trainer
        if self.state == "done" or self.error is not None or self._finished():
            trainer.reset()
            self._reset_reference()
            self.runs += 1
            self.note = "started over from the initial weights (Stop, then Train, continues)"
        elif trainer.iterations or trainer.history:
            self.note = f"continuing from iteration {trainer.iterations}"
        else:
            self.note = ""
        self.error = None
        trainer.settings = self.settings
        self.state = "running"
        self._token = token = object()
        self._update(redraw)
        return token

    def _finished(self) -> bool:
        """Whether the run is over: the trainer's, and the reference's beside it."""
        ref = self.reference
        return bool(self.trainer is not None and self.trainer.done and (
            ref is None or ref.done or self.reference_error is not None))

    def _step(self) -> None:
        """One step of the trainer and one of the reference, each until it is done."""
        trainer = self.trainer
        assert trainer is not None
        if not trainer.done:
            trainer.step()
        self._step_reference()

    def _step_reference(self) -> None:
        ref = self.reference
        if ref is None or ref.done or self.reference_error is not None:
            return
        try:
            ref.step()
        except TenFlangError as err:  # the reference's run ends; the trainer's goes on
            self.reference_error = err

    def _run_reference(self, until: int | None = None) -> None:
        """Bring the reference to its end (or to iteration ``until``, from the start if it
        is past it), as a live run would have."""
        ref = self.reference
        if ref is None:
            return
        if until is not None and ref.iterations > until:
            self._reset_reference()
        with single_threaded_blas():
            while not (ref.done or self.reference_error is not None
                       or (until is not None and ref.iterations >= until)):
                self._step_reference()

    def _reset_reference(self) -> None:
        if self.reference is not None:
            self.reference.reset()
            self.reference_error = None

    def _end(self, state: State, notify: bool = True) -> None:
        self.state = state
        # Say what Train will do next, since it differs after Stop and after the end.
        if state == "done":
            self.note = "finished: Train starts over from the initial weights"
        elif self.error is None and self.trainer is not None:
            self.note = (f"stopped: Train continues from iteration {self.trainer.iterations} "
                         "with the current settings")
        self._update(redraw=True)
        self.publish()
        if notify:
            self._notify()

    def _fail(self, err: BaseException) -> None:
        self._token = None
        self.error = err
        if not isinstance(err, TenFlangError):
            # A bug, not the user's program: keep the traceback for whoever debugs it, out of
            # the notebook.
            logger.debug("training failed", exc_info=err)
        self.note = "press Train to start over from the initial weights"
        if isinstance(err, TenFlangError) and self.trainer and self.trainer.iterations:
            self.note += " (with a smaller learning rate?)"
        # No on_finish: the weights that led to the error (often overflowing) are no result
        # to hand on; they stay readable on self.trainer.
        self._end("stopped", notify=False)

    def _notify(self) -> None:
        if self.on_finish is None or self.trainer is None:
            return
        try:
            self.on_finish(self.trainer)
        except Exception as err:
            logger.debug("on_finish failed", exc_info=err)
            self.note = printable(f"internal error after training: {type(err).__name__}: {err}")
            self._update(redraw=False)

    def announcement(self) -> tuple[str, str]:
        """What a screen reader is told when the run's state changes: a key that changes only
        with the state (so a redraw or a new iteration is not announced again), and the
        sentence (empty while idle: nothing happened yet)."""
        words = self._state_words()
        key = f"{self.state}:{words}"
        t = self.trainer
        if self.state == "idle" or t is None:
            return key, ""
        at = f"iteration {t.iterations}"
        loss = (f", loss {fmt_number(t.history[-1].loss, 3, notation='short')}"
                if t.history else "")
        if self.state == "running":
            return key, f"Training started at {at}."
        if self.error is not None:
            first = self.error_text.strip().splitlines()
            return key, f"Training stopped by an error at {at}: {first[0] if first else ''}"
        if self.state == "stopped":
            return key, f"Training stopped at {at}{loss}."
        return key, f"Training {words} at {at}{loss}."

    def _state_words(self) -> str:
        if self.state == "done" and self.trainer is not None:
            return "converged" if self.trainer.converged else "reached max iterations"
        if self.state == "stopped" and self.error is not None:
            return "stopped by an error"
        return {"idle": "ready"}.get(self.state, self.state)


# Sessions that started a live run in this kernel (weakly: a panel nobody shows may go).
_LIVE: weakref.WeakSet[TrainingSession] = weakref.WeakSet()


def stop_live_runs(at_iteration: int | None = None) -> int:
    """Stop every live run of this kernel as its Stop button would (each panel then
    publishes its picture to the saved notebook); returns how many it stopped.

    With ``at_iteration``, each run is first brought to exactly that iteration (see
    :meth:`TrainingSession.stop`), so the picture is the same every time.
    ``notebooks/refresh.py`` calls this after a tutorial's last cell, so the saved copy shows
    a curve rather than the instant the run began, and an unchanged one on every refresh. A
    run that already ended by itself has its final picture published again.

    >>> stop_live_runs()
    0
    """
    stopped = 0
    for session in list(_LIVE):
        if session.state != "running" or session.trainer is None:
            # ended by itself between cells: send its final picture again, from this cell (a
            # headless runner such as nbclient keeps only the display updates that arrive
            # while the cell that sent them runs, so the saved copy would say "running")
            session.publish()
            continue
        session.stop(at_iteration)
        stopped += 1
    return stopped
