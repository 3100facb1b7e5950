"""Sphinx configuration of the TenFlang website: the Guide and the tutorials.

Build it with ``bash scripts/docs`` (into ``docs/_build/html``). The source folder is the
repository itself (``sphinx-build -c docs . OUT``) so that each tutorial keeps its path,
``notebooks/NAME.ipynb``: the Binder buttons open that same file, as the README's links do.
The notebooks are never executed: the site shows the outputs stored in them.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from tenflang_site import BINDER_HUB, BRANCH, MATHJAX_PATH, repository_url  # noqa: E402

project = "TenFlang"
author = "the tenflang_nb authors"
copyright = "the tenflang_nb authors"

extensions = ["myst_nb", "tenflang_site"]

root_doc = "docs/index"
# Everything at the top level but docs/ and notebooks/ is left out by name, so Sphinx does
# not even walk .venv, examples/ or the build folder.
_SOURCES = {"docs", "notebooks"}
exclude_patterns = [
    *sorted(p.name for p in REPO.iterdir() if p.name not in _SOURCES),
    "docs/_build", "**/.ipynb_checkpoints", "notebooks/README.md",
]
include_patterns = ["docs/*.md", "notebooks/*.ipynb"]

# --- notebooks: show what is stored, run nothing
nb_execution_mode = "off"
# MyST-NB would add require.js and the widget manager from a CDN for notebooks that keep
# widget state; ours have none (notebooks/refresh.py strips it), and nothing may come from
# the network: the site must work offline and opened from files.
nb_ipywidgets_js: dict[str, dict[str, str]] = {}
# $...$ and $$...$$ in the notebooks' Markdown cells
myst_enable_extensions = ["dollarmath"]

# --- math: MathJax 3 from the docs extra, served by the site itself (tenflang_site copies it)
mathjax_path = MATHJAX_PATH
# one shared copy of each glyph per page, not one per formula
mathjax3_config = {"svg": {"fontCache": "global"}}

# --- the theme
html_theme = "sphinx_book_theme"
html_title = "TenFlang"
html_static_path = ["_static"]
html_css_files = ["tenflang-site.css"]
# light or dark as the reader's system prefers (the toggle in the header overrides it)
html_context = {"default_mode": "auto"}
html_theme_options = {
    # the one address (pyproject.toml), as in the README's Binder links
    "repository_url": repository_url(),
    "repository_branch": BRANCH,
    "path_to_docs": "",
    "use_repository_button": True,
    "use_download_button": True,
    "launch_buttons": {
        "binderhub_url": BINDER_HUB,
        "notebook_interface": "jupyterlab",
    },
    "show_toc_level": 2,
    "home_page_in_toc": True,
}
