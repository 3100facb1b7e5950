"""Helpers for the browser test: a throw-away JupyterLab server and Debian's Chromium.

JupyterLab is started as ``jupyter-lab`` itself (the ``jupyter lab`` launcher's child would
outlive a kill) on 127.0.0.1, on a port that was free a moment ago, with a token, its own root
folder and its own settings, config, runtime and workspace folders, so nothing the developer
has configured (or an open Lab) changes what the test sees, and nothing the test does is
saved anywhere that outlives it. Its data folder is its own too, and with it the database of
trusted notebooks (``nbsignatures.db``): a notebook is untrusted there unless something the
test runs signs it, whatever the developer trusted before.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# screenshots the browser tests keep for a person to look at (git-ignored)
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)

# Lab settings for a test run: start the notebook's kernel without the picker dialog, render
# every cell (no windowing, so offscreen outputs exist in the DOM), and no news/update toasts.
LAB_SETTINGS: dict[str, dict[str, Any]] = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {
        "autoStartDefaultKernel": True, "windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


def chromium_path() -> str | None:
    """Debian's Chromium (``apt-get install chromium``), or None."""
    for candidate in CHROMIUM_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found


def require_chromium() -> str:
    """Debian's Chromium for Playwright; skips the test (saying what to install) without it."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[browser]')")
    path = chromium_path()
    if path is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return path


@contextmanager
def chromium_page(profile: Path) -> Iterator[Any]:
    """A headless Chromium page with a fresh profile and a desktop-sized window."""
    executable = require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(profile), executable_path=executable, headless=True,
            args=list(CHROMIUM_FLAGS), viewport={"width": 1400, "height": 1000})
        try:
            page = browser.pages[0] if browser.pages else browser.new_page()
            page.set_default_timeout(30_000)
            yield page
        finally:
            browser.close()


@contextmanager
def chromium_context(width: int = 1400, height: int = 1000, timeout_ms: float = 20_000
                     ) -> Iterator[Any]:
    """A fresh headless Chromium (Debian's) and a browser context with a window of
    ``width`` x ``height`` CSS pixels."""
    executable = require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable, headless=True,
                                     args=list(CHROMIUM_FLAGS))
        try:
            context = chromium.new_context(viewport={"width": width, "height": height})
            context.set_default_timeout(timeout_ms)
            yield context
        finally:
            chromium.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free when asked (the OS picks it: bind to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LabServer:
    """A running ``jupyter-lab``: where it listens, its token, its process and its log."""

    port: int
    token: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        """``path`` (e.g. ``lab/tree/notebooks/x.ipynb``) with the token."""
        sep = "&" if "?" in path else "?"
        return f"{self.base}/{path.lstrip('/')}{sep}token={self.token}"

    def api(self, path: str, timeout: float = 5.0) -> Any:
        """GET a JSON REST endpoint (``api/status``, ``api/sessions``)."""
        request = urllib.request.Request(
            f"{self.base}/{path.lstrip('/')}", headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text("utf-8", errors="replace")[-chars:]
        except OSError:
            return ""


def _app_executable(app: str = "lab") -> list[str]:
    """``jupyter-lab`` or (``app="notebook"``) Notebook 7's ``jupyter-notebook``."""
    script = Path(sys.executable).parent / f"jupyter-{app}"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "jupyterlab" if app == "lab" else "notebook"]


def has_notebook7() -> bool:
    """Whether Notebook 7 (the ``notebook`` package, built on JupyterLab 4) is installed."""
    try:
        from importlib.metadata import PackageNotFoundError, version
        return int(version("notebook").split(".")[0]) >= 7
    except (PackageNotFoundError, ValueError):
        return False


def write_lab_settings(settings_dir: Path,
                       settings: dict[str, dict[str, Any]] | None = None) -> None:
    """Write ``settings`` (default :data:`LAB_SETTINGS`) as user settings under
    ``settings_dir``."""
    for relative, values in (LAB_SETTINGS if settings is None else settings).items():
        path = settings_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values, indent=2), "utf-8")


@contextmanager
def jupyter_lab(root: Path, state: Path, timeout: float = 60.0, app: str = "lab", *,
                launcher: list[str] | None = None,
                settings: dict[str, dict[str, Any]] | None = None,
                env_extra: dict[str, str] | None = None) -> Iterator[LabServer]:
    """Run JupyterLab (or, with ``app="notebook"``, Notebook 7) serving ``root``; all its own
    files live under ``state``.

    ``launcher`` starts it instead of ``jupyter-lab`` (e.g. ``scripts/lab``, which must end
    by exec-ing it, take the options after its own and add ``--allow-root`` itself);
    ``settings`` replace :data:`LAB_SETTINGS`. Stops it with SIGTERM (then SIGKILL) by PID
    when the block ends, whatever happened.
    """
    port, token = free_port(), secrets.token_hex(16)
    dirs = {name: state / name for name in ("settings", "workspaces", "config", "runtime",
                                            "ipython", "data")}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    write_lab_settings(dirs["settings"], settings)
    env = dict(os.environ)
    env.update({
        "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
        "JUPYTER_DATA_DIR": str(dirs["data"]),  # the trust database lives here
        "IPYTHONDIR": str(dirs["ipython"]),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    })
    env.pop("JUPYTER_TOKEN", None)
    env.update(env_extra or {})
    argv = [
        *(launcher or _app_executable(app)),
        "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}", "--ServerApp.allow_remote_access=False",
    ]
    if app == "lab":
        argv += [
            f"--LabApp.user_settings_dir={dirs['settings']}",
            f"--LabApp.workspaces_dir={dirs['workspaces']}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ]
    else:  # Notebook 7 reads the same settings files through its own application class
        argv += [
            f"--JupyterNotebookApp.user_settings_dir={dirs['settings']}",
            f"--JupyterNotebookApp.workspaces_dir={dirs['workspaces']}",
        ]
    if launcher is None and hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")  # containers and CI often run as root
    log = state / "jupyter-lab.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, cwd=root, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    server = LabServer(port, token, process, log)
    try:
        _wait_for_status(server, timeout)
        yield server
    finally:
        stop_process(process)


def _wait_for_status(server: LabServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"jupyter-lab exited with status {server.process.returncode}:\n"
                               f"{server.log_tail()}")
        try:
            server.api("api/status", timeout=2.0)
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            time.sleep(0.25)
    raise TimeoutError(f"jupyter-lab did not answer within {timeout:.0f} s:\n"
                       f"{server.log_tail()}")


def stop_process(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM the process by PID (Jupyter then shuts its kernels down), SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    try:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=grace)
    except ProcessLookupError:
        pass


def wait_for_kernel(server: LabServer, notebook: str, timeout: float = 60.0) -> dict[str, Any]:
    """Wait until the session of ``notebook`` (a path under the root) has an idle kernel.

    The toolbar reads "Idle" before the kernel really answers; the REST API does not.
    """
    deadline = time.monotonic() + timeout
    sessions: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            sessions = server.api("api/sessions")
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            sessions = []
        for session in sessions:
            kernel = session.get("kernel") or {}
            if session.get("path") == notebook and kernel.get("execution_state") == "idle":
                return session
        time.sleep(0.25)
    raise TimeoutError(f"no idle kernel for {notebook} within {timeout:.0f} s; "
                       f"sessions: {sessions}\n{server.log_tail()}")


def prepare_root(repo: Path, root: Path, notebook: str, *more: str) -> Path:
    """A scratch root for Lab: a copy of ``notebooks/<notebook>`` (and of ``more``: so nothing
    Lab saves reaches the repository) next to a link to the repository's ``examples/`` (the
    notebooks read ``../examples/...``). Returns the (first) notebook's path under the root."""
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    for name in (notebook, *more):
        shutil.copy2(repo / "notebooks" / name, root / "notebooks" / name)
    (root / "examples").symlink_to(repo / "examples", target_is_directory=True)
    return root / "notebooks" / notebook


def css_rgb(colour: str) -> str:
    """``#rrggbb`` as a browser's computed style says it: ``rgb(r, g, b)``."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def save_screenshot(page: Any, name: str) -> Path:
    """A screenshot of the window as ``test-artifacts/<name>.png``; returns its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path
