"""docs/hub/config.yaml, the Zero to JupyterHub configuration of the teachers' page (issue 26):
valid for the chart (its own values schema, vendored under tests/data/z2jh/), its postStart
hook, its student-key snippet and its students' Jupyter configuration run for real."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "docs" / "hub" / "config.yaml"
CHART = Path(__file__).parent / "data" / "z2jh"
TEACHERS = REPO / "docs" / "teachers.md"
IMAGE_REPO = "/srv/tenflang"  # where the config says the image holds the repository


def config() -> dict[str, Any]:
    return yaml.safe_load(CONFIG.read_text())


def merged(defaults: Any, values: Any) -> Any:
    """Helm's merge of a values file over the chart's defaults: maps key by key, anything
    else replaced, a null removing the default."""
    if not (isinstance(defaults, dict) and isinstance(values, dict)):
        return copy.deepcopy(values)
    out = copy.deepcopy(defaults)
    for key, value in values.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merged(out.get(key), value)
    return out


def chart_errors(values: dict[str, Any]) -> list[str]:
    schema = yaml.safe_load((CHART / "values.schema.yaml").read_text())
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(merged(defaults, values))]


def test_the_config_is_valid_for_the_chart() -> None:
    assert chart_errors(config()) == []


def test_the_schema_refuses_a_misspelt_setting() -> None:
    """The check bites: the chart's schema closes its sections (additionalProperties)."""
    values = config()
    values["singleuser"]["memory"]["guarante"] = values["singleuser"]["memory"].pop(
        "guarantee")
    assert any("guarante" in e for e in chart_errors(values))
    values = config()
    values["singleuser"]["cpu"]["limit"] = "one"
    assert any(e.startswith("singleuser.cpu.limit") for e in chart_errors(values))


def _megabytes(quantity: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([MG])", quantity).groups()
    return int(number) * (1024 if unit == "G" else 1)


def test_the_resources_are_the_teachers_pages() -> None:
    """The guarantee and limit are the capacity section's (the figures they come from)."""
    section = TEACHERS.read_text().split("## Capacity for a class", 1)[1].split("\n## ")[0]
    single = config()["singleuser"]
    for kind in ("guarantee", "limit"):
        quantity = single["memory"][kind]
        assert f"memory {kind} {_megabytes(quantity)} MB" in section, (kind, quantity)
    assert single["cpu"]["guarantee"] < single["cpu"]["limit"] <= 1
    assert _megabytes(single["memory"]["guarantee"]) < _megabytes(single["memory"]["limit"])


def _post_start(home: Path) -> subprocess.CompletedProcess[str]:
    command = config()["singleuser"]["lifecycleHooks"]["postStart"]["exec"]["command"]
    assert command[:2] == ["sh", "-c"]
    script = command[2].replace(IMAGE_REPO, str(REPO))
    env = {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "JUPYTER_DATA_DIR": str(home / ".local/share/jupyter")}
    return subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_post_start_puts_the_tutorials_in_the_home_once(tmp_path: Path) -> None:
    from nbformat import read
    from nbformat.sign import NotebookNotary

    home = tmp_path / "home"
    home.mkdir()
    done = _post_start(home)
    assert done.returncode == 0, done.stderr
    tutorials = sorted(p.name for p in (REPO / "notebooks").glob("0*.ipynb"))
    assert sorted(p.name for p in (home / "notebooks").glob("0*.ipynb")) == tutorials
    assert (home / "examples" / "logistic" / "training_data.txt").is_file()
    notary = NotebookNotary(data_dir=str(home / ".local/share/jupyter"))
    for name in tutorials:  # trusted in the student's own trust database
        assert notary.check_signature(read(home / "notebooks" / name, as_version=4)), name
    mine = home / "notebooks" / tutorials[0]
    mine.write_text("a student's own version")
    (home / "examples" / "mine.txt").write_text("x")
    assert _post_start(home).returncode == 0
    assert mine.read_text() == "a student's own version"
    assert (home / "examples" / "mine.txt").exists()


def test_each_student_gets_their_own_key() -> None:
    """The hub's extraConfig, run as the chart's jupyterhub_config.py runs it (a traitlets
    config ``c``), gives each user the key tenflang_nb computes from the course's secret."""
    snippet = config()["hub"]["extraConfig"]["tenflang-student-key.py"]
    runner = textwrap.dedent("""
        import json, sys, types
        from traitlets.config import Config
        c = Config()
        exec(compile(sys.stdin.read(), "extraConfig", "exec"), {"c": c})
        made = c.KubeSpawner.environment  # a lazy update where nothing set it before
        env = made.get_value({}) if hasattr(made, "get_value") else made
        print(json.dumps({u: env["TENFLANG_COURSE_KEY"](types.SimpleNamespace(
            user=types.SimpleNamespace(name=u))) for u in ("ada", "bob")}))
    """)
    done = subprocess.run([sys.executable, "-c", runner], input=snippet, capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "TENFLANG_COURSE_SECRET": "s3cret\n"})
    assert done.returncode == 0, done.stderr
    from tenflang_nb.core.grading import student_key

    assert json.loads(done.stdout) == {u: student_key("s3cret", u) for u in ("ada", "bob")}


def _students_etc(root: Path) -> Path:
    """The config's extraFiles written where they are mounted, under ``root``."""
    for item in config()["singleuser"]["extraFiles"].values():
        path = root / item["mountPath"].lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(item["stringData"] if "stringData" in item
                        else json.dumps(item["data"]))
    return root / "etc" / "jupyter"


def test_the_students_nbgrader_config_uses_ngshare(tmp_path: Path) -> None:
    text = (_students_etc(tmp_path) / "nbgrader_config.py").read_text()
    compile(text, "nbgrader_config.py", "exec")  # Python that parses
    assert "configureExchange(c, " in text and "ngshare" in text
    assert config()["hub"]["services"]["ngshare"]["url"] in text


@pytest.mark.slow
def test_a_students_server_has_no_instructor_extensions(tmp_path: Path) -> None:
    """A Jupyter server reading the students' files (at the front of its config path) serves
    no formgrader and tells JupyterLab to leave nbgrader's instructor panels out."""
    from hub_support import free_port

    etc = _students_etc(tmp_path)
    port, token = free_port(), "t" * 32
    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(etc), "JUPYTER_CONFIG_DIR":
           str(tmp_path / "user"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1",
         f"--IdentityProvider.token={token}", "--no-browser", "--allow-root",
         f"--ServerApp.root_dir={tmp_path}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"

    def get(path: str) -> tuple[int, str]:
        req = urllib.request.Request(base + path, headers={"Authorization": f"token {token}"})
        try:
            with urllib.request.urlopen(req, timeout=30) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, ""

    try:
        for _ in range(240):
            assert server.poll() is None, server.communicate()[1][-3000:]
            try:
                if get("/api/status")[0] == 200:
                    break
            except OSError:
                time.sleep(0.5)
        assert get("/formgrader")[0] == 404
        assert get("/assignments?course_id=x")[0] != 404  # the students' Assignments tab
        status, page = get("/lab")
        assert status == 200
        data = json.loads(re.search(r'id="jupyter-config-data"[^>]*>(.*?)</script>', page,
                                    re.S).group(1))
        off = data["disabledExtensions"]
        assert {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:course-list",
                "@jupyter/nbgrader:create-assignment"} <= set(off)
        assert "@jupyter/nbgrader:assignment-list" not in off
    finally:
        server.terminate()
        server.wait(30)
