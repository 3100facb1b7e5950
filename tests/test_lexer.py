"""The Pygments lexer: token types, coverage of the core's keyword tables, registration."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygments import highlight, lex
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.token import STANDARD_TYPES, Error, Keyword, Name, Text

from tenflang_nb.core.api import compile, parse
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.lexical import KINDS
from tenflang_nb.core.ops import operator_names
from tenflang_nb.lexer import CATEGORY, TOKENS, IPythonCellLexer, TenFlangLexer, TenFlangStyle
from tenflang_nb.palette import PALETTE

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def tokens(text: str) -> list[tuple[str, str]]:
    """Non-blank tokens of ``text``, each as (its category, its text)."""
    return [(CATEGORY[t], v) for t, v in lex(text, TenFlangLexer(stripnl=False)) if v.strip()]


def test_token_types_on_a_sample() -> None:
    sample = ("# a comment\n"
              "declare weight W [64, 32]\n"
              "define d/o/d/z:0 = sub 1 o\n"
              "define q = mul -1.5e3 x.0\n")
    assert tokens(sample) == [
        ("comment", "# a comment"),
        ("instruction", "declare"), ("kind", "weight"), ("name", "W"),
        ("punctuation", "["), ("number", "64"), ("punctuation", ","),
        ("number", "32"), ("punctuation", "]"),
        ("instruction", "define"), ("derivative", "d/o/d/z:0"), ("equals", "="),
        ("operator", "sub"), ("number", "1"), ("name", "o"),
        ("instruction", "define"), ("name", "q"), ("equals", "="), ("operator", "mul"),
        ("number", "-1.5e3"), ("name", "x.0"),
    ]


def test_each_category_is_a_standard_token_type_with_a_tenflang_subtype() -> None:
    """Any Pygments style colours the tokens (the standard type); the palette's CSS can pick
    them out on the website (the subtype's class, e.g. ``kt-TenFlang``)."""
    assert set(TOKENS) == set(PALETTE)
    assert len(set(TOKENS.values())) == len(TOKENS)
    for token in TOKENS.values():
        assert token[-1] == "TenFlang" and token.parent in STANDARD_TYPES
    assert TOKENS["kind"] in Keyword.Type and TOKENS["operator"] in Name.Builtin


def test_the_style_is_the_palette() -> None:
    formatter = HtmlFormatter(style=TenFlangStyle, noclasses=True, nowrap=True)
    for category, token in TOKENS.items():
        style = TenFlangStyle.style_for_token(token)
        assert "#" + style["color"].lower() == PALETTE[category].light, category
        assert style["bold"] == PALETTE[category].bold, category
    html = highlight("declare weight w", TenFlangLexer(), formatter)
    assert f'<span style="color: {PALETTE["kind"].light}">weight</span>' in html.lower()


@pytest.mark.parametrize("op", list(operator_names()))
def test_every_operator_of_the_core_is_an_operator(op: str) -> None:
    assert tokens(f"define y = {op} x")[3] == ("operator", op)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_the_core_is_a_kind(kind: str) -> None:
    assert tokens(f"declare {kind} v")[1] == ("kind", kind)


def test_names_that_start_with_a_keyword_are_names() -> None:
    # 'exp' is an operator and 'exp_output' a kind; 'mul_x', 'ln.2', 'input2' are names
    assert tokens("define mul_x = add ln.2 input2") == [
        ("instruction", "define"), ("name", "mul_x"), ("equals", "="),
        ("operator", "add"), ("name", "ln.2"), ("name", "input2")]
    assert tokens("declare exp_output exp_y")[1:] == [("kind", "exp_output"), ("name", "exp_y")]


def test_a_misspelled_operator_is_no_operator() -> None:
    """Where an operator goes, a word that is none is marked (the parser rejects it too);
    a copy (`define y = x`) and the operands stay names."""
    assert tokens("define L = logstic y")[3] == ("invalid", "logstic")
    assert tokens("define_vector u = rleu v")[3] == ("invalid", "rleu")
    assert tokens("define y = x")[3] == ("name", "x")
    assert tokens("define y = x  # a copy")[3] == ("name", "x")
    assert tokens("define y = mul logstic x")[4] == ("name", "logstic")
    assert tokens("declare input logstic")[2] == ("name", "logstic")


def test_a_macro_is_applied_like_an_operator() -> None:
    """A ``#macro`` line defines a name that later lines apply as an operator."""
    toks = tokens("#macro c = sq a; define c = mul a a;\ndefine y = sq x\n"
                  "define z = sqq x\n")
    assert toks[:5] == [("macro", "#macro"), ("name", "c"), ("equals", "="),
                        ("operator", "sq"), ("name", "a")]
    assert toks[-10:] == [("instruction", "define"), ("name", "y"), ("equals", "="),
                          ("operator", "sq"), ("name", "x"),
                          ("instruction", "define"), ("name", "z"), ("equals", "="),
                          ("invalid", "sqq"), ("name", "x")]


def test_original_vector_and_macro_words() -> None:
    toks = tokens("#macro sq = s a; define sq = mul a a;\ndeclare_vector input x 3\n"
                  "define s = dot x w\n")
    assert toks[0] == ("macro", "#macro")
    assert ("punctuation", ";") in toks
    assert ("instruction", "declare_vector") in toks
    assert ("reserved", "dot") in toks


def test_the_magic_line_of_a_notebook_cell() -> None:
    """nbconvert hands the lexer the whole cell: the magic line's words are told apart by the
    magic's own options (a word after one that takes a value is that value)."""
    cell = ('%%tenflang net --show graph,gcp --full --lr=0.5 --example "{x: 1, y: 2}"\n'
            "declare input x\n")
    assert tokens(cell) == [
        ("magic", "%%tenflang"), ("model", "net"), ("option", "--show"),
        ("value", "graph,gcp"), ("option", "--full"), ("option", "--lr"), ("equals", "="),
        ("value", "0.5"), ("option", "--example"), ("value", '"{x: 1, y: 2}"'),
        ("instruction", "declare"), ("kind", "input"), ("name", "x")]
    assert tokens("%%tenflang_check seed answer --seed 1\n")[:3] == [
        ("magic", "%%tenflang_check"), ("model", "seed"), ("model", "answer")]
    # only the first line of a cell is a magic line
    assert tokens("declare input x\n%%tenflang net\n")[3] == ("invalid", "%%tenflang")


def test_lexing_loses_no_text_and_recognises_every_token_of_real_programs() -> None:
    programs = [SEED_EXAMPLE] + [p.read_text() for p in sorted(EXAMPLES.glob("*/shape.tf"))]
    assert len(programs) > 1
    for text in programs:
        gcp = compile(parse(text), full=True).text
        for source in (text, gcp):
            pairs = list(lex(source, TenFlangLexer(stripnl=False)))
            assert "".join(v for _, v in pairs) == source
            assert not [v for t, v in pairs if t in Error or t is Text]


def test_registered_as_a_pygments_plugin() -> None:
    assert isinstance(get_lexer_by_name("tenflang"), TenFlangLexer)


def test_unrecognised_words_are_marked() -> None:
    assert ("invalid", "@@") in tokens("define y = @@ x")


def test_notebook_cells_are_ipython_but_tenflang_cells_tenflang() -> None:
    """The website's code cells: TenFlang where the first line is a %%tenflang magic."""
    def cell(text: str) -> list[tuple[object, str]]:
        return [(t, v) for t, v in lex(text, IPythonCellLexer()) if v.strip()]

    tenflang = cell("%%tenflang_check net\ndefine d/L/d/w = mul 2 w\n")
    assert tenflang[:2] == [(TOKENS["magic"], "%%tenflang_check"), (TOKENS["model"], "net")]
    assert (TOKENS["operator"], "mul") in tenflang
    python = cell("import numpy as np\n%time x = 1\n")
    assert python[0] == (Keyword.Namespace, "import")
    assert not [t for t, _ in python if t[-1:] == ("TenFlang",)]
    # a magic named alike is not ours; nor is %%tenflang further down
    assert not [t for t, _ in cell("%%tenflangx y\nz = 1\n") if t[-1:] == ("TenFlang",)]


def test_analyse_text_recognises_tenflang_only() -> None:
    assert TenFlangLexer.analyse_text(SEED_EXAMPLE) > 0.5
    assert TenFlangLexer.analyse_text('resource "aws_instance" "web" {\n  ami = "x"\n}\n') == 0
