"""The process the autograder runs a student's engine (notebook 07) in: it defines their
functions and runs them on the arguments the autograder sends, and answers with what they
returned, as data. It judges nothing (the verdict is the autograder's, in its own process)
and holds none of the package's compilers or interpreter: ``tf`` here is the engine's tools
alone (``tf.steps``, ``tf.ops``, ``tf.parse``), and once the student's code is defined an
audit hook, which nothing can remove, refuses to load a module, compile or run code, open a
file or start a process, so a compiler cannot be brought in by any route.

The protocol, one JSON object a line: the first request ``{"define": TEXT}`` (answered
``{"defined": {NAME: TYPE}}`` or ``{"error": ...}``), then ``{"call": NAME, "args": [...]}``
(answered ``{"result": ..., "after": [...], "raised": ...}``); see :mod:`.engine`.
"""

from __future__ import annotations

import builtins
import json
import linecache
import math
import os
import sys
import traceback
from collections.abc import Mapping
from types import CodeType
from typing import Any

import numpy as np

from tenflang_nb.core import ops
from tenflang_nb.core.agreement import real_number
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.graph import Step, steps
from tenflang_nb.core.program import Program, parse

FILE = "<your answer cells>"
# what this process must never hold: the package's compilers, its interpreter, their switch
COMPILERS = ("tenflang_nb.core.api", "tenflang_nb.core.backprop", "tenflang_nb.core.plan",
             "tenflang_nb.core.guard", "tenflang_nb.core.engine_check")
MOST = 100_000  # entries of a result sent back
# what a sealed process refuses (audit events; a prefix ends with "."): loading or compiling
# code, files, processes, the network, raw memory
REFUSED = ("import", "compile", "exec", "marshal.", "open", "code.__new__", "function.__new__",
           "ctypes.", "os.", "subprocess.", "socket.", "shutil.", "pty.", "_posixsubprocess.",
           "pickle.find_class", "sys.settrace", "sys.setprofile", "sys.addaudithook",
           "cpython.", "mmap.", "winreg.", "webbrowser.", "urllib.", "http.", "ftplib.")


ASKED: list[str] = []  # what the current call asked of the package's (the check says so)


def _asked(name: str) -> str:
    """What asking for ``name`` (a module, a ``tf.`` attribute) is, as the check says it."""
    running = ("plan", "interpret", "evaluate", "train", "fused", "run")
    return ("the package's interpreter" if any(w in name.lower() for w in running)
            else "the package's compiler")


class Tools:
    """``tf`` inside the check: the tools an engine is built from, nothing else."""

    steps = staticmethod(steps)
    parse = staticmethod(parse)
    ops = ops
    Step, Program, TenFlangError = Step, Program, TenFlangError

    def __getattr__(self, name: str) -> Any:
        ASKED.append(_asked(name))
        raise AttributeError(f"tf.{name} is not available while the check runs your engine: "
                             "it grades your engine, not the package's (an engine needs "
                             "tf.steps, tf.ops.value and tf.ops.local_partials)")


def seal(code: CodeType) -> None:
    """From now on refuse every :data:`REFUSED` event, but the one run of ``code`` (the
    student's functions' definitions). An audit hook stays for the life of the process."""
    pending = [code]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "exec" and pending and args and args[0] is pending[0]:
            pending.clear()
            return
        if any(event == r or (r.endswith(".") and event.startswith(r)) for r in REFUSED):
            if event == "import" and args and str(args[0]).startswith("tenflang_nb"):
                ASKED.append(_asked(str(args[0])))
            shown = f"{event} {args[0]!r}"[:120] if args else event
            raise PermissionError(f"{shown}: switched off while the check runs your engine")

    sys.addaudithook(hook)


def _program(text: str) -> Program:
    return parse(text, "the check's program")


def decode(value: Any) -> Any:
    """An argument the autograder sent (a program, a step, a dict of numbers, a number)."""
    if isinstance(value, dict):
        if "program" in value:
            return _program(value["program"])
        if "step" in value:
            target, op, operands, line = value["step"]
            return Step(target, op, tuple(operands), line)
        return {k: v for k, v in value["dict"]}
    return value


def _shown(value: Any) -> str:
    try:
        return repr(value)[:200]
    except BaseException:  # their object's repr is their code too
        return f"<{type(value).__name__}>"


def _text(err: BaseException) -> str:
    try:
        return str(err)
    except BaseException:  # their exception's str is their code too
        return ""


def encode(value: Any) -> Any:
    """What a function returned (or left in a dict it was given), as data: a mapping's
    entries (a number as a float, anything else as its repr), else its type and repr."""
    if isinstance(value, Mapping):
        entries = []
        for key, item in list(value.items())[:MOST]:
            if isinstance(key, str):
                number = real_number(item)
                entries.append([key, number if number is not None else {"repr": _shown(item)}])
        return {"dict": entries}
    return {"type": type(value).__name__, "repr": _shown(value)}


def raised(err: BaseException) -> dict[str, Any]:
    """What the student's function raised: its type, message, and where in their code."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == FILE]
    named = [f.name for f in frames if not f.name.startswith("<")]
    where = frames[-1] if frames else None
    return {"type": type(err).__name__, "message": _text(err)[:500],
            "line": where.lineno if where else None, "text": (where.line or "") if where else "",
            "inside": named[-1] if named else None}


def main() -> None:
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what the functions print goes to stderr, never among the replies

    def reply(answer: dict[str, Any]) -> None:
        replies.write(json.dumps(answer) + "\n")
        replies.flush()

    request = json.loads(sys.stdin.readline())
    held = [m for m in COMPILERS if m in sys.modules]
    if held:  # an import of the tools brought one in: no check can run here
        reply({"error": f"the check's process holds {held[0]} (a bug of the autograder)"})
        return
    try:
        code = compile(request["define"], FILE, "exec")
    except SyntaxError as err:
        reply({"error": f"line {err.lineno}: {err.msg}"})
        return
    text = request["define"]
    linecache.cache[FILE] = (len(text), None, text.splitlines(True), FILE)  # lines in verdicts
    space: dict[str, Any] = {"__name__": "answer", "__builtins__": builtins, "tf": Tools(),
                             "math": math, "np": np}
    seal(code)
    try:  # the student's own Python: what this process is for
        exec(code, space)
    except BaseException as err:
        reply({"error": f"{type(err).__name__}: {_text(err)[:500]}"})
        return
    reply({"defined": {k: type(v).__name__ for k, v in space.items()
                       if not k.startswith("__") and k not in ("tf", "math", "np")}})
    for line in sys.stdin:
        request = json.loads(line)
        args = [decode(a) for a in request["args"]]
        answer: dict[str, Any] = {"result": None, "raised": None}
        ASKED.clear()
        try:
            answer["result"] = encode(space[request["call"]](*args))
            answer["after"] = [encode(a) if isinstance(a, dict) else None for a in args]
        except BaseException as err:
            answer["raised"] = raised(err)
        answer["asked"] = ASKED[:1]
        reply(answer)


if __name__ == "__main__":
    main()
