"""A class on a real JupyterHub (issue 26), end to end: a teacher and nine students, each a
system user whose server the hub spawns (LocalProcessSpawner); everything goes through the
hub's REST API, each user's Jupyter Server (contents, sessions) and their kernels' websockets.

The teacher makes the course with the teachers' page's commands (``tenflang-course new``
with a secret: the graded variant), releases notebook 05; the hub gives each student's server
their key (the page's snippet); each student fetches it, runs it in their own kernel with
their own answers (right, partly right, blank, and one who goes after a classmate's
submission in the exchange) and submits; the teacher collects, autogrades in the sandbox,
releases feedback, exports, reports; each student fetches their own feedback. The right
answers are ``tenflang-course solve``'s for each student, the expected scores the released
notebook's points: nothing here knows 05's exercises. The exchange is nbgrader's folder, its
submissions private (tenflang_nb.grader.exchange.PrivateSubmit)."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hub_support import VENV_BIN, Hub, Kernel, Server, Users, missing, unique_names

from tenflang_nb.course.layout import SECRET_FILE

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "teachers.md"
ASSIGNMENT = "05_exercises"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
SECRET = "the-class-tests-secret"
CLASS = ["right", "right", "right", "right", "partly", "partly", "blank", "blank", "cheat"]
DENIED = "PermissionError"


def teacher_steps() -> list[str]:
    """The teachers' page's block of commands (a course in one command), as the test runs
    them (so the page is what ran)."""
    block = re.search(r"```bash\n(tenflang-course new .*?)```", DOCS.read_text(), re.S)
    assert block, "docs/teachers.md lost its block of the course's commands"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines()
            if line.split("#")[0].strip()]


def python_block(marker: str) -> str:
    """The teachers' page's Python block that holds ``marker``."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
              if marker in b]
    assert len(blocks) == 1, f"docs/teachers.md has {len(blocks)} Python blocks with {marker}"
    return blocks[0]


def key_config(secret_file: Path) -> str:
    """The hub's configuration that gives each student's server their key: the page's
    snippet, with this course's secret file."""
    text = python_block("TENFLANG_COURSE_KEY")
    paths = re.findall(r'Path\("([^"]+)"\)', text)
    assert len(paths) == 1, "the page's key snippet names no secret file"
    return text.replace(paths[0], str(secret_file))


def layout(notebook: dict[str, Any]) -> tuple[list[str], dict[str, tuple[float, set[str]]]]:
    """A released notebook's answer cells (in order) and its checks worth points, each with
    its points and the answer cells it checks (those since the check before it)."""
    answers: list[str] = []
    checks: dict[str, tuple[float, set[str]]] = {}
    since: set[str] = set()
    for cell in notebook["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            answers.append(meta["grade_id"])
            since.add(meta["grade_id"])
        elif meta.get("grade") and meta.get("points"):
            checks[meta["grade_id"]] = (float(meta["points"]), since)
            since = set()
    return answers, checks


def chosen(kind: str, answers: list[str]) -> list[str]:
    """The answer cells a student of ``kind`` answers (with solve's answers): all, the first
    half, none."""
    return {"right": answers, "partly": answers[:len(answers) // 2]}.get(kind, [])


def expected(kind: str, notebook: dict[str, Any]) -> float:
    """The score of a student of ``kind``: the points of every check whose answers they gave."""
    answers, checks = layout(notebook)
    given = set(chosen(kind, answers))
    return sum(points for points, needs in checks.values() if needs <= given)


def hidden_lines(notebook: dict[str, Any]) -> list[str]:
    found = []
    for cell in notebook["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for part in re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", source, re.S):
            found += [line.strip() for line in part.splitlines() if line.strip()]
    return found


@dataclass
class Class:
    hub: Hub
    teacher: str
    students: list[str]
    exchange: Path
    homes: Path
    course: str  # the course's folder in the teacher's home, and its id


@pytest.fixture
def hub_class() -> Iterator[Class]:
    reason = missing()
    if reason:
        pytest.skip(reason)
    course = teacher_steps()[0].split()[2]  # `tenflang-course new NAME`: the course's id
    root = Path(tempfile.mkdtemp(prefix="tenflang-hub-", dir="/tmp"))
    root.chmod(0o755)
    (root / "home").mkdir(mode=0o755)
    exchange = root / "exchange"
    exchange.mkdir()
    exchange.chmod(0o1777)  # nbgrader's exchange root: everyone may make a course in it
    etc = root / "etc"  # what an image has in /etc/jupyter: every server's nbgrader config
    etc.mkdir(mode=0o755)
    (etc / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.course_id = {course!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n"
        + python_block("ExchangeFactory.submit"))
    (root / "hub").mkdir(mode=0o700)
    users = Users(root / "home")
    names = unique_names("tfc", 1 + len(CLASS))
    hub = None
    try:
        for name in names:
            users.add(name)
        secret_file = root / "home" / names[0] / course / SECRET_FILE
        hub = Hub(root / "hub", names, names[:1], {
            "JUPYTER_CONFIG_PATH": str(etc),
            "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"},
            python_config=key_config(secret_file))
        hub.spawn(names[:1])  # the students' once the course (its secret) is made
        yield Class(hub, names[0], names[1:], exchange, root / "home", course)
    finally:
        if hub is not None:
            hub.stop()
            print(hub.tail())  # pytest shows it when the test fails
        users.remove()
        shutil.rmtree(root, ignore_errors=True)


def shell(kernel: Kernel, command: str, cwd: str = "~") -> str:
    """``command`` run from the user's kernel (as from a terminal of their server)."""
    out = kernel.run(
        "import os, subprocess\n"
        f"_done = subprocess.run({command!r}, shell=True, capture_output=True, text=True, "
        f"cwd=os.path.expanduser({cwd!r}))\n"
        "print(_done.returncode)\nprint(_done.stdout[-3000:] + _done.stderr[-3000:])")
    assert out.error is None, out.error
    code, _, said = out.text.partition("\n")
    assert code == "0", f"{command}: {said}"
    return said


def home_kernel(server: Server) -> Kernel:
    return Kernel(server, server.api("POST", "/kernels", {"name": "python3"})["id"])


def work(server: Server, mine: dict[str, str]) -> dict[str, Any]:
    """A student fills in the fetched notebook (``mine``: answer cells by grade id), saves it
    and runs it top to bottom in a kernel of its own; what the kernel says of their id, key
    and draws."""
    path = f"{ASSIGNMENT}/{NOTEBOOK}"
    notebook = server.get_file(path)
    for cell in notebook["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in mine:
            cell["source"] = mine[grade_id]
    server.put_notebook(path, notebook)
    kernel = server.session(path)
    try:
        ran = [kernel.run("".join(c["source"]) if isinstance(c["source"], list)
                          else c["source"])
               for c in notebook["cells"] if c["cell_type"] == "code"]
        assert ran[0].error is None, ran[0].error  # the setup cell
        seen = kernel.run("import json\nfrom tenflang_nb.notebook.grading_mode import "
                          "GRADING\nprint(json.dumps([GRADING.student, GRADING.key, "
                          "GRADING.seed('example/ex3')]))")
        assert seen.error is None, seen.error
        student, key, seed = json.loads(seen.text)
    finally:
        kernel.close()
    return {"student": student, "key": key, "seed": seed}


ATTEMPTS = """\
import json, os
def _try(what, do):
    try:
        do()
        return 'done'
    except OSError as error:
        return type(error).__name__
_victim = {victim!r}
_found = {{
    'list inbound': _try('', lambda: os.listdir({inbound!r})),
    'list submission': _try('', lambda: os.listdir(_victim)),
    'read submission': _try('', lambda: open(os.path.join(_victim, {notebook!r})).read()),
    'read secret': _try('', lambda: open(os.path.join(_victim, 'submission_secret.txt')).read()),
    'overwrite submission': _try('', lambda: open(os.path.join(_victim, {notebook!r}), 'w')),
    'add a file': _try('', lambda: open(os.path.join(_victim, 'x.txt'), 'w')),
    'list feedback': _try('', lambda: os.listdir({feedback!r})),
    'write feedback': _try('', lambda: open(os.path.join({feedback!r}, 'x.html'), 'w')),
    'list their home': _try('', lambda: os.listdir({home!r})),
}}
print(json.dumps(_found))
"""


def go_after(kernel: Kernel, cls: Class, victim: str) -> dict[str, str]:
    """What a student's kernel can do to a classmate's submission and feedback, given its
    path in the exchange (as if it leaked)."""
    inbound = cls.exchange / cls.course / "inbound"
    (folder,) = [p for p in inbound.iterdir() if p.name.startswith(f"{victim}+{ASSIGNMENT}+")]
    out = kernel.run(ATTEMPTS.format(
        victim=str(folder), inbound=str(inbound), notebook=NOTEBOOK,
        feedback=str(cls.exchange / cls.course / "feedback"), home=str(cls.homes / victim)))
    assert out.error is None, out.error
    return json.loads(out.text)


def solved(teacher: Server, console: Kernel, cls: Class, student: str) -> dict[str, str]:
    """``tenflang-course solve``'s answer cells for ``student`` (its notebook, read through
    the teacher's server, then taken out of submitted/: nbgrader grades all there)."""
    shell(console, f"tenflang-course solve . {ASSIGNMENT} {student}", f"~/{cls.course}")
    notebook = teacher.get_file(f"{cls.course}/submitted/{student}/{ASSIGNMENT}/{NOTEBOOK}")
    shell(console, f"rm -r submitted/{student}", f"~/{cls.course}")
    return {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"])
            for c in notebook["cells"] if c["metadata"].get("nbgrader", {}).get("solution")}


def test_a_class_on_jupyterhub(hub_class: Class) -> None:
    from tenflang_nb.core.grading import student_key, student_seed

    cls, hub = hub_class, hub_class.hub
    began = time.monotonic()
    steps = teacher_steps()
    assert [" ".join(s.split()[:2]) for s in steps] == [
        "tenflang-course new", f"cd {cls.course}", *(f"nbgrader {s}" for s in (
            "generate_assignment", "release_assignment", "collect", "autograde",
            "generate_feedback", "release_feedback", "export")), "tenflang-course report"]
    assert all(ASSIGNMENT in s for s in steps[2:8]) and ASSIGNMENT in steps[-1]

    # the teacher makes the course in their home (with a secret: the graded variant), as the
    # teachers' page says, and releases 05
    teacher = hub.server(cls.teacher)
    console = home_kernel(teacher)
    shell(console, f"{steps[0]} --secret {SECRET}")
    where = f"~/{cls.course}"
    for step in steps[2:4]:
        shell(console, step, where)
        print(f"{time.monotonic() - began:.0f} s: {step}")
    release = teacher.get_file(f"{cls.course}/release/{ASSIGNMENT}/{NOTEBOOK}")
    answers, _ = layout(release)
    kinds = dict(zip(cls.students, CLASS, strict=True))
    mine = {s: {} for s in cls.students}
    for student, kind in kinds.items():
        if chosen(kind, answers):  # the right answers for them: solve's
            given = solved(teacher, console, cls, student)
            mine[student] = {g: given[g] for g in chosen(kind, answers)}

    # the students' servers, now that the hub can give each their key
    hub.spawn(cls.students)
    seen: dict[str, dict[str, Any]] = {}
    attempts: dict[str, str] = {}
    for student, kind in kinds.items():
        server = hub.server(student)
        home = home_kernel(server)
        shell(home, f"nbgrader fetch_assignment {ASSIGNMENT}")
        seen[student] = work(server, mine[student])
        if kind == "cheat":  # feedback/ is made when the teacher releases feedback
            attempts = {k: v for k, v in go_after(home, cls, cls.students[0]).items()
                        if "feedback" not in k}
        shell(home, f"nbgrader submit {ASSIGNMENT}")
        home.close()
        print(f"{time.monotonic() - began:.0f} s: {student} ({kind}) submitted")

    # each kernel knew its student from the hub, had the key the hub gave it, and drew that
    # student's own numbers in this course
    for student, what in seen.items():
        key = student_key(SECRET, student)
        assert (what["student"], what["key"]) == (student, key)
        assert what["seed"] == student_seed(student, f"{ASSIGNMENT}/example/ex3", key)
    assert len({what["seed"] for what in seen.values()}) == len(cls.students)

    # the teacher collects, autogrades (in the sandbox), returns the feedback, exports, reports
    said = ""
    for step in steps[4:]:
        said = shell(console, step, where)
        print(f"{time.monotonic() - began:.0f} s: {step}")
    console.close()
    assert all(f"{s}:" in said for s in cls.students), said  # the report names everyone
    course = cls.homes / cls.teacher / cls.course
    with (course / "grades.csv").open() as f:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(f)
                  if row["assignment"] == ASSIGNMENT}
    assert scores == {s: expected(k, release) for s, k in kinds.items()}, scores
    assert len(set(scores.values())) == 3  # right, partly right, nothing

    # every student fetches their own feedback, and only theirs; no hidden test is in it
    source = json.loads((course / "source" / ASSIGNMENT / NOTEBOOK).read_text())
    hidden = hidden_lines(source)
    assert hidden
    for student in cls.students:
        server = hub.server(student)
        home = home_kernel(server)
        shell(home, f"nbgrader fetch_feedback {ASSIGNMENT}")
        if kinds[student] == "cheat":
            attempts.update({f"after feedback: {k}": v for k, v in
                             go_after(home, cls, cls.students[1]).items()})
        home.close()
        (stamp,) = server.api("GET", f"/contents/{ASSIGNMENT}/feedback")["content"]
        listed = server.api("GET", f"/contents/{stamp['path']}")["content"]
        assert [f["name"] for f in listed] == [NOTEBOOK.replace(".ipynb", ".html")]
        theirs = server.get_file(f"{stamp['path']}/{listed[0]['name']}")
        given = (course / "feedback" / student / ASSIGNMENT / listed[0]["name"]).read_text()
        assert theirs == given
        text = html.unescape(re.sub(r"<[^>]+>", "", theirs))
        assert [line for line in hidden if line in text] == []

    # the classmate's submission and feedback stayed out of reach of the cheat
    assert attempts and set(attempts.values()) == {DENIED}, attempts
