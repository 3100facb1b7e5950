"""Hints for a wrong line of a backward pass: hypotheses tested on the numbers (each must
hold on every draw), the entry point :func:`hint`.

The hypotheses, in order: a value that is not a number; a wrong shape (a transpose); for a
helper, what it should have been; for an adjoint, a missing fan-out term (the value is the
sum of some of the per-use terms), a sign or a factor of 2, the local partial without the
incoming adjoint or the adjoint without the local partial, the value used where the local
partial belongs; for a local partial, the value itself instead of its partial.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import ops
from ..formatting import fmt_list, fmt_shape, fmt_value
from ..lexical import adjoint_name, derivative_parts
from ..syntax import Define
from .reference import Reference, Use, close, code
from .report import LineVerdict

__all__ = ["hint", "mistakes"]

Array = np.ndarray


def hint(ref: Reference, v: LineVerdict, actual: Array) -> str | None:
    """Why the wrong line ``v`` is wrong, when a hypothesis explains it: ``actual`` is its
    value in isolation (its operands right), ``v.expected`` the right one (per draw).

    >>> from tenflang_nb.core.program import parse
    >>> ref = Reference(parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n"), 2, 0)
    >>> right = ref.adjoint("w")
    >>> hint(ref, LineVerdict(1, "d/L/d/w", "", "adjoint", "wrong", right), -right)[:43]
    'your value is the negative of the right one'
    """
    return _Hints(ref).hint(v, actual)


def mistakes(ref: Reference, v: str) -> list[Array]:
    """The usual wrong values of the adjoint ``d/L/d/v`` (one per draw, as ``ref`` has them):
    the values the hypotheses of :func:`hint` describe, so that a caller can ask for each
    one's hint in advance (the stepper's predict mode embeds them as a table). Some may get
    no hint (:func:`hint` decides); a value may appear twice.

    >>> from tenflang_nb.core.program import parse
    >>> square = parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n")
    >>> ref = Reference(square, 1, 0, given={"w": 3.0})
    >>> sorted({float(x[0]) for x in mistakes(ref, "w")})  # the right value is 6
    [-6.0, 0.0, 1.0, 3.0, 4.0, 6.0, 9.0, 12.0]
    >>> hint(ref, LineVerdict(1, "d/L/d/w", "", "adjoint", "wrong", ref.adjoint("w")),
    ...      mistakes(ref, "w")[0])[:47]
    '`define L = mul w w` (line 3 of <program>) uses'
    """
    return _Hints(ref).mistakes(v)


class _Hints:
    """The hypotheses about the lines of one check (they read the compiler's side)."""

    def __init__(self, ref: Reference) -> None:
        self.ref = ref
        self.loss = ref.loss
        self.program = ref.program

    def hint(self, v: LineVerdict, actual: Array) -> str | None:
        expected = v.expected
        assert expected is not None
        if not np.all(np.isfinite(actual)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(actual.reshape(len(actual), -1)),
                                             axis=1))[0]) + 1
            return (f"your value is not a number (NaN or infinite) on draw {bad}: "
                    "an ln, sqrt or pow of a negative number, or a division by 0?")
        if actual.shape != expected.shape:
            return self._shape_hint(v, actual, expected)
        if v.reference is not None:
            return self._helper_hint(v, actual, expected)
        parts = derivative_parts(v.name)
        if v.role == "adjoint" and parts is not None:
            return self._adjoint_hint(parts[1], actual, expected)
        if v.role == "partial" and parts is not None:
            return self._partial_hint(parts[0], parts[1], actual, expected)
        return _scale_hint(actual, expected)

    def _shape_hint(self, v: LineVerdict, actual: Array, expected: Array) -> str:
        got, want = actual.shape[1:], expected.shape[1:]
        parts = derivative_parts(v.name)
        whose = (f"an adjoint has the shape of its variable: {parts[1]} has shape "
                 if v.role == "adjoint" and parts else f"{v.name} should have shape ")
        hint = f"{whose}{fmt_shape(want)}, but this line gives {fmt_shape(got)}"
        if len(want) == 2 and got == want[::-1] and close(np.swapaxes(actual, 1, 2), expected):
            hint += ": it is the transpose of the right value (swap the operands?)"
        return hint

    def _helper_hint(self, v: LineVerdict, actual: Array, expected: Array) -> str:
        assert v.reference is not None
        name = v.reference
        if name.startswith("the term"):
            what = name
        else:
            parts = derivative_parts(name.split(":")[0])
            kind = ("the local partial " if parts and parts[0] != self.loss and ":" not in name
                    else "the incoming adjoint " if parts and ":" not in name else
                    "the compiler's ")
            what = kind + self.ref.describe(name)
        hint = f"{v.name} should be {what} ({fmt_value(expected[0], 'report')} {self.ref.at})"
        parts = derivative_parts(name.split(":")[0]) if not name.startswith("the ") else None
        if parts is not None and parts[0] != self.loss and parts[0] in self.ref.values:
            p = parts[0]
            if close(actual, self.ref.values[p]):
                return hint + f": yours is the value of {p}, not its local partial"
        relation = _relation(actual, expected)
        return hint + (f": yours is {RELATION_TO_IT[relation]}" if relation else "")

    def _adjoint_hint(self, v: str, actual: Array, expected: Array) -> str | None:
        ref = self.ref
        if v == self.loss:
            return f"the adjoint of the loss itself is 1 (d/{self.loss}/d/{self.loss} = 1)"
        terms = ref.terms(v) if ref.uses(v) else []
        uses = [u for u, _ in terms]
        name = adjoint_name(self.loss, v)
        if len(terms) > 1:
            for keep in range(len(terms) - 1, -1, -1):
                for subset in itertools.combinations(range(len(terms)), keep):
                    partial_sum = sum((terms[i][1] for i in subset), np.zeros_like(expected))
                    if close(actual, partial_sum):
                        return self._fanout_hint(v, name, uses, subset)
        scale = _scale_hint(actual, expected)
        if scale:
            return scale
        several = len(terms) > 1
        for use, term in terms:
            rest = expected - term
            hint = self._use_hint(v, use, term, actual - rest, several)
            if hint:
                return hint
            if several and close(actual, rest - term):
                return f"the term via {self.ref.use_text(use)} has the wrong sign"
        for use, term in terms if several else []:  # one term, wrong, and the others missing
            hint = self._use_hint(v, use, term, actual, several)
            if hint:
                return hint + f"; and {self._fanout_hint(v, name, uses, (uses.index(use),))}"
        return None

    def _fanout_hint(self, v: str, name: str, uses: list[Use],
                     kept: tuple[int, ...]) -> str:
        missing = [u for i, u in enumerate(uses) if i not in kept]
        lines = list(dict.fromkeys(p for p, _ in uses))
        if len(lines) == 1:
            d = self.program.defs[uses[0][0]]
            many = "twice" if len(uses) == 2 else f"{len(uses)} times"
            has = ("none of them" if not kept else
                   "only one of them" if len(kept) == 1 else f"only {len(kept)} of them")
            return (f"`{code(d)}` ({self._where(d)}) uses {v} {many}, so {name} has one "
                    f"term per use ({' + '.join(self._term_text(u) for u in uses)}): "
                    f"your value has {has}")
        defs = [self.program.defs[p] for p in lines]
        listing = fmt_list([f"`{code(d)}`" for d in defs])
        where = (f"lines {fmt_list([str(d.src.line) for d in defs])} of "
                 f"{self.program.file.rsplit('/', 1)[-1]}")
        missed = fmt_list([f"{self.ref.use_text(u)} ({self._term_text(u)})" for u in missing])
        s = "s" if len(missing) > 1 else ""
        return (f"fan-out: {v} is used {len(uses)} times, by {listing} ({where}), so {name} "
                f"is the sum of one term per use; your value misses the term{s} via {missed}")

    def _where(self, d: Define) -> str:
        return f"line {d.src.line} of {self.program.file.rsplit('/', 1)[-1]}"

    def _term_text(self, use: Use) -> str:
        p, i = use
        d = self.program.defs[p]
        op = ops.OPS[d.op] if d.op else None
        if p == self.loss and op is not None and op.name == "mul":
            return str(d.args[1 - i])
        g = "1" if p == self.loss else adjoint_name(self.loss, p)
        return f"{g} · d/{p}/d/{d.args[i]}"

    def _use_hint(self, v: str, use: Use, term: Array, mine: Array, several: bool
                  ) -> str | None:
        """Hypotheses about one term: ``mine`` is what the student has in its place."""
        p, _ = use
        ref = self.ref
        gname = adjoint_name(self.loss, p)
        pname = adjoint_name(p, v)
        where = f" (in the term via {self.ref.use_text(use)})" if several else ""
        factors = self._factors(use, term)
        if factors is None:
            return None
        g, partial = factors
        described = ref.describe(pname) if len(ref.terms(v)) == len(ref.uses(v)) else pname
        if not close(g, np.ones_like(g)) and close(mine, partial):
            return (f"your value is the local partial {pname} alone{where}: multiply it by "
                    f"the incoming adjoint {gname} (chain rule: {gname} · {pname})")
        if not close(partial, np.ones_like(partial)) and close(mine, g):
            return (f"your value is the incoming adjoint {gname} alone{where}: multiply it "
                    f"by the local partial {described} "
                    f"({fmt_value(partial[0], 'report')} {ref.at})")
        for what, label in ((f"the value of {p}", p), (f"{v} itself", v)):
            value = ref.values[label]
            if value.shape == term.shape and close(mine, g * value):
                return (f"you used {what} where the local partial {described} belongs"
                        f"{where}: {ref.at}, {label} = {fmt_value(value[0], 'report')} but "
                        f"{pname} = {fmt_value(partial[0], 'report')}")
        return None

    def _factors(self, use: Use, term: Array) -> tuple[Array, Array] | None:
        """A term of an elementwise use as the incoming adjoint times the local partial (None
        where it cannot be split so)."""
        p, _ = use
        d = self.program.defs[p]
        op = ops.OPS[d.op] if d.op else None
        g = self.ref.adjoint(p)
        elementwise = op is None or op.partials is not None
        if not elementwise or g.shape != term.shape or np.any(np.abs(g) < 1e-12):
            return None
        return g, term / g

    def mistakes(self, v: str) -> list[Array]:
        """The wrong values of ``d/L/d/v`` that the hypotheses of :meth:`_adjoint_hint`
        describe, as values (see :func:`mistakes`)."""
        ref = self.ref
        expected = ref.adjoint(v)
        terms = ref.terms(v) if ref.uses(v) else []
        several = len(terms) > 1
        found: list[Array] = []
        for keep in range(len(terms) - 1, 0, -1):  # fan-out: some of the terms
            for subset in itertools.combinations(range(len(terms)), keep):
                found.append(sum((terms[i][1] for i in subset), np.zeros_like(expected)))
        for use, term in terms:
            rest = expected - term
            factors = self._factors(use, term)
            if factors is not None:
                g, partial = factors
                p = use[0]
                theirs = [partial, g] + [g * ref.values[x] for x in (p, v)
                                         if ref.values[x].shape == term.shape]
                found += [rest + x for x in theirs]
                if several:  # that one term, wrong, and the others missing
                    found += theirs
            if several:
                found.append(rest - term)  # that term's sign
        return found + [factor * expected for factor in (-1.0, 2.0, 0.5)]

    def _partial_hint(self, p: str, m: str, actual: Array, expected: Array) -> str | None:
        values = self.ref.values
        right = (f"{self.ref.describe(adjoint_name(p, m))} "
                 f"({fmt_value(expected[0], 'report')} {self.ref.at})")
        if p in values and close(actual, values[p]):
            return f"your value is {p} itself, not its local partial: {right}"
        if m in values and close(actual, values[m]):
            return f"your value is {m} itself, not the local partial of {p}: {right}"
        return _scale_hint(actual, expected)


RELATION_HINT = {
    "negative": "your value is the negative of the right one: check the signs (the local "
                "partial of `sub a b` with respect to b is -1; `neg` flips a sign)",
    "twice": "your value is twice the right one: a term or a factor 2 too many?",
    "half": "your value is half the right one: a factor 2 is missing (a square `mul e e` or "
            "`pow e 2` has the local partial 2e)",
    "zero": "your value is 0 on every draw",
}
RELATION_TO_IT = {"negative": "its negative", "twice": "twice that", "half": "half of that",
                  "zero": "0 on every draw"}


def _relation(actual: Array, expected: Array) -> str | None:
    """The relations that need no knowledge of the program: a sign, a factor of 2, a 0."""
    if close(expected, np.zeros_like(expected)):
        return None
    for name, factor in (("negative", -1.0), ("twice", 2.0), ("half", 0.5), ("zero", 0.0)):
        if close(actual, factor * expected):
            return name
    return None


def _scale_hint(actual: Array, expected: Array) -> str | None:
    relation = _relation(actual, expected)
    return RELATION_HINT[relation] if relation else None

