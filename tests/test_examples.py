"""End to end: every example in examples/ compiles, trains and evaluates as its README says.

The three console scripts run as subprocesses from the venv that runs the tests, each example
copied to a temporary directory first (training writes weights.txt; the tree stays clean).
The training options below are the ones each README documents, and a test checks that the
README still shows them, so the docs and this file cannot drift apart silently.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers_fd import assert_agree

from tenflang_nb.core.datafiles import DataTable, parse_data, read_data

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BIN = Path(sys.executable).parent

# example -> (training data file, tfweightcalc options its README documents)
TRAINING = {
    "logistic": ("training_data.txt", ["--lr", "2", "--tol", "1e-5"]),
    "linear": ("training_data.csv", []),
    "small_net": ("training_data.txt", []),
    "xor": ("training_data.txt",
            ["--init", "normal", "--seed", "0", "--lr", "2", "--max-iter", "2000"]),
    "digits": ("digits.npz", ["--lr", "0.5", "--max-iter", "500", "--tol", "0", "--seed", "0"]),
}
# committed GCPs: (example, file, extra tfcompiler flags)
GCPS = [(name, "gcp.tf", []) for name in TRAINING] + [("logistic", "gcp_full.tf", ["--full"])]
# examples whose make_data.py needs only numpy (digits' needs scikit-learn)
GENERATED_DATA = ["logistic", "linear", "small_net"]


def tool(name: str, *args: str, cwd: Path, stdin: str | None = None) -> str:
    """Run a console script (or a Python script when ``name`` ends in .py); its stdout."""
    exe = [sys.executable, name] if name.endswith(".py") else [str(BIN / name)]
    proc = subprocess.run([*exe, *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, f"{name} {' '.join(args)} failed:\n{proc.stderr}"
    return proc.stdout


@pytest.fixture
def workdir(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A private copy of the example named by the test's ``example`` parameter."""
    target = tmp_path / request.param
    shutil.copytree(EXAMPLES / request.param, target,
                    ignore=shutil.ignore_patterns("weights*.txt", "__pycache__"))
    return target


def train(cwd: Path, example: str) -> dict[str, np.ndarray]:
    """The three-phase pipeline's first two commands; the learned weights."""
    data, options = TRAINING[example]
    tool("tfcompiler", "shape.tf", "-o", "gcp.tf", cwd=cwd)
    tool("tfweightcalc", "gcp.tf", data, *options, "-o", "weights.txt", cwd=cwd)
    table = read_data(cwd / "weights.txt")
    assert len(table) == 1
    return {name: table.columns[name][0] for name in table.names}


def evaluate(cwd: Path, *args: str) -> DataTable:
    return parse_data(tool("tfevaluate", *args, cwd=cwd), "<tfevaluate>")


def logistic(z: np.ndarray | float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(z)))


# ------------------------------------------------------------------ shared checks


@pytest.mark.parametrize(("example", "gcp", "flags"), GCPS)
def test_committed_gcp_is_fresh_compiler_output(example: str, gcp: str,
                                                flags: list[str]) -> None:
    fresh = subprocess.run([str(BIN / "tfcompiler"), *flags, "shape.tf"],
                           cwd=EXAMPLES / example, capture_output=True, check=True).stdout
    assert fresh == (EXAMPLES / example / gcp).read_bytes(), (
        f"examples/{example}/{gcp} is stale: regenerate it with "
        f"tfcompiler {' '.join(flags)} shape.tf -o {gcp}")


@pytest.mark.parametrize("example", GENERATED_DATA)
def test_make_data_reproduces_the_committed_data(example: str, tmp_path: Path) -> None:
    data = TRAINING[example][0]
    tool("make_data.py", "-o", str(tmp_path / data), cwd=EXAMPLES / example)
    assert (tmp_path / data).read_bytes() == (EXAMPLES / example / data).read_bytes()


@pytest.mark.parametrize("example", list(TRAINING))
def test_readme_documents_the_tested_commands(example: str) -> None:
    data, options = TRAINING[example]
    readme = (EXAMPLES / example / "README.md").read_text()
    assert "tfcompiler shape.tf -o gcp.tf" in readme
    assert " ".join(["tfweightcalc gcp.tf", data, *options, "-o weights.txt"]) in readme
    assert "tfevaluate shape.tf" in readme


# ------------------------------------------------------------------ the examples


@pytest.mark.parametrize("workdir", ["logistic"], indirect=True)
def test_logistic_learns_the_true_weight(workdir: Path) -> None:
    w = train(workdir, "logistic")["w"]
    # least squares on this data gives 1.6977 with a standard error of 0.016
    assert abs(w - 1.7) < 0.03
    out = evaluate(workdir, "shape.tf", "new_inputs.txt", "weights.txt")
    x = read_data(workdir / "new_inputs.txt").columns["x"]
    assert_agree(out.columns["o"], logistic(w * x), rtol=1e-12, atol=0.0)
    assert list(out.present["lambda"]) == [True, True, True, False]  # no y: null loss


@pytest.mark.parametrize("workdir", ["logistic"], indirect=True)
def test_logistic_demo_commands_run_with_defaults(workdir: Path) -> None:
    # scripts/demo runs exactly these; the README shows their (not yet converged) result
    tool("tfcompiler", "shape.tf", "-o", "gcp.tf", cwd=workdir)
    tool("tfweightcalc", "gcp.tf", "training_data.txt", "-o", "weights.txt", cwd=workdir)
    w = read_data(workdir / "weights.txt").columns["w"][0]
    assert 1.5 < w < 1.7
    assert len(evaluate(workdir, "shape.tf", "new_inputs.txt", "weights.txt")) == 4


@pytest.mark.parametrize("workdir", ["linear"], indirect=True)
def test_linear_matches_least_squares(workdir: Path) -> None:
    weights = train(workdir, "linear")
    table = read_data(workdir / "training_data.csv")
    design = np.column_stack([table.columns["x"], np.ones(len(table))])
    (a, b), *_ = np.linalg.lstsq(design, table.columns["y"], rcond=None)
    # |grad| <= 5e-4 on a bowl of curvature >= ~1 leaves the weights within ~5e-4
    assert abs(weights["a"] - a) < 1e-3
    assert abs(weights["b"] - b) < 1e-3
    assert abs(a - 2.5) < 0.1 and abs(b + 1.0) < 0.1
    out = evaluate(workdir, "shape.tf", "new_inputs.csv", "weights.txt")
    x = read_data(workdir / "new_inputs.csv").columns["x"]
    assert_agree(out.columns["o"], weights["a"] * x + weights["b"], rtol=1e-12,
                 atol=0.0)
    assert not out.present["lambda"][-1]


@pytest.mark.parametrize("workdir", ["small_net"], indirect=True)
def test_small_net_meets_the_original_test(workdir: Path) -> None:
    weights = train(workdir, "small_net")
    # the 2016 test's expectation: f ~ 0.4, g ~ 0.2, h ~ 0.1 within 0.03
    for name, expected in (("f", 0.4), ("g", 0.2), ("h", 0.1)):
        assert abs(weights[name] - expected) < 0.03, (name, weights[name])
    out = evaluate(workdir, "shape.tf", "new_inputs.txt", "weights.txt")
    assert out.present["LAMBDA"].tolist() == [True, False]
    grads = evaluate(workdir, "gcp.tf", "gradient_check.txt")
    # ... and its gradient check at f=0.35, g=0.24, h=0.08 with exact targets
    assert grads.columns["d/LAMBDA/d/f"][0] < 0
    assert grads.columns["d/LAMBDA/d/g"][0] > 0
    assert grads.columns["d/LAMBDA/d/h"][0] < 0


@pytest.mark.parametrize("workdir", ["xor"], indirect=True)
def test_xor_outputs_are_correct(workdir: Path) -> None:
    train(workdir, "xor")
    out = evaluate(workdir, "shape.tf", "training_data.txt", "weights.txt")
    np.testing.assert_allclose(out.columns["o"], [0, 1, 1, 0], atol=0.1)
    article = evaluate(workdir, "article.tf", "training_data.txt", "article_weights.txt")
    assert article.columns["o"].tolist() == [0, 1, 1, 0]


@pytest.mark.parametrize("workdir", ["digits"], indirect=True)
def test_digits_training_accuracy(workdir: Path) -> None:
    train(workdir, "digits")
    predictions = tool("tfevaluate", "shape.tf", "digits.npz", "weights.txt", cwd=workdir)
    report = tool("accuracy.py", cwd=workdir, stdin=predictions)
    accuracy = float(report.split()[1])
    assert accuracy >= 0.97, report
    # the same figure straight from the logits, not trusting accuracy.py
    logits = parse_data(predictions, "<tfevaluate>").columns["logits"]
    with np.load(workdir / "digits.npz") as data:
        labels = data["y"].argmax(axis=1)
    assert math.isclose(float(np.mean(logits.argmax(axis=1) == labels)), accuracy,
                        abs_tol=1e-4)


def test_the_packaged_seed_example_is_examples_logistic() -> None:
    # the package ships the seed's program (examples/ is not installed): one text, two places
    from tenflang_nb.core.examples import SEED_EXAMPLE

    assert (EXAMPLES / "logistic" / "shape.tf").read_text() == SEED_EXAMPLE


def test_the_packaged_seed_example_is_the_example_file() -> None:
    # the same program twice on purpose: one for the API and doctests, one as a file for the
    # command-line walk-through; an edit to one must reach the other
    from tenflang_nb.core.examples import SEED_EXAMPLE

    assert (EXAMPLES / "logistic" / "shape.tf").read_text() == SEED_EXAMPLE
