"""tfweightcalc's engine for a run of known length (``cli._engine_for_the_run``): a process
that ends with its run loads numba only when the run is long enough to win the load back;
otherwise it never starts loading it (``auto`` alone would, in the background, after the
first second of a batch of the in-between size)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tenflang_nb import cli
from tenflang_nb.core import api, fused
from tenflang_nb.core.datafiles import read_data
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.settings import TrainSettings

# the seed model's GCP on 100,000 rows: 1.3 million numbers a pass, auto's in-between size
ROWS = 100_000

# tfweightcalc in a fresh process, auto told to load numba after its first pass; then what
# the process holds: numba imported? a load started?
RUN = """
import json, sys
from tenflang_nb import cli
from tenflang_nb.core import fused
fused.AUTO_AFTER = 0.0
code = cli.weightcalc_main(sys.argv[1:])
print(json.dumps({"code": code, "numba": "numba" in sys.modules,
                  "loading": fused._STATE["thread"] is not None}))
"""


@pytest.fixture(scope="module")
def seed_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("seed")
    rng = np.random.default_rng(0)
    x = rng.uniform(-3.0, 3.0, ROWS)
    np.savez(folder / "pairs.npz", x=x, y=1.0 / (1.0 + np.exp(-1.7 * x)))
    (folder / "gcp.tf").write_text(api.compile(api.parse(SEED_EXAMPLE)).text)
    return folder / "gcp.tf", folder / "pairs.npz"


def _chosen(files: tuple[Path, Path], **settings: Any) -> str:
    gcp, data = files
    program = api.parse_file(gcp)
    return cli._engine_for_the_run(program, read_data(str(data)),
                                   TrainSettings(**settings)).engine


def test_a_short_run_never_starts_loading_numba(seed_files: tuple[Path, Path],
                                                tmp_path: Path) -> None:
    gcp, data = seed_files
    out = tmp_path / "w.npz"
    done = subprocess.run([sys.executable, "-c", RUN, str(gcp), str(data), "--tol", "0",
                           "--max-iter", "20", "-q", "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report == {"code": 0, "numba": False, "loading": False}, report
    assert np.load(out)["w"].shape == (1,)


def test_the_run_length_decides_between_the_reference_and_the_fused_engine(
        seed_files: tuple[Path, Path], fused_vm: Any) -> None:
    # 1.3 million numbers x 1,001 passes: the reference; x 100,001 passes: auto, numba loaded
    assert _chosen(seed_files, max_iter=1000) == "reference"
    assert _chosen(seed_files, max_iter=100_000) == "auto"
    assert fused.status().startswith("ready")


def test_a_chosen_engine_and_a_small_batch_are_left_as_they_are(
        seed_files: tuple[Path, Path]) -> None:
    assert _chosen(seed_files, max_iter=1000, engine="fused") == "fused"
    # 1,000 rows: below a million numbers a pass, auto's own choice (the reference)
    assert _chosen(seed_files, max_iter=1000, batch_size=1000) == "auto"


def test_a_long_run_trains_on_the_fused_engine_from_its_first_step(
        seed_files: tuple[Path, Path], fused_vm: Any) -> None:
    gcp, data = seed_files
    program = api.parse_file(gcp)
    table = read_data(str(data))
    settings = cli._engine_for_the_run(program, table, TrainSettings(max_iter=100_000))
    trainer = api.trainer(program, table, settings)
    assert type(trainer._run).__name__ == "FusedRun"
