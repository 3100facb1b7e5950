"""What a check requires: the adjoints a backward pass must write to be ``ok`` (the
``require`` argument, the ``--require`` option of ``%%tenflang_check``).

By default, every weight's gradient: an answer is right when those are right and no line it
wrote is wrong, however it folds the intermediate adjoints (the softmax-minus-target shortcut
of cross-entropy) and whatever names it never sees (those the original's ``dot`` and vectors
invent). An exercise may require named intermediates too; a list with nothing in it, or with
a name that has no adjoint, is an error, never a check that passes by default.
"""

from __future__ import annotations

from typing import Any

from ..lexical import adjoint_name, derivative_parts
from ..program import Program, ancestors
from ..settings import SettingsError

__all__ = ["required_adjoints"]


def required_adjoints(program: Program, loss: str, require: Any) -> tuple[str, ...]:
    """The adjoint names ``require`` lists (a variable ``w`` stands for ``d/L/d/w``), in its
    order; every weight's gradient when it is None.

    >>> from tenflang_nb.core.program import parse
    >>> p = parse("declare weight w\\ndeclare intvar a\\ndeclare loss L\\n"
    ...           "define a = mul w w\\ndefine L = mul a 2\\n")
    >>> required_adjoints(p, "L", ["a", "d/L/d/w", "a"]), required_adjoints(p, "L", None)
    (('d/L/d/a', 'd/L/d/w'), ('d/L/d/w',))
    """
    affected = ancestors(program, loss)
    if require is None:
        return tuple(adjoint_name(loss, w) for w in program.names("weight") if w in affected)
    items = [require] if isinstance(require, str) else require
    try:
        items = list(items)
    except TypeError:
        items = [require]
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise SettingsError(
                f"require must list adjoints (d/{loss}/d/w, or just w), not {item!r}")
        item = item.strip()
        parts = derivative_parts(item)
        v = parts[1] if parts is not None and parts[0] == loss else item
        if v not in program.decls:
            raise SettingsError(
                f"require: {item!r} is neither a variable of {program.file} nor its adjoint "
                f"d/{loss}/d/<variable>")
        if v not in affected:
            raise SettingsError(
                f"require: '{v}' does not affect the loss {loss}, so there is no adjoint "
                f"d/{loss}/d/{v} to write")
        names.append(adjoint_name(loss, v))
    if not names:
        raise SettingsError(
            f"require lists no adjoint: name those an answer must write (d/{loss}/d/w, or "
            "just w), or leave it out to require every weight's gradient")
    return tuple(dict.fromkeys(names))
