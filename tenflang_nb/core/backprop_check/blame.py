"""Blame: which lines of a backward pass are wrong, and which are wrong on their own.

Helpers have no reference value, so this is a choice:

* A *checked* line (one defining an adjoint or a compiler-named local partial) is right when
  its chained value equals the compiler's on every draw (see ``student``). A wrong checked
  line whose isolated value is right only *inherits* the mistake of an earlier line; one
  whose isolated value is wrong holds a mistake of its own, in its line or in the helpers
  that feed it (its *block*).
* A helper is right when it feeds (through other helpers) a checked line that is right in
  isolation. In a wrong block, a helper is blamed when replacing its value by one of the
  compiler's values for that variable (a local partial, a piece of one, an incoming
  adjoint) makes the checked line right; otherwise the checked line itself is blamed.
* The blamed lines are the *root* wrong lines; ``first_wrong_line`` is the first of them.
  Lines that inherit a mistake name the root lines it comes from.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..lexical import adjoint_name, derivative_parts
from ..syntax import Define
from .hints import hint
from .reference import close
from .report import AdjointVerdict, BackpropCheck, LineVerdict
from .student import StudentLines

__all__ = ["blame"]

Array = np.ndarray


def blame(student: StudentLines, model: str, text: str, required: tuple[str, ...]
          ) -> BackpropCheck:
    """The check of the student's lines: a verdict per line (and a hint for each root wrong
    line) and per adjoint. ``model`` labels the shape program, ``text`` is the student's."""
    return _Blame(student).result(model, text, required)


class _Blame:
    """The verdicts on one student's lines (see the module)."""

    def __init__(self, student: StudentLines) -> None:
        self.student = student
        self.ref = student.ref
        self.loss = student.loss
        self.expected = student.expected
        self.chained = student.chained
        self.iso = student.iso
        self.role = student.role
        self.defines = student.defines

    def result(self, model: str, text: str, required: tuple[str, ...]) -> BackpropCheck:
        chain_ok = {c: close(self.chained[c], e) for c, e in self.expected.items()}
        iso_ok = {c: close(self.iso[c], e) for c, e in self.expected.items()}
        order = [d.target for d in self.defines]
        line_of = {d.target: d.src.line for d in self.defines}
        define_of = {d.target: d for d in self.defines}
        helpers = [t for t in order if self.role[t] == "helper"]
        users: dict[str, list[str]] = {t: [] for t in order}
        for d in self.defines:
            for a in dict.fromkeys(d.variables()):
                if a in users:
                    users[a].append(d.target)
        feeds: dict[str, set[str]] = {}  # helper -> the checked lines it reaches via helpers
        for h in reversed(helpers):
            feeds[h] = set()
            for u in users[h]:
                feeds[h] |= {u} if u in self.expected else feeds[u]
        cone: dict[str, set[str]] = {}  # line -> the helpers feeding it via helpers
        for t in order:
            cone[t] = set()
            for a in define_of[t].variables():
                if a in feeds:
                    cone[t] |= {a} | cone[a]
        known_right = {h for h in helpers if any(iso_ok[c] for c in feeds[h])}

        blamed: dict[str, tuple[str | None, Array | None]] = {}
        for c in order:
            if c not in self.expected or chain_ok[c] or iso_ok[c]:
                continue
            block = cone[c] | {c}
            if any(a in self.expected and a not in self.student.substitute
                   for t in block for a in define_of[t].variables()):
                continue  # built on a value of the wrong shape: that line is the culprit
            culprit = self._repair(c, [h for h in order if h in cone[c] and h not in known_right],
                                   [define_of[t] for t in order if t in block])
            if culprit is None:
                blamed[c] = (None, None)
            elif culprit[0] not in blamed:
                blamed[culprit[0]] = culprit[1:]

        verdicts: dict[str, LineVerdict] = {}
        for t in order:
            d = define_of[t]
            role = self.role[t]
            expected = self.expected.get(t)
            reference = None
            if t in blamed:
                status = "wrong"
                reference, value = blamed[t]
                if value is not None:
                    expected = value
            elif role != "helper":
                status = "right" if chain_ok[t] else "inherits"
            elif not close(self.chained[t], self.iso[t]):
                status = "inherits"
            elif not feeds[t]:
                status = "unused"
            elif t in known_right or self._matches_reference(self.iso[t]):
                status = "right"
            else:
                status = "unchecked"
            verdicts[t] = LineVerdict(d.src.line, t, d.src.text, role, status, expected,
                                      self.chained[t], reference=reference)
        for t in order:
            v = verdicts[t]
            if v.status == "inherits":
                v.because = self._roots_of(t, define_of, verdicts, line_of)
            elif v.status == "wrong":
                v.hint = hint(self.ref, v, self.iso[t])

        adjoints = self._adjoints(verdicts)
        sample = {n: float(v[0]) for n, v in self.ref.data.items() if v[0].shape == ()}
        return BackpropCheck(model, self.defines[0].src.file, self.loss, text,
                             [verdicts[t] for t in order], adjoints, required, self.ref.n,
                             sample)

    def _repair(self, c: str, suspects: list[str], block: list[Define]
                ) -> tuple[str, str, Array] | None:
        """The first helper of ``c``'s block that, replaced by one of the compiler's values
        for that variable, makes ``c`` right: (helper, the value's name, the value)."""
        if not suspects:
            return None
        # "this helper should be the whole answer" explains nothing: never a candidate
        candidates = [(n, v) for n, v in self._repair_values(c)
                      if not close(v, self.expected[c])]
        outside = {t: v for t, v in self.iso.items() if t not in {d.target for d in block}}
        for h in suspects:
            for name, value in candidates:
                if value.shape != self.iso[h].shape or close(value, self.iso[h]):
                    continue
                local = self.student.isolated(block, {**outside, h: value})
                if close(local[c], self.expected[c]):
                    return h, name, value
        return None

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
        out = [(n, self.ref.values[n]) for n in dict.fromkeys(names) if n in self.ref.values]
        if of == self.loss and len(self.ref.uses(v)) > 1:
            out += [(f"the term of d/{self.loss}/d/{v} via {self.ref.use_text(use)}", t)
                    for use, t in self.ref.terms(v)]
        return out

    def _matches_reference(self, value: Array) -> bool:
        return any(close(value, r) for r in self.ref.values.values())

    def _roots_of(self, t: str, define_of: Mapping[str, Define],
                  verdicts: Mapping[str, LineVerdict], line_of: Mapping[str, int]
                  ) -> tuple[int, ...]:
        seen: set[str] = set()
        stack = [a for a in define_of[t].variables() if a in define_of]
        roots: set[int] = set()
        wrong_operands = {line_of[a] for a in stack if verdicts[a].wrong}
        while stack:
            a = stack.pop()
            if a in seen:
                continue
            seen.add(a)
            if verdicts[a].status == "wrong":
                roots.add(line_of[a])
            stack.extend(b for b in define_of[a].variables() if b in define_of)
        return tuple(sorted(roots or wrong_operands))

    def _adjoints(self, verdicts: Mapping[str, LineVerdict]) -> list[AdjointVerdict]:
        written = [t for t in verdicts if self.role[t] == "adjoint"]
        out = []
        for name in list(dict.fromkeys([*self.ref.expected_adjoints, *written])):
            parts = derivative_parts(name)
            assert parts is not None
            if name in verdicts:
                v = verdicts[name]
                out.append(AdjointVerdict(name, parts[1], "wrong" if v.wrong else "right",
                                          v.line))
            else:
                out.append(AdjointVerdict(name, parts[1], "missing",
                                          given=name in self.student.given))
        return out

