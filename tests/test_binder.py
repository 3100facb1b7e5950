"""Binder: the files in ``binder/`` alone make an environment that runs every tutorial.

repo2docker (what mybinder.org runs) reads ``binder/`` and then ignores the top-level config,
so ``binder/requirements.txt`` must install the package itself (``.``). The end-to-end check
is what Binder would do without Docker: a fresh virtual environment, ``pip install -r
binder/requirements.txt`` from (a copy of) the repository root, ``binder/postBuild``, then
every notebook executed with that environment's Python. It downloads from PyPI: about a
minute or two.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BINDER = REPO / "binder"
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))

# Executes each notebook (in its own folder, as Jupyter would) with nbclient in the fresh
# environment, then asks the kernel where it runs: it must be that environment, not this one.
RUNNER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    report = {}
    for name in sys.argv[1:]:
        path = Path(name)
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.prefix)"))
        started = time.perf_counter()
        try:
            NotebookClient(nb, timeout=300, kernel_name="python3",
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        except CellExecutionError as err:
            report[path.name] = {"error": str(err)[-3000:]}
            continue
        errors = [o.get("ename", "") + ": " + o.get("evalue", "")
                  for c in nb.cells if c.cell_type == "code"
                  for o in c.get("outputs", []) if o.get("output_type") == "error"]
        prefix = "".join(o.get("text", "") for o in nb.cells[-1].outputs).strip()
        report[path.name] = {"errors": errors, "prefix": prefix,
                             "seconds": round(time.perf_counter() - started, 1)}
    print("REPORT " + json.dumps(report))
""")


def _copy_repo(target: Path) -> Path:
    """The repository as a fresh clone would have it (no venv, caches or build output)."""
    ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", "build", "_build",
                                    "dist", ".pytest_cache", ".ruff_cache", ".hypothesis",
                                    "test-artifacts", ".ipynb_checkpoints", "node_modules")
    shutil.copytree(REPO, target, ignore=ignore, symlinks=True)
    return target


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float
         ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, (f"{' '.join(argv)} failed ({proc.returncode}):\n"
                                  f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def test_binder_files() -> None:
    requirements = [line.split("#")[0].strip()
                    for line in (BINDER / "requirements.txt").read_text().splitlines()]
    assert "." in requirements, "binder/requirements.txt must install the package itself"
    assert any(r.startswith("ipykernel") for r in requirements)
    assert "graphviz" in (BINDER / "apt.txt").read_text().split()
    runtime = (BINDER / "runtime.txt").read_text().strip()
    assert runtime.startswith("python-3."), runtime
    post = BINDER / "postBuild"
    if post.exists():
        lines = post.read_text().splitlines()
        assert lines[0].startswith("#!"), "postBuild needs a shebang line"
        assert "set -e" in [line.strip() for line in lines], "postBuild must 'set -e'"
        assert os.access(post, os.X_OK), "postBuild must be executable"


@pytest.mark.slow
def test_fresh_binder_environment_runs_every_notebook(tmp_path: Path) -> None:
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is missing (binder/apt.txt installs it on Binder)")
    repo = _copy_repo(tmp_path / "repo")
    venv = tmp_path / "venv"
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER", "PIP_", "IPYTHON"))}
    env.update({
        "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        "VIRTUAL_ENV": str(venv),
        # no user-level kernelspecs or config: only what the fresh environment brings
        "JUPYTER_CONFIG_DIR": str(home / "jupyter-config"),
        "JUPYTER_DATA_DIR": str(home / "jupyter-data"),
        "IPYTHONDIR": str(home / "ipython"),
        "MPLCONFIGDIR": str(home / "matplotlib"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    })
    base_python = getattr(sys, "_base_executable", sys.executable)
    timings: dict[str, float] = {}

    started = time.monotonic()
    _run([base_python, "-m", "venv", str(venv)], tmp_path, env, 120)
    python = str(venv / "bin" / "python")
    _run([python, "-m", "pip", "install", "-q", "-r", "binder/requirements.txt"], repo, env,
         600)
    timings["install"] = time.monotonic() - started
    if (repo / "binder" / "postBuild").exists():
        built = _run(["bash", "binder/postBuild"], repo, env, 300)
        # numba installed with the package, and postBuild filled its cache with the fused
        # engine's loops (compiled and self-tested against numpy)
        assert "fused engine: ready" in built.stdout, built.stdout + built.stderr
        # it trusted the tutorials, in this user's trust database, which the server reads
        check = ("import sys, nbformat\nfrom nbformat.sign import NotebookNotary\n"
                 "notary = NotebookNotary()\n"
                 "print(all(notary.check_signature(nbformat.read(p, 4)) for p in sys.argv[1:]))")
        names = [str(repo / "notebooks" / p.name) for p in NOTEBOOKS]
        trusted = _run([str(venv / "bin" / "python"), "-c", check, *names], repo, env, 60)
        assert trusted.stdout.strip() == "True", "postBuild did not trust the tutorials"
        overrides = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
        settings = json.loads(overrides.read_text())["@jupyterlab/apputils-extension:notification"]
        assert settings["fetchNews"] == "false"

    started = time.monotonic()
    runner = tmp_path / "run_notebooks.py"
    runner.write_text(RUNNER)
    names = [str(repo / "notebooks" / p.name) for p in NOTEBOOKS]
    proc = _run([python, str(runner), *names], repo / "notebooks", env, 900)
    timings["notebooks"] = time.monotonic() - started
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("REPORT "))
    report = json.loads(line.removeprefix("REPORT "))

    assert sorted(report) == sorted(p.name for p in NOTEBOOKS)
    for name, result in report.items():
        assert "error" not in result, f"{name} failed in the Binder environment:\n" \
                                      f"{result['error']}"
        assert not result["errors"], f"{name}: {result['errors']}"
        assert Path(result["prefix"]).resolve() == venv.resolve(), \
            f"{name} ran in {result['prefix']}, not in the fresh environment"
    each = ", ".join(f"{name}: {result['seconds']} s" for name, result in report.items())
    print(f"\nbinder venv: pip install {timings['install']:.0f} s; notebooks "
          f"{timings['notebooks']:.0f} s ({each})")
