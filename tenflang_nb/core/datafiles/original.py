"""The original 2016 format: ``name<TAB>value`` lines that together form ONE record."""

from __future__ import annotations

import re

import numpy as np

from ..errors import TenFlangError
from ..lexical import is_nonfinite_word, is_null, matches_name
from .blocks import _Source
from .checks import _bad_name, _number_problem
from .table import DataTable


def _sniff_original(head: str) -> bool:
    # two items, no comma, and a tab between them (the 2016 format's separator: no CSV
    # header holds one) or a value: then the reader says what is wrong with the value, where
    # a CSV reader would call the line a bad header. ("x y" stays a CSV header gone wrong.)
    stripped = head.strip()
    tokens = stripped.split()
    return len(tokens) == 2 and "," not in stripped and (
        "\t" in stripped or _looks_numeric(tokens[1]))


def _looks_numeric(token: str) -> bool:
    # a number (in any script's digits: the reader rejects those), or a word a reader
    # takes for a value (inf, null)
    return (token[0] in "+-." or token[0].isdigit() or is_nonfinite_word(token)
            or is_null(token))


def _parse_original(source: _Source, file: str) -> DataTable:
    first_line: dict[str, int] = {}
    values: dict[str, float] = {}
    for lineno, line in source.significant():
        tokens = [(m.group(), m.start()) for m in re.finditer(r"\S+", line)]
        if len(tokens) != 2:
            col = tokens[2][1] if len(tokens) > 2 else len(line.rstrip())
            raise TenFlangError.at(
                "expected a name and a number separated by a tab or spaces "
                f"(found {len(tokens)} item{'s' if len(tokens) != 1 else ''})",
                file=file, line=lineno, column=col, source=line,
            )
        (name, ncol), (text, vcol) = tokens
        if not matches_name(name):
            raise TenFlangError.at(
                _bad_name(name), file=file, line=lineno, column=ncol, length=len(name),
                source=line,
            )
        if name in first_line:
            raise TenFlangError.at(
                f"{name!r} given twice (first on line {first_line[name]})",
                file=file, line=lineno, column=ncol, length=len(name), source=line,
            )
        problem = _number_problem(name, text)
        if problem:
            hint = ("this format has no null: leave the line out (an exp_output the file does "
                    "not give is null)") if is_null(text) else None
            raise TenFlangError.at(problem, file=file, line=lineno, column=vcol,
                                   length=len(text), source=line, hint=hint)
        first_line[name] = lineno
        values[name] = float(text)
    names = list(values)
    return DataTable(
        file,
        names,
        {n: np.array([values[n]]) for n in names},
        {n: np.ones(1, dtype=bool) for n in names},
        np.array([source.head[0]]),
        {n: np.zeros(1, dtype=bool) for n in names},
    )
