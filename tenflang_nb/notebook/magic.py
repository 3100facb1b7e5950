"""``%%tenflang NAME [options]``: check a shape program, bind it to NAME, show its views.

>>> from IPython.core.interactiveshell import InteractiveShell
>>> ip = InteractiveShell.instance(); load(ip)
>>> ip.run_cell_magic("tenflang", "sq --show none",
...                   "declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n")
>>> ip.user_ns["sq"]
<TenFlang model 'sq': 2 variables, 1 weight>
>>> unload(ip); InteractiveShell.clear_instance()
"""

from __future__ import annotations

import keyword
import os
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..core.errors import TenFlangError
from ..core.settings import SETTINGS, TrainSettings
from .loop import kernel_loop_running
from .model import TenFlangModel, as_examples
from .views import VIEWS, default_views, describe_views, parse_views, program_view
from .views_diag import error_view, warnings_view

__all__ = ["TenFlangMagics", "load", "unload"]


def _settings_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """One option per training setting, from the settings' own table.

    Given as text (None when absent) and checked by :class:`TrainSettings`, so a bad value
    gets the same message here as on the command line and in Python.
    """
    for setting in reversed(list(SETTINGS.values())):
        default = "" if setting.default is None else f" (default {setting.default})"
        func = argument(setting.option, dest=setting.name, default=None,
                        metavar=setting.name.upper(), help=setting.help + default + ".")(func)
    return func


def _settings(args: Any) -> TrainSettings:
    given = {name: setting.parse(value) for name, setting in SETTINGS.items()
             if (value := getattr(args, name)) is not None}
    return TrainSettings(**given)


@magics_class
class TenFlangMagics(Magics):
    """The ``%%tenflang`` cell magic."""

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
    @argument("--train", metavar="DATA",
              help="train on DATA: a variable (dict of arrays, DataFrame, list of dicts) or "
                   "a data file path; shows the training panel.")
    @_settings_options
    @argument("--no-live", action="store_true",
              help="train to the end before showing the panel (deterministic; for nbval, "
                   "scripts, static notebooks). Plain IPython never trains live.")
    @argument("--landscape", action="store_true",
              help="show the loss landscape with the path of descent beside the loss curve "
                   "(the panel's landscape box ticked; NAME.landscape() draws it too).")
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
        args = parse_argstring(self.tenflang, line)
        try:
            which = parse_views(args.show)
        except ValueError as exc:
            raise UsageError(f"--show: {exc}") from None
        settings = _settings(args)  # a bad value raises a TenFlangError: no traceback
        name = args.name
        if name is not None and (not name.isidentifier() or keyword.iskeyword(name)):
            raise UsageError(f"{name!r} is not a valid Python name to bind the model to")
        data = self._training_data(args.train) if args.train else None

        try:
            model = TenFlangModel(cell, name or "cell", settings)
        except TenFlangError as err:
            display(error_view(err, cell, title="The program has errors: nothing was bound."))
            return
        if name is not None:
            self.shell.user_ns[name] = model
        warned = warnings_view(model.warnings)
        if warned is not None:
            display(warned)
        after = [v for v in which if VIEWS[v].needs_training] if data is not None else []
        before = [v for v in which if v not in after]
        if before:
            display(program_view(model, before, full=args.full))
        if data is not None:
            trained = self._train(model, data, args)
            if trained and after:
                display(program_view(model, after, full=args.full))

    def _training_data(self, spec: str) -> Any:
        ns = self.shell.user_ns
        if spec in ns:
            return ns[spec]
        path = os.path.expanduser(spec)
        if os.path.exists(path):
            return path
        raise UsageError(f"--train {spec}: no variable named {spec!r} and no file at that path")

    def _train(self, model: TenFlangModel, data: Any, args: Any) -> bool:
        """Build and show the training panel; True when there are trained weights to show."""
        live = not args.no_live and kernel_loop_running(self.shell)
        try:
            table = as_examples(data)
            panel = model.training_panel(table, live=live, landscape=args.landscape)
        except TenFlangError as err:
            display(error_view(err, model.source, title="Cannot train on this data."))
            return False
        except ImportError:  # no widgets: train blocking, show the result as a table
            try:
                model.train(table)
            except TenFlangError as err:
                display(error_view(err, model.source, title="Training failed."))
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


def load(ip: Any) -> None:
    """Register the magics (``%load_ext tenflang_nb``)."""
    ip.register_magics(TenFlangMagics)


def unload(ip: Any) -> None:
    """Remove them again (``%unload_ext tenflang_nb``); IPython has no public unregister."""
    manager = ip.magics_manager
    for kind, names in TenFlangMagics.magics.items():
        for magic_name in names:
            manager.magics[kind].pop(magic_name, None)
    manager.registry.pop(TenFlangMagics.__name__, None)
