"""Cheats against the grading of notebook 07 (an engine written in Python), as classes: the
answer cells they write and the checks they go for. Each worked against the autograder of
2026-11-27, which ran the check itself in the process that ran the student's functions (its
compilers switched off by a flag, its verdict a line after a token): ``test_grader.py`` runs
them against the grader's own check, ``test_grading_cheats.py`` through real nbgrader."""

from __future__ import annotations

from typing import ClassVar


class EngineCheat:
    """Answer cells (grade id -> source) that go for the checks ``went_for``; ``refused`` is
    what the verdict says instead of ✓."""

    name: ClassVar[str]
    answers: ClassVar[dict[str, str]]
    went_for: ClassVar[set[str]]
    refused: ClassVar[str]


class GuardBackOn(EngineCheat):
    """The compilers' switch flipped back on from inside the function, then the compiler's
    own forward values and adjoints returned."""

    name = "guard_back_on"
    went_for: ClassVar[set[str]] = {"forward_check", "backward_check"}
    refused = "which the check switches off"
    answers: ClassVar[dict[str, str]] = {
        "forward_answer": (
            "def forward(program, values):\n"
            "    from tenflang_nb.core import guard, graph, plan\n"
            "    guard._state['why'] = None  # the switch, back on\n"
            "    names = [s.target for s in graph.steps(program)]\n"
            "    return {**values, **plan.Plan(program).example(values, names)}\n"),
        "backward_answer": (
            "def backward(program, values):\n"
            "    from tenflang_nb.core import backprop, guard, lexical, plan\n"
            "    guard._state['why'] = None  # the switch, back on\n"
            "    gcp = backprop.compile_program(program, full=True).program()\n"
            "    names = {v: lexical.adjoint_name(program.loss, v) for v in program.decls}\n"
            "    names = {v: a for v, a in names.items() if a in gcp.decls}\n"
            "    found = plan.Plan(gcp).example(values, list(names.values()))\n"
            "    return {v: float(found[a]) for v, a in names.items()}\n")}


class TokenFromMemory(EngineCheat):
    """The verdict's token dug out of the process's memory (every frame's locals, every
    object the garbage collector tracks) and a verdict of full marks printed after it, in the
    grader's process only (the student's kernel, which runs the function too, lives on)."""

    name = "token_from_memory"
    went_for: ClassVar[set[str]] = {"forward_check", "step_check", "backward_check"}
    refused = "stopped (exit status 0)"
    FORGE = (
        "    import gc, json, os, re, sys\n"
        "    if 'ipykernel' in sys.modules:  # the student's own kernel: keep it alive\n"
        "        return {}\n"
        "    found = set()\n"
        "    frame = sys._getframe()\n"
        "    while frame is not None:\n"
        "        found |= {v for v in frame.f_locals.values() if isinstance(v, str)}\n"
        "        frame = frame.f_back\n"
        "    found |= {v for o in gc.get_objects() if isinstance(o, dict)\n"
        "              for v in list(o.values()) if isinstance(v, str)}\n"
        "    verdict = json.dumps({'ok': True, 'text': '✓ right'})\n"
        "    for token in [t for t in found if re.fullmatch('[0-9a-f]{32}', t)]:\n"
        "        os.write(1, f'\\n{token} {verdict}\\n'.encode())\n"
        "    os._exit(0)\n")
    answers: ClassVar[dict[str, str]] = {
        "forward_answer": "def forward(program, values):\n" + FORGE,
        "step_answer": "def backprop_step(step, values, adjoints):\n" + FORGE,
        "backward_answer": "def backward(program, values):\n" + FORGE}


ENGINE_CHEATS = [GuardBackOn(), TokenFromMemory()]
