"""Regression tests (issue 23): a value the same for every example, used in an elementwise
line of a fused group, must not be overwritten inside the group's block loop.

The fused engine broadcasts such a value (a weight vector, or ``softmax l`` of weights only)
once per call into a tile of block rows that every block reads. The tile used to come from
the pool of block scratch arrays, so a line earlier in the group that had freed an array of
the same size kept writing its own values there, block after block: a layer norm with a
learned gain started at another loss and trained to other weights, a softmax mixture's loss
rose while it trained. Each model here is trained on both engines with several blocks and
chunks, and must give the reference's losses and weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_fused import assert_close, patched

from tenflang_nb.core import api, fused, fusedplan
from tenflang_nb.core.plan import Plan

# x centred and scaled per example, then a learned gain g and bias b: g and b are shared
# vectors of the size of c, whose scratch array is free again when g is used
LAYER_NORM = """
declare input x [8]
declare exp_output y [8]
declare weight g [8]
declare weight b [8]
declare intvar m
declare intvar c [8]
declare intvar c2 [8]
declare intvar v
declare intvar s
declare intvar n [8]
declare intvar gn [8]
declare output o [8]
declare intvar d [8]
declare intvar d2 [8]
declare loss L
define m = mean x
define c = sub x m
define c2 = mul c c
define v = mean c2
define s = sqrt v
define n = div c s
define gn = mul n g
define o = add gn b
define d = sub o y
define d2 = mul d d
define L = mean d2
"""

# a mixture of experts' outputs with weights softmax(l): p depends on weights only
SOFTMAX_MIXTURE = """
declare input x [4]
declare exp_output y
declare weight l [4]
declare weight w [4]
declare intvar p [4]
declare intvar e [4]
declare intvar t [4]
declare intvar q [4]
declare output o
declare intvar d
declare loss L
define p = softmax l
define e = mul x w
define t = tanh e
define q = mul t p
define o = sum q
define d = sub o y
define L = mul d d
"""

# exp s of a weight vector, scaling a per-example vector after another one was freed
SHARED_EXP = """
declare input x [6]
declare exp_output y
declare weight s [6]
declare intvar a [6]
declare intvar h [6]
declare intvar k [6]
declare intvar r [6]
declare output o
declare intvar d
declare loss L
define a = tanh x
define h = mul a a
define k = exp s
define r = mul h k
define o = sum r
define d = sub o y
define L = mul d d
"""

MODELS = {"layer norm": LAYER_NORM, "softmax mixture": SOFTMAX_MIXTURE,
          "exp of a weight vector": SHARED_EXP}


def _data(program: Any, n: int, seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    rng = np.random.default_rng(seed)
    shapes = program.shapes
    data = {x: rng.normal(size=(n, *shapes[x])) * 2 + 0.5
            for x in program.names("input", "exp_output")}
    start = {w: rng.normal(size=shapes[w]) for w in program.names("weight")}
    return data, start


@pytest.mark.parametrize("block", [None, 64, 5])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_training_gives_the_reference_weights(fused_vm: Any, model: str, block: int | None) -> None:
    shape = api.parse(MODELS[model], f"{model}.tf")
    gcp = api.compile(shape)
    data, start = _data(shape, 3_000)
    results = {}
    blocks = {} if block is None else {"BLOCK_NUMBERS": block}
    for engine in ("reference", "fused"):
        with patched(fusedplan, **blocks):
            t = api.trainer(gcp, data, lr=0.05, tol=0.0, max_iter=30, engine=engine,
                            start=start)
            assert isinstance(t._run, fused.FusedRun) == (engine == "fused")
            results[engine] = t.run()
    ref, got = results["reference"], results["fused"]
    # the first loss is the model's at the start: wrong from step 0 when a tile is clobbered
    assert_close(got.history[0].loss, ref.history[0].loss, f"{model}: first loss")
    assert_close(got.loss, ref.loss, f"{model}: last loss")
    for w in ref.weights:
        assert_close(got.weights[w], ref.weights[w], f"{model}: {w}")


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_value_of_the_gcp_is_the_reference_one(fused_vm: Any, model: str) -> None:
    """Every line's per-example value, every gradient's batch mean, in chunks of blocks."""
    shape = api.parse(MODELS[model], f"{model}.tf")
    program = api.compile(shape, full=True).program()
    data, start = _data(shape, 1_000, seed=1)
    bound = {**data, **start}
    plan = Plan(program)
    grads = program.names("output")
    names = [d.target for d in plan.defines]
    reference = plan.bind(bound, 1_000, grads)
    reference.run()
    with patched(fusedplan, BLOCK_NUMBERS=64), patched(fused, CHUNK_OVER=0,
                                                       CHUNK_BYTES=40_000, MIN_CHUNK=2):
        run = fused.FusedRun(plan, bound, 1_000, grads, set(names), fused_vm)
    assert run.whole is not None  # in chunks
    run.run()
    for name in grads:
        assert_close(run.mean(name), reference.mean(name), f"{model}: mean of {name}")
    for name in names:
        assert_close(run.value(name), reference.value(name), f"{model}: {name}")


def test_a_shared_vector_gets_its_own_tile(fused_vm: Any) -> None:
    """The schedule itself: the tile of ``g`` is no scratch array another line writes."""
    shape = api.parse(LAYER_NORM, "ln.tf")
    data, start = _data(shape, 2_000)
    program = shape
    plan = Plan(program)
    run = fused.FusedRun(plan, {**data, **start}, 2_000, ["L"], set(), fused_vm)
    tiles = set()
    for part in run.parts:
        for stage in part.schedule.stages:
            if isinstance(stage, fusedplan.Group):
                tiles |= {row[2] for row in stage.head}
                written = {row[2] for row in stage.code}
                assert not tiles & written, "a line of the block loop writes a shared tile"
    assert tiles, "the layer norm's g and b are tiled"
