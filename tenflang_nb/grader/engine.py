"""An engine's functions (notebook 07) checked in a fresh Python process that holds nothing
but them: their text, taken from the answer cells (the ``def`` statements only, nothing the
cells ran around them), run by ``python -I -m tenflang_nb.grader.engine_child`` (isolated:
no working directory or user site on its path), inside the sandbox's command when there is
one. The child answers with the check's verdict on its last line, as JSON."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence

__all__ = ["TIMEOUT", "engine_verdict", "functions_of"]

TIMEOUT = 120  # seconds a check of the student's functions may take


def functions_of(sources: Sequence[str]) -> str:
    """The top-level ``def`` statements of ``sources`` (cells), in order, as text."""
    found = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue  # the check says the function is not defined
        found += [ast.get_source_segment(source, node) or "" for node in tree.body
                  if isinstance(node, ast.FunctionDef)]
    return "\n\n".join(found)


def engine_verdict(name: str, sources: Sequence[str], seed: int, programs: int, *,
                   sandbox: Sequence[str] = ()) -> tuple[bool, str]:
    """``(ok, verdict)`` of the engine's function ``name`` defined in the cells ``sources``,
    checked on ``programs`` programs drawn from ``seed`` in a fresh process (started by the
    command prefix ``sandbox`` when given)."""
    request = json.dumps({"functions": functions_of(sources), "name": name, "seed": seed,
                          "programs": programs})
    with tempfile.TemporaryDirectory(prefix="tenflang-engine-") as where:
        try:
            done = subprocess.run([*sandbox, sys.executable, "-I", "-m",
                                   "tenflang_nb.grader.engine_child"], input=request,
                                  capture_output=True, text=True, timeout=TIMEOUT, cwd=where)
        except subprocess.TimeoutExpired:
            return False, f"✗ {name}: the check took longer than {TIMEOUT} s (an endless loop?)"
    lines = done.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1])
        return bool(answer["ok"]), str(answer["text"])
    except (IndexError, ValueError, KeyError, TypeError):
        return False, (f"✗ {name}: the check of your functions stopped (exit status "
                       f"{done.returncode}) before its verdict: {done.stderr.strip()[-300:]}")
