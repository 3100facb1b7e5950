"""The original's ``#macro`` directive: a macro definition, checked, and its expansion at a use.

``#macro c = m a b; declare intvar p; define p = mul a b; define c = ln p`` defines a macro
``m`` with result ``c`` and operands ``a``, ``b``. Each use ``define z = m x y`` becomes the
body with ``c`` renamed ``z``, ``a``/``b`` replaced by ``x``/``y`` and each local ``p``
renamed ``z_p<k>``, ``k`` counting the uses of ``m`` from 0, exactly as the 2016 TenFlang did.

>>> line = TokenLine.of("a.tf", 1, "#macro c = sq a; define c = mul a a")
>>> sq = parse_macro(line, {})
>>> sq.expand(["x"], "y")
['define y = mul x x']
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .lexical import (
    MACRO_NAME_RE,
    MACRO_VARIABLE_RE,
    VECTOR_OPERATIONS,
    TokenLine,
    code_part,
    is_keyword,
    is_number,
)
from .ops import lookup

__all__ = ["USAGE", "Macro", "check_word", "parse_macro", "plural"]

USAGE = ("#macro <result> = <name> <operand> [<operand>]; <statement>; ..., e.g. "
         "#macro c = square a; define c = mul a a")
_PART_RE = re.compile(r"[^;]+")


def plural(n: int, word: str) -> str:
    """``1 operand``, ``2 operands``.

    >>> plural(2, "operand")
    '2 operands'
    """
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass
class Macro:
    """A checked macro definition."""

    name: str
    result: str
    params: tuple[str, ...]
    body: list[tuple[str, ...]]  # the body statements, tokenised
    line: int
    uses: int = 0  # the original's num_references: k in the generated names

    def arity_text(self) -> str:
        return plural(len(self.params), "operand")

    def made_names(self, target: str) -> list[str]:
        """The names the next use ``define target = name ...`` makes: its locals renamed.

        >>> m = Macro("sq", "c", ("a",), [("declare", "intvar", "p"), ("define", "p", "=",
        ...           "mul", "a", "a"), ("define", "c", "=", "add", "p", "1")], 1)
        >>> m.made_names("z")
        ['z_p0']
        """
        named = {self.result, *self.params}
        return list(dict.fromkeys(
            f"{target}_{token}{self.uses}" for statement in self.body for token in statement
            if token not in named and not is_keyword(token) and not is_number(token)))

    def expand(self, args: list[str], target: str) -> list[str]:
        """The body's lines for one use ``define target = name args...`` (counts the use)."""
        uses = self.uses
        names = {self.result: target, **dict(zip(self.params, args, strict=True))}
        lines = []
        for statement in self.body:
            words = []
            for token in statement:
                if token in names:
                    words.append(names[token])
                elif is_keyword(token) or is_number(token):
                    words.append(token)
                else:
                    words.append(f"{target}_{token}{uses}")
            lines.append(" ".join(words))
        self.uses += 1
        return lines


def parse_macro(line: TokenLine, known: Mapping[str, Macro]) -> Macro:
    """Check a ``#macro`` line (``known``: the macros defined before it) and return it.

    The body is checked in a scope of its own: only the result, the operands, its own
    ``intvar`` locals and numbers.
    """
    code = code_part(line.text)
    parts = [TokenLine.of(line.file, line.number, line.text, m.start(), m.group())
             for m in _PART_RE.finditer(code)]
    statements = [s for s in parts if s.tokens]
    head, body = statements[0], statements[1:]
    words = head.tokens
    if not 5 <= len(words) <= 6 or words[2] != "=":
        raise head.error("a macro starts with '#macro <result> = <name> <operand> "
                         "[<operand>]' followed by ';'", hint=USAGE)
    result, name, params = words[1], words[3], tuple(words[4:])
    if is_keyword(name):
        what = "an operator" if lookup(name) is not None else "a keyword"
        raise head.error(f"'{name}' cannot be a macro name: it is {what}", 3)
    if MACRO_NAME_RE.fullmatch(name) is None:
        raise head.error(
            f"'{name}' is not a valid macro name (use letters, digits and '_', starting "
            "with a letter or '_')", 3)
    if name in known:
        raise head.error(
            f"macro '{name}' is defined twice (first on line {known[name].line})", 3)
    _check_variable(head, result, 1, "the result")
    for i, param in enumerate(params, 4):
        _check_variable(head, param, i, "an operand")
        if param == result:
            raise head.error(f"operand '{param}' has the same name as the result", i)
    if len(params) == 2 and params[0] == params[1]:
        raise head.error(f"the two operands are both named '{params[0]}'", 5)
    if not body:
        raise head.error(f"macro '{name}' has no body", hint=USAGE)

    declared = {result, *params}
    defined = set(params)
    for statement in body:
        _check_statement(statement, result, params, declared, defined, known)
    if result not in defined:
        raise head.error(f"macro '{name}' never defines its result '{result}'", 1)
    return Macro(name, result, params, [s.tokens for s in body], line.number)


def check_word(line: TokenLine, token: int, pattern: re.Pattern[str], keyword: str,
               malformed: str) -> None:
    """Token ``token`` must be no keyword (else the ``keyword`` message) and match
    ``pattern`` (else ``malformed``): the preprocessor's names are stricter than a
    program's."""
    name = line.tokens[token]
    if is_keyword(name):
        raise line.error(keyword, token)
    if pattern.fullmatch(name) is None:
        raise line.error(malformed, token)


def _check_variable(line: TokenLine, name: str, token: int, role: str) -> None:
    check_word(line, token, MACRO_VARIABLE_RE,
               f"'{name}' is a keyword and cannot be {role} of a macro",
               f"'{name}' cannot be {role} of a macro: names inside a macro use only letters "
               "and '_' (generated names append a number)")


def _check_statement(s: TokenLine, result: str, params: tuple[str, ...], declared: set[str],
                     defined: set[str], known: Mapping[str, Macro]) -> None:
    words = s.tokens
    if words[0] == "declare":
        _check_local(s, result, params, declared)
        return
    if words[0] != "define":
        raise s.error(
            "a macro body holds only 'declare intvar' and 'define' statements, "
            "separated by ';'", 0)
    if len(words) < 4 or words[2] != "=":
        raise s.error("expected 'define <name> = <expression>' in the macro body")
    target = words[1]
    if target in params:
        raise s.error(f"cannot define '{target}': it is an operand of the macro", 1)
    if target not in declared:
        raise s.error(f"'{target}' is not declared in this macro", 1,
                      hint=f"declare it in the body: declare intvar {target}")
    if target in defined:
        raise s.error(f"'{target}' is defined twice in this macro", 1)
    rhs = words[3:]
    if len(rhs) == 1:
        operands = [(3, rhs[0])]
    else:
        op_name = rhs[0]
        if op_name in known:
            raise s.error(f"a macro body cannot use another macro ('{op_name}')", 3)
        if op_name in VECTOR_OPERATIONS:
            raise s.error(f"a macro body cannot use vectors ('{op_name}')", 3)
        op = lookup(op_name)
        if op is None:
            raise s.error(f"unknown operator '{op_name}'", 3)
        if len(rhs) - 1 != op.arity:
            raise s.error(
                f"'{op_name}' takes {plural(op.arity, 'operand')}, got {len(rhs) - 1}", 3)
        operands = list(enumerate(rhs[1:], 4))
    for i, token in operands:
        if is_number(token):
            continue
        if token not in declared:
            raise s.error(
                f"'{token}' is neither an operand nor a local variable of this macro", i,
                hint="a macro body can only use its operands, its own intvars and numbers")
        if token not in defined:
            raise s.error(f"'{token}' is used before it is defined in this macro", i)
    defined.add(target)


def _check_local(s: TokenLine, result: str, params: tuple[str, ...], declared: set[str]
                 ) -> None:
    words = s.tokens
    if len(words) != 3:
        raise s.error("expected 'declare intvar <name>' in the macro body")
    if words[1] != "intvar":
        raise s.error(
            f"only intvar variables can be declared in a macro body, not '{words[1]}'", 1)
    local = words[2]
    _check_variable(s, local, 2, "a local variable")
    if local in params:
        raise s.error(f"'{local}' is an operand of the macro and cannot be declared", 2)
    if local == result:
        raise s.error(f"'{local}' is the macro's result, which is already declared", 2)
    if local in declared:
        raise s.error(f"'{local}' is declared twice in this macro", 2)
    declared.add(local)
