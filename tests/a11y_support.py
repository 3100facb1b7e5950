"""axe-core in a Playwright page: the WCAG 2.1 A and AA rules, run on what tenflang_nb draws
(every ``.tf-root`` output and every training panel's saved picture) apart from the page
around it (Sphinx's theme, nbconvert's template, JupyterLab), whose findings are listed but
are not the package's to fix.

axe-core is the copy ``axe-playwright-python`` ships (the ``browser`` extra): a plain script
injected into the page, so it runs from ``file://`` pages with no network.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import pytest

# the rules of WCAG 2.0 and 2.1, levels A and AA
WCAG_TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")
# the root element of every output the package renders: the views' (views/html.py's page),
# the training panel's (panel/widget.py: its widgets, or its saved picture) and a figure's
# (figures/words.py: its picture, alt text and values)
ROOTS = (".tf-root", ".tenflang-training-panel", ".tf-figure")
PACKAGE = ", ".join(ROOTS)


@cache
def axe_source() -> str:
    """axe-core's script (``axe.min.js``), as ``axe-playwright-python`` bundles it."""
    try:
        package = resources.files("axe_playwright_python")
    except ModuleNotFoundError:
        pytest.skip("axe-playwright-python is not installed (pip install -e '.[browser]')")
    return package.joinpath("axe.min.js").read_text("utf-8")


@dataclass
class AxeReport:
    """The violations axe found in one part of one page: rule id -> the nodes' targets."""

    where: str
    violations: dict[str, list[str]] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)  # rule id -> its help text
    checked: int = 0  # elements the package drew that axe looked at (0: nothing to check)

    def counts(self) -> Counter[str]:
        return Counter({rule: len(nodes) for rule, nodes in self.violations.items()})

    def describe(self) -> str:
        if not self.violations:
            return f"{self.where}: no violations"
        lines = [f"{self.where}:"]
        for rule, nodes in sorted(self.violations.items()):
            lines.append(f"  {rule} ({len(nodes)}): {self.details[rule]}; e.g. {nodes[:3]}")
        return "\n".join(lines)


RUN_JS = """async ([context, tags]) => {
    const result = await axe.run(context, {runOnly: {type: 'tag', values: tags},
                                          resultTypes: ['violations']});
    return result.violations.map(v => ({id: v.id, help: v.help,
        nodes: v.nodes.map(n => n.target.join(' ') + ' :: ' + n.failureSummary)}));
}"""


def _inject(page: Any) -> None:
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=axe_source())


def _report(where: str, found: list[dict[str, Any]]) -> AxeReport:
    report = AxeReport(where)
    for v in found:
        report.violations[v["id"]] = v["nodes"]
        report.details[v["id"]] = v["help"]
    return report


def audit_package(page: Any, where: str) -> AxeReport:
    """axe on every output the package drew on ``page`` (nothing else)."""
    _inject(page)
    n = page.locator(PACKAGE).count()
    if n == 0:
        return AxeReport(where)
    context = {"include": [[root] for root in ROOTS]}
    report = _report(where, page.evaluate(RUN_JS, [context, list(WCAG_TAGS)]))
    report.checked = n
    return report


def audit_chrome(page: Any, where: str) -> AxeReport:
    """axe on the page around the package's outputs (the theme's or template's own markup)."""
    _inject(page)
    context = {"exclude": [[root] for root in ROOTS]}
    return _report(where, page.evaluate(RUN_JS, [context, list(WCAG_TAGS)]))


def rule_counts(reports: list[AxeReport]) -> str:
    """``rule: nodes on pages`` for every rule any report broke, one a line (or ``none``)."""
    total: Counter[str] = Counter()
    pages: Counter[str] = Counter()
    for report in reports:
        total.update(report.counts())
        pages.update(report.violations.keys())
    if not total:
        return "  none"
    return "\n".join(f"  {rule}: {total[rule]} elements on {pages[rule]} pages"
                     for rule in sorted(total))


# Machado, Oliveira and Fernandes (2009), severity 1: what a protanope's and a deuteranope's
# eye makes of linear RGB (the two red-green colour-vision deficiencies, ~6% of men)
CVD_MATRICES = {
    "protanopia": ((0.152286, 1.052583, -0.204868),
                   (0.114503, 0.786281, 0.099216),
                   (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968),
                     (0.280085, 0.672501, 0.047413),
                     (-0.011820, 0.042940, 0.968881)),
}


def _linear(srgb: Any) -> Any:
    import numpy as np

    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def _srgb(linear: Any) -> Any:
    import numpy as np

    linear = np.clip(linear, 0.0, 1.0)
    return np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear ** (1 / 2.4) - 0.055)


def simulate(rgb: Any, kind: str) -> Any:
    """``rgb`` (any shape ending in 3, sRGB in 0..1) as seen with ``kind`` of
    :data:`CVD_MATRICES`.

    >>> import numpy as np
    >>> red, green = simulate(np.array([[1.0, 0, 0], [0, 0.5, 0]]), "deuteranopia").round(2)
    >>> bool(abs(red - green).max() < 0.2)  # pure red and a mid green look nearly alike
    True
    """
    import numpy as np

    return _srgb(_linear(np.asarray(rgb, dtype=float)) @ np.array(CVD_MATRICES[kind]).T)


def simulate_png(path: Any, kind: str) -> Any:
    """A copy of the PNG at ``path`` as seen with ``kind``, beside it (``NAME_KIND.png``)."""
    import numpy as np
    from PIL import Image

    with Image.open(path) as image:
        rgb = np.asarray(image.convert("RGB"), dtype=float) / 255.0
    out = path.with_name(f"{path.stem}_{kind}.png")
    Image.fromarray((simulate(rgb, kind) * 255 + 0.5).astype("uint8")).save(out)
    return out


def lab(rgb: Any) -> Any:
    """sRGB (0..1, shape ...x3) in CIELAB (D65): distances there are what eyes tell apart."""
    import numpy as np

    xyz = _linear(np.asarray(rgb, dtype=float)) @ np.array(
        [[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]),
                     200 * (f[..., 1] - f[..., 2])], axis=-1)


def hex_rgb(colour: str) -> tuple[float, float, float]:
    return tuple(int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))  # type: ignore[return-value]
