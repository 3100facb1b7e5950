"""Helpers for the website's tests: ``docs/tenflang_site.py`` as a module, and a site build.

The build is the one ``bash scripts/docs`` makes (same ``sphinx-build`` arguments: warnings are
errors, ``--keep-going`` lists them all), into a folder of the caller's choosing.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
SITE_TOOLS = REPO / "docs" / "tenflang_site.py"

# the page of each source, relative to the site's root (the source folder is the repository)
TOUR = "notebooks/01_tour_of_the_three_phases"


@cache
def site_tools() -> ModuleType:
    """``docs/tenflang_site.py`` (not a package: loaded from its path)."""
    spec = importlib.util.spec_from_file_location("tenflang_site", SITE_TOOLS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class SiteBuild:
    """A finished ``sphinx-build``: the HTML folder, its exit status, what it printed."""

    html: Path
    returncode: int
    output: str
    seconds: float

    def warnings(self) -> list[str]:
        return [line for line in self.output.splitlines()
                if "WARNING" in line or "ERROR" in line]

    def page(self, docname: str) -> Path:
        return self.html / f"{docname}.html"


def build_site(folder: Path, timeout: float = 300.0) -> SiteBuild:
    """Build the website into ``folder/html`` as ``scripts/docs`` does."""
    html = folder / "html"
    argv = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q",
            "-c", "docs", ".", str(html)]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    return SiteBuild(html, proc.returncode, proc.stdout + proc.stderr,
                     time.monotonic() - started)


def site_built_once(folder: Path) -> SiteBuild:
    """The build in ``folder``, made by the first caller and read back by the next ones (the
    workers of one pytest-xdist run, taking turns): its record is written last."""
    record = folder / "build.json"
    if record.is_file():
        fields = json.loads(record.read_text("utf-8"))
        return SiteBuild(**{**fields, "html": Path(fields["html"])})
    build = build_site(folder)
    record.write_text(json.dumps({**dataclasses.asdict(build), "html": str(build.html)}),
                      "utf-8")
    return build
