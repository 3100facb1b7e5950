"""Collection rules for the whole repository (the tests' fixtures are in tests/conftest.py)."""

import atexit
import os
import shutil
import tempfile

import pytest

# core/fusedvm.py (numba's loops; no doctests) is imported by core/fused.py alone, once it has
# chosen numba's CPU features: a doctest collection importing it first would have the tests
# compile the loops for other features than the commands they run (two compiles, not one).
collect_ignore = ["tenflang_nb/core/fusedvm.py"]


def pytest_configure(config: pytest.Config) -> None:
    """An IPYTHONDIR of the run's own, for its shells, kernels and commands alike: no test
    reads the user's IPython profile or writes to the user's history. Removed at exit, after
    any shell's own exit hook (atexit runs the hooks registered first last)."""
    path = tempfile.mkdtemp(prefix="tenflang-ipython-")
    os.environ["IPYTHONDIR"] = path
    atexit.register(shutil.rmtree, path, ignore_errors=True)
