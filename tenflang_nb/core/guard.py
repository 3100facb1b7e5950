"""The package's compilers and interpreter switched off while a student's own engine runs.

Notebook 07 grades a reverse mode written in Python by running it on random programs and
comparing its gradients with the compiler's. An engine that asked the package for them
(``tf.compile``, ``tf.interpret``, a model's ``.gcp``) would pass without being one, so the
check runs it inside :func:`sealed`: there every program the package would write (the
``Writer`` of the three compilers) or run (a ``Plan``) is refused with :class:`Sealed`, and
the attempt is recorded, so an engine that swallows the error fails too. The operator table's
numbers (``ops.value``, ``ops.local_partials``) and the program's steps stay available:
they are what an engine is built from.

It is a switch in the student's own Python, not a sandbox: code that flips it back can
(docs/teachers.md says what grading cannot prevent).

>>> with sealed("your engine runs"):
...     try:
...         allow("compiling a program")
...     except Sealed as error:
...         print(error.first.message)
compiling a program is switched off while your engine runs
>>> allow("compiling a program") is None
True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .errors import TenFlangError

__all__ = ["Sealed", "allow", "sealed"]

_state: dict[str, object] = {"why": None, "attempts": []}


class Sealed(TenFlangError):
    """What the package refuses while sealed (a compiler or the interpreter)."""


@contextmanager
def sealed(why: str) -> Iterator[list[str]]:
    """Inside: compiling and running programs is refused, ``why`` saying why. Yields the list
    of what was attempted (empty when the code inside asked for nothing)."""
    attempted: list[str] = []
    previous = _state["why"], _state["attempts"]
    _state["why"], _state["attempts"] = why, attempted
    try:
        yield attempted
    finally:
        _state["why"], _state["attempts"] = previous


def allow(what: str) -> None:
    """Raise :class:`Sealed` (and record ``what``) when the package is sealed; the compilers
    and the interpreter call it before they start."""
    why = _state["why"]
    if why is None:
        return
    attempted = _state["attempts"]
    assert isinstance(attempted, list)
    attempted.append(what)
    raise Sealed.at(f"{what} is switched off while {why}",
                    hint="an engine computes its values with tf.ops.value and its adjoints "
                         "with tf.ops.local_partials, over tf.steps(program)")

