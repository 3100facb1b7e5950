"""Hints about an adjoint and the terms it sums, one per use of its variable: a missing
fan-out term, one factor of a term alone, the value used where the local partial belongs, a
usual slip in a local partial (:data:`SLIPS`), another variable where the partial's belongs,
a transpose missing in a matrix product's adjoint; about a local partial the student names;
and the wrong values they describe (:meth:`TermHints.mistakes`, for the stepper's predict
mode)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import numpy as np

from ...formatting import fmt_list, fmt_shape, fmt_value
from ...lexical import GIVEN_KINDS, adjoint_name
from ...ops import Const
from ...syntax import Define
from ..reference import Use, code, ordinal, run_line
from .base import RELATION_FACTOR
from .shapes import ShapeHints

__all__ = ["SLIPS", "TermHints"]

Array = np.ndarray

# The usual slips in a local partial: per operator, (the operand, the wrong partial from the
# operands' values and the result's, what the student wrote, why it is wrong); {a} and {b}
# stand for the operands and {v} for the result, as the shape program names them.
Slip = tuple[int, Callable[..., Array], str, str]
SLIPS: dict[str, tuple[Slip, ...]] = {
    "tanh": ((0, lambda a, v: 1 - v, "1 - {v}",
              "the square is missing (tanh's slope is 1 - {v}²)"),
             (0, lambda a, v: 1 - a * a, "1 - {a}²",
              "tanh's slope is written with its value {v}, not its input {a}"),
             (0, lambda a, v: v * (1 - v), "{v}(1 - {v})",
              "that is the logistic's slope, not tanh's")),
    "logistic": ((0, lambda a, v: 1 - v, "1 - {v}",
                  "the factor {v} is missing (the logistic's slope is {v}(1 - {v}))"),
                 (0, lambda a, v: a * (1 - a), "{a}(1 - {a})",
                  "the logistic's slope is written with its value {v}, not its input {a}"),
                 (0, lambda a, v: 1 - v * v, "1 - {v}²",
                  "that is tanh's slope, not the logistic's")),
    "div": ((0, lambda a, b, v: b, "{b}",
             "a product with {b} (`mul`) where a division by {b} (`div`) belongs"),
            (1, lambda a, b, v: -1 / (b * b), "-1/{b}²", "the numerator {a} is missing"),
            (1, lambda a, b, v: -v, "-{a}/{b}", "one division by {b} is missing")),
    "mul": ((0, lambda a, b, v: 1 / b, "1/{b}",
             "a division by {b} (`div`) where a product with {b} (`mul`) belongs"),
            (1, lambda a, b, v: 1 / a, "1/{a}",
             "a division by {a} (`div`) where a product with {a} (`mul`) belongs")),
    "ln": ((0, lambda a, v: a, "{a}",
            "a product with {a} (`mul`) where a division by {a} (`div`) belongs"),),
    "pow": ((0, lambda a, b, v: a ** (b - 1), "{a}^({b} - 1)",
             "the exponent {b} is not brought down as a factor"),
            (0, lambda a, b, v: b * v, "{b}·{v}", "the exponent is not lowered by 1")),
}


class TermHints(ShapeHints):
    """The hypotheses about adjoints, their terms and local partials."""

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
                    if self.close(actual, partial_sum):
                        return self._fanout_hint(v, name, uses, subset)
        scale = self._scale_hint(actual, expected)
        if scale:
            return scale
        for p in dict.fromkeys(p for p, _ in uses):
            if self.close(actual, ref.values[p]):
                return (f"your value is {p} itself, the value of "
                        f"`{code(self.program.defs[p])}`: {name} is a derivative "
                        f"({fmt_value(expected[ref.shown], 'report')} {ref.at})")
        several = len(terms) > 1

        def alone() -> str | None:  # one term, wrong, and the others missing
            for use, term in terms if several else []:
                hint = self._use_hint(use, term, actual, several)
                if hint:
                    return hint + (f"; and {self._fanout_hint(v, name, uses, (uses.index(use),))}")
            return None

        # the same number on every draw is a number written down, not a sum with a sign
        # flipped (1 = a - w where a = add w 1): first the hypotheses about one term alone
        if np.all(actual == actual[:1]) and (hint := alone()):
            return hint
        for use, term in terms:
            rest = expected - term
            hint = self._use_hint(use, term, actual - rest, several)
            if hint:
                return hint
            if several and self.close(actual, rest - term):
                return f"the term via {self.ref.use_text(use)} has the wrong sign"
        return alone() or self._alone(v, actual)

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
                    f"term per use: {' + '.join(self._term_text(u, labelled=True) for u in uses)}"
                    f"; your value has {has}")
        defs = [self.program.defs[p] for p in lines]
        listing = fmt_list([f"`{code(d)}`" for d in defs])
        where = (f"lines {fmt_list([str(d.src.line) for d in defs])} of "
                 f"{self.program.file.rsplit('/', 1)[-1]}")
        missed = fmt_list([f"{self.ref.use_text(u)} ({self._term_text(u)})" for u in missing])
        s = "s" if len(missing) > 1 else ""
        return (f"fan-out: {v} is used {len(uses)} times, by {listing} ({where}), so {name} "
                f"is the sum of one term per use; your value misses the term{s} via {missed}")

    def _term_text(self, use: Use, labelled: bool = False) -> str:
        """One use's term of the adjoint, as a formula: ``d/L/d/p · d/p/d/v``; where the line
        uses the variable twice, with that operand's own partial (``d/L/d/s · z``) and, when
        ``labelled``, the operand named: ``(first operand)``."""
        p, i = use
        v = str(self.program.defs[p].args[i])
        info = self.ref.partial(use)
        repeated = self.ref.repeated(use)
        own = info[0] if info is not None and info[0] else None
        if p == self.loss:
            text = own or f"the term via {self.ref.use_text(use)}"
        elif repeated and own:
            text = f"{adjoint_name(self.loss, p)} · {own}"
        elif repeated:  # a vector-Jacobian product (matmul W W) has no local partial
            text = self.ref.term_formula(use) or ""
            if not text:  # no formulas (grading mode): the operand names the term
                return f"the term via the {ordinal(i)} operand"
        else:
            text = f"{adjoint_name(self.loss, p)} · {adjoint_name(p, v)}"
        return text + (f" ({ordinal(i)} operand)" if labelled and repeated else "")

    def _use_hint(self, use: Use, term: Array, mine: Array, several: bool) -> str | None:
        """Hypotheses about one term: ``mine`` is what the student has in its place."""
        p, i = use
        where = f" (in the term via {self.ref.use_text(use)})" if several else ""
        factors = self._factors(use, term)
        if factors is None:
            return next((text + where for wrong, text in self._wrong_terms(use, term)
                         if self.close(mine, wrong)), None)
        g, partial, formula = factors
        v = str(self.program.defs[p].args[i])
        gname = adjoint_name(self.loss, p)
        pname = adjoint_name(p, v)
        if self.ref.repeated(use):  # the partial of this operand alone, not d/p/d/v
            described = f"of the {ordinal(i)} operand, {formula or '?'}"
            inside = alone = described + ","  # followed by more of the sentence
            product = f"{gname} · {formula or '?'}"
            short = f"the {ordinal(i)} operand's local partial"
        else:
            described = inside = self.ref.describe(pname)
            alone = pname
            product, short = f"{gname} · {pname}", pname
        ones = np.ones_like(partial)
        if p != self.loss and not self.close(g, ones) and self.close(mine, partial):
            return (f"your value is the local partial {alone} alone{where}: multiply it "
                    f"by the incoming adjoint {gname} (chain rule: {product})")
        if p != self.loss and not self.close(partial, ones) and self.close(mine, g):
            return (f"your value is the incoming adjoint {gname} alone{where}: multiply it "
                    f"by the local partial {described} "
                    f"({fmt_value(partial[self.ref.shown], 'report')} {self.ref.at})")
        k = self.ref.shown
        for what, label in ((f"the value of {p}", p), (f"{v} itself", v)):
            value = self.ref.values[label]
            if value.shape == term.shape and self.close(mine, g * value):
                return (f"you used {what} where the local partial {inside} belongs{where}: "
                        f"{self.ref.at}, {label} = {fmt_value(value[k], 'report')} but {short} "
                        f"= {fmt_value(partial[k], 'report')}")
        return next((text + where for wrong, text in self._wrong_terms(use, term)
                     if self.close(mine, wrong)), None)

    def _factors(self, use: Use, term: Array) -> tuple[Array, Array, str | None] | None:
        """A use's term as the incoming adjoint times the local partial (with the partial's
        formula); None where it is no such product (a VJP, a broadcast operand's sum)."""
        info = self.ref.partial(use)
        if info is None:
            return None
        formula, partial = info
        g = self.ref.adjoint(use[0])
        if not g.shape == partial.shape == term.shape:
            return None  # a broadcast operand: its term is a sum, not a product
        return g, partial, formula

    def _wrong_terms(self, use: Use, term: Array) -> Iterator[tuple[Array, str]]:
        """Usual wrong values of one use's term, each with its hint: a slip in the local
        partial (:data:`SLIPS`), another variable where the partial's belongs, a transpose
        missing in a matrix product's adjoint."""
        p, i = use
        d = self.program.defs[p]
        g = self.ref.adjoint(p)
        gname = adjoint_name(self.loss, p)
        factors = self._factors(use, term)
        if factors is not None and not self.ref.repeated(use):
            partial = factors[1]
            pname = adjoint_name(p, str(d.args[i]))
            right = f" ({self.ref.describe(pname)})" if self.ref.formulas else ""
            for wrong, what, why in self._slips(use):
                yield g * wrong, f"your value is {gname} · {_grouped(what)}: {why}{right}"
            u = self._named(partial, variables=True)  # a local partial is no adjoint
            # a partial that is no variable (the 1 of `sub o y`): named as the partial
            said = self.ref.describe(pname) if self.ref.formulas else pname
            for other in self._same_shape(u or pname, partial, d):
                yield (g * self.ref.values[other],
                       f"you used {other} where the local partial {said} belongs" if u is None
                       else f"you used {other} where {u} belongs: the local partial {pname} "
                       f"is {u}" if self.ref.formulas else
                       f"you used {other} where {u} belongs (in the local partial {pname})")
        if factors is None and d.op is not None:  # a vector-Jacobian product's term
            if g.shape == term.shape and not self.close(g, term):
                yield g, (f"your value is the incoming adjoint {gname} alone: `{code(d)}` "
                          f"({self._where(d)}) changes it on its way back to {d.args[i]}")
            for other in dict.fromkeys(a for k, a in enumerate(d.args) if k != i):
                value = self.ref.values.get(str(other))
                if value is not None and value.shape == term.shape:
                    yield value, (f"your value is {other} alone: multiply by the incoming "
                                  f"adjoint {gname} (chain rule)")
        # a transpose missing from g @ b^T (or b^T @ g), when the line is not known: as
        # written, it may be one too many in g @ bt (W g = g W^T); the line's variants tell
        if d.op == "matmul" and isinstance(d.args[1 - i], str) and self.written is None:
            b = str(d.args[1 - i])
            if len(self.program.shapes[b]) == 2:
                values = self.ref.values
                for other in (b, *self._same_shape(b, values[b], d)):
                    value = values[b] if other == b else np.swapaxes(values[other], 1, 2)
                    wrong = run_line("matmul", [g, value] if i == 0 else [value, g],
                                     self.ref.n)
                    if wrong is not None and wrong.shape == term.shape:
                        yield wrong, (f"a transpose is missing: {b} "
                                      f"{fmt_shape(self.program.shapes[b])} enters the "
                                      "product transposed" if other == b else
                                      f"you used {other} where {b} belongs")

    def _same_shape(self, name: str, value: Array, line: Define) -> list[str]:
        """The variables that may be written in place of ``name`` (of ``value``) in a term
        of the shape program's ``line``: the model's weights and data, and the line's
        operands, of that shape and with other values."""
        return [n for n in self.program.decls if n != name and n in self.ref.values
                and (self.program.kind(n) in (*GIVEN_KINDS, "weight") or n in line.args)
                and self.ref.values[n].shape == value.shape
                and not self.close(self.ref.values[n], value)]

    def _slips(self, use: Use) -> list[tuple[Array, str, str]]:
        """The usual slips in the local partial of ``use`` (:data:`SLIPS`): the wrong
        partial's value, what the student wrote and why it is wrong."""
        p, i = use
        d = self.program.defs[p]
        found = []
        names = dict(zip("ab", map(str, d.args), strict=False), v=p)
        values = [a.value if isinstance(a, Const) else self.ref.values[a] for a in d.args]
        for k, wrong, what, why in SLIPS.get(d.op or "", ()):
            if k != i:
                continue
            with np.errstate(all="ignore"):
                value = np.broadcast_to(wrong(*values, self.ref.values[p]),
                                        self.ref.values[p].shape)
            found.append((value, what.format(**names), why.format(**names)))
        return found

    def _slip_hint(self, p: str, m: str, actual: Array, formula: bool = True) -> str | None:
        """``actual`` as a slip in the local partial ``d/p/d/m``: "1 - h: the square ...",
        with the right ``formula`` when the reference shows formulas."""
        d = self.program.defs.get(p)
        if d is None or sum(1 for a in d.args if a == m) != 1:
            return None
        use = (p, d.args.index(m))
        right = (f" ({self.ref.describe(adjoint_name(p, m))})"
                 if formula and self.ref.formulas else "")
        return next((f"{what}: {why}{right}" for wrong, what, why in self._slips(use)
                     if self.close(actual, wrong)), None)

    def mistakes(self, v: str) -> list[Array]:
        """The wrong values of ``d/L/d/v`` that the hypotheses of :meth:`_adjoint_hint`
        describe, as values (see :func:`mistakes`)."""
        ref = self.ref
        expected = ref.adjoint(v)
        terms = ref.terms(v) if ref.uses(v) else []
        several = len(terms) > 1
        found: list[Array] = []
        for keep in range(len(terms) - 1, -1, -1) if several else ():  # fan-out: some terms
            for subset in itertools.combinations(range(len(terms)), keep):
                found.append(sum((terms[i][1] for i in subset), np.zeros_like(expected)))
        for (p, i), term in terms:
            rest = expected - term
            factors = self._factors((p, i), term)
            theirs = []
            if factors is not None:
                g, partial, _ = factors
                theirs += [partial, g] + [g * ref.values[x] for x in (p, str(
                    self.program.defs[p].args[i])) if ref.values[x].shape == term.shape]
            theirs += [wrong for wrong, _ in self._wrong_terms((p, i), term)]
            found += [rest + x for x in theirs]
            if several:  # that one term, wrong, and the others missing
                found += theirs
                found.append(rest - term)  # that term's sign
        found += [ref.values[p] for p in dict.fromkeys(p for (p, _), _ in terms)
                  if ref.values[p].shape == expected.shape]  # the value of a line using v
        return found + [factor * expected for factor in RELATION_FACTOR.values()]


    def _partial_hint(self, p: str, m: str, actual: Array, expected: Array) -> str | None:
        values = self.ref.values
        right = (f"{self.ref.describe(adjoint_name(p, m))} "
                 f"({fmt_value(expected[self.ref.shown], 'report')} {self.ref.at})")
        if p in values and self.close(actual, values[p]):
            return f"your value is {p} itself, not its local partial: {right}"
        if m in values and self.close(actual, values[m]):
            return f"your value is {m} itself, not the local partial of {p}: {right}"
        scale = self._scale_hint(actual, expected)
        if scale:
            return scale
        slip = self._slip_hint(p, m, actual)
        if slip:
            return f"your {adjoint_name(p, m)} is {slip}"
        return self._swapped_name(actual, expected)

def _grouped(text: str) -> str:
    return f"({text})" if " " in text else text
