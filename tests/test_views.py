"""The views' HTML/SVG, parsed: nodes per variable and kind, provenance attributes, clusters,
shapes, the fallback without Graphviz, errors with a caret, the model's rich display."""

from __future__ import annotations

import html as html_lib
import re
import subprocess
from html.parser import HTMLParser

import graphviz
import pytest
from conftest import VECTOR_PROGRAM, XOR_SHAPE

from tenflang_nb.core.api import TenFlangError, compile, parse
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.graph import DataFlowGraph
from tenflang_nb.notebook.model import TenFlangModel
from tenflang_nb.notebook.views import drawing, parse_views
from tenflang_nb.notebook.views.diagnostics import error_view, warnings_view
from tenflang_nb.palette import PALETTE

XOR = XOR_SHAPE
VECTORS = VECTOR_PROGRAM


class Elements(HTMLParser):
    """Every start tag as (tag, attributes), entities decoded."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))

    def having(self, attr: str, tag: str | None = None) -> list[dict[str, str]]:
        return [a for t, a in self.found if attr in a and (tag is None or t == tag)]


def graph_nodes(html: str) -> list[dict[str, str]]:
    """The SVG groups drawn for variables (constants carry no data-tf-node)."""
    return [a for t, a in Elements(html).found
            if t == "g" and "node" in a.get("class", "").split()
            and ("data-tf-node" in a or "data-tf-nodes" in a)]


@pytest.fixture
def seed() -> TenFlangModel:
    return TenFlangModel(SEED_EXAMPLE, "net")


# ------------------------------------------------------------------------------ the graph

def test_one_node_per_variable_with_its_kind(seed: TenFlangModel) -> None:
    nodes = graph_nodes(seed.show("graph").html)
    assert sorted(n["data-tf-node"] for n in nodes) == sorted(seed.program.decls)
    for n in nodes:
        kind = seed.program.kind(n["data-tf-node"])
        assert n["data-tf-kind"] == kind
        assert f"tf-kind-{kind}" in n["class"].split()


def test_constants_are_nodes_of_their_own_kind(seed: TenFlangModel) -> None:
    els = Elements(seed.show("graph").html)
    consts = [a for t, a in els.found if t == "g" and a.get("data-tf-kind") == "constant"]
    assert len(consts) == 1  # the 2 of 'pow diff 2'
    edges = [a for t, a in els.found if t == "g" and a.get("class") == "edge"]
    assert len(edges) == len(DataFlowGraph(seed.program).edges()) + len(consts)


def test_nodes_are_numbered_by_topological_order(seed: TenFlangModel) -> None:
    svg = seed.show("graph").html
    for i, name in enumerate(seed.graph.topological_order(), 1):
        assert f">{i}. {name}</text>" in svg


def test_nodes_carry_the_lines_that_declare_and_define_them(seed: TenFlangModel) -> None:
    nodes = {n["data-tf-node"]: n for n in graph_nodes(seed.show("graph").html)}
    assert nodes["z"]["data-tf-lines"] == "4 9"  # declared on 4, defined on 9
    assert nodes["x"]["data-tf-lines"] == "1"


def test_order_list_matches_the_core(seed: TenFlangModel) -> None:
    items = Elements(seed.show("order").html).having("data-tf-node", "li")
    assert [i["data-tf-node"] for i in items] == seed.graph.topological_order()


def test_legend_lists_each_kind_drawn(seed: TenFlangModel) -> None:
    legend = Elements(seed.show("graph").html).having("data-tf-kind", "span")
    assert [a["data-tf-kind"] for a in legend] == [
        "input", "exp_output", "weight", "intvar", "output", "loss", "constant"]


def test_tensor_shapes_appear_in_labels() -> None:
    svg = TenFlangModel(XOR, "xor").show("graph").html
    assert "weight</text>" in svg and ">[2, 4]</text>" in svg and ">[4]</text>" in svg
    scalar_only = TenFlangModel(SEED_EXAMPLE).show("graph").html
    assert "[]</text>" not in scalar_only


def test_vector_components_are_clustered() -> None:
    html = TenFlangModel(VECTORS, "vec").show("graph").html
    nodes = graph_nodes(html)
    assert len(nodes) == len(parse(VECTORS).decls)
    clusters = [a for t, a in Elements(html).found if t == "g" and a.get("class") == "cluster"]
    titles = re.findall(r'class="cluster">\s*<path[^>]*>\s*<text[^>]*>([^<]*)</text>', html)
    assert len(clusters) == 3 and sorted(titles) == ["s.*", "w.*", "x.*"]


def test_long_vectors_collapse_into_one_node() -> None:
    big = VECTORS.replace(" 3\n", " 40\n")
    html = TenFlangModel(big, "big").show("graph").html
    nodes = graph_nodes(html)
    collapsed = {n["data-tf-nodes"].split()[0]: n["data-tf-nodes"].split()
                 for n in nodes if "data-tf-nodes" in n}
    assert len(collapsed["x.0"]) == 40 and len(collapsed["w.0"]) == 40
    singles = [n["data-tf-node"] for n in nodes if "data-tf-node" in n]
    assert sorted(singles) == ["L", "d", "o", "s", "y"]
    assert "Collapsed vectors: x (40 components)" in html


def test_graph_ids_are_scoped_per_output(seed: TenFlangModel) -> None:
    first, second = seed.show("graph").html, seed.show("graph").html
    prefixes = [Elements(h).having("data-tf-prefix")[0]["data-tf-prefix"] for h in (first, second)]
    assert prefixes[0] != prefixes[1]
    for html, prefix in zip((first, second), prefixes, strict=True):
        ids = [a["id"] for t, a in Elements(html).found if "id" in a]
        assert ids and all(i.startswith(prefix) or i.startswith("a_" + prefix) for i in ids)


# ------------------------------------------------------------------------------ code listings

def test_gcp_lines_carry_their_origin(seed: TenFlangModel) -> None:
    gcp = compile(seed.program)
    lines = Elements(seed.show("gcp").html).having("data-tf-gcp-line")
    assert [int(a["data-tf-gcp-line"]) for a in lines] == list(range(1, len(gcp.lines) + 1))
    assert [int(a["data-tf-line"]) for a in lines] == gcp.provenance()
    assert [a["data-tf-section"] for a in lines] == [g.section for g in gcp.lines]


def test_full_gcp_and_line_counts(seed: TenFlangModel) -> None:
    pruned, full = compile(seed.program), compile(seed.program, full=True)
    html = seed.show("gcp", full=True).html
    lines = Elements(html).having("data-tf-gcp-line")
    assert [int(a["data-tf-line"]) for a in lines] == full.provenance()
    counts = Elements(html).having("data-tf-gcp-lines")[0]
    assert (counts["data-tf-gcp-lines"], counts["data-tf-gcp-other"]) == (
        str(len(full.lines)), str(len(pruned.lines)))
    assert (f"{len(full.lines)} lines, every adjoint ({len(pruned.lines)} with only what "
            "the weights' gradients need)") in html
    # the pruned GCP does not read as "lines removed": what it keeps, and how to see the rest
    html = seed.show("gcp").html
    assert (f"{len(pruned.lines)} lines, only what the weights' gradients need "
            f"({len(full.lines)} with every adjoint: --full)") in html
    assert "pruned" not in html.split("tf-counts")[1].split("</h4>")[0]


def test_shape_lines_name_what_they_declare(seed: TenFlangModel) -> None:
    shape = Elements(seed.show("gcp").html).having("data-tf-line", "span")
    shape = [a for a in shape if "tf-shape-line" in a["class"]]
    assert len(shape) == len(SEED_EXAMPLE.splitlines())
    by_line = {int(a["data-tf-line"]): a.get("data-tf-nodes") for a in shape}
    assert by_line[1] == "x" and by_line[9] == "z" and by_line[8] is None  # 8 is blank


def test_vector_lines_name_every_component() -> None:
    html = TenFlangModel(VECTORS, "vec").show("gcp").html
    shape = [a for a in Elements(html).having("data-tf-nodes") if "tf-shape-line" in a["class"]]
    assert shape[0]["data-tf-nodes"] == "x.0 x.1 x.2"
    assert set(shape[7]["data-tf-nodes"].split()) == {"s", "s.0", "s.1", "s.2", "s.3", "s.4"}


def test_expanded_listing_points_to_the_user_line() -> None:
    model = TenFlangModel(VECTORS, "vec")
    lines = Elements(model.show("expanded").html).having("data-tf-line", "span")
    assert [int(a["data-tf-line"]) for a in lines] == [s.src.line for s in model.program.statements]


def test_code_is_highlighted_with_inline_styles(seed: TenFlangModel) -> None:
    """In the palette's colours (the editor's too), inline: no Pygments stylesheet needed."""
    html = seed.show("gcp").html.lower()
    for category, word in (("instruction", "declare"), ("kind", "weight"), ("operator", "mul"),
                           ("derivative", "d/lambda/d/w")):
        colour = PALETTE[category]
        style = f"color: {colour.light}" + ("; font-weight: bold" if colour.bold else "")
        assert f'<span style="{style}">{word}</span>' in html, category
    assert 'class="k"' not in html


def test_hover_script_and_css_come_with_every_view(seed: TenFlangModel) -> None:
    html = seed.show().html
    assert html.count("<script>") == 1 and 'addEventListener("mouseover"' in html
    assert ".tf-hl" in html


def test_parse_views() -> None:
    assert parse_views("graph,order") == ["graph", "order"]
    assert parse_views("none") == []
    assert parse_views("all") == ["graph", "order", "gcp", "expanded"]
    with pytest.raises(ValueError, match="unknown view 'graf'"):
        parse_views("graf")


# ------------------------------------------------------------------------------ no Graphviz

def assert_fallback(html: str, model: TenFlangModel, reason: str) -> None:
    assert "<svg" not in html
    assert reason in html
    assert "tf-graph-fallback" in html
    for a, c in model.graph.edges():
        assert f"<code>{a}</code> → <code>{c}</code>" in html
    order = Elements(html).having("data-tf-node", "li")
    assert [i["data-tf-node"] for i in order] == model.graph.topological_order()


def test_fallback_when_dot_is_not_on_the_path(seed: TenFlangModel,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    html = seed.show("graph,order").html
    assert_fallback(html, seed, "was not found")
    assert "apt-get install graphviz" in html


@pytest.mark.parametrize("error", [
    graphviz.ExecutableNotFound(["dot"]),
    graphviz.CalledProcessError(1, ["dot"], b"", b"boom"),
    FileNotFoundError("dot"),
])
def test_fallback_when_graphviz_raises(seed: TenFlangModel, monkeypatch: pytest.MonkeyPatch,
                                       error: Exception) -> None:
    def pipe(*args: object, **kwargs: object) -> str:
        raise error

    monkeypatch.setattr(graphviz.Digraph, "pipe", pipe)
    html = seed.show("graph").html
    assert_fallback(html, seed, "not found" if not isinstance(
        error, subprocess.CalledProcessError) else "failed")


def test_fallback_for_graphs_too_big_to_draw(seed: TenFlangModel,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drawing, "MAX_NODES", 3)
    assert_fallback(seed.show("graph").html, seed, "too many to draw")


# ------------------------------------------------------------------------------ values

def test_values_view_annotates_every_node(seed: TenFlangModel) -> None:
    seed.train({"x": [1.0, -1.0], "y": [0.9, 0.1]}, max_iter=5)
    shown = seed.show_values(1)
    assert shown.plain == "<TenFlang values of 'net' on {x: -1.0, y: 0.1}>"
    assert len(graph_nodes(shown.html)) == len(seed.program.decls)
    values = seed.values(1)
    o_value, o_grad = values["o"]
    assert f"value {float(o_value):.4g}" in shown.html
    assert f"grad {float(o_grad):.4g}" in shown.html
    assert shown.html.count(">value ") == len(seed.program.decls)
    assert shown.html.count(">grad ") == len(seed.program.decls)  # all reach the loss


def test_values_view_omits_grads_of_variables_off_the_loss_path() -> None:
    text = SEED_EXAMPLE + "declare input u\ndeclare output side\ndefine side = mul u 3\n"
    model = TenFlangModel(text, "side")
    html = model.show_values({"x": 1.0, "y": 0.5, "u": 2.0}).html
    assert html.count(">grad ") == 7 and html.count(">value ") == 9
    assert re.search(r">value 6</text>", html)


# ------------------------------------------------------------------------------ diagnostics

def test_error_view_highlights_the_line_with_a_caret() -> None:
    text = SEED_EXAMPLE.replace("define o = logistic z", "define o = logistik z")
    with pytest.raises(TenFlangError) as info:
        parse(text, "net.tf")
    shown = error_view(info.value, text)
    assert shown.plain.splitlines()[:3] == [
        "net.tf: line 10: error: unknown operator 'logistik'",
        "    define o = logistik z",
        "               ^^^^^^^^"]
    bad = Elements(shown.html).having("class", "span")
    bad = [a for a in bad if a["class"] == "tf-bad"]
    assert [a["data-tf-line"] for a in bad] == ["10"]
    # in the listing, the caret stands under the offending token
    pre = re.search(r"<pre>(.*?)</pre>", shown.html, re.S).group(1)
    rows = html_lib.unescape(re.sub(r"<[^>]+>", "", pre)).split("\n")
    at = next(i for i, r in enumerate(rows) if r.startswith("> 10 | "))
    assert rows[at - 1].startswith("   9 | ") and rows[at + 2].startswith("  11 | ")
    assert rows[at + 1].index("^") == rows[at].index("logistik")
    assert rows[at + 1].count("^") == len("logistik")
    assert "Traceback" not in shown.html


def test_warnings_are_listed_compactly() -> None:
    model = TenFlangModel(SEED_EXAMPLE + "declare input unused\n", "w")
    shown = warnings_view(model.warnings)
    assert shown is not None
    assert shown.plain == "w.tf: line 13: warning: 'unused' is declared but never used"
    assert "1 warning" in shown.html
    assert warnings_view([]) is None


# ------------------------------------------------------------------------------ the model

def test_model_display_is_stable_text_and_rich_html(seed: TenFlangModel) -> None:
    bundle = seed._repr_mimebundle_()
    assert bundle["text/plain"] == "<TenFlang model 'net': 7 variables, 1 weight>"
    assert "0x" not in bundle["text/plain"]
    assert len(graph_nodes(bundle["text/html"])) == 7
    assert "GCP 37 lines (full: 49)" in bundle["text/html"]
    two = TenFlangModel(XOR, "xor")
    assert repr(two) == "<TenFlang model 'xor': 14 variables, 4 weights>"


def test_dot_source(seed: TenFlangModel) -> None:
    dot = seed.dot()
    assert "rankdir=LR" in dot and dot.count("->") == 7


# ------------------------------------------------------------------------------ cost

def _cells(html: str) -> list[list[str]]:
    rows = re.findall(r"<tr>(.*?)</tr>", html, flags=re.DOTALL)
    return [[html_lib.unescape(re.sub(r"<[^>]+>", "", c))
             for c in re.findall(r"<t[hd]>(.*?)</t[hd]>", row)] for row in rows]


def test_cost_view_is_registered_but_neither_default_nor_in_all() -> None:
    from tenflang_nb.notebook.views import VIEWS, default_views

    assert "cost" in VIEWS and not VIEWS["cost"].in_all
    assert "cost" not in default_views() and "cost" not in parse_views("all")
    assert parse_views("graph,cost") == ["graph", "cost"]


def test_cost_view_is_a_plain_table_with_the_counts() -> None:
    from lab_sanitizer import sanitize

    model = TenFlangModel(XOR, "xor")
    cost = model.cost(examples=4, budget=0.0)
    assert model.costs is cost
    assert (cost.forward.sweeps, cost.reverse.sweeps) == (17, 1)
    assert repr(cost) == ("<TenFlang cost of one gradient: forward mode 17 sweeps, "
                          f"{cost.forward.lines} lines; reverse mode 1 sweep, "
                          f"{cost.reverse.lines} lines>")
    for html in (model.show("cost").html, cost._repr_html_()):
        # the view reuses the measured cost, and reads the same in an untrusted notebook
        rows = _cells(sanitize(html))  # what an untrusted notebook shows
        assert rows[0][1:] == ["forward mode (tfcompiler --forward)",
                               "reverse mode (backprop, the GCP)"]
        assert rows[1] == ["sweeps per gradient", "17 (one per weight component)", "1"]
        assert rows[2] == ["lines executed per gradient", f"{cost.forward.lines:,}",
                           f"{cost.reverse.lines:,}"]
        assert rows[5][0] == "time per gradient, measured on 4 examples"
        assert all(re.fullmatch(r"[0-9.]+ (s|ms|µs)", t) for t in rows[5][1:])
        assert "Times vary between machines and runs; the counts do not." in html
    assert "<script>" not in cost._repr_html_()


def test_cost_view_shows_what_was_measured_and_never_measures() -> None:
    model = TenFlangModel(XOR, "xor")
    html = model.show("cost").html
    assert model.costs is None, "a renderer started a measurement"
    assert "Not measured yet" in html and "NAME.cost()" in html
    assert "What one gradient costs" not in html


def test_cost_view_without_a_loss_says_why() -> None:
    model = TenFlangModel("declare input x\ndeclare output y\ndefine y = mul x 2\n", "noloss")
    assert "declares no loss" in model.show("cost").html
