"""Diagnostics: every user-facing problem names its file, ``line N`` and shows a caret.

The core never prints; it raises :class:`TenFlangError` (a list of :class:`Diagnostic`) and
returns warnings as diagnostics. The command line and the notebook decide how to show them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on (or hide) shown as its escape:
    a bad file must not drive the terminal through an error message.

    >>> printable("ok\\x1b[31m\\x00 \\u202e!")
    'ok\\\\x1b[31m\\\\x00 \\\\u202e!'
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == "\t" else repr(ch)[1:-1] for ch in text)


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
        file = printable(self.file)
        return f"{file}: line {self.line}" if self.line else file

    def headline(self) -> str:
        return f"{self.location()}: {self.severity}: {printable(self.message)}"

    def printable(self) -> Diagnostic:
        """This diagnostic as it may be shown: the source line with tabs as one space and
        control characters escaped, the caret moved to match; message and hint escaped."""
        if self.source is None:
            return dataclasses.replace(self, hint=self.hint and printable(self.hint))
        raw = self.source.expandtabs(1)  # a tab is one column, as the core counts it
        column = len(printable(raw[:self.column]))
        length = len(printable(raw[self.column:self.column + self.length]))
        return dataclasses.replace(self, source=printable(raw), column=column, length=length,
                                   hint=self.hint and printable(self.hint))

    def render(self) -> str:
        shown_diag = self.printable()
        lines = [self.headline()]
        if shown_diag.source is not None and self.line:
            shown = shown_diag.source
            if len(shown) > 200:
                shown = shown[:200] + " ..."
            lines.append("    " + shown)
            column, length = shown_diag.column, shown_diag.length
            if column <= 200:
                lines.append("    " + " " * column + "^" * max(1, min(length, 80)))
        if shown_diag.hint:
            lines.append(f"    hint: {shown_diag.hint}")
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
