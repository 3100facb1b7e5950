"""Diagnostics: every user-facing problem names its file, ``line N`` and shows a caret.

The core never prints; it raises :class:`TenFlangError` (a list of :class:`Diagnostic`) and
returns warnings as diagnostics. The command line and the notebook decide how to show them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Diagnostic:
    """One error or warning at a place in a file.

    ``line`` counts from 1 (0 means "the whole file"); ``column`` counts from 0 and, with
    ``length``, tells where the caret goes.

    >>> d = Diagnostic("bad operand", file="s.tf", line=3, column=15, length=1,
    ...                source="define z = mul q w")
    >>> print(d.render())
    s.tf: line 3: error: bad operand
        define z = mul q w
                       ^
    """

    message: str
    file: str = "<program>"
    line: int = 0
    column: int = 0
    length: int = 0
    source: str | None = None
    severity: str = "error"
    hint: str | None = None

    def location(self) -> str:
        return f"{self.file}: line {self.line}" if self.line else self.file

    def headline(self) -> str:
        return f"{self.location()}: {self.severity}: {self.message}"

    def render(self) -> str:
        lines = [self.headline()]
        if self.source is not None and self.line:
            shown = self.source.expandtabs(1)
            if len(shown) > 200:
                shown = shown[:200] + " ..."
            lines.append("    " + shown)
            if self.column <= 200:
                lines.append("    " + " " * self.column + "^" * max(1, min(self.length, 80)))
        if self.hint:
            lines.append(f"    hint: {self.hint}")
        return "\n".join(lines)


@dataclass
class TenFlangError(Exception):
    """A user error (bad program, bad data file, bad option): never a bug in TenFlang.

    >>> err = TenFlangError([Diagnostic("empty program", file="a.tf")])
    >>> str(err)
    'a.tf: error: empty program'
    """

    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.render())

    @classmethod
    def at(
        cls,
        message: str,
        file: str = "<program>",
        line: int = 0,
        column: int = 0,
        length: int = 0,
        source: str | None = None,
        hint: str | None = None,
    ) -> TenFlangError:
        return cls([Diagnostic(message, file, line, column, length, source, "error", hint)])

    @property
    def first(self) -> Diagnostic:
        return self.diagnostics[0]

    def render(self, limit: int = 20) -> str:
        shown = [d.render() for d in self.diagnostics[:limit]]
        extra = len(self.diagnostics) - limit
        if extra > 0:
            shown.append(f"... and {extra} more error(s)")
        return "\n".join(shown)

    def __str__(self) -> str:
        return self.render()

    def _render_traceback_(self) -> list[str]:
        # IPython shows these lines instead of a traceback: a user error is not a crash
        return self.render().splitlines()


class ComputeError(TenFlangError):
    """A value became NaN or infinite while running a program (names the line and iteration)."""
