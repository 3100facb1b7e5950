"""The bound program (core/bound.py) and the one interface of the engines (core/engines.py):
what binding decides, written down by slot name, and both engines behind one Protocol
(issue 23, item 1)."""

from __future__ import annotations

import ast
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_fused import assert_close
from zoo_models import SHARED_VALUE_MODELS

from tenflang_nb.core import api, fused
from tenflang_nb.core.engines import REFERENCE, BoundRun
from tenflang_nb.core.plan import Plan
from tenflang_nb.core.program import parse

CORE = Path(__file__).resolve().parents[1] / "tenflang_nb" / "core"

PROGRAM = """declare input x [3]
declare input gone
declare weight w [3]
declare weight s
declare exp_output y
declare loss L
declare intvar k
declare intvar a
declare intvar same
declare intvar z [3]
declare intvar e [3]
declare intvar t
declare intvar u
declare intvar nothing
define k = 2
define a = x
define same = mul s 1
define z = mul a w
define e = exp z
define t = sum e
define u = mul t k
define nothing = mul gone u
define L = sub u y
"""


def _bound(n: int = 5, means: list[str] | None = None) -> Any:
    rng = np.random.default_rng(0)
    data = {"x": rng.normal(size=(n, 3)), "w": rng.normal(size=3), "s": 0.5,
            "y": rng.normal(size=n)}
    return Plan(parse(PROGRAM)).bind(data, n, means).bound


def test_names_map_to_slots_aliases_and_identities_share_one() -> None:
    bound = _bound()
    names = bound.names
    assert names["a"] == "x"  # an alias
    assert names["same"] == "s"  # mul s 1 is s
    assert names["gone"] is None and names["nothing"] is None  # NULL, and what it reaches
    assert {"a", "same", "gone", "nothing"}.isdisjoint(bound.slots)
    assert bound.slots["k"].kind == "constant"
    assert [line.op for line in bound.instructions] == ["mul", "exp", "sum", "mul", "sub"]
    mul = bound.instructions[0]
    assert [o.slot for o in mul.operands] == ["x", "w"]  # by slot, never by the alias
    assert [(o.slot, o.const) for o in bound.instructions[3].operands] == [("t", None),
                                                                           (None, 2.0)]


def test_rows_and_lifetimes() -> None:
    bound = _bound()
    slots = bound.slots
    assert slots["x"].rows == 5 and not slots["x"].shared
    assert slots["w"].shared and slots["s"].shared and slots["k"].shared
    assert slots["z"].rows == 5 and slots["z"].shape == (3,)
    order = {line.out: i for i, line in enumerate(bound.instructions)}
    for name, slot in slots.items():
        if slot.kind == "line":
            assert slot.defined == order[name]
    # z is read by exp only; e by sum; t by the mul after it
    assert (slots["z"].defined, slots["z"].last_use) == (0, 1)
    assert (slots["e"].defined, slots["e"].last_use) == (1, 2)
    assert slots["t"].last_use == 3 and slots["L"].last_use == -1
    assert bound.per_example("z") and not bound.per_example("w")
    assert _bound(n=1).per_example("w")  # a batch of one: every slot is per example


def test_means_say_how_they_are_taken() -> None:
    bound = _bound(means=["L", "w", "nothing", "t"])
    how = {m.name: m for m in bound.means}
    assert how["w"].how == "view" and how["w"].out == "w"
    assert how["nothing"].how == "null" and how["nothing"].out is None
    assert how["L"].how == "linear" and how["L"].line is not None
    assert how["L"].operands == ("u", "y")
    assert how["t"].how == "batch" and how["t"].source == "t"
    assert bound.slots["mean L"].kind == "mean" and bound.slots["mean L"].shared
    assert bound.skipped("L")  # only its mean is taken: no pass computes it
    assert not bound.skipped("t") and not bound.skipped("nothing")
    assert bound.slots["u"].last_use == len(bound.instructions)  # read by L's mean
    text = bound.text()
    assert "mean L = linear L = sub u y" in text and "mean t = batch t" in text


# ---------------------------------------------------------------------------- one interface

def test_both_engines_offer_the_whole_interface_and_agree(fused_vm: Any) -> None:
    """Every member of the ``BoundRun`` Protocol on both engines' runs (and the deferred
    ``auto`` one), and the same numbers through it."""
    members = typing.get_type_hints(BoundRun).keys() | {
        n for n in vars(BoundRun) if not n.startswith("_")}
    shape = api.parse(SHARED_VALUE_MODELS["layer norm"], "ln.tf")
    program = api.compile(shape).program()
    rng = np.random.default_rng(3)
    n = 700
    data = {"x": rng.normal(size=(n, 8)), "y": rng.normal(size=(n, 8)),
            "g": rng.normal(size=8), "b": rng.normal(size=8)}
    grads = program.names("output")
    runs = {name: engine.bind(Plan(program), data, n, [*grads, "L"], {"L"})
            for name, engine in (("reference", REFERENCE),
                                 ("fused", fused.FusedEngine(fused_vm)))}
    assert type(runs["fused"]).__name__ == "FusedRun"
    for name, run in runs.items():
        missing = [m for m in members if not hasattr(run, m)]
        assert not missing, f"{name} lacks {missing}"
        run.set("g", np.full(8, 0.5))
        run.run()
        assert run.finite() and run.first_nonfinite() is None
    for name in [*grads, "L"]:
        assert_close(runs["fused"].mean(name), runs["reference"].mean(name), name)
    assert_close(runs["fused"].value("L"), runs["reference"].value("L"), "L")
    assert runs["fused"].bound.slots.keys() == runs["reference"].bound.slots.keys()


def _attributes(path: Path) -> set[str]:
    return {node.attr for node in ast.walk(ast.parse(path.read_text("utf-8")))
            if isinstance(node, ast.Attribute)}


@pytest.mark.parametrize("module", ["fused", "fusedplan", "fusedverify", "fusedlisting",
                                    "landscape/evaluation", "curvature", "cost"])
def test_no_engine_reads_the_reference_engines_internals(module: str) -> None:
    """Values by slot name, never by memory address; the reference run's own lines, calls
    and mean closures are its business (the bound program says what runs)."""
    path = CORE / f"{module}.py"
    assert "__array_interface__" not in path.read_text("utf-8")
    private = {"steps", "step_of", "calls_without", "mean_steps", "mean_plan"}
    assert not _attributes(path) & private
