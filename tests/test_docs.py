"""The website (``bash scripts/docs``) and the texts that come from one source each.

* The site builds with no warning (``sphinx-build -W --keep-going``, as CI and scripts/docs),
  has a page per tutorial and the Guide, and loads nothing from the network.
* The README's Binder links, and the site's launch and repository buttons, use the one
  repository address, ``[project.urls] Repository`` in pyproject.toml.

``tests/test_site_browser.py`` opens the built pages in Chromium.
"""

from __future__ import annotations

import re

from docs_support import REPO, TOUR, SiteBuild, site_tools

SYNC = "run: .venv/bin/python docs/tenflang_site.py sync"
NOTEBOOKS = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))
# an element that makes the browser fetch something: scripts, stylesheets, images, frames
FETCHING = re.compile(
    r"<(?:script|link|img|iframe|source|embed)\b[^>]*?\b(?:src|href)=[\"']([^\"']+)", re.I)


# --- one source each (the Guide's generated tables: tests/test_architecture.py)


def test_readme_binder_links_use_the_repository_address() -> None:
    tools = site_tools()
    base = tools.binder_base(tools.repository_url())
    readme = (REPO / "README.md").read_text("utf-8")
    links = re.findall(r"https://mybinder\.org/v2/[^\s)\"']+", readme)
    assert links, "the README has no Binder link"
    wrong = [link for link in links if not link.startswith(f"{base}?")]
    assert not wrong, f"Binder links not made from {base}: {wrong}; {SYNC}"
    # the badge and one link per tutorial
    opened = {m for link in links for m in re.findall(r"labpath=notebooks%2F([\w.-]+)\.ipynb",
                                                      link)}
    assert opened == set(NOTEBOOKS), f"README links open {sorted(opened)}"


def test_nothing_derived_is_stale() -> None:
    stale = site_tools().stale()
    assert not stale, f"stale: {[str(p.relative_to(REPO)) for p in stale]}; {SYNC}"


# --- the website


def test_website_builds_without_warnings(website: SiteBuild) -> None:
    assert website.returncode == 0 and not website.warnings(), \
        f"sphinx-build failed ({website.returncode}):\n{website.output[-6000:]}"
    assert website.seconds < 60, f"the site took {website.seconds:.0f} s to build"
    print(f"\nwebsite built in {website.seconds:.1f} s")


def test_website_has_every_page(website: SiteBuild) -> None:
    for docname in ["docs/index", "docs/guide", *(f"notebooks/{n}" for n in NOTEBOOKS)]:
        assert website.page(docname).is_file(), f"no page for {docname}"
    entry = (website.html / "index.html").read_text("utf-8")
    assert 'href="docs/index.html"' in entry, "index.html does not lead to the front page"
    tools = site_tools()
    assert (website.html / "_static" / tools.MATHJAX_PATH).is_file(), "MathJax not copied"


def test_website_fetches_nothing_from_the_network(website: SiteBuild) -> None:
    """Every script, stylesheet and image comes with the site (it must work offline and from
    file:// URLs); links a reader clicks (Binder, the repository) may leave it."""
    remote = {}
    for page in sorted(website.html.rglob("*.html")):
        found = [url for url in FETCHING.findall(page.read_text("utf-8"))
                 if re.match(r"(?i)(https?:)?//", url)]
        if found:
            remote[str(page.relative_to(website.html))] = found
    assert not remote, f"pages that fetch from the network: {remote}"


def test_tutorial_pages_keep_their_views(website: SiteBuild) -> None:
    html = website.page(TOUR).read_text("utf-8")
    assert 'class="tf-svg' in html, "no data-flow graph SVG on the tour page"
    assert "tf-gcp-line" in html and "tf-shape-line" in html, "no side-by-side listing"
    assert "data-tf-bound" in html, "the listing's hover script is missing"


def test_launch_and_repository_buttons_use_the_repository_address(website: SiteBuild) -> None:
    tools = site_tools()
    repository = tools.repository_url()
    for name in NOTEBOOKS:
        html = website.page(f"notebooks/{name}").read_text("utf-8")
        binder = f"{tools.binder_base(repository)}?urlpath=lab/tree/notebooks/{name}.ipynb"
        assert f'href="{binder}"' in html, f"{name}: no Binder button to {binder}"
        assert f'href="{repository}"' in html, f"{name}: no repository button to {repository}"
