"""The numbers the tutorials' prose quotes from a stored output are the stored output's.

The convention: a number in a markdown cell that quotes what a code cell above it printed
carries an HTML comment right after it (invisible when rendered): ``0.29<!--out-->`` quotes a
printed ``0.29`` exactly; ``about 93<!--out 92.94-->`` quotes the printed ``92.94`` rounded to
the digits the prose gives. A refresh that changes a printed number then fails here, naming
the cell whose text still says the old one.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9]*.ipynb"))
NUMBER = r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?"
QUOTE = re.compile(rf"({NUMBER})\s*<!--\s*out(?:\s+({NUMBER}))?\s*-->")


def _source(cell: dict[str, Any]) -> str:
    return "".join(cell["source"])


def _printed(cell: dict[str, Any]) -> str:
    text = []
    for output in cell.get("outputs", []):
        text.append("".join(output.get("text", "")))
        text.append("".join(output.get("data", {}).get("text/plain", "")))
    return "\n".join(text)


def _significant_round(value: float, like: str) -> float:
    """``value`` rounded to as many decimals as ``like`` shows (significant digits for a
    whole number written with trailing zeros, as "100")."""
    if "e" in like or "." in like:
        decimals = len(like.split("e")[0].split(".")[1]) if "." in like.split("e")[0] else 0
        return round(value, decimals) if "e" not in like else float(f"{value:.{decimals}e}")
    digits = len(like.lstrip("-").rstrip("0")) or 1
    magnitude = math.floor(math.log10(abs(value))) if value else 0
    return round(value, digits - 1 - magnitude)


def quotes(nb: dict[str, Any]) -> list[tuple[int, str, str, str]]:
    """(cell, prose number, printed number, everything printed above) for every quote."""
    found, printed = [], ""
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            printed += "\n" + _printed(cell)
            continue
        for match in QUOTE.finditer(_source(cell)):
            found.append((i, match.group(1), match.group(2) or match.group(1), printed))
    return found


def test_the_convention() -> None:
    nb = {"cells": [{"cell_type": "code", "source": "", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": "w = 92.94, loss 0.29\n"}]},
        {"cell_type": "markdown", "source": "about 93<!--out 92.94--> and 0.29<!--out-->"}]}
    assert [(p, v) for _, p, v, _ in quotes(nb)] == [("93", "92.94"), ("0.29", "0.29")]
    assert _significant_round(97, "100") == 100 and _significant_round(92.94, "93") == 93
    assert _significant_round(6154239.9, "6.2e+06") == 6.2e6


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_quoted_number_is_the_stored_outputs(path: Path) -> None:
    nb = json.loads(path.read_text("utf-8"))
    for cell, prose, value, printed in quotes(nb):
        tokens = re.findall(rf"(?<![\w.]){NUMBER}(?![\w])", printed)
        assert value in tokens, (f"{path.name} cell {cell}: the prose quotes {value}, which no "
                                 "output above it prints")
        assert _significant_round(float(value), prose) == float(prose), (
            f"{path.name} cell {cell}: {prose} is not {value} rounded")


def test_the_quotes_the_lecturer_found_are_held() -> None:
    nb = json.loads((REPO / "notebooks" / "06_when_training_fails.ipynb").read_text("utf-8"))
    held = {prose for _, prose, _, _ in quotes(nb)}
    assert {"0.29", "6.2e+06", "0.168", "16", "93", "100"} <= held
