"""The original TenFlang preprocessor: ``#macro``, vectors, ``dot`` and ``reduce_vector``.

The 2016 C++ TenFlang implemented vectors and macros as a text-to-text step that runs before
parsing. This module reproduces that step with the original's generated names, so that
programs written for the original expand exactly as they did then:

* ``declare_vector input x 3``  ->  ``declare input x.0`` ... ``declare input x.2``
* ``define_vector y = mul x w`` ->  ``define y.0 = mul x.0 w.0`` ... (or one macro expansion
  per component)
* ``define s = dot x w``        ->  temporaries ``s.0`` ... ``s.(2n-2)``, then
  ``define s = s.(2n-2)``
* ``define s = reduce_vector x add`` -> temporaries ``s.0`` ... ``s.(n-2)``
* ``#macro c = m a b; body...`` -> every use ``define z = m x y`` becomes the body with ``c``
  renamed ``z``, ``a``/``b`` replaced by ``x``/``y`` and each local ``p`` renamed ``z_p<k>``,
  ``k`` counting the uses of ``m`` from 0.

Every line of the result remembers the user's line it came from, so the parser and checker
can point at what the user wrote. Ordinary ``declare``/``define`` lines and comments pass
through unchanged; they are tracked (names, kinds, what is defined) only as far as the
original's vector and macro rules need.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from .arguments import check_arguments
from .lexical import (
    GIVEN_KINDS,
    MACRO_DIRECTIVE,
    MAX_NAME_LENGTH,
    RETIRED_VECTOR_OPS,
    VECTOR_INSTRUCTIONS,
    VECTOR_NAME_RE,
    VECTOR_OPERATIONS,
    TokenLine,
    is_int,
    is_number,
)
from .macros import Macro, check_word, parse_macro, plural
from .ops import Op, lookup, operator_names

MAX_VECTOR_SIZE = 1000  # the original's MAX_VECTOR_SIZE


def _short(name: str) -> str:
    """A long name as a message quotes it: its start and its end.

    >>> _short("x" * 1000 + ".9")
    "'xxxxxxxxxxxx...xxxx.9'"
    """
    return repr(name if len(name) <= 24 else f"{name[:12]}...{name[-6:]}")

# One regex per word, each starting with the word itself: re then scans for that literal
# prefix at C speed, where a single alternation (or a leading look-behind) is tried at every
# position and is ten times slower on a long program. A substring test skips absent words.
_TRIGGERS = tuple(
    (word, re.compile(rf"{re.escape(word)}(?<![^ \t\n]{re.escape(word)})(?![^ \t;\r\n])"))
    for word in (MACRO_DIRECTIVE, *VECTOR_INSTRUCTIONS, *VECTOR_OPERATIONS)
)


@dataclass(frozen=True)
class ExpandedLine:
    """One line of the expanded program and the 1-based line of the user's file it came from."""

    text: str
    line: int


def needs_preprocessing(text: str) -> bool:
    """Whether ``text`` uses ``#macro``, ``declare_vector``, ``define_vector``, ``dot`` or
    ``reduce_vector`` (so that :func:`preprocess` must run before parsing).

    A word in a comment also counts: expanding such a program is harmless, only slower.

    >>> needs_preprocessing("declare input x\\ndefine y = dot x x\\n")
    True
    >>> needs_preprocessing("declare input dotty\\ndefine y = mul dotty 2\\n")
    False
    """
    return any(word in text and pattern.search(text) for word, pattern in _TRIGGERS)


def preprocess(text: str, file: str = "<program>") -> list[ExpandedLine]:
    """Expand the original's vectors and macros; raise :class:`TenFlangError` on misuse.

    Blank lines are dropped and ``#macro`` lines produce nothing; every other line that is
    not a vector or macro construct passes through unchanged (trailing spaces removed).

    >>> for e in preprocess("declare_vector input x 2\\ndeclare output s\\ndefine s = dot x x"):
    ...     print(e.line, e.text)
    1 declare input x.0
    1 declare input x.1
    2 declare output s
    3 declare intvar s.0
    3 define s.0 = mul x.0 x.0
    3 declare intvar s.1
    3 define s.1 = mul x.1 x.1
    3 declare intvar s.2
    3 define s.2 = add s.0 s.1
    3 define s = s.2
    """
    return _Expander(file).run(text)


def preprocess_text(text: str, file: str = "<program>") -> str:
    """:func:`preprocess` as text: one line each, ending with a newline ("" if none is left).

    >>> preprocess_text("#macro c = sq a; define c = mul a a\\ndeclare input x\\n"
    ...             "declare output y\\ndefine y = sq x\\n")
    'declare input x\\ndeclare output y\\ndefine y = mul x x\\n'
    """
    check_arguments(text=text, file=file)
    lines = preprocess(text, file)
    return "".join(f"{e.text}\n" for e in lines)


# ----------------------------------------------------------------------------- helpers


def _elementwise_names() -> list[str]:
    names: list[str] = []
    for name in operator_names():
        op = lookup(name)
        if op is not None and op.elementwise and op.name == name:
            names.append(name)
    return names


@dataclass
class _Vector:
    kind: str
    size: int
    line: int

    def components(self, name: str) -> Iterator[str]:
        return (f"{name}.{i}" for i in range(self.size))


def _same_size(line: TokenLine, a: tuple[str, _Vector], b: tuple[str, _Vector], token: int
               ) -> None:
    if a[1].size != b[1].size:
        raise line.error(f"vectors of different dimension: {a[0]} has "
                         f"{plural(a[1].size, 'component')}, {b[0]} has {b[1].size}", token)


@dataclass
class _Expander:
    file: str
    out: list[ExpandedLine] = field(default_factory=list)
    declared: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> (kind, line)
    defined: dict[str, int] = field(default_factory=dict)  # name -> line
    vectors: dict[str, _Vector] = field(default_factory=dict)
    macros: dict[str, Macro] = field(default_factory=dict)
    first_instruction: int = 0  # line of the first non-macro instruction (0: none yet)

    # ------------------------------------------------------------------ driver

    def run(self, text: str) -> list[ExpandedLine]:
        for number, raw in enumerate(text.split("\n"), 1):
            stripped = raw.rstrip()
            line = TokenLine.of(self.file, number, stripped)
            if not line.tokens:
                if stripped.lstrip().startswith("#"):  # a comment line passes through
                    self.out.append(ExpandedLine(stripped, number))
                continue
            head = line.tokens[0]
            if head == MACRO_DIRECTIVE:
                self._macro(line)
            else:
                if not self.first_instruction:
                    self.first_instruction = number
                if head == "declare_vector":
                    self._declare_vector(line)
                elif head == "define_vector":
                    self._define_vector(line)
                elif head == "define":
                    self._define(line)
                else:
                    if head == "declare":
                        self._check_declare(line)
                    self._pass(line)
        return self.out

    def _emit(self, text: str, number: int) -> None:
        self.out.append(ExpandedLine(text, number))
        self._track(text.split(" "), number)

    def _pass(self, line: TokenLine) -> None:
        self.out.append(ExpandedLine(line.text, line.number))
        self._track(line.tokens, line.number)

    def _track(self, tokens: list[str], number: int) -> None:
        # Records what the parser will see; the parser itself validates these lines.
        if tokens[0] == "declare" and len(tokens) >= 3:
            self.declared.setdefault(tokens[2], (tokens[1], number))
            if tokens[1] in GIVEN_KINDS:
                self.defined.setdefault(tokens[2], number)
        elif tokens[0] == "define" and len(tokens) >= 2:
            self.defined.setdefault(tokens[1], number)

    # ------------------------------------------------------------------ queries

    def _vector_defined(self, name: str) -> bool:
        # As in the original, a vector counts as defined once all its components are.
        if name in self.defined:
            return True
        return all(c in self.defined for c in self.vectors[name].components(name))

    def _kind_text(self, kind: str) -> str:
        return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"

    # ------------------------------------------------------------------ declare

    def _check_declare(self, line: TokenLine) -> None:
        tokens = line.tokens
        if len(tokens) >= 3 and tokens[2] in self.vectors:
            vector = self.vectors[tokens[2]]
            raise line.error(
                f"'{tokens[2]}' is already declared as a vector (line {vector.line})", 2)

    def _declare_vector(self, line: TokenLine) -> None:
        tokens = line.tokens
        if len(tokens) != 4:
            raise line.error(
                f"declare_vector takes a kind, a name and a size, got {len(tokens) - 1} "
                "words after it",
                hint="declare_vector <kind> <name> <size>, e.g. declare_vector input x 3")
        _, kind, name, size_text = tokens
        self._check_vector_name(line, name, 2)
        if name in self.vectors:
            raise line.error(
                f"vector '{name}' is declared twice (first on line {self.vectors[name].line})",
                2)
        if name in self.declared:
            raise line.error(
                f"'{name}' is already declared (line {self.declared[name][1]})", 2)
        size = int(size_text) if is_int(size_text) else None
        if size is None or not 1 <= size <= MAX_VECTOR_SIZE:
            raise line.error(
                f"invalid vector size '{size_text}': a vector has 1 to {MAX_VECTOR_SIZE} "
                "components", 3)
        self._room(line, 2, f"{name}.{size - 1}", f"a vector of {size} components")
        vector = _Vector(kind, size, line.number)
        self.vectors[name] = vector
        if kind in GIVEN_KINDS:
            self.defined[name] = line.number
        for component in vector.components(name):
            self._emit(f"declare {kind} {component}", line.number)

    def _check_vector_name(self, line: TokenLine, name: str, token: int) -> None:
        check_word(line, token, VECTOR_NAME_RE,
                   f"'{name}' is a keyword and cannot be a vector's name",
                   f"'{name}' is not a valid vector name (use letters, digits and '_', "
                   "starting with a letter or '_')")

    # ------------------------------------------------------------------ define_vector

    def _define_vector(self, line: TokenLine) -> None:
        tokens = line.tokens
        usage = "define_vector <vector> = <operator or macro> <vector> [<operand>]"
        if len(tokens) >= 3 and tokens[2] != "=":
            raise line.error("missing '=' after the vector's name", 2, hint=usage)
        if not 5 <= len(tokens) <= 6:
            raise line.error(
                f"define_vector takes an operator or macro and 1 or 2 operands, got "
                f"{plural(max(len(tokens) - 4, 0), 'operand')}", hint=usage)
        target, op_name, first = tokens[1], tokens[3], tokens[4]
        second = tokens[5] if len(tokens) == 6 else None

        result = self._vector_target(line, target)
        self._check_definable(line, target, result.kind, "vector")
        for component in result.components(target):
            if component in self.defined:
                raise line.error(
                    f"'{component}', a component of '{target}', is already defined "
                    f"(line {self.defined[component]})", 1)

        macro, op = self._vector_op(line, op_name)
        arity = len(macro.params) if macro else op.arity if op else 0
        if len(tokens) - 4 != arity:
            raise line.error(self._arity_message(op_name, macro, arity, len(tokens) - 4), 3)

        vec1 = self._vector_operand(line, first, 4, "define_vector")
        _same_size(line, (target, result), (first, vec1), 4)
        second_is_vector = False
        if second is not None:
            if second in self.vectors:
                vec2 = self._vector_operand(line, second, 5, "define_vector")
                _same_size(line, (first, vec1), (second, vec2), 5)
                second_is_vector = True
            elif not is_number(second):
                self._scalar_operand(line, second, 5)

        for i in range(result.size):
            args = [f"{first}.{i}"]
            if second is not None:
                args.append(f"{second}.{i}" if second_is_vector else second)
            component = f"{target}.{i}"
            if macro is not None:
                self._expand_macro(macro, args, component, line)
            else:
                self._emit(f"define {component} = {op_name} {' '.join(args)}", line.number)
        self.defined[target] = line.number

    def _vector_target(self, line: TokenLine, name: str) -> _Vector:
        if name in self.vectors:
            return self.vectors[name]
        if name in self.declared:
            raise line.error(
                f"'{name}' is declared as a single variable (line {self.declared[name][1]}), "
                "not as a vector", 1,
                hint=f"declare it with declare_vector <kind> {name} <size>")
        raise line.error(
            f"vector '{name}' is not declared", 1,
            hint=f"declare it first: declare_vector <kind> {name} <size>")

    def _vector_op(self, line: TokenLine, name: str) -> tuple[Macro | None, Op | None]:
        if name in self.macros:
            return self.macros[name], None
        op = lookup(name)
        if op is None:
            hint = "elementwise operators: " + " ".join(_elementwise_names())
            if self.macros:
                hint += "; macros: " + " ".join(self.macros)
            raise line.error(f"unknown operator or macro '{name}'", 3, hint=hint)
        if not op.elementwise:
            raise line.error(
                f"'{name}' is not an elementwise operator, so define_vector cannot apply it "
                "component by component", 3)
        return None, op

    @staticmethod
    def _arity_message(name: str, macro: Macro | None, arity: int, given: int) -> str:
        what = f"macro '{name}'" if macro is not None else f"'{name}'"
        return f"{what} takes {plural(arity, 'operand')}, got {given}"

    def _vector_operand(self, line: TokenLine, name: str, token: int, what: str) -> _Vector:
        if name not in self.vectors:
            if name in self.declared:
                raise line.error(
                    f"'{name}' is not a vector: {what} needs a vector declared with "
                    f"declare_vector (line {self.declared[name][1]} declares a single "
                    "variable)", token)
            raise line.error(
                f"'{name}' is not a vector: {what} needs a vector declared with "
                "declare_vector", token)
        if not self._vector_defined(name):
            raise line.error(f"vector '{name}' is used before it is defined", token)
        return self.vectors[name]

    def _scalar_operand(self, line: TokenLine, name: str, token: int) -> None:
        if name in self.vectors:
            raise line.error(
                f"'{name}' is a vector, but a single value is needed here", token,
                hint="use define_vector to apply an operation to every component")
        if name not in self.declared:
            raise line.error(f"'{name}' is neither a number nor a declared variable", token)
        if name not in self.defined:
            raise line.error(f"'{name}' is used before it is defined", token)

    # ------------------------------------------------------------------ define

    def _define(self, line: TokenLine) -> None:
        tokens = line.tokens
        if len(tokens) >= 3 and tokens[2] != "=" and self._is_expanded_op(tokens[2]):
            raise line.error("missing '=' after the name being defined", 2,
                             hint=f"define <name> = {tokens[2]} ...")
        if len(tokens) < 4 or tokens[2] != "=":
            self._pass(line)
            return
        op = tokens[3]
        if op == "dot" and not self._native(op, tokens):
            self._dot(line)
        elif op == "reduce_vector" and not self._native(op, tokens):
            self._reduce_vector(line)
        elif op in self.macros and (len(tokens) > 4 or op not in self.declared):
            # ``define y = m`` copies a variable when one is named like the macro
            self._macro_call(line)
        elif op in RETIRED_VECTOR_OPS:
            raise line.error(
                f"'{op}' is reserved but not an operation: write "
                f"'{RETIRED_VECTOR_OPS[op]}' instead", 3)
        else:
            self._check_plain_define(line)
            self._pass(line)

    def _is_expanded_op(self, word: str) -> bool:
        return word in ("dot", "reduce_vector") or word in self.macros

    def _native(self, op: str, tokens: list[str]) -> bool:
        # Should the operator table ever gain its own ``dot``/``reduce_vector`` for tensors,
        # lines whose operand is not a declare_vector vector are left to it.
        return lookup(op) is not None and (len(tokens) < 5 or tokens[4] not in self.vectors)

    def _check_plain_define(self, line: TokenLine) -> None:
        # Vectors exist only as components after expansion, so a whole-vector name in a plain
        # define would reach the parser as an undeclared name: say what is really wrong.
        tokens = line.tokens
        if tokens[1] in self.vectors:
            raise line.error(
                f"'{tokens[1]}' is a vector: define it with define_vector (or define its "
                f"components {tokens[1]}.0, {tokens[1]}.1, ... one by one)", 1)
        operands = range(4, len(tokens)) if len(tokens) > 4 else range(3, 4)
        for i in operands:
            if tokens[i] in self.vectors:
                needs = f"'{tokens[3]}' needs" if i > 3 else "define needs"
                raise line.error(
                    f"'{tokens[i]}' is a vector, but {needs} single values", i,
                    hint="use define_vector, dot or reduce_vector, or a component such as "
                    f"{tokens[i]}.0")

    def _scalar_target(self, line: TokenLine, what: str) -> str:
        target = line.tokens[1]
        if target in self.vectors:
            raise line.error(
                f"'{target}' is a vector, but {what} gives a single value", 1,
                hint="use define_vector to define a vector")
        if target not in self.declared:
            raise line.error(f"'{target}' is defined but never declared", 1,
                             hint=f"declare it first, e.g. declare intvar {target}")
        self._check_definable(line, target, self.declared[target][0])
        return target

    def _check_definable(self, line: TokenLine, target: str, kind: str, what: str = ""
                         ) -> None:
        """A define line's target must not be given by the data, nor defined already."""
        if kind in GIVEN_KINDS:
            given = f"{self._kind_text(kind)} {what}" if what else self._kind_text(kind)
            values = "values are" if what else "value is"
            raise line.error(f"cannot define '{target}': it is {given}, whose {values} "
                             "given when the program runs", 1)
        if target in self.defined:
            named = f"{what} '{target}'" if what else f"'{target}'"
            raise line.error(f"{named} is already defined (line {self.defined[target]})", 1)

    def _dot(self, line: TokenLine) -> None:
        tokens = line.tokens
        target = self._scalar_target(line, "dot")
        if len(tokens) != 6:
            raise line.error(
                f"dot takes 2 vectors, got {len(tokens) - 4}", 3,
                hint="define <name> = dot <vector> <vector>")
        u, v = tokens[4], tokens[5]
        vu = self._vector_operand(line, u, 4, "dot")
        vv = self._vector_operand(line, v, 5, "dot")
        _same_size(line, (u, vu), (v, vv), 5)
        n, number = vu.size, line.number
        self._room(line, 1, f"{target}.{2 * n - 2}", "the result of dot")
        for i in range(n):
            self._emit(f"declare intvar {target}.{i}", number)
            self._emit(f"define {target}.{i} = mul {u}.{i} {v}.{i}", number)
        # partial sums: t.n = t.0 + t.1, then t.(n+j) = t.(n+j-1) + t.(j+1)
        for j in range(n - 1):
            previous = f"{target}.0" if j == 0 else f"{target}.{n + j - 1}"
            self._emit(f"declare intvar {target}.{n + j}", number)
            self._emit(f"define {target}.{n + j} = add {previous} {target}.{j + 1}", number)
        self._emit(f"define {target} = {target}.{2 * n - 2}", number)

    def _reduce_vector(self, line: TokenLine) -> None:
        tokens = line.tokens
        target = self._scalar_target(line, "reduce_vector")
        if len(tokens) != 6:
            raise line.error(
                "reduce_vector takes a vector and a binary operator or macro, got "
                f"{plural(len(tokens) - 4, 'word')}", 3,
                hint="define <name> = reduce_vector <vector> <operator>, e.g. "
                "define s = reduce_vector v add")
        name, func = tokens[4], tokens[5]
        vector = self._vector_operand(line, name, 4, "reduce_vector")
        macro = self.macros.get(func)
        op = lookup(func)
        if macro is not None:
            if len(macro.params) != 2:
                raise line.error(
                    f"macro '{func}' takes {macro.arity_text()}; reduce_vector needs a binary "
                    "operator or macro", 5)
        elif op is None or op.arity != 2 or not op.elementwise:
            raise line.error(
                f"reduce_vector needs a binary operator (such as add or mul) or a binary "
                f"macro, got '{func}'", 5)
        number = line.number
        if vector.size == 1:
            self._emit(f"define {target} = {name}.0", number)
            return
        accumulated = f"{name}.0"
        self._room(line, 1, f"{target}.{vector.size - 2}", "the result of reduce_vector")
        for i in range(1, vector.size):
            step = f"{target}.{i - 1}"
            self._emit(f"declare intvar {step}", number)
            if macro is not None:
                self._expand_macro(macro, [accumulated, f"{name}.{i}"], step, line)
            else:
                self._emit(f"define {step} = {func} {accumulated} {name}.{i}", number)
            accumulated = step
        self._emit(f"define {target} = {accumulated}", number)

    def _macro_call(self, line: TokenLine) -> None:
        tokens = line.tokens
        macro = self.macros[tokens[3]]
        target = self._scalar_target(line, f"macro '{macro.name}'")
        args = tokens[4:]
        if len(args) != len(macro.params):
            raise line.error(
                self._arity_message(macro.name, macro, len(macro.params), len(args)), 3)
        for i, arg in enumerate(args, 4):
            if not is_number(arg):
                self._scalar_operand(line, arg, i)
        self._expand_macro(macro, list(args), target, line)

    def _expand_macro(self, macro: Macro, args: list[str], target: str, line: TokenLine
                      ) -> None:
        for made in macro.made_names(target):
            self._room(line, 1, made, f"the result of macro '{macro.name}'")
        for text in macro.expand(args, target):
            self._emit(text, line.number)

    @staticmethod
    def _room(line: TokenLine, token: int, made: str, what: str) -> None:
        """The original's names made from the user's name (token ``token``: a vector's
        components, dot's partial sums, a macro's locals) are names too: the longest,
        ``made``, must keep within MAX_NAME_LENGTH, or the user's name is too long to be
        ``what``."""
        if len(made) <= MAX_NAME_LENGTH:
            return
        name = line.tokens[token]
        room = MAX_NAME_LENGTH - (len(made) - len(name))
        raise line.error(
            f"a name of {len(name)} characters is too long to be {what}: this line makes "
            f"the name {_short(made)} from it, of {len(made)} characters (at most "
            f"{MAX_NAME_LENGTH})", token, hint=f"a name of at most {room} characters")

    # ------------------------------------------------------------------ #macro

    def _macro(self, line: TokenLine) -> None:
        if self.first_instruction:
            raise line.error(
                "macros must all be defined at the top of the program, before any other "
                f"instruction (this one comes after line {self.first_instruction})", 0)
        macro = parse_macro(line, self.macros)
        self.macros[macro.name] = macro
