"""What the student's kernel runs at autograde: the notebook's nbgrader cells (setup, models,
examples, answers, checks) and the cells they need, nothing else.

The kernel's run is feedback only (the grade is computed in the grader's process), and the
feedback that matters is on the student's answers; a tutorial's other cells (06 trains a
dozen models and draws their landscapes) would cost most of the run and tell the student
nothing their own notebook does not. A cell that is no nbgrader cell runs when it sets a name
that a cell which runs later reads (a student's helper, a data set an answer trains on),
found by reading the cells as data, from the last to the first; the others are tagged
:data:`SKIP`, which nbgrader's ``Execute`` skips (``configure`` sets
``c.Execute.skip_cells_with_tag``), and get a note as their output.

>>> cells = ["tf.grading.start('x', graded=[])", "data = load()", "fig = draw(data)",
...          "%%tenflang mine --train data\\ndeclare loss L"]
>>> [needed for needed in needs(cells, graded=[True, False, False, True])]
[True, True, False, True]
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from IPython.core.inputtransformer2 import TransformerManager

__all__ = ["NOTE", "SKIP", "names", "needs"]

SKIP = "tenflang-autograde-skip"  # the tag nbgrader's Execute skips (configure sets it)
NOTE = ("(not run by the autograder: this cell holds no answer and sets nothing an answer "
        "uses; its outputs are in your own notebook)\n")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _receiver(node: ast.expr) -> str | None:
    """``x`` of ``x.a.b(...)``, ``x[k]``, ``x.a``: the object a statement may change."""
    while isinstance(node, ast.Call | ast.Attribute | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _changed(node: ast.AST) -> str | None:
    """``x`` when ``node`` may change it: ``x.a = ...``, ``x[k] = ...``, ``x.train(...)``."""
    if isinstance(node, ast.Attribute | ast.Subscript) and isinstance(node.ctx,
                                                                      ast.Store | ast.Del):
        return _receiver(node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _receiver(node.func)
    return None


def names(source: str) -> tuple[set[str], set[str], set[str]]:
    """(the names a cell sets, the names of objects it may change, the names it reads), read as
    data; a cell that is no Python sets, changes and reads nothing."""
    if source.startswith("%%"):  # a cell magic: its line's words (%%tenflang NAME --train X)
        words = WORD.findall(source.split("\n", 1)[0][2:])
        magic, rest = (words[0], words[1:]) if words else ("", [])
        return ({rest[0]} if magic == "tenflang" and rest else set()), set(), set(rest)
    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set(), set(), set()
    sets: set[str] = set()
    changes: set[str] = set()
    reads: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (sets if isinstance(node.ctx, ast.Store | ast.Del) else reads).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            sets.add(node.name)
        elif isinstance(node, ast.alias):
            sets.add((node.asname or node.name).split(".")[0])
        else:
            receiver = _changed(node)
            if receiver is not None:
                changes.add(receiver)
    return sets, changes, reads


def needs(sources: Sequence[str], graded: Sequence[bool]) -> list[bool]:
    """For each code cell (``sources``, ``graded``: whether it is an nbgrader cell), whether
    the kernel runs it at autograde. Calling a module's function (``tf.load_data(...)``,
    ``np.mean(...)``) changes no module."""
    read = [names(source) for source in sources]
    modules = {alias.asname or alias.name.split(".")[0] for source in sources
               for alias in _imports(source)}
    wanted: set[str] = set()
    runs = [False] * len(sources)
    for i in reversed(range(len(sources))):
        sets, changes, reads = read[i]
        if graded[i] or (sets | (changes - modules)) & wanted:
            runs[i] = True
            wanted |= reads
    return runs


def _imports(source: str) -> list[ast.alias]:
    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [a for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
            for a in node.names]
