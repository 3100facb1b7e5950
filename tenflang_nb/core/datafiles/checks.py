"""What every reader of data checks, and how its messages say it: names, numbers and the
shape each name keeps from record to record; ``_cut`` shortens a quoted text for a message."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..formatting import fmt_shape
from ..lexical import is_nonfinite_word, is_number
from ..ops import Shape


def _bad_name(text: str, what: str = "name", where: str = "") -> str:
    return (
        f"bad {what} {_cut(text)!r}{where} (a name is letters, digits, '_' and '.', not "
        "starting with a digit, or a generated d/<name>/d/<name>[:<n>])"
    )


def _cut(text: str, limit: int = 40) -> str:
    """``text`` shortened for a message (the whole line is shown under it anyway)."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass
class _ShapeLedger:
    """The first shape each name had (and where): every later value of it must match."""

    first: dict[str, tuple[Shape, str]] = field(default_factory=dict)

    def conflicts(self, name: str, shape: Shape | None) -> bool:
        """Whether a value of this shape would not match (without recording anything)."""
        return shape is not None and name in self.first and self.first[name][0] != shape

    def check(self, name: str, shape: Shape | None, here: str, there: str,
              label: str | None = None) -> str | None:
        """None when a value of ``shape`` (found ``here``; None for null) fits ``name``;
        else why not. ``there`` describes this place when it is the first, for later
        messages."""
        if shape is None:
            return None
        seen, where = self.first.setdefault(name, (shape, there))
        if seen == shape:
            return None
        return (f"{label or repr(name)} has shape {fmt_shape(shape)} {here} "
                f"but {fmt_shape(seen)} {where}")


def _number_problem(name: str, text: str) -> str | None:
    """Why ``text`` is not an acceptable value of ``name`` (None when it is)."""
    if is_number(text):
        # 1e999 is a valid literal that overflows to inf
        if math.isfinite(float(text)):
            return None
        return f"value of {name!r} is not finite: {_cut(text)!r}"
    if is_nonfinite_word(text):
        return f"value of {name!r} is not finite: {text!r}"
    return f"value of {name!r} is not a number: {_cut(text)!r}"
