"""Collection rules for the whole repository (the tests' fixtures are in tests/conftest.py)."""

# core/fusedvm.py (numba's loops; no doctests) is imported by core/fused.py alone, once it has
# chosen numba's CPU features: a doctest collection importing it first would have the tests
# compile the loops for other features than the commands they run (two compiles, not one).
collect_ignore = ["tenflang_nb/core/fusedvm.py"]
