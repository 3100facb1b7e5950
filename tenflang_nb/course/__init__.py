"""A TenFlang nbgrader course: ``tenflang-course new``, ``solve``, ``report`` (``cli.py``).

``layout`` (the course folder's files, the secret) and ``report`` (what a lecturer should
look at) import no IPython and no nbgrader; ``solve`` uses the autograder's own checks.
"""
