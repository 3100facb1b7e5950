"""Shared fixtures: the original 2016 programs, the console scripts, small program builders."""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

REPO = Path(__file__).resolve().parents[1]
ORIGINAL_DIR = REPO.parent / "shared" / "original-tenflang"
BIN = Path(sys.executable).parent

# tests/ is not a package: let the test modules import helpers_fd
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

if TYPE_CHECKING:
    from docs_support import SiteBuild

# a fused schedule that fails its verification (core/fusedverify.py) is an error in the tests,
# never a silent fall back to the reference engine (whose numbers the tests would then see);
# set here, so the commands and kernels the tests start inherit it
os.environ["TENFLANG_FUSED_DEBUG"] = "1"


@pytest.fixture(scope="session")
def original_dir() -> Path:
    """The original TenFlang's example programs (skips the test when the folder is absent)."""
    if not ORIGINAL_DIR.is_dir():
        pytest.skip(f"{ORIGINAL_DIR} is not present")
    return ORIGINAL_DIR


def program_text(*lines: str) -> str:
    """Program text from lines, newline-terminated."""
    return "".join(f"{line}\n" for line in lines)


EXAMPLES = REPO / "examples"
XOR_SHAPE = (EXAMPLES / "xor" / "shape.tf").read_text()

# notebook 02's fan-out example: a is used by b and by c (line 14 is define o = add b c)
FAN_OUT = program_text(
    "declare input x", "declare exp_output y", "declare weight w", "declare intvar a",
    "declare intvar b", "declare intvar c", "declare output o", "declare intvar e",
    "declare loss L", "", "define a = mul w x", "define b = logistic a", "define c = tanh a",
    "define o = add b c", "define e = sub o y", "define L = mul e e")

# the original's declare_vector, expanded by the preprocessor
VECTOR_PROGRAM = program_text(
    "declare_vector input x 3", "declare_vector weight w 3", "declare exp_output y",
    "declare intvar s", "declare output o", "declare intvar d", "declare loss L",
    "define s = dot x w", "define o = logistic s", "define d = sub o y", "define L = pow d 2")


def hypothesis_settings(max_examples: int) -> Any:
    """The project's hypothesis settings: reproducible runs (derandomized, no example
    database) with no deadline, since a case compiles and runs a whole program."""
    from hypothesis import HealthCheck, settings

    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclass(frozen=True)
class Result:
    """What a command did: exit status, standard output and standard error."""

    returncode: int
    stdout: str
    stderr: str


def command(name: str) -> list[str]:
    """How to start a console script: the script beside this interpreter, else its entry point."""
    script = BIN / name
    if script.exists():
        return [str(script)]
    # no console script next to this interpreter: call the entry point directly
    entry = {"tfcompiler": "compiler_main", "tfweightcalc": "weightcalc_main",
             "tfevaluate": "evaluate_main"}[name]
    return [sys.executable, "-c",
            f"import sys; from tenflang_nb.entry import {entry}; sys.exit({entry}())"]


Runner = Callable[..., Result]


@pytest.fixture(scope="session")
def cli() -> Runner:
    """Run a console script in a subprocess: ``cli("tfcompiler", "a.tf", cwd=tmp_path)``."""

    def run(name: str, *args: str | os.PathLike[str], cwd: Path | None = None,
            env: dict[str, str] | None = None, stdin: str | None = None) -> Result:
        full_env = {k: v for k, v in os.environ.items() if k != "TENFLANG_DEBUG"}
        full_env.update(env or {})
        argv: Sequence[str] = [*command(name), *map(str, args)]
        proc = subprocess.run(argv, cwd=cwd, env=full_env, input=stdin, capture_output=True,
                              text=True, timeout=120)
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return run


@contextmanager
def one_worker_at_a_time(factory: pytest.TempPathFactory, name: str) -> Iterator[None]:
    """Under pytest-xdist, the workers of one run take turns here (a lock file in the folder
    their temporary folders share), so the first fills a disk cache the others then load;
    without xdist, or where there is no fcntl, nothing to wait for."""
    try:
        import fcntl
    except ImportError:
        fcntl = None  # type: ignore[assignment]
    if fcntl is None or "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    with (factory.getbasetemp().parent / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def fused_vm(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The fused engine's compiled loops (core/fusedvm.py), loaded once a session: the first
    compile on a machine takes 9-16 s, after that numba's disk cache about a second, so no
    test pays it on its own (the engine's command-line tests load that cache), and of
    xdist's workers only the first compiles. Skips where numba is missing or its loops fail
    to compile."""
    from tenflang_nb.core import fused

    with one_worker_at_a_time(tmp_path_factory, "fused-engine"):
        module = fused.load(wait=True)
    if module is None:
        pytest.skip(f"the fused engine is unavailable here: {fused.status()}")
    return module


@pytest.fixture
def shell() -> Iterator[Any]:
    """A fresh IPython shell for one test, gone after it (get_ipython() is None again: a
    shell left behind would keep the panel from ever training live in later tests).

    Its history is kept in memory (no file, no saving thread); the IPYTHONDIR is the run's
    own (the root conftest.py). IPython's exit hook is taken off: each would hold its shell
    and namespace to the end of the run and then reset it with a full garbage collection.
    cleanup() puts back sys.modules["__main__"], which otherwise links each shell to the
    one before it (so none is ever freed).
    """
    import IPython.core.completer  # noqa: F401  (it keeps the __main__ of its first import)
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    instance = InteractiveShell.instance(config=config)
    atexit.unregister(instance.atexit_operations)
    try:
        yield instance
    finally:
        instance.cleanup()
        InteractiveShell.clear_instance()


@pytest.fixture
def ip(shell: Any) -> Iterator[Any]:
    """A fresh shell with the extension loaded (and unloaded after the test)."""
    shell.run_line_magic("load_ext", "tenflang_nb")
    yield shell
    if "tenflang_nb" in shell.extension_manager.loaded:
        shell.run_line_magic("unload_ext", "tenflang_nb")


@dataclass(frozen=True)
class Call:
    """One command line to run in ``cwd``."""

    command: str
    args: tuple[str, ...]
    cwd: Path
    env: tuple[tuple[str, str], ...] = ()


def run_calls(cli: Runner, calls: Sequence[Call]) -> list[Result]:
    """Run many commands, a few at a time (each is mostly Python's and numpy's start-up)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(cli, c.command, *c.args, cwd=c.cwd, env=dict(c.env))
                   for c in calls]
        return [f.result() for f in futures]


@pytest.fixture(scope="session")
def website(tmp_path_factory: pytest.TempPathFactory) -> SiteBuild:
    """The website, built once per run as ``bash scripts/docs`` builds it (under
    pytest-xdist, by the first worker that needs it, into the folder the workers share).

    Skips when the ``docs`` extra is missing (scripts/test installs it).
    """
    pytest.importorskip("myst_nb", reason="the website needs pip install -e '.[docs]'")
    from docs_support import build_site, site_built_once

    if "PYTEST_XDIST_WORKER" not in os.environ:
        return build_site(tmp_path_factory.mktemp("site"))
    shared = tmp_path_factory.getbasetemp().parent / "site"
    with one_worker_at_a_time(tmp_path_factory, "website"):
        shared.mkdir(exist_ok=True)
        return site_built_once(shared)


SLOW_FIXTURES = {"website"}  # building the website takes seconds: its tests are slow ones


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs a slow fixture ``slow``, so the developers' fast lane
    (``scripts/test --fast``: ``-m "not slow and not browser"``) leaves it out."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
