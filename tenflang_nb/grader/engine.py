"""An engine's functions (notebook 07) checked in a fresh Python process that holds nothing
but them: their text, taken from the answer cells (the ``def`` statements only, nothing the
cells ran around them), run by ``python -I -m tenflang_nb.grader.engine_child`` (isolated:
no working directory or user site on its path), inside the sandbox's command when there is
one. The child answers with the check's verdict on its last line, as JSON after a token the
parent drew for this run (a line the functions print is no verdict; code that digs the token
out of the child's memory could forge one: what a teacher reads in the submission)."""

from __future__ import annotations

import ast
import json
import secrets
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
    # the verdict's line starts with a token the functions' text cannot know in advance
    token = secrets.token_hex(16)
    request = json.dumps({"functions": functions_of(sources), "name": name, "seed": seed,
                          "programs": programs, "token": token})
    with tempfile.TemporaryDirectory(prefix="tenflang-engine-") as where:
        try:
            done = subprocess.run([*sandbox, sys.executable, "-I", "-m",
                                   "tenflang_nb.grader.engine_child"], input=request,
                                  capture_output=True, text=True, timeout=TIMEOUT, cwd=where)
        except subprocess.TimeoutExpired:
            return False, f"✗ {name}: the check took longer than {TIMEOUT} s (an endless loop?)"
    lines = done.stdout.strip().splitlines()
    try:
        mark, _, verdict = lines[-1].partition(" ")
        if mark != token or done.returncode != 0:
            raise ValueError("not the check's verdict")
        answer = json.loads(verdict)
        return bool(answer["ok"]), str(answer["text"])
    except (IndexError, ValueError, KeyError, TypeError):
        return False, (f"✗ {name}: the check of your functions stopped (exit status "
                       f"{done.returncode}) before its verdict: {done.stderr.strip()[-300:]}")
