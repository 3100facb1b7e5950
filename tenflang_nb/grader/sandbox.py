"""The sandbox a submission's code runs in at autograde: bubblewrap (``bwrap``, Debian's
``bubblewrap``), started from a kernelspec the course ships.

Inside, the file system is the machine's, read-only, with the course folder, the exchange
and the grader's home hidden behind empty folders (Python and the package bound back where
they lie under them); no network (a network namespace of its own: the kernel talks to
nbgrader over Unix sockets, ``c.KernelManager.transport = "ipc"``, in a runtime folder of the
grader's that holds nothing else); the working directory is an empty, writable folder off
``sys.path``, so nothing submitted beside the notebook is there; a course's ``examples/``
beside the student's assignment folder is bound read-only beside it, as the repository's
notebook 06 reads it; the files the student version (``release/ASSIGNMENT/``) holds beside
its notebooks (``tenflang-course new`` puts 06's examples into ``source/``, nbgrader releases
them) are bound read-only into the working directory. With a course secret, the kernel
gets the student's key (``TENFLANG_COURSE_KEY``).

>>> argv = sandbox_argv(hide=["/srv/course"], work="/tmp/student/work")
>>> argv[0], "--unshare-all" in argv, argv[argv.index("--chdir") + 1]
('bwrap', True, '/tmp/student/work')
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

__all__ = ["KERNEL", "WORK", "engine_prefix", "install_kernelspec", "sandbox_argv"]

KERNEL = "tenflang-sandbox"  # the kernelspec's name
HOME = "/tmp/student"  # in the sandbox's own /tmp: the machine's folders are read-only
WORK = f"{HOME}/work"  # the kernel's working directory: empty, writable, off sys.path
EXCHANGE = "/srv/nbgrader"  # nbgrader's default exchange lives under it


def _under(path: str, folders: Sequence[str]) -> bool:
    return any(os.path.commonpath([path, f]) == f for f in folders)


def _python_folders() -> list[str]:
    """Where this Python, its packages and this package lie (bound back when hidden)."""
    here = str(Path(__file__).resolve().parents[2])  # the folder tenflang_nb is in
    paths = sysconfig.get_paths()
    found = [sys.prefix, sys.base_prefix, here, *(paths[k] for k in ("purelib", "platlib"))]
    return list(dict.fromkeys(os.path.realpath(p) for p in found))


def sandbox_argv(*, hide: Sequence[str], work: str = WORK,
                 binds: Sequence[tuple[str, str]] = (), ro_binds: Sequence[tuple[str, str]] = (),
                 environ: dict[str, str] | None = None) -> list[str]:
    """The ``bwrap`` command prefix: the machine read-only, the folders ``hide`` (and the
    grader's home) empty, Python bound back, ``binds`` (host, inside) writable, ``ro_binds``
    read-only, no network, a fresh ``/tmp`` and working directory ``work``, the environment
    ``environ`` and nothing else of the grader's."""
    home = os.path.realpath(os.path.expanduser("~"))
    hidden = list(dict.fromkeys(os.path.realpath(h) for h in [*hide, home] if os.path.isdir(h)))
    argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", "--unshare-all", "--die-with-parent", "--new-session",
            "--cap-drop", "ALL", "--clearenv"]
    for folder in hidden:
        argv += ["--tmpfs", folder]
    for folder in _python_folders():
        # the sandbox's /tmp is empty too: a Python or a checkout there (a CI clone, a venv
        # made in a temporary folder) must be bound back like one in a hidden folder
        if _under(folder, [*hidden, "/tmp"]):
            argv += ["--ro-bind", folder, folder]
    argv += ["--dir", HOME, "--dir", work]
    for host, inside in ro_binds:
        argv += ["--ro-bind", host, inside]
    for host, inside in binds:
        argv += ["--bind", host, inside]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "LANG": "C.UTF-8",
           "MPLBACKEND": "Agg", **(environ or {})}
    for name, value in env.items():
        argv += ["--setenv", name, value]
    return [*argv, "--chdir", work, "--"]


def engine_prefix(course: str, hide: Sequence[str] = ()) -> list[str]:
    """The command prefix the autograder checks an engine's functions (07) under (the
    folders ``hide`` hidden too)."""
    return sandbox_argv(hide=[course, EXCHANGE, *hide])


def install_kernelspec(course: str | Path, where: str | Path, hide: Sequence[str] = ()
                       ) -> Path:
    """Write the sandboxed kernel's spec into ``where/kernels/``: a kernel of this Python,
    started in the sandbox, for the course in ``course`` (the folders ``hide`` hidden too).
    Returns its folder."""
    folder = Path(where) / "kernels" / KERNEL
    folder.mkdir(parents=True, exist_ok=True)
    # -I: the launcher starts in the student's folder, whose files must not be imported
    spec = {"argv": [sys.executable, "-I", "-m", "tenflang_nb.grader.sandbox", "--course",
                     str(Path(course).resolve()),
                     *(a for h in hide for a in ("--hide", str(h))), "{connection_file}"],
            "display_name": "TenFlang autograde (sandboxed)", "language": "python"}
    (folder / "kernel.json").write_text(json.dumps(spec, indent=1) + "\n")
    return folder


def _assignment_files(course: str, assignment: str) -> list[tuple[str, str]]:
    """The files the student version of an assignment has beside its notebooks
    (``release/``: 06's examples, as every student received them), bound read-only into the
    working directory: neither the submitted copies nor ``source/`` are read."""
    folder = os.path.join(course, "release", assignment)
    if not assignment or not os.path.isdir(folder):
        return []
    return [(os.path.join(folder, name), f"{WORK}/{name}") for name in sorted(os.listdir(folder))
            if not name.endswith(".ipynb") and not name.startswith(".")]


def main(argv: Sequence[str] | None = None) -> None:
    """The kernelspec's command: start the kernel in the sandbox (replaces this process)."""
    parser = argparse.ArgumentParser(prog="python -m tenflang_nb.grader.sandbox")
    parser.add_argument("--course", required=True)
    parser.add_argument("--hide", action="append", default=[])
    parser.add_argument("connection_file")
    args = parser.parse_args(argv)
    from ..core.grading import COURSE_KEY, student_id, student_key
    from ..course.layout import read_secret

    connection = os.path.realpath(args.connection_file)
    runtime = os.path.dirname(connection)
    with open(connection, encoding="utf-8") as file:
        transport = json.load(file).get("transport")
    if transport != "ipc":
        sys.exit(f"{KERNEL}: the kernel must talk over Unix sockets in a sandbox without a "
                 "network: set c.KernelManager.transport = 'ipc' in nbgrader_config.py")
    others = [p for p in os.listdir(runtime)
              if p.endswith(".json") and os.path.join(runtime, p) != connection]
    if others:
        sys.exit(f"{KERNEL}: the runtime folder {runtime} holds other kernels' connection "
                 "files, which the sandbox would see: give the autograder a runtime folder of "
                 "its own (JUPYTER_RUNTIME_DIR)")
    student, _ = student_id(os.environ, os.getcwd())  # nbgrader's layout, as the kernel would
    examples = os.path.realpath(os.path.join(os.getcwd(), "..", "examples"))
    ro = [(examples, f"{HOME}/examples")] if os.path.isdir(examples) and not _under(
        examples, [os.path.realpath(os.getcwd())]) else []
    ro += _assignment_files(args.course, os.path.basename(os.getcwd()))
    environ = {"TENFLANG_STUDENT": student,
               "NBGRADER_EXECUTION": os.environ.get("NBGRADER_EXECUTION", "")}
    secret = read_secret(args.course)
    if secret:  # the student's key, so that the kernel's feedback draws what the grader does
        environ[COURSE_KEY] = student_key(secret, student)
    command = sandbox_argv(hide=[args.course, EXCHANGE, *args.hide], binds=[(runtime, runtime)],
                           ro_binds=ro, environ=environ)
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        sys.exit(f"{KERNEL}: bubblewrap is not installed (apt-get install bubblewrap)")
    os.execv(bwrap, [*command, sys.executable, "-I", "-m", "ipykernel_launcher",
                     "--IPKernelApp.ignore_cwd=True", "-f", connection])


if __name__ == "__main__":
    main()
