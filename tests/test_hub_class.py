"""A class on a real JupyterHub (issue 26), end to end: a teacher and nine students, each a
system user whose server the hub spawns (LocalProcessSpawner); everything goes through the
hub's REST API, each user's Jupyter Server (contents, sessions) and their kernels' websockets.

The teacher makes a course as docs/teachers.md says (its nbgrader_config.py, its commands),
releases the first three exercises of notebook 05; each student fetches them, runs them in
their own kernel with their own answers (right, partly wrong, blank, and one who goes after a
classmate's submission in the exchange) and submits; the teacher collects, autogrades in the
sandbox, releases feedback; each student fetches their own. The exchange is nbgrader's folder,
its submissions private (tenflang_nb.grader.exchange.PrivateSubmit)."""

from __future__ import annotations

import csv
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

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "teachers.md"
NOTEBOOK = "05_exercises.ipynb"
COURSE, ASSIGNMENT = "tenflang", "lab05"
LAST_CELL = "ex3_check"  # the part released: setup, exercises 1 to 3 (7 points)
POINTS = 7
EX3_CHOICES = {"x": [-2, -1.5, -1, -0.5, 0.5, 1, 1.5, 2], "y": [0, 0.25, 0.75, 1], "w": [0]}
# what each student writes, by answer cell (None: the cell as fetched); the scores they get
WRONG_EX2 = "%%tenflang_check seed ex2 --require o,z,w\ndefine d/lambda/d/o = d/lambda/d/diff\n" \
            "define d/lambda/d/z = d/lambda/d/o\ndefine d/lambda/d/w = mul d/lambda/d/z x\n"
KINDS = {"right": POINTS, "partly": 2, "blank": 0, "cheat": 0}
CLASS = ["right", "right", "right", "right", "partly", "partly", "blank", "blank", "cheat"]
DENIED = "PermissionError"


def teacher_steps() -> list[str]:
    """The teacher's commands: the bash block of the teachers' page that releases, collects
    and returns, as the test runs them (so the page is what ran)."""
    text = DOCS.read_text()
    block = re.search(r"```bash\n(nbgrader generate_assignment.*?)```", text, re.S)
    assert block, "docs/teachers.md lost its block of nbgrader commands"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def course_config(exchange: Path) -> str:
    """The course's nbgrader_config.py: the teachers' page's, with this course and exchange."""
    block = re.search(r"```python\n(from tenflang_nb\.grader\.config import configure\n.*?)```",
                      DOCS.read_text(), re.S)
    assert block, "docs/teachers.md lost its nbgrader_config.py"
    text = block.group(1)
    for old, new in (('course_id = "..."', f'course_id = "{COURSE}"'),
                     ('"/srv/nbgrader/exchange"', f'"{exchange}"')):
        assert text.count(old) == 1, f"the page's nbgrader_config.py has no {old}"
        text = text.replace(old, new)
    return text


def part_of_05() -> dict[str, Any]:
    notebook = json.loads((REPO / "notebooks" / NOTEBOOK).read_text())
    ids = [c["metadata"].get("nbgrader", {}).get("grade_id") for c in notebook["cells"]]
    notebook["cells"] = notebook["cells"][:ids.index(LAST_CELL) + 1]
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return notebook


def solutions() -> dict[str, str]:
    """The teacher's answer cells, solution markers taken out: a right student's answers."""
    found = {}
    for cell in part_of_05()["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("solution"):
            source = "".join(cell["source"])
            found[meta["grade_id"]] = re.sub(r"### (BEGIN|END) SOLUTION\n?", "", source)
    return found


def answers(kind: str) -> dict[str, str]:
    if kind == "right":
        return solutions()
    if kind == "partly":  # exercise 1 right, 2 wrong, 3 a number that is nobody's answer
        return {"ex1_answer": solutions()["ex1_answer"], "ex2_answer": WRONG_EX2,
                "ex3_answer": "answer_3 = 0.3\n"}
    return {}


@dataclass
class Class:
    hub: Hub
    teacher: str
    students: list[str]
    exchange: Path
    homes: Path


@pytest.fixture
def hub_class() -> Iterator[Class]:
    reason = missing()
    if reason:
        pytest.skip(reason)
    root = Path(tempfile.mkdtemp(prefix="tenflang-hub-", dir="/tmp"))
    root.chmod(0o755)
    (root / "home").mkdir(mode=0o755)
    exchange = root / "exchange"
    exchange.mkdir()
    exchange.chmod(0o1777)  # nbgrader's exchange root: everyone may make a course in it
    etc = root / "etc"  # what an image has in /etc/jupyter: every server's nbgrader config
    etc.mkdir(mode=0o755)
    (etc / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.course_id = {COURSE!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n"
        "c.ExchangeFactory.submit = 'tenflang_nb.grader.exchange.PrivateSubmit'\n")
    (root / "hub").mkdir(mode=0o700)
    users = Users(root / "home")
    names = unique_names("tfc", 1 + len(CLASS))
    hub = None
    try:
        for name in names:
            users.add(name)
        hub = Hub(root / "hub", names, names[:1], {
            "JUPYTER_CONFIG_PATH": str(etc),
            "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"})
        hub.spawn(names)
        yield Class(hub, names[0], names[1:], exchange, root / "home")
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


def make_dirs(server: Server, path: str) -> None:
    parts = path.split("/")
    for i in range(1, len(parts) + 1):
        server.api("PUT", "/contents/" + "/".join(parts[:i]), {"type": "directory"})


def home_kernel(server: Server) -> Kernel:
    return Kernel(server, server.api("POST", "/kernels", {"name": "python3"})["id"])


def work(server: Server, kind: str) -> dict[str, Any]:
    """A student fills in the fetched notebook, saves it and runs it top to bottom in a
    kernel of its own; what the kernel says of their id and their example."""
    path = f"{ASSIGNMENT}/{NOTEBOOK}"
    notebook = server.get_file(path)
    mine = answers(kind)
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
                          "GRADING\nprint(json.dumps([GRADING.student, example_3]))")
        assert seen.error is None, seen.error
        student, example = json.loads(seen.text)
    finally:
        kernel.close()
    return {"student": student, "example": example}


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
    inbound = cls.exchange / COURSE / "inbound"
    (folder,) = [p for p in inbound.iterdir() if p.name.startswith(f"{victim}+{ASSIGNMENT}+")]
    out = kernel.run(ATTEMPTS.format(
        victim=str(folder), inbound=str(inbound), notebook=NOTEBOOK,
        feedback=str(cls.exchange / COURSE / "feedback"), home=str(cls.homes / victim)))
    assert out.error is None, out.error
    return json.loads(out.text)


def test_a_class_on_jupyterhub(hub_class: Class) -> None:
    from tenflang_nb.core.grading import draw_example, student_seed

    cls, hub = hub_class, hub_class.hub
    began = time.monotonic()
    steps = teacher_steps()
    assert [s.split()[1] for s in steps] == [
        "generate_assignment", "release_assignment", "collect", "autograde",
        "generate_feedback", "release_feedback", "export"]
    steps = [s.replace("lab05", ASSIGNMENT) for s in steps]

    # the teacher makes the course in their home, as the teachers' page says
    teacher = hub.server(cls.teacher)
    make_dirs(teacher, f"course/source/{ASSIGNMENT}")
    teacher.api("PUT", "/contents/course/nbgrader_config.py", {
        "type": "file", "format": "text", "content": course_config(cls.exchange)})
    teacher.put_notebook(f"course/source/{ASSIGNMENT}/{NOTEBOOK}", part_of_05())
    console = home_kernel(teacher)
    for step in steps[:2]:
        shell(console, step, "~/course")
        print(f"{time.monotonic() - began:.0f} s: {step}")

    # the students: fetch, work, submit (the cheat last, after the classmates submitted)
    seen: dict[str, dict[str, Any]] = {}
    kinds = dict(zip(cls.students, CLASS, strict=True))
    attempts: dict[str, str] = {}
    for student, kind in kinds.items():
        server = hub.server(student)
        home = home_kernel(server)
        shell(home, f"nbgrader fetch_assignment {ASSIGNMENT}")
        seen[student] = work(server, kind)
        if kind == "cheat":  # feedback/ is made when the teacher releases feedback
            attempts = {k: v for k, v in go_after(home, cls, cls.students[0]).items()
                        if "feedback" not in k}
        shell(home, f"nbgrader submit {ASSIGNMENT}")
        home.close()
        print(f"{time.monotonic() - began:.0f} s: {student} ({kind}) submitted")

    # each kernel knew its student from the hub, and drew that student's own example
    for student, what in seen.items():
        assert what["student"] == student
        seed = student_seed(student, "05_exercises/example/ex3")
        assert what["example"] == draw_example(seed, EX3_CHOICES)
    seeds = {student_seed(s, "05_exercises/example/ex3") for s in cls.students}
    assert len(seeds) == len(cls.students)

    # the teacher collects, autogrades (in the sandbox), returns the feedback, exports
    for step in steps[2:]:
        shell(console, step, "~/course")
        print(f"{time.monotonic() - began:.0f} s: {step}")
    console.close()
    course = cls.homes / cls.teacher / "course"
    with (course / "grades.csv").open() as f:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(f)
                  if row["assignment"] == ASSIGNMENT}
    assert scores == {s: float(KINDS[k]) for s, k in kinds.items()}, scores

    # every student fetches their own feedback, and only theirs
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

    # the classmate's submission and feedback stayed out of reach of the cheat
    assert attempts and set(attempts.values()) == {DENIED}, attempts
