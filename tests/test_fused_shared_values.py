"""Regression tests (issue 23): a value the same for every example, used in an elementwise
line of a fused group, must not be overwritten inside the group's block loop.

The fused engine broadcasts such a value (a weight vector, or ``softmax l`` of weights only)
once per call into a tile of block rows that every block reads. The tile used to come from
the pool of block scratch arrays, so a line earlier in the group that had freed an array of
the same size kept writing its own values there, block after block: a layer norm with a
learned gain started at another loss and trained to other weights, a softmax mixture's loss
rose while it trained. The models are in the zoo (tests/zoo_models.py), trained on both
engines in test_fused_zoo.py; here every value of their GCPs, and the schedule itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_fused import assert_close, patched
from zoo_models import SHARED_VALUE_MODELS

from tenflang_nb.core import api, fused, fusedplan
from tenflang_nb.core.plan import Plan

MODELS = SHARED_VALUE_MODELS
LAYER_NORM = MODELS["layer norm"]


def _data(program: Any, n: int, seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    rng = np.random.default_rng(seed)
    shapes = program.shapes
    data = {x: rng.normal(size=(n, *shapes[x])) * 2 + 0.5
            for x in program.names("input", "exp_output")}
    start = {w: rng.normal(size=shapes[w]) for w in program.names("weight")}
    return data, start


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
