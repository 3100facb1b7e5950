"""What grading needs that is no notebook's business: who the student is, the seed their
numbers are drawn from, a model's fingerprint, an example drawn for them, and whether an
answer is the compiler's backward pass pasted.

The notebook's grading mode (``notebook/grading.py``) is built on these; they read no kernel
and no widget, so a script can use them too.

>>> student_id({"JUPYTERHUB_USER": "ada"}, "/home/ada")
('ada', 'JupyterHub user')
>>> student_seed("ada", "ex3") == student_seed("ada", "ex3") != student_seed("bob", "ex3")
True
>>> fingerprint("define L = mul w w  # squared\\n") == fingerprint("define  L = mul w w\\n")
True
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import NamedTuple

import numpy as np

from .arguments import (
    ArgumentError,
    Rule,
    check_arguments,
    check_instance,
    check_name,
    check_values,
)
from .backprop import Gcp
from .errors import TenFlangError
from .lexical import split_derivative, split_lines, split_tokens, token_spans
from .settings import SETTINGS, SETTINGS_ARGUMENT, TrainSettings
from .syntax import Comment, Declare

__all__ = [
    "COURSE_KEY",
    "DEFAULT_STUDENT",
    "NBGRADER_STUB",
    "Copied",
    "compiler_copy",
    "draw_example",
    "draw_variant",
    "fingerprint",
    "not_answered",
    "program_key",
    "rounded",
    "rounding",
    "student_id",
    "student_key",
    "student_seed",
    "variant_fingerprint",
]

COURSE_KEY = "TENFLANG_COURSE_KEY"  # the variable a student's kernel finds their key in
DEFAULT_STUDENT = "student"  # whose numbers a copy shows when no student id is found
AUTOGRADED = "autograded"  # nbgrader's autograded_directory (its default name)
# nbgrader replaces a solution region by its stub; in an answer it means "not answered yet",
# which deserves better than a syntax error
NBGRADER_STUB = "raise NotImplementedError"
MAX_CHOICES = 1_000_000  # values an example picks one from, per name


def student_id(environ: Mapping[str, str] | None = None, cwd: str | None = None
               ) -> tuple[str, str]:
    """``(student id, where it came from)``: ``TENFLANG_STUDENT`` when it is set (a teacher
    sets it for a hub that names its users otherwise); nbgrader's student while it
    autogrades (the notebook runs in ``autograded/<student>/<assignment>/``); the JupyterHub
    user (the id nbgrader's exchange files a submission under), except on a BinderHub, whose
    user names change with every launch; else :data:`DEFAULT_STUDENT`.

    >>> student_id({"NBGRADER_EXECUTION": "autograde", "JUPYTERHUB_USER": "grader"},
    ...            "/course/autograded/bob/ps05")
    ('bob', 'nbgrader autograde')
    >>> student_id({"JUPYTERHUB_USER": "x-1a2b", "BINDER_REPO_URL": "https://..."}, "/tmp")
    ('student', 'default')
    """
    environ = os.environ if environ is None else environ
    cwd = os.getcwd() if cwd is None else cwd
    chosen = environ.get("TENFLANG_STUDENT", "").strip()
    if chosen:
        return chosen, "TENFLANG_STUDENT"
    if environ.get("NBGRADER_EXECUTION") == "autograde":
        parts = PurePath(cwd).parts
        if len(parts) >= 3 and parts[-3] == AUTOGRADED:
            return parts[-2], "nbgrader autograde"
        return DEFAULT_STUDENT, "default"  # not nbgrader's layout: never the grader's name
    user = environ.get("JUPYTERHUB_USER", "").strip()
    if user and not any(k in environ for k in ("BINDER_REPO_URL", "BINDER_LAUNCH_HOST")):
        return user, "JupyterHub user"
    return DEFAULT_STUDENT, "default"


def student_key(secret: str, student: str) -> str:
    """The key a course with the secret ``secret`` gives ``student``: their draws need it,
    and it tells nothing of the secret or of a classmate's key (an HMAC).

    >>> student_key("s3cret", "ada") != student_key("s3cret", "bob") != student_key("x", "bob")
    True
    """
    check_instance("secret", secret, str, "the course's secret (a str)")
    check_instance("student", student, str, "a student's id (a str)")
    return hmac.new(secret.encode(), student.encode(), hashlib.sha256).hexdigest()[:32]


def student_seed(student: str, salt: str, key: str = "") -> int:
    """A seed for ``student``'s draws of one kind (``salt``: the exercise, the check...):
    the same in their copy and when the autograder runs it, different between students;
    with their course's ``key`` (:func:`student_key`), different between courses too (no
    key: the practice variant of the public notebooks).

    >>> student_seed("ada", "ex3")
    2153001589
    >>> student_seed("ada", "ex3", student_key("s3cret", "ada")) != 2153001589
    True
    """
    check_instance("student", student, str, "a student's id (a str)")
    check_instance("salt", salt, str, "a str (what the seed is for)")
    check_instance("key", key, str, "a course's key for the student (a str)")
    text = f"{student}\n{salt}" + (f"\n{key}" if key else "")
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def draw_example(seed: int, choices: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """One value per name, each picked from its ``choices`` (at least one name; each a
    list of finite numbers, not empty) by the generator ``seed``.

    >>> draw_example(1, {"x": [1.0, 2.0, 3.0], "w": [0.0]})
    {'x': 2.0, 'w': 0.0}
    >>> draw_example(1, {"x": []})
    Traceback (most recent call last):
    ...
    tenflang_nb.core.arguments.ArgumentError: error: x must be a list of finite numbers to \
pick from (1 to 1,000,000 of them), not []
    """
    (seed,) = check_arguments(seed=seed)
    check_instance("choices", choices, Mapping, "the values to pick from, by name (x=[1, 2])")
    if not choices:
        raise ArgumentError("an example needs values to pick from: name=[...] for at least "
                            "one variable (x=[1, 2, 3])")
    picks: dict[str, np.ndarray] = {}
    for name, values in choices.items():
        check_name("a variable's name", name)
        pick = Rule(name, tuple, f"a list of finite numbers to pick from (1 to "
                    f"{MAX_CHOICES:,} of them)")
        if not (isinstance(values, Sequence | np.ndarray) and not isinstance(values, str | bytes)
                and 1 <= len(values) <= MAX_CHOICES):
            raise pick.error(values)
        check_values(name, values)
        array = np.asarray(values, dtype=float)
        if array.ndim != 1:
            raise pick.error(values)
        picks[name] = array
    rng = np.random.default_rng(seed)
    return {name: float(values[int(rng.integers(len(values)))])
            for name, values in picks.items()}


PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# what a placeholder may become: a number, or words of a program (operands, an operator)
CHOICE = re.compile(r"[A-Za-z0-9_.+-]+( [A-Za-z0-9_.+-]+)*")


def _choices(template: str, choices: Mapping[str, Sequence[float | str]]
             ) -> dict[str, list[float | str]]:
    """``choices`` checked against the placeholders of ``template`` (the same names)."""
    check_instance("template", template, str, "a model's text with {name} placeholders")
    check_instance("choices", choices, Mapping, "the values to pick from, by placeholder")
    named = set(PLACEHOLDER.findall(template))
    if named != set(choices):
        raise ArgumentError(f"a variant's choices must name its template's placeholders: "
                            f"{sorted(named)}, not {sorted(choices)}")
    checked: dict[str, list[float | str]] = {}
    for name, values in choices.items():
        rule = Rule(name, tuple, "a list of numbers or of words of a program to pick from")
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
            raise rule.error(values)
        for value in values:
            if isinstance(value, bool) or not (
                    (isinstance(value, int | float) and np.isfinite(value))
                    or (isinstance(value, str) and CHOICE.fullmatch(value))):
                raise rule.error(values)
        checked[name] = list(values)
    return checked


def draw_variant(seed: int, template: str, choices: Mapping[str, Sequence[float | str]]
                 ) -> tuple[str, dict[str, float | str]]:
    """A model drawn for one student: ``template`` with each ``{name}`` replaced by one of
    ``choices[name]``, picked by the generator ``seed``; returns (the text, the picks).

    >>> draw_variant(1, "define L = mul {c} q", {"c": [2, 3, 0.5]})
    ('define L = mul 3 q', {'c': 3})
    """
    (seed,) = check_arguments(seed=seed)
    checked = _choices(template, choices)
    rng = np.random.default_rng(seed)
    picks = {name: values[int(rng.integers(len(values)))] for name, values in checked.items()}
    return PLACEHOLDER.sub(lambda m: str(picks[m.group(1)]), template), picks


def variant_fingerprint(template: str, choices: Mapping[str, Sequence[float | str]]) -> str:
    """What a locked check names a model drawn per student by: its template (as tokens) and
    its choices.

    >>> variant_fingerprint("define L = mul {c} q", {"c": [2, 3]})
    'c4065b574deb'
    """
    checked = _choices(template, choices)
    text = program_key(template) + "\n" + json.dumps(checked, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def rounded(value: float, *, step: float | None = None, digits: int | None = None) -> str:
    """A numeric answer as a check compares it: ``value`` rounded to a multiple of ``step``
    (the count of steps) or to ``digits`` significant digits.

    >>> rounded(0.1072, step=0.001) == rounded(0.107, step=0.001)
    True
    >>> rounded(7.452, digits=2), rounded(7.452, step=1)
    ('7.5', '7')
    """
    if (step is None) == (digits is None):
        raise ArgumentError("a numeric answer is rounded one way: step= or digits=")
    if step is not None and not (isinstance(step, int | float) and not isinstance(step, bool)
                                 and np.isfinite(step) and step > 0):
        raise ArgumentError(f"step must be a positive number (what the answer is rounded to a "
                            f"multiple of), not {step!r}")
    if digits is not None and not (type(digits) is int and 1 <= digits <= 15):
        raise ArgumentError(f"digits must be a whole number from 1 to 15 (the significant "
                            f"digits the answer is rounded to), not {digits!r}")
    return (str(int(np.round(value / step))) if step is not None
            else f"{float(value):.{digits}g}")


def rounding(step: float | None = None, digits: int | None = None) -> str:
    """How :func:`rounded` rounds, in words.

    >>> rounding(step=1), rounding(step=0.001), rounding(digits=2)
    ('to a whole number', 'to a multiple of 0.001', 'to 2 significant digits')
    """
    rounded(0.0, step=step, digits=digits)  # the same checks
    if step is None:
        return f"to {digits} significant digits"
    return "to a whole number" if step == 1 else f"to a multiple of {step:g}"


def program_key(source: str) -> str:
    """The program as its tokens: comments, blank lines and spacing left out.

    >>> program_key("define L = mul w w   # the square\\n\\n")
    'define L = mul w w'
    """
    (source,) = check_arguments(source=source)
    lines = (" ".join(split_tokens(line)) for line in split_lines(source))
    return "\n".join(line for line in lines if line)


def fingerprint(source: str, settings: TrainSettings | None = None) -> str:
    """A short digest of a model: its program (:func:`program_key`) and the training
    ``settings`` it was given (those that differ from their defaults: a setting added to the
    package later leaves every fingerprint as it was).

    >>> fingerprint("declare weight w\\n")
    '4f0f228a1561'
    >>> w = "declare weight w\\n"
    >>> fingerprint(w, TrainSettings(lr=2)) != fingerprint(w) == fingerprint(w, TrainSettings())
    True
    """
    text = program_key(source)
    check_instance("settings", settings, TrainSettings | None, SETTINGS_ARGUMENT)
    if settings is not None:
        changed = {s: v for s, v in dataclasses.asdict(settings).items()
                   if v != SETTINGS[s].default}
        if changed:
            text += "\n" + json.dumps(changed, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class Copied(NamedTuple):
    """Where an answer shows that it is the compiler's backward pass, and why."""

    line: int
    column: int
    length: int
    why: str


def compiler_copy(text: str, gcps: Sequence[Gcp]) -> Copied | None:
    """Where ``text`` shows that it is the compiler's backward pass (one of ``gcps``)
    pasted, None when it is not: it names one of the compiler's temporaries
    (``d/o/d/z:0``), or it has the compiler's block headers (``# line N: ...``) and its
    declarations (``declare intvar d/L/d/e``) as the compiler writes them, three lines at
    least. A student's own lines may equal the compiler's ``define`` lines: those alone
    never count.

    >>> from tenflang_nb.core.backprop import compile_program
    >>> from tenflang_nb.core.program import parse
    >>> gcp = compile_program(parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n"))
    >>> compiler_copy("define d/L/d/w = add w w", [gcp]) is None
    True
    >>> pasted = "\\n".join(str(line.statement) for line in gcp.lines
    ...                    if line.section == "backward")
    >>> compiler_copy(pasted, [gcp]).line
    1
    """
    comments: set[str] = set()
    declares: set[str] = set()
    for gcp in gcps:
        for line in gcp.lines:
            if line.section != "backward":
                continue
            if isinstance(line.statement, Comment):
                comments.add(" ".join(str(line.statement).split()))
            elif isinstance(line.statement, Declare):
                declares.add(" ".join(str(line.statement).split()))
    copied: list[int] = []
    kinds: set[str] = set()
    for number, line in enumerate(split_lines(text), 1):
        for column, token in token_spans(line):
            parts = split_derivative(token)
            if parts is not None and parts[2] is not None:
                return Copied(number, column, len(token),
                              f"'{token}' is a temporary the compiler names: your answer is "
                              "the compiler's backward pass, pasted")
        words = " ".join(line.split())
        if words in comments:
            copied.append(number)
            kinds.add("comment")
        elif words in declares:
            copied.append(number)
            kinds.add("declare")
    if len(copied) >= 3 and kinds == {"comment", "declare"}:
        line = split_lines(text)[copied[0] - 1]
        return Copied(copied[0], len(line) - len(line.lstrip()), len(line.strip()),
                      f"{len(copied)} lines are the compiler's backward pass as it writes it "
                      "(its '# line N:' headers and declarations): your answer is the "
                      "compiler's backward pass, pasted")
    return None


def not_answered(text: str, file: str, loss: str | None) -> TenFlangError | None:
    """The error for an answer that still holds nbgrader's stub (None: it does not): a
    backward pass for the loss ``loss``, or (``loss`` None) a model, the answer.

    >>> error = not_answered("# YOUR CODE HERE\\nraise NotImplementedError()", "mine", "L")
    >>> error.first.message, error.first.line
    ('this exercise is not answered yet', 2)
    >>> print(not_answered("raise NotImplementedError()", "mine", None).first.hint)
    replace this line (and '# YOUR CODE HERE') with your model: its 'declare' and 'define' lines
    """
    what = (f"your backward pass: lines like 'define d/{loss}/d/w = ...'" if loss is not None
            else "your model: its 'declare' and 'define' lines")
    for number, line in enumerate(split_lines(text), 1):
        if line.strip().startswith(NBGRADER_STUB):
            column = len(line) - len(line.lstrip())
            return TenFlangError.at(
                "this exercise is not answered yet", file=file, line=number, column=column,
                length=len(line.strip()), source=line,
                hint=f"replace this line (and '# YOUR CODE HERE') with {what}")
    return None
