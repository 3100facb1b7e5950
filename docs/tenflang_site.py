"""The website's Sphinx extension, and the texts derived from one source each.

Two texts in the repository are copies of something kept elsewhere:

* the Guide's generated tables (``docs/guide.md``: operators, training settings, views),
  which :mod:`tenflang_nb.guide` makes from the code's own tables;
* the README's Binder links start with :func:`binder_base` of the repository's address,
  ``[project.urls] Repository`` in ``pyproject.toml``.

``bash scripts/docs`` rewrites both before building (``tests/test_docs.py`` fails when one is
stale); by hand::

    .venv/bin/python docs/tenflang_site.py sync     # rewrite what is stale, say what changed
    .venv/bin/python docs/tenflang_site.py check    # exit 1 when something is stale

As a Sphinx extension (``docs/conf.py`` loads it) it also puts the current table into the
Guide as it is read, copies MathJax into the site, writes the site's ``index.html``, and
highlights a ``%%tenflang`` cell's body as TenFlang, in the palette's colours (the editor's
and the listings'; :func:`palette_css`).
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (the docs and test extras install tomli there)
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = REPO / "pyproject.toml"
GUIDE = REPO / "docs" / "guide.md"
README = REPO / "README.md"

BINDER_HUB = "https://mybinder.org"
# Binder builds the default branch's newest commit, whatever the branch is called
BRANCH = "HEAD"

# what a Binder link looks like up to its query: hub, /v2/gh/, owner, repository, ref
BINDER_LINK = re.compile(re.escape(BINDER_HUB) + r"/v2/gh/[\w.-]+/[\w.-]+/[\w.-]+")

# The site's entry page: the front page's source is docs/index.md (the source folder is the
# repository, so the tutorials keep their paths), so index.html only points there.
REDIRECT = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>TenFlang</title>
<meta http-equiv="refresh" content="0; url=docs/index.html"></head>
<body><p><a href="docs/index.html">TenFlang: tutorials and Guide</a></p></body></html>
"""


def repository_url(pyproject: Path = PYPROJECT) -> str:
    """The repository's public address, ``[project.urls] Repository`` (no trailing slash).

    >>> repository_url().startswith("https://")
    True
    """
    with pyproject.open("rb") as handle:
        data = tomllib.load(handle)
    return str(data["project"]["urls"]["Repository"]).rstrip("/")


def github_parts(url: str) -> tuple[str, str]:
    """(owner, repository) of a GitHub address.

    >>> github_parts("https://github.com/tenflang/tenflang_nb")
    ('tenflang', 'tenflang_nb')
    """
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/?", url)
    if match is None:
        raise ValueError(f"not a GitHub repository address: {url!r} (Binder's gh/ links "
                         "need one)")
    return match.group(1), match.group(2)


def binder_base(url: str | None = None) -> str:
    """Every Binder link starts with this: the hub, the repository and the branch.

    >>> binder_base("https://github.com/a/b")
    'https://mybinder.org/v2/gh/a/b/HEAD'
    """
    owner, name = github_parts(url or repository_url())
    return f"{BINDER_HUB}/v2/gh/{owner}/{name}/{BRANCH}"


def guide_with_tables(text: str) -> str:
    """The Guide's text with its generated tables made from the code (``tenflang_nb.guide``)."""
    from tenflang_nb.guide import update

    return update(text)


def readme_with_binder(text: str, base: str | None = None) -> str:
    """The README's text with every Binder link starting with :func:`binder_base`.

    >>> readme_with_binder("[x](https://mybinder.org/v2/gh/o/r/main?labpath=n)",
    ...                    "https://mybinder.org/v2/gh/a/b/HEAD")
    '[x](https://mybinder.org/v2/gh/a/b/HEAD?labpath=n)'
    """
    return BINDER_LINK.sub(base or binder_base(), text)


DERIVED: dict[Path, Callable[[str], str]] = {
    GUIDE: guide_with_tables, README: readme_with_binder}


def stale() -> dict[Path, str]:
    """The derived files whose text is not what it should be, with what it should be."""
    out = {}
    for path, derive in DERIVED.items():
        text = path.read_text("utf-8")
        wanted = derive(text)
        if wanted != text:
            out[path] = wanted
    return out


def main(argv: list[str]) -> int:
    if argv not in (["sync"], ["check"]):
        print("usage: python docs/tenflang_site.py sync|check", file=sys.stderr)
        return 2
    changes = stale()
    for path, wanted in changes.items():
        name = path.relative_to(REPO)
        if argv == ["sync"]:
            path.write_text(wanted, "utf-8")
            print(f"tenflang_site: rewrote {name}", file=sys.stderr)
        else:
            print(f"tenflang_site: {name} is stale (run: python docs/tenflang_site.py sync)",
                  file=sys.stderr)
    return 1 if changes and argv == ["check"] else 0


# --- the Sphinx extension ------------------------------------------------------------------

MATHJAX_DIST = "django-static-mathjax"
MATHJAX_FILES = "mathjax/static/mathjax/es5"
# MathJax's SVG output draws glyphs as paths: no font files to fetch, which file:// pages
# could be refused; its other bundles are left out
MATHJAX_BUNDLE = "tex-svg.js"
MATHJAX_PATH = f"mathjax/{MATHJAX_BUNDLE}"


def mathjax_source() -> Path | None:
    """The folder of MathJax's ES5 files from the ``docs`` extra, or None when missing."""
    try:
        folder = Path(str(metadata.distribution(MATHJAX_DIST).locate_file(MATHJAX_FILES)))
    except metadata.PackageNotFoundError:
        return None
    return folder if (folder / MATHJAX_BUNDLE).is_file() else None


def _put_current_table(app: Any, docname: str, source: list[str]) -> None:
    if docname == "docs/guide":
        source[0] = guide_with_tables(source[0])


def _finish(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    from sphinx.util import logging

    out = Path(app.outdir)
    (out / "index.html").write_text(REDIRECT, "utf-8")
    (out / "_static" / PALETTE_CSS).write_text(palette_css(), "utf-8")
    source = mathjax_source()
    if source is None:
        # without it the math shows as TeX source; a warning fails the -W build in CI
        logging.getLogger(__name__).warning(
            "MathJax is missing: pip install -e '.[docs]' (%s)", MATHJAX_DIST)
        return

    def other_bundles(folder: str, names: list[str]) -> list[str]:
        if Path(folder) != source:
            return []
        return [n for n in names if n.endswith(".js") and n != MATHJAX_BUNDLE]

    shutil.copytree(source, out / "_static" / "mathjax", ignore=other_bundles,
                    dirs_exist_ok=True)


PALETTE_CSS = "tenflang-palette.css"


def palette_css() -> str:
    """The palette (``tenflang_nb/palette.py``) for the TenFlang tokens of the site's code
    cells: light, and dark in the site's dark mode. The selectors outweigh the theme's
    Pygments rules (``html[data-theme="light"] .highlight .kt``), whose classes stay.

    >>> palette_css().splitlines()[0].split(" { ")[0]
    '.bd-content div.highlight span.nd-TenFlang'
    """
    from tenflang_nb.lexer import css_class
    from tenflang_nb.palette import css

    return css(lambda c: f".bd-content div.highlight span.{css_class(c)}",
               "html[data-theme=dark]") + "\n"


def setup(app: Any) -> dict[str, Any]:
    from tenflang_nb.lexer import IPythonCellLexer

    # the notebooks' code cells are "ipython3" (their kernel's lexer): the same, but a
    # %%tenflang cell is TenFlang, where IPython's lexer highlights only the magic line
    app.add_lexer("ipython3", IPythonCellLexer)
    app.add_css_file(PALETTE_CSS)
    app.connect("source-read", _put_current_table)
    app.connect("build-finished", _finish)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
