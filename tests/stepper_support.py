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

import numpy as np
from conftest import FAN_OUT

from tenflang_nb.notebook.model import TenFlangModel
from tenflang_nb.notebook.predict import Question
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
    dims: live.querySelector('.tf-step-dims').textContent,
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
    dims: str = ""


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
                    s.numbers, count, f"Shapes: {s.shapes}" if s.shapes else "")


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
    assert got["dims"] == want.dims, (where, got["dims"])
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


def tutorial_run(predict: bool = False) -> StepperRun:
    """The stepper of notebook 02, computed here: the fan program (from the notebook's cell),
    w = 0.8, on x = 1.5, y = 0.2 (``predict``: the one in predict mode)."""
    cells = json.loads((REPO / "notebooks" / TUTORIAL).read_text("utf-8"))["cells"]
    source = next("".join(c["source"]) for c in cells
                  if "".join(c["source"]).startswith("%%tenflang fan"))
    model = TenFlangModel(source.split("\n", 1)[1], "fan")
    model.weights["w"] = 0.8
    return model.stepper_run({"x": 1.5, "y": 0.2}, predict=predict)


# the cells of every heatmap on the live graph: node -> row -> [(fill, title)]
HEAT_JS = """(root) => {
  const found = {};
  root.querySelectorAll('.tf-step-live g[data-tf-node]').forEach(g => {
    g.querySelectorAll('g.tf-hm').forEach(hm => {
      const node = g.getAttribute('data-tf-node');
      found[node] = found[node] || {};
      found[node][hm.getAttribute('data-tf-hm')] = [...hm.querySelectorAll('rect')].map(
        r => [r.getAttribute('fill'), r.querySelector('title')?.textContent ?? null]);
    });
  });
  return found;
}"""

# a small MLP on tensors: x [6] -> 5 tanh units -> 4 class scores, softmax cross-entropy
MLP = """\
declare input x [6]
declare exp_output y [4]
declare weight W1 [6, 5]
declare weight b1 [5]
declare weight W2 [5, 4]
declare intvar a1
declare intvar z1
declare intvar h
declare intvar a2
declare intvar logp
declare intvar ylogp
declare intvar total
declare loss lambda
define a1 = matmul x W1
define z1 = add a1 b1
define h = tanh z1
define a2 = matmul h W2
define logp = logsoftmax a2
define ylogp = mul y logp
define total = sum ylogp
define lambda = neg total
"""
# the notebook cell that sets its weights and steps through it (tests/test_stepper_browser.py)
MLP_CELL = """\
rng = np.random.default_rng(1)
mlp.weights.update(W1=rng.normal(size=(6, 5)).round(2), b1=rng.normal(size=5).round(2),
                   W2=rng.normal(size=(5, 4)).round(2))
mlp.stepper({"x": [0.5, -1.0, 0.25, 1.5, 0.0, -0.75], "y": [0, 0, 1, 0]})"""


def mlp_run(predict: bool = False) -> StepperRun:
    """What the notebook's MLP stepper shows, computed here (the same lines as MLP_CELL)."""
    model = TenFlangModel(MLP, "mlp")
    rng = np.random.default_rng(1)
    model.weights.update(W1=rng.normal(size=(6, 5)).round(2), b1=rng.normal(size=5).round(2),
                         W2=rng.normal(size=(5, 4)).round(2))
    return model.stepper_run({"x": [0.5, -1.0, 0.25, 1.5, 0.0, -0.75], "y": [0, 0, 1, 0]},
                             predict=predict)


def assert_heatmaps(stepper: Any, run: StepperRun, k: int) -> None:
    """Every heatmap on the live graph at position ``k``: each cell coloured as Python
    colours its entry (grey, with no fill of its own, before its line has run) and titled
    with its value."""
    from tenflang_nb.core.formatting import fmt_number
    from tenflang_nb.notebook.views.heatmap import PALETTE_CODES, levels
    from tenflang_nb.notebook.views.step import heatmapped

    now = {(v, "value"): x for v, x in run.start_tensors.items()}
    for step in run.steps[:k]:
        for v, row, x in step.tensors:
            now[(v, row)] = x
    shown = stepper.evaluate(HEAT_JS)
    drawn = heatmapped(run)
    assert set(shown) == set(drawn), (k, set(shown) ^ set(drawn))
    for v, rows in drawn.items():
        for row in rows:
            cells = shown[v][row]
            x = now.get((v, row))
            if x is None:
                assert all(fill is None for fill, _ in cells), (k, v, row)
                continue
            name = v if row == "value" else f"d/{run.loss}/d/{v}"
            assert [f for f, _ in cells] == [PALETTE_CODES[c] for c in levels(x)], (k, v, row)
            corners = ((0,) * x.ndim, tuple(d - 1 for d in x.shape))
            titles = [f"{name}[{', '.join(map(str, at))}] = {fmt_number(x[at], 4)}"
                      for at in corners]
            assert [cells[0][1], cells[-1][1]] == titles, (k, v, row)


# the fan program of notebook 02 in predict mode (tests/test_stepper_browser.py's cells)
EXAMPLE_FAN = {"x": 1.5, "y": 0.2}
FAN_CELLS = ("%%tenflang fan --show none\n" + FAN_OUT,
             'fan.weights["w"] = 0.8\nfan.stepper({"x": 1.5, "y": 0.2}, predict=True)')
MLP_PREDICT_CELL = ('mlp.stepper({"x": [0.5, -1.0, 0.25, 1.5, 0.0, -0.75], '
                    '"y": [0, 0, 1, 0]}, predict=True)')


def fan_predict_run() -> StepperRun:
    model = TenFlangModel(FAN_OUT, "fan")
    model.weights["w"] = 0.8
    return model.stepper_run(EXAMPLE_FAN, predict=True)


ASKED_JS = """(root) => {
  const live = root.querySelector('.tf-step-live');
  const ask = live.querySelector('.tf-step-ask');
  const guess = live.querySelector('.tf-step-guess');
  return {
    asking: !ask.hidden,
    focused: document.activeElement === guess,
    value: guess.value,
    feedback: live.querySelector('.tf-step-feedback').textContent,
    verdict: live.querySelector('.tf-step-feedback').getAttribute('data-tf-verdict'),
    score: live.querySelector('.tf-step-score').textContent,
    what: live.querySelector('.tf-step-what').textContent,
    asked: [...live.querySelectorAll('.tf-step-asked')].map(
      e => Number(e.getAttribute('data-tf-step-line'))),
    outlined: live.querySelectorAll('rect.tf-hm-ask').length,
    slider: Number(live.querySelector('.tf-step-slider').value),
    rowsHidden: [...live.querySelectorAll('[data-tf-step-line]')].filter(
      e => e.style.visibility === 'hidden').map(e => Number(e.getAttribute('data-tf-step-line'))),
    rhsHidden: [...live.querySelectorAll('.tf-step-rhs')].filter(
      e => e.style.visibility === 'hidden').map(
      e => Number(e.closest('[data-tf-step-line]').getAttribute('data-tf-step-line'))),
  };
}"""


def asked(stepper: Any) -> dict[str, Any]:
    return dict(stepper.evaluate(ASKED_JS))


def assert_concealed(stepper: Any, run: StepperRun, q: Question | None) -> None:
    """Until the question ``q`` (the next open one) is answered, its line shows no
    right-hand side and no later line of the listing shows (None: nothing is hidden)."""
    from tenflang_nb.notebook.views.listing import MAX_LISTED

    state = asked(stepper)
    if q is None or not run.hide_lines:
        assert state["rowsHidden"] == state["rhsHidden"] == [], state
        return
    line = run.steps[q.step].line
    assert state["rhsHidden"] == [line], (q.adjoint, state)
    listed = min(len(run.gcp.lines), MAX_LISTED)
    assert state["rowsHidden"] == list(range(line + 1, listed + 1)), (q.adjoint, state)


def predict_through(page: Any, stepper: Any, run: StepperRun, shot: str | None = None
                    ) -> list[str]:
    """Answer the questions of ``run`` as a student would, with the keyboard: a wrong value
    that a hint explains, then the right one; the next right at once; the third revealed;
    back to the start and forward again (nothing answered is asked again); the score after
    each. Returns the screenshots' paths (``shot``: their name's start)."""
    from playwright.sync_api import expect

    from tenflang_nb.core.formatting import fmt_number

    shots: list[str] = []
    questions = run.questions
    first, second, third = questions[:3]
    stepper.locator(".tf-step-caption").click()
    page.keyboard.press("End")  # forward: stops at the first question
    state = asked(stepper)
    assert state["asking"] and state["focused"], state
    assert state["slider"] == first.step and state["what"] == first.text
    assert state["asked"] == [run.steps[first.step].line]
    assert state["score"] == f"{len(questions)} to predict"
    assert_concealed(stepper, run, first)  # the formula is the answer: hidden (issue 25)
    expect(stepper.locator(".tf-step-next")).to_be_disabled()
    # a wrong value, typed (digits and Enter must reach the input, not the notebook)
    wrong = first.mistakes[0]
    typed = fmt_number(wrong.value, 4)
    page.keyboard.type(typed)
    assert asked(stepper)["value"] == typed
    page.keyboard.press("Enter")
    state = asked(stepper)
    assert state["asking"] and state["verdict"] == "hint", state
    assert state["feedback"] == f"✗ Not {typed}. Hint: {wrong.hint}. Try again, or reveal."
    if shot:
        shots.append(str(_shot(page, stepper, f"{shot}_hint")))
    # then the right one: the line is revealed, the stepper moves on to it
    page.keyboard.type(fmt_number(first.right, 4))  # the wrong value is selected: replaced
    page.keyboard.press("Enter")
    state = asked(stepper)
    assert not state["asking"] and state["verdict"] == "right", state
    assert state["feedback"].startswith(f"✓ Right: {first.adjoint} = ")
    assert state["slider"] == first.step + 1
    assert_at(stepper, run, first.step + 1)
    assert state["score"] == f"0 of 1 first try · {len(questions) - 1} to predict"
    assert_concealed(stepper, run, second)  # shown up to the next question's line
    if shot:
        shots.append(str(_shot(page, stepper, f"{shot}_right")))
    # the second, right the first time (the stepper has the keyboard again)
    page.keyboard.press("End")
    state = asked(stepper)
    assert state["asking"] and state["focused"] and state["slider"] == second.step
    page.keyboard.type(fmt_number(second.right, 4))
    page.keyboard.press("Enter")
    state = asked(stepper)
    assert state["feedback"].startswith("✓ Right, first try")
    assert state["score"] == f"1 of 2 first try · {len(questions) - 2} to predict"
    # the third, revealed with one click
    page.keyboard.press("End")
    assert asked(stepper)["slider"] == third.step
    stepper.locator(".tf-step-reveal").click()
    state = asked(stepper)
    assert not state["asking"] and state["verdict"] == "revealed"
    assert state["score"] == f"1 of 3 first try · {len(questions) - 3} to predict"
    assert_at(stepper, run, third.step + 1)
    assert_concealed(stepper, run, questions[3] if len(questions) > 3 else None)
    # back to the start and forward: only what is still open is asked
    stepper.locator(".tf-step-first").click()
    stepper.locator(".tf-step-last").click()
    state = asked(stepper)
    if len(questions) > 3:
        assert state["asking"] and state["slider"] == questions[3].step
    else:
        assert not state["asking"] and state["slider"] == len(run.steps)
    return shots


def _shot(page: Any, stepper: Any, name: str) -> Any:
    from browser_support import save_screenshot

    stepper.evaluate("e => e.scrollIntoView({block: 'start'})")
    time.sleep(0.2)
    return save_screenshot(page, name)


def assert_outlined(page: Any, stepper: Any, run: StepperRun) -> None:
    """A tensor's question outlines the entry it asks for on the node's grad heatmap."""
    stepper.locator(".tf-step-caption").click()
    page.keyboard.press("End")
    for q in run.questions:
        state = asked(stepper)
        assert state["asking"] and state["slider"] == q.step, (state, q.adjoint)
        drawn = q.entry is not None and int(np.prod(q.shape)) <= 400
        assert state["outlined"] == (1 if drawn else 0), q.adjoint
        stepper.locator(".tf-step-reveal").click()
        page.keyboard.press("End")
    assert not asked(stepper)["asking"]
