"""The layout the Guide describes, held to the code: data flows one way through the core, the
core imports no notebook code and no IPython, no module of the package takes part in an
import circle, the notebook's renderers import no model, the Guide's generated tables are
current, and a notebook cell never imports numba."""

from __future__ import annotations

import ast
import subprocess
import sys
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
    "errors", "arguments", "perf", "machine", "formatting", "agreement", "ops", "lexical", "textio",
    "macros", "syntax", "guard", "preprocess", "program", "graph", "examples", "backprop",
    "forward", "hvp", "describe_ops", "edited", "dimensions", "bound", "boundcalls", "plan",
    "engines", "optimizers", "settings",
    "fusedcache", "fusedplan", "fusedverify", "fusedvm", "fusedstages", "fused", "fusedlisting",
    "datafiles.table", "datafiles.checks", "datafiles.blocks", "datafiles.brace",
    "datafiles.csvfiles", "datafiles.original", "datafiles.pyvalues", "datafiles.writers",
    "datafiles.formats", "datafiles", "bindings", "datasets", "boundary", "history", "train",
    "gradcheck",
    "draws",
    "backprop_check.report", "backprop_check.require", "backprop_check.reference",
    "backprop_check.hints.base", "backprop_check.hints.rewritten",
    "backprop_check.hints.shapes", "backprop_check.hints.terms", "backprop_check.hints",
    "backprop_check.student", "backprop_check.blame", "backprop_check",
    "random_programs", "engine_check",
    "grading", "cost", "landscape.geometry", "landscape.evaluation", "landscape.grid",
    "landscape", "curvature", "api",
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


# ------------------------------------------------------------------------------ the package


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts).removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts))]


def _imported(module: str) -> set[str]:
    """The package's modules that ``module`` imports anywhere (at the top, in a function or
    under TYPE_CHECKING), each with the packages Python initialises to import it (those that
    are not already being imported: the importer's own)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                target = ".".join(filter(None, [base, node.module]))
            else:
                target = node.module or ""
            named.update(f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES
                         else target for alias in node.names)
    own = set(_ancestors(module))
    edges = {name for name in named if name in MODULES}
    edges |= {p for name in edges for p in _ancestors(name) if p not in own}
    return edges - {module}


IMPORTS = {module: _imported(module) for module in MODULES}


def _circle() -> list[str] | None:
    """One import circle of the package, as the modules round it (None: there is none)."""
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        if module in path:
            return [*path[path.index(module):], module]
        if module in done:
            return None
        path.append(module)
        for other in sorted(IMPORTS[module]):
            found = visit(other)
            if found:
                return found
        path.pop()
        done.add(module)
        return None

    return next((c for m in sorted(MODULES) if (c := visit(m))), None)


def test_the_import_reading_sees_every_kind_of_import() -> None:
    # a wrong reading would find no circle anywhere: these edges are known to be there
    assert "tenflang_nb.notebook.views.step" in IMPORTS["tenflang_nb.notebook.views"]
    # function-local, and a submodule's package (initialised first)
    assert "tenflang_nb.notebook.panel.widget" in IMPORTS["tenflang_nb.notebook.model"]
    assert "tenflang_nb.notebook.panel" in IMPORTS["tenflang_nb.notebook.model"]
    # under TYPE_CHECKING; ``from . import name`` of a submodule
    assert "tenflang_nb.core.backprop" in IMPORTS["tenflang_nb.notebook.views.base"]
    assert "tenflang_nb.notebook.views.graph" in IMPORTS["tenflang_nb.notebook.views.card"]


def test_no_import_circle_in_the_package() -> None:
    """model -> views -> stepper -> model was one: a module must not need, however
    indirectly, a module that needs it (a circle breaks on import, or only works in the
    order a test happens to import things)."""
    circle = _circle()
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def _reachable(module: str) -> set[str]:
    seen: set[str] = set()
    todo = [module]
    while todo:
        for other in IMPORTS[todo.pop()] - seen:
            seen.add(other)
            todo.append(other)
    return seen


RENDERERS = sorted(m for m in MODULES if m.startswith(("tenflang_nb.notebook.views",
                                                        "tenflang_nb.notebook.figures",
                                                        "tenflang_nb.notebook.panel")))


@pytest.mark.parametrize("module", RENDERERS)
def test_renderers_import_no_model(module: str) -> None:
    """The model computes and hands the views what they show; a renderer (a view, a figure,
    the panel) only reads what it is given, so it needs no model class."""
    assert "tenflang_nb.notebook.model" not in _reachable(module)


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


def test_a_tenflang_cell_never_imports_numba() -> None:
    """numba (the fused engine's: core/fused.py) is imported only for a batch large enough to
    pay for it, never for what a tutorial's cell does: importing it takes 0.3-0.5 s, and
    compiling its loops 9-16 s the first time on a machine."""
    code = (
        "import sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "from tenflang_nb.core.examples import SEED_EXAMPLE\n"
        "ip = InteractiveShell.instance()\n"
        "ip.run_line_magic('load_ext', 'tenflang_nb')\n"
        "ip.user_ns['data'] = {'x': [1.0, -1.0, 2.0], 'y': [0.9, 0.1, 0.95]}\n"
        "cell = '%%tenflang net --show graph,gcp,cost --train data --no-live --max-iter 50 "
        "--landscape\\n' + SEED_EXAMPLE\n"
        "assert ip.run_cell(cell).success\n"
        "net = ip.user_ns['net']\n"
        "net.curvature().top_eigenvalue(); net.gradcheck(); net.landscape_data(resolution=8)\n"
        "print(sorted(m for m in ('numba', 'llvmlite') if m in sys.modules) or 'none')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "none", result.stdout


# the tutorials whose models are small (under a million numbers a pass); 04's digits network
# (1,797 images, about 5 million numbers a pass) is auto's in-between size: with two CPUs, a
# training longer than a second loads numba beside it, as the Guide says
SMALL_NOTEBOOKS = ["01_tour_of_the_three_phases", "02_backprop_by_hand",
                   "03_symbolic_numerical_automatic", "05_exercises", "06_when_training_fails",
                   "07_your_own_engine"]


@pytest.mark.slow
@pytest.mark.parametrize("name", SMALL_NOTEBOOKS)
def test_a_tutorial_with_small_models_never_imports_numba(name: str) -> None:
    """A kernel that runs a whole tutorial (its own kernel, as Jupyter runs it) and never
    trains a large batch never imports numba (0.3-1.5 s and 25-80 MB of resident memory)."""
    import nbformat
    from nbclient import NotebookClient

    path = PACKAGE.parent / "notebooks" / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import sys; print(sorted(m for m in ('numba', 'llvmlite') if m in sys.modules))"))
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    assert "".join(o.get("text", "") for o in nb.cells[-1].outputs).strip() == "[]"
