"""Checking a stepper in a browser against what Python says each step shows.

:func:`expected` replays a :class:`~tenflang_nb.notebook.stepper.StepperRun` to position ``k``
(the first ``k`` steps run); :func:`shown` reads the same things from one ``.tf-stepper`` on a
page (Playwright); :func:`assert_at` compares them: the highlighted GCP line (and that it is
scrolled into view), the node and the edges that light up, every node's label text, the
caption and the step count.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tenflang_nb.notebook.model import TenFlangModel
from tenflang_nb.notebook.stepper import StepperRun

REPO = Path(__file__).resolve().parents[1]
TUTORIAL = "02_backprop_by_hand.ipynb"

# what the page shows of one stepper: the current line, lit node and edges, node labels...
SHOWN_JS = """(root) => {
  const live = root.querySelector('.tf-step-live');
  if (!live) { return null; }
  const pane = live.querySelector('.tf-step-gcp');
  const cur = [...live.querySelectorAll('.tf-step-cur')];
  let inView = null;
  if (cur.length === 1) {
    const p = pane.getBoundingClientRect(), r = cur[0].getBoundingClientRect();
    inView = r.top >= p.top - 1 && r.bottom <= p.bottom + 1;
  }
  const labels = {};
  live.querySelectorAll('g[data-tf-node]').forEach(g => {
    const v = g.querySelector('.tf-slot-value'), d = g.querySelector('.tf-slot-grad');
    labels[g.getAttribute('data-tf-node')] = [v ? v.textContent : null,
                                              d ? d.textContent : null];
  });
  const still = root.querySelector('.tf-step-static');
  return {
    lines: cur.map(e => Number(e.getAttribute('data-tf-step-line'))),
    inView: inView,
    nodes: [...live.querySelectorAll('g.tf-step-node')].map(
      e => e.getAttribute('data-tf-node')),
    edges: [...live.querySelectorAll('g.tf-step-edge')].map(
      e => e.getAttribute('data-tf-edge')).sort(),
    labels: labels,
    caption: live.querySelector('.tf-step-what').textContent,
    numbers: live.querySelector('.tf-step-numbers').textContent,
    count: live.querySelector('.tf-step-count').textContent,
    slider: Number(live.querySelector('.tf-step-slider').value),
    staticShown: still ? getComputedStyle(still).display !== 'none' : false,
  };
}"""


@dataclass(frozen=True)
class Expected:
    line: int | None
    node: str | None
    edges: list[str]
    labels: dict[str, list[str | None]]
    caption: str
    numbers: str
    count: str


def expected(run: StepperRun, k: int) -> Expected:
    """What the stepper shows once its first ``k`` steps have run."""
    rows = {v: dict(r) for v, r in run.start.items()}
    for step in run.steps[:k]:
        for v, row, text in step.updates:
            rows[v][row] = text
    labels = {v: [f"value {r['value']}", f"grad {r['grad']}" if "grad" in r else None]
              for v, r in rows.items()}
    n = len(run.steps)
    if k == 0:
        return Expected(None, None, [], labels, run.intro, "", f"step 0 of {n} · not started")
    s = run.steps[k - 1]
    count = f"step {k} of {n} · {s.phase} pass · line {s.line}"
    return Expected(s.line, s.node, sorted(f"{m} {p}" for m, p in s.edges), labels, s.caption,
                    s.numbers, count)


def shown(stepper: Any) -> dict[str, Any]:
    """The state of one ``.tf-stepper`` (a Playwright locator)."""
    state = stepper.evaluate(SHOWN_JS)
    assert state is not None, "the stepper's script did not run (no .tf-step-live)"
    return dict(state)


def assert_at(stepper: Any, run: StepperRun, k: int, timeout: float = 5.0) -> None:
    """The stepper shows position ``k`` exactly as Python computed it."""
    want = expected(run, k)
    deadline = time.monotonic() + timeout
    while True:  # a click's effect is synchronous, but the page may still be settling
        got = shown(stepper)
        if got["slider"] == k or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    where = f"at step {k}"
    assert got["count"] == want.count, (where, got["count"])
    assert got["slider"] == k, where
    assert got["lines"] == ([] if want.line is None else [want.line]), (where, got["lines"])
    if want.line is not None:
        assert got["inView"], f"{where}: the current GCP line is scrolled out of its pane"
    assert got["nodes"] == ([] if want.node is None else [want.node]), (where, got["nodes"])
    assert got["edges"] == want.edges, (where, got["edges"])
    for v, texts in want.labels.items():
        assert got["labels"].get(v) == texts, (where, v, got["labels"].get(v), texts)
    assert got["caption"] == want.caption, (where, got["caption"])
    assert got["numbers"] == want.numbers, (where, got["numbers"])
    assert not got["staticShown"], f"{where}: the static table shows beside the live stepper"


def step_through(page: Any, stepper: Any, run: StepperRun) -> None:
    """Buttons through every step, then keys back and forth, play/pause, the slider."""
    from playwright.sync_api import expect

    n = len(run.steps)
    assert_at(stepper, run, 0)
    nxt, back = stepper.locator(".tf-step-next"), stepper.locator(".tf-step-back")
    expect(back).to_be_disabled()
    for k in range(1, n + 1):  # the forward pass, then the whole backward pass
        nxt.click()
        assert_at(stepper, run, k)
    expect(nxt).to_be_disabled()
    back.click()
    assert_at(stepper, run, n - 1)
    stepper.locator(".tf-step-first").click()
    assert_at(stepper, run, 0)
    stepper.locator(".tf-step-last").click()
    assert_at(stepper, run, n)

    # the arrow keys (after a click inside the stepper, as a student would)
    stepper.locator(".tf-step-caption").click()
    page.keyboard.press("Home")
    assert_at(stepper, run, 0)
    for k in range(1, n + 1):
        page.keyboard.press("ArrowRight")
        assert_at(stepper, run, k)
    for k in range(n - 1, n - 4, -1):
        page.keyboard.press("ArrowLeft")
        assert_at(stepper, run, k)

    # the slider: it moves itself with the keys, and the stepper follows (one step per key)
    slider = stepper.locator(".tf-step-slider")
    slider.focus()
    page.keyboard.press("Home")
    assert_at(stepper, run, 0)
    for k in (1, 2, 3):
        page.keyboard.press("ArrowRight")
        assert_at(stepper, run, k)

    # play at 4 lines per second; pause stops it where it is; play again runs to the end
    stepper.locator(".tf-step-speed").select_option("4")
    play = stepper.locator(".tf-step-play")
    play.click()
    expect(play).to_have_text(re.compile("pause"))
    deadline = time.monotonic() + 10
    while shown(stepper)["slider"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    play.click()
    expect(play).to_have_text(re.compile("play"))
    paused_at = shown(stepper)["slider"]
    assert 2 <= paused_at < n, paused_at
    time.sleep(0.6)
    assert shown(stepper)["slider"] == paused_at, "play went on after pause"
    assert_at(stepper, run, paused_at)
    play.click()
    deadline = time.monotonic() + 10
    while shown(stepper)["slider"] < n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert_at(stepper, run, n)
    expect(play).to_have_text(re.compile("play"))  # it stops by itself at the end


def back_to_step(stepper: Any, run: StepperRun, k: int) -> None:
    """Back to the first line, then ``k`` steps with the step button."""
    if shown(stepper)["slider"] != 0:  # (the button is disabled at the first line)
        stepper.locator(".tf-step-first").click()
    for _ in range(k):
        stepper.locator(".tf-step-next").click()
    assert_at(stepper, run, k)


def tutorial_run() -> StepperRun:
    """The stepper of notebook 02, computed here: the fan program (from the notebook's cell),
    w = 0.8, on x = 1.5, y = 0.2."""
    cells = json.loads((REPO / "notebooks" / TUTORIAL).read_text("utf-8"))["cells"]
    source = next("".join(c["source"]) for c in cells
                  if "".join(c["source"]).startswith("%%tenflang fan"))
    model = TenFlangModel(source.split("\n", 1)[1], "fan")
    model.weights["w"] = 0.8
    return model.stepper_run({"x": 1.5, "y": 0.2})
