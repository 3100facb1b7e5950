"""The committed tutorials are clean: small stored outputs, no widget state, no errors, a
python3 kernelspec, live-training cells tagged for nbval, and a sanitizer file nbval can read.

Regenerate the outputs with ``.venv/bin/python notebooks/refresh.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tenflang_nb.lexer import MAGIC_LINE_PATTERN, css_class

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
REQUIRED = (
    "01_tour_of_the_three_phases.ipynb",
    "02_backprop_by_hand.ipynb",
    "03_symbolic_numerical_automatic.ipynb",
    "04_digits_classifier.ipynb",
    "05_exercises.ipynb",
    "06_when_training_fails.ipynb",
    "07_your_own_engine.ipynb",
)
MAX_OUTPUT_BYTES = 200_000
MAX_NOTEBOOK_BYTES = 1_000_000
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
IGNORE_OUTPUT = "nbval-ignore-output"
REFRESH = "rerun: .venv/bin/python notebooks/refresh.py"

ALL = sorted(NOTEBOOKS.glob("*.ipynb"))


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text("utf-8"))


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _tags(cell: dict[str, Any]) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def is_live_training(source: str) -> bool:
    """True when running the cell starts training that goes on after the cell returns.

    >>> is_live_training("%%tenflang m --train data\\ndeclare weight w")
    True
    >>> is_live_training("%%tenflang m --train data --no-live\\ndeclare weight w")
    False
    >>> is_live_training("panel = m.training_panel(d)\\npanel.start()")
    True
    """
    first = source.lstrip().splitlines()[0] if source.strip() else ""
    if first.startswith("%%tenflang") and re.search(r"\s--train\b", first):
        return not re.search(r"\s--no-live\b", first)
    return bool(re.search(r"\.start\(\s*\)|\bstart_live\(|\.training_panel\(", source)
                and "live=False" not in source)


def test_the_tutorials_are_there() -> None:
    missing = [name for name in REQUIRED if not (NOTEBOOKS / name).is_file()]
    assert not missing, f"missing notebooks: {missing}"


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
class TestNotebook:
    def test_kernelspec_is_python3(self, path: Path) -> None:
        spec = _load(path)["metadata"].get("kernelspec", {})
        assert spec.get("name") == "python3", f"kernelspec {spec!r}"
        assert spec.get("language") == "python"

    def test_no_widget_state(self, path: Path) -> None:
        nb = _load(path)
        assert "widgets" not in nb["metadata"], f"widget state in the metadata; {REFRESH}"
        views = [i for i, cell in enumerate(nb["cells"])
                 for out in cell.get("outputs", []) if WIDGET_VIEW in out.get("data", {})]
        # without their state these show "Error displaying widget: model not found"
        assert not views, f"widget views stored in cells {views}; {REFRESH}"

    def test_outputs_are_small(self, path: Path) -> None:
        assert path.stat().st_size <= MAX_NOTEBOOK_BYTES, f"{path.name} is too big; {REFRESH}"
        for i, cell in enumerate(_load(path)["cells"]):
            for out in cell.get("outputs", []):
                size = len(json.dumps(out))
                assert size <= MAX_OUTPUT_BYTES, f"cell {i}: an output of {size} bytes"

    def test_ran_top_to_bottom_without_errors(self, path: Path) -> None:
        code = [c for c in _load(path)["cells"] if c["cell_type"] == "code"]
        counts = [c.get("execution_count") for c in code]
        assert counts == list(range(1, len(code) + 1)), \
            f"execution counts {counts}: not one clean run from the top; {REFRESH}"
        for i, cell in enumerate(code):
            for out in cell.get("outputs", []):
                assert out["output_type"] != "error", \
                    f"code cell {i} stored an error: {out.get('ename')}: {out.get('evalue')}"
                if out["output_type"] == "stream":
                    assert out["name"] == "stdout", \
                        f"code cell {i} wrote to stderr: {''.join(out['text'])[:300]}"

    def test_live_training_cells_are_tagged(self, path: Path) -> None:
        for i, cell in enumerate(_load(path)["cells"]):
            if cell["cell_type"] == "code" and is_live_training(_source(cell)):
                assert IGNORE_OUTPUT in _tags(cell), \
                    f"cell {i} trains live: tag it {IGNORE_OUTPUT!r}"

    def test_magic_cells_carry_no_nbval_comments(self, path: Path) -> None:
        # a '# NBVAL_...' line above %%tenflang stops it being a cell magic: use cell tags
        for i, cell in enumerate(_load(path)["cells"]):
            source = _source(cell)
            if cell["cell_type"] == "code" and "%%tenflang" in source:
                assert source.lstrip().startswith("%%tenflang"), \
                    f"cell {i}: %%tenflang must be the cell's first line"


    def test_tenflang_cells_say_their_language(self, path: Path) -> None:
        """nbconvert's exports highlight a cell marked so with the TenFlang lexer, its body
        too (IPython's lexer colours only a cell magic's first line)."""
        for i, cell in enumerate(_load(path)["cells"]):
            if cell["cell_type"] == "code" and re.match(MAGIC_LINE_PATTERN, _source(cell)):
                assert cell["metadata"].get("magics_language") == "tenflang", \
                    f"cell {i} is TenFlang, but not marked so; {REFRESH}"


def test_an_export_highlights_a_tenflang_cells_body() -> None:
    """What the marked cells are for: nbconvert's HTML shows the body's kinds, operators..."""
    nbconvert = pytest.importorskip("nbconvert")
    import nbformat

    cell = nbformat.v4.new_code_cell("%%tenflang net\ndeclare input x\ndefine y = mul x x")
    nb = nbformat.v4.new_notebook(cells=[cell], metadata={
        "language_info": {"name": "python", "pygments_lexer": "ipython3"}})
    exporter = nbconvert.HTMLExporter(template_name="lab")
    plain, _ = exporter.from_notebook_node(nb)
    cell.metadata["magics_language"] = "tenflang"
    marked, _ = exporter.from_notebook_node(nb)
    for category, word in (("kind", "input"), ("operator", "mul"), ("magic", "%%tenflang")):
        span = f'<span class="{css_class(category).split("-")[0]} {css_class(category)}">{word}'
        assert span in marked and span not in plain, category


def test_sanitizer_file() -> None:
    """nbval reads 'regex:'/'replace:' pairs; every regex compiles and does its job."""
    from nbval.plugin import get_sanitize_patterns

    patterns = get_sanitize_patterns((NOTEBOOKS / "sanitize.cfg").read_text("utf-8"))
    assert len(patterns) >= 4

    def sanitize(text: str) -> str:
        for regex, replace in patterns:
            text = re.sub(regex, replace, text)
        return text

    svg_a = '<div id="tfnb0123456789"><svg width="8pt">\n<g id="node1"/></svg></div>'
    svg_b = '<div id="tfnbabcdefabcd"><svg width="9pt">\n<g id="node2"/></svg></div>'
    assert sanitize(svg_a) == sanitize(svg_b)
    assert sanitize("<object at 0x7f3a2b1c0d90>") == sanitize("<object at 0x55d0c0ffee00>")
    png = "<img src='data:image/png;base64,iVBORw0KGgo+/AAA='/>"
    assert sanitize(png) == sanitize("<img src='data:image/png;base64,QUJD'/>")
    assert sanitize("w = 1.697") == "w = 1.697", "numbers that matter must survive"
    # the embedded stylesheet and scripts are the package's, not the cell's: a stored output
    # stays equal when they change; the stepper's steps (a script with a type) still count
    from tenflang_nb.notebook.views.html import page, static_text

    old = page("<b>x</b>", "tfnb0123456789")
    new = old.replace(static_text("tenflang.css"), "/* TenFlang notebook views. */ p {}") \
        .replace("(function (root) {", "(function (root) { var changed;")
    assert old != new and sanitize(old) == sanitize(new)
    data = '<script type="application/json" class="tf-step-data">{"v": "%s"}</script>'
    assert sanitize(data % "0.25") != sanitize(data % "0.5")
