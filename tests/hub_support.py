"""A real JupyterHub for the class test (tests/test_hub_class.py): system users with homes of
their own, the hub on 127.0.0.1 with configurable-http-proxy (npm, installed by scripts/setup
when the `hub` extra is asked for), LocalProcessSpawner running each server as its user, and
clients for the hub's REST API, a user's Jupyter Server and its kernels (websocket)."""

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
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VENV_BIN = Path(sys.executable).parent
# scripts/setup: npm install --prefix "$CHP_PREFIX" configurable-http-proxy
CHP_PREFIX = Path(os.environ.get(
    "TENFLANG_CHP_PREFIX",
    Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tenflang" / "chp"))
CHP_BIN = CHP_PREFIX / "node_modules" / ".bin"
SERVICE = "class-test"  # the hub service whose token the test holds


def missing() -> str | None:
    """Why the hub cannot run here, or None."""
    if os.geteuid() != 0:
        return "the hub spawns each user's server as that user: it needs root"
    if shutil.which("jupyterhub", path=str(VENV_BIN)) is None:
        return "jupyterhub is in the hub extra: pip install -e .[hub]"
    if not (CHP_BIN / "configurable-http-proxy").exists():
        return f"no configurable-http-proxy under {CHP_PREFIX}: TENFLANG_EXTRAS=...,hub " \
               "bash scripts/setup"
    if shutil.which("useradd") is None:
        return "no useradd"
    return None


def _world_executable(path: Path) -> bool:
    """Every user can run ``path``: it and each folder above it are open to others."""
    path = path.resolve()
    return all(p.stat().st_mode & 0o001 for p in (path, *path.parents))


def reachable_prefix(folder: Path, keep: list[Path]) -> list[str]:
    """A command prefix under which every user can run this venv's Python.

    Its interpreter may lie where only root can reach it (pyenv under /root, 0700). Then the
    hub runs in a mount namespace of its own (its servers too) where that folder is an empty
    ``0711`` tmpfs with the interpreter's folder and ``keep`` bound back: nothing else of it
    shows, and the machine's folder stays as it is."""
    python = Path(sys.executable).resolve()
    closed = next((p for p in reversed(python.parents) if not p.stat().st_mode & 0o001), None)
    if closed is None:
        return []
    kept = [python.parents[len(python.parents) - len(closed.parts) - 1],
            *(k for k in keep if k.is_relative_to(closed))]
    script = []
    for i, path in enumerate(kept):
        script += [f"mkdir -p {folder}/kept{i}", f"mount --bind '{path}' {folder}/kept{i}"]
    script.append(f"mount -t tmpfs -o mode=0711 tenflang-hub '{closed}'")
    for i, path in enumerate(kept):
        script += [f"mkdir -p '{path}'", f"mount --bind {folder}/kept{i} '{path}'"]
    return ["unshare", "--mount", "--propagation", "private", "sh", "-ec",
            " && ".join([*script, 'exec "$@"']), "sh"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Users:
    """System users made for one run (``useradd``), removed by :meth:`remove`."""

    home: Path
    names: list[str] = field(default_factory=list)

    def add(self, name: str) -> Path:
        home = self.home / name
        subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--shell",
                        "/bin/sh", "--key", "UMASK=077", name], check=True, capture_output=True)
        self.names.append(name)
        os.chmod(home, 0o700)  # a classmate's home is closed, whatever useradd's default
        return home

    def remove(self) -> None:
        for name in reversed(self.names):
            for pid in _pids_of(name):  # the processes of a user this run made
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["userdel", "--force", "--remove", name], capture_output=True)
        self.names.clear()


def _pids_of(user: str) -> list[int]:
    done = subprocess.run(["ps", "-o", "pid=", "-u", user], capture_output=True, text=True)
    return [int(p) for p in done.stdout.split()]


def unique_names(prefix: str, count: int) -> list[str]:
    """``count`` user names that no other run holds (system user names: short, lowercase)."""
    run = uuid.uuid4().hex[:5]
    return [f"{prefix}{run}{i}" for i in range(count)]


class Hub:
    """JupyterHub as root on 127.0.0.1: DummyAuthenticator (nobody logs in: the people act
    through tokens made by the hub's REST API), LocalProcessSpawner, its database, cookie
    secret and configuration in ``folder`` (``python_config``: Python run after it, for what
    JSON cannot say)."""

    def __init__(self, folder: Path, users: list[str], admins: list[str],
                 environment: dict[str, str], python_config: str = "") -> None:
        self.folder = folder
        self.port, hub_port, api_port = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_hex(32)
        config = {
            "JupyterHub": {
                "ip": "127.0.0.1", "port": self.port, "hub_ip": "127.0.0.1",
                "hub_port": hub_port, "db_url": f"sqlite:///{folder}/jupyterhub.sqlite",
                "cookie_secret_file": str(folder / "cookie_secret"),
                "pid_file": str(folder / "jupyterhub.pid"),
                "authenticator_class": "dummy", "spawner_class": "localprocess",
                "services": [{"name": SERVICE, "api_token": self.token}],
                "load_roles": [{"name": SERVICE, "services": [SERVICE], "scopes": [
                    "admin:users", "admin:servers", "tokens", "access:servers",
                    "read:users", "list:users"]}],
                "cleanup_servers": True},
            "ConfigurableHTTPProxy": {"api_url": f"http://127.0.0.1:{api_port}",
                                      "pid_file": str(folder / "proxy.pid")},
            "Authenticator": {"allowed_users": users, "admin_users": admins},
            "DummyAuthenticator": {"password": secrets.token_hex(16)},
            "Spawner": {"cmd": [str(VENV_BIN / "jupyterhub-singleuser")],
                        "environment": environment, "start_timeout": 180,
                        "http_timeout": 180, "default_url": "/lab"},
        }
        config_file = folder / "jupyterhub_config.json"
        if python_config:  # what JSON cannot say (a callable's value): Python after it
            # (not beside a jupyterhub_config.json: traitlets would load that one over it)
            plain = folder / "settings.json"
            plain.write_text(json.dumps(config, indent=1))
            config_file = folder / "jupyterhub_config.py"
            config_file.write_text(
                "import json\nc = get_config()  # noqa: F821\n"
                f"for _section, _values in json.load(open({str(plain)!r})).items():\n"
                "    for _key, _value in _values.items():\n"
                "        setattr(getattr(c, _section), _key, _value)\n" + python_config)
        else:
            config_file.write_text(json.dumps(config, indent=1))
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([str(VENV_BIN), str(CHP_BIN), env.get("PATH", "")])
        self.log = folder / "jupyterhub.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [*reachable_prefix(folder, [CHP_PREFIX]), str(VENV_BIN / "jupyterhub"), "-f",
                 str(config_file)],
                cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        try:
            self._wait(lambda: request("GET", f"{self.url}/hub/api/", self.token) is not None,
                       60, "the hub to answer")
        except BaseException:
            self.stop()
            raise

    def tail(self, size: int = 6000) -> str:
        return self.log.read_text(errors="replace")[-size:]

    def _wait(self, ready: Any, seconds: float, what: str) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self.process.poll() is not None:
                raise AssertionError(f"the hub stopped while waiting for {what}:\n{self.tail()}")
            try:
                if ready():
                    return
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.5)
        raise AssertionError(f"timed out waiting for {what}:\n{self.tail()}")

    def api(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        try:
            return request(method, f"{self.url}/hub/api{path}", token or self.token, body)
        except urllib.error.HTTPError as error:
            raise AssertionError(f"{method} {path}: {error.code} {error.read()[:2000]!r}\n"
                                 f"{self.tail()}") from None

    def token_for(self, user: str) -> str:
        """A token for ``user`` to reach their own server, made through the hub's API."""
        made = self.api("POST", f"/users/{user}/tokens", {
            "note": "class test", "expires_in": 3600,
            "scopes": [f"access:servers!user={user}", f"read:users!user={user}"]})
        return made["token"]

    def spawn(self, users: list[str], seconds: float = 240) -> None:
        """Start every user's server, then wait until all are ready."""
        for user in users:
            self.api("POST", f"/users/{user}/server")
        self._wait(lambda: all(self.api("GET", f"/users/{u}")["servers"].get("", {})
                               .get("ready") for u in users), seconds, "the servers")

    def server(self, user: str) -> Server:
        return Server(f"{self.url}/user/{user}", self.token_for(user))

    def stop(self) -> None:
        """Stop the hub, which stops the servers and the proxy; kill what is left of its
        process group."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        pid_file = self.folder / "proxy.pid"
        if pid_file.exists():  # the proxy outlives a hub killed before its cleanup
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def request(method: str, url: str, token: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as answer:
        text = answer.read()
    return json.loads(text) if text else {}


class Server:
    """A user's Jupyter Server, reached through the proxy with the user's token."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token

    def api(self, method: str, path: str, body: Any = None) -> Any:
        return request(method, f"{self.url}/api{urllib.parse.quote(path, safe='/?=&')}",
                       self.token, body)

    def get_file(self, path: str) -> Any:
        return self.api("GET", f"/contents/{path}?content=1")["content"]

    def put_notebook(self, path: str, notebook: dict[str, Any]) -> None:
        self.api("PUT", f"/contents/{path}", {"type": "notebook", "format": "json",
                                               "content": notebook})

    def session(self, path: str) -> Kernel:
        """A kernel for the notebook ``path``, as JupyterLab opens one (its working
        directory is the notebook's folder)."""
        made = self.api("POST", "/sessions", {"path": path, "type": "notebook", "name": "",
                                              "kernel": {"name": "python3"}})
        return Kernel(self, made["kernel"]["id"])


@dataclass
class Output:
    text: str  # what the cell printed and displayed as text
    error: str | None  # "Name: message" when it raised


class Kernel:
    """A kernel of a user's server, driven over its websocket as JupyterLab does: a
    connection per cell run (an idle connection that answers no ping is closed by the
    server)."""

    def __init__(self, server: Server, kernel_id: str) -> None:
        self.server, self.id = server, kernel_id
        self.url = server.url.replace("http://", "ws://") + f"/api/kernels/{kernel_id}/channels"
        self.session = uuid.uuid4().hex

    def run(self, code: str) -> Output:
        import websocket  # websocket-client: jupyter_server's test dependency

        socket_ = websocket.create_connection(
            self.url, header=[f"Authorization: token {self.server.token}"], timeout=300)
        try:
            return self._run(socket_, code)
        finally:
            socket_.close()

    def _run(self, socket_: Any, code: str) -> Output:
        msg_id = uuid.uuid4().hex
        socket_.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "",
                       "session": self.session, "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True,
                        "user_expressions": {}, "allow_stdin": False,
                        "stop_on_error": False}}))
        text: list[str] = []
        error = None
        replied = idle = False
        while not (replied and idle):
            frame = socket_.recv()
            if not frame:  # a ping from the server (websocket-client answers it)
                continue
            if isinstance(frame, bytes):
                # a message with binary buffers (a widget's picture, in the legacy binary
                # framing: offsets, then JSON, then the buffers): never a reply, a status or
                # a stream, which are all this client reads
                continue
            msg = json.loads(frame)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                text.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                text.append(content["data"].get("text/plain", ""))
            elif kind == "error":
                error = f"{content['ename']}: {content['evalue']}"
            elif kind == "execute_reply":
                replied = True
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
        return Output("".join(text), error)

    def close(self) -> None:
        self.server.api("DELETE", f"/kernels/{self.id}")
