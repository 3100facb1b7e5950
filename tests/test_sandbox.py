"""The sandboxed kernel a course autogrades in (``tenflang_nb.grader.sandbox``), started as
nbgrader starts it: from its kernelspec, over Unix sockets, in a student's folder of the
course. What a cell tries from inside is measured from outside."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tenflang_nb.grader.sandbox import KERNEL, install_kernelspec

pytestmark = [pytest.mark.slow,  # a kernel started in bubblewrap
              pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="the sandbox needs bubblewrap (scripts/setup installs it)")]


def _run(cells: list[str], course: Path, folder: Path, tmp_path: Path,
         monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    import nbformat
    from nbclient import NotebookClient
    from traitlets.config import Config

    install_kernelspec(course, tmp_path / "jupyter")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    monkeypatch.delenv("TENFLANG_STUDENT", raising=False)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    config = Config()
    config.KernelManager.transport = "ipc"
    config.KernelManager.connection_file = str(runtime / "kernel.json")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, kernel_name=KERNEL, config=config, allow_errors=True, timeout=120,
                   resources={"metadata": {"path": str(folder)}}).execute()
    return [cell.outputs for cell in nb.cells]


def _said(outputs: list[Any]) -> str:
    return "".join(o.get("text") or o.get("data", {}).get("text/plain")
                   or f"{o.get('ename')}: {o.get('evalue')}" for o in outputs)


def test_a_submission_sees_nothing_of_the_course_and_reaches_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    course = tmp_path / "course"
    folder = course / "autograded" / "bob" / "lab"
    folder.mkdir(parents=True)
    (course / "source" / "lab").mkdir(parents=True)
    (course / "source" / "lab" / "solutions.txt").write_text("the answers")
    (course / "gradebook.db").write_text("grades")
    (course / "autograded" / "bob" / "examples").mkdir()
    (course / "autograded" / "bob" / "examples" / "data.csv").write_text("x,y\n1,2\n")
    (folder / "tenflang_nb").mkdir()  # submitted beside the notebook
    (folder / "tenflang_nb" / "__init__.py").write_text("SHADOW = True\n")
    (folder / "beside.txt").write_text("a file beside the notebook")
    said = [_said(o) for o in _run([
        "import os, sys\nprint(os.getcwd() in sys.path, '' in sys.path, os.listdir('.'))",
        f"open({str(course / 'source' / 'lab' / 'solutions.txt')!r}).read()",
        f"open({str(course / 'gradebook.db')!r}, 'w').write('full marks')",
        "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=5)",
        "import tenflang_nb as tf\nprint(hasattr(tf, 'SHADOW'), hasattr(tf, 'compile'))",
        "print(os.environ.get('TENFLANG_STUDENT'), open('../examples/data.csv').read())",
    ], course, folder, tmp_path, monkeypatch)]
    assert said[0] == "False False []\n"  # off sys.path, and nothing submitted is there
    assert said[1].startswith("FileNotFoundError")
    assert (course / "gradebook.db").read_text() == "grades"  # whatever the cell did
    assert "Network is unreachable" in said[3] or said[3].startswith("OSError")
    assert said[4] == "False True\n"  # the package, not the folder submitted beside
    assert said[5] == "bob x,y\n1,2\n\n"  # nbgrader's student; the course's examples read
    assert not os.path.exists(folder / "full marks")
