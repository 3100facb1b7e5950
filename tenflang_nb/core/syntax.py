"""TenFlang's statements: numbered lines -> ``declare``/``define``/comment statements, each
with its source position.

The lexical rules (tokens, names, numbers, keywords, shapes) are in ``lexical``; the language
rules that need more than one line (declare before define, shapes, ...) are in ``program``.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import lexical, ops
from .errors import Diagnostic, TenFlangError
from .formatting import fmt_list, fmt_shape
from .lexical import KINDS, MACRO_DIRECTIVE, is_keyword, is_name, is_number
from .ops import Const, Ref, Shape


@dataclass(frozen=True, slots=True)
class Src:
    """Where a statement came from: the user's file, line number and line text."""

    file: str
    line: int
    text: str
    expansion: str | None = None  # the expanded line, when the user wrote a vector/macro line

    @property
    def tokens(self) -> tuple[str, ...]:
        return () if self.expansion is not None else tuple(lexical.split_tokens(self.text))

    @property
    def cols(self) -> tuple[int, ...]:
        # computed only when an error needs a caret: parsing a long program stays cheap
        if self.expansion is not None:
            return ()
        return tuple(col for col, _ in lexical.token_spans(self.text))

    def diag(self, message: str, token: int | None = None, severity: str = "error",
             hint: str | None = None) -> Diagnostic:
        """A diagnostic whose caret points at token number ``token`` (or the whole line)."""
        cols = self.cols
        if token is not None and token < len(cols):
            column, length = cols[token], len(self.tokens[token])
        else:
            stripped = self.text.lstrip()
            column, length = len(self.text) - len(stripped), len(stripped.rstrip())
        if self.expansion is not None:
            hint = f"in its expansion: {self.expansion}" + (f"; {hint}" if hint else "")
        return Diagnostic(message, self.file, self.line, column, length, self.text,
                          severity, hint)


GENERATED = Src("<generated>", 0, "")


@dataclass(slots=True)
class Declare:
    kind: str
    name: str
    shape: Shape | None  # None: not written (scalar for given kinds, inferred otherwise)
    src: Src = GENERATED

    def __str__(self) -> str:
        suffix = f" {fmt_shape(self.shape)}" if self.shape else ""
        return f"declare {self.kind} {self.name}{suffix}"


@dataclass(slots=True)
class Define:
    """``define target = op args...``; ``op`` None means a copy of ``args[0]``."""

    target: str
    op: str | None
    args: tuple[Ref, ...]
    src: Src = GENERATED

    def operand_token(self, i: int) -> int:
        """Index, in the source tokens, of operand ``i`` (for carets)."""
        return 3 + (self.op is not None) + i

    def variables(self) -> list[str]:
        return [a for a in self.args if isinstance(a, str)]

    def __str__(self) -> str:
        rhs = " ".join(str(a) for a in self.args)
        return f"define {self.target} = {self.op} {rhs}" if self.op else (
            f"define {self.target} = {rhs}"
        )


@dataclass(slots=True)
class Comment:
    text: str  # without the leading '#'
    src: Src = GENERATED

    def __str__(self) -> str:
        return f"# {self.text}" if self.text else "#"


Statement = Declare | Define | Comment


def _parse_shape(text: str, src: Src, token: int) -> Shape:
    try:
        return lexical.parse_shape(text)
    except ValueError as exc:
        raise TenFlangError([src.diag(str(exc), token)]) from None


def _operand(token: str, src: Src, index: int) -> Ref:
    if is_number(token):
        value = float(token)
        if value != value or value in (float("inf"), float("-inf")):
            raise TenFlangError([src.diag(f"constant '{token}' is out of range", index)])
        return Const(value, token)
    if lexical.is_nonfinite_word(token):
        raise TenFlangError(
            [src.diag(f"'{token}' is not allowed: constants must be finite numbers", index)]
        )
    if token[0].isdigit() or token[0] in "+-.":
        raise TenFlangError([src.diag(f"bad number '{token}'", index,
                                      hint="write numbers like 2, -1.5, 3e-2 or 19.20")])
    if not is_name(token):
        if is_keyword(token):
            raise TenFlangError([src.diag(f"'{token}' is a keyword, not a variable", index)])
        raise TenFlangError([src.diag(f"'{token}' is not a valid variable name", index)])
    return token


def _check_name(token: str, src: Src, index: int) -> str:
    if lexical.name_length(token) > lexical.MAX_NAME_LENGTH:
        raise TenFlangError([src.diag(
            f"a name of {lexical.name_length(token)} characters is too long (at most "
            f"{lexical.MAX_NAME_LENGTH})", index)])
    if is_name(token):
        return token
    if is_keyword(token):
        raise TenFlangError([src.diag(f"'{token}' is a keyword and cannot be a variable name",
                                      index)])
    if token and token[0].isdigit():
        raise TenFlangError([src.diag(f"'{token}': names cannot start with a digit", index)])
    raise TenFlangError(
        [src.diag(f"'{token}' is not a valid name (use letters, digits, '_' and '.')", index)]
    )


def parse_line(text: str, line: int, file: str) -> Statement | None:
    """Parse one line; None for a blank line.

    >>> parse_line("define z = mul x 2", 9, "s.tf")
    Define(target='z', op='mul', args=('x', Const(value=2.0, text='2')), src=...)
    """
    tokens = lexical.split_tokens(text)
    if not tokens:
        stripped = text.strip()
        # a line that is all comment is kept (the GCP's block headers are such lines)
        return Comment(stripped[1:].strip(), Src(file, line, text)) if stripped else None
    src = Src(file, line, text)
    head = tokens[0]
    if head == "declare":
        if len(tokens) < 3:
            missing = "a kind and a name" if len(tokens) == 1 else "a name"
            raise TenFlangError([src.diag(f"declare needs {missing}: declare <kind> <name>")])
        kind = tokens[1]
        if kind not in KINDS:
            raise TenFlangError([src.diag(
                f"unknown kind '{kind}'", 1, hint="kinds are " + ", ".join(KINDS))])
        name = _check_name(tokens[2], src, 2)
        shape = None
        if len(tokens) > 3:
            shape = _parse_shape(lexical.code_part(text)[src.cols[3]:], src, 3)
        return Declare(kind, name, shape, src)
    if head == "define":
        if len(tokens) < 4 or tokens[2] != "=":
            # 'define L=mul w w' is a '=' without spaces, not a missing one: check it first
            stuck = [i for i in (1, 2)
                     if i < len(tokens) and "=" in tokens[i] and tokens[i] != "="]
            if stuck:
                raise TenFlangError([src.diag("put spaces around '='", stuck[0])])
            if len(tokens) >= 3 and "=" not in tokens:
                raise TenFlangError([src.diag("missing '=': define <name> = <expression>", 2)])
            raise TenFlangError([src.diag("expected: define <name> = <expression>")])
        target = _check_name(tokens[1], src, 1)
        rhs = tokens[3:]
        op = ops.lookup(rhs[0])
        if op is None:
            if len(rhs) > 1:
                if is_name(rhs[0]):
                    raise TenFlangError([src.diag(f"unknown operator '{rhs[0]}'", 3,
                                                  hint=_op_hint(rhs[0]))])
                raise TenFlangError([src.diag(
                    f"expected an operator, got '{rhs[0]}'", 3, hint=_op_hint(rhs[0]))])
            return Define(target, None, (_operand(rhs[0], src, 3),), src)
        given = len(rhs) - 1
        if given != op.arity:
            what = "one operand" if op.arity == 1 else f"{op.arity} operands"
            raise TenFlangError([src.diag(
                f"'{rhs[0]}' takes {what}, got {given}", 3 if given < op.arity else 4 + op.arity
            )])
        args = tuple(_operand(t, src, 4 + i) for i, t in enumerate(rhs[1:]))
        return Define(target, rhs[0], args, src)
    if head in lexical.VECTOR_INSTRUCTIONS or head == MACRO_DIRECTIVE:
        raise TenFlangError([src.diag(f"'{head}' should have been expanded", 0)])
    raise TenFlangError([src.diag(
        f"unknown instruction '{head}'", 0,
        hint="a line starts with 'declare', 'define' or '#' (a comment)")])


def _op_hint(word: str) -> str:
    names = sorted({o.name for o in ops.OPS.values()})
    close = [n for n in names if n.startswith(word[:2].lower())]
    return "did you mean " + fmt_list(close, "or") + "?" if close else (
        "operators: " + " ".join(names)
    )


def parse_statements(lines: list[tuple[int, str]], file: str) -> list[Statement]:
    """Parse numbered lines, collecting every syntax error (not just the first)."""
    statements: list[Statement] = []
    errors: list[Diagnostic] = []
    for number, text in lines:
        try:
            statement = parse_line(text, number, file)
        except TenFlangError as exc:
            errors.extend(exc.diagnostics)
            continue
        if statement is not None:
            statements.append(statement)
    if errors:
        raise TenFlangError(errors)
    return statements
