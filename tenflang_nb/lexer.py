"""A Pygments lexer for TenFlang, built from the core's own tables.

Words, names and numbers come from :mod:`tenflang_nb.core.lexical` and operators from
:func:`tenflang_nb.core.ops.operator_names`, so a new operator in ``ops.py`` is highlighted
without touching this file. Registered under the ``pygments.lexers`` entry point, so
``pygmentize -l tenflang`` and nbconvert find it.

>>> from pygments import lex
>>> [(str(t), v) for t, v in lex("define z = mul x 2", TenFlangLexer()) if v.strip()][:4]
[('Token.Keyword', 'define'), ('Token.Name.Variable', 'z'), ('Token.Operator', '='), \
('Token.Name.Builtin', 'mul')]
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    Text,
    Whitespace,
)

from .core.lexical import (
    DERIVATIVE_PATTERN,
    INSTRUCTIONS,
    INT_PATTERN,
    KINDS,
    MACRO_DIRECTIVE,
    NUMBER_PATTERN,
    PLAIN_NAME_PATTERN,
    RESERVED_WORDS,
    WORD_END,
    WORD_START,
)
from .core.ops import operator_names

__all__ = ["TenFlangLexer"]

_OTHER_RESERVED = sorted(w for w in RESERVED_WORDS if w not in INSTRUCTIONS and w != "=")


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
            (r"[ \t]+", Whitespace),
            (r"\n", Whitespace),
            # the original's macro directive is a line of ';'-separated statements
            (MACRO_DIRECTIVE + WORD_END, Comment.Preproc),
            (r"#[^\n]*", Comment.Single),
            (r";", Punctuation),
            (words(INSTRUCTIONS, prefix=WORD_START, suffix=WORD_END), Keyword),
            (words(KINDS, prefix=WORD_START, suffix=WORD_END), Keyword.Type),
            (words(operator_names(), prefix=WORD_START, suffix=WORD_END), Name.Builtin),
            (words(_OTHER_RESERVED, prefix=WORD_START, suffix=WORD_END), Keyword.Reserved),
            # a generated adjoint or partial: d/L/d/v, d/o/d/z:0
            (DERIVATIVE_PATTERN + WORD_END, Name.Variable.Magic),
            (PLAIN_NAME_PATTERN + WORD_END, Name.Variable),
            (INT_PATTERN + WORD_END, Number.Integer),
            (NUMBER_PATTERN + WORD_END, Number.Float),
            (r"=", Operator),
            (r"[\[\],]", Punctuation),
            (r"[^ \t\n]+", Text),  # anything else: the checker reports it, we just show it
        ],
    }

    @staticmethod
    def analyse_text(text: str) -> float:
        """High when most non-comment lines start with ``declare`` or ``define``."""
        lines = [s.strip() for s in text.splitlines() if s.strip()]
        code = [s for s in lines if not s.startswith("#")]
        if not code:
            return 0.0
        hits = sum(s.split(None, 1)[0] in INSTRUCTIONS for s in code)
        return 0.9 * hits / len(code)
