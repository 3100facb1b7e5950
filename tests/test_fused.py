"""The fused engine (core/fused.py) against the reference interpreter (core/plan.py).

Tolerance: every value and batch mean the fused engine computes agrees with the reference's
by the package's one rule (core/agreement.py) with rtol 1e-9: within 1e-9 of the value's
scale (its largest finite entry, at least 1); its NaN and infinite entries are the
reference's, entry for entry (the rule lets no NaN agree, so they are compared as positions).
The fused loops use their own exp, ln and tanh (within 4 units in the last place of numpy's,
also tested here) and add in another order, so the two differ in the last bits, never more.
"""

from __future__ import annotations

import sys
import threading
import tracemalloc
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import hypothesis_settings
from hypothesis import given
from hypothesis import strategies as st
from test_random_programs import Case, programs

from tenflang_nb.core import api, fused, fusedplan
from tenflang_nb.core.agreement import agreement
from tenflang_nb.core.errors import ComputeError
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.forward import compile_forward
from tenflang_nb.core.landscape import LossEvaluator, plane_for
from tenflang_nb.core.landscape.evaluation import _Folded
from tenflang_nb.core.ops import OPS, KernelSpec
from tenflang_nb.core.plan import Plan, Run
from tenflang_nb.core.program import ancestors, parse
from tenflang_nb.core.settings import TrainSettings
from tenflang_nb.core.train import CHECK_VALUES_EVERY, GradientDescent

RTOL = 1e-9
DIGITS = Path(__file__).resolve().parents[1] / "examples" / "digits"


@pytest.fixture(scope="session")
def vm(fused_vm: Any) -> Any:
    """The compiled loops (conftest's session fixture: compiled or loaded once)."""
    return fused_vm


@contextmanager
def patched(module: Any, **values: Any) -> Iterator[None]:
    """Module constants changed for the block (hypothesis tests cannot use monkeypatch)."""
    old = {k: getattr(module, k) for k in values}
    for k, v in values.items():
        setattr(module, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)


def assert_close(got: Any, want: Any, what: str) -> None:
    """The same NULL, the same NaN and infinite entries, the finite ones in agreement (see
    the module)."""
    assert (got is None) == (want is None), what
    if want is None:
        return
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape, what
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"NaN entries differ\n{what}"
    infinite = np.isinf(want)
    assert np.array_equal(np.isinf(got), infinite) and np.array_equal(
        got[infinite], want[infinite]), f"infinite entries differ\n{what}"
    finite = np.isfinite(want)
    found = agreement(got[finite], want[finite], rtol=RTOL, floor=1.0)
    assert found.ok, f"{found.reason('the fused engine', 'the reference')}\n{what}"


# ---------------------------------------------------------------------------- the math


def _unary(vm: Any, op: int, x: np.ndarray) -> np.ndarray:
    return vm.elementwise(op, x)


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 709.78, 709.79, 710.0,
                    -708.4, -745.1, -745.2, 1e308, -1e308, 5e-324, -5e-324, 1e-310, 22.0,
                    21.9, 1e-300, 2.2250738585072014e-308, 0.9999999999999999])


@pytest.mark.parametrize("name", sorted(fusedplan.UNARY))
def test_each_unary_operator_matches_numpy(vm: Any, name: str) -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([SPECIAL, rng.uniform(-750, 750, 20_000), rng.uniform(-3, 3, 20_000),
                        rng.uniform(-1e-6, 1e-6, 2_000), np.exp(rng.uniform(-740, 700, 20_000))])
    kernel = OPS[name].kernel(KernelSpec(((),), (), (True,), (None,)))
    with np.errstate(all="ignore"):
        want = np.asarray(kernel(x.copy()), dtype=float)
    got = _unary(vm, vm.Unary[fusedplan.UNARY[name]], x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite & ~np.isnan(want)],
                                  want[~finite & ~np.isnan(want)], err_msg=name)
    ulps = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))
    assert float(np.max(ulps)) <= 4, (name, x[finite][np.argmax(ulps)])
    # a zero's sign too: 1 / relu -0.0 is +inf on the reference (numpy gives +0.0)
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]),
                                  err_msg=f"{name}: the sign of a zero, at {x[zero]}")


@pytest.mark.parametrize("op", ["relu", "sign", "step", "abs"])
def test_one_over_an_operator_of_negative_zero_is_the_reference_infinity(vm: Any, op: str
                                                                         ) -> None:
    """relu and sign of -0.0 are +0.0 in numpy: ``div 1 ...`` gives +inf, not -inf."""
    program = parse(f"declare input x\ndeclare intvar a\ndeclare output q\n"
                    f"define a = {op} x\ndefine q = div 1 a\n")
    x = np.array([-0.0, 0.0, -2.0, 3.0, np.nan] * 3)
    plan = Plan(program)
    reference = plan.bind({"x": x}, len(x), ["q"])
    reference.run()
    run = fused.FusedRun(plan, {"x": x}, len(x), ["q"], {"q"}, vm)
    run.run()
    assert_close(run.value("q"), reference.value("q"), op)


# a per-example vector's mean (summed column by column), a scalar's (summed in SIMD lanes)
NEAR_LARGEST = {"vector": "declare weight w\ndeclare output o [2]\ndefine o = mul x w\n",
                "scalar": "declare intvar v\ndeclare output o\ndefine v = sum x\n"
                          "define o = mul v 0.5\n"}


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("kind", sorted(NEAR_LARGEST))
def test_a_batch_mean_near_the_largest_float_does_not_overflow(vm: Any, chunked: bool,
                                                               kind: str) -> None:
    """The reference takes a batch mean as a BLAS product with weights 1/N: no overflow
    where the values are finite; the fused engine weights each term too (not a sum, then a
    division), in every chunk."""
    program = parse("declare input x [2]\n" + NEAR_LARGEST[kind])
    n = 3_000
    x = -1e306 * np.random.default_rng(0).uniform(1.0, 1.5, (n, 2))
    data = {"x": x, "w": 0.5} if kind == "vector" else {"x": x}
    plan = Plan(program)
    reference = plan.bind(data, n, ["o"])
    reference.run()
    assert np.isfinite(reference.mean("o")).all()
    chunks = {"CHUNK_OVER": 0, "CHUNK_BYTES": 8_000, "MIN_CHUNK": 2} if chunked else {}
    with patched(fused, **chunks):
        run = fused.FusedRun(plan, data, n, ["o"], set(), vm)
    assert (run.whole is not None) == chunked
    assert run.parts[0].schedule.summed  # summed in the block loop
    run.run()
    assert_close(run.mean("o"), reference.mean("o"), kind)


# ---------------------------------------------------------------------------- random programs


def _programs(case: Case, kind: str) -> Any:
    shape = parse(case.source, "random.tf")
    if kind == "forward":
        return compile_forward(shape).program()
    return api.compile(shape, full=kind == "full").program()


@hypothesis_settings(70)
@given(programs(tensors=True, examples=5), st.sampled_from(["reverse", "full", "forward"]),
       st.integers(0, 3), st.booleans(), st.data())
def test_fused_equals_reference_on_random_programs(vm: Any, case: Case, kind: str,
                                                   drop: int, chunked: bool,
                                                   data: st.DataObject) -> None:
    """Every operator, broadcasting, fan-out, tensors, several blocks and chunks, NULL
    inputs (``drop`` leaves one input out), shared and per-example values, whatever the
    caller keeps."""
    program = _programs(case, kind)
    bound: dict[str, Any] = {w: case.values[0][w] for w in case.weights}
    for i, x in enumerate(case.inputs):
        if i != drop:
            bound[x] = np.stack([case.values[k][x] for k in range(5)])
    n = 5 if len(bound) > len(case.weights) else 1
    plan = Plan(program)
    outputs = program.names("output", "loss")
    means = data.draw(st.lists(st.sampled_from(outputs), unique=True)) if outputs else []
    names = [d.target for d in plan.defines]
    keep = set(data.draw(st.lists(st.sampled_from(names), unique=True))) if names else set()
    reference = plan.bind(bound, n, means)
    reference.run()
    chunks = {"CHUNK_OVER": 0, "CHUNK_BYTES": 1, "MIN_CHUNK": 2} if chunked else {}
    with patched(fusedplan, BLOCK_NUMBERS=data.draw(st.sampled_from([1, 5, 64]))), \
            patched(fused, **chunks):
        run = fused.FusedRun(plan, bound, n, means, keep, vm)
    run.run()
    # training's check: the checking pass (sums in the block loop) decides as the reference
    assert run.finite() == reference.finite(), f"{case.source}\n{program.text()}"
    assert run.finite(keep) == reference.finite(keep), f"{case.source}\n{program.text()}"
    for name in means:
        assert_close(run.mean(name), reference.mean(name),
                     f"mean of {name}\n{case.source}\n{program.text()}")
    # (the reference leaves a line whose only use is a mean it takes another way unrun)
    for name in [*keep, *outputs]:
        want = reference.value(name)
        if want is None or not reference.bound.skipped(name):
            assert_close(run.value(name), want, f"{name}\n{case.source}\n{program.text()}")


# ---------------------------------------------------------------------------- training


def _seed_data(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, n)
    return {"x": x, "y": 1 / (1 + np.exp(-1.7 * x)) + rng.normal(0, 0.02, n)}


@pytest.mark.parametrize("batch_size", [None, 64])
def test_training_on_either_engine_gives_the_same_weights(vm: Any, batch_size: int | None
                                                          ) -> None:
    with np.load(DIGITS / "digits.npz") as d:
        data = {"x": d["x"][:300], "y": d["y"][:300]}
    gcp = api.parse_file(DIGITS / "gcp.tf")
    results = []
    for engine in ("reference", "fused"):
        t = api.trainer(gcp, data, lr=0.5, tol=0.0, max_iter=60, engine=engine,
                        batch_size=batch_size)
        assert isinstance(t._run, Run if engine == "reference" else fused.FusedRun)
        results.append(t.run())
    ref, got = results
    assert [round(r.loss, 9) for r in got.history] == [round(r.loss, 9) for r in ref.history]
    for w in ref.weights:
        assert_close(got.weights[w], ref.weights[w], w)


def test_training_in_chunks_gives_the_same_weights(vm: Any, monkeypatch: Any) -> None:
    data = _seed_data(10_001)
    gcp = api.compile(api.parse(SEED_EXAMPLE))
    ref = api.trainer(gcp, data, lr=0.1, tol=0.0, max_iter=20, engine="reference").run()
    monkeypatch.setattr(fused, "CHUNK_OVER", 0)
    monkeypatch.setattr(fused, "CHUNK_BYTES", 20_000)
    t = api.trainer(gcp, data, lr=0.1, tol=0.0, max_iter=20, engine="fused")
    assert len(t._run.parts) == 2 and t._run.whole is not None  # two chunk sizes
    got = t.run()
    assert_close(got.weights["w"], ref.weights["w"], "w")
    assert_close(got.loss, ref.loss, "loss")


def test_the_seed_model_stores_nothing_per_example(vm: Any) -> None:
    """Its whole GCP is one group: the loss and the gradient are summed in the pass."""
    gcp = api.compile(api.parse(SEED_EXAMPLE))
    t = api.trainer(gcp, _seed_data(1000), engine="fused")
    schedule = t._run.parts[0].schedule
    assert len(schedule.stages) == 1 and not schedule.written and not schedule.means
    assert sorted(schedule.summed) == ["d/lambda/d/w", "lambda"]


@pytest.mark.parametrize("chunked", [False, True])
def test_first_nonfinite_names_the_reference_line(vm: Any, monkeypatch: Any,
                                                  chunked: bool) -> None:
    program = parse("declare input x\ndeclare weight w\ndeclare intvar a\ndeclare intvar b\n"
                    "declare loss L\ndefine a = mul x w\ndefine b = exp a\n"
                    "define L = ln b\n")
    x = np.linspace(-1, 1, 1000)
    x[700] = 1e4  # e^(1e4) overflows on one example only
    if chunked:
        monkeypatch.setattr(fused, "CHUNK_OVER", 0)
        monkeypatch.setattr(fused, "CHUNK_BYTES", 800)
    run = fused.FusedRun(Plan(program), {"x": x, "w": 1.0}, 1000, ["L"], set(), vm)
    run.run()
    assert not np.isfinite(run.mean("L"))
    bad = run.first_nonfinite()
    assert bad is not None and bad.target == "b"
    assert run.value("b")[700] == np.inf and run.value("a")[700] == 1e4


# a saturated logistic: z = -inf, yet the loss and the gradient stay finite (the tiny slope
# r keeps the gradient off 0): only a check of the intermediate values stops the run
SATURATED_SLOPE = "".join(f"{line}\n" for line in (
    "declare input x", "declare weight w", "declare intvar z", "declare intvar o",
    "declare intvar q", "declare intvar r", "declare loss L", "define z = mul w x",
    "define o = logistic z", "define q = mul o o", "define r = mul w 1e-300",
    "define L = add q r"))


@pytest.mark.parametrize("chunked", [False, True])
def test_a_non_finite_intermediate_stops_fused_training_naming_its_line(
        vm: Any, monkeypatch: Any, chunked: bool) -> None:
    """The fused pass stores no z; the check every 32nd step computes it again, chunk by
    chunk, as main's reference check reads it."""
    if chunked:
        monkeypatch.setattr(fused, "CHUNK_OVER", 0)
        monkeypatch.setattr(fused, "CHUNK_BYTES", 4_000)
    gcp = api.compile(api.parse(SATURATED_SLOPE, "s.tf"))
    data = {"x": np.full(3_000, 1000.0)}
    for engine in ("reference", "fused"):
        t = api.trainer(gcp, data, lr=6e303, tol=0.0, max_iter=40, engine=engine)
        assert isinstance(t._run, Run if engine == "reference" else fused.FusedRun)
        if engine == "fused":
            assert not t._run.parts[0].schedule.written  # z is never stored
            assert (t._run.whole is not None) == chunked
        with pytest.raises(ComputeError, match=f"at iteration {CHECK_VALUES_EVERY} appeared"
                           ) as info:
            t.run()
        assert info.value.first.source == "define z = mul w x", engine
        assert t.history[-1].iteration == CHECK_VALUES_EVERY - 1


def test_finite_reads_the_values_of_the_last_pass(vm: Any, monkeypatch: Any) -> None:
    """A second fused pass sums what the first did not store; only a sum that is not finite
    asks the reference engine (exact: finite values may overflow a sum)."""
    exact: list[Any] = []
    reference = fused.FusedRun._finite_by_reference
    monkeypatch.setattr(fused.FusedRun, "_finite_by_reference",
                        lambda self, only: exact.append(only) or reference(self, only))
    plan = _seed_plan()
    run = fused.FusedRun(plan, {**_seed_data(1000), "w": 0.5}, 1000, ["lambda"], set(), vm)
    run.run()
    assert run.finite() and not exact
    run.set("w", np.inf)
    run.run()
    assert not run.finite() and not run.finite(ancestors(plan.program, "lambda"))
    assert run.finite(set())  # no line asked about
    assert len(exact) == 2
    huge = parse("declare input x\ndeclare weight w\ndeclare intvar a\ndeclare loss L\n"
                 "define a = mul x w\ndefine L = mul a 1e-300\n")
    run = fused.FusedRun(Plan(huge), {"x": np.full(1000, 1e308), "w": 1.0}, 1000, ["L"],
                         set(), vm)
    run.run()
    assert run.finite() and len(exact) == 3  # its sum overflows: the reference decides


def test_the_landscape_on_the_fused_engine_is_the_reference_one(vm: Any) -> None:
    """One setting a pass (the digits network: its loss averaged in the pass), stacked
    settings (the seed's: each setting's rows of the stored loss), and the folded plane
    (computed on the reference engine's buffers)."""
    with np.load(DIGITS / "digits.npz") as d:
        digits = {"x": d["x"][:400], "y": d["y"][:400]}
    cases = [(api.parse_file(DIGITS / "shape.tf"), digits, ["W1", "b1", "W2", "b2"]),
             (api.parse(SEED_EXAMPLE), _seed_data(2_000), ["w"])]
    rng = np.random.default_rng(0)
    for program, data, weights in cases:
        n = len(data["x"])
        ev = {e: LossEvaluator(program, data, n, weights, engine=e)
              for e in ("reference", "fused")}
        size = ev["fused"].layout.size
        points = rng.normal(0, 0.3, (5, size))
        assert_close(ev["fused"].losses(points), ev["reference"].losses(points), "losses")
        assert all(isinstance(r, fused.FusedRun) for r in ev["fused"]._runs.values())
        start = api.initial_weights({w: program.shapes[w] for w in weights}, "normal")
        plane = plane_for(ev["fused"].layout, start, seed=0)
        coords = rng.uniform(-1, 1, (6, plane.dims))
        assert_close(ev["fused"].plane_losses(plane, coords),
                     ev["reference"].plane_losses(plane, coords), "plane")
        if ev["fused"].stack == 1:  # the digits network: its first layer folded
            assert _Folded.build(ev["fused"], plane) is not None


def test_curvature_on_the_fused_engine_is_the_reference_one(vm: Any) -> None:
    """H v, the gradient, the top eigenvalue and Newton's method: the HVP program (the GCP
    and a forward sweep over it) run on either engine."""
    data = _seed_data(5_000)
    found = {}
    for engine in ("reference", "fused"):
        c = api.curvature(SEED_EXAMPLE, data, {"w": 0.3}, engine=engine)
        assert isinstance(c._run, Run if engine == "reference" else fused.FusedRun)
        loss, grad = c.gradient()
        found[engine] = [loss, grad["w"], c.hvp({"w": 2.0})["w"], c.top_eigenvalue().value,
                         c.newton(max_iter=5).weights["w"]]
    assert_close(found["fused"], found["reference"], "curvature")
    with np.load(DIGITS / "digits.npz") as d:
        digits = {"x": d["x"][:300], "y": d["y"][:300]}
    shape = api.parse_file(DIGITS / "shape.tf")
    weights = api.initial_weights({w: shape.shapes[w] for w in shape.names("weight")})
    v = {w: np.ones(shape.shapes[w]) for w in weights}
    products = [api.curvature(shape, digits, weights, engine=e).hvp(v)
                for e in ("fused", "reference")]
    for w in weights:
        assert_close(products[0][w], products[1][w], w)


# ---------------------------------------------------------------------------- choosing


@pytest.fixture
def fresh(monkeypatch: Any) -> dict[str, Any]:
    """The loading state as in a new process."""
    state = {"vm": None, "why": "not loaded yet", "thread": None}
    monkeypatch.setattr(fused, "_STATE", state)
    return state


def _seed_plan() -> Plan:
    return Plan(api.compile(api.parse(SEED_EXAMPLE)).program())


def test_without_numba_every_engine_is_the_reference(fresh: dict[str, Any],
                                                     monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "numba", None)  # `import numba` raises ImportError
    data = _seed_data(100)
    for engine in fused.ENGINES:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            run = fused.bind(_seed_plan(), {**data, "w": 0.5}, 100, engine=engine)
        assert isinstance(run, Run), engine
        # asked for, the fused engine says why it cannot run (auto and reference: silent)
        assert [str(w.message) for w in warned if w.category is fused.EngineWarning] == (
            [f"the fused engine cannot run here ({fused.status()}): the reference engine "
             "runs instead (the same results, slower)"] if engine == "fused" else []), engine
    assert "numba" in fused.status()
    with pytest.warns(fused.EngineWarning, match="numba"):
        t = api.trainer(api.compile(api.parse(SEED_EXAMPLE)), data, engine="fused", max_iter=5)
    assert isinstance(t._run, Run) and t.run().iterations == 5


def test_a_failed_compile_falls_back_to_the_reference(fresh: dict[str, Any],
                                                      monkeypatch: Any) -> None:
    def broken() -> None:
        raise RuntimeError("LLVM ERROR: cannot select")

    monkeypatch.setattr(fused, "_import_vm", broken)
    with pytest.warns(fused.EngineWarning, match="LLVM ERROR: cannot select"):
        run = fused.bind(_seed_plan(), {**_seed_data(100), "w": 0.5}, 100, engine="fused")
    assert isinstance(run, Run)
    assert "LLVM ERROR" in fused.status()


def test_auto_keeps_small_batches_on_the_reference_without_loading(
        fresh: dict[str, Any]) -> None:
    run = fused.bind(_seed_plan(), {**_seed_data(1000), "w": 0.5}, 1000)
    assert isinstance(run, Run)
    assert fresh["thread"] is None and fused.status() == "not loaded yet"


def test_auto_loads_numba_only_for_a_long_run(fresh: dict[str, Any], monkeypatch: Any) -> None:
    monkeypatch.setattr(fused, "AUTO_NUMBERS", 100)
    monkeypatch.setattr(fused, "AUTO_AFTER", 3600.0)
    run = fused.bind(_seed_plan(), {**_seed_data(1000), "w": 0.5}, 1000)
    for _ in range(20):
        run.run()
    assert isinstance(run, fused._Deferred) and isinstance(run.current, Run)
    assert fresh["thread"] is None  # a short training: numba never imported


def test_auto_in_a_notebook_kernel_stays_on_the_reference(fresh: dict[str, Any],
                                                          monkeypatch: Any) -> None:
    """Issue 26: a kernel (the extension loaded) never loads numba in the background."""
    monkeypatch.setattr(fused, "AUTO_NUMBERS", 100)
    monkeypatch.setattr(fused, "AUTO_AFTER", 0.0)
    monkeypatch.setattr(fused, "cpus", lambda: 2)
    plan, data = _seed_plan(), {**_seed_data(1000), "w": 0.5}
    assert isinstance(fused.bind(plan, data, 1000), fused._Deferred)
    try:
        fused.load_in_background(False)
        run = fused.bind(plan, data, 1000)
    finally:
        fused.load_in_background(True)
    run.run()
    assert isinstance(run, Run) and fresh["thread"] is None


def test_auto_switches_to_fused_once_loaded(vm: Any, fresh: dict[str, Any],
                                            monkeypatch: Any) -> None:
    gate = threading.Event()

    def slow() -> Any:
        gate.wait(10)
        return vm

    monkeypatch.setattr(fused, "_import_vm", slow)
    monkeypatch.setattr(fused, "AUTO_NUMBERS", 100)
    monkeypatch.setattr(fused, "AUTO_AFTER", 0.0)
    plan, data = _seed_plan(), {**_seed_data(1000), "w": 0.5}
    run = fused.bind(plan, data, 1000, means=["lambda"])
    assert isinstance(run, fused._Deferred) and fused.status() == "not loaded yet"
    run.run()  # the reference engine; numba starts loading now
    assert fused.status() == "loading"
    run.run()  # still the reference engine
    first = run.mean("lambda")
    assert isinstance(run.current, Run)
    gate.set()
    fresh["thread"].join(10)
    run.run()
    assert isinstance(run.current, fused.FusedRun)
    assert_close(run.mean("lambda"), first, "lambda")


def test_data_in_fortran_order_is_read_right(vm: Any) -> None:
    """The loop reads flat C-order buffers; a column block from pandas may be in F order."""
    with np.load(DIGITS / "digits.npz") as d:
        data = {"x": np.asfortranarray(d["x"][:200]), "y": np.asfortranarray(d["y"][:200])}
    gcp = api.parse_file(DIGITS / "gcp.tf")
    got, want = (api.trainer(gcp, data, lr=0.5, tol=0.0, max_iter=5, engine=e).evaluate()
                 for e in ("fused", "reference"))
    assert_close(got[0], want[0], "loss")
    for w in want[1]:
        assert_close(got[1][w], want[1][w], w)


def test_a_run_the_fused_engine_cannot_adopt_stays_on_the_reference(
        vm: Any, fresh: dict[str, Any], monkeypatch: Any) -> None:
    plan = Plan(parse("declare input x [2]\ndeclare weight w\ndeclare loss L\n"
                      "declare intvar a\ndefine a = mul x w\ndefine L = sum a\n"))
    run = plan.bind({"x": np.ones((2, 3)).T, "w": 2.0}, 3, ["L"])  # x given in F order
    # every buffer a C-order extent of the run's one arena, whatever order the data came in
    assert all(v is None or (v.flags.c_contiguous and np.shares_memory(v, run.arena))
               for v in run.values.values())

    def refused(*args: Any, **kwargs: Any) -> None:
        raise ValueError("refused on purpose")

    monkeypatch.setattr(fusedplan, "schedule", refused)
    deferred = fused._Deferred(run, set())
    fresh["vm"] = vm
    deferred.run()
    assert deferred.current is run and "refused on purpose" in fused.status()
    assert_close(deferred.mean("L"), 4.0, "L")


def test_auto_takes_the_fused_engine_in_chunks_where_the_reference_would_not_fit(
        vm: Any, fresh: dict[str, Any], monkeypatch: Any) -> None:
    """Where the fused engine would take the examples in chunks, auto takes it from the
    start: never the reference's buffers and then numba's beside them (2,000,000 rows of the
    seed model took 464 MB that way, against 335 MB fused). Peak memory as in the test below;
    numba not loaded yet in this state (``fresh``)."""
    n = 200_000
    data = _seed_data(n)
    data_bytes = sum(v.nbytes for v in data.values())
    monkeypatch.setattr(fused, "CHUNK_OVER", 1 << 20)
    monkeypatch.setattr(fused, "CHUNK_BYTES", 1 << 20)
    gcp = api.compile(api.parse(SEED_EXAMPLE)).program()
    tracemalloc.start()
    t = GradientDescent(gcp, data, n, TrainSettings(tol=0.0, max_iter=3, engine="auto"))
    t.run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert isinstance(t._run, fused.FusedRun) and t._run.whole is not None
    assert peak < data_bytes + 3 * fused.CHUNK_BYTES, peak


def test_training_memory_is_bounded_in_chunks(vm: Any, monkeypatch: Any) -> None:
    """Peak memory of binding and training, beyond the data (tracemalloc sees numpy's
    buffers): the reference engine needs a buffer per line, the fused one a copy of the data
    and a chunk's buffers."""
    n = 200_000
    data = _seed_data(n)
    data_bytes = sum(v.nbytes for v in data.values())
    gcp = api.compile(api.parse(SEED_EXAMPLE)).program()
    monkeypatch.setattr(fused, "CHUNK_OVER", 1 << 20)
    monkeypatch.setattr(fused, "CHUNK_BYTES", 1 << 20)
    peaks = {}
    for engine in ("reference", "fused"):
        settings = TrainSettings(tol=0.0, max_iter=3, engine=engine)
        tracemalloc.start()
        GradientDescent(gcp, data, n, settings).run()
        peaks[engine] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peaks["reference"] > 5 * data_bytes  # a buffer for each of the 12 lines
    # a copy of the data, the buffers of chunks of two sizes, block-sized scratch arrays
    assert peaks["fused"] < data_bytes + 3 * fused.CHUNK_BYTES, peaks


def test_the_command_line_chooses_the_engine(cli: Any, tmp_path: Path) -> None:
    """``tfweightcalc --engine``: the same weights file from either engine (where numba is
    missing, ``fused`` runs the reference engine: the same file too)."""
    (tmp_path / "gcp.tf").write_text(api.compile(api.parse(SEED_EXAMPLE, "shape.tf")).text)
    data = _seed_data(500)
    rows = "".join(f"{x!r},{y!r}\n" for x, y in zip(data["x"].tolist(), data["y"].tolist(),
                                                      strict=True))
    (tmp_path / "data.csv").write_text("x,y\n" + rows)
    written = {}
    for engine in ("reference", "fused"):
        result = cli("tfweightcalc", "gcp.tf", "data.csv", "--engine", engine, "--tol", "0",
                     "--max-iter", "30", "-o", f"{engine}.txt", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        written[engine] = (tmp_path / f"{engine}.txt").read_text()
    w = {k: float(v.split(":")[1].strip(" }\n")) for k, v in written.items()}
    assert_close(w["fused"], w["reference"], "w")
    bad = cli("tfweightcalc", "gcp.tf", "data.csv", "--engine", "gpu", cwd=tmp_path)
    assert bad.returncode == 2 and "engine must be one of auto, fused, reference" in bad.stderr
