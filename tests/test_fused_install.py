"""The fused engine on a read-only install (core/fusedcache.py): the package copied into a
folder its user cannot write, run by a user without root's powers (``nobody``, through
``setpriv``) whose home does not exist, in a private mount namespace (``unshare -m``: the
bind mounts below are seen by that process alone). Needs root, ``unshare`` and ``setpriv``.

The checks read numba's own account of its cache (``NUMBA_DEBUG_CACHE``): which files it
loaded and which it saved.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
USER = "nobody"

def _can_run_as_a_user() -> bool:
    if os.name != "posix" or os.geteuid() != 0 or not shutil.which("unshare") \
            or not shutil.which("setpriv"):
        return False
    try:
        pwd.getpwnam(USER)
    except KeyError:
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


as_a_user = pytest.mark.skipif(not _can_run_as_a_user(),
                               reason=f"needs root, unshare -m, setpriv and a user {USER}")

# trains the seed model on both engines as a user would, and says what ran
TRAIN = """
import json, sys
import numpy as np
import tenflang_nb
from tenflang_nb.core import api, fused
from tenflang_nb.core.agreement import agreement
from tenflang_nb.core.examples import SEED_EXAMPLE
rng = np.random.default_rng(0)
x = rng.uniform(-3, 3, 2000)
data = {"x": x, "y": 1 / (1 + np.exp(-1.7 * x))}
gcp = api.compile(api.parse(SEED_EXAMPLE))
runs = {e: api.trainer(gcp, data, engine=e, tol=0.0, max_iter=20) for e in ("fused", "reference")}
kinds = {e: type(t._run).__name__ for e, t in runs.items()}
weights = {e: t.run().weights for e, t in runs.items()}
print(json.dumps({"package": tenflang_nb.__file__, "status": fused.status(), "kinds": kinds,
                  "agree": all(bool(agreement(weights["fused"][w], weights["reference"][w],
                                              rtol=1e-9)) for w in weights["reference"])}))
"""


def _python_reachable(top: Path) -> str:
    """Shell commands (as root, in the namespace) that let ``nobody`` run this Python: a
    base installation under a folder only root may enter (pyenv's in /root, say) is bound
    into an open copy of that folder."""
    blocked = [p for p in Path(sys.base_prefix).resolve().parents
               if not p.stat().st_mode & stat.S_IXOTH]
    if not blocked:
        return ""
    if len(blocked) > 1:
        pytest.skip(f"Python's folders {blocked} are closed to other users")
    closed = blocked[0]
    inner = Path(sys.base_prefix).resolve().relative_to(closed).parts[0]
    open_copy = top / "open"
    (open_copy / inner).mkdir(parents=True, exist_ok=True)
    open_copy.chmod(0o755)
    return (f"mount --bind {closed / inner} {open_copy / inner} && "
            f"mount --rbind {open_copy} {closed} && ")


@pytest.fixture(scope="module")
def install() -> Iterator[Path]:
    """The package copied into a folder only root may write (as ``pip install`` as root puts
    it), its numba cache filled as an administrator would: the documented command, as root."""
    top = Path(tempfile.mkdtemp(prefix="tenflang-install-"))
    site = top / "site"
    shutil.copytree(REPO / "tenflang_nb", site / "tenflang_nb",
                    ignore=shutil.ignore_patterns("*.pyc", "labextension"))
    for name in (REPO / "tenflang_nb" / "core" / "__pycache__").glob("fusedvm.*.nb[ic]"):
        target = site / "tenflang_nb" / "core" / "__pycache__"  # a filled cache: no compile
        target.mkdir(exist_ok=True)
        shutil.copy2(name, target)
    filled = subprocess.run([sys.executable, "-m", "tenflang_nb.core.fused", "--fill-cache"],
                            env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True,
                            text=True, timeout=900)
    assert filled.returncode == 0 and "ready" in filled.stdout, filled.stdout + filled.stderr
    for path in [site, *site.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    top.chmod(0o755)
    yield site
    for path in [site, *site.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.rmtree(top)  # (the namespaces' mounts ended with their processes)


def _as_user(site: Path, code: str, temporary: Path | None, *, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
    """``code`` run by ``nobody`` with the package at ``site``, no home, TMPDIR
    ``temporary``; with None, no writable temporary folder at all (/tmp and /var/tmp read-only
    in the namespace)."""
    user = pwd.getpwnam(USER)
    readonly = "" if temporary is not None else " ".join(
        f"mount -o bind,ro {d} {d} &&" for d in ("/tmp", "/var/tmp") if os.path.isdir(d))
    variables = {"HOME": "/nonexistent", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(site),
                 "NUMBA_DEBUG_CACHE": "1", "TMPDIR": str(temporary or "/tmp"), **(env or {})}
    command = (f"{_python_reachable(site.parent)}{readonly} exec setpriv --reuid={user.pw_uid} "
               f"--regid={user.pw_gid} --clear-groups env -i "
               + " ".join(f"{k}={v}" for k, v in variables.items())
               + f" {sys.executable} -c \"$0\"")
    return subprocess.run(["unshare", "-m", "sh", "-c", command, code], cwd="/",
                          capture_output=True, text=True, timeout=900)


def _report(result: subprocess.CompletedProcess[str]) -> dict:
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


@pytest.fixture
def temporary() -> Iterator[Path]:
    """The user's own TMPDIR (an empty one: nothing cached there yet)."""
    folder = Path(tempfile.mkdtemp(prefix="tenflang-tmp-"))
    user = pwd.getpwnam(USER)
    os.chown(folder, user.pw_uid, user.pw_gid)
    folder.chmod(0o700)
    yield folder
    shutil.rmtree(folder)


@pytest.mark.slow
@as_a_user
def test_a_read_only_install_loads_the_filled_cache(install: Path, temporary: Path) -> None:
    """The administrator's filled cache is copied into the user's private temporary folder
    and loaded from there: nothing compiled, the fused engine runs, the same weights."""
    result = _as_user(install, TRAIN, temporary)
    report = _report(result)
    assert report["package"].startswith(str(install)), report
    assert report["kinds"] == {"fused": "FusedRun", "reference": "Run"}, report
    assert report["status"].startswith("ready") and "private temporary folder" in \
        report["status"], report
    assert report["agree"], report
    assert "data loaded" in result.stdout and "data saved" not in result.stdout, result.stdout
    assert list(temporary.glob("tenflang_nb-numba-*/core_*/fusedvm.execute-*.nbc"))
    # a second process finds its copy in place (and the administrator's, not newer, is kept)
    again = _as_user(install, TRAIN, temporary)
    assert _report(again)["kinds"]["fused"] == "FusedRun"
    assert "data saved" not in again.stdout


@pytest.mark.slow
@as_a_user
def test_a_read_only_install_caches_in_the_users_cache_folder(install: Path, temporary: Path
                                                              ) -> None:
    """With a home of their own, the user's cache folder (seeded, nothing compiled)."""
    result = _as_user(install, TRAIN, temporary, env={"HOME": str(temporary)})
    report = _report(result)
    assert report["kinds"]["fused"] == "FusedRun" and report["agree"], report
    assert "the user's cache folder" in report["status"], report
    assert "data saved" not in result.stdout, result.stdout
    assert list((temporary / ".cache" / "tenflang_nb").glob("core_*/fusedvm.execute-*.nbc"))


@pytest.mark.slow
@as_a_user
def test_with_no_writable_folder_the_loops_are_compiled_in_memory(install: Path) -> None:
    result = _as_user(install, TRAIN, None)
    report = _report(result)
    assert report["kinds"]["fused"] == "FusedRun" and report["agree"], report
    assert "compiled in memory" in report["status"], report
    assert "[cache]" not in result.stdout, result.stdout


def test_fused_asked_for_where_it_cannot_run_says_why(cli: Any, tmp_path: Path) -> None:
    """``--engine fused`` where numba's JIT is disabled: the reference engine's weights, and a
    warning naming why on standard error (never the reference engine silently)."""
    from tenflang_nb.core import api
    from tenflang_nb.core.examples import SEED_EXAMPLE

    (tmp_path / "gcp.tf").write_text(api.compile(api.parse(SEED_EXAMPLE, "shape.tf")).text)
    (tmp_path / "data.csv").write_text("x,y\n1.0,0.9\n-1.0,0.1\n2.0,0.95\n")
    outputs = {}
    for engine, env in (("fused", {"NUMBA_DISABLE_JIT": "1"}), ("reference", {})):
        result = cli("tfweightcalc", "gcp.tf", "data.csv", "--engine", engine,
                     "--max-iter", "30", cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        outputs[engine] = result
    warned = outputs["fused"].stderr
    assert "tfweightcalc: warning: the fused engine cannot run here" in warned, warned
    assert "NUMBA_DISABLE_JIT" in warned and "Traceback" not in warned, warned
    assert outputs["fused"].stdout == outputs["reference"].stdout
    assert "fused engine" not in outputs["reference"].stderr
