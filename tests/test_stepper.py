"""The stepper without a browser: ``model.trace`` against the interpreter, the captions, nodes,
edges and label changes of each step (the seed's backward pass, fan-out partial sums, tensors),
and the HTML: ids scoped to one output, data that points at elements that exist, nothing
fetched, and a static table that reads correctly where scripts and styles are stripped.

``tests/test_stepper_browser.py`` drives it in JupyterLab, in an nbconvert export and on the
website."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

import numpy as np
import pytest
from conftest import EXAMPLES, FAN_OUT
from lab_sanitizer import sanitize, shown_text

from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.lexical import split_derivative
from tenflang_nb.core.plan import Plan, interpret
from tenflang_nb.core.syntax import Define
from tenflang_nb.notebook.model import TenFlangModel
from tenflang_nb.notebook.stepper import Step
from tenflang_nb.notebook.views import VIEWS, parse_views
from tenflang_nb.notebook.views.html import static_text

FAN = FAN_OUT
# a used by three lines, once twice in one (d = mul a a)
THREE = FAN.replace("declare loss L", "declare intvar d\ndeclare intvar q\ndeclare loss L") \
    .replace("define o = add b c", "define d = mul a a\ndefine q = add b d\ndefine o = add q c")
# the loss itself uses a, which other lines use too; a copy; a weight that cannot matter
MIXED = """\
declare input x [3]
declare weight b
declare weight u
declare weight W [3]
declare intvar z
declare intvar h
declare intvar k
declare intvar s
declare intvar t
declare loss L
define z = add x b
define h = mul z W
define k = h
define s = sum k
define t = mul u 0
define L = s
"""


def seed() -> TenFlangModel:
    model = TenFlangModel(SEED_EXAMPLE, "net")
    model.weights["w"] = 0.8
    return model


def fan(text: str = FAN) -> TenFlangModel:
    model = TenFlangModel(text, "fan")
    model.weights["w"] = 0.8
    return model


def xor() -> TenFlangModel:
    model = TenFlangModel((EXAMPLES / "xor" / "shape.tf").read_text(), "xor")
    model.weights["W1"] = np.arange(8.0).reshape(2, 4) / 10
    model.weights["W2"] = np.array([0.5, -0.5, 0.25, 1.0])
    return model


def backward(steps: list[Step]) -> list[Step]:
    return [s for s in steps if s.phase == "backward"]


# ------------------------------------------------------------------------------ the trace


@pytest.mark.parametrize("make, example", [
    (seed, {"x": 1.5, "y": 0.2}),
    (fan, {"x": 1.5, "y": 0.2}),
    (lambda: fan(THREE), {"x": -0.7, "y": 0.4}),
    (xor, {"x": [1.0, 0.5], "y": 1.0}),
    (seed, {"x": 2.0, "y": None}),  # no expected output: the loss and its adjoints are NULL
], ids=["seed", "fan", "three-uses", "xor-tensors", "null"])
def test_trace_equals_the_interpreter(make: Any, example: dict[str, Any]) -> None:
    model = make()
    steps = model.trace(example)
    # the GCP run by the plan on the same example, every value it holds
    inputs = {k: np.asarray(v, dtype=float) for k, v in example.items() if v is not None}
    run = Plan(model.gcp_program).bind({**inputs, **model.weights}, 1)
    run.run()
    defines = [d for d in model.gcp_program.statements if isinstance(d, Define)]
    assert [s.name for s in steps] == [d.target for d in defines]
    for s in steps:
        expected = run.value(s.name)
        if expected is None:
            assert s.value is None, s.name
        else:
            np.testing.assert_array_equal(np.asarray(s.value), expected[0], err_msg=s.name)
    # and the interpreter's results (outputs, loss) are the trace's last word on them
    last = {s.name: s.value for s in steps}
    for name, value in interpret(model.gcp_program, {**example, **model.weights}).items():
        if value is None:
            assert last[name] is None
        else:
            np.testing.assert_array_equal(np.asarray(last[name]), value)


def test_trace_lines_point_at_the_gcp_text() -> None:
    model = seed()
    lines = model.gcp.splitlines()
    steps = model.trace({"x": 1.5, "y": 0.2})
    for s in steps:
        assert lines[s.line - 1].startswith(f"define {s.name} = "), (s.line, s.name)
    numbers = [s.line for s in steps]
    assert numbers == sorted(numbers)
    backward_starts = lines.index(next(t for t in lines if t.startswith("# backward pass"))) + 1
    phases = ["forward" if s.line < backward_starts else "backward" for s in steps]
    assert phases == ["forward"] * 4 + ["backward"] * 8


# ------------------------------------------------------------------------------ the seed


SEED_BACKWARD = [
    (19, "diff", (("diff", "lambda"),),
     "d/lambda/d/diff = 2 × diff: the local partial of lambda = pow diff 2 with respect to "
     "diff; diff's only use is the loss, so this is already diff's adjoint",
     "= 2 × 0.5685 = 1.137"),
    (22, None, (("o", "diff"),),
     "d/diff/d/o = 1: the local partial of diff = sub o y with respect to o (how much diff "
     "moves per unit of o)", "= 1"),
    (25, "o", (("o", "diff"),),
     "d/lambda/d/o = d/lambda/d/diff × d/diff/d/o: the chain rule through diff = sub o y, "
     "o's only use", "= 1.137 × 1 = 1.137"),
    (27, None, (("z", "o"),),
     "d/o/d/z:0 = 1 - o: a step towards d/o/d/z, the local partial of o = logistic z with "
     "respect to z", "= 1 - 0.7685 = 0.2315"),
    (29, None, (("z", "o"),),
     "d/o/d/z = o × (1 - o): the local partial of o = logistic z with respect to z (how much "
     "o moves per unit of z)", "= 0.7685 × 0.2315 = 0.1779"),
    (32, "z", (("z", "o"),),
     "d/lambda/d/z = d/lambda/d/o × d/o/d/z: the chain rule through o = logistic z, z's "
     "only use", "= 1.137 × 0.1779 = 0.2023"),
    (34, None, (("w", "z"),),
     "d/z/d/w = x: the local partial of z = mul x w with respect to w (how much z moves per "
     "unit of w)", "= 1.5"),
    (37, "w", (("w", "z"),),
     "d/lambda/d/w = d/lambda/d/z × d/z/d/w: the chain rule through z = mul x w, w's only "
     "use", "= 0.2023 × 1.5 = 0.3034"),
]


def test_seed_backward_pass_line_by_line() -> None:
    run = seed().stepper_run({"x": 1.5, "y": 0.2})
    got = [(s.line, s.node, s.edges, s.caption, s.numbers) for s in backward(run.steps)]
    assert got == SEED_BACKWARD


def test_seed_forward_pass_gives_each_node_its_value() -> None:
    run = seed().stepper_run({"x": 1.5, "y": 0.2})
    forward = [s for s in run.steps if s.phase == "forward"]
    assert [(s.node, s.edges, s.updates) for s in forward] == [
        ("z", (("x", "z"), ("w", "z")), (("z", "value", "1.2"),)),
        ("o", (("z", "o"),), (("o", "value", "0.7685"),)),
        ("diff", (("o", "diff"), ("y", "diff")), (("diff", "value", "0.5685"),)),
        ("lambda", (("diff", "lambda"),), (("lambda", "value", "0.3232"),)),
    ]
    assert forward[1].caption == ("o = 1 / (1 + exp(-z)): forward pass (logistic: logistic "
                                  "sigmoid)")
    assert forward[1].numbers == "= 1 / (1 + exp(-1.2)) = 0.7685"
    # before any line: the given values are in, everything computed is still unknown
    assert run.start["x"] == {"value": "1.5"} and run.start["w"] == {"value": "0.8",
                                                                      "grad": "?"}
    assert run.start["z"] == {"value": "?", "grad": "?"}
    assert "{x: 1.5, y: 0.2}" in run.intro and "w = 0.8" in run.intro


def test_seed_adjoints_arrive_on_their_nodes() -> None:
    run = seed().stepper_run({"x": 1.5, "y": 0.2})
    grads = [u for s in backward(run.steps) for u in s.updates]
    # the loss's own adjoint 1 first, then each adjoint as its line runs
    assert grads == [("lambda", "grad", "1"), ("diff", "grad", "1.137"), ("o", "grad", "1.137"),
                     ("z", "grad", "0.2023"), ("w", "grad", "0.3034")]
    values = seed().values({"x": 1.5, "y": 0.2})
    assert f"{float(values['w'][1]):.4g}" == "0.3034"  # the same number as the full GCP's


# ------------------------------------------------------------------------------ fan-out


def test_fan_out_partial_sums_arrive_and_add_up() -> None:
    steps = backward(fan().stepper_run({"x": 1.5, "y": 0.2}).steps)
    on_a = [(s.name, s.node, s.edges, s.updates) for s in steps if s.node == "a"]
    assert on_a == [
        ("d/L/d/a:0", "a", (("a", "c"),), (("a", "grad", "0.8554"),)),
        ("d/L/d/a:1", "a", (("a", "b"),), (("a", "grad", "0.8554 + 0.4989"),)),
        ("d/L/d/a", "a", (("a", "c"), ("a", "b")), (("a", "grad", "1.354"),)),
    ]
    captions = {s.name: s.caption for s in steps}
    assert captions["d/L/d/a:0"] == ("d/L/d/a:0 = d/L/d/c × d/c/d/a: the contribution of a's "
                                     "use in c, the chain rule through c = tanh a")
    assert captions["d/L/d/a"] == ("d/L/d/a = d/L/d/a:0 + d/L/d/a:1: a is used by 2 lines "
                                   "(c and b): its adjoint is the sum of the contributions "
                                   "through each use")
    # mul e e: one local partial with both uses in it
    assert captions["d/L/d/e"].startswith("d/L/d/e = e + e: the local partial of L = mul e e "
                                          "with respect to e (e is both operands")
    assert f"{float(fan().values({'x': 1.5, 'y': 0.2})['a'][1]):.4g}" == "1.354"


def test_three_uses_one_of_them_twice() -> None:
    steps = backward(fan(THREE).stepper_run({"x": 1.5, "y": 0.2}).steps)
    texts = [u[2] for s in steps if s.node == "a" for u in s.updates]
    # three contributions (mul a a is one, through d/d/d/a = add a a), summed as they come
    assert texts == ["1.734", "1.734 + 13.64", "15.38", "15.38 + 1.011", "16.39"]
    partial = next(s for s in steps if s.name == "d/d/d/a")
    assert partial.caption.startswith("d/d/d/a = a + a: the local partial of d = mul a a "
                                      "with respect to a (a is both operands")
    total = next(s for s in steps if s.name == "d/L/d/a")
    assert "a is used by 3 lines (c, d and b)" in total.caption
    assert total.edges == (("a", "c"), ("a", "d"), ("a", "b"))


def test_the_loss_using_a_shared_variable_gives_a_term_of_its_adjoint() -> None:
    model = fan(FAN.replace("define L = mul e e", "define L = mul e a"))
    steps = backward(model.stepper_run({"x": 1.5, "y": 0.2}).steps)
    term = next(s for s in steps if s.name == "d/L/d/a:0")
    assert (term.node, term.edges, term.updates) == ("a", (("a", "L"),),
                                                     (("a", "grad", "1.402"),))
    assert term.caption == ("d/L/d/a:0 = e: the local partial of L = mul e a with respect to "
                            "a; one term of d/L/d/a (a has other users too)")
    total = next(s for s in steps if s.name == "d/L/d/a")
    assert "a is used by 3 lines (L, c and b)" in total.caption


def test_copies_broadcasts_and_weights_that_cannot_matter() -> None:
    model = TenFlangModel(MIXED, "mixed")
    steps = backward(model.stepper_run({"x": [1.0, 2.0, 3.0]}).steps)
    captions = {s.name: s.caption for s in steps}
    assert captions["d/L/d/s"] == "d/L/d/s = 1: the loss is a copy of s, so s's adjoint is 1"
    assert captions["d/L/d/h"] == ("d/L/d/h = d/L/d/k: k = h is a copy, so the adjoint passes "
                                   "back unchanged")
    assert captions["d/L/d/k"] == ("d/L/d/k = broadcast(d/L/d/s): the vector-Jacobian product "
                                   "through s = sum k")
    assert captions["d/L/d/b"].startswith("d/L/d/b = unbroadcast(d/L/d/b:0): summed down to a "
                                          "scalar like b (undoing the broadcast in z = add x b)")
    assert captions["d/L/d/u"] == "d/L/d/u = 0: u cannot affect the loss, so its gradient is 0"


def test_tensors_show_their_shape_and_a_few_entries() -> None:
    run = xor().stepper_run({"x": [1.0, 0.5], "y": 1.0})
    by_name = {s.name: s for s in run.steps}
    assert by_name["a1"].value == "[4] 0.2, 0.35, 0.5, 0.65"
    assert by_name["d/lambda/d/W1"].value.startswith("[2×4] ")
    assert by_name["d/lambda/d/W1"].value.endswith(", …")
    assert by_name["d/lambda/d/W1"].caption == (
        "d/lambda/d/W1 = x_i × d/lambda/d/a1_j: the vector-Jacobian product through "
        "a1 = matmul x W1")
    assert by_name["a1"].numbers == "= [4] 0.2, 0.35, 0.5, 0.65"  # no formula over tensors
    assert run.start["W1"]["value"] == "[2×4] 0, 0.1, 0.2, …"
    assert run.widest["W1"]["grad"] == by_name["d/lambda/d/W1"].value


def test_every_gcp_name_has_a_node_or_an_edge() -> None:
    """Adjoints and their temporaries on their variable, local partials on their edge."""
    for make, example in ((seed, {"x": 1.5, "y": 0.2}), (fan, {"x": 1.5, "y": 0.2}),
                          (xor, {"x": [1.0, 0.5], "y": 1.0})):
        model = make()
        edges = set(model.graph.edges())
        for s in backward(model.stepper_run(example).steps):
            of, wrt, _ = split_derivative(s.name)  # type: ignore[misc]
            assert s.edges and set(s.edges) <= edges, s.name
            if of == model.loss:
                assert s.node == wrt, s.name
            else:
                assert s.node is None and s.edges == ((wrt, of),), s.name


def test_example_conventions_and_errors() -> None:
    model = seed()
    with pytest.raises(TenFlangError, match="no training data yet"):
        model.stepper_run()
    model.train({"x": [1.0, 2.0], "y": [0.5, 0.9]}, max_iter=2)
    assert model.stepper_run().example == "{x: 1, y: 0.5}"  # example 0 of the training data
    assert model.stepper_run(1).example == "{x: 2, y: 0.9}"
    with pytest.raises(TenFlangError, match="out of range"):
        model.stepper_run(5)
    with pytest.raises(TenFlangError, match="declares no loss"):
        TenFlangModel("declare input x\ndeclare output y\ndefine y = mul x 2\n").stepper_run(
            {"x": 1.0})


# ------------------------------------------------------------------------------ the HTML


class Parsed(HTMLParser):
    """Start tags, ids, the text outside scripts/styles/svg, and each script's content."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self.text: list[str] = []
        self._skip: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        if tag in ("script", "style", "svg"):
            self._skip.append(tag)
            if tag == "script":
                self.scripts.append((a, ""))

    def handle_endtag(self, tag: str) -> None:
        if self._skip and self._skip[-1] == tag:
            self._skip.pop()

    def handle_data(self, data: str) -> None:
        if self._skip and self._skip[-1] == "script" and self.scripts:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
        elif not self._skip:
            self.text.append(data)

    def script(self, cls: str) -> str:
        return next(text for a, text in self.scripts if a.get("class") == cls)


def test_stepper_html_embeds_its_data_and_points_at_real_elements() -> None:
    model = seed()
    shown = model.stepper({"x": 1.5, "y": 0.2})
    assert repr(shown) == "<TenFlang stepper of 'net' on {x: 1.5, y: 0.2}: 12 steps>"
    page = Parsed(shown.html)
    data = json.loads(page.script("tf-step-data"))
    ui = Parsed(page.script("tf-step-ui"))
    ids = {a["id"] for _, a in ui.tags if "id" in a}
    lines = {a["data-tf-step-line"] for _, a in ui.tags if "data-tf-step-line" in a}
    assert len(data["steps"]) == 12 and data["intro"].startswith("Before the first line")
    for step in data["steps"]:
        assert str(step["l"]) in lines
        assert step["n"] is None or step["n"] in ids
        assert all(e in ids for e in step["e"])
        assert all(u[0] in ids for u in step["u"])
    assert set(data["start"]) <= ids
    # the label rows the script rewrites: one value row per variable, a grad row where one
    value_rows = [a for t, a in ui.tags if t == "text" and a.get("class") == "tf-slot-value"]
    grad_rows = [a for t, a in ui.tags if t == "text" and a.get("class") == "tf-slot-grad"]
    assert (len(value_rows), len(grad_rows)) == (7, 5)
    # the controls and the caption
    classes = {c for _, a in ui.tags for c in a.get("class", "").split()}
    for control in ("tf-step-first", "tf-step-back", "tf-step-next", "tf-step-last",
                    "tf-step-play", "tf-step-speed", "tf-step-slider", "tf-step-caption"):
        assert control in classes, control
    assert 'max="12"' in page.script("tf-step-ui")


def test_ids_are_scoped_to_one_output() -> None:
    model = seed()
    first, second = (model.stepper({"x": 1.5, "y": 0.2}).html,
                     model.stepper({"x": 1.5, "y": 0.2}).html)
    ids = []
    for html in (first, second):
        page = Parsed(html)
        own = {a["id"] for _, a in page.tags if "id" in a}
        own |= {a["id"] for _, a in Parsed(page.script("tf-step-ui")).tags if "id" in a}
        stepper = next(a["id"] for t, a in page.tags if "tf-stepper" in a.get("class", ""))
        root = next(a["id"] for t, a in page.tags if "tf-root" in a.get("class", ""))
        # Graphviz names its tooltip anchors a_<node id>
        assert all(i == root or i.removeprefix("a_").startswith(stepper) for i in own), own
        assert f'document.getElementById("{stepper}")' in html  # the script's fallback
        ids.append(own)
    assert not ids[0] & ids[1], "two steppers share element ids"


def test_nothing_is_fetched_and_nothing_is_global() -> None:
    html = seed().stepper({"x": 1.5, "y": 0.2}).html
    page = Parsed(html)
    every = page.tags + Parsed(page.script("tf-step-ui")).tags
    fetched = [a.get("src") or a.get("href") for _, a in every if "src" in a or "href" in a]
    assert fetched and all(url.startswith("data:image/png;base64,") for url in fetched)
    js = static_text("stepper.js")
    assert not re.search(r"https?:|//cdn|require\(|import\(|fetch\(|XMLHttpRequest", js)
    # the window only lends its key events (removed again when the stepper is gone)
    assert set(re.findall(r"\bwindow\.(\w+)", js)) == {"addEventListener", "removeEventListener"}
    assert not re.search(r"\bglobalThis\b|localStorage|sessionStorage|document\.cookie", js)
    assert js.lstrip().startswith("/*") and "(function (root) {" in js
    # the inert markup cannot end its script early, nor open a comment there
    ui = page.script("tf-step-ui")
    assert "</script" not in ui.lower() and "<!--" not in ui


def test_without_scripts_and_styles_a_table_of_every_step_remains() -> None:
    """What JupyterLab shows for an untrusted notebook (tests/lab_sanitizer.py: scripts,
    styles and inline SVG go): the table of every step and the final graph as a picture."""
    run = seed().stepper_run({"x": 1.5, "y": 0.2})
    html = seed().stepper({"x": 1.5, "y": 0.2}).html
    untrusted = sanitize(html)
    assert "tf-step-data" not in untrusted and "<svg" not in untrusted
    text = re.sub(r"\s+", " ", shown_text(untrusted))
    assert "Run the cell, or trust the notebook" in text
    pictures = re.findall(r'<img [^>]*class="tf-step-png"[^>]*>', untrusted)
    assert len(pictures) == 1 and 'src="data:image/png;base64,' in pictures[0]
    at = 0
    for i, s in enumerate(run.steps, 1):  # one row each, in order: step, line, code, value...
        row = f"{i}{s.line}define {s.name} = "
        assert text.find(row, at) > at, s.name
        at = text.find(row, at)
        assert text.find(s.value + s.caption + s.numbers, at) > at, s.name
    assert "Forward pass" in text and "Backward pass" in text
    assert "step ▶" not in text  # no controls where they could not work


def test_the_step_view_in_the_registry() -> None:
    assert "step" in VIEWS and "step" not in parse_views("all")
    assert VIEWS["step"].needs_training
    model = seed()
    assert "train first" in model.show("step").html  # no example: a note, not an error
    html = model.show("graph,step", example={"x": 1.5, "y": 0.2}).html
    assert html.count('class="tf-stepper"') == 1 and 'class="tf-svg"' in html
    nolosss = TenFlangModel("declare input x\ndeclare output y\ndefine y = mul x 2\n")
    assert "no loss" in nolosss.show("step", example={"x": 1.0}).html
    bad = model.show("step", example={"x": 1.5, "nope": 1.0}).html
    assert "tf-diag" in bad and "nope" in bad


def test_without_graphviz_the_stepper_keeps_a_table_of_variables(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    page = Parsed(seed().stepper({"x": 1.5, "y": 0.2}).html)
    ui = page.script("tf-step-ui")
    assert "<svg" not in ui and "No graph drawing" in ui
    data = json.loads(page.script("tf-step-data"))
    ids = {a["id"] for _, a in Parsed(ui).tags if "id" in a}
    assert {u[0] for s in data["steps"] for u in s["u"]} <= ids
    assert ui.count('class="tf-slot-grad"') == 5
