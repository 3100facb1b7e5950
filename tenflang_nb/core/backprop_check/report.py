"""What a check of a backward pass found: a verdict per line and per adjoint, the report.

:class:`BackpropCheck` is the result of :func:`~tenflang_nb.core.backprop_check.check_backprop`;
its plain-text :meth:`~BackpropCheck.report` and the notebook's HTML share
:func:`status_text` and :func:`explanation_lines`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ..errors import TenFlangError, printable
from ..formatting import fmt_assignments, fmt_value

__all__ = ["AdjointVerdict", "BackpropCheck", "LineVerdict", "explanation_lines",
           "inherits_note", "plain", "status_text", "undecided_note"]

Array = np.ndarray


@dataclass
class LineVerdict:
    """One line of the student's text that defines something, and what the check found.

    ``role``: ``adjoint`` (defines ``d/L/d/v``), ``partial`` (a local partial named as the
    compiler names it, ``d/p/d/m``) or ``helper`` (any other name). ``status``: ``right``,
    ``wrong`` (a root: the mistake is on this line), ``inherits`` (wrong only because it uses
    a wrong value: ``because`` lists the first root lines, ``more`` says there are more),
    ``unchecked`` (a helper with no value
    to compare) or ``unused`` (a helper nothing checked uses). ``expected`` and ``actual``
    hold one value per draw (axis 0); ``expected`` is None when there is nothing to compare.
    """

    line: int
    name: str
    source: str
    role: str
    status: str
    expected: Array | None = None
    actual: Array | None = None
    hint: str | None = None
    because: tuple[int, ...] = ()
    more: bool = False
    reference: str | None = None  # the compiler's name for what this line should equal
    draw: int = 0  # the draw (from 0) its explanation shows: one on which the line is wrong

    @property
    def wrong(self) -> bool:
        return self.status in ("wrong", "inherits")


@dataclass(frozen=True)
class AdjointVerdict:
    """One adjoint ``d/L/d/v``: ``right``, ``wrong`` or ``missing`` (not written; ``given``
    when the student's lines used the compiler's value instead)."""

    name: str
    variable: str
    status: str
    line: int | None = None
    given: bool = False


@dataclass
class BackpropCheck:
    """What :func:`check_backprop` found: ``ok``, ``first_wrong_line``, every defining line
    (``lines``), every adjoint (``adjoints``), the ``error`` when the text does not parse;
    ``undecided``: the required adjoints the draws cannot tell from 0 (exactly 0 on every
    draw kept, while ``discarded`` draws were set aside near a pole). ``sample``: the
    scalar inputs and weights on the draw ``shown`` (from 0), the one the first wrong line's
    explanation shows.

    ``str(result)`` (and :meth:`report`) is a plain-text report; the notebook renders the
    same content as HTML.
    """

    model: str
    file: str
    loss: str
    text: str
    lines: list[LineVerdict] = field(default_factory=list)
    adjoints: list[AdjointVerdict] = field(default_factory=list)
    required: tuple[str, ...] = ()
    draws: int = 0
    sample: dict[str, float] = field(default_factory=dict)
    error: TenFlangError | None = None
    undecided: tuple[str, ...] = ()
    discarded: int = 0
    shown: int = 0

    @classmethod
    def failed(cls, model: str, file: str, loss: str, text: str, error: TenFlangError,
               required: Iterable[str] = ()) -> BackpropCheck:
        """A result for text that could not be checked (``error`` says why)."""
        return cls(model, file, loss, text, required=tuple(required), error=error)

    # -------------------------------------------------------------- verdicts

    @property
    def roots(self) -> list[LineVerdict]:
        """The root wrong lines, in text order (the first is ``first_wrong_line``)."""
        return [v for v in self.lines if v.status == "wrong"]

    @property
    def first_wrong_line(self) -> int | None:
        """The first line (1-based, in the student's text) that is wrong on its own, or that
        has an error; None when there is none."""
        if self.error is not None:
            line = self.error.first.line
            return line or None
        for verdicts in (self.roots, [v for v in self.lines if v.wrong]):
            if verdicts:
                return verdicts[0].line
        return None

    def _names(self, status: str) -> list[str]:
        return [a.name for a in self.adjoints if a.status == status]

    @property
    def right(self) -> list[str]:
        """The adjoints written and right."""
        return self._names("right")

    @property
    def wrong(self) -> list[str]:
        """The adjoints written and wrong (at the root or inherited)."""
        return self._names("wrong")

    @property
    def missing(self) -> list[str]:
        """The adjoints not written (the compiler's GCP needs them for a weight's gradient)."""
        return self._names("missing")

    @property
    def missing_required(self) -> list[str]:
        return [n for n in self.required if n in self.missing]

    @property
    def ok(self) -> bool:
        """No error, no wrong line, something checked, every required adjoint written, and
        the draws can tell each one from 0."""
        return (self.error is None and bool(self.lines) and not any(v.wrong for v in self.lines)
                and not self.missing_required and not self.undecided)

    def verdict(self, line: int) -> LineVerdict | None:
        """The verdict of a line of the student's text (None: it defines nothing)."""
        return next((v for v in self.lines if v.line == line), None)

    # -------------------------------------------------------------- text

    @property
    def draws_text(self) -> str:
        """``5 random draws`` (or ``1 random draw``)."""
        return f"{self.draws} random draw{'s' * (self.draws != 1)}"

    @property
    def sample_text(self) -> str:
        """``draw 3: x = 1.5, w = 0.8``: the draw the report's numbers come from ("" when
        it has no scalar inputs or weights to show)."""
        return (f"draw {self.shown + 1}: {fmt_assignments(self.sample)}" if self.sample
                else "")

    def headline(self) -> str:
        """One sentence: all right, the first wrong line, an error, or what is missing."""
        if self.error is not None:
            first = self.error.first
            where = f"line {first.line}: " if first.line else ""
            more = len(self.error.diagnostics) - 1
            others = f" (and {more} more error{'s' * (more > 1)})" if more else ""
            return f"✗ {where}{printable(first.message)}{others}: nothing was checked"
        if not self.lines:
            return f"✗ nothing to check: write lines like 'define d/{self.loss}/d/w = ...'"
        first = self.first_wrong_line
        if first is not None:
            return f"✗ line {first} is the first wrong line"
        if self.missing_required:
            return (f"✗ so far so good ({len(self.right)} right), but not written yet: "
                    + ", ".join(self.missing_required))
        if self.undecided:
            return (f"✗ the draws cannot tell: every draw the checker could use gives "
                    f"{' = 0, '.join(self.undecided)} = 0")
        n = len(self.missing)
        extra = f" ({n} other adjoint{'s' * (n != 1)} not written)" if n else ""
        return (f"✓ all right: {len(self.right)} adjoint{'s' * (len(self.right) != 1)} "
                f"checked on {self.draws_text}{extra}")

    def report(self) -> str:
        """The whole check as plain text (what ``str()`` and the assert messages show)."""
        out = [self.headline()]
        if self.error is not None:
            out.append(self.error.render())
            return "\n".join(out)
        for v in self.roots:
            out.append(f"line {v.line}: {shown_source(v.source)}")
            out.extend("    " + plain(t) for t in explanation_lines(v))
        if self.lines:
            out.append(f"your lines (checked on {self.draws_text}"
                       + (f"; {self.sample_text}" if self.sample else "") + "):")
            sources = [shown_source(v.source) for v in self.lines]
            width = max(map(len, sources))
            for v, source in zip(self.lines, sources, strict=True):
                out.append(f"  {v.line:>3}  {source:<{width}}  {status_text(v)}")
        missing = [a for a in self.adjoints if a.status == "missing"]
        if missing:
            out.append("not written yet: " + ", ".join(
                a.name + (" (required)" if a.name in self.required else "")
                + (" (your lines used the compiler's value)" if a.given else "")
                for a in missing))
        out.extend(note for note in (undecided_note(self), inherits_note(self)) if note)
        return "\n".join(out)

    def __str__(self) -> str:
        return self.report()


def status_text(v: LineVerdict) -> str:
    """A line's verdict in words (the text report and the HTML share it).

    >>> status_text(LineVerdict(3, "t", "define t = mul e 2", "helper", "unused"))
    'helper, not used by any adjoint'
    """
    if v.status == "right":
        return "✓ right" if v.role != "helper" else "✓ helper, right"
    if v.status == "wrong":
        return "✗ wrong: the mistake is on this line"
    if v.status == "inherits":
        lines = ", ".join(str(n) for n in v.because) + (" and others" if v.more else "")
        many = len(v.because) > 1 or v.more
        where = f"line{'s' * many} {lines}" if v.because else "an earlier line"
        return f"✗ wrong only because of {where}"
    if v.status == "unused":
        return "helper, not used by any adjoint"
    return "helper (no value of the compiler to compare with)"


def inherits_note(result: BackpropCheck) -> str | None:
    """What "wrong only because of line N" means, when a line is marked so (None: none is).

    >>> inherits_note(BackpropCheck("m", "f", "L", "", [LineVerdict(2, "t", "", "helper",
    ...                                                              "inherits")]))[:58]
    'A line wrong only because of line N may itself be written '
    """
    if not any(v.status == "inherits" for v in result.lines):
        return None
    return ("A line wrong only because of line N may itself be written right: it uses the "
            "value of line N, which is wrong. Fix the first wrong line, then check again.")


def undecided_note(result: BackpropCheck) -> str | None:
    """Why the draws cannot tell a required adjoint from 0, and what to do (None: they can).

    >>> print(undecided_note(BackpropCheck("m", "f", "L", "", undecided=("d/L/d/w",),
    ...                                    discarded=7)))
    7 random draws were set aside (a value of the model's GCP on them is NaN, infinite or \
too large to judge by), and on every draw kept d/L/d/w is exactly 0: an answer of 0 would \
pass. Check on other draws: another seed (seed=, or --seed in %%tenflang_check).
    """
    if not result.undecided:
        return None
    n = result.discarded
    return (f"{n} random draw{'s were' if n != 1 else ' was'} set aside (a value of the "
            "model's GCP on them is NaN, infinite or too large to judge by), and on every draw "
            f"kept {', '.join(result.undecided)} "
            f"{'is' if len(result.undecided) == 1 else 'are'} exactly 0: an answer of 0 would "
            "pass. Check on other draws: another seed (seed=, or --seed in %%tenflang_check).")


def shown_source(text: str) -> str:
    """A line of the student's text as the report shows it (control characters escaped)."""
    return printable(text.strip().expandtabs(4))


def plain(text: str) -> str:
    """A sentence of the report as plain text: the backticks around code dropped, control
    characters escaped.

    >>> plain("`mul w w` uses w twice")
    'mul w w uses w twice'
    """
    return printable(text.replace("`", ""))


def explanation_lines(v: LineVerdict) -> list[str]:
    """The sentences that explain a wrong line: its expected and actual values on a draw
    where they differ, the hint (code between backticks: see :func:`plain`).

    >>> v = LineVerdict(1, "t", "define t = w", "adjoint", "wrong", np.array([2.0, 4.0]),
    ...                 np.array([2.0, 1.0]), "a factor 2 is missing", draw=1)
    >>> explanation_lines(v)
    ['expected t = 4, got 1 (draw 2)', 'hint: a factor 2 is missing']
    """
    out = []
    if v.expected is not None and v.actual is not None:
        # the student's own line by name: the hint says what it should be in the maths
        out.append(f"expected {v.name} = {fmt_value(v.expected[v.draw], 'report')}, "
                   f"got {fmt_value(v.actual[v.draw], 'report')} (draw {v.draw + 1})")
    if v.hint:
        out.append(f"hint: {v.hint}")
    return out
