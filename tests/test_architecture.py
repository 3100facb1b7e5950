"""The layout the Guide describes, held to the code: data flows one way through the core, the
core imports no notebook code and no IPython, and the Guide's generated tables are current."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tenflang_nb import guide

PACKAGE = Path(__file__).resolve().parents[1] / "tenflang_nb"
GUIDE = PACKAGE.parent / "docs" / "guide.md"

# The core's modules in the order data flows through them (text -> program -> graph -> GCP
# -> plan -> results), each after everything it may use. A module may import only modules
# listed before it: nothing reaches back up the chain.
FLOW = [
    "errors", "perf", "ops", "lexical", "textio", "macros", "syntax", "preprocess",
    "program", "graph", "examples", "backprop", "forward", "plan", "optimizers", "settings",
    "datafiles", "bindings", "train", "gradcheck", "backprop_check", "cost", "landscape", "api",
]


def _package_imports(path: Path) -> set[str]:
    """The sibling modules of tenflang_nb.core that ``path`` imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return found


def _all_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level >= 2:
            names.add("<parent package>")
    return names


def test_every_core_module_has_its_place_in_the_flow() -> None:
    modules = {p.stem for p in (PACKAGE / "core").glob("*.py")} - {"__init__"}
    assert modules == set(FLOW)


@pytest.mark.parametrize("module", FLOW)
def test_core_modules_import_only_what_comes_before_them(module: str) -> None:
    allowed = set(FLOW[:FLOW.index(module)])
    imported = _package_imports(PACKAGE / "core" / f"{module}.py")
    assert imported <= allowed, f"core/{module}.py reaches forward to {imported - allowed}"


@pytest.mark.parametrize("module", FLOW)
def test_the_core_imports_neither_ipython_nor_the_notebook_layer(module: str) -> None:
    imported = _all_imports(PACKAGE / "core" / f"{module}.py")
    assert not imported & {"IPython", "ipywidgets", "matplotlib", "graphviz",
                           "<parent package>"}, imported


def test_the_guide_lists_every_core_module() -> None:
    text = GUIDE.read_text("utf-8")
    for module in FLOW:
        assert f"`{module}`" in text, f"the Guide's architecture section misses core/{module}.py"


@pytest.mark.parametrize("table", list(guide.TABLES))
def test_the_guides_generated_tables_are_current(table: str) -> None:
    """The operator, settings and views tables are generated: run
    ``python -m tenflang_nb.guide docs/guide.md`` after changing one of their sources."""
    assert guide.section(GUIDE.read_text("utf-8"), table) == guide.TABLES[table]()


def test_the_operator_table_is_the_one_tfcompiler_lists() -> None:
    from tenflang_nb.core.ops import describe_operators

    assert guide.section(GUIDE.read_text("utf-8"), "operators") == describe_operators()
