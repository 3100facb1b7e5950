"""What a command loads when it starts: ``core.api`` imports the checker, the cost of modes,
curvature (and the landscape), the fusion listing and random programs on first use, so that
``tfweightcalc`` starts without them; each of those names is still the module's own."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

from tenflang_nb.core import api
from tenflang_nb.core.backprop_check import DRAWS

LATER = ("backprop_check", "cost", "curvature", "landscape", "fusedlisting", "random_programs")


def test_the_commands_start_without_what_they_do_not_use() -> None:
    code = ("import sys, tenflang_nb.cli\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith(('tenflang_nb', "
            "'numba', 'IPython', 'matplotlib')))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    loaded = done.stdout.split()
    assert "tenflang_nb.core.train" in loaded  # the check reads the list right
    assert not [m for m in loaded if m.split(".")[2:3] and m.split(".")[2] in LATER], loaded
    assert not [m for m in loaded if m.startswith(("numba", "IPython", "matplotlib"))], loaded


def test_the_names_imported_on_first_use_are_their_modules_own() -> None:
    for name, module in api._ON_FIRST_USE.items():
        assert getattr(api, name) is getattr(importlib.import_module(
            module, "tenflang_nb.core"), name), name
    missing = [name for name in api.__all__ if getattr(api, name, None) is None]
    assert not missing, missing


def test_check_backprop_draws_as_often_as_the_checker_by_default() -> None:
    assert inspect.signature(api.check_backprop).parameters["draws"].default == DRAWS
