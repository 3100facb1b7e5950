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
    INSTRUCTIONS,
    INT_PATTERN,
    KINDS,
    MACRO_DIRECTIVE,
    NAME_PATTERN,
    NUMBER_PATTERN,
    RESERVED_WORDS,
)
from .core.ops import operator_names

__all__ = ["TenFlangLexer"]

# A word ends where a name could not continue: names may hold '.', and 'd/L/d/v:0' ':' and '/'.
_END = r"(?![A-Za-z0-9_./:])"
_START = r"(?<![A-Za-z0-9_./:])"
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
            (MACRO_DIRECTIVE + _END, Comment.Preproc),
            (r"#[^\n]*", Comment.Single),
            (r";", Punctuation),
            (words(INSTRUCTIONS, prefix=_START, suffix=_END), Keyword),
            (words(KINDS, prefix=_START, suffix=_END), Keyword.Type),
            (words(operator_names(), prefix=_START, suffix=_END), Name.Builtin),
            (words(_OTHER_RESERVED, prefix=_START, suffix=_END), Keyword.Reserved),
            # a generated adjoint or partial: d/L/d/v, d/o/d/z:0
            (r"(?=d/)" + NAME_PATTERN + _END, Name.Variable.Magic),
            (NAME_PATTERN + _END, Name.Variable),
            (INT_PATTERN + _END, Number.Integer),
            (NUMBER_PATTERN + _END, Number.Float),
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
