"""The finite-difference oracle shared by the gradient tests.

The reference for every gradient is a central difference of the *loss* computed by running the
shape program itself (not its GCP) with one weight component nudged up and down. The GCP is run
separately, so the two paths share the forward kernels but none of the compiler's derivative
rules, folding or fan-out bookkeeping. :func:`assert_gradients` checks the forward-mode program
(``tfcompiler --forward``) the same way, and against the GCP, so every case that checks the
GCP checks forward mode too; and the Hessian-vector program (``tfcompiler --hvp``) against
central differences of the GCP's gradient along a random direction (:func:`assert_hvp`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from tenflang_nb.core import api, gradcheck
from tenflang_nb.core.agreement import entrywise_agreement
from tenflang_nb.core.backprop import Gcp, adjoint_name
from tenflang_nb.core.forward import compile_forward
from tenflang_nb.core.hvp import compile_hvp
from tenflang_nb.core.lexical import direction_name
from tenflang_nb.core.plan import Plan
from tenflang_nb.core.program import Program, parse

Values = dict[str, np.ndarray]

REL_STEP = 1e-6
RTOL = 1e-5
ATOL = 1e-7


def assert_agree(got: Any, expected: Any, rtol: float, atol: float, err_msg: str = "",
                 names: tuple[str, str] = ("the value", "its reference")) -> None:
    """``got`` agrees with ``expected`` entry by entry by the package's one rule
    (``core.agreement.entrywise_agreement``: within ``rtol`` of the reference entry, or
    ``atol`` where it is about 0): never where either side is NaN or infinite (the message
    says which side), unlike ``np.testing.assert_allclose``, for which NaN equals NaN."""
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    found = entrywise_agreement(got, expected, rtol=rtol, atol=atol)
    if found.ok:
        return
    if found.each is None or found.row is None or found.nonfinite is not None:
        raise AssertionError(f"{found.reason(*names)}: {got} against {expected}\n{err_msg}")
    at = (found.row,) if isinstance(found.row, int) else found.row
    raise AssertionError(
        f"{int(np.sum(~found.each))} of {found.each.size} entries disagree (rtol {rtol}, "
        f"atol {atol}); at {at}: {names[0]} {got[at]!r}, {names[1]} {expected[at]!r} "
        f"(relative error {found.error:.2g} at worst)\n{err_msg}")


def as_values(values: Mapping[str, Any]) -> Values:
    """float64 copies of per-example values (scalars become 0-d arrays)."""
    return {k: np.array(v, dtype=np.float64) for k, v in values.items()}


def run_program(program: Program, values: Mapping[str, Any], names: Iterable[str]
                ) -> dict[str, np.ndarray | None]:
    """Run ``program`` on ONE example; the per-example value of each of ``names``."""
    run = Plan(program).bind(as_values(values), n=1)
    with np.errstate(all="ignore"):
        run.run()
    out: dict[str, np.ndarray | None] = {}
    for name in names:
        v = run.value(name)
        out[name] = None if v is None else np.array(v[0])
    return out


def loss_of(program: Program, values: Mapping[str, Any]) -> float:
    """The loss of one example, by running the shape program."""
    v = run_program(program, values, [program.loss])[program.loss]
    assert v is not None, "the loss is NULL: the test forgot to give a value"
    return float(v)


def fd_gradient(program: Program, values: Mapping[str, Any], name: str,
                rel_step: float = REL_STEP) -> np.ndarray:
    """Central-difference d(loss)/d(name), one component at a time (the core's oracle)."""
    base = as_values(values)
    return gradcheck.fd_gradient(lambda x: loss_of(program, {**base, name: x}), base[name],
                                 eps=rel_step, relative=True)


def gcp_gradients(gcp: Gcp, values: Mapping[str, Any], names: Iterable[str]
                  ) -> dict[str, np.ndarray]:
    """Run the GCP (or a forward-mode program) on one example; d/L/d/name of each of
    ``names``."""
    wanted = {n: adjoint_name(gcp.loss, n) for n in names}
    got = run_program(gcp.program(), values, wanted.values())
    out = {}
    for n, adj in wanted.items():
        v = got[adj]
        assert v is not None, f"{adj} is NULL in the GCP"
        out[n] = v
    return out


def assert_forward_mode(program: Program, gcp: Gcp, values: Mapping[str, Any],
                        names: Iterable[str], rtol: float, atol: float) -> None:
    """The forward-mode program's gradients equal the GCP's (to rounding) and the central
    differences (to ``rtol``/``atol``), with the outputs gradient descent reads."""
    forward = compile_forward(program)
    forward_program = forward.program()
    weights = [n for n in names if program.kind(n) == "weight"]
    for w in program.names("weight"):
        name = adjoint_name(gcp.loss, w)
        assert forward_program.kind(name) == "output", (w, forward.text)
        assert forward_program.shapes[name] == program.shapes[w]
    got = gcp_gradients(forward, values, weights)
    reverse = gcp_gradients(gcp, values, weights)
    for w in weights:
        scale = max(1.0, float(np.max(np.abs(reverse[w]), initial=0.0)))
        assert_agree(got[w], reverse[w], rtol=1e-9, atol=1e-12 * scale,
                     err_msg=f"forward mode, d/{gcp.loss}/d/{w}\n{forward.text}",
                     names=("forward mode", "the GCP"))
        assert_agree(got[w], fd_gradient(program, values, w), rtol=rtol, atol=atol,
                     err_msg=f"forward mode vs differences, d/{gcp.loss}/d/{w}\n{forward.text}",
                     names=("forward mode", "the central difference"))


def direction(program: Program, seed: int = 0) -> Values:
    """A random direction: a value for every weight, with its shape."""
    rng = np.random.default_rng(seed)
    return {w: rng.normal(size=program.shapes[w]) for w in program.names("weight")}


def fd_hvp(program: Program, values: Mapping[str, Any], v: Mapping[str, Any],
           rel_step: float = 1e-5) -> dict[str, np.ndarray]:
    """H v of ONE example by central differences of the GCP's gradient along ``v``:
    (g(w + h v) - g(w - h v)) / 2h, the step ``h`` scaled to the weights and to ``v``."""
    gcp = api.compile(program)
    weights = program.names("weight")
    base = as_values(values)
    size = max([1.0] + [float(np.max(np.abs(base[w]), initial=0.0)) for w in weights])
    h = rel_step * size / max([1e-300] + [float(np.max(np.abs(v[w]), initial=0.0))
                                          for w in weights])
    up = gcp_gradients(gcp, {**base, **{w: base[w] + h * v[w] for w in weights}}, weights)
    down = gcp_gradients(gcp, {**base, **{w: base[w] - h * v[w] for w in weights}}, weights)
    return {w: (up[w] - down[w]) / (2 * h) for w in weights}


def hvp_of(program: Program, values: Mapping[str, Any], v: Mapping[str, Any]
           ) -> dict[str, np.ndarray]:
    """H v of ONE example by the Hessian-vector program (and its gradient outputs equal the
    GCP's, exactly: it holds the GCP)."""
    hvp = compile_hvp(program)
    weights = program.names("weight")
    inputs = {**values, **{direction_name(w): v[w] for w in weights}}
    names = {**hvp.hvp_names(), **{f"g {w}": g for w, g in hvp.gradient_names().items()}}
    got = run_program(hvp.program(), inputs, names.values())
    reverse = gcp_gradients(api.compile(program), values, weights)
    out = {}
    for w in weights:
        gradient, product = got[names[f"g {w}"]], got[names[w]]
        assert gradient is not None and product is not None, (w, hvp.text)
        np.testing.assert_array_equal(gradient, reverse[w])
        assert product.shape == program.shapes[w], (w, product.shape)
        out[w] = product
    return out


def assert_hvp(program: Program, values: Mapping[str, Any], *, rtol: float = 1e-4,
               atol: float = 1e-6, seed: int = 0) -> None:
    """The Hessian-vector program's H v equals central differences of the GCP's gradient
    along a random direction (``atol`` scaled by the sizes of H v and the gradient)."""
    v = direction(program, seed)
    got = hvp_of(program, values, v)
    expected = fd_hvp(program, values, v)
    gradient = gcp_gradients(api.compile(program), values, program.names("weight"))
    scale = max([1.0] + [float(np.max(np.abs(a), initial=0.0))
                         for a in (*expected.values(), *gradient.values())])
    for w, product in got.items():
        assert_agree(product, expected[w], rtol=rtol, atol=atol * scale,
                     err_msg=f"H v, weight {w}, v = {v}\n{compile_hvp(program).text}",
                     names=("the HVP program", "the differences"))


def assert_gradients(source: str, values: Mapping[str, Any], wrt: Iterable[str] | None = None,
                     *, full: bool = False, rtol: float = RTOL, atol: float = ATOL,
                     scale_atol: bool = False) -> dict[str, np.ndarray]:
    """Compile ``source`` and check the GCP's gradients against central differences, and
    the forward-mode program's against both.

    ``wrt`` defaults to every weight; with ``full`` the GCP keeps every adjoint, so inputs can be
    checked too (forward mode has gradients for the weights only). ``scale_atol`` multiplies
    ``atol`` by max(1, |loss|) (rounding in the difference quotient grows with the loss).
    Returns the GCP's gradients.
    """
    program = parse(source, "<test>")
    gcp = api.compile(program, full=full)
    names = list(wrt) if wrt is not None else program.names("weight")
    assert names, "nothing to differentiate"
    got = gcp_gradients(gcp, values, names)
    gcp_program = gcp.program()
    for w in program.names("weight"):  # what gradient descent reads: one output per weight
        assert gcp_program.kind(adjoint_name(gcp.loss, w)) == "output", (w, gcp.text)
        assert gcp_program.shapes[adjoint_name(gcp.loss, w)] == program.shapes[w]
    tol = atol * max(1.0, abs(loss_of(program, values))) if scale_atol else atol
    for name in names:
        expected = fd_gradient(program, values, name)
        assert_agree(got[name], expected, rtol=rtol, atol=tol,
                     err_msg=f"d/{program.loss}/d/{name} of\n{source}\nGCP:\n{gcp.text}",
                     names=("the GCP", "the central difference"))
    assert_forward_mode(program, gcp, values, names, rtol, tol)
    if program.names("weight"):
        assert_hvp(program, values)
    return got
