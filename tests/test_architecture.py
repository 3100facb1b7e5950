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
# listed before it: nothing reaches back up the chain. A package of the core ("datafiles")
# is its submodules ("datafiles.brace", in the order they use each other) then its
# __init__, all at the package's place.
FLOW = [
    "errors", "arguments", "perf", "formatting", "ops", "lexical", "textio", "macros", "syntax",
    "preprocess", "program", "graph", "examples", "backprop", "forward", "describe_ops", "plan",
    "optimizers", "settings",
    "datafiles.table", "datafiles.checks", "datafiles.blocks", "datafiles.brace",
    "datafiles.csvfiles", "datafiles.original", "datafiles.pyvalues", "datafiles.writers",
    "datafiles.formats", "datafiles", "bindings", "train", "gradcheck", "draws",
    "backprop_check.report", "backprop_check.require", "backprop_check.reference",
    "backprop_check.student", "backprop_check.hints", "backprop_check.blame", "backprop_check",
    "cost", "landscape.geometry", "landscape.evaluation", "landscape.grid", "landscape", "api",
]
CORE = PACKAGE / "core"


def _path(module: str) -> Path:
    """The file of a core module: core/x.py, core/pkg/__init__.py or core/pkg/sub.py."""
    path = CORE.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _relative_imports(module: str) -> set[str]:
    """What ``module``'s relative imports name, as dotted paths from tenflang_nb.core
    ("datafiles.table", "errors"); "<parent package>" for anything above the core."""
    package = module.split(".") if _path(module).name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(_path(module).read_text("utf-8"))):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        if node.level - 1 > len(package):
            found.add("<parent package>")
            continue
        base = package[:len(package) - (node.level - 1)]
        if node.module:
            found.add(".".join([*base, *node.module.split(".")]))
        else:
            found.update(".".join([*base, alias.name]) for alias in node.names)
    return found


def _package_imports(module: str) -> set[str]:
    """The modules of tenflang_nb.core that ``module`` imports (as named in FLOW: the
    longest FLOW entry an import's dotted path starts with)."""
    found: set[str] = set()
    for name in _relative_imports(module) - {"<parent package>"}:
        parts = name.split(".")
        found.add(next((".".join(parts[:k]) for k in range(len(parts), 0, -1)
                        if ".".join(parts[:k]) in FLOW), name))
    return found


def _all_imports(module: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(_path(module).read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names | (_relative_imports(module) & {"<parent package>"})


def test_every_core_module_has_its_place_in_the_flow() -> None:
    modules = {".".join(p.relative_to(CORE).with_suffix("").parts).removesuffix(".__init__")
               for p in CORE.rglob("*.py")} - {"__init__"}
    assert modules == set(FLOW)


def test_the_flow_check_understands_packages() -> None:
    # the checks below read a package's relative imports right (a wrong reading would let
    # anything through)
    assert _package_imports("datafiles.brace") >= {"errors", "datafiles.table",
                                                   "datafiles.blocks"}
    assert "datafiles.writers" in _package_imports("datafiles")
    assert "datafiles" in _package_imports("bindings")


@pytest.mark.parametrize("module", FLOW)
def test_core_modules_import_only_what_comes_before_them(module: str) -> None:
    allowed = set(FLOW[:FLOW.index(module)])
    imported = _package_imports(module)
    assert imported <= allowed, f"core/{module} reaches forward to {imported - allowed}"


@pytest.mark.parametrize("module", FLOW)
def test_the_core_imports_neither_ipython_nor_the_notebook_layer(module: str) -> None:
    imported = _all_imports(module)
    assert not imported & {"IPython", "ipywidgets", "matplotlib", "graphviz",
                           "<parent package>"}, imported


def test_the_guide_lists_every_core_module() -> None:
    text = GUIDE.read_text("utf-8")
    for module in FLOW:
        package, _, sub = module.rpartition(".")
        if package:  # a package's row names its submodules
            rows = [line for line in text.splitlines() if f"`{package}`" in line]
            assert any(f"`{sub}`" in row for row in rows), \
                f"the Guide's row for {package} misses core/{package}/{sub}.py"
        else:
            assert f"`{module}`" in text, f"the Guide's architecture section misses core/{module}"


@pytest.mark.parametrize("table", list(guide.TABLES))
def test_the_guides_generated_tables_are_current(table: str) -> None:
    """The operator, settings and views tables are generated: run
    ``python -m tenflang_nb.guide docs/guide.md`` after changing one of their sources."""
    assert guide.section(GUIDE.read_text("utf-8"), table) == guide.TABLES[table]()


def test_the_operator_tables_are_the_ones_tfcompiler_lists() -> None:
    from tenflang_nb.core.describe_ops import describe_operators

    text = GUIDE.read_text("utf-8")
    listed = guide.section(text, "operators") + "\n" + guide.section(text, "derivatives")
    assert listed == describe_operators()
