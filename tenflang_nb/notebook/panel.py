"""The training panel: gradient descent you can watch, stop, tune and reset in a notebook.

Learning-rate and tolerance sliders, a max-iterations box, Train / Stop / Reset buttons, a
status line, a weights readout, a loss curve and, when its box is ticked, the loss landscape
with the path of descent (see :class:`LiveLandscape`). Live training is an asyncio task on the
kernel's running loop, stepping the trainer in chunks of about :data:`CHUNK_SECONDS` and
yielding between chunks, so widget events (a slider, Stop) are handled while it runs. Threads
are not an option: ipykernel drops display and widget updates made from them.

Behaviour:

- **Train** when idle starts from the initial weights; after **Stop** it continues from the
  current weights and iteration count, with the current slider values; after a finished run
  (converged or max iterations) or an error it **starts over** from the initial weights, so
  each curve shown is one run and "change a slider, press Train" compares settings. The
  message line says which of these happened.
- Slider changes apply at once, also to a running run (the trainer's ``lr`` / ``tol`` /
  ``max_iter`` are plain fields read at every step).
- **Reset** stops a running run and restores the initial weights, clearing history and curve;
  it keeps the slider values.
- Errors raised while training (:class:`~tenflang_nb.core.errors.TenFlangError`, e.g. a
  ``ComputeError`` when a value turns NaN, naming the GCP line) are shown in the panel and
  leave the state ``"stopped"``: no traceback, no stuck task.
- Without a running event loop (plain IPython, scripts) or with ``live=False`` (nbval,
  ``--no-live``), training is synchronous and deterministic and draws the curve once.

The controls are the training settings of :data:`~tenflang_nb.core.settings.SETTINGS` (their
labels, help and defaults); :data:`PARAMETERS` adds only how each is shown (widget, range).
"""

from __future__ import annotations

import asyncio
import base64
import html
import logging
import math
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import ipywidgets as widgets
import numpy as np

from ..core.errors import TenFlangError, printable
from ..core.formatting import fmt_number
from ..core.landscape import (
    Landscape,
    Layout,
    LossEvaluator,
    Plane,
    grid_limits,
    path_of,
    plane_for,
)
from ..core.landscape import landscape as compute_landscape
from ..core.settings import SETTINGS, Setting, TrainSettings
from ..core.train import GradientDescent, TrainResult
from .loop import live_loop
from .plotting import LiveFigure, describe_plane, loss_curve_png
from .views_html import CARD_STYLE
from .views_tables import weights_html

__all__ = ["CHUNK_SECONDS", "PARAMETERS", "REDRAW_SECONDS", "STATES", "LiveLandscape",
           "Parameter", "TrainingPanel", "stop_live_runs"]

logger = logging.getLogger(__name__)

State = Literal["idle", "running", "stopped", "done"]
STATES: tuple[State, ...] = ("idle", "running", "stopped", "done")
# Steps per chunk are sized by time, not count: one step costs microseconds for the seed
# example and seconds for a big tensor program, and what matters is how long the kernel is
# deaf to widget events between yields.
CHUNK_SECONDS = 0.05
# The curve is redrawn at most this often during a live run (and never more than a quarter of
# the time, since a redraw costs tens of milliseconds).
REDRAW_SECONDS = 0.2


@dataclass(frozen=True)
class Parameter:
    """How the panel shows one training setting: a control, and its initial range
    (``low`` / ``high``, widened to fit a value outside it).

    >>> lr = PARAMETERS[0]
    >>> lr.label, lr.widget, lr.default
    ('learning rate', 'FloatLogSlider', 0.1)
    """

    name: str  # the setting (a field of TrainSettings)
    widget: str  # "FloatLogSlider" or "BoundedIntText"
    low: float
    high: float
    step: float = 0.1  # slider step; for a log slider, in decades

    @property
    def setting(self) -> Setting:
        return SETTINGS[self.name]

    @property
    def label(self) -> str:
        return self.setting.label

    @property
    def default(self) -> Any:
        return self.setting.default

    @property
    def option(self) -> str:
        return self.setting.option

    def check(self, value: float) -> str | None:
        """Why this control cannot show ``value`` (a valid setting), or None if it can."""
        if self.widget == "FloatLogSlider" and value <= 0:
            return (f"{self.label} must be > 0 to be shown on a log slider; "
                    f"use a tiny value such as {fmt_number(self.low)}")
        return None

    def control(self, value: float) -> widgets.ValueWidget:
        """The ipywidgets control showing ``value`` (the range widens to include it).

        >>> PARAMETERS[0].control(100.0).value
        100.0
        """
        common: dict[str, Any] = {
            "description": self.label, "tooltip": self.setting.help,
            "style": {"description_width": "initial"}}
        if self.widget == "FloatLogSlider":
            lo, hi = math.log10(self.low), math.log10(self.high)
            if value > 0:
                # ipywidgets clamps a value outside the range without a word.
                lo = min(lo, math.floor(math.log10(value)))
                hi = max(hi, math.ceil(math.log10(value)))
            return widgets.FloatLogSlider(
                value=value, base=10, min=lo, max=hi, step=self.step, readout_format=".3g",
                continuous_update=False, layout=widgets.Layout(width="340px"), **common)
        if self.widget == "BoundedIntText":
            return widgets.BoundedIntText(
                value=int(value), min=int(self.low), max=max(int(self.high), int(value)),
                layout=widgets.Layout(width="220px"), **common)
        raise ValueError(f"unknown widget kind {self.widget!r} for parameter {self.name!r}")


# The settings the panel has controls for, in display order.
PARAMETERS: tuple[Parameter, ...] = (
    Parameter("lr", "FloatLogSlider", 1e-4, 10.0),
    Parameter("tol", "FloatLogSlider", 1e-8, 1e-1),
    Parameter("max_iter", "BoundedIntText", 0, 1_000_000),
)


class LiveLandscape:
    """What the panel's landscape shows, kept between redraws: the grid is computed once per
    run, again only when the path leaves it (with room to grow) or, for a slice through the
    weights, through the final weights when the run ends; each redraw only projects the
    path anew. The slice is ``model.landscape()``'s default (seed 0), at a coarser grid.

    >>> from tenflang_nb.core.api import compile, parse, trainer
    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> t = trainer(compile(parse(SEED_EXAMPLE)), {"x": [1.0, 2.0], "y": [0.9, 0.6]},
    ...             max_iter=5)
    >>> live = LiveLandscape()
    >>> _ = t.run(); png, _seconds = live.png(t, run=0, final=True)
    >>> png[:4], live.grids, live.landscape.plane.labels
    (b'\x89PNG', 1, ('w',))
    """

    resolution = 30  # per axis: 900 settings, a third of a second for the digits model
    margin = 0.5  # of the path's extent on each side while it is still growing

    def __init__(self) -> None:
        self.trainer: GradientDescent | None = None
        self.evaluator: LossEvaluator | None = None
        self.landscape: Landscape | None = None
        self.figure: LiveFigure | None = None  # the grid drawn, paths redrawn on it
        self.run: object = None
        self.grids = 0  # grids computed (tests check that a redraw does not recompute)

    def png(self, trainer: GradientDescent, run: object, final: bool) -> tuple[bytes, float]:
        """The landscape image for ``trainer`` now, and the seconds spent on a new grid.
        ``run`` changes when a run starts over; ``final`` once it has ended."""
        if trainer is not self.trainer or self.evaluator is None:
            self.trainer, self.evaluator, self.landscape = trainer, LossEvaluator.of(trainer), None
        if run != self.run:
            self.run, self.landscape = run, None
        evaluator = self.evaluator
        layout = evaluator.layout
        weights = trainer.weights
        land = self.landscape
        if land is not None and self.figure is not None:
            path = path_of(land.plane, layout, trainer.history, current=weights)
            moved = (final and land.plane.kind == "random"
                     and not np.array_equal(land.plane.origin, layout.flat(weights)))
            if land.contains([path]) and not moved:
                self.landscape = land.with_paths([path])
                return self.figure.png([path]), 0.0
        started = time.perf_counter()
        plane = self._plane(layout, weights)
        path = path_of(plane, layout, trainer.history, current=weights)
        limits = grid_limits(plane, [path], margin=0.2 if final else self.margin)
        land = compute_landscape(evaluator, plane, [path], resolution=self.resolution,
                                 limits=limits)
        self.grids += 1
        seconds = time.perf_counter() - started
        self.landscape = land
        title = describe_plane(plane)
        if not final:  # the slice goes through the weights of now, not through final ones
            now = (f"the weights of iteration {trainer.iterations}" if trainer.iterations
                   else "the initial weights")
            title = title.replace("the final weights", now)
        self.figure = LiveFigure(land, title=title, width=4.6,
                                 height=3.5 if land.dims == 1 else 3.7)
        return self.figure.png(land.paths), seconds

    @staticmethod
    def _plane(layout: Layout, weights: dict[str, object]) -> Plane:
        try:
            return plane_for(layout, weights)
        except TenFlangError:
            # every weight 0 (a zero start): no filter-normalised direction; show the first
            # two components instead
            return plane_for(layout, weights, [layout.label(0), layout.label(1)])


class TrainingPanel:
    """Train a GCP by gradient descent from a widget panel (see the module docstring).

    ``make_trainer(settings)`` builds the :class:`GradientDescent`; it is called once (again
    only if it failed). ``settings`` are the :class:`TrainSettings` to start from; the
    controls change their learning rate, tolerance and max iterations.
    ``on_finish(trainer)`` is called whenever a run ends by finishing or by Stop, not after
    an error (then :attr:`error` is set and the state is ``"stopped"``) nor on Reset.
    Display the panel (it shows :attr:`widget`, with a static HTML snapshot for frontends
    without widgets). For a saved notebook to hold one stable output (nbval), call
    :meth:`run_sync` *before* displaying.

    >>> from tenflang_nb.core.api import TrainSettings, compile, parse, trainer
    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> gcp = compile(parse(SEED_EXAMPLE))
    >>> data = {"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}
    >>> panel = TrainingPanel(lambda settings: trainer(gcp, data, settings),
    ...                       TrainSettings(lr=0.1, tol=1e-3, max_iter=50), live=False)
    >>> panel.run_sync().iterations, panel.state
    (50, 'done')
    >>> panel.status
    'iteration 50/50 · loss 0.0351 · |grad| 0.0839 · reached max iterations'
    >>> panel.reset()
    >>> panel.state, panel.trainer.iterations, panel.stop_button.disabled
    ('idle', 0, True)
    """

    chunk_seconds: float = CHUNK_SECONDS
    redraw_seconds: float = REDRAW_SECONDS

    def __init__(self, make_trainer: Callable[[TrainSettings], GradientDescent],
                 settings: TrainSettings | None = None, *, live: bool,
                 on_finish: Callable[[GradientDescent], None] | None = None,
                 log_scale: bool = True, landscape: bool = False) -> None:
        self._make_trainer = make_trainer
        self._base = settings or TrainSettings()
        self.live = live
        self.on_finish = on_finish
        self.state: State = "idle"
        self.trainer: GradientDescent | None = None
        self.error: BaseException | None = None
        self.redraws = 0  # how many times the curve was rendered (tests check the throttle)
        self.chunks = 0  # live chunks run, idem
        self._token: object | None = None  # identifies the live run allowed to step
        self._task: asyncio.Task[None] | None = None  # kept: the loop holds tasks weakly
        self._handles: list[Any] = []  # IPython display handles showing this panel
        self._png = b""
        self._last_draw = -math.inf
        self._draw_cost = 0.0
        self._note = ""
        self._landscape = LiveLandscape()
        self._landscape_png = b""
        self._runs = 0  # counts runs that start over, so the landscape knows a new one

        notes = []
        self.controls: dict[str, widgets.ValueWidget] = {}
        for p in PARAMETERS:
            value = getattr(self._base, p.name)
            problem = p.check(value)
            if problem:
                notes.append(f"{problem}: using {fmt_number(p.default)}")
                value = p.default
            control = p.control(value)
            control.observe(self._on_setting, names="value")
            self.controls[p.name] = control
        self._note = "; ".join(notes)

        self.log_scale = widgets.Checkbox(value=log_scale, description="log scale", indent=False,
                                          layout=widgets.Layout(width="110px"))
        self.log_scale.observe(lambda _change: self._draw(), names="value")
        self.show_landscape = widgets.Checkbox(
            value=landscape, description="landscape", indent=False,
            tooltip="the loss landscape beside the curve, with the path of descent",
            layout=widgets.Layout(width="110px"))
        self.show_landscape.observe(lambda _change: self._draw(), names="value")
        self.train_button = widgets.Button(description="Train", icon="play",
                                           button_style="success")
        self.stop_button = widgets.Button(description="Stop", icon="stop",
                                          button_style="warning")
        self.reset_button = widgets.Button(description="Reset", icon="undo",
                                           tooltip="restore the initial weights")
        self.train_button.on_click(self._on_train)
        self.stop_button.on_click(self._on_stop)
        self.reset_button.on_click(self._on_reset)
        self.status_html = widgets.HTML()
        self.message_html = widgets.HTML()
        self.weights_html = widgets.HTML(layout=widgets.Layout(margin="0 0 0 1em"))
        self.plot = widgets.Image(format="png", layout=widgets.Layout(width="500px"))
        self.landscape_plot = widgets.Image(format="png", layout=widgets.Layout(width="460px"))
        c = self.controls
        self.widget = widgets.VBox([
            widgets.HBox([c["lr"], c["tol"]]),
            widgets.HBox([c["max_iter"], self.log_scale, self.show_landscape, self.train_button,
                          self.stop_button, self.reset_button]),
            self.status_html, self.message_html,
            # wraps: the curve, the landscape and the weights do not fit every page's width
            widgets.HBox([self.plot, self.landscape_plot, self.weights_html],
                         layout=widgets.Layout(flex_flow="row wrap")),
        ])
        self._build_trainer()
        self._refresh(draw=True)

    # --- public API ----------------------------------------------------------------------

    @property
    def settings(self) -> TrainSettings:
        """The settings the next step trains with: the controls' values on the given ones."""
        return self._base.replace(**{name: c.value for name, c in self.controls.items()})

    @property
    def status(self) -> str:
        """The status line, e.g. ``iteration 120/1000 · loss 0.0123 · |grad| 4.1e-3 · running``."""
        t = self.trainer
        parts = []
        if t is not None:
            parts.append(f"iteration {t.iterations}/{self.controls['max_iter'].value}")
            if t.history:
                last = t.history[-1]
                parts += [f"loss {fmt_number(last.loss, 3, notation='short')}",
                          f"|grad| {fmt_number(last.grad_norm, 3, notation='short')}"]
        parts.append(self._state_words())
        return " · ".join(parts)

    def run_sync(self) -> TrainResult:
        """Train to the end, blocking; deterministic; draws the curve once at the end.

        Same start rule as Train (continue after Stop, start over after done). Errors are
        shown in the panel, not raised; the result then holds the iterations made so far.
        """
        if self.state == "running":  # a live run: take it over from where it is
            self._token = None
            self.state = "stopped"
        if not self._begin(draw=False):
            return self._result()
        trainer = self.trainer
        assert trainer is not None
        try:
            with np.errstate(all="ignore"):
                trainer.run()
        except KeyboardInterrupt:
            # An interrupted kernel must not leave a panel that claims to be running.
            self._end("stopped")
            raise
        except Exception as err:
            self._fail(err)
            return self._result()
        self._end("done")
        return self._result()

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
        token = self._begin(draw=True)
        if token is not None:
            self._task = loop.create_task(self._run_async(token))
            _LIVE.add(self)

    def stop(self) -> None:
        """Stop a live run after the current chunk; Train then continues from here."""
        self._on_stop()

    def reset(self) -> None:
        """Stop any run, restore the initial weights and clear history and curve."""
        self._on_reset()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any
                          ) -> dict[str, Any]:
        data = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        data["text/plain"] = repr(self)
        data["text/html"] = self._static_html()
        return data

    def _ipython_display_(self) -> None:
        # Displayed with a handle so the static fallback saved in the notebook can be updated
        # to the final state when a live run ends (the widget itself updates by its comm).
        from IPython.display import display

        handle = display(self._repr_mimebundle_(), raw=True, display_id=True)
        if handle is not None:
            self._handles.append(handle)

    def __repr__(self) -> str:
        return f"<TenFlang training panel: {self.status}>"

    # --- event handlers (pure: testable without a browser or a kernel) ---------------------

    def _on_train(self, _button: Any = None) -> None:
        if self.state == "running":
            return
        if self.live:
            self.start()
        else:
            self.run_sync()

    def _on_stop(self, _button: Any = None) -> None:
        if self.state != "running":
            return
        # The task notices the token change at its next resume and exits without stepping:
        # handlers run between chunks on the same loop, so the trainer is never mid-step.
        self._token = None
        self._end("stopped")

    def _on_reset(self, _button: Any = None) -> None:
        self._token = None
        self._runs += 1
        if self.trainer is None:
            self._build_trainer()
        else:
            self.trainer.reset()
            self.error = None
        if self.trainer is not None:
            self.state = "idle"
            self._note = "reset to the initial weights"
        self._refresh(draw=True)
        self._publish()

    def _on_setting(self, _change: Any = None) -> None:
        self._apply_settings()
        self._refresh(draw=False)

    async def _run_async(self, token: object | None = None) -> None:
        """The live run: chunks of steps, yielding to the loop between them.

        ``start()`` begins the run and passes its token; awaited directly (tests), it begins
        the run itself.
        """
        if token is None:
            token = self._begin(draw=True)
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
                    while not trainer.done:
                        trainer.step()
                        if clock() >= deadline:
                            break
                self.chunks += 1
                if trainer.done:
                    self._end("done")
                    return
                due = max(self.redraw_seconds, 3 * self._draw_cost)
                self._refresh(draw=clock() - self._last_draw >= due)
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

    def _build_trainer(self) -> None:
        try:
            self.trainer = self._make_trainer(self.settings)
        except TenFlangError as err:
            self.trainer = None
            self.error = err
            self.state = "stopped"
        else:
            self.error = None

    def _apply_settings(self) -> None:
        if self.trainer is not None:
            self.trainer.settings = self.settings

    def _begin(self, draw: bool) -> object | None:
        """Prepare a run (start over or continue) and enter "running"; the run's token."""
        if self.trainer is None:
            self._build_trainer()
            if self.trainer is None:
                self._refresh(draw=draw)
                return None
        trainer = self.trainer
        if self.state == "done" or self.error is not None or trainer.done:
            trainer.reset()
            self._runs += 1
            self._note = "started over from the initial weights (Stop, then Train, continues)"
        elif trainer.iterations or trainer.history:
            self._note = f"continuing from iteration {trainer.iterations}"
        else:
            self._note = ""
        self.error = None
        self._apply_settings()
        self.state = "running"
        self._token = token = object()
        self._last_draw = time.perf_counter()
        self._refresh(draw=draw)
        return token

    def _end(self, state: State, notify: bool = True) -> None:
        self.state = state
        # Say what Train will do next, since it differs after Stop and after the end.
        if state == "done":
            self._note = "finished: Train starts over from the initial weights"
        elif self.error is None and self.trainer is not None:
            self._note = (f"stopped: Train continues from iteration {self.trainer.iterations} "
                          "with the current settings")
        self._refresh(draw=True)
        self._publish()
        if notify:
            self._notify()

    def _fail(self, err: BaseException) -> None:
        self._token = None
        self.error = err
        if not isinstance(err, TenFlangError):
            # A bug, not the user's program: keep the traceback for whoever debugs it, out of
            # the notebook.
            logger.debug("training failed", exc_info=err)
        self._note = "press Train to start over from the initial weights"
        if isinstance(err, TenFlangError) and self.trainer and self.trainer.iterations:
            self._note += " (with a smaller learning rate?)"
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
            self._note = printable(f"internal error after training: {type(err).__name__}: {err}")
            self._refresh(draw=False)

    def _result(self) -> TrainResult:
        if self.trainer is None:
            return TrainResult({}, [], False, 0)
        return self.trainer.result()

    def _state_words(self) -> str:
        if self.state == "done" and self.trainer is not None:
            return "converged" if self.trainer.converged else "reached max iterations"
        if self.state == "stopped" and self.error is not None:
            return "stopped by an error"
        return {"idle": "ready"}.get(self.state, self.state)

    def _error_text(self) -> str:
        err = self.error
        if err is None:
            return ""
        if isinstance(err, TenFlangError):
            return err.render()
        return printable(f"internal error: {type(err).__name__}: {err}")

    def _message_html(self) -> str:
        parts = []
        if self.error is not None:
            parts.append("<pre style='color:#b00020;margin:0;white-space:pre-wrap'>"
                         f"{html.escape(self._error_text())}</pre>")
        if self._note:
            parts.append(f"<i>{html.escape(self._note)}</i>")
        return "".join(parts)

    def _refresh(self, draw: bool) -> None:
        """Push the state to the widgets (and re-render the curve if ``draw``)."""
        running = self.state == "running"
        self.train_button.disabled = running
        self.stop_button.disabled = not running
        self.reset_button.disabled = self.state == "idle"
        self.train_button.tooltip = self._train_tooltip()
        self.status_html.value = f"<code>{html.escape(self.status)}</code>"
        self.message_html.value = self._message_html()
        weights = self.trainer.weights if self.trainer is not None else {}
        self.weights_html.value = weights_html(weights)
        if draw:
            self._draw()

    def _train_tooltip(self) -> str:
        if self.state == "stopped" and self.error is None and self.trainer is not None:
            return f"continue from iteration {self.trainer.iterations}"
        if self.state in ("done", "stopped"):
            return "start over from the initial weights"
        return "train from the initial weights"

    def _draw(self) -> None:
        started = time.perf_counter()
        history = self.trainer.history if self.trainer is not None else []
        try:
            self._png = loss_curve_png(history, log_scale=self.log_scale.value)
        except Exception as err:
            # The curve is an illustration: a plotting failure must not end or wedge the run.
            logger.debug("loss curve failed", exc_info=err)
            self._png = b""
            self._note = f"could not draw the loss curve: {type(err).__name__}: {err}"
            self.message_html.value = self._message_html()
        self.plot.value = self._png
        grid_seconds = self._draw_landscape()
        self.redraws += 1
        self._last_draw = time.perf_counter()
        # a new grid is a one-off (once per run): it must not slow every later redraw
        self._draw_cost = self._last_draw - started - grid_seconds

    def _draw_landscape(self) -> float:
        """Redraw the landscape if it is shown; the seconds spent computing a new grid."""
        shown = self.show_landscape.value
        self.landscape_plot.layout.display = None if shown else "none"
        if not shown or self.trainer is None:
            self._landscape_png = b""
            self.landscape_plot.value = b""
            return 0.0
        seconds = 0.0
        try:
            self._landscape_png, seconds = self._landscape.png(
                self.trainer, run=(id(self.trainer), self._runs),
                final=self.state in ("done", "stopped"))
        except Exception as err:
            # Like the curve, an illustration: it must not end or wedge the run.
            logger.debug("loss landscape failed", exc_info=err)
            self._landscape_png = b""
            reason = printable(err.first.message if isinstance(err, TenFlangError) else (
                f"{type(err).__name__}: {err}"))
            self._note = f"could not draw the loss landscape: {reason}"
            self.message_html.value = self._message_html()
        self.landscape_plot.value = self._landscape_png
        return seconds

    def _static_html(self) -> str:
        """The picture a saved notebook keeps (widgets are not saved): a note saying it is
        one, the status, the curve, the weights. Inline styles and a data-URI image only,
        so it reads the same in an untrusted notebook (JupyterLab sanitizes its HTML)."""
        status = self.status
        when = ""
        if self.state == "running":  # published when a live run starts; it went on after
            status = status.removesuffix(" · running") + " · still running when saved"
            when = " taken while it trained"
        note = ("<div style='color:#4b5563;font-size:12px;margin-bottom:2px'>"
                f"<b>Saved picture</b> of the training panel{when}: run the cell to train "
                "live, with sliders and Train / Stop / Reset.</div>")
        error = ""
        if self.error is not None:  # the note on what Train does next needs the buttons
            error = ("<pre style='color:#b00020;margin:0;white-space:pre-wrap'>"
                     f"{html.escape(self._error_text())}</pre>")
        has_curve = self.trainer is not None and bool(self.trainer.history) and self._png
        if has_curve:
            image = base64.b64encode(self._png).decode("ascii")
            curve = (f"<img alt='loss curve: {html.escape(status)}' "
                     f"src='data:image/png;base64,{image}'/>")
        else:
            curve = "<div style='color:#4b5563;margin:1em 0'><i>(no loss curve yet)</i></div>"
        landscape = wrap = ""
        if self.show_landscape.value and self._landscape_png:
            encoded = base64.b64encode(self._landscape_png).decode("ascii")
            landscape = ("<img alt='loss landscape with the path of descent' "
                         f"src='data:image/png;base64,{encoded}'/>")
            wrap = ";flex-wrap:wrap"  # two images and the weights: wrap on a narrow page
        return (
            f"<div class='tenflang-training-panel' style='{CARD_STYLE}'>{note}"
            f"<div><code>{html.escape(status)}</code></div>{error}"
            f"<div style='display:flex;align-items:flex-start{wrap}'>{curve}{landscape}"
            f"<div style='margin-left:1em'>{self.weights_html.value}</div></div>"
            f"<div><small>{html.escape(self._settings_text())}</small></div></div>")

    def _settings_text(self) -> str:
        values = {p.label: self.controls[p.name].value for p in PARAMETERS}
        return ", ".join(f"{label} {v}" if isinstance(v, int) else f"{label} {fmt_number(v)}"
                         for label, v in values.items())

    def _publish(self) -> None:
        if not self._handles:
            return
        bundle = self._repr_mimebundle_()
        for handle in self._handles:
            try:
                handle.update(bundle, raw=True)
            except Exception as err:  # a closed frontend must not break training
                logger.debug("display update failed", exc_info=err)



# Panels that started a live run in this kernel (weakly: a panel nobody shows may go).
_LIVE: weakref.WeakSet[TrainingPanel] = weakref.WeakSet()


def stop_live_runs(at_iteration: int | None = None) -> int:
    """Stop every live run of this kernel as its Stop button would (each panel then
    publishes its picture to the saved notebook); returns how many it stopped.

    With ``at_iteration``, each run is first brought to exactly that iteration, going on or
    (when it is past it) starting over from the initial weights: gradient descent is
    deterministic, so the picture is the same every time. ``notebooks/refresh.py`` calls this
    after a tutorial's last cell, so the saved copy shows a curve rather than the instant the
    run began, and an unchanged one on every refresh. A run that already ended by itself has
    its final picture published again.

    >>> stop_live_runs()
    0
    """
    stopped = 0
    for panel in list(_LIVE):
        if panel.state != "running" or panel.trainer is None:
            # ended by itself between cells: send its final picture again, from this cell (a
            # headless runner such as nbclient keeps only the display updates that arrive
            # while the cell that sent them runs, so the saved copy would say "running")
            panel._publish()
            continue
        panel._token = None  # the task exits at its next resume, without stepping
        trainer = panel.trainer
        if at_iteration is not None:
            if trainer.iterations > at_iteration:
                trainer.reset()
            try:
                with np.errstate(all="ignore"):
                    while trainer.iterations < at_iteration and not trainer.done:
                        trainer.step()
            except Exception as err:
                panel._fail(err)
                stopped += 1
                continue
        panel._end("done" if trainer.done else "stopped")
        stopped += 1
    return stopped
