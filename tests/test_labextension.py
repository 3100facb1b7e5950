"""The prebuilt JupyterLab extension that highlights ``%%tenflang`` cells (``labextension/``).

Fast checks (no Node.js): the word lists come from the Python tables, and the committed bundle
in ``tenflang_nb/labextension/`` holds exactly those lists. Slow checks: a clean build from the
lock file reproduces the committed bundle byte for byte (skipped without npm), and both a
regular and an editable install put the extension where JupyterLab looks for it. The browser
test (tests/test_browser.py) checks what a student sees.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

from tenflang_nb.core import lexical
from tenflang_nb.core.lexical import INSTRUCTIONS, KINDS, MACRO_DIRECTIVE, RESERVED_WORDS
from tenflang_nb.core.ops import operator_names
from tenflang_nb.editor_words import (
    editor_css,
    patterns,
    patterns_json,
    word_lists,
    words_json,
    write_words_module,
)
from tenflang_nb.lexer import MAGIC_LINE_PATTERN
from tenflang_nb.notebook.magic import TenFlangMagics
from tenflang_nb.palette import PALETTE

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "labextension"
BUILT = REPO / "tenflang_nb" / "labextension"
NAME = "tenflang-nb"  # the npm name in labextension/package.json: the folder JupyterLab loads
REBUILD = "run `bash scripts/build-labextension` and commit tenflang_nb/labextension/"


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_word_lists_are_the_python_tables() -> None:
    words = word_lists()
    assert words["kinds"] == list(KINDS)
    assert words["operators"] == list(operator_names())
    assert words["instructions"] == list(INSTRUCTIONS)
    assert words["macro"] == [MACRO_DIRECTIVE]
    assert set(words["instructions"]) | set(words["reserved"]) == RESERVED_WORDS - {"="}
    assert not set(words["instructions"]) & set(words["reserved"])


def test_patterns_are_the_lexical_rules() -> None:
    """The highlighter reads names and numbers with the patterns the parser uses: whatever the
    pattern (Python's regular expressions read as JavaScript's) accepts is what lexical does."""
    table = patterns()
    assert table["name"] == lexical.PLAIN_NAME_PATTERN
    assert table["derivative"] == lexical.DERIVATIVE_PATTERN
    assert table["number"] == lexical.NUMBER_PATTERN
    assert table["end"] == lexical.WORD_END
    for token in ("w", "x.0", "_h1", "d/L/d/w", "d/o/d/z:0", "2", "-1.5", ".5", "3e-2", "2x",
                  "inf", "a-b", "\u0663", "1.2.3", "d/L"):
        name = re.fullmatch(table["name"], token) or re.fullmatch(table["derivative"], token)
        assert bool(name) == lexical.matches_name(token), token
        assert bool(re.fullmatch(table["number"], token)) == lexical.is_number(token), token


def test_the_typescript_spells_no_pattern() -> None:
    """Names and numbers come from the generated module, as the words do."""
    source = (SOURCE / "src" / "language.ts").read_text("utf-8")
    for pattern in patterns().values():
        assert pattern not in source
    assert "[eE]" not in source and "A-Za-z_]" not in source


def test_flags_are_the_magic_options_without_a_value() -> None:
    flags = word_lists()["flags"]
    assert "--full" in flags and "--no-live" in flags
    assert "--show" not in flags and "--lr" not in flags
    parser = TenFlangMagics.tenflang.parser
    with_value = {s for a in parser._actions if a.nargs != 0 for s in a.option_strings}
    assert not with_value & set(flags)


def test_words_module(tmp_path: Path) -> None:
    out = tmp_path / "words.ts"
    write_words_module(out)
    text = out.read_text("utf-8")
    assert "do not edit" in text.splitlines()[0]
    assert f"JSON.parse('{words_json()}')" in text
    assert f"JSON.parse('{patterns_json()}')" in text
    assert json.loads(words_json()) == word_lists()
    assert json.loads(patterns_json()) == patterns()


def test_words_json_refuses_what_needs_escaping() -> None:
    with pytest.raises(ValueError, match="cannot be written"):
        words_json({"operators": ["it's"]})
    with pytest.raises(ValueError, match="cannot be written"):
        patterns_json({"number": r"[0-9]+\.[0-9]*"})  # would need escaping twice


def test_committed_bundle_holds_the_current_words() -> None:
    """An operator added to ops.py (or a kind, a reserved word, a magic flag) needs a rebuild;
    this says so without Node.js."""
    bundle = "".join(p.read_text("utf-8") for p in sorted((BUILT / "static").glob("*.js")))
    assert words_json() in bundle, f"the shipped highlighter's words are stale: {REBUILD}"
    assert patterns_json() in bundle, f"the shipped highlighter's patterns are stale: {REBUILD}"
    style = editor_css().replace("\n", " ")
    assert style in bundle, f"the shipped highlighter's colours are stale: {REBUILD}"


def test_the_editor_colours_are_the_palette() -> None:
    """One rule per category in its light colour, one in its dark colour under a dark
    JupyterLab theme; the TypeScript has a tag for every category and spells no colour."""
    style = editor_css()
    source = (SOURCE / "src" / "language.ts").read_text("utf-8")
    for category, colour in PALETTE.items():
        assert (f".cm-editor .cm-tenflang-{category} {{ color: {colour.light};"
                in style), category
        assert (f"body[data-jp-theme-light=false] .cm-editor .cm-tenflang-{category} "
                f"{{ color: {colour.dark} }}" in style), category
        assert re.search(rf"^  {category}: ", source, re.M), f"no tag for {category}"
    assert not re.search(r"#[0-9a-fA-F]{6}\b", source), "a colour spelled in language.ts"


def test_the_magic_line_is_the_lexers() -> None:
    assert patterns()["magic"] == MAGIC_LINE_PATTERN
    for line, magic in (("%%tenflang net", True), ("%%tenflang_check m", True),
                        ("%%tenflang", True), ("%%tenflangx", False), ("%%time", False)):
        assert bool(re.match(MAGIC_LINE_PATTERN, line)) == magic, line


def test_committed_bundle_is_complete() -> None:
    meta = json.loads((BUILT / "package.json").read_text("utf-8"))
    assert meta["name"] == NAME
    assert (BUILT / meta["jupyterlab"]["_build"]["load"]).is_file()
    source = json.loads((SOURCE / "package.json").read_text("utf-8"))
    assert (SOURCE / source["jupyterlab"]["outputDir"]).resolve() == BUILT
    for path, data in _tree(BUILT).items():
        # nothing from the machine that built it: the build must be reproducible anywhere
        assert b"/work/" not in data and str(REPO).encode() not in data, path


@pytest.mark.slow
def test_clean_build_reproduces_the_committed_bundle(tmp_path: Path) -> None:
    """``npm ci`` from the lock file and the production build, in a copy of labextension/,
    give exactly the committed files (about half a minute, most of it npm ci)."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("npm/node not found: cannot rebuild the JupyterLab extension "
                    "(install Node.js >= 20 to run this check)")
    copy = tmp_path / "repo" / "labextension"
    shutil.copytree(SOURCE, copy, ignore=shutil.ignore_patterns(
        "node_modules", "lib", "words.ts", "*.tsbuildinfo"))
    # the build writes src/words.ts with this interpreter, from this checkout's tables
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHON=sys.executable, PYTHONPATH=path, npm_config_audit="false",
               npm_config_fund="false", npm_config_update_notifier="false")
    started = time.monotonic()
    for argv in ([npm, "ci"], [npm, "run", "build"]):
        proc = subprocess.run(argv, cwd=copy, env=env, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, (f"{' '.join(argv)} failed ({proc.returncode}):\n"
                                      f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    built, committed = _tree(tmp_path / "repo" / "tenflang_nb" / "labextension"), _tree(BUILT)
    assert sorted(built) == sorted(committed), f"other files than committed: {REBUILD}"
    differ = [path for path in built if built[path] != committed[path]]
    assert not differ, f"{differ} differ from the committed build: {REBUILD}"
    print(f"\nclean build of the JupyterLab extension: {time.monotonic() - started:.0f} s")


@pytest.mark.slow
@pytest.mark.parametrize("editable", [False, True], ids=["regular", "editable"])
def test_install_puts_the_extension_where_jupyterlab_looks(tmp_path: Path,
                                                           editable: bool) -> None:
    """``pip install .`` and ``pip install -e .`` both install the committed build under
    ``share/jupyter/labextensions/tenflang-nb`` (hatchling's shared-data): no Node.js."""
    # a throw-away venv, filled by this pip through --python: installing with --prefix would
    # first uninstall the package from the environment running the tests
    target = tmp_path / "venv"
    venv.create(target, with_pip=False)
    python = target / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    argv = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
            *(["-e"] if editable else []), str(REPO)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(argv)} failed:\n{proc.stderr[-3000:]}"
    installed = target / "share" / "jupyter" / "labextensions" / NAME
    tree = _tree(installed)
    install_json = json.loads(tree.pop("install.json"))
    assert install_json["packageName"] == "tenflang_nb"
    assert tree == _tree(BUILT)
