"""``%%tenflang_check`` through IPython's InteractiveShell, ``model.check_backprop`` and the
HTML report (readable without its stylesheet, as an untrusted notebook shows it)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import CapturedIO, capture_output

from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.notebook.model import TenFlangModel
from tenflang_nb.notebook.results import CheckReport

RIGHT = """\
define d/lambda/d/diff = mul 2 diff
define d/lambda/d/o = d/lambda/d/diff
define s = sub 1 o
define d/o/d/z = mul o s
define d/lambda/d/z = mul d/lambda/d/o d/o/d/z
define d/lambda/d/w = mul d/lambda/d/z x
"""
WRONG = RIGHT.replace("define d/o/d/z = mul o s", "define d/o/d/z = o")


@pytest.fixture
def ip(ip: Any) -> Any:
    """The conftest's shell with the extension, and the model seed in it."""
    with capture_output():
        ip.run_cell("%%tenflang seed --show none\n" + SEED_EXAMPLE)
    return ip


def check(ip: Any, line: str, cell: str) -> tuple[Any, CapturedIO]:
    with capture_output() as cap:
        result = ip.run_cell(f"%%tenflang_check {line}\n{cell}")
    return result, cap


def html(cap: CapturedIO) -> str:
    return "".join(o.data.get("text/html", "") for o in cap.outputs)


def untrusted(markup: str) -> str:
    """Roughly what JupyterLab's sanitizer leaves of an untrusted output: no <style> or
    <script>, no class or style attributes; then the visible text."""
    markup = re.sub(r"(?s)<(style|script)\b.*?</\1>", "", markup)
    markup = re.sub(r'\s(class|style)="[^"]*"', "", markup)
    text = re.sub(r"<[^>]+>", " ", markup)
    return " ".join(text.replace("&gt;", ">").replace("&#x27;", "'").split())


# ------------------------------------------------------------------------------ the magic

def test_help_describes_the_magic_and_its_options(ip: Any) -> None:
    with capture_output() as cap:
        ip.run_cell("%%tenflang_check?")
    text = cap.stdout
    assert "%%tenflang_check [--require ADJOINTS] [--draws DRAWS] [--seed SEED]" in text
    assert "model [result]" in text
    for words in ("Check a backward pass written by hand", "--require", "--draws", "--seed",
                  "first wrong line", "missing"):
        assert words in text


def test_a_right_answer_binds_an_ok_result(ip: Any) -> None:
    result, cap = check(ip, "seed answer", RIGHT)
    assert result.success
    answer = ip.user_ns["answer"]
    assert isinstance(answer, CheckReport)
    assert answer.ok and answer.first_wrong_line is None
    shown = html(cap)
    assert "✓ all right: 4 adjoints checked on 5 random draws" in shown
    assert [o.data["text/plain"] for o in cap.outputs] == [answer.report()]


def test_a_wrong_answer_names_the_root_line_with_values_and_hint(ip: Any) -> None:
    result, cap = check(ip, "seed answer", WRONG)
    assert result.success  # a wrong answer is a result, not an error
    answer = ip.user_ns["answer"]
    assert not answer.ok and answer.first_wrong_line == 4
    text = untrusted(html(cap))
    assert "✗ line 4 is the first wrong line" in text
    assert "expected d/o/d/z = " in text and "got " in text
    assert "your value is o itself, not its local partial" in text
    assert "✗ wrong only because of line 4" in text
    assert "✓ right" in text


def test_require_narrows_what_ok_needs(ip: Any) -> None:
    check(ip, "seed part --require d/lambda/d/diff,o", "define d/lambda/d/diff = mul 2 diff\n"
          "define d/lambda/d/o = d/lambda/d/diff\n")
    assert ip.user_ns["part"].ok
    check(ip, "seed part", "define d/lambda/d/diff = mul 2 diff\n")
    part = ip.user_ns["part"]
    assert not part.ok and part.missing_required == ["d/lambda/d/w"]
    check(ip, "seed part --require all", "define d/lambda/d/diff = mul 2 diff\n")
    assert not ip.user_ns["part"].ok
    # an input's adjoint, which the answer does not write: not written, never all right
    check(ip, "seed part --require diff,x", "define d/lambda/d/diff = mul 2 diff\n")
    part = ip.user_ns["part"]
    assert not part.ok and part.missing_required == ["d/lambda/d/x"]
    assert "not written yet: d/lambda/d/x" in part.headline()


def test_by_default_every_weights_gradient_is_required_however_it_is_folded(ip: Any) -> None:
    # one line, every intermediate adjoint folded into it: right (issue 16, item 5)
    folded = ("define t = mul 2 diff\ndefine one = sub 1 o\ndefine s = mul o one\n"
              "define g = mul t s\ndefine d/lambda/d/w = mul g x\n")
    check(ip, "seed answer", folded)
    answer = ip.user_ns["answer"]
    assert answer.ok, answer.report()
    assert answer.right == ["d/lambda/d/w"] and answer.missing_required == []
    assert answer.headline() == ("✓ all right: 1 adjoint checked on 5 random draws "
                                 "(3 other adjoints not written)")


@pytest.mark.parametrize(("options", "message"), [
    ("--require ,", "require lists no adjoint"),
    ("--require ''", "require lists no adjoint"),
    ("--require q", "'q' is neither a variable of seed.tf nor its adjoint"),
    ("--seed -1", "seed must be an integer >= 0, not -1"),
    ("--seed 1.5", "seed must be an integer, not '1.5'"),
    ("--draws 0", "draws must be an integer from 1 to 100, not 0"),
    ("--draws many", "draws must be an integer, not 'many'"),
])
def test_bad_options_are_errors_worded_as_the_settings_are(ip: Any, options: str,
                                                           message: str) -> None:
    result, cap = check(ip, f"seed answer {options}", RIGHT)
    assert message in str(result.error_in_exec)
    assert "answer" not in ip.user_ns  # nothing was checked, nothing bound
    assert "Traceback" not in cap.stdout + cap.stderr


def test_a_misspelt_model_or_option_gets_a_did_you_mean(ip: Any) -> None:
    result, _ = check(ip, "sead", RIGHT)
    assert str(result.error_in_exec) == (
        "no variable named 'sead': did you mean 'seed'? (or run its %%tenflang sead cell "
        "first)")
    result, _ = check(ip, "seed --sead 3", RIGHT)
    assert str(result.error_in_exec) == (
        "unrecognized arguments: --sead 3 (--sead: did you mean '--seed'?)")
    with capture_output():
        result = ip.run_cell("%%tenflang sq --shwo graph\ndeclare weight w\n")
    assert "(--shwo: did you mean '--show'?)" in str(result.error_in_exec)


def test_errors_in_the_cell_are_shown_with_a_caret_and_bound(ip: Any) -> None:
    result, cap = check(ip, "seed answer", "define d/lambda/d/diff = mul 2 diff\n"
                                           "define d/lambda/d/o = mul d/lambda/d/diff\n")
    assert result.success
    answer = ip.user_ns["answer"]
    assert not answer.ok and answer.first_wrong_line == 2
    shown = html(cap)
    # the answer's line 2 is the cell's line 3, under the %%tenflang_check line
    assert ("seed (your backward pass): line 2 (line 3 of the cell): error: "
            "&#x27;mul&#x27; takes 2 operands") in shown
    assert "^^^" in shown and 'data-tf-line="2"' in shown
    assert "line 2: error: 'mul' takes 2 operands" in cap.outputs[0].data["text/plain"]
    # the result shown again elsewhere is no longer under its cell
    assert "of the cell" not in answer._repr_html_()


def test_a_wrong_line_is_named_as_the_editor_numbers_it_too(ip: Any) -> None:
    _, cap = check(ip, "seed", "define d/lambda/d/diff = mul 2 diff\n"
                               "define d/lambda/d/o = mul 3 d/lambda/d/diff\n")
    assert "line 2 (line 3 of the cell): <code>define d/lambda/d/o" in html(cap)


def test_nbgraders_placeholder_means_not_answered_yet(ip: Any) -> None:
    cell = "### BEGIN SOLUTION\n# YOUR CODE HERE\nraise NotImplementedError()\n"
    result, cap = check(ip, "seed answer", cell)
    assert result.success
    answer = ip.user_ns["answer"]
    assert not answer.ok and answer.first_wrong_line == 3
    assert answer.report().startswith(
        "✗ line 3: this exercise is not answered yet: nothing was checked")
    assert "replace this line" in answer.report()
    assert "not answered yet" in untrusted(html(cap))


def test_the_model_is_looked_up_in_the_user_namespace(ip: Any) -> None:
    for line, message in (
            ("nowhere", "no variable named 'nowhere': run its %%tenflang nowhere cell first"),
            ("number", "'number' is a int, not a TenFlang model"),
            ("forward", "model 'forward' declares no loss, so it has no backward pass to check"),
            ("seed 2x", "'2x' is not a valid Python name to bind the result to")):
        ip.user_ns["number"] = 3
        with capture_output():
            ip.run_cell("%%tenflang forward --show none\n"
                        "declare input x\ndeclare output y\ndefine y = mul x 2\n")
        result, cap = check(ip, line, RIGHT)
        assert isinstance(result.error_in_exec, UsageError), line
        assert message in str(result.error_in_exec)
        assert "Traceback" not in cap.stdout + cap.stderr


def test_bad_options_are_usage_errors(ip: Any) -> None:
    result, _ = check(ip, "seed --draw", RIGHT)
    assert isinstance(result.error_in_exec, UsageError)
    result, _ = check(ip, "seed --require", RIGHT)
    assert isinstance(result.error_in_exec, UsageError)


def test_the_magic_is_removed_with_the_extension(shell: Any) -> None:
    shell.run_line_magic("load_ext", "tenflang_nb")
    assert "tenflang_check" in shell.magics_manager.magics["cell"]
    shell.run_line_magic("unload_ext", "tenflang_nb")
    assert "tenflang_check" not in shell.magics_manager.magics["cell"]


# ------------------------------------------------------------------------------ from Python

def test_model_check_backprop_from_python() -> None:
    model = TenFlangModel(SEED_EXAMPLE, "seed")
    report = model.check_backprop(WRONG)
    assert isinstance(report, CheckReport)
    assert (report.ok, report.first_wrong_line) == (False, 4)
    assert repr(report) == report.report() == str(report)
    bundle = report._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert model.check_backprop(RIGHT, draws=2, seed=7).draws == 2


def test_model_without_a_loss_refuses() -> None:
    from tenflang_nb.core.errors import TenFlangError

    model = TenFlangModel("declare input x\ndeclare output y\ndefine y = mul x 2\n", "m")
    with pytest.raises(TenFlangError, match="declares no loss"):
        model.check_backprop("define t = 1")


# ------------------------------------------------------------------------------ the HTML

def test_the_html_reads_without_style_or_script() -> None:
    model = TenFlangModel(SEED_EXAMPLE, "seed")
    markup = model.check_backprop(WRONG)._repr_html_()
    assert "<script" not in markup
    text = untrusted(markup)
    # every verdict is in words, in the order of the student's lines
    verdicts = ["✓ right", "✓ right", "helper, not used by any adjoint",
                "✗ wrong: the mistake is on this line", "✗ wrong only because of line 4",
                "✗ wrong only because of line 4"]
    positions = [text.index(v, text.index(f"define {line}")) for v, line in zip(
        verdicts, ["d/lambda/d/diff", "d/lambda/d/o", "s =", "d/o/d/z =", "d/lambda/d/z =",
                   "d/lambda/d/w ="], strict=True)]
    assert positions == sorted(positions)
    assert "Adjoints: ✓ right: d/lambda/d/diff (line 1), d/lambda/d/o (line 2)" in text
    assert "✗ wrong: d/lambda/d/z (line 5), d/lambda/d/w (line 6)" in text
    assert "draw 1: x = 1.046, y = -1.197, w = -0.726" in text


def test_the_html_lists_missing_adjoints_and_comments() -> None:
    model = TenFlangModel(SEED_EXAMPLE, "seed")
    markup = model.check_backprop("# first block\ndefine d/lambda/d/diff = mul 2 diff\n",
                                  require=["diff"])._repr_html_()
    text = untrusted(markup)
    assert "✓ all right: 1 adjoint checked on 5 random draws (3 other adjoints not written)" \
        in text
    assert "# first block" in text
    assert "not written yet: d/lambda/d/o , d/lambda/d/z , d/lambda/d/w" in text


def test_the_html_escapes_the_students_text() -> None:
    model = TenFlangModel(SEED_EXAMPLE, "seed")
    markup = model.check_backprop("define d/lambda/d/diff = mul 2 diff # <b>bold</b>\n",
                                  require=["diff"])._repr_html_()
    assert "<b>bold</b>" not in markup and "&lt;b&gt;bold&lt;/b&gt;" in markup


def test_the_html_shows_code_in_hints_as_code_and_escapes_control_characters() -> None:
    model = TenFlangModel(SEED_EXAMPLE, "seed")
    report = model.check_backprop("define d/lambda/d/diff = diff # \x1b[2J\n",
                                  require=["diff"])
    markup = report._repr_html_()
    assert "`" not in markup  # a backtick is how the core marks code, never shown
    assert "<code>pow e 2</code>" in markup and "<code>mul e e</code>" in markup
    assert "\x1b" not in markup and "# \\x1b[2J" in markup
    assert "`" not in report.report() and "\x1b" not in report.report()
    # the footer says what an inherited mistake is, without contradicting itself
    text = untrusted(model.check_backprop(WRONG)._repr_html_())
    assert "may itself be written right: it uses the value of line N, which is wrong" in text
    assert "computes the right thing" not in text
