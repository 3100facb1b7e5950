"""The adversarial round of the checker's hints (issue 17): every right answer of the
exercises and of the models at the digits network's shapes, mutated line by line the ways
students get a backward pass wrong (a transpose dropped or added, the operands swapped, `mul`
for `div` and the other products, a sum dropped, tanh's slope without its square, a factor
dropped, one variable for another). An oracle that knows nothing of the checker (the
mutated lines run after the forward pass, every adjoint they define compared with the
compiler's on fresh draws) says which mutations are still right: the checker must pass
those, and pin every other on the line mutated with a hint that names the mistake, in
grading mode too without spelling out a line of the compiler's."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from hint_support import (
    BATCH,
    BATCH_RIGHT,
    DIGITS,
    DIGITS_RIGHT,
    SQUARE,
    SQUARE_RIGHT,
    drawn_right_answer,
    drawn_variants,
    exercise,
    spelled_out,
)

from tenflang_nb.core.api import check_backprop, parse
from tenflang_nb.core.backprop_check import BackpropCheck
from tenflang_nb.core.backprop_check.reference import Reference
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.grading import student_key
from tenflang_nb.core.lexical import GIVEN_KINDS, derivative_parts
from tenflang_nb.core.plan import Plan
from tenflang_nb.core.program import Program, check
from tenflang_nb.core.syntax import Comment, Declare, Define, parse_statements

pytestmark = pytest.mark.slow

OTHER_OPS = {"mul": ["div", "matmul", "outer"], "div": ["mul"], "matmul": ["mul", "outer"],
             "outer": ["mul", "matmul"], "sub": ["add"], "add": ["sub"]}
# what a hint about each kind of mutation says (one of these words at least)
NAMED = {
    "transpose": ["transpose"],
    "sum": ["sum"],
    "swap": ["swapped", "transpose", "negative"],
    "op": ["`mul`", "`div`", "`matmul`", "`outer`", "`add`", "`sub`", "negative", "none of ",
           "wrong sign"],
    "slope": ["square"],
    "drop": ["alone", "missing", "itself", "is used where", "value of", "incoming adjoint",
             "local partial", "half", "twice", "misses the term", "constant factor"],
}


def models() -> Iterator[tuple[str, Program, str]]:
    yield "digits", DIGITS, DIGITS_RIGHT
    yield "batch", BATCH, BATCH_RIGHT
    yield "square", SQUARE, SQUARE_RIGHT
    for name in ("seed", "quad", "fan", "ratio", "chain", "classifier"):
        yield name, *exercise(name)


def mutations(program: Program, text: str) -> Iterator[tuple[str, str, str, int]]:
    """(kind, what, the mutated text, the line mutated) for each mutation of ``text``."""
    lines = [line.split("#")[0].rstrip() for line in text.splitlines() if line.strip()]
    shapes = program.shapes
    for k, line in enumerate(lines):
        target, rhs = re.fullmatch(r"define (\S+) = (.*)", line).groups()  # type: ignore[union-attr]
        words = rhs.split()
        op, args = (words[0], words[1:]) if len(words) > 1 else (None, words)

        def put(new: str, kind: str, what: str, before: tuple[str, ...] = (), k: int = k
                ) -> tuple[str, str, str, int]:
            text = "\n".join([*lines[:k], *before, new, *lines[k + 1:]]) + "\n"
            return kind, what, text, k + 1 + len(before)

        head = f"define {target} = " + (f"{op} " if op else "")
        if op == "transpose":
            yield put(f"define {target} = {args[0]}", "transpose", f"{args[0]} not transposed")
        if op == "sumto":
            yield put(f"define {target} = {args[0]}", "sum", "no sumto")
        if op is not None and len(args) == 2:
            yield put(f"{head}{args[1]} {args[0]}", "swap", "operands swapped")
        for other in OTHER_OPS.get(op or "", []):
            yield put(f"define {target} = {other} {' '.join(args)}", "op", f"{op} -> {other}")
        if op == "sub" and args[0] == "1" and args[1] in ("hh", "HH", "h_squared", "c_squared"):
            yield put(f"define {target} = sub 1 {args[1][0]}", "slope", "1 - c for 1 - c²")
        if op in ("mul", "div", "matmul", "outer"):
            for a in dict.fromkeys(args):
                if a in shapes or not re.fullmatch(r"[-0-9.]+", a):
                    yield put(f"define {target} = {a}", "drop", f"{a} alone")
        for i, a in enumerate(args):
            if a in shapes and len(shapes[a]) == 2:
                transposed = [*args[:i], f"{a}_T", *args[i + 1:]]
                yield put(head + " ".join(transposed), "transpose", f"{a} transposed",
                          (f"define {a}_T = transpose {a}",))
            for b in program.decls:
                if (a in shapes and b != a and b not in args and shapes[b] == shapes[a]
                        and program.kind(b) != "loss"):
                    yield put(head + " ".join([*args[:i], b, *args[i + 1:]]), "name",
                              f"{a} -> {b}")


def right_by_oracle(program: Program, text: str, require: list[str] | None) -> bool:
    """Whether the lines ``text`` are right, without the checker: run after the forward pass
    on fresh draws, each adjoint and compiler-named local partial they define equal to the
    compiler's value, and the adjoints ``require`` lists defined."""
    ref = Reference(program, 4, 777)
    loss = program.loss
    statements = [Declare("input" if s.kind in GIVEN_KINDS else "intvar", s.name,
                          program.shapes[s.name] or None) if isinstance(s, Declare) else s
                  for s in program.statements if not isinstance(s, Comment)]
    mine = [s for s in parse_statements(list(enumerate(text.splitlines(), 1)), "mine")
            if isinstance(s, Define)]
    defined = [s.target for s in mine]
    given = {a for s in mine for a in s.variables() if (p := derivative_parts(a)) is not None
             and p[0] == loss and a not in defined}
    statements += [Declare("input", a, program.shapes[a.rsplit("/", 1)[1]] or None)
                   for a in given]
    statements += [Declare("intvar", t, None) for t in defined] + mine
    try:
        assembled = check(statements, "mine")
    except TenFlangError:
        return False
    run = Plan(assembled).run({**ref.data, **{a: ref.adjoint(a.rsplit("/", 1)[1])
                                              for a in given}}, ref.n)
    if any(f"d/{loss}/d/{v}" not in defined for v in require or []):
        return False
    for t in defined:
        parts = derivative_parts(t)
        want = (None if parts is None else ref.adjoint(parts[1]) if parts[0] == loss
                else ref.values.get(t))
        if want is None:
            continue
        if assembled.shapes[t] != want.shape[1:]:
            return False
        got = np.broadcast_to(run.value(t), want.shape)
        if not np.allclose(got, want, rtol=1e-6, atol=1e-9 * max(1.0, np.abs(want).max())):
            return False
    return True


def explained(result: BackpropCheck, kind: str, what: str, line: int) -> str | None:
    """Why the check ``result`` of a wrong mutation (of ``line``) falls short; None if not."""
    if result.ok:
        return "marked right"
    first = result.first_wrong_line
    diagnostics = {d.line: d.hint for d in result.error.diagnostics} if result.error else {}
    texts = {v.line: v.hint for v in result.lines} | diagnostics
    hint = texts.get(first) if first is not None else None
    # (a helper's mistake that a later line shows: its hint names the helper's line; a
    # transpose added is a helper line of its own, before the line mutated)
    helper_lines = (line, line - 1) if kind == "transpose" else (line,)
    if first not in helper_lines and not (first is not None and first > line and hint and any(
            f"(line {n})" in hint for n in helper_lines)):
        return f"first wrong line {first}, not {line}"
    if not hint:
        return "no hint"
    if kind == "name":
        old, new = what.split(" -> ")
        named = (f"{new} is used where" in hint or f"used {new} where" in hint
                 or f"{new} itself" in hint or f"value of {old}" in hint
                 or f"value of {new}" in hint or f"{new} (line" in hint
                 or "the exponent is not lowered" in hint  # sq = pow diff 2's result for diff
                 # e^a (1 - logistic a) is logistic a: in 05's fan, c = exp a for b in b's
                 # slope computes b itself, and the hint says so
                 or f"your value is {old} itself" in hint)
    else:
        named = any(word in hint.replace("'", "`") for word in NAMED[kind])
    # the mutated line computes a value of the compiler's (in 05's classifier `total` is -1 on
    # every draw, y summing to 1: `spread = p` is the compiler's exp logp, `spread = total` its
    # sum): never the root (issue 16), the line using it is, its hint naming the mutated line
    # and what belongs there instead
    misused = f"(line {line}) is right as" in hint and " belongs " in hint
    return None if named or misused else f"the hint names another mistake: {hint}"


def mutation_round(cases: Iterator[tuple[str, Program, str]],
                   explain: Callable[[BackpropCheck, str, str, int], str | None] | None = None
                   ) -> tuple[Counter[str], list[str]]:
    """Every mutation of each right answer of ``cases`` checked in both modes: the count of
    each kind and the failures (a right one marked wrong, a wrong one not ``explain``ed)."""
    explain = explain or explained
    counts: Counter[str] = Counter()
    failures = []
    for name, program, right in cases:
        require = ["zb", "b", "z", "W"] if name == "classifier" else None
        assert check_backprop(program, right, require=require).ok, name
        for kind, what, text, line in mutations(program, right):
            truth = right_by_oracle(program, text, require)
            for formulas in (True, False):
                result = check_backprop(program, text, require=require, formulas=formulas)
                if truth:
                    counts["still right"] += 1
                    why = None if result.ok else "a right answer marked wrong"
                else:
                    counts[kind] += 1
                    why = explain(result, kind, what, line)
                    if why is None and not formulas and spelled_out(program, result):
                        why = f"spells out {spelled_out(program, result)}"
                if why is not None:
                    failures.append(f"{name}, {what} (line {line}, formulas={formulas}): {why}")
    return counts, failures


def test_every_mutation_of_a_right_answer_gets_a_hint_that_names_it() -> None:
    counts, failures = mutation_round(models())
    assert not failures, "\n".join(failures)
    # the round holds a few hundred mutations of each mode, of every kind
    assert sum(counts.values()) >= 1000, counts
    assert all(counts[kind] >= 6 for kind in (*NAMED, "name")), counts
    assert counts["still right"] >= 50, counts


# what decides the lines of an answer to each model drawn per student (the rest are shapes
# and constants, which change numbers, not lines)
STRUCTURE = {"gates": ("join",), "relu": ("error",), "batch": ("error",),
             "bias": ("bias", "error"), "mlp": ("act",), "seed": ("act", "error"),
             "quad": ("error",), "fan": ("lin", "first", "second"), "ratio": ("join", "error"),
             "chain": ("inner", "outer", "error"), "classifier": ("join",),
             "net": ("error",)}


def drawn_models() -> Iterator[tuple[str, Program, str]]:
    """One draw of each structure of notebook 05's models drawn per student (over 200
    students of a course), with a right answer as a student writes it."""
    seen: dict[tuple[str, tuple[str, ...]], tuple[str, dict[str, object]]] = {}
    for k in range(200):
        student = f"student{k:03d}"
        for name, (text, picks) in drawn_variants(student, student_key("course", student)).items():
            seen.setdefault((name, tuple(str(picks[p]) for p in STRUCTURE[name])), (text, picks))
    # every structure is drawn
    assert len(seen) == 2 + 2 + 2 + 4 + 3 + 4 + 2 + 12 + 4 + 8 + 2 + 2, sorted(seen)
    for (name, _), (text, picks) in sorted(seen.items()):
        yield name, parse(text), drawn_right_answer(name, picks)


def helper_explained(result: BackpropCheck, kind: str, what: str, line: int) -> str | None:
    """:func:`explained`, with a student's helper line, which the compiler has no value for:
    its mistake shows on the first line that uses it (``off = sub on 1``: ``d/L/d/d = mul
    d/L/d/m off`` is wrong, "check the signs"), and an adjoint set to a helper alone reads
    as the helper meant to be the adjoint ("off should be the value of d/L/d/d itself")."""
    why = explained(result, kind, what, line)
    if why is None or not why.startswith("first wrong line"):
        return why
    first = result.first_wrong_line
    verdicts = {v.line: v for v in result.lines}
    hint = verdicts[first].hint if first in verdicts else None
    mutated = verdicts.get(line)
    if mutated is not None and mutated.role == "helper" and hint and first == next(
            (v.line for v in result.lines if v.line > line and mutated.name in v.source.split()),
            None):
        named = any(word in hint.replace("'", "`") for word in NAMED.get(kind, []))
        return None if named else f"the hint names another mistake: {hint}"
    if kind == "drop" and first in verdicts and verdicts[first].role == "helper" and hint \
            and f"{verdicts[first].name} should be" in hint:
        return None
    return why


def test_every_mutation_of_each_drawn_models_answer_gets_a_hint_that_names_it() -> None:
    counts, failures = mutation_round(drawn_models(), helper_explained)
    assert not failures, "\n".join(failures)
    assert sum(counts.values()) >= 800 and counts["still right"] >= 50, counts
