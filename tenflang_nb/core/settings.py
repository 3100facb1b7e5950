"""Training settings: one :class:`TrainSettings`, checked in one place, and the table of its
fields that ``tfweightcalc``'s options, the ``%%tenflang`` options and the training panel's
controls are all made from.

>>> TrainSettings(lr=0.5).replace(max_iter=20)
TrainSettings(lr=0.5, tol=0.0005, max_iter=20, init='auto', seed=0, optimizer='gd', \
momentum=0.9, batch_size=None, engine='auto')
>>> TrainSettings(momentum=1)
Traceback (most recent call last):
...
tenflang_nb.core.settings.SettingsError: error: momentum must be a number in [0, 1), not 1
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .arguments import ArgumentError, Rule, check_instance
from .lexical import is_int, is_number
from .optimizers import OPTIMIZERS

__all__ = ["ENGINES", "INITS", "SETTINGS", "SETTINGS_ARGUMENT", "Setting", "SettingsError",
           "TrainSettings"]

SETTINGS_ARGUMENT = "a TrainSettings (or None)"  # what a settings= argument must be

INITS = ("auto", "zeros", "normal")
ENGINES = ("auto", "fused", "reference")  # core/fused.py runs them


class SettingsError(ArgumentError):
    """A training setting out of range: a usage error (exit status 2 on the command line)."""


@dataclass(frozen=True, kw_only=True)
class Setting(Rule):
    """One training setting: a :class:`~tenflang_nb.core.arguments.Rule` (its name is the
    keyword of ``train()`` and the field of :class:`TrainSettings`; what it accepts), how
    people read it, and its default.

    >>> SETTINGS["max_iter"].option, SETTINGS["max_iter"].parse("50")
    ('--max-iter', 50)
    """

    label: str
    help: str
    default: Any

    @property
    def option(self) -> str:
        """The option that sets it on the command line and in ``%%tenflang``."""
        return "--" + self.name.replace("_", "-")

    def parse(self, text: str) -> Any:
        """An option's text as a value of the right type (checked by :meth:`check`), read as
        the language reads numbers: ASCII digits only, no ``_`` (``int()`` and ``float()``
        take ``١`` and ``1_000``).

        >>> SETTINGS["lr"].parse("2e-3"), SETTINGS["max_iter"].parse("+7")
        (0.002, 7)
        >>> SETTINGS["lr"].parse("1_000")
        Traceback (most recent call last):
        ...
        tenflang_nb.core.settings.SettingsError: error: lr must be a number, not '1_000'
        """
        if self.kind is str:
            return text
        if self.kind is int and is_int(text.strip()):
            return int(text)
        if self.kind is float and is_number(text.strip()):
            return float(text)
        what = "an integer" if self.kind is int else "a number"
        raise SettingsError(f"{self.name} must be {what}, not {text!r}")

    def error(self, value: Any) -> SettingsError:
        return SettingsError(super().error(value).first.message)


def _setting(name: str, label: str, help: str, default: Any, kind: type, requirement: str,
             **extra: Any) -> tuple[str, Setting]:
    return name, Setting(name=name, label=label, help=help, default=default, kind=kind,
                         requirement=requirement, **extra)


# In the order the panel, --help and the Guide show them.
SETTINGS: Mapping[str, Setting] = dict((
    _setting("lr", "learning rate", "step size: each update is w <- w - lr * grad", 0.1, float,
             "a finite number >= 0", accepts=lambda v: v >= 0),
    _setting("tol", "tolerance", "converged when ||grad|| <= tol (0: run all --max-iter steps)",
             0.0005, float, "a finite number >= 0", accepts=lambda v: v >= 0),
    _setting("max_iter", "max iterations", "stop after this many updates", 1000, int,
             "an integer >= 0", accepts=lambda v: v >= 0),
    _setting("init", "initial weights", "auto: matrices drawn from N(0, 1/fan_in), scalars and "
             "vectors 0; zeros (the original's); normal: every weight drawn", "auto", str,
             "one of " + ", ".join(INITS), choices=INITS),
    _setting("seed", "random seed", "seed of --init normal/auto and of the mini-batches", 0,
             int, "an integer >= 0", accepts=lambda v: v >= 0),
    _setting("optimizer", "optimizer", "; ".join(f"{o.name}: {o.rule}"
                                                  for o in OPTIMIZERS.values()),
             "gd", str, "one of " + ", ".join(OPTIMIZERS), choices=tuple(OPTIMIZERS)),
    _setting("momentum", "momentum", "mu of --optimizer momentum", 0.9, float,
             "a number in [0, 1)", accepts=lambda v: 0 <= v < 1),
    _setting("batch_size", "batch size", "train on shuffled mini-batches of this many examples "
             "(default: the whole training set at every step, as the original did)", None, int,
             "an integer >= 1 (or None: the whole set)", accepts=lambda v: v >= 1,
             optional=True),
    _setting("engine", "engine", "how the GCP runs: reference (one numpy call per line), "
             "fused (elementwise lines in one pass over cache-sized blocks; needs numba), "
             "auto: fused for large batches once numba has loaded", "auto", str,
             "one of " + ", ".join(ENGINES), choices=ENGINES),
))


@dataclass(frozen=True)
class TrainSettings:
    """How to train: every field is checked when the object is made (see :data:`SETTINGS`)."""

    lr: float = SETTINGS["lr"].default
    tol: float = SETTINGS["tol"].default
    max_iter: int = SETTINGS["max_iter"].default
    init: str = SETTINGS["init"].default
    seed: int = SETTINGS["seed"].default
    optimizer: str = SETTINGS["optimizer"].default
    momentum: float = SETTINGS["momentum"].default
    batch_size: int | None = SETTINGS["batch_size"].default
    engine: str = SETTINGS["engine"].default

    def __post_init__(self) -> None:
        for name, setting in SETTINGS.items():
            # frozen: set the checked (normalized) value the way dataclasses itself does
            object.__setattr__(self, name, setting.check(getattr(self, name)))

    @classmethod
    def of(cls, base: TrainSettings | None = None, **options: Any) -> TrainSettings:
        """``base`` (or the defaults) with ``options`` changed; unknown names are an error.

        >>> TrainSettings.of(lrate=2)
        Traceback (most recent call last):
        ...
        tenflang_nb.core.settings.SettingsError: error: unknown training setting 'lrate' \
(the settings: lr, tol, max_iter, init, seed, optimizer, momentum, batch_size, engine)
        """
        if base is not None:
            check_instance("settings", base, TrainSettings, SETTINGS_ARGUMENT)
        unknown = [k for k in options if k not in SETTINGS]
        if unknown:
            raise SettingsError(f"unknown training setting {unknown[0]!r} "
                                f"(the settings: {', '.join(SETTINGS)})")
        return dataclasses.replace(base or cls(), **options)

    def replace(self, **changes: Any) -> TrainSettings:
        """A copy with ``changes`` (checked)."""
        return TrainSettings.of(self, **changes)
