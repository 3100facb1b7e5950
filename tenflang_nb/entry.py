"""The console scripts' entry points: light, so that Ctrl-C while a command starts up (numpy
is being imported) ends it like Ctrl-C later on: a one-line message and exit status 130,
never a traceback.

>>> import sys
>>> "numpy" in sys.modules or "tenflang_nb.cli" not in sys.modules
True
"""

from __future__ import annotations

import sys

__all__ = ["compiler_main", "evaluate_main", "weightcalc_main"]


def _start(name: str, prog: str, argv: list[str] | None) -> int:
    try:
        from . import cli  # the heavy imports happen here

        main = getattr(cli, name)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    return int(main(argv))


def compiler_main(argv: list[str] | None = None) -> int:
    """``tfcompiler``."""
    return _start("compiler_main", "tfcompiler", argv)


def weightcalc_main(argv: list[str] | None = None) -> int:
    """``tfweightcalc``."""
    return _start("weightcalc_main", "tfweightcalc", argv)


def evaluate_main(argv: list[str] | None = None) -> int:
    """``tfevaluate``."""
    return _start("evaluate_main", "tfevaluate", argv)
