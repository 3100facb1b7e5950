"""``tenflang-course report DIR ASSIGNMENT``: per student, what a lecturer should look at.

Read from the submissions as data (nothing of them runs): Python in a TenFlang answer; in a
Python answer (or a cell the student added) a name that reaches into the grading, the
interpreter or the process (``tf.grading``, ``get_ipython``, ``os.environ``, ``sys.modules``,
``importlib``, ``inspect``, ``exec``, ``eval``, ``subprocess``, ``sqlite3``, frames, ``gc``,
``ctypes``...); files beside the notebook
that the release does not have; a backward pass that is the compiler's, pasted or renamed and
reordered; a notebook whose answers are the practice solution's, up to renaming and order;
submissions identical between students. ``solve``'s submissions (signed with the course's
secret) are the teacher's and never flagged.
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.backprop import compile_program
from ..core.errors import TenFlangError
from ..core.grading import NBGRADER_STUB, compiler_copy
from ..core.lexical import split_lines, split_tokens
from ..core.program import parse
from .layout import ASSIGNMENTS, read_secret
from .new import CourseError
from .solve import SIGNATURE, cell_source, nbgrader_meta, read_notebook, signature, solution

__all__ = ["Flag", "Submission", "canonical_backward", "report", "suspicious_names"]

NBGRADER_FILES = {"timestamp.txt"}  # nbgrader's own, beside a submission
# what reaches into the grading, the kernel or the machine: never in an honest answer
SUSPICIOUS = re.compile(
    r"\b(tf\s*\.\s*grading|tenflang_nb\s*\.\s*(?:notebook|grader|core)|"
    r"grading_mode|get_ipython|os\s*\.\s*environ|sys\s*\.\s*modules|importlib|inspect|"
    r"exec|eval|subprocess|sqlite3|__import__|__builtins__|__class__|__subclasses__|"
    r"__globals__|compile|"
    # an engine's function that digs in the process (its frames, its objects, its memory)
    # or turns the compilers' switch back on
    r"_getframe|f_back|f_locals|f_globals|tb_frame|gi_frame|gc|ctypes|guard|_exit)\b")
COMMUTATIVE = {"add", "mul"}
SAME_LEAST = 3  # answers two identical submissions share at least, to be flagged
SHARE = 0.75  # a notebook is a copy of the practice solution when this share of answers is


@dataclass(frozen=True)
class Flag:
    """One thing to look at: its kind, the cell (nbgrader id, or '' for the notebook)."""

    kind: str
    cell: str
    detail: str


@dataclass
class Submission:
    """A student's submission as the report sees it."""

    student: str
    teachers: bool = False  # written by tenflang-course solve
    flags: list[Flag] = field(default_factory=list)


def _code_only(text: str) -> str:
    """Python text without its comments (strings kept: a name in one can be imported)."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                  if t.type != tokenize.COMMENT]
        return tokenize.untokenize(tokens)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text


def suspicious_names(text: str) -> list[str]:
    """The names of :data:`SUSPICIOUS` a Python cell uses (comments left out).

    >>> suspicious_names("import os\\nx = os.environ['A']  # not eval")
    ['os.environ']
    """
    found = (re.sub(r"\s+", "", m.group(0)) for m in SUSPICIOUS.finditer(_code_only(text)))
    return list(dict.fromkeys(found))


def _python_lines(body: str) -> list[int]:
    """The lines of a TenFlang cell's body that are Python (or a magic, or a shell line)."""
    lines = []
    for number, line in enumerate(split_lines(body), 2):
        words = line.strip()
        if (not words or words.startswith(("#", NBGRADER_STUB))
                or words.split()[0] in ("define", "declare")):
            continue
        if words[0] in "%!":
            lines.append(number)
            continue
        try:
            ast.parse(words)
        except SyntaxError:
            continue
        lines.append(number)
    return lines


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def canonical_backward(text: str, loss: str, variables: Sequence[str]) -> dict[str, str]:
    """The adjoints ``d/LOSS/d/V`` (V a model's variable) a backward pass defines, each as a
    digest of its expression over the model's variables, every other name it defines
    inlined: two passes that differ in their temporaries' names, their lines' order and
    the order of add's and mul's operands have the same result.

    >>> a = canonical_backward("define t = mul x 2\\ndefine d/L/d/w = add t w", "L", ["x", "w"])
    >>> a == canonical_backward("define d/L/d/w = add w q\\ndefine q = mul x 2", "L", ["x", "w"])
    True
    """
    definitions: dict[str, list[str]] = {}
    for line in split_lines(text):
        tokens = split_tokens(line)
        if len(tokens) >= 4 and tokens[0] == "define" and tokens[2] == "=":
            definitions[tokens[1]] = tokens[3:]
    keys: dict[str, str] = {}

    def key(name: str, depth: int = 0) -> str:
        if name not in definitions or depth > 200:
            return _key("name", name)
        if name not in keys:
            keys[name] = _key("loop")  # a name defined from itself: no expression
            expression = definitions[name]
            if len(expression) == 1:
                keys[name] = key(expression[0], depth + 1)
            else:
                args = [key(a, depth + 1) for a in expression[1:]]
                if expression[0] in COMMUTATIVE:
                    args.sort()
                keys[name] = _key(expression[0], *args)
        return keys[name]

    wanted = {f"d/{loss}/d/{v}" for v in variables}
    return {name: key(name) for name in definitions if name in wanted}


def _answer_kind(text: str) -> str:
    if text.startswith("%%tenflang_check"):
        return "backward"
    if text.startswith("%%tenflang"):
        return "model"
    return "python"


def _normal_python(text: str) -> str:
    """A Python answer up to its names and comments: its AST, each name by its order."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return " ".join(_code_only(text).split())
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            node.id = names.setdefault(node.id, f"n{len(names)}")
        elif isinstance(node, ast.arg):
            node.arg = names.setdefault(node.arg, f"n{len(names)}")
    return ast.dump(tree)


class _Models:
    """The graded notebook's models (its locked ``%%tenflang NAME`` cells, and those drawn for
    ``student``, the one whose answers are looked at), compiled."""

    def __init__(self, source: dict[str, Any], secret: str = "") -> None:
        self.text: dict[str, str] = {}
        self.secret = secret
        self.student = ""
        self._drawn: dict[str, dict[str, str]] = {}
        self._cells = [c for c in source["cells"] if c.get("cell_type") == "code"]
        for cell in self._cells:
            text = cell_source(cell)
            if text.startswith("%%tenflang ") and not nbgrader_meta(cell).get("solution"):
                head, _, body = text.partition("\n")
                self.text[head.split()[1]] = body

    def drawn(self) -> dict[str, str]:
        """The models drawn for ``student`` (``tf.grading.variant``), as the grader draws them."""
        if self.student not in self._drawn:
            from ..grader.grade import Grader, TeacherCell

            teacher = [TeacherCell(nbgrader_meta(c).get("grade_id", ""), cell_source(c),
                                   bool(nbgrader_meta(c).get("solution"))) for c in self._cells]
            self._drawn[self.student] = Grader(teacher, {}, self.student,
                                               secret=self.secret).drawn
        return self._drawn[self.student]

    def backward(self, answer: str, body: str) -> tuple[Any, dict[str, str], dict[str, str]]:
        """(the model's GCP, the answer's adjoints, the GCP's) for a %%tenflang_check cell
        answering about the model its first line names; raises KeyError without one."""
        model = answer.split("\n", 1)[0].split()[1]
        program = parse(self.text[model] if model in self.text else self.drawn()[model])
        gcp = compile_program(program)
        variables = list(program.decls)
        compiled = "\n".join(str(line.statement) for line in gcp.lines
                             if line.section == "backward")
        return (gcp, canonical_backward(body, program.loss, variables),
                canonical_backward(compiled, program.loss, variables))


def _normal(kind: str, text: str, models: _Models) -> Any:
    """An answer as compared with the practice solution's."""
    if kind == "python":
        return _normal_python(text)
    body = text.split("\n", 1)[1] if "\n" in text else ""
    if kind == "backward":
        try:
            return models.backward(text, body)[1] or " ".join(split_tokens(body))
        except (KeyError, IndexError, TenFlangError):
            pass
    return "\n".join(" ".join(split_tokens(line)) for line in split_lines(body))


def _answered(text: str) -> bool:
    """Not the released stub: no ``raise NotImplementedError``, and where it sets names, some
    to more than None (the stub's ``answer_3 = None`` may stay above the answer)."""
    values = re.findall(r"^[ \t]*[A-Za-z_]\w*[ \t]*=(?!=)[ \t]*(.*)$", text, re.M)
    return NBGRADER_STUB not in text and (
        not values or any(not re.match(r"None\b", v) for v in values))


def _identity(answers: list[tuple[str, str]]) -> str:
    """A submission's answers up to spacing: equal between two students, they copied."""
    return _key(*(" ".join(t.split()) for _, t in answers))


def _files_beside(folder: Path, notebook: str, release: Path) -> list[str]:
    extra = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_dir() or relative == notebook or relative in NBGRADER_FILES:
            continue
        released = release / relative
        if not released.is_file() or released.read_bytes() != path.read_bytes():
            extra.append(relative)
    return extra


def report(course: str | Path, assignment: str) -> list[Submission]:
    """The report on every submission of ``assignment`` in the course ``course``."""
    course = Path(course)
    if assignment not in ASSIGNMENTS:
        raise CourseError(f"{assignment}: not a graded assignment of a TenFlang course "
                          f"({', '.join(ASSIGNMENTS)})")
    name = ASSIGNMENTS[assignment]
    source = read_notebook(course / "source" / assignment / name)
    secret = read_secret(course)
    models = _Models(source, secret)
    practice = {nbgrader_meta(c)["grade_id"]: solution(cell_source(c))
                for c in source["cells"] if nbgrader_meta(c).get("solution")}
    release_folder = course / "release" / assignment
    submitted = sorted(p for p in (course / "submitted").glob(f"*/{assignment}") if p.is_dir())
    found: list[Submission] = []
    same: dict[str, list[str]] = {}
    for folder in submitted:
        student = folder.parent.name
        seen = Submission(student)
        found.append(seen)
        models.student = student
        for extra in _files_beside(folder, name, release_folder):
            seen.flags.append(Flag("file beside the notebook", "", extra))
        try:
            nb = read_notebook(folder / name)
        except CourseError as err:
            seen.flags.append(Flag("no notebook", "", str(err)))
            continue
        answers = [(nbgrader_meta(c)["grade_id"], cell_source(c)) for c in nb.get("cells", [])
                   if nbgrader_meta(c).get("solution") and nbgrader_meta(c).get("grade_id")
                   in practice]
        signed = nb.get("metadata", {}).get(SIGNATURE)
        if secret and isinstance(signed, str) and hmac.compare_digest(
                signed, signature(secret, student, assignment, [t for _, t in answers])):
            seen.teachers = True  # not flagged; a copy of it is
            same.setdefault(_identity(answers), []).append(student)
            continue
        added = [cell_source(c) for c in nb.get("cells", []) if c.get("cell_type") == "code"
                 and not nbgrader_meta(c).get("grade_id")]
        for text in added:
            for word in suspicious_names(text):
                seen.flags.append(Flag("reaches into the grading", "(a cell the student "
                                       "added)", word))
        copied = 0
        answered = 0
        for grade_id, text in answers:
            kind = _answer_kind(text)
            if kind == "python":
                for word in suspicious_names(text):
                    seen.flags.append(Flag("reaches into the grading", grade_id, word))
            else:
                body = text.split("\n", 1)[1] if "\n" in text else ""
                lines = _python_lines(body)
                if lines:
                    seen.flags.append(Flag("Python in a TenFlang answer", grade_id,
                                           "line " + ", ".join(map(str, lines))))
                if kind == "backward":
                    try:
                        gcp, mine, compilers = models.backward(text, body)
                    except (KeyError, IndexError, TenFlangError):
                        gcp = None
                    if gcp is not None:
                        pasted = compiler_copy(body, [gcp])
                        if pasted is not None:
                            seen.flags.append(Flag("the compiler's backward pass", grade_id,
                                                   f"line {pasted.line + 1}: {pasted.why}"))
                        elif mine and len(mine) >= 2 and all(
                                compilers.get(a) == k for a, k in mine.items()):
                            seen.flags.append(Flag(
                                "the compiler's backward pass", grade_id,
                                "its adjoints are the compiler's, up to renaming and order"))
            if _answered(text):
                answered += 1
                copied += _normal(kind, text, models) == _normal(
                    kind, practice[grade_id], models)
        if answered and copied >= 2 and copied >= SHARE * len(answers):
            seen.flags.append(Flag("the practice solution", "", (
                f"{copied} of its {len(answers)} answers are the public practice solution's, "
                "up to renaming and order")))
        # two honest students can share a few short answers; not most of a notebook
        if answered >= max(SAME_LEAST, len(answers) / 2):
            same.setdefault(_identity(answers), []).append(student)
    for group in same.values():
        for seen in found:
            if seen.student in group and len(group) > 1 and not seen.teachers:
                others = ", ".join(s for s in group if s != seen.student)
                seen.flags.append(Flag("identical submissions", "",
                                       f"the same answers as {others}"))
    return found


def as_json(found: list[Submission], assignment: str) -> dict[str, Any]:
    return {"assignment": assignment,
            "students": {s.student: {"teachers_check": s.teachers,
                                     "flags": [asdict(f) for f in s.flags]} for s in found}}


def as_text(found: list[Submission], assignment: str) -> str:
    lines = [f"{assignment}: {len(found)} submission{'s' if len(found) != 1 else ''}"]
    for seen in found:
        if seen.teachers:
            lines.append(f"{seen.student}: the teacher's check (written by tenflang-course "
                         "solve)")
        elif not seen.flags:
            lines.append(f"{seen.student}: nothing to look at")
        else:
            lines.append(f"{seen.student}: {len(seen.flags)} to look at")
            lines += [f"  - {f.kind}{f' in {f.cell}' if f.cell else ''}: {f.detail}"
                      for f in seen.flags]
    return "\n".join(lines) + "\n"
