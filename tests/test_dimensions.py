"""The stepper's dimension analysis (core/dimensions.py): for every tensor operator of the
table, the sentence on the line that completes its vector-Jacobian product, word for word,
and the shapes every sentence states held to the GCP's declarations.

Each case is one line ``v = OP A B`` of a small program whose loss reads ``v`` through
``q = sum v`` and ``L = mul q C``, so every adjoint is a tensor where ``v`` is one."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tenflang_nb.core import ops
from tenflang_nb.core.backprop import compile_program
from tenflang_nb.core.dimensions import BILINEAR, Dimensions
from tenflang_nb.core.program import parse
from tenflang_nb.notebook.model import TenFlangModel

# case -> (operand A, operand B or None, the line, {adjoint: the sentence of its last line})
CASES: dict[str, tuple[str, str | None, str, dict[str, str]]] = {
    "matmul vector @ matrix": ("A [3]", "B [3, 2]", "matmul A B", {
        "d/L/d/B": "d/L/d/v is [2] and A is [3]: d/L/d/B = A_i × d/L/d/v_j is [3, 2], B's "
                   "shape; the only product of the two with that shape",
        "d/L/d/A": "d/L/d/v is [2] and B is [3, 2]: d/L/d/A = d/L/d/v @ B^T is [3], A's "
                   "shape; the only product of the two with that shape"}),
    "matmul matrix @ vector": ("A [2, 3]", "B [3]", "matmul A B", {
        "d/L/d/A": "d/L/d/v is [2] and B is [3]: d/L/d/A = d/L/d/v_i × B_j is [2, 3], A's "
                   "shape; the only product of the two with that shape",
        "d/L/d/B": "d/L/d/v is [2] and A is [2, 3]: d/L/d/B = A^T @ d/L/d/v is [3], B's "
                   "shape; the only product of the two with that shape"}),
    "matmul matrix @ matrix": ("A [2, 3]", "B [3, 4]", "matmul A B", {
        "d/L/d/A": "d/L/d/v is [2, 4] and B is [3, 4]: d/L/d/A = d/L/d/v @ B^T is [2, 3], "
                   "A's shape; the only product of the two with that shape",
        "d/L/d/B": "d/L/d/v is [2, 4] and A is [2, 3]: d/L/d/B = A^T @ d/L/d/v is [3, 4], "
                   "B's shape; the only product of the two with that shape"}),
    "matmul square": ("A [3, 3]", "B [3, 3]", "matmul A B", {
        "d/L/d/A": "d/L/d/v is [3, 3] and B is [3, 3]: d/L/d/A = d/L/d/v @ B^T is [3, 3], "
                   "A's shape; here some sizes are equal, so 12 different products of the "
                   "two (each as it is or transposed) have that shape; with unequal sizes "
                   "only this one would"}),
    "matmul vector @ vector": ("A [3]", "B [3]", "matmul A B", {
        "d/L/d/A": "d/L/d/v is a scalar and B is [3]: d/L/d/A = d/L/d/v × B is [3], A's "
                   "shape; the only product of the two with that shape"}),
    "transpose": ("A [2, 3]", None, "transpose A", {
        "d/L/d/A": "d/L/d/v is [3, 2]: d/L/d/A = d/L/d/v^T is [2, 3], A's shape; "
                   "v = transpose A is linear in A, so its VJP applies the transposed map to "
                   "d/L/d/v"}),
    "sum": ("A [3]", None, "sum A", {
        "d/L/d/A": "d/L/d/v is a scalar and A is [3]: d/L/d/A = broadcast(d/L/d/v) is [3], "
                   "A's shape; v = sum A is linear in A, so its VJP applies the transposed map "
                   "to d/L/d/v: d/L/d/v, a scalar, copied to each of the 3 entries of A"}),
    "mean": ("A [2, 3]", None, "mean A", {
        "d/L/d/A": "d/L/d/v is a scalar and A is [2, 3]: d/L/d/A = broadcast(d/L/d/v) / 6 is "
                   "[2, 3], A's shape; v = mean A is linear in A, so its VJP applies the "
                   "transposed map to d/L/d/v: d/L/d/v, a scalar, copied to each of the 6 "
                   "entries of A"}),
    "logsumexp": ("A [3]", None, "logsumexp A", {
        "d/L/d/A": "d/L/d/v is a scalar and A is [3]: d/L/d/A = d/L/d/v × (e^A_i / sum_j "
                   "e^A_j) is [3], A's shape; v is a scalar, so its Jacobian with respect to "
                   "A is one slope per entry of A ([3]), and the VJP scales it by d/L/d/v"}),
    "softmax": ("A [3]", None, "softmax A", {
        "d/L/d/A": "d/L/d/v is [3] and v is [3]: d/L/d/A = v × (d/L/d/v - (sum_i (d/L/d/v × "
                   "v)_i)) is [3], A's shape; the Jacobian of v with respect to A is [3, 3] "
                   "(a row per entry of v, a column per entry of A): the VJP multiplies "
                   "d/L/d/v by it without ever forming it"}),
    "logsoftmax": ("A [3]", None, "logsoftmax A", {
        "d/L/d/A": "d/L/d/v is [3] and v is [3]: d/L/d/A = d/L/d/v - ((e ^ v) × (sum_i "
                   "d/L/d/v_i)) is [3], A's shape; the Jacobian of v with respect to A is "
                   "[3, 3] (a row per entry of v, a column per entry of A): the VJP multiplies "
                   "d/L/d/v by it without ever forming it"}),
    "outer": ("A [3]", "B [2]", "outer A B", {
        "d/L/d/A": "d/L/d/v is [3, 2] and B is [2]: d/L/d/A = d/L/d/v @ B is [3], A's "
                   "shape; the only product of the two with that shape",
        "d/L/d/B": "d/L/d/v is [3, 2] and A is [3]: d/L/d/B = A @ d/L/d/v is [2], B's "
                   "shape; the only product of the two with that shape"}),
    "outer of a scalar": ("A", "B [2]", "outer A B", {
        "d/L/d/A": "d/L/d/v is [2] and B is [2]: d/L/d/A = sum_i (d/L/d/v × B)_i is a "
                   "scalar, A's shape; v = outer A B is linear in A, so its VJP applies the "
                   "transposed map to d/L/d/v",
        "d/L/d/B": "d/L/d/v is [2] and A is a scalar: d/L/d/B = d/L/d/v × A is [2], B's "
                   "shape; the only product of the two with that shape"}),
    "sumto": ("A [2, 3]", "B [3]", "sumto A B", {
        "d/L/d/A": "d/L/d/v is [3] and A is [2, 3]: d/L/d/A = broadcast(d/L/d/v) is [2, 3], "
                   "A's shape; v = sumto A B is linear in A, so its VJP applies the "
                   "transposed map to d/L/d/v: d/L/d/v copied along axis 0 (2 times)",
        "d/L/d/B": "v = sumto A B only reads B's shape, so B's adjoint is 0: d/L/d/B = 0 × B "
                   "is [3], B's shape"}),
    "broadcast": ("A [3]", "B [2, 3]", "broadcast A B", {
        "d/L/d/A": "d/L/d/v is [2, 3], but A is [3]: A was repeated along axis 0 (2 times) in "
                   "v = broadcast A B, so its adjoint sums over it (one term per row: per "
                   "example, when the rows are a batch): d/L/d/A is [3], A's shape",
        "d/L/d/B": "v = broadcast A B only reads B's shape, so B's adjoint is 0: d/L/d/B = "
                   "0 × B is [2, 3], B's shape"}),
    "a bias added to every row": ("A [2, 3]", "B [3]", "add A B", {
        "d/L/d/B": "d/L/d/B:0 is [2, 3], but B is [3]: B was repeated along axis 0 (2 times) "
                   "in v = add A B, so its adjoint sums over it (one term per row: per "
                   "example, when the rows are a batch): d/L/d/B is [3], B's shape",
        "d/L/d/A": "d/L/d/v is [2, 3] and d/v/d/A is a scalar, so d/L/d/A is [2, 3], with the "
                   "scalar d/v/d/A used for each entry: A's shape"}),
    "a column scaled": ("A [2, 3]", "B [2, 1]", "mul A B", {
        "d/L/d/B": "d/L/d/B:0 is [2, 3], but B is [2, 1]: B was repeated along axis 1 (3 "
                   "times) in v = mul A B, so its adjoint sums over it: d/L/d/B is [2, 1], "
                   "B's shape",
        "d/L/d/A": "d/L/d/v is [2, 3] and d/v/d/A is [2, 1], so d/L/d/A is [2, 3], with "
                   "d/v/d/A repeated along axis 1 (3 times): A's shape"}),
    "onehot": ("A [3]", "B", "onehot A B", {
        "d/L/d/A": "v = onehot A B only reads A's shape, so A's adjoint is 0: d/L/d/A = 0 × A "
                   "is [3], A's shape"}),
}


def _program(a: str, b: str | None, line: str) -> str:
    return (f"declare weight {a}\n" + (f"declare weight {b}\n" if b else "")
            + "declare intvar v\ndeclare intvar q\ndeclare input C\ndeclare loss L\n"
            f"define v = {line}\ndefine q = sum v\ndefine L = mul q C\n")


def _sentences(text: str, example: dict[str, float] | None = None) -> dict[str, str]:
    """Each GCP line's dimension sentence, by the name it defines (via the stepper)."""
    model = TenFlangModel(text, "t")
    example = {"C": 0.7} if example is None else example
    rng = np.random.default_rng(3)
    for w, value in model.weights.items():  # a draw where no entry is 0
        model.weights[w] = rng.uniform(0.5, 1.5, np.shape(value)) if np.ndim(value) else 0.9
    return {s.name: s.shapes for s in model.stepper_run(example).steps}


@pytest.mark.parametrize("case", list(CASES))
def test_the_sentence_of_each_tensor_operator(case: str) -> None:
    a, b, line, want = CASES[case]
    got = _sentences(_program(a, b, line))
    for name, sentence in want.items():
        assert got[name] == sentence, (case, name)


def test_every_tensor_operator_has_a_case() -> None:
    tested = {line.split()[0] for _, _, line, _ in CASES.values()}
    tensor_ops = {op.name for op in ops.OPS_LIST if not op.elementwise}
    assert tensor_ops <= tested, tensor_ops - tested
    assert set(BILINEAR) == {"mul", "matmul", "outer"}  # what "a product" means, from the table


@pytest.mark.parametrize("case", list(CASES))
def test_every_stated_shape_is_the_gcps(case: str) -> None:
    """``X is [..]`` in any sentence: X's declared shape in the GCP (the sentences cannot
    drift from the compiler's shapes)."""
    a, b, line, _ = CASES[case]
    text = _program(a, b, line)
    gcp = compile_program(parse(text, "t.tf"))
    shapes = Dimensions.of(gcp).shapes
    for name, sentence in _sentences(text).items():
        for who, shape in re.findall(r"(?:^|and |: |, so )([\w/:]+) is (\[[0-9, ]*\]|a scalar)",
                                     sentence):
            if who in shapes:
                want = "a scalar" if not shapes[who] else "[" + ", ".join(
                    map(str, shapes[who])) + "]"
                assert shape == want, (case, name, who, sentence)


def test_elementwise_lines_say_entry_by_entry_and_the_diagonal() -> None:
    got = _sentences(_program("A [3]", None, "tanh A"))
    assert got["v"] == "A is [3], so v is [3], entry by entry"
    assert got["d/v/d/A"] == (
        "d/v/d/A is [3], like A: tanh works entry by entry, so the Jacobian of v with respect "
        "to A ([3, 3]) is diagonal, and the GCP keeps only its diagonal: one slope per entry")
    assert got["d/L/d/A"] == ("d/L/d/v is [3] and d/v/d/A is [3], so d/L/d/A is [3], entry by "
                              "entry: A's shape")
    # lines on scalars say nothing about shapes
    assert got["L"] == "" and got["d/L/d/q"] == ""


def test_the_digits_model_line_the_issue_asks_for() -> None:
    from conftest import EXAMPLES

    model = TenFlangModel((EXAMPLES / "digits" / "shape.tf").read_text(), "digits")
    rng = np.random.default_rng(0)
    run = model.stepper_run({"x": rng.random(64), "y": np.eye(10)[3]})
    by_name = {s.name: s.shapes for s in run.steps}
    assert by_name["d/lambda/d/W2"] == (
        "d/lambda/d/a2 is [10] and h is [32]: d/lambda/d/W2 = h_i × d/lambda/d/a2_j is "
        "[32, 10], W2's shape; the only product of the two with that shape")
    assert by_name["d/lambda/d/h"] == (
        "d/lambda/d/a2 is [10] and W2 is [32, 10]: d/lambda/d/h = d/lambda/d/a2 @ W2^T is "
        "[32], h's shape; the only product of the two with that shape")
    assert by_name["d/lambda/d/h:0"] == "W2 is [32, 10], so d/lambda/d/h:0 is [10, 32]"
    assert by_name["a1"] == "x is [64] and W1 is [64, 32], so a1 is [32]"


def test_a_weight_that_cannot_matter_gets_zeros_of_its_shape() -> None:
    text = ("declare input x [3]\ndeclare weight W [3]\ndeclare weight U [2]\n"
            "declare intvar s\ndeclare intvar t\ndeclare loss L\n"
            "define s = sum W\ndefine t = sum U\ndefine L = mul s 2\n")
    got = _sentences(text, {"x": [1.0, 2.0, 3.0]})
    assert got["d/L/d/U"] == "d/L/d/U is [2]: 0 for every entry of U"


def test_steps_towards_a_vjp_say_their_own_shapes() -> None:
    got = _sentences(_program("A [3]", None, "softmax A"))
    assert got["d/L/d/A:1"] == "d/L/d/A:0 is [3], so d/L/d/A:1 is a scalar"
    assert got["d/L/d/A:2"] == ("d/L/d/v is [3] and d/L/d/A:1 is a scalar, so d/L/d/A:2 is "
                                "[3], with the scalar d/L/d/A:1 used for each entry")
