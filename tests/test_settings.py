"""Training settings: one object, checked in one place, the same message from every door."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import Runner

from tenflang_nb.core.api import compile, parse, train, trainer
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.settings import SETTINGS, SettingsError, TrainSettings
from tenflang_nb.notebook.model import TenFlangModel

DATA = {"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}

BAD = [
    ({"lr": None}, "lr must be a finite number >= 0, not None"),
    ({"lr": -1}, "lr must be a finite number >= 0, not -1"),
    ({"lr": math.nan}, "lr must be a finite number >= 0, not nan"),
    ({"tol": math.inf}, "tol must be a finite number >= 0, not inf"),
    ({"max_iter": None}, "max_iter must be an integer >= 0, not None"),
    ({"max_iter": math.inf}, "max_iter must be an integer >= 0, not inf"),
    ({"max_iter": 2.5}, "max_iter must be an integer >= 0, not 2.5"),
    ({"max_iter": True}, "max_iter must be an integer >= 0, not True"),
    ({"seed": -1}, "seed must be an integer >= 0, not -1"),
    ({"init": "ones"}, "init must be one of auto, zeros, normal, not 'ones'"),
    ({"optimizer": "sgd"}, "optimizer must be one of gd, momentum, adam, not 'sgd'"),
    ({"momentum": 1}, "momentum must be a number in [0, 1), not 1"),
    ({"batch_size": 0}, "batch_size must be an integer >= 1 (or None: the whole set), not 0"),
    ({"lrate": 0.1}, "unknown training setting 'lrate'"),
]


@pytest.mark.parametrize(("options", "message"), BAD)
def test_bad_settings_are_one_clear_error_from_python(options: dict, message: str) -> None:
    for make in (lambda: TrainSettings.of(**options),
                 lambda: train(compile(parse(SEED_EXAMPLE)), DATA, **options),
                 lambda: TenFlangModel(SEED_EXAMPLE).train(DATA, **options)):
        with pytest.raises(SettingsError) as info:
            make()
        assert message in str(info.value)
        assert isinstance(info.value, TenFlangError)  # so IPython shows no traceback
        assert info.value._render_traceback_() == [f"error: {info.value.diagnostics[0].message}"]


def test_settings_are_checked_before_any_data_is_read() -> None:
    with pytest.raises(SettingsError, match="momentum"):
        trainer(compile(parse(SEED_EXAMPLE)), "no/such/file.txt", momentum=2)


def test_valid_values_are_normalised() -> None:
    s = TrainSettings(lr=1, max_iter=1e3, batch_size=8.0)
    assert (s.lr, s.max_iter, s.batch_size) == (1.0, 1000, 8)
    assert type(s.lr) is float and type(s.max_iter) is int and type(s.batch_size) is int


def test_every_setting_has_a_field_and_a_default_that_checks() -> None:
    defaults = TrainSettings()
    for name, setting in SETTINGS.items():
        assert getattr(defaults, name) == setting.default
        assert setting.check(setting.default) == setting.default


@pytest.mark.parametrize(("args", "message"), [
    (("--seed", "-1"), "seed must be an integer >= 0, not -1"),
    (("--momentum", "1"), "momentum must be a number in [0, 1), not 1.0"),
    (("--max-iter", "inf"), "max_iter must be an integer, not 'inf'"),
    (("--lr", "fast"), "lr must be a number, not 'fast'"),
    (("--batch-size", "0"), "batch_size must be an integer >= 1"),
    (("--optimizer", "sgd"), "optimizer must be one of gd, momentum, adam, not 'sgd'"),
    (("--log", "no_such_dir/log.csv"),
     "argument --log: cannot write no_such_dir/log.csv: no such directory: no_such_dir"),
    (("--log", "."), "argument --log: . is a directory"),
])
def test_bad_options_are_usage_errors_on_the_command_line(cli: Runner, tmp_path: Path,
                                                          args: tuple[str, ...], message: str
                                                          ) -> None:
    (tmp_path / "shape.tf").write_text(SEED_EXAMPLE)
    (tmp_path / "gcp.tf").write_text(compile(parse(SEED_EXAMPLE, "shape.tf")).text)
    (tmp_path / "data.txt").write_text("{x: 1, y: 0.5}\n")
    result = cli("tfweightcalc", "gcp.tf", "data.txt", *args, "-o", "w.txt", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "w.txt").exists()
