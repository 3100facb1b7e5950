"""TenFlang's lexical rules, each defined once: text, lines, tokens, words, names, numbers, shapes.

Everything that reads TenFlang-like text imports its rules from here: the parser
(``syntax``), the original's preprocessor (``preprocess``), the data-file readers
(``datafiles``), the Pygments lexer and the notebook views. The grammar above the token level
(what a ``declare`` or ``define`` line holds) is in ``syntax``.

The one rule for reserved words: a *keyword* is an instruction, a kind, an operator (from the
operator table, aliases included) or one of the :data:`RESERVED_WORDS`; a keyword is never a
name, in a program, a macro or a vector declaration alike.

>>> split_tokens("define  z =\\tmul x w  # the product")
['define', 'z', '=', 'mul', 'x', 'w']
>>> [is_name(t) for t in ("w.0", "d/L/d/w:2", "2x", "mul", "a-b", "scale_vector")]
[True, True, False, False, False, False]
>>> [is_name(t) for t in ("v/W1", "dv/d/L/d/w:0:1", "dv/z", "v/d/L/d/w", "dv/v/w")]
[True, True, True, False, False]
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass

from . import ops
from .errors import TenFlangError
from .formatting import NULL, fmt_shape  # NULL: the word for a value never given
from .ops import Shape

__all__ = [
    "DERIVATIVE_PATTERN",
    "GIVEN_KINDS",
    "INSTRUCTIONS",
    "KINDS",
    "MACRO_DIRECTIVE",
    "MAX_LINE_LENGTH",
    "MAX_NAME_LENGTH",
    "MAX_SHAPE_RANK",
    "NAME_PATTERN",
    "NUMBER_PATTERN",
    "PLAIN_NAME_PATTERN",
    "RESERVED_WORDS",
    "RETIRED_VECTOR_OPS",
    "VECTOR_OPERATIONS",
    "WORD_END",
    "WORD_START",
    "TokenLine",
    "adjoint_name",
    "code_part",
    "derivative_parts",
    "derived_names",
    "derived_stem",
    "direction_name",
    "is_keyword",
    "is_name",
    "is_number",
    "normalize_text",
    "parse_shape",
    "split_derivative",
    "split_lines",
    "split_tokens",
    "tangent_name",
    "temp_name",
    "token_spans",
]

# ------------------------------------------------------------------------------ words

KINDS = ("input", "exp_output", "weight", "intvar", "output", "loss")
# given a value from the data (or the weights), never defined by a line
GIVEN_KINDS = frozenset({"input", "exp_output", "weight"})
# the original's vector instructions, expanded by the preprocessor before parsing
VECTOR_INSTRUCTIONS = ("declare_vector", "define_vector")
INSTRUCTIONS = ("declare", "define", *VECTOR_INSTRUCTIONS)
MACRO_DIRECTIVE = "#macro"
# the original's vector operations, expanded by the preprocessor before parsing
VECTOR_OPERATIONS = ("dot", "reduce_vector")
# keywords of the original that only its unit tests could reach: reserved, never operations
RETIRED_VECTOR_OPS = {
    "scale_vector": "define_vector r = mul u s",
    "increment_vector": "define_vector r = add u s",
    "component_wise_add": "define_vector r = add u v",
    "component_wise_mul": "define_vector r = mul u v",
}
NONFINITE_WORDS = frozenset({"inf", "infinity", "nan"})  # what float() would take: never data
RESERVED_WORDS = frozenset({
    *INSTRUCTIONS, *VECTOR_OPERATIONS, *RETIRED_VECTOR_OPS,
    "constant",  # the original's hidden kind
    *NONFINITE_WORDS, NULL,  # words data files and number readers take as values
    "=",
})


def is_keyword(token: str) -> bool:
    """An instruction, kind, operator or reserved word: never usable as a name.

    >>> is_keyword("log"), is_keyword("weight"), is_keyword("null"), is_keyword("w")
    (True, True, True, False)
    """
    return token in RESERVED_WORDS or token in KINDS or ops.lookup(token) is not None


# ------------------------------------------------------------------------------ names

# The patterns are regular expressions that Python and JavaScript read alike, written without
# a backslash ('[.]', not an escaped dot): the JupyterLab extension's highlighter takes them as
# they are, inside a JavaScript string (see editor_words.py).
PLAIN_NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_.]*"
_TEMPORARY = r"(?::[0-9]+)?"  # the :<k> of a temporary made on the way to a name
_ADJOINT_PATTERN = rf"d/{PLAIN_NAME_PATTERN}/d/{PLAIN_NAME_PATTERN}{_TEMPORARY}"
# The names the compilers generate (a user's program cannot declare them, so they never
# clash with a user's): a derivative d/<a>/d/<b>; and the Hessian-vector program's
# direction v/<w> (the direction's part for the weight w) and tangents dv/<name> (the
# derivative along the direction of a GCP value, a derivative itself or not), each with
# the :<k> of a temporary made on its way
DERIVATIVE_PATTERN = (rf"(?:dv/(?:{_ADJOINT_PATTERN}|{PLAIN_NAME_PATTERN}){_TEMPORARY}"
                      rf"|v/{PLAIN_NAME_PATTERN}|{_ADJOINT_PATTERN})")
NAME_PATTERN = rf"(?:{DERIVATIVE_PATTERN}|{PLAIN_NAME_PATTERN})"
# In running text, a word ends (and starts) where a name could not go on: names may hold
# '.' (w.0), derivatives '/' and ':' (d/L/d/v:0).
WORD_END = r"(?![A-Za-z0-9_./:])"
WORD_START = r"(?<![A-Za-z0-9_./:])"
_NAME_RE = re.compile(NAME_PATTERN)
# The original's preprocessor is stricter: a vector's name has no '.' (``a.b.0`` could not be
# told from a component of ``a``), and names inside a macro have no digits (a renamed local
# is the local's name followed by the use count, so ``p1`` at use 0 and ``p`` at use 10
# would both become ``z_p10``).
VECTOR_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MACRO_NAME_RE = VECTOR_NAME_RE
MACRO_VARIABLE_RE = re.compile(r"[A-Za-z_]+")


# Longer names are surely a mistake; the bound keeps every line the compiler writes (a line
# names at most a few derivatives d/<a>/d/<b>) under MAX_LINE_LENGTH, so it reads back.
MAX_NAME_LENGTH = 1000


def name_length(token: str) -> int:
    """The length that counts against :data:`MAX_NAME_LENGTH`: of a plain name, or of the
    longest name inside a derivative ``d/<a>/d/<b>:<k>``.

    >>> name_length("d/L/d/weight:3"), name_length("w.0")
    (6, 3)
    """
    return max(len(part) for part in re.split(r"[/:]", token))


def derived_names(base: str, suffixes: Sequence[str], taken: Container[str]) -> list[str]:
    """A name the package makes from a user's name: ``base + suffix`` for each suffix, none of
    them in ``taken`` and none longer than :data:`MAX_NAME_LENGTH` (``base`` is cut short to
    make room, then followed by ``_`` until every name is free: :func:`derived_stem`). A name
    the user could write never makes one that breaks the limit.

    >>> derived_names("w", [".stop"], {"w.stop"}), derived_names("W", [".0", ".1"], ())
    (['w_.stop'], ['W.0', 'W.1'])
    >>> [len(n) for n in derived_names("w" * MAX_NAME_LENGTH, [".0", ".10"], ())]
    [999, 1000]
    """
    stem = derived_stem(base, max(map(len, suffixes)),
                        lambda s: not any(s + suffix in taken for suffix in suffixes))
    return [stem + suffix for suffix in suffixes]


def derived_stem(base: str, longest_suffix: int, free: Callable[[str], bool]) -> str:
    """The stem of the names the package makes from ``base``: ``base`` cut short so that a
    suffix of ``longest_suffix`` characters keeps within :data:`MAX_NAME_LENGTH`, then
    followed by ``_`` until ``free(stem)`` (a family of names too large to list, such as the
    labels of a big weight's components, is tested as a whole).

    >>> derived_stem("W", 2, lambda stem: stem != "W")
    'W_'
    """
    room = MAX_NAME_LENGTH - longest_suffix
    k = 0
    while True:
        stem = base[:max(1, room - k)] + "_" * k
        if free(stem):
            return stem
        k += 1


def matches_name(token: str) -> bool:
    """The shape of a name, keywords not excluded (data files may name anything).

    >>> matches_name("mul"), matches_name("x[0]")
    (True, False)
    """
    return _NAME_RE.fullmatch(token) is not None


def is_name(token: str) -> bool:
    """A valid variable name: letters, digits, ``_`` and ``.`` not starting with a digit and
    not a keyword, or a generated one (``d/<a>/d/<b>[:<k>]``, ``v/<w>``, ``dv/<name>[:<k>]``).
    """
    if not matches_name(token):
        return False
    return "/" in token or not is_keyword(token)


def adjoint_name(of: str, wrt: str) -> str:
    """``d/<of>/d/<wrt>``: the derivative of ``of`` with respect to ``wrt`` (the adjoint of
    ``wrt`` when ``of`` is the loss, a local partial otherwise).

    >>> adjoint_name("lambda", "w")
    'd/lambda/d/w'
    """
    return f"d/{of}/d/{wrt}"


def direction_name(weight: str) -> str:
    """``v/<weight>``: the Hessian-vector program's input holding the direction's part for
    ``weight`` (the derivative of ``weight`` along the direction).

    >>> direction_name("W1")
    'v/W1'
    """
    return f"v/{weight}"


def tangent_name(name: str) -> str:
    """``dv/<name>``: in the Hessian-vector program, the derivative of the GCP value ``name``
    along the direction v (``dv/d/L/d/w`` is the ``w`` part of H v).

    >>> tangent_name("d/lambda/d/w"), tangent_name("z")
    ('dv/d/lambda/d/w', 'dv/z')
    """
    return f"dv/{name}"


# a derivative d/<of>/d/<wrt>, or one of the temporaries d/<of>/d/<wrt>:<k> made on its way
_DERIVATIVE_RE = re.compile(rf"d/({PLAIN_NAME_PATTERN})/d/({PLAIN_NAME_PATTERN})(?::([0-9]+))?")


def derivative_parts(name: str) -> tuple[str, str] | None:
    """``(of, wrt)`` of a derivative name ``d/<of>/d/<wrt>``; None for any other name (a
    temporary ``d/<of>/d/<wrt>:<k>`` included).

    >>> derivative_parts("d/L/d/w"), derivative_parts("d/L/d/w:0"), derivative_parts("w")
    (('L', 'w'), None, None)
    """
    parts = split_derivative(name)
    return (parts[0], parts[1]) if parts is not None and parts[2] is None else None


def temp_name(base: str, k: int) -> str:
    """The ``k``-th temporary the compiler makes on the way to ``base``.

    >>> temp_name("d/o/d/z", 0)
    'd/o/d/z:0'
    """
    return f"{base}:{k}"


def split_derivative(name: str) -> tuple[str, str, int | None] | None:
    """``d/<of>/d/<wrt>[:<k>]`` -> ``(of, wrt, k)`` (``k`` None for the derivative itself,
    the temporary's number otherwise); None for any other name.

    >>> split_derivative("d/o/d/z:0"), split_derivative("d/L/d/w.1"), split_derivative("z")
    (('o', 'z', 0), ('L', 'w.1', None), None)
    """
    m = _DERIVATIVE_RE.fullmatch(name)
    if m is None:
        return None
    return m.group(1), m.group(2), None if m.group(3) is None else int(m.group(3))


# ------------------------------------------------------------------------------ numbers

# Plain decimal literals. [0-9], never \\d: \\d also matches other scripts' digits, which
# float() and int() would silently accept. No backslash, as for names.
NUMBER_PATTERN = r"[+-]?(?:[0-9]+[.]?[0-9]*|[.][0-9]+)(?:[eE][+-]?[0-9]+)?"
INT_PATTERN = r"[+-]?[0-9]+"
_NUMBER_RE = re.compile(NUMBER_PATTERN)
_INT_RE = re.compile(INT_PATTERN)
_DIGITS_RE = re.compile(r"[0-9]+")


def is_number(token: str) -> bool:
    """A numeric literal: ``2``, ``-1.5``, ``+3``, ``.5``, ``3e-2`` (no ``inf``, hex or ``_``).

    >>> [is_number(t) for t in ("2", "-1.5e3", ".5", "inf", "1_000", "٣")]
    [True, True, True, False, False, False]
    """
    return _NUMBER_RE.fullmatch(token) is not None


def is_nonfinite_word(token: str) -> bool:
    """``inf``, ``-Infinity``, ``nan``...: what float() reads as a value that is no number.

    >>> is_nonfinite_word("-Inf"), is_nonfinite_word("info")
    (True, False)
    """
    return token.lower().lstrip("+-") in NONFINITE_WORDS


def is_null(token: str) -> bool:
    """The data files' ``null`` (any case).

    >>> is_null("NULL"), is_null("none")
    (True, False)
    """
    return token.lower() == NULL


def is_int(token: str) -> bool:
    """An integer literal with an optional sign, in ASCII digits.

    >>> is_int("-3"), is_int("3.0"), is_int("²")
    (True, False, False)
    """
    return _INT_RE.fullmatch(token) is not None


def is_digits(token: str) -> bool:
    """Only ASCII digits (a size or an index): no sign, no superscripts, no other scripts.

    >>> is_digits("64"), is_digits("²"), is_digits("+1")
    (True, False, False)
    """
    return _DIGITS_RE.fullmatch(token) is not None


# ------------------------------------------------------------------------------ text and lines

MAX_LINE_LENGTH = 10_000  # longer lines in a program are a sign of a binary or minified file


def normalize_text(text: str) -> str:
    """One rule for every entry point: a leading byte-order mark goes, CRLF and CR become LF.

    >>> normalize_text("\\ufeffdeclare input x\\r\\ndefine y = x\\r")
    'declare input x\\ndefine y = x\\n'
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def split_lines(text: str) -> list[str]:
    """Normalized text as lines, numbered from 1 by their position; no final empty line.

    >>> split_lines("a\\r\\nb\\n")
    ['a', 'b']
    """
    lines = normalize_text(text).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


_MACRO_START_RE = re.compile(rf"[ \t]*{MACRO_DIRECTIVE}(?=[ \t]|$)")


def code_part(line: str) -> str:
    """The line without its comment: ``#`` starts a comment that runs to the end of the
    line, except the ``#macro`` directive at the start of a line (whose own comment starts
    at the next ``#``).

    >>> code_part("define z = mul x w  # the product"), code_part("# all comment")
    ('define z = mul x w  ', '')
    """
    directive = _MACRO_START_RE.match(line)
    cut = line.find("#", directive.end() if directive else 0)
    return line if cut < 0 else line[:cut]


_TOKEN_RE = re.compile(r"[^ \t]+")


def split_tokens(text: str) -> list[str]:
    """The tokens of a line's code: separated by spaces or tabs (only those: any other
    character, whitespace or not, belongs to a token); a comment is not a token."""
    return _TOKEN_RE.findall(code_part(text))


def token_spans(text: str, offset: int = 0) -> Iterator[tuple[int, str]]:
    """(column, token) for each token of ``text`` (which starts at column ``offset``)."""
    for m in _TOKEN_RE.finditer(code_part(text)):
        yield offset + m.start(), m.group()


@dataclass(frozen=True)
class TokenLine:
    """A line (or one ``;``-separated part of a ``#macro`` line) as tokens with their columns,
    so that an error can put its caret under the token at fault.

    >>> TokenLine.of("a.tf", 3, "define y = foo x").error("unknown operator", 3).first.column
    11
    """

    file: str
    number: int
    text: str  # the whole line, shown in errors
    tokens: tuple[str, ...]
    cols: tuple[int, ...]

    @staticmethod
    def of(file: str, number: int, text: str, offset: int = 0, part: str | None = None
           ) -> TokenLine:
        """``text`` tokenised; or only ``part`` of it, which starts at column ``offset``."""
        spans = list(token_spans(text if part is None else part, offset))
        return TokenLine(file, number, text, tuple(t for _, t in spans),
                         tuple(c for c, _ in spans))

    def error(self, message: str, token: int | None = None, hint: str | None = None
              ) -> TenFlangError:
        """An error at token number ``token``, or at the whole statement."""
        if token is not None and token < len(self.tokens):
            column, length = self.cols[token], len(self.tokens[token])
        elif self.tokens:
            # the whole statement: for a part of a #macro line, not the whole line
            column = self.cols[0]
            length = self.cols[-1] + len(self.tokens[-1]) - column
        else:
            column, length = 0, len(self.text)
        return TenFlangError.at(message, self.file, self.number, column, length, self.text,
                                hint)


# ------------------------------------------------------------------------------ shapes

MAX_SHAPE_RANK = 4
# per example: a variable of 10^9 numbers already needs 8 GB for one example; anything larger
# is a typo, and would otherwise end in an out-of-memory crash instead of a line number
MAX_ELEMENTS = 10**9


def size_problem(shape: Shape, what: str = "shape") -> str | None:
    """Why a variable of ``shape`` cannot be (too many numbers per example), or None.

    >>> size_problem((100_000_000, 100_000))
    'shape [100000000, 100000] is 10,000,000,000,000 numbers per example (at most 1,000,000,000)'
    """
    size = math.prod(shape)
    if size > MAX_ELEMENTS:
        return (f"{what} {fmt_shape(shape)} is {size:,} numbers per example "
                f"(at most {MAX_ELEMENTS:,})")
    return None


def parse_shape(text: str) -> Shape:
    """A shape written ``[64, 32]`` (``[]`` is a scalar): positive ASCII integers, at most
    :data:`MAX_SHAPE_RANK` of them. Raises ValueError with a message for the user.

    >>> parse_shape("[64, 32]"), parse_shape("[]")
    ((64, 32), ())
    >>> parse_shape("[²]")
    Traceback (most recent call last):
    ...
    ValueError: shape dimensions must be positive integers, got '²'
    """
    inner = text.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        raise ValueError(f"expected a shape like [64, 32], got '{text.strip()}'")
    parts = [p.strip() for p in inner[1:-1].split(",")]
    if parts == [""]:
        return ()
    dims: list[int] = []
    for part in parts:
        if not is_digits(part) or int(part) < 1:
            raise ValueError(f"shape dimensions must be positive integers, got '{part}'")
        dims.append(int(part))
    if len(dims) > MAX_SHAPE_RANK:
        raise ValueError(f"shapes have at most {MAX_SHAPE_RANK} dimensions")
    problem = size_problem(tuple(dims))
    if problem:
        raise ValueError(problem)
    return tuple(dims)
