"""What the tests of the checker's hints share: models at the digits network's shapes (one
example, and a batch of 8 as rows), their right backward passes, the exercises of
notebooks/05_exercises.ipynb (model and solution, as the notebook holds them), and the test
that a hint in grading mode spells out none of the compiler's answer lines."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from tenflang_nb.core.api import parse
from tenflang_nb.core.backprop_check import BackpropCheck, plain
from tenflang_nb.core.backprop_check.reference import Reference
from tenflang_nb.core.grading import DEFAULT_STUDENT, draw_variant, student_seed
from tenflang_nb.core.lexical import split_derivative
from tenflang_nb.core.program import Program

REPO = Path(__file__).resolve().parents[1]

# the digits network (64 pixels, 32 tanh units, 10 classes, softmax cross-entropy), one
# example at a time, as examples/digits/shape.tf holds it
DIGITS = parse((REPO / "examples" / "digits" / "shape.tf").read_text("utf-8"), "digits.tf")
DIGITS_RIGHT = """\
define p = exp logp
define d/lambda/d/logits = sub p y
define d/lambda/d/b2 = d/lambda/d/logits
define d/lambda/d/W2 = outer h d/lambda/d/logits
define W2t = transpose W2
define d/lambda/d/h = matmul d/lambda/d/logits W2t
define hh = mul h h
define slope = sub 1 hh
define d/lambda/d/z1 = mul d/lambda/d/h slope
define d/lambda/d/b1 = d/lambda/d/z1
define d/lambda/d/W1 = outer x d/lambda/d/z1
"""

# the same shapes with a batch of 8 examples as the rows of X: each bias is added to every
# row (broadcast), so its gradient sums over the rows; a squared error, as logsoftmax takes
# one vector
BATCH = parse("""\
declare input X [8, 64]
declare exp_output Y [8, 10]
declare weight W1 [64, 32]
declare weight b1 [32]
declare weight W2 [32, 10]
declare weight b2 [10]
declare intvar A1
declare intvar Z1
declare intvar H
declare intvar A2
declare output S
declare intvar E
declare intvar E2
declare intvar total
declare loss L
define A1 = matmul X W1
define Z1 = add A1 b1
define H = tanh Z1
define A2 = matmul H W2
define S = add A2 b2
define E = sub S Y
define E2 = mul E E
define total = sum E2
define L = mul total 0.5
""", "batch.tf")
BATCH_RIGHT = """\
define d/L/d/E = E
define d/L/d/S = d/L/d/E
define d/L/d/b2 = sumto d/L/d/S b2
define Ht = transpose H
define d/L/d/W2 = matmul Ht d/L/d/S
define W2t = transpose W2
define d/L/d/H = matmul d/L/d/S W2t
define HH = mul H H
define slope = sub 1 HH
define d/L/d/Z1 = mul d/L/d/H slope
define d/L/d/b1 = sumto d/L/d/Z1 b1
define Xt = transpose X
define d/L/d/W1 = matmul Xt d/L/d/Z1
"""

# square weights: a transpose missing (or one too many) still gives a value of the right
# shape, so only the numbers tell
SQUARE = parse("""\
declare input X [6, 12]
declare exp_output Y [6, 12]
declare weight W1 [12, 12]
declare weight b1 [12]
declare weight W2 [12, 12]
declare intvar A1
declare intvar Z1
declare intvar H
declare output S
declare intvar E
declare intvar E2
declare intvar total
declare loss L
define A1 = matmul X W1
define Z1 = add A1 b1
define H = tanh Z1
define S = matmul H W2
define E = sub S Y
define E2 = mul E E
define total = sum E2
define L = mul total 0.5
""", "square.tf")
SQUARE_RIGHT = """\
define d/L/d/E = E
define d/L/d/S = d/L/d/E
define Ht = transpose H
define d/L/d/W2 = matmul Ht d/L/d/S
define W2t = transpose W2
define d/L/d/H = matmul d/L/d/S W2t
define HH = mul H H
define slope = sub 1 HH
define d/L/d/Z1 = mul d/L/d/H slope
define d/L/d/b1 = sumto d/L/d/Z1 b1
define Xt = transpose X
define d/L/d/W1 = matmul Xt d/L/d/Z1
"""

NOTEBOOK = REPO / "notebooks" / "05_exercises.ipynb"


def variant_calls(source: str) -> list[tuple[str, str, dict[str, list[Any]]]]:
    """(name, template, choices) of each ``tf.grading.variant`` call of a cell."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell magic
        return []
    return [(ast.literal_eval(node.value.args[0]), ast.literal_eval(node.value.args[1]),
             {k.arg: ast.literal_eval(k.value) for k in node.value.keywords if k.arg})
            for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func) == "tf.grading.variant"]


def notebook_models(path: Path, student: str = DEFAULT_STUDENT, key: str = ""
                    ) -> dict[str, str]:
    """Every model of a notebook by name: its ``%%tenflang NAME`` cells' and those drawn
    per student (``tf.grading.variant``) as ``student`` gets them (by default the practice
    variant, the one the shipped solutions answer)."""
    models = {}
    for cell in json.loads(path.read_text("utf-8"))["cells"]:
        source = "".join(cell["source"])
        head, _, body = source.partition("\n")
        words = head.split()
        if words[:1] == ["%%tenflang"] and len(words) > 1:
            models[words[1]] = body
        for name, template, choices in variant_calls(source):
            seed = student_seed(student, f"{path.stem}/variant/{name}", key)
            models[name] = draw_variant(seed, template, choices)[0]
    return models


def exercise(model: str) -> tuple[Program, str]:
    """The model of notebook 05 named ``model`` (its ``%%tenflang model`` cell, or the
    practice variant of one drawn per student) and the solution of the exercise that checks
    it (its ``%%tenflang_check model ...`` cell)."""
    solution = None
    models = notebook_models(NOTEBOOK)
    shape = parse(models[model], f"{model}.tf") if model in models else None
    for cell in json.loads(NOTEBOOK.read_text("utf-8"))["cells"]:
        source = "".join(cell["source"])
        head, _, body = source.partition("\n")
        words = head.split()
        if words[:2] == ["%%tenflang_check", model]:
            solution = "\n".join(line for line in body.splitlines() if "SOLUTION" not in line)
    assert shape is not None and solution is not None, model
    return shape, solution + "\n"


def answer_lines(program: Program) -> set[str]:
    """The compiler's backward pass of ``program`` as a hint could spell it out: every
    backward line's right-hand side, and every formula with its temporaries inlined."""
    ref = Reference(program, 1, 0)
    found = set()
    for name, d in ref.gcp_program.defs.items():
        if split_derivative(name) is None or d.op is None:
            continue
        found.add(" ".join([d.op, *map(str, d.args)]))
        formula = ref.formula(name)
        if formula and " " in formula:
            found.add(formula)
    return found


def spelled_out(program: Program, result: BackpropCheck) -> list[str]:
    """The compiler's answer lines that a hint (or an error's hint) of ``result`` spells out."""
    texts = [v.hint for v in result.lines if v.hint]
    if result.error is not None:
        texts += [d.hint for d in result.error.diagnostics if d.hint]
    answers = answer_lines(program)
    return [a for text in texts for a in answers if a in plain(text).replace("'", "")]


def _g(value: float) -> str:
    return repr(float(value)).removesuffix(".0")


def drawn_right_answer(model: str, picks: dict[str, Any]) -> str:
    """A right answer, written as a student would, to the exercise of notebook 05 that grades
    ``model`` as drawn with ``picks`` (``tf.grading.variant``'s choices): what each draw
    asks for, so that a test can hold every draw to the exercise's text and hints."""
    if model in PART_1:
        return part_1_right_answer(model, picks)
    scale = picks["scale"]
    if model == "gates":
        m = "d/L/d/q" if picks["join"] == "add" else "neg d/L/d/q"
        return (f"define d/L/d/q = {_g(scale)}\ndefine d/L/d/p = d/L/d/q\n"
                f"define d/L/d/m = {m}\ndefine d/L/d/a = mul d/L/d/p b\n"
                "define d/L/d/b = mul d/L/d/p a\ndefine d/L/d/r = d/L/d/m\n"
                "define on = step t\ndefine d/L/d/t = mul d/L/d/r on\n"
                "define d/L/d/c = d/L/d/t\ndefine off = sub 1 on\n"
                "define d/L/d/d = mul d/L/d/m off\n")
    if model == "relu":
        o = "d/L/d/e" if picks["error"] == "o y" else "neg d/L/d/e"
        return (f"define d/L/d/e = mul {_g(2 * scale)} e\ndefine d/L/d/o = {o}\n"
                "define d/L/d/v = mul d/L/d/o h\ndefine d/L/d/h = mul d/L/d/o v\n"
                "define open = step a\ndefine d/L/d/a = mul d/L/d/h open\n"
                "define d/L/d/W = outer x d/L/d/a\n")
    if picks.get("reduce") == "mean":  # each of the loss's rows x outputs entries
        scale = scale / (picks["rows"] * picks["outputs"])
    if model == "batch":
        z = "d/L/d/E" if picks["error"] == "Z Y" else "neg d/L/d/E"
        return (f"define d/L/d/E = mul {_g(2 * scale)} E\ndefine d/L/d/Z = {z}\n"
                "define Wt = transpose W\ndefine d/L/d/X = matmul d/L/d/Z Wt\n"
                "define Xt = transpose X\ndefine d/L/d/W = matmul Xt d/L/d/Z\n")
    if model == "bias":
        zb = "d/L/d/E" if picks["error"] == "Zb Y" else "neg d/L/d/E"
        b = ("define d/L/d/b = sumto d/L/d/Zb b\n" if picks["bias"] == "add" else
             "define minus = neg d/L/d/Zb\ndefine d/L/d/b = sumto minus b\n")
        return (f"define d/L/d/E = mul {_g(2 * scale)} E\ndefine d/L/d/Zb = {zb}\n{b}"
                "define d/L/d/Z = d/L/d/Zb\ndefine Xt = transpose X\n"
                "define d/L/d/W = matmul Xt d/L/d/Z\n")
    if model == "mlp":
        slope = {"tanh": "define h_squared = mul h h\ndefine slope = sub 1 h_squared\n",
                 "logistic": "define one_minus_h = sub 1 h\ndefine slope = mul h one_minus_h\n",
                 "relu": "define slope = step h\n"}[picks["act"]]
        return ("define p = softmax z2\ndefine p_minus_y = sub p y\n"
                f"define d/L/d/z2 = mul {_g(-scale)} p_minus_y\ndefine d/L/d/b2 = d/L/d/z2\n"
                "define d/L/d/a2 = d/L/d/z2\ndefine d/L/d/W2 = outer h d/L/d/a2\n"
                "define W2t = transpose W2\ndefine d/L/d/h = matmul d/L/d/a2 W2t\n"
                f"{slope}define d/L/d/z1 = mul d/L/d/h slope\ndefine d/L/d/b1 = d/L/d/z1\n"
                "define d/L/d/a1 = d/L/d/z1\ndefine d/L/d/W1 = outer x d/L/d/a1\n")
    raise KeyError(model)


PART_1 = ("seed", "quad", "fan", "ratio", "chain", "classifier", "net")
NET_TAIL = """define one_minus_o = sub 1 o
define slope_o = mul o one_minus_o
define d/lambda/d/z2 = mul d/lambda/d/o slope_o
define d/lambda/d/b2 = d/lambda/d/z2
define d/lambda/d/a2 = d/lambda/d/z2
define d/lambda/d/W2 = mul d/lambda/d/a2 h
define d/lambda/d/h = mul d/lambda/d/a2 W2
define h_squared = mul h h
define slope_h = sub 1 h_squared
define d/lambda/d/z1 = mul d/lambda/d/h slope_h
define d/lambda/d/b1 = d/lambda/d/z1
define d/lambda/d/W1 = outer x d/lambda/d/z1
"""


def _slope(act: str, out: str, inp: str, name: str) -> str:
    """The lines of an activation's slope ``name``, from its output ``out`` (relu: from its
    input ``inp``)."""
    if act == "tanh":
        return f"define {out}_squared = mul {out} {out}\ndefine {name} = sub 1 {out}_squared\n"
    if act == "logistic":
        return f"define one_minus_{out} = sub 1 {out}\ndefine {name} = mul {out} one_minus_{out}\n"
    return f"define {name} = step {inp}\n"


def _error(picks: dict[str, Any], loss: str, out: str) -> str:
    """The lines of a scaled squared error's adjoint down to the output ``out``."""
    sign = "" if picks["error"].startswith(out + " ") else "neg "
    return (f"define d/{loss}/d/e = mul {_g(2 * picks['scale'])} e\n"
            f"define d/{loss}/d/{out} = {sign}d/{loss}/d/e\n")


def part_1_right_answer(model: str, picks: dict[str, Any]) -> str:
    """:func:`drawn_right_answer` for the models of Part 1 (exercises 1, 2 and 4 to 8) and
    exercise 15's; the seed's answers to exercises 1 and 2 together."""
    if model == "seed":
        o = "d/lambda/d/diff" if picks["error"] == "o y" else "neg d/lambda/d/diff"
        return (f"define d/lambda/d/diff = mul {_g(2 * picks['scale'])} diff\n"
                f"define d/lambda/d/o = {o}\n" + _slope(picks["act"], "o", "z", "d/o/d/z")
                + "define d/lambda/d/z = mul d/lambda/d/o d/o/d/z\n"
                "define d/lambda/d/w = mul d/lambda/d/z x\n")
    if model == "quad":
        return (_error(picks, "L", "p") + "define d/L/d/s = mul d/L/d/p x\n"
                "define two_w = add w w\ndefine d/L/d/w = mul d/L/d/s two_w\n")
    if model == "fan":
        w = {"mul w x": "mul d/L/d/a x", "add w x": "d/L/d/a",
             "sub x w": "neg d/L/d/a"}[picks["lin"]]
        return (_error(picks, "L", "o") + "define d/L/d/b = d/L/d/o\ndefine d/L/d/c = d/L/d/o\n"
                + _slope(picks["first"], "b", "a", "d/b/d/a")
                + ("define d/c/d/a = c\n" if picks["second"] == "exp"
                   else "define d/c/d/a = add a a\n")
                + "define via_b = mul d/L/d/b d/b/d/a\ndefine via_c = mul d/L/d/c d/c/d/a\n"
                f"define d/L/d/a = add via_b via_c\ndefine d/L/d/w = {w}\n")
    if model == "ratio":
        u = "d/L/d/a" if picks["join"] == "add" else "neg d/L/d/a"
        return (_error(picks, "L", "r") + "define d/L/d/a = div d/L/d/r b\n"
                "define r_over_b = div r b\ndefine d/r/d/b = neg r_over_b\n"
                f"define d/L/d/b = mul d/L/d/r d/r/d/b\ndefine d/L/d/u = {u}\n"
                "define d/L/d/v = mul d/L/d/b x\n")
    if model == "chain":
        return (_error(picks, "L", "o") + _slope(picks["outer"], "o", "z", "d/o/d/z")
                + "define d/L/d/z = mul d/L/d/o d/o/d/z\ndefine d/L/d/w2 = mul d/L/d/z h\n"
                "define d/L/d/h = mul d/L/d/z w2\n" + _slope(picks["inner"], "h", "a", "d/h/d/a")
                + "define d/L/d/a = mul d/L/d/h d/h/d/a\ndefine d/L/d/w1 = mul d/L/d/a x\n")
    if model == "net":
        o = "d/lambda/d/diff" if picks["error"] == "o y" else "neg d/lambda/d/diff"
        return (f"define d/lambda/d/diff = mul {_g(2 * picks['scale'])} diff\n"
                f"define d/lambda/d/o = {o}\n{NET_TAIL}")
    if model == "classifier":
        b = "d/L/d/zb" if picks["join"] == "add" else "neg d/L/d/zb"
        return (f"define d/L/d/s = {_g(picks['scale'])}\n"
                "define d/L/d/nll = broadcast d/L/d/s nll\ndefine d/L/d/logp = mul d/L/d/nll y\n"
                "define total = sum d/L/d/logp\ndefine p = exp logp\n"
                "define spread = mul p total\ndefine d/L/d/zb = sub d/L/d/logp spread\n"
                f"define d/L/d/b = {b}\ndefine d/L/d/z = d/L/d/zb\n"
                "define d/L/d/W = outer x d/L/d/z\n")
    raise KeyError(model)


def drawn_variants(student: str = DEFAULT_STUDENT, key: str = ""
                   ) -> dict[str, tuple[str, dict[str, Any]]]:
    """The models of notebook 05 drawn per student, as ``student`` gets them: name -> (the
    text, the picks)."""
    found = {}
    for cell in json.loads(NOTEBOOK.read_text("utf-8"))["cells"]:
        for name, template, choices in variant_calls("".join(cell["source"])):
            seed = student_seed(student, f"{NOTEBOOK.stem}/variant/{name}", key)
            found[name] = draw_variant(seed, template, choices)
    return found


def drawn_exercise(model: str, **picks: Any) -> tuple[Program, str]:
    """The model of notebook 05 drawn per student named ``model``, with ``picks`` in place of
    the practice variant's (``tf.grading.variant``'s choices), and its right answer."""
    for cell in json.loads(NOTEBOOK.read_text("utf-8"))["cells"]:
        for name, template, choices in variant_calls("".join(cell["source"])):
            if name == model:
                chosen = {**drawn_variants()[model][1], **picks}
                assert all(chosen[k] in choices[k] for k in chosen), picks
                text = draw_variant(0, template, {k: [v] for k, v in chosen.items()})[0]
                return parse(text, f"{model}.tf"), drawn_right_answer(model, chosen)
    raise KeyError(model)
