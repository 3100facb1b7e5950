"""The Pygments lexer: token types, coverage of the core's keyword tables, registration."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygments import lex
from pygments.lexers import get_lexer_by_name
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, Text

from tenflang_nb.core.api import compile, parse
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.lexical import KINDS
from tenflang_nb.core.ops import operator_names
from tenflang_nb.lexer import TenFlangLexer

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def tokens(text: str) -> list[tuple[object, str]]:
    """Non-blank tokens of ``text``."""
    return [(t, v) for t, v in lex(text, TenFlangLexer(stripnl=False)) if v.strip()]


def test_token_types_on_a_sample() -> None:
    sample = ("# a comment\n"
              "declare weight W [64, 32]\n"
              "define d/o/d/z:0 = sub 1 o\n"
              "define q = mul -1.5e3 x.0\n")
    assert tokens(sample) == [
        (Comment.Single, "# a comment"),
        (Keyword, "declare"), (Keyword.Type, "weight"), (Name.Variable, "W"),
        (Punctuation, "["), (Number.Integer, "64"), (Punctuation, ","),
        (Number.Integer, "32"), (Punctuation, "]"),
        (Keyword, "define"), (Name.Variable.Magic, "d/o/d/z:0"), (Operator, "="),
        (Name.Builtin, "sub"), (Number.Integer, "1"), (Name.Variable, "o"),
        (Keyword, "define"), (Name.Variable, "q"), (Operator, "="), (Name.Builtin, "mul"),
        (Number.Float, "-1.5e3"), (Name.Variable, "x.0"),
    ]


@pytest.mark.parametrize("op", list(operator_names()))
def test_every_operator_of_the_core_is_a_builtin(op: str) -> None:
    assert tokens(f"define y = {op} x")[3] == (Name.Builtin, op)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_the_core_is_a_type(kind: str) -> None:
    assert tokens(f"declare {kind} v")[1] == (Keyword.Type, kind)


def test_names_that_start_with_a_keyword_are_names() -> None:
    # 'exp' is an operator and 'exp_output' a kind; 'mul_x', 'ln.2', 'input2' are names
    assert tokens("define mul_x = add ln.2 input2") == [
        (Keyword, "define"), (Name.Variable, "mul_x"), (Operator, "="),
        (Name.Builtin, "add"), (Name.Variable, "ln.2"), (Name.Variable, "input2")]
    assert tokens("declare exp_output exp_y")[1:] == [
        (Keyword.Type, "exp_output"), (Name.Variable, "exp_y")]


def test_original_vector_and_macro_words() -> None:
    toks = tokens("#macro sq = s a; define sq = mul a a;\ndeclare_vector input x 3\n"
                  "define s = dot x w\n")
    assert toks[0] == (Comment.Preproc, "#macro")
    assert (Punctuation, ";") in toks
    assert (Keyword, "declare_vector") in toks
    assert (Keyword.Reserved, "dot") in toks


def test_lexing_loses_no_text_and_recognises_every_token_of_real_programs() -> None:
    programs = [SEED_EXAMPLE] + [p.read_text() for p in sorted(EXAMPLES.glob("*/shape.tf"))]
    assert len(programs) > 1
    for text in programs:
        gcp = compile(parse(text), full=True).text
        for source in (text, gcp):
            pairs = list(lex(source, TenFlangLexer(stripnl=False)))
            assert "".join(v for _, v in pairs) == source
            # Text is the lexer's catch-all for what it does not recognise
            assert not [v for t, v in pairs if t in Error or t is Text]


def test_registered_as_a_pygments_plugin() -> None:
    assert isinstance(get_lexer_by_name("tenflang"), TenFlangLexer)


def test_unrecognised_words_are_kept_as_plain_text() -> None:
    assert (Text, "@@") in tokens("define y = @@ x")


def test_analyse_text_recognises_tenflang_only() -> None:
    assert TenFlangLexer.analyse_text(SEED_EXAMPLE) > 0.5
    assert TenFlangLexer.analyse_text('resource "aws_instance" "web" {\n  ami = "x"\n}\n') == 0
