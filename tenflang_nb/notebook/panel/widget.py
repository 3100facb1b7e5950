"""The training panel: the widgets of a :class:`~.session.TrainingSession` (gradient descent
you can watch, stop, tune and reset in a notebook).

Learning-rate and tolerance sliders, a max-iterations box (``controls``), Train / Stop / Reset
buttons, a status line, a weights readout, a loss curve (with the test loss, and a reference
run's curve beside it, when given) and, when their boxes are ticked, the loss landscape with
the path of descent (``figures.live``) and the decision boundary (``figures.boundary``). The
session does the training (and says what happens when, see ``session``); this module wires
the controls to it, redraws the pictures (at most every :data:`REDRAW_SECONDS` while it runs)
and keeps a static picture for a saved notebook, which holds no widgets.
"""

from __future__ import annotations

import base64
import html
import logging
import math
import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import ipywidgets as widgets

from ...core.boundary import BoundaryEvaluator
from ...core.errors import TenFlangError, printable
from ...core.formatting import fmt_number
from ...core.settings import TrainSettings
from ...core.train import GradientDescent, TrainResult
from .. import memory
from ..figures.boundary import LiveBoundary
from ..figures.canvas import kept_png
from ..figures.curve import LiveCurve, loss_curve_png
from ..figures.landscape import describe_plane
from ..figures.live import LiveLandscape
from ..figures.words import FigureWords, curve_words, landscape_words, values_html
from ..grading_mode import GRADING
from ..views.html import CARD_STYLE, SR_ONLY
from ..views.tables import weights_html
from .controls import PARAMETERS
from .session import State, TrainingSession

__all__ = ["REDRAW_SECONDS", "TrainingPanel"]

logger = logging.getLogger(__name__)

# The pictures are redrawn at most this often during a live run, counted from the start of
# the last redraw, and never more than a third of the time (a redraw costs milliseconds to
# tens of them: the curve and a boundary beside it about 25 ms). A redraw comes at the end of
# a training chunk, up to a chunk after it is due: 6 to 8 redraws a second, enough for a
# moving picture to look live.
REDRAW_SECONDS = 0.1

# What takes the keyboard's focus in the panel shows it (WCAG 2.4.7), as the views' controls
# do (tenflang.css): ipywidgets' slider handles show nothing, its buttons a faint 1-pixel line.
# A style element in an HTML widget: its HTML is not sanitized, and it holds for the panel in
# any frontend that draws the widgets. ipywidgets takes the outline off its text fields with
# "!important" rules of two classes and an attribute: this one, important too, repeats its
# class and pseudo-class to weigh more.
FOCUS_STYLE = ("<style>.tenflang-training-panel.tenflang-training-panel "
               ":focus-visible:focus-visible { outline: 2px solid #1d4ed8 !important; "
               "outline-offset: 1px !important; }</style>")

# the pictures, in the order of the panel's images: the key of each (its alt's, see
# _describe) and what it is
PICTURES = {"curve": "loss curve", "boundary": "decision boundary",
            "landscape": "loss landscape"}


class TrainingPanel:
    """Train a GCP by gradient descent from a widget panel: the controls of a
    :class:`TrainingSession` (``session``: see it for what Train, Stop and Reset do).

    ``make_trainer``, ``settings``, ``trainer``, ``live``, ``on_finish`` and ``reference`` are
    the session's; the controls change the settings' learning rate, tolerance and max
    iterations. ``boundary`` (the model's output over its input plane) adds a **boundary**
    box, ticked by ``show_boundary``; ``label`` and ``reference_label`` name the runs on the
    loss curve. Display
    the panel (it shows :attr:`widget`, with a static HTML picture for frontends without
    widgets). For a saved notebook to hold one stable output (nbval), call :meth:`run_sync`
    *before* displaying.

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> from tenflang_nb.notebook import TenFlangModel
    >>> net = TenFlangModel(SEED_EXAMPLE, "net")
    >>> panel = net.training_panel({"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}, live=False,
    ...                            tol=1e-3, max_iter=50)
    >>> panel.train_button.click()
    >>> panel.state, panel.stop_button.disabled, net.history == panel.trainer.history
    ('done', True, True)
    >>> panel.status
    'iteration 50/50 · loss 0.0351 · |grad| 0.0839 · reached max iterations'
    >>> panel.reset_button.click()
    >>> panel.state, panel.trainer.iterations, panel.reset_button.disabled
    ('idle', 0, True)
    """

    redraw_seconds: float = REDRAW_SECONDS

    def __init__(self, make_trainer: Callable[[TrainSettings], GradientDescent],
                 settings: TrainSettings | None = None, *, live: bool,
                 trainer: GradientDescent | None = None,
                 on_finish: Callable[[GradientDescent], None] | None = None,
                 log_scale: bool = True, landscape: bool = False,
                 boundary: BoundaryEvaluator | None = None, show_boundary: bool = False,
                 reference: GradientDescent | None = None, label: str | None = None,
                 reference_label: str = "reference") -> None:
        self._base = settings or TrainSettings()
        self.label, self.reference_label = label, reference_label
        self.redraws = 0  # how many times the pictures were drawn (tests check the throttle)
        self.displays: list[Any] = []  # IPython display handles showing this panel
        self.live_landscape = LiveLandscape()
        self.live_curve = LiveCurve()
        self._png = b""
        self._landscape_png = b""
        self.live_boundary = LiveBoundary(boundary) if boundary is not None else None
        self._boundary_png = b""
        self._last_start = -math.inf
        # the last redraws' costs: their median paces the next (one slowed down by a busy
        # machine must not hold the pictures back for long)
        self._draw_costs: deque[float] = deque(maxlen=5)

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

        self.log_scale = widgets.Checkbox(value=log_scale, description="log scale", indent=False,
                                          layout=widgets.Layout(width="110px"))
        self.log_scale.observe(lambda _change: self.redraw(), names="value")
        self.show_landscape = widgets.Checkbox(
            value=landscape, description="landscape", indent=False,
            tooltip="the loss landscape beside the curve, with the path of descent",
            layout=widgets.Layout(width="110px"))
        self.show_landscape.observe(lambda _change: self.redraw(), names="value")
        self.show_boundary = widgets.Checkbox(
            value=show_boundary and boundary is not None, description="boundary", indent=False,
            tooltip="the output over the input plane, with the data's points",
            layout=widgets.Layout(width="100px",
                                  display=None if boundary is not None else "none"))
        self.show_boundary.observe(lambda _change: self.redraw(), names="value")
        # plain buttons: ipywidgets' green and orange ones put white text on 4.1:1 and 2.7:1
        # (WCAG 1.4.3 asks 4.5:1); their icons and words tell them apart
        self.train_button = widgets.Button(description="Train", icon="play")
        self.stop_button = widgets.Button(description="Stop", icon="stop")
        self.reset_button = widgets.Button(description="Reset", icon="undo",
                                           tooltip="restore the initial weights")
        # a button pressed is disabled by what it starts or stops, and the browser drops the
        # focus of a disabled button: it goes to the button that undoes it (WCAG 2.4.3)
        self._focus_after: tuple[str, widgets.Button, widgets.Button] | None = None
        self.train_button.on_click(lambda _button: self._press(
            self.train_button, self.stop_button, self.session.train))
        self.stop_button.on_click(lambda _button: self._press(
            self.stop_button, self.train_button, self.session.stop))
        self.reset_button.on_click(lambda _button: self.session.reset())
        self.status_html = widgets.HTML()
        # a live region told only when the state changes: started, converged, stopped, an
        # error (never on every iteration or redraw)
        self.announce_html = widgets.HTML()
        self._announced = ""
        self.message_html = widgets.HTML()
        self.weights_html = widgets.HTML(layout=widgets.Layout(margin="0 0 0 1em"))
        self.plot = widgets.Image(format="png", layout=widgets.Layout(width="500px"))
        self.landscape_plot = widgets.Image(format="png", layout=widgets.Layout(width="460px"))
        self.boundary_plot = widgets.Image(format="png", layout=widgets.Layout(width="460px"))
        # the pictures' values as tables, under them, once a run has ended (not per redraw),
        # and their alt texts (hidden: the extension's panel.ts gives them to the pictures,
        # as ipywidgets' Image has no alt)
        self.values_html = widgets.HTML()
        for plot, key in zip(self._plots, PICTURES, strict=True):
            plot.add_class(f"tf-picture-{key}")
        c = self.controls
        self.widget = widgets.VBox([
            widgets.HBox([c["lr"], c["tol"]]),
            widgets.HBox([c["max_iter"], self.log_scale, self.show_landscape, self.show_boundary,
                          self.train_button, self.stop_button, self.reset_button]),
            self.status_html, self.announce_html, self.message_html,
            # wraps: the pictures and the weights do not fit every page's width
            widgets.HBox([self.plot, self.boundary_plot, self.landscape_plot, self.weights_html],
                         layout=widgets.Layout(flex_flow="row wrap")),
            self.values_html, widgets.HTML(FOCUS_STYLE),
        ])
        # the class of the saved picture too: one name for everything the panel draws
        self.widget.add_class("tenflang-training-panel")
        self.session = TrainingSession(make_trainer, self.settings, live=live, trainer=trainer,
                                       on_finish=on_finish, display=self, reference=reference)
        # kept apart from the session's note, which each run's start and end replace: a
        # setting no control could show, and a picture that could not be drawn, stay said
        self.notes: dict[str, str] = {"settings": "; ".join(notes)} if notes else {}
        self.update(redraw=True)

    # --- the session's, for whoever holds the panel ------------------------------------------

    @property
    def settings(self) -> TrainSettings:
        """The settings the next step trains with: the controls' values on the given ones."""
        return self._base.replace(**{name: c.value for name, c in self.controls.items()})

    @property
    def state(self) -> State:
        return self.session.state

    @property
    def trainer(self) -> GradientDescent | None:
        return self.session.trainer

    @property
    def error(self) -> BaseException | None:
        return self.session.error

    @property
    def status(self) -> str:
        """The status line (see :attr:`TrainingSession.status`)."""
        return self.session.status

    def run_sync(self) -> TrainResult:
        """Train to the end, blocking (:meth:`TrainingSession.run_sync`); draws once."""
        return self.session.run_sync()

    def start(self) -> None:
        """Start (or continue) a live run (:meth:`TrainingSession.start`)."""
        self.session.start()

    def stop(self) -> None:
        """Stop a live run after the current chunk; Train then continues from here."""
        self.session.stop()

    def reset(self) -> None:
        """Stop any run, restore the initial weights and clear history and curve."""
        self.session.reset()

    # --- showing the session (its Display) -----------------------------------------------

    def update(self, redraw: bool) -> None:
        """Push the session's state to the widgets (and redraw the pictures if ``redraw``)."""
        state = self.session.state
        self.train_button.disabled = state == "running"
        self.stop_button.disabled = state != "running"
        self.reset_button.disabled = state == "idle"
        self._refocus()
        self.train_button.tooltip = self.session.train_action
        self.status_html.value = f"<code>{html.escape(self.status)}</code>"
        key, sentence = self.session.announcement()
        if key != self._announced:
            self._announced = key
            self.announce_html.value = (f'<div role="status" aria-live="polite" '
                                        f'style="{SR_ONLY}">{html.escape(sentence)}</div>')
        self.message_html.value = self._message_html()
        self.weights_html.value = weights_html(
            self.trainer.weights if self.trainer is not None else {})
        if redraw:
            self.redraw()

    def _press(self, pressed: widgets.Button, undo: widgets.Button,
               action: Callable[[], None]) -> None:
        """Run ``action``; once the state has changed, the focus goes to ``undo`` (or back to
        ``pressed`` when the change is already over: a run that ended at once)."""
        self._focus_after = None  # a run in this call (not live) moves no focus half-way
        state = self.session.state
        action()
        self._focus_after = (state, pressed, undo)
        self._refocus()
        if self.session.state != "running":  # nothing goes on that could change it later
            self._focus_after = None

    def _refocus(self) -> None:
        if self._focus_after is None:
            return
        state, pressed, undo = self._focus_after
        if self.session.state == state:
            return
        self._focus_after = None
        target = undo if not undo.disabled else pressed
        if not target.disabled:
            target.focus()

    def progress(self) -> None:
        """A live chunk ran: the status now, the pictures when a redraw is due."""
        cost = statistics.median(self._draw_costs) if self._draw_costs else 0.0
        due = max(self.redraw_seconds, 3 * cost)
        self.update(redraw=time.perf_counter() - self._last_start >= due)

    def publish(self) -> None:
        """Send the static picture to every display of the panel (a saved notebook keeps it),
        then let go of the figures: a run has ended (or was reset) and its pictures are kept
        as PNG bytes. Each panel held its figures and their pixels for as long as the kernel
        lived: lab 06, with a dozen panels, ended at 182 MB, 157 MB with this (and the pixels
        of the figures in ``Out`` let go: ``figures.canvas.release_pixels``) (issue 26). A
        change of a setting draws them again."""
        if self.displays:
            bundle = self._repr_mimebundle_()
            for handle in self.displays:
                try:
                    handle.update(bundle, raw=True)
                except Exception as err:  # a closed frontend must not break training
                    logger.debug("display update failed", exc_info=err)
        if self.state != "running":
            self.release()

    def release(self) -> None:
        """Let go of the figures (not of the pictures drawn, nor of the words for them), and
        of the trainers' bound runs (the next step binds them again)."""
        self.live_curve.release()
        self.live_landscape.release()
        if self.live_boundary is not None:
            self.live_boundary.release()
        for trainer in (self.session.trainer, self.session.reference):
            if trainer is not None:
                trainer.release()
        memory.collect_soon()

    def redraw(self) -> None:
        """Draw the loss curve, and the landscape and the boundary when they are shown (not
        while nbgrader autogrades: that run of a notebook is feedback only, and a panel's
        pictures cost more than its training)."""
        if not drawing():
            return
        started = time.perf_counter()
        ref = self.session.reference
        try:
            self._png = loss_curve_png(
                self.session.history, log_scale=self.log_scale.value, label=self.label,
                reference=ref.history if ref is not None else None,
                reference_label=self.reference_label, on=self.live_curve,
                live=self.state == "running")
            self._drawn("the loss curve")
        except Exception as err:
            self._png = b""
            self._failed("the loss curve", err)
        self.plot.value = self._png
        self._draw_boundary()
        grid_seconds = self._draw_landscape()
        self._describe()
        self.redraws += 1
        self._last_start = started
        # a new grid is a one-off (once per run): it must not slow every later redraw
        self._draw_costs.append(time.perf_counter() - started - grid_seconds)

    def static_html(self) -> str:
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
            # the card's white under the red too: a dark theme paints every pre dark
            error = ("<pre style='color:#b00020;background:#ffffff;margin:0;"
                     "white-space:pre-wrap'>"
                     f"{html.escape(self.session.error_text)}</pre>")
        error += "".join(f"<div><i>{html.escape(n)}</i></div>" for n in self.notes.values())
        has_curve = self.trainer is not None and bool(self.trainer.history) and self._png
        words = self.words()
        if has_curve:
            curve = (f"<img alt='{html.escape(words[0].alt)}' "
                     f"src='{_kept_data_uri(self._png)}'/>")
        else:
            curve = ("<div style='color:#4b5563;margin:1em 0'><i>(no loss curve yet)</i></div>"
                     if drawing() else "<div style='color:#4b5563;margin:1em 0'><i>(the "
                     "pictures are not drawn while nbgrader autogrades)</i></div>")
        pictures = ""
        for png, said in zip((self._boundary_png, self._landscape_png), words[1:],
                             strict=True):
            if png and said is not None:
                pictures += f"<img alt='{html.escape(said.alt)}' src='{_kept_data_uri(png)}'/>"
        tables = "".join(values_html(w) for w in words if w is not None and w.rows)
        # two images or more and the weights: wrap on a narrow page
        wrap = ";flex-wrap:wrap" if pictures else ""
        return (
            f"<div class='tenflang-training-panel' style='{CARD_STYLE}'>{note}"
            f"<div><code>{html.escape(status)}</code></div>{error}"
            f"<div style='display:flex;align-items:flex-start{wrap}'>{curve}{pictures}"
            f"<div style='margin-left:1em'>{self.weights_html.value}</div></div>{tables}"
            f"<div><small>{html.escape(self._settings_text())}</small></div></div>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any
                          ) -> dict[str, Any]:
        data = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        data["text/plain"] = repr(self)
        data["text/html"] = self.static_html()
        return data

    def _ipython_display_(self) -> None:
        # Displayed with a handle so the static fallback saved in the notebook can be updated
        # to the final state when a live run ends (the widget itself updates by its comm).
        from IPython.display import display

        handle = display(self._repr_mimebundle_(), raw=True, display_id=True)
        if handle is not None:
            self.displays.append(handle)

    def __repr__(self) -> str:
        return f"<TenFlang training panel: {self.status}>"

    # --- internals -------------------------------------------------------------------------

    def _on_setting(self, _change: Any = None) -> None:
        self.session.settings = self.settings
        self.update(redraw=False)

    def _message_html(self) -> str:
        parts = []
        if self.error is not None:
            parts.append("<pre style='color:#b00020;margin:0;white-space:pre-wrap'>"
                         f"{html.escape(self.session.error_text)}</pre>")
        for note in (self.session.note, *self.notes.values()):
            if note:
                parts.append(f"<div><i>{html.escape(note)}</i></div>")
        return "".join(parts)

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
            ref = self.session.reference
            # the paths named and coloured as the loss curve names and colours the runs
            self._landscape_png, seconds = self.live_landscape.png(
                self.trainer, run=(id(self.trainer), self.session.runs),
                final=self.state in ("done", "stopped"), label=self.label or "descent",
                beside=(self.reference_label, ref) if ref is not None else None)
            self._drawn("the loss landscape")
        except Exception as err:
            self._landscape_png = b""
            self._failed("the loss landscape", err)
        self.landscape_plot.value = self._landscape_png
        return seconds

    def _draw_boundary(self) -> None:
        """Redraw the decision boundary at the current weights if it is shown."""
        shown = self.show_boundary.value and self.live_boundary is not None
        self.boundary_plot.layout.display = None if shown else "none"
        if not shown or self.live_boundary is None or self.trainer is None:
            self._boundary_png = b""
            self.boundary_plot.value = b""
            return
        try:
            self._boundary_png = self.live_boundary.png(self.trainer.weights)
            self._drawn("the decision boundary")
        except Exception as err:
            self._boundary_png = b""
            self._failed("the decision boundary", err)
        self.boundary_plot.value = self._boundary_png

    def words(self) -> list[FigureWords | None]:
        """The loss curve, the boundary and the landscape in words (None: not shown)."""
        ref = self.session.reference
        curve = curve_words(self.session.history, self.label)
        if ref is not None and ref.history:
            reference = curve_words(ref.history, self.reference_label)
            curve = replace(curve, alt=f"{curve.alt} {reference.alt}")
        boundary = landscape = None
        if self.show_boundary.value and self.live_boundary is not None and self._boundary_png:
            boundary = self.live_boundary.words()
        live = self.live_landscape
        if self.show_landscape.value and self._landscape_png and live.landscape is not None:
            landscape = landscape_words(live.landscape, describe_plane(live.landscape.plane))
        return [curve, boundary, landscape]

    @property
    def _plots(self) -> tuple[widgets.Image, ...]:
        return self.plot, self.boundary_plot, self.landscape_plot

    def _describe(self) -> None:
        """The pictures' alt texts and their tables. While a run goes on, a short note
        instead: describing each redraw would cost a pass over the history every tenth of a
        second, and a screen reader would hear of a picture gone a moment later (the status
        line says where the run is)."""
        if self.state == "running":
            alts = [f"{PICTURES[key]}, redrawn as the run goes on (see the status line)"
                    for key in PICTURES]
            tables = ""
        else:
            words = self.words()
            alts = [w.alt if w is not None else "" for w in words]
            tables = "".join(values_html(w) for w in words if w is not None and w.rows)
        self.values_html.value = "".join(
            f"<span data-tf-alt='{key}' hidden>{html.escape(alt)}</span>"
            for key, alt in zip(PICTURES, alts, strict=True)) + tables

    def _failed(self, picture: str, err: Exception) -> None:
        """A picture (the curve, or one beside it) could not be drawn: say why, escaped, and
        go on. It is an illustration: a failure to draw must not end or wedge the run."""
        logger.debug("drawing %s failed", picture, exc_info=err)
        reason = printable(err.first.message if isinstance(err, TenFlangError) else (
            f"{type(err).__name__}: {err}"))
        self.notes[picture] = f"could not draw {picture}: {reason}"
        self.message_html.value = self._message_html()

    def _drawn(self, picture: str) -> None:
        """A picture was drawn: a note that it could not be goes."""
        if self.notes.pop(picture, None) is not None:
            self.message_html.value = self._message_html()

    def _settings_text(self) -> str:
        values = {p.label: self.controls[p.name].value for p in PARAMETERS}
        return ", ".join(f"{label} {v}" if isinstance(v, int) else f"{label} {fmt_number(v)}"
                         for label, v in values.items())


def drawing() -> bool:
    """Whether a panel draws its pictures: always, but while nbgrader autogrades."""
    return GRADING.nbgrader_running() != "autograde"


def _kept_data_uri(png: bytes) -> str:
    """A picture of the saved panel as a data URI (an untrusted notebook keeps an <img>), in
    the small encoding of kept pictures: the live one is encoded fast, for a moment."""
    return "data:image/png;base64," + base64.b64encode(kept_png(png)).decode("ascii")
