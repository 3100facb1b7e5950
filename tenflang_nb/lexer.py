"""A Pygments lexer for TenFlang, built from the core's own tables, and its style.

Words, names and numbers come from :mod:`tenflang_nb.core.lexical` and operators from
:func:`tenflang_nb.core.ops.operator_names`, so a new operator in ``ops.py`` is highlighted
without touching this file. Registered under the ``pygments.lexers`` entry point, so
``pygmentize -l tenflang`` and nbconvert find it.

Each token is one *category* of :mod:`tenflang_nb.palette` (``TOKENS``), the categories the
JupyterLab extension colours too, and :class:`TenFlangStyle` draws them in the palette's
colours. A word is an operator only when it is one (or a ``#macro`` defined above): a
misspelled operator (``logstic``) is ``invalid``. A notebook cell's ``%%tenflang`` line is
read too (nbconvert hands the whole cell over), and :class:`IPythonCellLexer` reads notebook
cells as IPython, ``%%tenflang`` cells as TenFlang (the website's code cells).

>>> from pygments import lex
>>> [(str(t), v) for t, v in lex("define z = mul x 2", TenFlangLexer()) if v.strip()][:4]
[('Token.Keyword.TenFlang', 'define'), ('Token.Name.Variable.TenFlang', 'z'), \
('Token.Operator.TenFlang', '='), ('Token.Name.Builtin.TenFlang', 'mul')]
>>> [CATEGORY[t] for t, v in lex("define L = logstic y", TenFlangLexer()) if v.strip()]
['instruction', 'name', 'equals', 'invalid', 'name']
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pygments.lexer import Lexer, RegexLexer, words
from pygments.style import Style
from pygments.token import (
    STANDARD_TYPES,
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Whitespace,
    _TokenType,
)

from .core.lexical import (
    DERIVATIVE_PATTERN,
    INSTRUCTIONS,
    KINDS,
    MACRO_DIRECTIVE,
    NUMBER_PATTERN,
    PLAIN_NAME_PATTERN,
    RESERVED_WORDS,
    WORD_END,
    WORD_START,
)
from .core.ops import operator_names
from .palette import CATEGORIES, PALETTE

__all__ = ["CATEGORY", "MAGIC_LINE_PATTERN", "TOKENS", "IPythonCellLexer", "TenFlangLexer",
           "TenFlangStyle", "css_class"]

# One token type per category: a standard type, so that any Pygments style colours it, with a
# TenFlang subtype, so that the palette can (on the website: CSS class "kt-TenFlang").
TOKENS: dict[str, _TokenType] = {
    "magic": Name.Decorator.TenFlang,
    "model": Name.Namespace.TenFlang,
    "option": Name.Attribute.TenFlang,
    "value": String.TenFlang,
    "instruction": Keyword.TenFlang,
    "macro": Comment.Preproc.TenFlang,
    "kind": Keyword.Type.TenFlang,
    "operator": Name.Builtin.TenFlang,
    "reserved": Keyword.Reserved.TenFlang,
    "derivative": Name.Variable.Magic.TenFlang,
    "name": Name.Variable.TenFlang,
    "number": Number.TenFlang,
    "equals": Operator.TenFlang,
    "punctuation": Punctuation.TenFlang,
    "comment": Comment.Single.TenFlang,
    "invalid": Error.TenFlang,
}
assert tuple(TOKENS) == CATEGORIES, "a category of the palette has no token type, or the reverse"
CATEGORY: dict[_TokenType, str] = {token: category for category, token in TOKENS.items()}


def css_class(category: str) -> str:
    """The CSS class Pygments' HTML formatter gives a category's tokens besides the standard
    type's (where the page's stylesheet colours them, not inline).

    >>> css_class("kind")
    'kt-TenFlang'
    """
    token = TOKENS[category]
    return f"{STANDARD_TYPES[token.parent]}-{token[-1]}"

# The first line of a TenFlang notebook cell: %%tenflang or a sibling (%%tenflang_check). No
# backslash: the JupyterLab extension reads it too (editor_words.py).
MAGIC_LINE_PATTERN = "%%tenflang(?:_[A-Za-z0-9_]+)?(?![A-Za-z0-9_])"
_MAGIC_LINE = re.compile(MAGIC_LINE_PATTERN)

_OTHER_RESERVED = sorted(w for w in RESERVED_WORDS if w not in INSTRUCTIONS and w != "=")
# statements whose `= WORD operand...` applies an operator (or a macro)
_APPLYING = frozenset({"define", "define_vector", MACRO_DIRECTIVE})
_T = TOKENS


class TenFlangLexer(RegexLexer):
    """Lexer for TenFlang shape programs and Gradient Computing Programs.

    >>> TenFlangLexer.aliases
    ['tenflang', 'tfl']
    """

    name = "TenFlang"
    aliases = ["tenflang", "tfl"]  # noqa: RUF012 - Pygments reads these class attributes
    filenames = ["*.tfl"]  # noqa: RUF012
    # '*.tf' is Terraform's too: claim it only when analyse_text recognises TenFlang
    alias_filenames = ["*.tf"]  # noqa: RUF012
    mimetypes = ["text/x-tenflang"]  # noqa: RUF012

    tokens = {  # noqa: RUF012
        "root": [
            # a notebook cell's first line (nbconvert highlights the whole cell)
            (r"\A" + MAGIC_LINE_PATTERN, _T["magic"], "magic"),
            (r"[ \t]+", Whitespace),
            (r"\n", Whitespace),
            # the original's macro directive is a line of ';'-separated statements
            (MACRO_DIRECTIVE + WORD_END, _T["macro"]),
            (r"#[^\n]*", _T["comment"]),
            (r";", _T["punctuation"]),
            (words(INSTRUCTIONS, prefix=WORD_START, suffix=WORD_END), _T["instruction"]),
            (words(KINDS, prefix=WORD_START, suffix=WORD_END), _T["kind"]),
            (words(operator_names(), prefix=WORD_START, suffix=WORD_END), _T["operator"]),
            (words(_OTHER_RESERVED, prefix=WORD_START, suffix=WORD_END), _T["reserved"]),
            # a generated adjoint or partial: d/L/d/v, d/o/d/z:0
            (DERIVATIVE_PATTERN + WORD_END, _T["derivative"]),
            (PLAIN_NAME_PATTERN + WORD_END, _T["name"]),
            (NUMBER_PATTERN + WORD_END, _T["number"]),
            (r"=", _T["equals"]),
            (r"[\[\],]", _T["punctuation"]),
            # anything else: the checker reports it, we show it as what it is
            (r"[^ \t\n\[\],;=#]+", _T["invalid"]),
        ],
        "magic": [
            (r"\n", Whitespace, "#pop"),
            (r"[ \t]+", Whitespace),
            (r"--?[A-Za-z0-9_-]+", _T["option"]),
            (r"=", _T["equals"]),
            # a value, or the model's name: see get_tokens_unprocessed
            (r'"[^"\n]*"?|' + r"'[^'\n]*'?|[^ \t\n]+", _T["value"]),
        ],
    }

    def get_tokens_unprocessed(self, text: str, stack: Any = ("root",)
                               ) -> Iterator[tuple[int, _TokenType, str]]:
        """The regular expressions' tokens, with what needs the line's context settled: a
        word where an operator goes, a word of the magic line."""
        line: list[tuple[int, _TokenType, str]] = []
        macros: set[str] = set()
        for token in super().get_tokens_unprocessed(text, stack):
            line.append(token)
            if token[2] == "\n":
                yield from _settle(line, macros)
                line = []
        yield from _settle(line, macros)

    @staticmethod
    def analyse_text(text: str) -> float:
        """High when most non-comment lines start with ``declare`` or ``define``."""
        lines = [s.strip() for s in text.splitlines() if s.strip()]
        code = [s for s in lines if not s.startswith("#")]
        if not code:
            return 0.0
        hits = sum(s.split(None, 1)[0] in INSTRUCTIONS for s in code)
        return 0.9 * hits / len(code)


def _settle(line: list[tuple[int, _TokenType, str]], macros: set[str]
            ) -> Iterator[tuple[int, _TokenType, str]]:
    """One line's tokens, settled (``macros``: the names ``#macro`` lines above defined)."""
    if line and line[0][1] is _T["magic"]:
        yield from _magic_line(line)
        return
    solid = [i for i, (_, kind, _) in enumerate(line) if kind is not Whitespace]
    head, after_equals = "", False
    for n, i in enumerate(solid):
        pos, kind, value = line[i]
        if kind is _T["name"] and after_equals and head in _APPLYING:
            following = line[solid[n + 1]] if n + 1 < len(solid) else None
            # an operand follows: the word is in an operator's place
            if following is not None and following[2] != ";" and following[1] is not _T["comment"]:
                if head == MACRO_DIRECTIVE:
                    macros.add(value)
                kind = _T["operator"] if value in macros else _T["invalid"]
        after_equals = value == "="
        if value == ";":
            head = ""  # a #macro line holds several statements
        elif not head:
            head = value
        line[i] = (pos, kind, value)
    yield from line


def _magic_line(line: list[tuple[int, _TokenType, str]]
                ) -> Iterator[tuple[int, _TokenType, str]]:
    """The magic line: a word right after an option is its value, any other word is a name
    (the model's, the result's). Unlike the editor, the lexer does not know which options
    take no value (that would import the magics into every listing): a name written after
    one of those (``--full net``) reads as its value."""
    wants_value = False
    for pos, kind, value in line:
        if kind is _T["option"]:
            wants_value = True
        elif kind is _T["value"]:
            kind = _T["value"] if wants_value else _T["model"]
            wants_value = False
        yield pos, kind, value


class TenFlangStyle(Style):
    """The palette's light colours as a Pygments style (what the notebook's listings use)."""

    name = "tenflang"
    styles = {TOKENS[c]: PALETTE[c].pygments() for c in CATEGORIES}  # noqa: RUF012


class IPythonCellLexer(Lexer):
    """A notebook's code cells: IPython, but a ``%%tenflang`` cell is TenFlang (the website
    highlights its cells with this lexer).

    >>> from pygments import lex
    >>> [v for t, v in lex("%%tenflang net\\ndeclare input x", IPythonCellLexer())
    ...  if t in TOKENS["kind"]]
    ['input']
    """

    name = "IPython 3 with TenFlang cells"
    aliases = ["ipython3-tenflang"]  # noqa: RUF012

    def get_tokens_unprocessed(self, text: str) -> Iterator[tuple[int, _TokenType, str]]:
        if _MAGIC_LINE.match(text):
            yield from TenFlangLexer(**self.options).get_tokens_unprocessed(text)
            return
        from IPython.lib.lexers import IPython3Lexer

        yield from IPython3Lexer(**self.options).get_tokens_unprocessed(text)

