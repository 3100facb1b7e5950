"""What a check requires: the adjoints a backward pass must write to be ``ok`` (the
``require`` argument, the ``--require`` option of ``%%tenflang_check``)."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import TenFlangError
from ..lexical import adjoint_name, derivative_parts
from ..program import Program

__all__ = ["required_adjoints"]


def required_adjoints(program: Program, loss: str, expected: list[str],
                      require: Iterable[str] | str | None) -> tuple[str, ...]:
    """The adjoint names ``require`` lists (a variable ``w`` stands for ``d/L/d/w``), in its
    order; ``expected`` (every adjoint a weight's gradient needs) when it is None.

    >>> from tenflang_nb.core.program import parse
    >>> p = parse("declare weight w\\ndeclare intvar a\\ndeclare loss L\\n"
    ...           "define a = mul w w\\ndefine L = mul a 2\\n")
    >>> required_adjoints(p, "L", [], ["a", "d/L/d/w", "a"])
    ('d/L/d/a', 'd/L/d/w')
    """
    if require is None:
        return tuple(expected)
    names: list[str] = []
    for item in ([require] if isinstance(require, str) else require):
        item = item.strip()
        parts = derivative_parts(item)
        if parts is not None and parts[0] == loss and parts[1] in program.decls:
            names.append(item)
        elif item in program.decls:
            names.append(adjoint_name(loss, item))
        else:
            raise TenFlangError.at(
                f"require: '{item}' is neither a variable of {program.file} nor its adjoint "
                f"d/{loss}/d/<variable>")
    return tuple(dict.fromkeys(names))
