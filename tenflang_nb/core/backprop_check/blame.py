"""Blame: which lines of a backward pass are wrong, and which are wrong on their own.

Helpers have no reference value, so this is a choice:

* A *checked* line (one defining an adjoint or a compiler-named local partial) is right when
  its chained value equals the compiler's on every draw (see ``student``). A wrong checked
  line whose isolated value is right only *inherits* the mistake of an earlier line; one
  whose isolated value is wrong holds a mistake of its own, in its line or in the helpers
  that feed it (its *block*).
* A helper is right when it feeds (through other helpers) a checked line that is right in
  isolation, or when its value is one of the compiler's (an adjoint, a local partial, an
  intermediate): such a line is never the root of a mistake. In a wrong block, another
  helper is blamed when replacing its value by one of the compiler's values for that
  variable (a local partial, a piece of one, an incoming adjoint) makes the checked line
  right; a right helper that does so was used where another value belongs, and the line
  using it is blamed. Then a helper whose own line, written otherwise (a transpose, another
  operator, another operand: ``hints.rewrites``), makes the checked line right is blamed.
  Otherwise the checked line itself is blamed.
* The blamed lines are the *root* wrong lines; ``first_wrong_line`` is the first of them.
  Lines that inherit a mistake name the root lines it comes from.

The cost is linear in the length of the answer: each wrong block tries the helpers nearest
its checked line, each trial recomputes only the lines downstream of the helper, and all the
trials of a check share one budget of line evaluations (past it, the checked line is blamed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lexical import adjoint_name, derivative_parts, split_derivative
from ..syntax import Define
from .hints import hint, misused_helper_hint, rewrites
from .report import AdjointVerdict, BackpropCheck, LineVerdict
from .student import StudentLines

__all__ = ["blame"]

Array = np.ndarray

SUSPECTS = 8  # helpers tried per wrong block: the nearest to its checked line ...
SCAN = 4 * SUSPECTS  # ... among this many nearest
TRIAL_LINES = 20_000  # line evaluations all the trials of one check may take
BECAUSE = 5  # root lines a line that inherits a mistake names


def blame(student: StudentLines, model: str, text: str, required: tuple[str, ...]
          ) -> BackpropCheck:
    """The check of the student's lines: a verdict per line (and a hint for each root wrong
    line) and per adjoint. ``model`` labels the shape program, ``text`` is the student's."""
    return _Blame(student).result(model, text, required)


@dataclass(frozen=True)
class _Root:
    """Why a line is blamed: it should be the compiler's ``reference`` (``value``); or it
    uses the right helper ``misused`` where the compiler's ``reference`` (``belongs``) goes,
    and should be ``value``; or (nothing set) its own value is wrong."""

    reference: str | None = None
    value: Array | None = None
    misused: str | None = None
    belongs: Array | None = None


class _Blame:
    """The verdicts on one student's lines (see the module)."""

    def __init__(self, student: StudentLines) -> None:
        self.student = student
        self.ref = student.ref
        self.close = student.ref.close
        self.loss = student.loss
        self.expected = student.expected
        self.chained = student.chained
        self.iso = student.iso
        self.role = student.role
        self.defines = student.defines
        self.define_of = {d.target: d for d in self.defines}
        self.position = {d.target: k for k, d in enumerate(self.defines)}
        # the operands of each line that the student defined (in order, once each)
        self.operands = {d.target: [a for a in dict.fromkeys(d.variables())
                                    if a in self.define_of] for d in self.defines}
        self.budget = TRIAL_LINES
        self._matched: dict[str, list[str]] = {}

    def matched(self, t: str, backward: bool = False) -> str | None:
        """The compiler's value that the line ``t`` equals in isolation (None: none); with
        ``backward``, a value of the backward pass (an adjoint, a local partial, a temporary
        ``d/o/d/z:0``), not of the forward pass, and not a mere number."""
        if t not in self._matched:
            # the names the line itself uses first: d/L/d/b, not d/L/d/e of the same value
            own = set(self.define_of[t].variables())
            self._matched[t] = sorted(self.ref.matches(self.iso[t]), key=lambda n: n not in own)
        if backward and self.ref.n > 1 and np.all(self.iso[t] == self.iso[t].flat[0]):
            return None  # a number (1, 2) equals constants of the compiler's by chance
        return next((n for n in self._matched[t]
                     if not backward or split_derivative(n) is not None), None)

    def result(self, model: str, text: str, required: tuple[str, ...]) -> BackpropCheck:
        chain_ok = {c: self.close(self.chained[c], e) for c, e in self.expected.items()}
        iso_ok = {c: self.close(self.iso[c], e) for c, e in self.expected.items()}
        order = [d.target for d in self.defines]
        helpers = [t for t in order if self.role[t] == "helper"]
        users: dict[str, list[str]] = {h: [] for h in helpers}
        for t in order:
            for a in self.operands[t]:
                if a in users:
                    users[a].append(t)
        feeds: dict[str, set[str]] = {}  # helper -> the checked lines it reaches via helpers
        for h in reversed(helpers):
            feeds[h] = set()
            for u in users[h]:
                feeds[h] |= {u} if u in self.expected else feeds.get(u, set())
        known_right = {h for h in helpers if any(iso_ok[c] for c in feeds[h])}

        blamed: dict[str, _Root] = {}
        for c in order:
            if c not in self.expected or chain_ok[c] or iso_ok[c]:
                continue
            cone = self._cone(c)
            block = sorted([*cone, c], key=self.position.__getitem__)
            blame_on, why = self._repair(c, cone, block, known_right)
            if blame_on not in blamed:
                blamed[blame_on] = why

        verdicts: dict[str, LineVerdict] = {}
        tainted = self.student.tainted  # computed from the right value of a wrong line
        for t in order:
            d = self.define_of[t]
            role = self.role[t]
            expected = self.expected.get(t)
            reference = None
            if t in blamed:
                status = "wrong"
                reference = blamed[t].reference if blamed[t].misused is None else None
                if blamed[t].value is not None:
                    expected = blamed[t].value
            elif role != "helper":
                status = "right" if chain_ok[t] and t not in tainted else "inherits"
            elif not self.close(self.chained[t], self.iso[t]) or t in tainted:
                status = "inherits"
            elif not feeds[t]:
                status = "unused"
            elif t in known_right or self.matched(t) is not None:
                status = "right"
            else:
                status = "unchecked"
            verdicts[t] = LineVerdict(d.src.line, t, d.src.text, role, status, expected,
                                      self.chained[t], reference=reference)
        roots: dict[str, tuple[int, ...]] = {}  # the first root lines among each line's sources
        for t in order:
            found: set[int] = set()
            for a in self.operands[t]:
                if verdicts[a].status == "wrong":
                    found.add(verdicts[a].line)
                found.update(roots[a])
            roots[t] = tuple(sorted(found)[:BECAUSE + 1])
        for t in order:
            v = verdicts[t]
            if v.status == "inherits":
                because = roots[t] or tuple(sorted(
                    verdicts[a].line for a in self.operands[t] if verdicts[a].wrong))
                v.because, v.more = because[:BECAUSE], len(because) > BECAUSE
            elif v.status == "wrong":
                why = blamed[t]
                # the numbers shown, the hint's too, are those of a draw where the line is
                # wrong (on another its mistake may vanish: a term of 0 left out)
                if v.expected is not None:
                    v.draw = self.ref.first_wrong(v.actual, v.expected)
                self.ref.shown = v.draw
                if why.misused is not None:
                    assert why.reference is not None and why.belongs is not None
                    h = why.misused
                    v.hint = misused_helper_hint(self.ref, h, verdicts[h].line,
                                                 str(self.matched(h, backward=True)),
                                                 why.reference, why.belongs,
                                                 self.student.written(self.define_of[h]))
                else:
                    v.hint = hint(self.ref, v, self.iso[t],
                                  self.student.written(self.define_of[t]))

        self.ref.shown = 0
        adjoints = self._adjoints(verdicts, required)
        roots = [verdicts[t] for t in order if verdicts[t].status == "wrong"]
        shown = roots[0].draw if roots else 0
        sample = {n: float(v[shown]) for n, v in self.ref.data.items() if v[shown].shape == ()}
        return BackpropCheck(model, self.defines[0].src.file, self.loss, text,
                             [verdicts[t] for t in order], adjoints, required, self.ref.n,
                             sample, undecided=self.ref.undecided(required),
                             discarded=self.ref.discarded, shown=shown)

    def _cone(self, c: str) -> dict[str, int]:
        """The helpers feeding ``c`` through helpers, each with its distance from ``c``."""
        depth: dict[str, int] = {}
        frontier = [c]
        k = 0
        while frontier:
            k += 1
            nxt = []
            for t in frontier:
                for a in self.operands[t]:
                    if self.role[a] == "helper" and a not in depth:
                        depth[a] = k
                        nxt.append(a)
            frontier = nxt
        return depth

    def _repair(self, c: str, cone: dict[str, int], block: list[str], known_right: set[str]
                ) -> tuple[str, _Root]:
        """The line to blame for the wrong block of ``c``, and why: the first helper that,
        replaced by one of the compiler's values for that variable, makes ``c`` right; or
        the line using a right helper where such a value belongs; or ``c`` itself."""
        candidates = self._repair_values(c)
        suspects: list[str] = []
        right: list[str] = []  # equal to a value of the compiler's backward pass: never a root
        nearest = sorted(cone, key=lambda h: (cone[h], -self.position[h]))
        for h in nearest[:SCAN]:
            if self.matched(h, backward=True) is not None:
                right += [h][:SUSPECTS - len(right)]
            elif h not in known_right and not any(self.close(self.iso[h], v)
                                                  for _, v in candidates):
                # (a helper equal to a term of c's adjoint, say, is right as that term: a
                # line using it alone misses the other terms, the mistake is that line's)
                suspects += [h][:SUSPECTS - len(suspects)]
        d = self.define_of[c]
        copied = d.args[0] if d.op is None and d.args[0] in suspects else None
        for group in (suspects, right):
            for h in sorted(group, key=self.position.__getitem__):
                # a helper the line only copies (define d/L/d/b = g) may be the whole answer
                whole = [(f"the value of {c} itself", self.expected[c])] if h == copied else []
                if group is right:
                    user = next(t for t in block if h in self.operands[t])
                    if user != c and self.matched(user, backward=True) is not None:
                        continue  # the line using it is right as the compiler's too
                # a right helper used where a value of another shape belongs (spread = total,
                # a scalar, where mul p total goes): recompute says whether it fits
                found = self._try(c, h, block, candidates + whole, any_shape=group is right)
                if found is None:
                    continue
                name, value = found
                if group is suspects:
                    return h, _Root(name, value)
                should = self.student.recompute(self._downstream(h, block), {h: value})
                assert should is not None
                return user, _Root(name, should[user], misused=h, belongs=value)
        for h in sorted(suspects, key=self.position.__getitem__):
            value = self._rewrite(c, h, block)
            if value is not None:
                return h, _Root(value=value)
        return c, _Root()

    def _rewrite(self, c: str, h: str, block: list[str]) -> Array | None:
        """The value of the helper ``h``'s line written otherwise (a transpose, another
        operator, another operand: see ``hints.rewrites``) that makes ``c`` right."""
        lines = self._downstream(h, block)
        for _, value in rewrites(self.ref, self.student.written(self.define_of[h])):
            if self.budget < len(lines) + 1:
                return None
            self.budget -= len(lines) + 1
            local = self.student.recompute(lines, {h: value})
            if local is not None and self.close(local[c], self.expected[c]):
                return value
        return None

    def _try(self, c: str, h: str, block: list[str], candidates: list[tuple[str, Array]],
             any_shape: bool = False) -> tuple[str, Array] | None:
        """The first candidate value for the helper ``h`` that makes ``c`` right (of the
        helper's shape, unless ``any_shape``)."""
        lines = self._downstream(h, block)
        for name, value in candidates:
            if (value.shape != self.iso[h].shape and not any_shape) or (
                    value.shape == self.iso[h].shape and self.close(value, self.iso[h])):
                continue
            if self.budget < len(lines):
                return None
            self.budget -= len(lines)
            local = self.student.recompute(lines, {h: value})
            if local is not None and self.close(local[c], self.expected[c]):
                return name, value
        return None

    def _downstream(self, h: str, block: list[str]) -> list[Define]:
        """The lines of ``block`` that depend on ``h``, in order."""
        reached = {h}
        lines = []
        for t in block[block.index(h) + 1:] if h in block else block:
            if any(a in reached for a in self.operands[t]):
                reached.add(t)
                lines.append(self.define_of[t])
        return lines

    def _invented(self, v: str) -> bool:
        """Whether ``v`` is a name the original's preprocessor made on a define line (the
        partial sums of ``dot``, ``reduce_vector``'s steps, a macro's locals): unlike a
        vector's components, the student never wrote or saw it."""
        src = self.ref.program.decls[v].src
        return src.expansion is not None and src.text.split()[:1] == ["define"]

    def _repair_values(self, c: str) -> list[tuple[str, Array]]:
        """What a helper in the block of ``c`` may stand for: the local partials of the
        variable's uses and their pieces, the incoming adjoints, the per-use terms."""
        parts = derivative_parts(c)
        assert parts is not None
        of, v = parts
        names: list[str] = []
        prefixes = [c]
        if of == self.loss:
            consumers = list(dict.fromkeys(p for p, _ in self.ref.uses(v)))
            prefixes += [adjoint_name(p, v) for p in consumers]
            names += [adjoint_name(self.loss, p) for p in consumers]
        # a name and its temporaries name:0, name:1, ...
        names += [n for n in self.ref.values
                  if any(n == p or n.startswith(p + ":") for p in prefixes)]
        out = [(n, self.ref.values[n]) for n in dict.fromkeys(names)
               if n in self.ref.values and n != c]
        if of == self.loss and len(self.ref.uses(v)) > 1:
            out += [(f"the term of d/{self.loss}/d/{v} via {self.ref.use_text(use)}", t)
                    for use, t in self.ref.terms(v)]
        return out

    def _adjoints(self, verdicts: dict[str, LineVerdict], required: tuple[str, ...]
                  ) -> list[AdjointVerdict]:
        written = [t for t in verdicts if self.role[t] == "adjoint"]
        out = []
        # a required adjoint the pruned GCP leaves out (an input's, the loss's own) is listed
        # too: not written, it is missing, never "all right" by default
        for name in list(dict.fromkeys([*self.ref.expected_adjoints, *required, *written])):
            parts = derivative_parts(name)
            assert parts is not None
            if (name not in verdicts and name not in required
                    and name not in self.student.given and self._invented(parts[1])):
                continue  # a name the student never sees: not worth listing as not written
            if name in verdicts:
                v = verdicts[name]
                out.append(AdjointVerdict(name, parts[1], "wrong" if v.wrong else "right",
                                          v.line))
            else:
                out.append(AdjointVerdict(name, parts[1], "missing",
                                          given=name in self.student.given))
        return out
