"""The Guide's generated tables (operators, training settings, views, data formats) and their
refresher.

Each table in ``docs/guide.md`` sits between ``<!-- BEGIN generated: NAME -->`` and
``<!-- END generated: NAME -->``; a test holds it equal to what the tables in the code say.
After adding an operator, a setting, a view or a data format::

    python -m tenflang_nb.guide docs/guide.md

>>> print(settings_table().splitlines()[2])
| `--lr` | `lr` | learning rate | 0.1 | step size: each update is w <- w - lr * grad |
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from .core.datafiles import FORMATS
from .core.describe_ops import derivative_table, operator_table
from .core.settings import SETTINGS

__all__ = ["TABLES", "datasets_table", "formats_table", "section", "settings_table", "update",
           "views_table"]


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|")  # a bare '|' would end the Markdown cell


def settings_table() -> str:
    """The training settings: option, keyword, meaning, default, help."""
    rows = ["| option | keyword | setting | default | meaning |", "|---|---|---|---|---|"]
    for s in SETTINGS.values():
        default = "whole set" if s.default is None else s.default
        rows.append(f"| `{s.option}` | `{s.name}` | {s.label} | {default} | {_cell(s.help)} |")
    return "\n".join(rows) + "\n"


def views_table() -> str:
    """The notebook views ``--show`` and ``model.show()`` accept."""
    from .notebook.views import VIEWS  # the notebook layer: imported only for this table

    rows = ["| view | shows | default | in `all` | after training |", "|---|---|---|---|---|"]
    for v in VIEWS.values():
        marks = ["yes" if flag else "" for flag in (v.default, v.in_all, v.needs_training)]
        rows.append(f"| `{v.name}` | {_cell(v.description)} | {' | '.join(marks)} |")
    return "\n".join(rows) + "\n"


def formats_table() -> str:
    """The data file formats: how a file is recognised, where ``-o`` writes it, what it holds."""
    rows = ["| format | recognised by | `-o` writes it to | holds |", "|---|---|---|---|"]
    for f in FORMATS.values():
        binary = " (binary)" if f.binary else ""
        rows.append(f"| `{f.name}`{binary} | {f.recognised_by()} | {f.written_to()} | "
                    f"{_cell(f.doc)} |")
    return "\n".join(rows) + "\n"


def datasets_table() -> str:
    """The 2-D data sets of ``tenflang_nb.datasets``."""
    from .core.datasets import DATASETS

    rows = ["| data set | its points (before the noise) |", "|---|---|"]
    rows += [f"| `{d.name}` | {_cell(d.doc)} |" for d in DATASETS.values()]
    return "\n".join(rows) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "operators": operator_table,
    "derivatives": derivative_table,
    "settings": settings_table,
    "views": views_table,
    "formats": formats_table,
    "datasets": datasets_table,
}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- BEGIN generated: {name} -->\n)(.*?)(<!-- END generated: {name} -->)",
                      re.DOTALL)


def section(text: str, name: str) -> str:
    """The generated section ``name`` of the Guide's ``text`` ("" when it has none)."""
    match = _pattern(name).search(text)
    return match.group(2) if match else ""


def update(text: str) -> str:
    """``text`` with every generated section rewritten from the code."""
    for name, make in TABLES.items():
        text = _pattern(name).sub(lambda m, make=make: m.group(1) + make() + m.group(3), text)
    return text


def main(argv: list[str]) -> int:
    for path in map(Path, argv or ["docs/guide.md"]):
        path.write_text(update(path.read_text("utf-8")), "utf-8")
        print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
