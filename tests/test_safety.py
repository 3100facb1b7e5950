"""Regressions of issue 16 outside the checker: comparisons a NaN passed, output files that
destroyed their inputs, cost's memory, control characters, non-finite intermediates, number
words on the command line. Each test failed before its fix."""

from __future__ import annotations

import dataclasses
import os
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import EXAMPLES, XOR_SHAPE, Runner, hypothesis_settings, program_text
from helpers_fd import assert_agree
from hypothesis import given
from hypothesis import strategies as st

from tenflang_nb.core import api
from tenflang_nb.core.agreement import entrywise_agreement
from tenflang_nb.core.cost import MEMORY_BUDGET, SWEEPS, compare_modes
from tenflang_nb.core.datafiles import parse_data
from tenflang_nb.core.errors import ComputeError, TenFlangError
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.forward import sweeps_of
from tenflang_nb.core.settings import SETTINGS, SettingsError, TrainSettings
from tenflang_nb.core.textio import read_only, write_atomic
from tenflang_nb.core.train import CHECK_VALUES_EVERY
from tenflang_nb.notebook.model import TenFlangModel
from tenflang_nb.notebook.views.cost import cost_html

DATA = {"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}
LN = program_text("declare input x", "declare weight w", "declare intvar a", "declare loss L",
                  "define a = ln w", "define L = mul a x")

# ------------------------------------------------------------------ 1. NaN passes no comparison


@pytest.mark.parametrize(("w", "side"), [
    (-1.0, "the central difference is NaN"),  # ln of a negative number
    (0.0, "neither the GCP's gradient nor the central difference is finite"),  # inf and NaN
])
def test_gradcheck_fails_on_a_non_finite_side_and_names_it(w: float, side: str) -> None:
    # before: a relative error of 0 came out of a NaN, and the row said "ok"
    model = TenFlangModel(LN, "ln")
    model.weights["w"] = w
    check = model.gradcheck({"x": 1.0})
    assert not check.ok and not check[0]["ok"]
    assert check[0]["problem"] == side
    assert check.max_rel_error == np.inf
    # what the student reads says which side, in the notebook and as text
    assert f"MISMATCH: {side}" in repr(check)
    assert f"MISMATCH: {side}".replace("'", "&#x27;") in check._repr_html_()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_the_one_agreement_rule_fails_on_non_finite_values(bad: float) -> None:
    for a, b in ((bad, bad), (bad, 1.0), (1.0, bad)):
        found = entrywise_agreement(a, b, rtol=1e300, atol=1e300)
        assert not found.ok and found.error == np.inf
        each = entrywise_agreement([a, 1.0], [b, 1.0], rtol=1e-4, atol=1e-7).each
        assert each is not None and each.tolist() == [False, True]
    assert entrywise_agreement(1.0, bad, rtol=1e-4).reason("GCP", "oracle") == (
        f"oracle is {'NaN' if np.isnan(bad) else 'infinite'}")
    assert entrywise_agreement(1.0, 2.0, rtol=1e-4).nonfinite is None


def test_gradcheck_judges_by_the_central_difference_with_a_floor() -> None:
    # the one rule: relative to the reference (the central difference), each entry on its own
    # scale, a difference of at most atol agreeing where the derivative is about 0
    assert entrywise_agreement(1.0, 3.0, rtol=1e-4).error == pytest.approx(2 / 3)
    assert entrywise_agreement([1e-8, 5.0], [0.0, 5.0], rtol=1e-4, atol=1e-7).ok
    assert not entrywise_agreement([1e-6, 5.0], [0.0, 5.0], rtol=1e-4, atol=1e-7).ok
    assert entrywise_agreement(2.0, 2.0, rtol=0.0, atol=1.0).ok  # rtol 0: equality
    assert not entrywise_agreement(2.0, 2.0 + 1e-15, rtol=0.0, atol=1.0).ok
    with pytest.raises(TenFlangError, match="atol must be a finite number >= 0"):
        entrywise_agreement(1.0, 1.0, rtol=1e-4, atol=-1.0)


def test_the_tests_oracle_fails_on_nan_against_nan() -> None:
    # np.testing.assert_allclose takes NaN == NaN: the helpers use the package's rule
    with pytest.raises(AssertionError, match="neither the GCP nor the central difference is"):
        assert_agree([np.nan], [np.nan], 1e-5, 1e-7, names=("the GCP", "the central difference"))
    with pytest.raises(AssertionError, match="1 of 2 entries disagree"):
        assert_agree([1.0, 2.0], [1.0, 2.1], 1e-5, 1e-7)
    assert_agree([1.0, 2.0], [1.0, 2.0 + 1e-9], 1e-5, 1e-7)


# ------------------------------------------------------------------ 6. output over an input

def _files(tmp_path: Path) -> dict[str, bytes]:
    (tmp_path / "shape.tf").write_text(SEED_EXAMPLE)
    (tmp_path / "gcp.tf").write_text(api.compile(api.parse(SEED_EXAMPLE, "shape.tf")).text)
    (tmp_path / "data.txt").write_text("{x: 1, y: 0.5}\n{x: 2, y: 0.7}\n")
    (tmp_path / "w.txt").write_text("{w: 0.5}\n")
    (tmp_path / "link.tf").symlink_to("shape.tf")
    os.link(tmp_path / "data.txt", tmp_path / "hard.txt")
    (tmp_path / "sub").mkdir()
    (tmp_path / "dirlink").symlink_to("sub")
    return {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}


@pytest.mark.parametrize(("command", "args", "message"), [
    ("tfcompiler", ("shape.tf", "-o", "shape.tf"),
     "argument -o/--output: shape.tf is the input SHAPE.tf: write the output to another file"),
    ("tfcompiler", ("shape.tf", "--forward", "-o", "link.tf"),
     "link.tf is the input SHAPE.tf (shape.tf, through a link)"),
    ("tfcompiler", ("link.tf", "--expand", "-o", "./shape.tf"), "is the input SHAPE.tf"),
    ("tfweightcalc", ("gcp.tf", "data.txt", "-o", "data.txt"), "data.txt is the input DATA"),
    ("tfweightcalc", ("gcp.tf", "data.txt", "-o", "hard.txt"), "hard.txt is the input DATA"),
    ("tfweightcalc", ("gcp.tf", "data.txt", "-o", "gcp.tf"), "gcp.tf is the input GCP.tf"),
    ("tfweightcalc", ("gcp.tf", "data.txt", "--log", "data.txt"),
     "argument --log: data.txt is the input DATA"),
    ("tfweightcalc", ("gcp.tf", "data.txt", "--log", "out.csv", "-o", "out.csv"),
     "argument --log: the log and the output (-o) are the same file"),
    ("tfweightcalc", ("gcp.tf", "data.txt", "--log", "dirlink/x.csv", "-o", "sub/x.csv"),
     "argument --log: the log and the output (-o) are the same file"),  # neither exists yet
    ("tfevaluate", ("shape.tf", "data.txt", "w.txt", "-o", "w.txt"), "w.txt is the input WEIGHTS"),
    ("tfevaluate", ("shape.tf", "data.txt", "w.txt", "-o", "hard.txt"),
     "hard.txt is the input INPUTS (data.txt, through a link)"),
    ("tfevaluate", ("link.tf", "data.txt", "w.txt", "-o", "shape.tf"),
     "is the input PROGRAM.tf"),
])
def test_an_output_onto_a_file_the_command_reads_is_refused_before_it_runs(
        cli: Runner, tmp_path: Path, command: str, args: tuple[str, ...], message: str) -> None:
    # before: tfcompiler shape.tf -o shape.tf replaced the program by its GCP
    before = _files(tmp_path)
    result = cli(command, *args, cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before  # nothing written


def test_reading_a_device_while_writing_another_is_no_clash(cli: Runner, tmp_path: Path) -> None:
    # /dev/stdin and /dev/stdout may be one terminal: only regular files can be "the same"
    result = cli("tfcompiler", "/dev/stdin", "-o", "/dev/stdout", stdin=SEED_EXAMPLE)
    assert result.returncode == 0 and result.stdout.startswith("# Gradient"), result.stderr


# ------------------------------------------------------------------ 7. output over a read-only file

def test_a_read_only_output_file_is_refused_and_kept(cli: Runner, tmp_path: Path) -> None:
    # before: the atomic write renamed a new file over it, where the shell's > refuses
    _files(tmp_path)
    out = tmp_path / "gcp.tf"
    out.chmod(0o444)
    before = out.read_bytes()
    result = cli("tfcompiler", "shape.tf", "--full", "-o", "gcp.tf", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "cannot write gcp.tf: the file is read-only (make it writable first" in result.stderr
    assert out.read_bytes() == before and out.stat().st_mode & 0o777 == 0o444
    with pytest.raises(TenFlangError, match=r"gcp.tf: error: cannot write: the file is read-only"):
        write_atomic(out, "new\n")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    out.chmod(0o644)  # made writable again: written
    assert cli("tfcompiler", "shape.tf", "--full", "-o", "gcp.tf", cwd=tmp_path).returncode == 0
    assert out.read_text() == api.compile(api.parse(SEED_EXAMPLE, "shape.tf"), full=True).text
    assert out.stat().st_mode & 0o777 == 0o644


def test_the_read_only_rule_follows_write_permission_as_the_shell_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The shell's > refuses what the user may not write (os.access); root may write anything,
    # but a file with no write bit for anyone is refused for root too (see textio.read_only).
    # The tests run as root: a user without write permission is os.access saying no.
    path = tmp_path / "w.txt"
    path.write_text("{w: 1}\n")
    path.chmod(0o644)
    assert not read_only(path)
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    assert read_only(path)  # someone else's 0644 file, for a user who is not its owner
    with pytest.raises(TenFlangError, match="read-only"):
        write_atomic(path, "{w: 2}\n")
    monkeypatch.undo()
    for mode in (0o444, 0o400, 0o555):
        path.chmod(mode)
        assert read_only(path), oct(mode)
    path.chmod(0o200)  # write-only: may be written
    assert not read_only(path)
    assert not read_only(tmp_path / "new.txt") and not read_only("/dev/null")


# ------------------------------------------------------------------ 14. smaller

def test_an_original_line_with_null_is_reported_as_the_original_format() -> None:
    # before: "bad column name 'x\tnull'", as if it were a CSV header
    with pytest.raises(TenFlangError) as info:
        parse_data("x\tnull\ny\t1\n", "data.txt")
    d = info.value.first
    assert (d.message, d.line, d.column) == ("value of 'x' is not a number: 'null'", 1, 2)
    assert d.hint is not None and "no null: leave the line out" in d.hint


@pytest.mark.parametrize(("text", "value"), [("x\tone\n", "one"), ("x ١\n", "١"),
                                             ("x\t١٢\n", "١٢"), ("x NULL\n", "NULL")])
def test_a_name_and_a_bad_value_are_the_original_format_too(text: str, value: str) -> None:
    with pytest.raises(TenFlangError, match=f"value of 'x' is not a number: '{value}'"):
        parse_data(text, "data.txt")
    with pytest.raises(TenFlangError, match="bad column name 'x y'"):
        parse_data("x y\n", "data.txt")  # two names and a blank: a CSV header gone wrong


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--lr", "١", "lr must be a number, not '١'"),  # an Arabic-Indic one: float() takes it
    ("--lr", "1_000", "lr must be a number, not '1_000'"),  # float() takes it too
    ("--max-iter", "1_0", "max_iter must be an integer, not '1_0'"),
    ("--seed", "٣", "seed must be an integer, not '٣'"),
    ("--batch-size", "²", "batch_size must be an integer, not '²'"),
    ("--momentum", "0x1", "momentum must be a number, not '0x1'"),
])
def test_options_take_numbers_as_the_language_writes_them(
        cli: Runner, tmp_path: Path, option: str, value: str, message: str) -> None:
    _files(tmp_path)
    result = cli("tfweightcalc", "gcp.tf", "data.txt", option, value, cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert SETTINGS["lr"].parse(" 2.5e-1") == 0.25 and SETTINGS["seed"].parse("+3") == 3


# ------------------------------------------------------------------ 13. non-finite intermediates

SATURATED = program_text("declare input x", "declare weight w", "declare intvar z",
                         "declare intvar o", "declare loss L", "define z = mul w x",
                         "define o = logistic z", "define L = mul o o")


def test_an_infinite_intermediate_stops_training_naming_its_line() -> None:
    # before: z = -inf, logistic(z) = 0 and its gradient exactly 0: "converged", w = -1.5e306
    t = api.trainer(api.compile(api.parse(SATURATED, "s.tf")), {"x": [1000.0]}, lr=6e303)
    with pytest.raises(ComputeError) as info:
        t.run()
    d = info.value.first
    assert d.message == "first NaN or infinite value at iteration 1 appeared on this line"
    assert d.source == "define z = mul w x" and not t.converged


# a tiny slope in w keeps the gradient off 0 while z stays -inf: the run goes on
SATURATED_SLOPE = SATURATED.replace("declare loss L", "declare intvar q\ndeclare intvar r\n"
                                    "declare loss L").replace(
    "define L = mul o o", "define q = mul o o\ndefine r = mul w 1e-300\ndefine L = add q r")


@pytest.mark.parametrize(("max_iter", "found"), [(5, 5), (40, CHECK_VALUES_EVERY), (1000, 32)])
def test_no_run_ends_or_goes_on_long_through_a_non_finite_value(max_iter: int,
                                                                found: int) -> None:
    # checked every CHECK_VALUES_EVERY steps and at the step that ends the run
    gcp = api.compile(api.parse(SATURATED_SLOPE, "s.tf"))
    t = api.trainer(gcp, {"x": [1000.0]}, lr=6e303, tol=0.0, max_iter=max_iter)
    with pytest.raises(ComputeError, match=f"at iteration {found} appeared") as info:
        t.run()
    assert info.value.first.source == "define z = mul w x"
    assert t.history[-1].iteration == found - 1


def test_the_cli_and_the_panel_say_so_too(cli: Runner, tmp_path: Path) -> None:
    (tmp_path / "shape.tf").write_text(SATURATED)
    (tmp_path / "data.txt").write_text("{x: 1000}\n")
    assert cli("tfcompiler", "shape.tf", "-o", "gcp.tf", cwd=tmp_path).returncode == 0
    result = cli("tfweightcalc", "gcp.tf", "data.txt", "--lr", "6e303", "-o", "w.txt",
                 cwd=tmp_path)
    assert result.returncode == 1 and "converged" not in result.stderr, result.stderr
    assert "first NaN or infinite value at iteration 1" in result.stderr
    assert not (tmp_path / "w.txt").exists()
    model = TenFlangModel(SATURATED, "sat")
    panel = model.training_panel({"x": [1000.0]}, live=False, lr=6e303)
    panel.run_sync()
    assert panel.status.endswith("stopped by an error") and "define z = mul w x" in (
        panel.message_html.value)
    assert model.weights == {"w": 0.0}  # the run's weights are no result


# ------------------------------------------------------------------ 11. what cost() costs

def _dense(n_in: int, n_out: int) -> str:
    return program_text(f"declare input x [{n_in}]", f"declare exp_output y [{n_out}]",
                        f"declare weight W [{n_in}, {n_out}]", "declare intvar z",
                        "declare intvar d", "declare intvar e", "declare loss L",
                        "define z = matmul x W", "define d = sub z y", "define e = mul d d",
                        "define L = sum e")


MANY_WEIGHTS = program_text(
    "declare input x [3]", "declare weight A [3, 3]", "declare weight b [3]",
    "declare weight c", "declare weight unused [2]", "declare weight V [3, 2]",
    *[f"declare intvar {v}" for v in ("h", "g", "k", "s", "o", "q", "gx", "r", "t")],
    "declare loss L", "define h = matmul x A", "define g = matmul A A",
    "define k = add h b", "define s = logistic k", "define o = matmul s V",
    "define q = sum o", "define gx = matmul g x", "define r = sum gx",
    "define t = mul c r", "define L = add q t")


TWO_LAYERS = program_text(  # where a sample of two sweeps a weight kept fewer numbers
    "declare input x [1]", "declare weight W0 [1, 5]", "declare weight b0 [5]",
    "declare weight c", *[f"declare intvar {v}" for v in ("h0", "g0", "t0", "s")],
    "declare loss L", "define h0 = matmul x W0", "define g0 = add h0 b0",
    "define t0 = tanh g0", "define s = sum t0", "define L = mul s c")


@pytest.mark.parametrize("source", [_dense(7, 3), MANY_WEIGHTS, TWO_LAYERS, XOR_SHAPE,
                                    pytest.param((EXAMPLES / "digits" / "shape.tf").read_text(),
                                                 id="digits", marks=pytest.mark.slow)])
def test_a_sample_of_the_sweeps_counts_what_all_of_them_count(source: str) -> None:
    program = api.parse(source, "s.tf")
    every = compare_modes(program, examples=3, budget=0.0, sweeps=None)
    sample = compare_modes(program, examples=3, budget=0.0, sweeps=4)
    assert not every.extrapolated and every.timing_note == ""
    assert sample.extrapolated and 3 <= sample.measured_sweeps < every.forward.sweeps
    f, g = every.forward, sample.forward
    assert (g.sweeps, g.lines, g.pass_lines, g.values_kept) == (
        f.sweeps, f.lines, f.pass_lines, f.values_kept)
    assert sample.reverse == dataclasses.replace(every.reverse, seconds=sample.reverse.seconds)
    assert f"{sample.measured_sweeps:,} of its {f.sweeps:,} sweeps were run" in (
        sample.timing_note)


def test_a_sample_is_the_first_sweeps_with_the_same_labels() -> None:
    program = api.parse(MANY_WEIGHTS.replace("declare weight unused [2]",
                                             "declare weight A.1 [3]"), "s.tf")
    weights = program.names("weight")
    every = sweeps_of(program, weights)
    first = sweeps_of(program, weights, {"A": 2, "b": 1})
    # A's labels include A.1.0: the weight A.1's sweeps move aside, in a sample too
    assert [s.label for s in first if s.weight == "A.1"] == ["A.1_.0", "A.1_.1", "A.1_.2"]
    assert first == [s for s in every if s.weight not in ("A", "b")
                     or s.index in ((0, 0), (0, 1), (0,))]


@given(st.lists(st.sampled_from(["W", "W.0", "W.1", "W.0.1", "W.01", "W_.0.0", "W_", "b",
                                 "W.0.0.0", "W.2"]), max_size=4, unique=True),
       st.lists(st.integers(1, 3), min_size=1, max_size=3))
@hypothesis_settings(200)
def test_the_label_rule_finds_every_clash_listing_every_label_would(names: list[str],
                                                                     shape: list[int]) -> None:
    # the sample's rule (families of labels) against listing every label, as it was done
    declared = ["W", *[n for n in names if n != "W"]]
    text = "".join(f"declare weight {n}" + (f" [{', '.join(map(str, shape))}]" if n == "W"
                                              else "") + "\n" for n in declared)
    program = api.parse(text, "w.tf")
    taken = set(program.decls)
    suffixes = [".".join(map(str, i)) for i in np.ndindex(tuple(shape))]
    k = 0
    while not taken.isdisjoint(f"W{'_' * k}.{s}" for s in suffixes):
        k += 1
    assert [s.label for s in sweeps_of(program, ["W"])] == [
        f"W{'_' * k}.{s}" for s in suffixes]


def test_cost_of_a_thousand_by_ten_weight_stays_small() -> None:
    # before: every sweep's values at once, 17 s and 3.3 GB for one example
    model = TenFlangModel(_dense(1000, 10), "dense")
    tracemalloc.start()
    c = model.cost(examples=1, budget=0.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < MEMORY_BUDGET + 64 * 2**20, peak
    assert (c.forward.sweeps, c.measured_sweeps, c.forward.values_kept) == (10_000, SWEEPS,
                                                                            30_012)
    assert "256 of its 10,000 sweeps were run" in cost_html(c)


def test_a_measurement_too_big_for_memory_is_refused_before_it_allocates() -> None:
    model = TenFlangModel(_dense(1500, 1500), "big")
    tracemalloc.start()
    with pytest.raises(TenFlangError) as info:
        model.cost(examples=100, budget=0.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    d = info.value.first
    assert d.message.startswith("measuring forward mode on 100 examples needs up to 8.5 GB")
    assert d.hint == "measure on fewer examples: cost(examples=5)"  # an option cost() has
    assert peak < 200 * 2**20, peak


# ------------------------------------------------------------------ 12. one escaping rule

ESC = "\x1b[2J\u202e"  # clears a terminal; turns the text around


def test_the_commands_escape_what_they_echo(cli: Runner, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    # argparse's own messages echo an option as typed
    result = cli("tfcompiler", f"--bogus{ESC}")
    assert result.returncode == 2 and "\x1b" not in result.stderr
    assert "--bogus\\x1b[2J\\u202e" in result.stderr
    _files(tmp_path)
    result = cli("tfweightcalc", "gcp.tf", "data.txt", "--init", ESC, cwd=tmp_path)
    assert result.returncode == 2 and "\x1b" not in result.stderr and "\\x1b[2J" in result.stderr
    # an internal error's text too
    assert cli_main_with(RuntimeError(f"bad {ESC}"), capsys) == "\\x1b[2J\\u202e"


def cli_main_with(error: Exception, capsys: pytest.CaptureFixture[str]) -> str:
    from tenflang_nb import cli as commands

    def body(argv: list[str] | None) -> int:
        raise error

    assert commands._main(body, [], "tfcompiler") == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err
    return err.split("bad ")[1].split("\n")[0]


def test_settings_and_argument_errors_escape_what_they_echo() -> None:
    with pytest.raises(TenFlangError) as info:
        TrainSettings(init=ESC)
    assert "\x1b" not in info.value.render() and "\\x1b[2J" in info.value.render()
    assert "\x1b" not in SettingsError(f"x {ESC}").render()


def test_the_magic_and_the_panel_escape_what_they_echo(ip: Any) -> None:
    from IPython.core.error import UsageError

    for line in (f"net --train {ESC[:4]}x", f"net --show step --example {ESC[:4]}",
                 f"net --show {ESC[:4]}"):
        result = ip.run_cell(f"%%tenflang {line}\n{SEED_EXAMPLE}")
        assert isinstance(result.error_in_exec, UsageError), line
        assert "\x1b" not in str(result.error_in_exec), line
        assert "\\x1b[2" in str(result.error_in_exec), line  # (view names: lower case)
    panel = TenFlangModel(SEED_EXAMPLE, "net").training_panel(DATA, live=False)
    panel.session.error = RuntimeError(f"internal {ESC}")
    text = panel.session.error_text
    assert "\x1b" not in text and "\\x1b[2J" in text


def test_the_panels_note_on_a_failing_plot_is_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object, **_kwargs: object) -> bytes:
        raise OverflowError(f"cannot draw {ESC}")

    monkeypatch.setattr("tenflang_nb.notebook.panel.widget.loss_curve_png", broken)
    panel = TenFlangModel(SEED_EXAMPLE, "net").training_panel(DATA, live=False, max_iter=3)
    panel.run_sync()
    note = panel.notes["the loss curve"]
    assert "could not draw the loss curve" in note
    assert "\x1b" not in note and "\\x1b[2J" in note
