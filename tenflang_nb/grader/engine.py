"""An engine's functions (notebook 07) checked with the verdict computed here, in the
autograder's process, and the functions run in another: a fresh Python
(``python -I -m tenflang_nb.grader.engine_child``, inside the sandbox's command when there is
one) that holds their text (the ``def`` statements of the answer cells, nothing the cells ran
around them) and the engine's tools, and none of the package's compilers (see
:mod:`.engine_child`). The check (``core.engine_check``) runs here and calls the functions
through :class:`Engine`: each call's arguments go to the child as data, what the function
returned (or raised) comes back as data. Nothing the child says is a verdict, and nothing in
it can compute one."""

from __future__ import annotations

import ast
import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from typing import Any

from ..core.engine_check import RaisedElsewhere, check_engine
from ..core.graph import Step
from ..core.guard import allow
from ..core.program import Program

__all__ = ["TIMEOUT", "Engine", "engine_verdict", "functions_of"]

TIMEOUT = 120  # seconds a check of the student's functions may take
FILE = "<your answer cells>"


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


class Stopped(BaseException):  # not an exception of their code: the check ends
    """The process running the functions stopped, or took too long (the message says)."""


class Shown:
    """A value that is no number, as the child showed it (its repr)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _program_text(program: Program) -> str:
    return "\n".join(str(s) for s in program.statements) + "\n"


def _encode(value: Any) -> Any:
    if isinstance(value, Program):
        return {"program": _program_text(value)}
    if isinstance(value, Step):
        return {"step": [value.target, value.op, list(value.operands), value.line]}
    if isinstance(value, dict):
        return {"dict": [[k, float(v)] for k, v in value.items()]}
    return value


def _decode(value: Any) -> Any:
    if not isinstance(value, dict):
        return None
    if "dict" in value:
        return {k: Shown(v["repr"]) if isinstance(v, dict) else v for k, v in value["dict"]}
    # not a mapping: an object of the type the function returned, as the check shows it
    return type(str(value.get("type", "object")), (Shown,), {})(str(value.get("repr", "")))


class Engine:
    """The student's functions ``text``, defined in a fresh process (started by the command
    prefix ``sandbox``), called from here; :meth:`close` (or ``with``) ends it."""

    def __init__(self, text: str, sandbox: Sequence[str] = (), timeout: float = TIMEOUT
                 ) -> None:
        self.text, self.sandbox, self.timeout = text, tuple(sandbox), timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.defined: dict[str, str] = {}
        self.error = ""
        self._buffer = b""
        self._deadline = 0.0
        self._errors = tempfile.TemporaryFile()
        self._where = tempfile.TemporaryDirectory(prefix="tenflang-engine-")

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def begin(self) -> None:
        """A check begins: its time starts now; the process is started (and the functions
        defined) unless it runs already."""
        self._deadline = time.monotonic() + self.timeout
        if self.process is not None and self.process.poll() is None:
            return
        self.close_process()
        self.process = subprocess.Popen(
            [*self.sandbox, sys.executable, "-I", "-m", "tenflang_nb.grader.engine_child"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errors,
            cwd=self._where.name)
        answer = self._ask({"define": self.text})
        self.defined = dict(answer.get("defined", {}))
        self.error = str(answer.get("error", ""))

    def function(self, name: str) -> Any:
        """What the check calls for the student's ``name`` (None: not defined)."""
        kind = self.defined.get(name)
        if kind is None:
            return None
        if kind != "function":
            return type(kind, (Shown,), {})(kind)
        return lambda *args: self.call(name, *args)

    def call(self, name: str, *args: Any) -> Any:
        """``name(*args)`` in the process; dicts among ``args`` are changed in place as the
        function changed them there."""
        answer = self._ask({"call": name, "args": [_encode(a) for a in args]})
        for what in answer.get("asked") or []:  # the check, switched off, says what it was
            allow(str(what))
        if answer.get("raised"):
            r = answer["raised"]
            frame = (traceback.FrameSummary(FILE, r["line"], r.get("inside") or name,
                                            lookup_line=False, line=r.get("text") or "")
                     if r.get("line") else None)
            raise RaisedElsewhere(str(r["type"]), str(r["message"]), frame, r.get("inside"))
        for arg, after in zip(args, answer.get("after") or [], strict=False):
            if isinstance(arg, dict) and isinstance(after, dict) and "dict" in after:
                arg.clear()
                arg.update(_decode(after))
        return _decode(answer.get("result"))

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        process = self.process
        if process is None or process.stdin is None or process.stdout is None:
            raise Stopped("the process running your functions is not started")
        try:
            process.stdin.write((json.dumps(request) + "\n").encode())
            process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise Stopped(self._why_stopped()) from None
        fd = process.stdout.fileno()
        with selectors.DefaultSelector() as chosen:
            chosen.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = self._deadline - time.monotonic()
                if left <= 0 or not chosen.select(left):
                    self.close_process()
                    raise Stopped(f"the check took longer than {self.timeout:g} s (an endless "
                                  "loop?)")
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise Stopped(self._why_stopped())
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise Stopped("the process running your functions answered something else")
        return answer

    def _why_stopped(self) -> str:
        process = self.process
        status = process.wait(10) if process is not None else None
        self._errors.seek(0)
        said = self._errors.read().decode(errors="replace").strip()[-300:]
        return (f"the process running your functions stopped (exit status {status})"
                + (f": {said}" if said else ""))

    def close_process(self) -> None:
        process, self.process = self.process, None
        self._buffer = b""
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()

    def close(self) -> None:
        self.close_process()
        self._errors.close()
        self._where.cleanup()


def engine_verdict(name: str, sources: Sequence[str], seed: int, programs: int, *,
                   sandbox: Sequence[str] = (), engine: Engine | None = None
                   ) -> tuple[bool, str]:
    """``(ok, verdict)`` of the engine's function ``name`` defined in the cells ``sources``,
    checked here on ``programs`` programs drawn from ``seed``, the functions run in a fresh
    process (``engine``'s, or one started by the command prefix ``sandbox``)."""
    own = engine is None
    if engine is None:
        engine = Engine(functions_of(sources), sandbox)
    try:
        try:
            engine.begin()
        except Stopped as why:
            return False, f"✗ {name}: {why}"
        if engine.error:
            return False, f"✗ {name}: defining your functions failed: {engine.error}"
        try:
            result = check_engine(name, engine.function(name), seed, programs)
        except Stopped as why:
            return False, f"✗ {name}: {why}"
        return result.ok, result.text
    finally:
        if own:
            engine.close()
