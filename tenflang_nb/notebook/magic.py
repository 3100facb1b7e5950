"""``%%tenflang NAME [options]``: check a shape program, bind it to NAME, show its views;
``%%tenflang_check NAME [RESULT]``: check a backward pass written by hand for model NAME;
``%%tenflang_gcp NAME [VARIANT]``: train model NAME with its GCP edited by hand.

>>> from IPython.core.interactiveshell import InteractiveShell
>>> ip = InteractiveShell.instance(); load(ip)
>>> ip.run_cell_magic("tenflang", "sq --show none",
...                   "declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n")
>>> ip.user_ns["sq"]
<TenFlang model 'sq': 2 variables, 1 weight>
>>> unload(ip); InteractiveShell.clear_instance()
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..core.arguments import python_name
from ..core.backprop_check import OPTIONS
from ..core.datafiles import parse_data
from ..core.edited import EditedGcp
from ..core.errors import TenFlangError, printable
from ..core.formatting import did_you_mean
from ..core.grading import not_answered
from ..core.lexical import is_int
from ..core.settings import SETTINGS, Setting, TrainSettings
from . import memory
from .grading_mode import GRADING
from .loop import kernel_loop_running
from .model import TenFlangModel, as_examples, program_file
from .views import VIEWS, default_views, describe_views, parse_views
from .views.check import check_in_cell
from .views.diagnostics import error_view, warnings_view
from .views.edited import edit_summary

__all__ = ["TenFlangMagics", "check_line", "load", "model_line", "unload"]


def _table_options(table: Mapping[str, Setting]) -> Callable[[Callable[..., Any]],
                                                                 Callable[..., Any]]:
    """One option per setting of ``table`` (the training settings, a check's options).

    Given as text (None when absent) and checked by the setting, so a bad value gets the
    same message here as on the command line and in Python.
    """
    def add(func: Callable[..., Any]) -> Callable[..., Any]:
        for setting in reversed(list(table.values())):
            default = "" if setting.default is None else f" (default {setting.default})"
            func = argument(setting.option, dest=setting.name, default=None,
                            metavar=setting.name.upper(), help=setting.help + default + ".")(func)
        return func
    return add


def _parse(func: Callable[..., Any], line: str) -> Any:
    """The magic's arguments; an option it does not have gets a "did you mean"."""
    try:
        return parse_argstring(func, line)
    except UsageError as err:
        message = str(err)
        if message.startswith("unrecognized arguments:"):
            options = list(func.parser._option_string_actions)  # type: ignore[attr-defined]
            for word in message.split(":", 1)[1].split():
                suggestion = did_you_mean(word, options) if word.startswith("-") else None
                if suggestion:
                    message += f" ({word}: {suggestion})"
        raise UsageError(printable(message)) from None


def _given(table: Mapping[str, Setting], args: Any) -> dict[str, Any]:
    """The options of ``table`` given on the magic's line, parsed and checked."""
    return {name: setting.check(setting.parse(value)) for name, setting in table.items()
            if (value := getattr(args, name)) is not None}


def _settings(args: Any) -> TrainSettings:
    return TrainSettings(**_given(SETTINGS, args))


def model_line(line: str) -> tuple[str | None, TrainSettings]:
    """The name and the training settings a ``%%tenflang`` cell's first line (after the
    magic's name) gives, as the cell itself reads them (the autograder reads them so)."""
    args = _parse(TenFlangMagics.tenflang, line)
    return args.name, _settings(args)


def check_line(line: str) -> tuple[str, str | None]:
    """The model and the answer's name a ``%%tenflang_check`` cell's first line gives."""
    args = _parse(TenFlangMagics.tenflang_check, line)
    return args.model, args.result


def _training_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options of a cell that trains: the data, the test data, the settings, and what
    the training panel shows."""
    for option in reversed([
        argument("--train", metavar="DATA",
                 help="train on DATA: a variable (dict of arrays, DataFrame, list of dicts, "
                      "a tenflang_nb.datasets set) or a data file path; shows the training "
                      "panel."),
        argument("--test", metavar="DATA",
                 help="test data (a variable or a file, as --train): its loss is drawn "
                      "dashed beside the training loss, and its points on the boundary."),
        _table_options(SETTINGS),
        argument("--no-live", action="store_true",
                 help="train to the end before showing the panel (deterministic; for nbval, "
                      "scripts, static notebooks). Plain IPython never trains live."),
        argument("--landscape", action="store_true",
                 help="show the loss landscape with the path of descent beside the loss "
                      "curve (the panel's landscape box ticked; NAME.landscape() draws it "
                      "too)."),
        argument("--boundary", action="store_true",
                 help="show the decision boundary, the output over the input plane with the "
                      "data's points, updated as it trains (the panel's boundary box ticked; "
                      "NAME.boundary() draws it too). For a program whose input is one "
                      "'input x [2]' or two scalar inputs, with a scalar output."),
    ]):
        func = option(func)
    return func


@magics_class
class TenFlangMagics(Magics):
    """The ``%%tenflang`` and ``%%tenflang_check`` cell magics."""

    @no_var_expand
    @magic_arguments(name="%tenflang")  # IPython writes one '%': the usage reads %%tenflang
    @argument("name", nargs="?", default=None,
              help="Python name to bind the model to (nothing is bound without it, or when "
                   "the program has an error; a previous value is then kept).")
    @argument("--show", default=",".join(default_views()), metavar="VIEWS",
              help=f"comma-separated views: {', '.join(VIEWS)}; or all, none "
                   f"(default: {','.join(default_views())}). "
                   + "; ".join(describe_views().splitlines()) + ".")
    @argument("--full", action="store_true",
              help="show the full GCP (every adjoint d/L/d/v) instead of the pruned one.")
    @argument("--example", metavar="EXAMPLE",
              help="the example the values and step views run on: a record such as "
                   "\"{x: 1.5, y: 0.2}\" (quoted), a variable holding a dict, or an index "
                   "into the --train data (default: its first example).")
    @argument("--predict", action="store_true",
              help="with --show step: in the backward pass the stepper stops before each "
                   "adjoint's value and asks for it; a right value reveals the line, a wrong "
                   "one gets a hint.")
    @_training_options
    @cell_magic
    def tenflang(self, line: str, cell: str) -> None:
        """Check a TenFlang shape program, bind it to NAME and show its views.

        The cell is the program. On an error, the offending line is shown with a caret and
        nothing is bound. Then use the model: NAME.evaluate(inputs), NAME.show_values(i),
        NAME.gradcheck(i), NAME.train(data), NAME.gcp, NAME.weights, NAME.history.

        Example::

            %%tenflang net --show graph,gcp --train data --lr 0.5 --no-live
            declare input x
            ...
        """
        args = _parse(self.tenflang, line)
        try:
            which = parse_views(args.show)
        except ValueError as exc:
            raise UsageError(printable(f"--show: {exc}")) from None
        settings = _settings(args)  # a bad value raises a TenFlangError: no traceback
        name = args.name
        if name is not None and not python_name(name):
            raise UsageError(f"{name!r} is not a valid Python name to bind the model to")
        data = self._training_data(args.train, "--train") if args.train else None
        if args.test:
            self._training_data(args.test, "--test")  # a usage error before anything runs
        example = self._example(args.example) if args.example is not None else None

        unanswered = not_answered(cell, program_file(name or "cell"), None)
        if unanswered is not None:  # nbgrader's stub: the model is the exercise's answer
            display(error_view(unanswered, cell, title="This exercise is not answered yet: "
                               "nothing was bound.", cell_file=program_file(name or "cell")))
            return
        try:
            model = TenFlangModel(cell, name or "cell", settings)
        except TenFlangError as err:
            display(error_view(err, cell, title="The program has errors: nothing was bound.",
                               cell_file=program_file(name or "cell")))
            return
        if name is not None:
            self.shell.user_ns[name] = model
            GRADING.define(name, cell, settings)  # what a locked check finds by fingerprint
        warned = warnings_view(model.warnings, cell_file=model.program.file)
        if warned is not None:
            display(warned)
        after = [v for v in which if VIEWS[v].needs_training] if data is not None else []
        before = [v for v in which if v not in after]
        if "cost" in which:
            self._measure(model)
        shown = {"full": args.full, "example": example, "predict": args.predict}
        if before:
            display(model.show(before, **shown))
        if data is not None:
            trained = self._train(model, data, args, cell_file=model.program.file)
            if trained and after:
                display(model.show(after, **shown))

    @staticmethod
    def _measure(model: TenFlangModel) -> None:
        """``--show cost`` asks for a measurement: the view shows what the model measured."""
        if model.loss is None or not model.weights:
            return  # nothing to measure: the view says why
        try:
            model.cost()
        except TenFlangError as err:
            display(error_view(err, model.source, title="Cannot measure the cost.",
                               cell_file=model.program.file))

    def _example(self, spec: str) -> Any:
        """``--example``: a record in braces, a variable, or an index into the data."""
        text = spec.strip().strip("'\"").strip()
        if text.startswith("{"):
            try:
                return parse_data(text, "--example", format="brace")
            except TenFlangError as err:
                raise UsageError(printable(f"--example: {err.diagnostics[0].message}")) from None
        if text in self.shell.user_ns:
            return self.shell.user_ns[text]
        if is_int(text):  # ASCII digits, as the language reads them (not "١")
            return int(text)
        raise UsageError(printable(f"--example {spec}: give a record such as "
                                   "\"{x: 1.5, y: 0.2}\", a variable holding one, or an index "
                                   "into the training data"))

    @no_var_expand
    @magic_arguments(name="%tenflang_check")
    @argument("model", help="the model (a %%%%tenflang NAME cell) whose backward pass the cell "
                            "holds.")
    @argument("result", nargs="?", default=None,
              help="Python name to bind the result to (for assert cells): RESULT.ok, "
                   "RESULT.first_wrong_line, RESULT.report().")
    @argument("--require", metavar="ADJOINTS", default=None,
              help="comma-separated adjoints (d/L/d/w, or just w) that must be written for "
                   "RESULT.ok (default: every weight's gradient; any line written must "
                   "be right too).")
    @_table_options(OPTIONS)
    @cell_magic
    def tenflang_check(self, line: str, cell: str) -> None:
        """Check a backward pass written by hand for the model MODEL, line by line.

        The cell holds backward lines: definitions of adjoints d/L/d/v (L: the model's loss)
        and of any helper names you like; declarations are optional; '#' starts a comment.
        They run after MODEL's forward pass on random draws of its inputs and weights, and
        every adjoint you define is compared with the compiler's. The report names the
        first wrong line (the first whose operands are right but whose value is wrong),
        with the expected and actual values and a hint; adjoints you do not write are
        listed as missing, and where your lines use one, the compiler's value stands in
        (so you can check one block at a time).

        Example::

            %%tenflang_check seed answer --require d/lambda/d/w
            define d/lambda/d/diff = mul 2 diff
            ...
        """
        args = _parse(self.tenflang_check, line)
        options = _given(OPTIONS, args)  # a bad value raises a TenFlangError: no traceback
        model = self._model(args.model)
        if args.result is not None and not python_name(args.result):
            raise UsageError(f"{args.result!r} is not a valid Python name to bind the result to")
        require = None
        listed = None if args.require is None else args.require.strip().strip("'\"")
        if listed is not None and listed.lower() != "all":
            require = [r for r in listed.replace(" ", ",").split(",") if r]
        result = model.check_backprop(cell, require=require, **options)
        if args.result is not None:
            self.shell.user_ns[args.result] = result
            GRADING.answer(args.result, model.name, cell)  # what a locked check re-checks
        display(check_in_cell(result))

    def _model(self, name: str) -> TenFlangModel:
        ns = self.shell.user_ns
        if name not in ns:
            models = [n for n, v in ns.items() if isinstance(v, TenFlangModel)]
            suggestion = did_you_mean(name, models)
            raise UsageError(f"no variable named {name!r}: "
                             + (f"{suggestion} (or " if suggestion else "")
                             + f"run its %%tenflang {name} cell first"
                             + (")" if suggestion else ""))
        model = ns[name]
        if not isinstance(model, TenFlangModel):
            raise UsageError(f"{name!r} is a {type(model).__name__}, not a TenFlang model "
                             f"(a %%tenflang {name} cell makes one)")
        if model.loss is None:
            raise UsageError(f"model {name!r} declares no loss, so it has no backward pass "
                             "to check: add 'declare loss L' and define it")
        return model

    def _training_data(self, spec: str, option: str = "--train") -> Any:
        ns = self.shell.user_ns
        if spec in ns:
            return ns[spec]
        path = os.path.expanduser(spec)
        if os.path.exists(path):
            return path
        raise UsageError(printable(f"{option} {spec}: no variable named {spec!r} and no file "
                                   "at that path"))

    def _train(self, model: TenFlangModel, data: Any, args: Any, *,
               cell_file: str | None) -> bool:
        """Build and show the training panel; True when there are trained weights to show.
        ``cell_file``: the file the cell's body was read as (its errors name the cell's line)."""
        live = not args.no_live and kernel_loop_running(self.shell)
        test = self._training_data(args.test, "--test") if args.test else None
        try:
            table = as_examples(data)
            held_out = None if test is None else as_examples(test)
            if model.withheld is not None:  # grading mode: no panel, its trainers hold the GCP
                raise ImportError
            panel = model.training_panel(table, live=live, landscape=args.landscape,
                                         test=held_out, boundary=args.boundary)
        except TenFlangError as err:
            display(error_view(err, model.source, title="Cannot train on this data.",
                               cell_file=cell_file))
            return False
        except ImportError:  # no widgets: train blocking, show the result as a table
            try:
                model.train(table, test=held_out)
            except TenFlangError as err:
                display(error_view(err, model.source, title="Training failed.",
                                   cell_file=cell_file))
                return False
            display(model.training_summary())
            return True
        if live:
            panel.start()  # first, so the saved snapshot says "running", not "ready"
            display(panel)
            return False  # the run has only begun
        panel.run_sync()  # before display: the saved output is the final state, once
        display(panel)
        return model.result is not None

    @no_var_expand
    @magic_arguments(name="%tenflang_gcp")
    @argument("model", help="the model (a %%%%tenflang NAME cell) whose GCP the cell holds, "
                            "edited.")
    @argument("variant", nargs="?", default=None,
              help="Python name to bind the model that trains with the edited GCP to "
                   "(default: MODEL_edited).")
    @argument("--example", metavar="EXAMPLE",
              help="the example(s) the gradient check runs on: a record such as "
                   "\"{x: 1.5, y: 0.2}\" (quoted), a variable holding data, or an index into "
                   "the --train data (default: the whole --train data, as training uses).")
    @_training_options
    @cell_magic
    def tenflang_gcp(self, line: str, cell: str) -> None:
        """Train MODEL with the GCP in the cell: MODEL's GCP (MODEL.gcp), edited by hand.

        Delete a fan-out term, flip a sign, and see what the wrong gradient does. The cell
        is parsed like a program (errors show the line, with a caret; nothing is bound) and
        must keep the GCP's interface: its inputs, its loss and an output d/L/d/w for every
        weight. The edited model is bound to VARIANT; the gradient check (on --example, or
        on the --train data) names every weight whose gradient the edit broke, against
        finite differences of MODEL's loss; with --train the training panel draws the
        edited GCP's loss beside the true GCP's, both from the same start with the same
        settings. Then VARIANT.landscape(paths={...}) shows where each run went.

        Example::

            %%tenflang_gcp fan broken --train data --lr 0.5 --no-live
            ... the GCP of fan, with one line changed ...
        """
        args = _parse(self.tenflang_gcp, line)
        model = self._model(args.model)
        name = args.variant or f"{args.model}_edited"
        if not python_name(name):
            raise UsageError(f"{name!r} is not a valid Python name to bind the edited model to")
        given = _given(SETTINGS, args)  # a bad value raises a TenFlangError: no traceback
        data = self._training_data(args.train, "--train") if args.train else None
        if args.test:
            self._training_data(args.test, "--test")
        example = self._example(args.example) if args.example is not None else None
        try:
            variant = model.with_gcp(cell, name)
            variant.settings = model.settings.replace(**given)
        except TenFlangError as err:
            withheld = model.withheld is not None  # grading mode's message, not the cell's
            display(error_view(err, None if withheld else cell,
                               title="Nothing was bound." if withheld else
                               "The edited GCP has errors: nothing was bound.",
                               cell_file=None if withheld else f"{model.name} (edited GCP)"))
            return
        self.shell.user_ns[name] = variant
        edited = variant.compiled
        assert isinstance(edited, EditedGcp)
        display(edit_summary(name, model.name, edited))
        if example is None and data is None:
            return
        try:
            if data is not None:  # what an index into the training data refers to
                variant.data = as_examples(data)
            display(variant.gradcheck(example if example is not None else variant.data))
        except TenFlangError as err:
            display(error_view(err, model.source, title="Cannot check the gradients."))
        if data is not None:
            self._train(variant, data, args, cell_file=None)  # the cell is no shape program


# the package's figures (a landscape, a boundary) by the name of their class, so that loading
# the extension does not import matplotlib: IPython looks it up before pyplot's printer for
# every Figure (a subclass comes first), which would store a PNG four times the size
PNG_FIGURE = "tenflang_nb.notebook.figures.canvas.PngFigure"
PLOT_FIGURE = "matplotlib.figure.Figure"


def _figure_png(fig: Any) -> bytes:
    return fig._repr_png_()


def _figure_bundle(fig: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    return fig.bundle()  # the PNG, and HTML with its alt text and values (figures.words)


def _plot_bundle(fig: Any, formatter: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    from .plot_words import plot_bundle  # here: its figures.words imports matplotlib

    # pyplot's inline backend closes the figures it showed when the cell ends, and a closed
    # figure is a web of cycles (figure, axes, artists, canvas, callbacks) that only the
    # garbage collector's full pass frees: 04's three pyplot figures kept 5 MB (issue 26)
    memory.collect_soon()
    return plot_bundle(fig, formatter)


def load(ip: Any) -> None:
    """Register the magics (``%load_ext tenflang_nb``), how the figures show, and the trim
    of freed memory after each cell (``memory``)."""
    ip.register_magics(TenFlangMagics)
    memory.register(ip)
    module, _, name = PNG_FIGURE.rpartition(".")
    ip.display_formatter.formatters["image/png"].for_type_by_name(module, name, _figure_png)
    ip.display_formatter.mimebundle_formatter.for_type_by_name(module, name, _figure_bundle)
    # any other figure (a cell's pyplot plot): its PNG, and HTML with its alt text and values
    module, _, name = PLOT_FIGURE.rpartition(".")
    png = ip.display_formatter.formatters["image/png"]
    ip.display_formatter.mimebundle_formatter.for_type_by_name(
        module, name, partial(_plot_bundle, formatter=png))


def unload(ip: Any) -> None:
    """Remove them again (``%unload_ext tenflang_nb``); IPython has no public unregister."""
    manager = ip.magics_manager
    for kind, names in TenFlangMagics.magics.items():
        for magic_name in names:
            manager.magics[kind].pop(magic_name, None)
    manager.registry.pop(TenFlangMagics.__name__, None)
    ip.display_formatter.formatters["image/png"].pop(PNG_FIGURE, None)
    ip.display_formatter.mimebundle_formatter.pop(PNG_FIGURE, None)
    ip.display_formatter.mimebundle_formatter.pop(PLOT_FIGURE, None)
    memory.unregister(ip)
