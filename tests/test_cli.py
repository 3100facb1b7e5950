"""End to end: tfcompiler, tfweightcalc and tfevaluate run as subprocesses.

Every bad program, file or option exits with status 1 (2 for usage), writes nothing on stdout,
touches no ``-o`` file, and explains itself on stderr with the file, ``line N``, the offending
line and a caret -- never a Python traceback. Commands are started a few at a time (see
``conftest.run_calls``): most of each one's time is the interpreter's start-up.
"""

from __future__ import annotations

import csv
import io
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from conftest import Call, Result, Runner, command, program_text, run_calls

from tenflang_nb import cli as tfcli
from tenflang_nb.core import api, ops
from tenflang_nb.core.datafiles import FORMATS, parse_data, read_data
from tenflang_nb.core.errors import printable
from tenflang_nb.core.program import parse

V0_SHAPE = program_text(
    "declare input x", "declare weight w", "declare exp_output y", "declare output o",
    "declare intvar neg_y", "declare intvar diff", "declare loss lambda", "",
    "define o = mul x w", "define neg_y = mul -1 y", "define diff = add o neg_y",
    "define lambda = mul diff diff")
V0_GCP = api.compile(parse(V0_SHAPE, "shape.tf")).text
V0_DATA = "{x: 1, y: 4}\n{x: 2, y: 7}\n{x: -3, y: -13}\n"
LIN_SHAPE = program_text(  # y = 3 x0 - x1 exactly: a [2] weight and a scalar bias
    "declare input x [2]", "declare exp_output y", "declare weight W [2]",
    "declare weight b", "declare intvar z", "declare intvar a", "declare intvar d",
    "declare loss L", "define z = matmul x W", "define a = add z b", "define d = sub a y",
    "define L = mul d d")
NAN_SHAPE = program_text("declare input x", "declare weight w", "declare intvar z",
                         "declare loss L", "define z = mul x w", "define L = ln z")


def shape_with(*lines: str) -> str:
    """A shape program whose first two lines declare weight w and loss L."""
    return program_text("declare weight w", "declare loss L", *lines)


@dataclass(frozen=True)
class Bad:
    """A failing command: what it must name (file, line, caret) and say."""

    command: str
    files: dict[str, str | bytes]
    args: tuple[str, ...]
    file: str
    line: int | None  # None: an error about the whole file
    message: str
    token: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


def compiler(source: str | bytes, line: int | None, message: str,
             token: str | None = None) -> Bad:
    return Bad("tfcompiler", {"shape.tf": source}, ("shape.tf",), "shape.tf", line, message,
               token)


def weightcalc(data: str | bytes, line: int | None, message: str,
               token: str | None = None) -> Bad:
    return Bad("tfweightcalc", {"gcp.tf": V0_GCP, "data.txt": data}, ("gcp.tf", "data.txt"),
               "data.txt", line, message, token)


def evaluate(inputs: str, weights: str, line: int | None, message: str, token: str | None,
             file: str = "weights.txt") -> Bad:
    return Bad("tfevaluate", {"shape.tf": V0_SHAPE, "in.txt": inputs, "weights.txt": weights},
               ("shape.tf", "in.txt", "weights.txt"), file, line, message, token)


BAD: dict[str, Bad] = {
    # -- the rules of the language
    "define_before_declare": compiler(program_text("define z = 2", "declare intvar z"), 1,
                                      "before it is declared", "z"),
    "never_declared": compiler(shape_with("define L = mul w w", "define q = 1"), 4,
                               "'q' is defined but never declared", "q"),
    "define_twice": compiler(shape_with("define L = mul w w", "define L = mul w 2"), 4,
                             "defined twice", "L"),
    "declare_twice": compiler(shape_with("declare input w"), 3, "declared twice", "w"),
    "define_input": compiler(program_text("declare input x", "define x = 1"), 2,
                             "cannot define 'x'", "x"),
    "define_exp_output": compiler(program_text("declare exp_output y", "define y = 1"), 2,
                                  "cannot define 'y'", "y"),
    "define_weight": compiler(shape_with("define w = 1"), 3, "cannot define 'w'", "w"),
    "operand_defined_later": compiler(
        shape_with("declare intvar a", "define L = mul a w", "define a = 2"), 4,
        "'a' is used before it is defined", "a"),
    "operand_undeclared": compiler(shape_with("define L = mul w q"), 3,
                                   "'q' is not declared", "q"),
    "operand_on_its_own_line": compiler(shape_with("define L = mul w L"), 3,
                                        "used in its own definition", "L"),
    "two_losses": compiler(shape_with("declare loss M", "define L = mul w w",
                                      "define M = mul w 2"), 3, "exactly one loss", "M"),
    "no_loss": compiler(program_text("declare weight w", "declare intvar a",
                                     "define a = mul w w"), None, "no loss declared"),
    "loss_as_operand": compiler(shape_with("declare intvar a", "define L = mul w w",
                                           "define a = mul L 2"), 5,
                                "cannot be used as an operand", "L"),
    "loss_never_defined": compiler(shape_with("declare intvar a", "define a = mul w w"), 2,
                                   "never defined", "L"),
    "name_starts_with_digit": compiler(shape_with("declare intvar 2a"), 3,
                                       "cannot start with a digit", "2a"),
    "name_is_keyword": compiler(shape_with("declare intvar exp"), 3, "keyword", "exp"),
    "name_with_bad_character": compiler(shape_with("declare intvar a-b"), 3,
                                        "not a valid name", "a-b"),
    "constant_inf": compiler(shape_with("define L = mul w inf"), 3, "finite", "inf"),
    "constant_nan": compiler(shape_with("define L = mul w nan"), 3, "finite", "nan"),
    "constant_overflow": compiler(shape_with("define L = mul w 1e999"), 3, "out of range",
                                  "1e999"),
    "constant_malformed": compiler(shape_with("define L = mul w 1.2.3"), 3, "bad number",
                                   "1.2.3"),
    "unknown_kind": compiler(shape_with("declare variable v"), 3, "unknown kind",
                             "variable"),
    "unknown_operator": compiler(shape_with("define L = times w w"), 3, "unknown operator",
                                 "times"),
    "unknown_instruction": compiler(shape_with("let L = mul w w"), 3,
                                    "unknown instruction", "let"),
    "too_few_operands": compiler(shape_with("define L = pow w"), 3, "takes 2 operands", "pow"),
    "too_many_operands": compiler(shape_with("define L = exp w w"), 3, "takes one operand"),
    "missing_equals": compiler(shape_with("define L mul w w"), 3, "'='"),
    "shape_mismatch": compiler(
        shape_with("declare input u [3]", "declare input v [2]", "declare intvar s",
                   "define s = add u v"), 6, "add of [3] and [2]", "add"),
    "loss_not_scalar": compiler(shape_with("declare input u [3]", "define L = mul u w"), 4,
                                "the loss must be a scalar", "L"),
    "empty_program": compiler("", None, "empty program"),
    "comments_only": compiler("# nothing here\n\n", None, "empty program"),
    "not_utf8": compiler(b"declare weight w\ndeclare loss L\ndefine L = mul w \xe9\n", 3,
                         "not UTF-8"),
    "overlong_line": compiler(shape_with("define L = mul w " + "9" * 20_000), 3,
                              "characters long"),
    "tab_in_name": compiler(shape_with("declare intvar a\u00a0b"), 3, "not a valid name"),
    # -- data files
    "data_malformed_vector": weightcalc("{x: 1, y: 4}\n{x: 2, y: 7\n", 2, "unterminated"),
    "data_not_a_number": weightcalc("{x: 1, y: four}\n", 1, "not a number", "four"),
    "data_not_finite": weightcalc("{x: 1, y: nan}\n", 1, "not finite", "nan"),
    "data_duplicate_key": weightcalc("{x: 1, x: 2, y: 4}\n", 1, "duplicate", "x"),
    "data_undeclared_name": weightcalc("{x: 1, y: 4}\n{x: 2, y: 7, zeta: 3}\n", 2,
                                       "'zeta' is not declared", "zeta"),
    "data_gives_a_weight": weightcalc("{x: 1, y: 4, w: 3}\n", 1, "'w' is declared input",
                                      "w"),
    "data_missing_input": weightcalc("{x: 1, y: 4}\n{y: 7}\n", 2,
                                     "missing required input 'x'"),
    "data_wrong_shape": weightcalc("{x: [1, 2], y: 4}\n", 1, "has shape [2]", "x"),
    "csv_short_row": weightcalc("x,y\n1,4\n2\n", 3, "row has 1 cell"),
    "csv_long_row": weightcalc("x,y\n1,4\n2,7,9\n", 3, "row has 3 cells"),
    "csv_undeclared_column": weightcalc("x,y,zeta\n1,4,0\n", 1, "'zeta' is not declared",
                                        "zeta"),
    "csv_not_a_number": weightcalc("x,y\n1,4\n2,seven\n", 3, "not a number", "seven"),
    "original_format_undeclared": weightcalc("x\t1\ny\t4\nzeta\t2\n", 3,
                                             "'zeta' is not declared", "zeta"),
    "data_not_utf8": weightcalc(b"{x: 1, y: 4}\n{x: \xff}\n", 2, "not UTF-8"),
    "csv_index_overflow": weightcalc("x[99999999999999999999],y\n1,4\n", 1, "is out of range",
                                     "x[99999999999999999999]"),
    "csv_too_many_indices": weightcalc("y,x" + "[0]" * 68 + "\n4,1\n", 1,
                                       "has 68 indices: a tensor has at most 4 dimensions",
                                       "x[0][0]"),
    "data_list_too_deep": weightcalc("{x: [[[[[1]]]]], y: 4}\n", 1, "list nested too deeply",
                                     "["),
    "npz_junk": Bad("tfweightcalc", {"gcp.tf": V0_GCP, "data.npz": b"junk" * 8},
                    ("gcp.tf", "data.npz"), "data.npz", None,
                    "not a valid .npz file of numeric arrays"),
    "data_empty": weightcalc("", None, "no records"),
    "weights_undeclared": evaluate("{x: 1}\n", "{w: 2, v: 3}\n", 1, "'v' is not declared",
                                   "v"),
    "weights_two_records": evaluate("{x: 1}\n", "{w: 2}\n{w: 3}\n", None, "one record",
                                    None),
    "weights_missing_a_weight": evaluate("{x: 1}\n", "{}\n", 2, "no value for weight 'w'",
                                         None, file="shape.tf"),
    "weights_wrong_shape": evaluate("{x: 1}\n", "{w: [1, 2]}\n", 1, "has shape [2]", "w"),
    "inputs_missing": evaluate("{x: 1}\n{y: 2}\n", "{w: 2}\n", 2,
                               "missing required input 'x'", None, file="in.txt"),
    # -- gradient descent
    "training_nan": Bad("tfweightcalc", {"shape.tf": NAN_SHAPE, "data.txt": "{x: 1}\n"},
                        ("gcp.tf", "data.txt"), "gcp.tf", None,
                        "first NaN or infinite value at iteration 0"),
    "not_a_gcp": Bad("tfweightcalc", {"shape.tf": V0_SHAPE, "data.txt": V0_DATA},
                     ("shape.tf", "data.txt"), "shape.tf", None, "not a gradient program"),
    "missing_program_file": Bad("tfcompiler", {}, ("nowhere.tf",), "nowhere.tf", None,
                                "no such file"),
    "program_is_a_directory": Bad("tfevaluate", {"sub/x": "", "in.txt": "{x: 1}\n"},
                                  ("sub", "in.txt"), "sub", None, "directory"),
    "missing_data_file": Bad("tfweightcalc", {"gcp.tf": V0_GCP}, ("gcp.tf", "none.txt"),
                             "none.txt", None, "no such file"),
}


def _setup(directory: Path, bad: Bad) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in bad.files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    if bad.command == "tfweightcalc" and "shape.tf" in bad.files and "gcp.tf" in bad.args:
        (directory / "gcp.tf").write_text(
            api.compile(parse(str(bad.files["shape.tf"]), "shape.tf")).text)
    (directory / "out.txt").write_text("previous contents\n")


MAINS = {"tfcompiler": tfcli.compiler_main, "tfweightcalc": tfcli.weightcalc_main,
         "tfevaluate": tfcli.evaluate_main}


def run_in_process(command: str, args: tuple[str, ...], cwd: Path,
                   capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
                   ) -> Result:
    """The command's main() in this process: same code, no interpreter start-up."""
    monkeypatch.chdir(cwd)
    try:
        status = MAINS[command](list(args))
    except SystemExit as exc:  # argparse's usage errors
        status = int(exc.code or 0)
    captured = capsys.readouterr()
    return Result(status, captured.out, captured.err)


# every case runs in-process; these also run as real subprocesses (plainly and with -o)
SUBPROCESS = ["define_twice", "operand_defined_later", "constant_nan", "unknown_operator",
              "missing_equals", "shape_mismatch", "empty_program", "not_utf8",
              "overlong_line", "data_not_a_number", "data_undeclared_name",
              "data_missing_input", "csv_short_row", "weights_undeclared", "training_nan",
              "missing_program_file", "program_is_a_directory"]


@pytest.fixture(scope="module")
def subprocess_results(cli: Runner, tmp_path_factory: pytest.TempPathFactory
                       ) -> dict[str, tuple[Path, Result, Result]]:
    """The SUBPROCESS cases run twice: plainly, and with ``-o out.txt`` over a file."""
    root = tmp_path_factory.mktemp("bad")
    calls = []
    for key in SUBPROCESS:
        bad = BAD[key]
        _setup(root / key, bad)
        calls += [Call(bad.command, bad.args, root / key),
                  Call(bad.command, (*bad.args, "-o", "out.txt"), root / key)]
    results = run_calls(cli, calls)
    return {key: (root / key, results[2 * i], results[2 * i + 1])
            for i, key in enumerate(SUBPROCESS)}


def assert_clean_failure(result: Result, status: int = 1) -> None:
    assert result.returncode == status, result
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert "internal error" not in result.stderr


def assert_reported(bad: Bad, result: Result) -> None:
    """Exit 1, nothing on stdout, and the file, line, offending line and caret on stderr."""
    assert_clean_failure(result)
    err = result.stderr
    assert bad.message in err, err
    if bad.line is None:
        assert err.startswith(f"{bad.file}: error: ") or err.startswith(f"{bad.file}: line "), err
        return
    lines = err.split("\n")
    header = f"{bad.file}: line {bad.line}: error: "
    at = [i for i, line in enumerate(lines) if line.startswith(header)]
    assert at, err
    shown, caret = lines[at[0] + 1], lines[at[0] + 2]
    assert shown.startswith("    ") and shown.strip(), err
    content = bad.files.get(bad.file)
    if isinstance(content, str):  # the line as written (a long one may be cut short)
        source = printable(content.split("\n")[bad.line - 1].expandtabs(1))
        assert source.startswith(shown[4:].removesuffix(" ...")), err
        assert len(shown[4:]) == len(source) or shown.endswith(" ...") or len(source) > 80
    assert caret.startswith("    ") and set(caret.strip()) == {"^"}, err
    if bad.token is not None:
        column = caret.index("^")
        assert shown[column:column + len(bad.token)] == bad.token, err


@pytest.mark.parametrize("key", list(BAD))
def test_bad_input_is_reported(key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    bad = BAD[key]
    _setup(tmp_path, bad)
    assert_reported(bad, run_in_process(bad.command, bad.args, tmp_path, capsys, monkeypatch))
    # with -o, the previous file is left exactly as it was, and no temporary file is left
    result = run_in_process(bad.command, (*bad.args, "-o", "out.txt"), tmp_path, capsys,
                            monkeypatch)
    assert_clean_failure(result)
    assert (tmp_path / "out.txt").read_text() == "previous contents\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("key", SUBPROCESS)
def test_bad_input_through_a_subprocess(
        key: str, subprocess_results: dict[str, tuple[Path, Result, Result]]) -> None:
    directory, plain, with_o = subprocess_results[key]
    assert_reported(BAD[key], plain)
    assert_clean_failure(with_o)
    assert with_o.stderr == plain.stderr
    assert (directory / "out.txt").read_text() == "previous contents\n"
    assert [p.name for p in directory.iterdir() if p.name.startswith(".")] == []


# ------------------------------------------------------------------------ usage errors

USAGE = {
    "compiler_no_arguments": ("tfcompiler", ()),
    "compiler_unknown_option": ("tfcompiler", ("--bogus", "shape.tf")),
    "compiler_two_programs": ("tfcompiler", ("shape.tf", "shape.tf")),
    "weightcalc_missing_data": ("tfweightcalc", ("gcp.tf",)),
    "weightcalc_bad_lr": ("tfweightcalc", ("gcp.tf", "data.txt", "--lr", "fast")),
    "weightcalc_negative_lr": ("tfweightcalc", ("gcp.tf", "data.txt", "--lr", "-1")),
    "weightcalc_nan_tol": ("tfweightcalc", ("gcp.tf", "data.txt", "--tol", "nan")),
    "weightcalc_negative_max_iter": ("tfweightcalc", ("gcp.tf", "data.txt", "--max-iter",
                                                      "-1")),
    "weightcalc_fractional_max_iter": ("tfweightcalc", ("gcp.tf", "data.txt", "--max-iter",
                                                        "2.5")),
    "weightcalc_bad_init": ("tfweightcalc", ("gcp.tf", "data.txt", "--init", "ones")),
    "evaluate_no_inputs": ("tfevaluate", ("shape.tf",)),
    "evaluate_too_many": ("tfevaluate", ("shape.tf", "data.txt", "w.txt", "extra.txt")),
}


@pytest.mark.parametrize("key", list(USAGE))
def test_usage_errors_exit_2(key: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shape.tf").write_text(V0_SHAPE)
    (tmp_path / "gcp.tf").write_text(V0_GCP)
    (tmp_path / "data.txt").write_text(V0_DATA)
    (tmp_path / "out.txt").write_text("previous\n")
    command, args = USAGE[key]
    result = run_in_process(command, (*args, "-o", "out.txt"), tmp_path, capsys, monkeypatch)
    assert_clean_failure(result, status=2)
    assert "usage:" in result.stderr
    assert (tmp_path / "out.txt").read_text() == "previous\n"


def test_usage_errors_through_subprocesses(cli: Runner, tmp_path: Path) -> None:
    keys = ["compiler_no_arguments", "weightcalc_bad_lr", "evaluate_no_inputs"]
    (tmp_path / "gcp.tf").write_text(V0_GCP)
    (tmp_path / "data.txt").write_text(V0_DATA)
    calls = [Call(USAGE[k][0], USAGE[k][1], tmp_path) for k in keys]
    for key, result in zip(keys, run_calls(cli, calls), strict=True):
        assert_clean_failure(result, status=2)
        assert result.stderr.startswith("usage: "), key


# ------------------------------------------------------------------------ the pipeline


def test_compile_train_evaluate(cli: Runner, tmp_path: Path) -> None:
    (tmp_path / "shape.tf").write_text(V0_SHAPE)
    (tmp_path / "data.txt").write_text(V0_DATA)
    (tmp_path / "new.txt").write_text("{x: 5}\n")
    compiled = cli("tfcompiler", "shape.tf", cwd=tmp_path)
    assert compiled.returncode == 0 and compiled.stderr == ""
    assert compiled.stdout == V0_GCP  # the library and the command agree byte for byte
    (tmp_path / "gcp.tf").write_text(compiled.stdout)
    trained = cli("tfweightcalc", "gcp.tf", "data.txt", "--log", "log.csv", "-o", "w.txt",
                  cwd=tmp_path)
    assert trained.returncode == 0 and trained.stdout == ""
    assert "converged" in trained.stderr
    weights = parse_data((tmp_path / "w.txt").read_text()).record(0)
    assert set(weights) == {"w"}
    assert abs(float(weights["w"]) - 57 / 14) < 1e-4  # type: ignore[arg-type]
    # the log: a header, one row per evaluation, the last one below the tolerance
    rows = list(csv.DictReader(io.StringIO((tmp_path / "log.csv").read_text())))
    assert list(rows[0]) == ["iteration", "loss", "grad_norm"]
    assert [int(r["iteration"]) for r in rows] == list(range(len(rows)))
    assert float(rows[0]["loss"]) == 78.0 and float(rows[0]["grad_norm"]) == 38.0
    assert float(rows[-1]["grad_norm"]) <= 0.0005 < float(rows[-2]["grad_norm"])
    # evaluating the training data with the printed weights gives the last record's loss
    evaluated = cli("tfevaluate", "shape.tf", "data.txt", "w.txt", cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr
    table = parse_data(evaluated.stdout)
    losses = [table.record(i)["lambda"] for i in range(len(table))]
    assert len(losses) == 3
    assert float(np.mean(losses)) == pytest.approx(float(rows[-1]["loss"]), rel=1e-15)
    assert f"{float(rows[-1]['loss']):.6g}" in trained.stderr  # the summary rounds
    new = cli("tfevaluate", "shape.tf", "new.txt", "w.txt", cwd=tmp_path)
    assert new.returncode == 0
    assert new.stdout == f"{{o: {5 * float(weights['w'])!r}, lambda: null}}\n"  # type: ignore[arg-type]


@pytest.mark.parametrize("data", [V0_DATA, "x,y\n1,4\n2,7\n-3,-13\n"])
def test_data_through_a_pipe_is_read_once(cli: Runner, tmp_path: Path, data: str) -> None:
    # before: a pipe was read twice (its lines counted, then its text): "no records"
    (tmp_path / "gcp.tf").write_text(V0_GCP)
    (tmp_path / "data.txt").write_text(data)
    from_file = cli("tfweightcalc", "gcp.tf", "data.txt", cwd=tmp_path)
    assert from_file.returncode == 0, from_file.stderr
    piped = cli("tfweightcalc", "gcp.tf", "/dev/stdin", cwd=tmp_path, stdin=data)
    assert (piped.returncode, piped.stdout) == (0, from_file.stdout), piped.stderr
    # the shell's process substitution: a pipe named /dev/fd/N, for the data and the weights
    (tmp_path / "w.txt").write_text(from_file.stdout)
    substituted = subprocess.run(
        ["bash", "-c", 'exec "$@" <(cat data.txt) <(cat w.txt)', "bash",
         *command("tfevaluate"), "gcp.tf"], cwd=tmp_path, capture_output=True, text=True,
        timeout=120)
    assert substituted.returncode == 0, substituted.stderr
    direct = cli("tfevaluate", "gcp.tf", "data.txt", "w.txt", cwd=tmp_path)
    assert substituted.stdout == direct.stdout and direct.stdout.count("\n") == 3


def test_tensor_pipeline_with_csv_data(cli: Runner, tmp_path: Path) -> None:
    # y = 3 x0 - x1 exactly: a [2] weight and a scalar bias, data as CSV cells x[0], x[1]
    (tmp_path / "lin.tf").write_text(program_text(
        "declare input x [2]", "declare exp_output y", "declare weight W [2]",
        "declare weight b", "declare intvar z", "declare intvar a", "declare intvar d",
        "declare loss L", "define z = matmul x W", "define a = add z b", "define d = sub a y",
        "define L = mul d d"))
    (tmp_path / "data.csv").write_text("x[0],x[1],y\n1,0,3\n0,1,-1\n1,1,2\n2,1,5\n")
    (tmp_path / "new.csv").write_text("x[0],x[1]\n10,20\n")
    assert cli("tfcompiler", "lin.tf", "-o", "gcp.tf", cwd=tmp_path).returncode == 0
    trained = cli("tfweightcalc", "gcp.tf", "data.csv", "--tol", "1e-9", "--max-iter", "5000",
                  "-o", "w.txt", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    weights = parse_data((tmp_path / "w.txt").read_text()).record(0)
    np.testing.assert_allclose(weights["W"], [3.0, -1.0], atol=1e-6)  # type: ignore[arg-type]
    assert abs(float(weights["b"])) < 1e-6  # type: ignore[arg-type]
    new = cli("tfevaluate", "lin.tf", "new.csv", "w.txt", cwd=tmp_path)
    assert new.returncode == 0
    assert parse_data(new.stdout).record(0) == {"L": None}


def test_weights_in_the_inputs_and_the_seed_example(cli: Runner, tmp_path: Path) -> None:
    (tmp_path / "seed.tf").write_text(program_text(
        "declare input x", "declare weight w", "declare exp_output y", "declare output o",
        "declare intvar a", "declare intvar b", "declare intvar c", "define c = mul y w",
        "define a = mul x w", "define o = add a w"))
    (tmp_path / "in.txt").write_text("{x: 3, w: -2}\n")
    result = cli("tfevaluate", "seed.tf", "in.txt", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == "{o: -8.0}\n"


def test_gcp_is_byte_identical_across_runs(cli: Runner, tmp_path: Path) -> None:
    source = program_text(
        "declare input x [3]", "declare exp_output y", "declare weight W [2, 3]",
        "declare weight b [2]", "declare weight k", "declare intvar z", "declare intvar a",
        "declare intvar h", "declare intvar s", "declare intvar t", "declare intvar d",
        "declare loss L", "define z = matmul W x", "define a = add z b",
        "define h = logistic a", "define s = sum h", "define t = mul s k",
        "define d = sub t y", "define L = mul d d")
    (tmp_path / "net.tf").write_text(source)
    calls = [Call("tfcompiler", ("net.tf",), tmp_path, (("PYTHONHASHSEED", seed),))
             for seed in ("1", "2")]
    calls += [Call("tfcompiler", ("--full", "net.tf"), tmp_path, (("PYTHONHASHSEED", "3"),))]
    first, second, full = run_calls(cli, calls)
    assert first.returncode == 0 and first.stdout == second.stdout
    assert first.stdout == api.compile(parse(source, "net.tf")).text
    # --full keeps every partial: an adjoint for every variable the loss depends on
    program = parse(full.stdout)
    for v in ("x", "y", "W", "b", "k", "z", "a", "h", "s", "t", "d", "L"):
        assert f"d/L/d/{v}" in program.decls, v
    assert sorted(program.names("output")) == ["d/L/d/W", "d/L/d/b", "d/L/d/k"]


def test_warnings_go_to_stderr_and_do_not_fail(cli: Runner, tmp_path: Path) -> None:
    (tmp_path / "s.tf").write_text(shape_with(
        "declare weight v", "declare intvar spare", "declare intvar idle",
        "define spare = mul w 3", "define idle = mul v 2", "define L = mul w w"))
    loud, quiet = run_calls(cli, [Call("tfcompiler", ("s.tf",), tmp_path),
                                  Call("tfcompiler", ("-q", "s.tf"), tmp_path)])
    assert loud.returncode == 0 and quiet.returncode == 0
    assert loud.stdout == quiet.stdout != ""
    assert "s.tf: line 4: warning: 'spare' is defined but never used" in loud.stderr
    assert "s.tf: line 3: warning: weight 'v' cannot affect the loss 'L'" in loud.stderr
    assert quiet.stderr == ""
    assert "define d/L/d/v = 0" in loud.stdout


def test_output_file_is_replaced_on_success(cli: Runner, tmp_path: Path) -> None:
    (tmp_path / "shape.tf").write_text(V0_SHAPE)
    (tmp_path / "out.txt").write_text("old\n")
    result = cli("tfcompiler", "shape.tf", "-o", "out.txt", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == ""
    assert (tmp_path / "out.txt").read_text() == V0_GCP
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "shape.tf"]


def test_unwritable_output_is_an_error(cli: Runner, tmp_path: Path) -> None:
    (tmp_path / "shape.tf").write_text(V0_SHAPE)
    result = cli("tfcompiler", "shape.tf", "-o", "no/such/dir/out.txt", cwd=tmp_path)
    assert_clean_failure(result, status=2)  # a usage error, found before anything runs
    assert "cannot write no/such/dir/out.txt: no such directory: no/such/dir" in result.stderr


def test_training_nan_writes_no_weights_but_keeps_the_log(cli: Runner, tmp_path: Path
                                                          ) -> None:
    (tmp_path / "gcp.tf").write_text(V0_GCP)
    (tmp_path / "data.txt").write_text("{x: 100, y: 1}\n")
    result = cli("tfweightcalc", "gcp.tf", "data.txt", "--lr", "1", "--log", "log.csv",
                 "-o", "w.txt", cwd=tmp_path)
    assert_clean_failure(result)
    match = re.search(r"gcp\.tf: line (\d+): error: first NaN or infinite value at "
                      r"iteration (\d+)", result.stderr)
    assert match, result.stderr
    line = int(match.group(1))
    assert result.stderr.split("\n")[1] == "    " + V0_GCP.split("\n")[line - 1]
    assert not (tmp_path / "w.txt").exists()
    rows = (tmp_path / "log.csv").read_text().splitlines()
    assert len(rows) == int(match.group(2)) + 1  # the header and every finite record


@pytest.mark.parametrize(("signum", "words"), [(signal.SIGTERM, "terminated"),
                                               (signal.SIGHUP, "hung up")])
def test_a_signal_while_training_leaves_no_temporary_file(tmp_path: Path, signum: int,
                                                         words: str) -> None:
    # before: SIGTERM or SIGHUP ended the process at once, leaving .log.csv.XXXX.tmp behind
    (tmp_path / "gcp.tf").write_text(V0_GCP)
    (tmp_path / "data.txt").write_text(V0_DATA)
    proc = subprocess.Popen([*command("tfweightcalc"), "gcp.tf", "data.txt", "--tol", "0",
                             "--max-iter", "1000000000", "--log", "log.csv", "-o", "w.txt"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".log.csv.*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp_path.glob(".log.csv.*.tmp")), "training did not start"
    time.sleep(0.3)  # training, well inside its 10^9 steps
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert err.endswith(f"tfweightcalc: {words}\n") and "Traceback" not in err
    assert out == ""
    # as after Ctrl-C: the log of the steps made, no weights, nothing hidden left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.txt", "gcp.tf", "log.csv"]
    rows = (tmp_path / "log.csv").read_text().splitlines()
    assert rows[0] == "iteration,loss,grad_norm" and len(rows) > 2


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("args", [("tfcompiler", "shape.tf"),
                                  ("tfweightcalc", "-q", "gcp.tf", "data.txt"),
                                  ("tfevaluate", "shape.tf", "data.txt", "w.txt"),
                                  ("tfcompiler", "--list-ops"), ("tfevaluate", "--help")])
def test_standard_output_on_a_full_disk_is_a_clear_error(tmp_path: Path,
                                                         args: tuple[str, ...]) -> None:
    # before: "internal error: OSError: [Errno 28]" (--help: nothing, and success)
    (tmp_path / "shape.tf").write_text(V0_SHAPE)
    (tmp_path / "gcp.tf").write_text(V0_GCP)
    (tmp_path / "data.txt").write_text(V0_DATA)
    (tmp_path / "w.txt").write_text("{w: 4}\n")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*command(args[0]), *args[1:]], cwd=tmp_path, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == "<stdout>: error: cannot write: No space left on device\n"


def test_help_version_and_operator_list(cli: Runner, tmp_path: Path) -> None:
    calls = [Call("tfcompiler", ("--help",), tmp_path),
             Call("tfweightcalc", ("--help",), tmp_path),
             Call("tfevaluate", ("--version",), tmp_path),
             Call("tfcompiler", ("--list-ops",), tmp_path)]
    compiler_help, weightcalc_help, version, listing = run_calls(cli, calls)
    assert compiler_help.returncode == 0 and "--full" in compiler_help.stdout
    assert weightcalc_help.returncode == 0
    words = " ".join(weightcalc_help.stdout.split())  # argparse wraps long help lines
    for default in ("default 0.1", "default 0.0005", "default 1000"):
        assert default in words
    assert version.returncode == 0 and version.stdout.startswith("tfevaluate ")
    assert listing.returncode == 0
    for op in ops.OPS_LIST:
        assert f"`{op.name}`" in listing.stdout


@pytest.mark.parametrize("command", ["tfweightcalc", "tfevaluate"])
def test_help_lists_every_data_format(command: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    shown = run_in_process(command, ("--help",), tmp_path, capsys, monkeypatch)
    assert shown.returncode == 0
    listed = shown.stdout.split("\ndata files")[1]
    for fmt in FORMATS.values():
        entry = re.search(rf"^  {fmt.name} +(.*(?:\n {{12}}.*)*)", listed, re.MULTILINE)
        assert entry is not None, fmt.name
        words = " ".join(entry.group(1).split())
        assert fmt.doc.replace("`", "") in words
        for ext in fmt.extensions:
            assert f"ending {ext}" in words


def test_expand_option_prints_the_expanded_program(cli: Runner, tmp_path: Path) -> None:
    (tmp_path / "v.tf").write_text(program_text(
        "declare_vector input x 2", "declare_vector weight w 2", "declare loss L",
        "define L = dot x w"))
    result = cli("tfcompiler", "--expand", "v.tf", cwd=tmp_path)
    assert result.returncode == 0
    program = parse(result.stdout)
    assert program.names("input") == ["x.0", "x.1"]
    assert program.names("weight") == ["w.0", "w.1"]


@pytest.mark.parametrize("ext", ["csv", "npz", "txt"])
def test_every_file_the_tools_write_they_read_back(
        ext: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lin.tf").write_text(LIN_SHAPE)
    (tmp_path / "gcp.tf").write_text(api.compile(parse(LIN_SHAPE, "lin.tf")).text)
    (tmp_path / "data.csv").write_text("x[0],x[1],y\n1,0,3\n0,1,-1\n1,1,2\n2,1,5\n")
    (tmp_path / "new.txt").write_text("{x: [10, 20]}\n{x: [1, 0], y: 3}\n")
    trained = run_in_process("tfweightcalc", ("gcp.tf", "data.csv", "-q", "--tol", "1e-9",
                                              "--max-iter", "5000", "-o", f"w.{ext}"),
                             tmp_path, capsys, monkeypatch)
    assert trained.returncode == 0, trained.stderr
    weights = read_data(tmp_path / f"w.{ext}")
    assert len(weights) == 1 and weights.names == ["W", "b"]
    np.testing.assert_allclose(weights.record(0)["W"], [3.0, -1.0], atol=1e-6)  # type: ignore[arg-type]
    # tfevaluate takes the weights in that format, and writes its results in it too
    shown = run_in_process("tfevaluate", ("lin.tf", "new.txt", f"w.{ext}"), tmp_path, capsys,
                           monkeypatch)
    assert shown.returncode == 0, shown.stderr
    written = run_in_process("tfevaluate", ("lin.tf", "new.txt", f"w.{ext}", "-o",
                                            f"out.{ext}"), tmp_path, capsys, monkeypatch)
    assert written.returncode == 0 and written.stdout == ""
    back = read_data(tmp_path / f"out.{ext}")
    expected = parse_data(shown.stdout)  # brace on standard output
    assert back.names == expected.names == ["L"]
    assert [back.record(i) for i in range(2)] == [expected.record(i) for i in range(2)]
    assert back.record(0) == {"L": None} and back.record(1)["L"] == pytest.approx(0, abs=1e-9)
    if ext == "csv":
        assert (tmp_path / "w.csv").read_text().startswith("W[0],W[1],b\n")
        assert (tmp_path / "out.csv").read_text().startswith("L\nnull\n")


def test_a_null_tensor_expected_output_gives_a_null_loss(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "p.tf").write_text(program_text(
        "declare input x", "declare exp_output y [2]", "declare weight w [2]",
        "declare output o [2]", "declare intvar d [2]", "declare intvar s", "declare loss L",
        "define o = mul x w", "define d = sub o y", "define s = sum d", "define L = mul s s"))
    (tmp_path / "in.txt").write_text("{x: 1, y: null}\n{x: 2, y: [2, 2]}\n")
    (tmp_path / "in.csv").write_text("x,y[0],y[1]\n1,,\n2,2,2\n")
    (tmp_path / "w.txt").write_text("{w: [1, 1]}\n")
    for inputs in ("in.txt", "in.csv"):
        result = run_in_process("tfevaluate", ("p.tf", inputs, "w.txt"), tmp_path, capsys,
                                monkeypatch)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "{o: [1.0, 1.0], L: null}\n{o: [2.0, 2.0], L: 0.0}\n"


def test_tfevaluate_warns_where_a_value_stops_being_finite(tmp_path: Path) -> None:
    program = tmp_path / "p.tf"
    program.write_text("declare input x\ndeclare intvar t\ndeclare output o\n"
                       "define t = sub x 2\ndefine o = ln t\n")
    inputs = tmp_path / "in.txt"
    inputs.write_text("{x: 3}\n{x: 1}\n")
    proc = subprocess.run([str(Path(sys.executable).with_name("tfevaluate")), str(program),
                           str(inputs)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == ["{o: 0.0}", "{o: nan}"]
    assert "record 2: 'o' is not finite" in proc.stderr
    assert "line 5" in proc.stderr and "define o = ln t" in proc.stderr
