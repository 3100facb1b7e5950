"""Re-execute the tutorials and store clean, small outputs (run it after editing one).

    .venv/bin/python notebooks/refresh.py                 # every notebook
    .venv/bin/python notebooks/refresh.py 02_backprop_by_hand.ipynb

Each notebook runs top to bottom in a fresh kernel (in this folder, as Jupyter would run it).
A live training run goes on after its cell, until the kernel is shut down; so that its saved
picture shows a curve (and the same one every time) a last, unsaved cell stops every live run
at iteration :data:`LIVE_STOP_AT`, as if Stop had been pressed there. Then what should not be
committed is removed: the widget state (``metadata.widgets``), the
widget views in outputs (without their state they would show "model not found"; what remains
is each panel's static HTML snapshot), and nbclient's per-cell timings. A ``%%tenflang`` cell
is marked as TenFlang (``metadata.magics_language``: nbconvert's exports then highlight its
body with the TenFlang lexer, not only its magic line as IPython's lexer does). Then check it
with ``pytest tests/test_notebooks_clean.py`` and nbval (see scripts/test).
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from tenflang_nb.lexer import MAGIC_LINE_PATTERN

HERE = Path(__file__).resolve().parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# the cell metadata nbconvert's highlight filter reads (its HighlightMagicsPreprocessor sets
# it for the magics it is configured with): the Pygments lexer of the cell's text
MAGICS_LANGUAGE = ("magics_language", "tenflang")
LIVE_STOP_AT = 10_000
STOP_LIVE_RUNS = ("from tenflang_nb.notebook.panel import stop_live_runs\n"
                  f"stop_live_runs(at_iteration={LIVE_STOP_AT});")


def clean(nb: dict) -> dict:
    """Drop widget state and views, and execution timings, from a notebook (in place); mark
    the TenFlang cells as such."""
    nb["metadata"].pop("widgets", None)
    for cell in nb["cells"]:
        cell["metadata"].pop("execution", None)
        if cell["cell_type"] == "code" and re.match(MAGIC_LINE_PATTERN, cell["source"]):
            cell["metadata"][MAGICS_LANGUAGE[0]] = MAGICS_LANGUAGE[1]
        for output in cell.get("outputs", []):
            output.get("data", {}).pop(WIDGET_VIEW, None)
            output.get("metadata", {}).pop(WIDGET_VIEW, None)
    return nb


def refresh(path: Path, timeout: int = 300) -> float:
    """Execute ``path`` in place and clean it; returns the seconds it took."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    # run in the same kernel, after the last cell; its picture updates reach the live cells
    nb.cells.append(nbformat.v4.new_code_cell(STOP_LIVE_RUNS))
    started = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    elapsed = time.perf_counter() - started
    nb.cells.pop()
    nbformat.write(clean(nb), path)
    return elapsed


def main(argv: list[str]) -> int:
    names = argv or sorted(p.name for p in HERE.glob("[0-9]*.ipynb"))
    for name in names:
        seconds = refresh(HERE / name)
        print(f"{name}: executed in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
