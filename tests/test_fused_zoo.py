"""The model zoo (tests/zoo_models.py) trained on both engines (issue 23): the fused engine
must give the reference's loss at every step and its weights, by the agreement rule
(test_fused's ``assert_close``), in one block of the default size, in blocks of a few rows,
in chunks of blocks, and in minibatches; and their curvature (H v) too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_fused import assert_close, patched
from zoo_models import FILES, NAMES, model

from tenflang_nb.core import api, fused, fusedplan

STEPS = 40
# how the fused engine cuts the batch: as it comes, blocks of 5 numbers a value (a block of
# one row, or a few), blocks of 64 numbers in chunks of about 100 rows
LAYOUTS = {"default": ({}, {}), "blocks": ({"BLOCK_NUMBERS": 5}, {}),
           "chunks": ({"BLOCK_NUMBERS": 64},
                      {"CHUNK_OVER": 0, "CHUNK_BYTES": 60_000, "MIN_CHUNK": 2}),
           "minibatches": ({"BLOCK_NUMBERS": 64}, {})}
BATCH = {"minibatches": 128}  # training's batch_size (a new batch bound at every step)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", NAMES)
def test_the_zoo_trains_to_the_reference_weights(fused_vm: Any, name: str, layout: str
                                                 ) -> None:
    # digits' rows (64 inputs, 10 outputs: over 590 bytes each) in chunks of 60,000 bytes:
    # 200 rows are still at least two chunks, and a ninth of the time of 600
    m = model(name, n=200 if name == "example: digits" else 600 if name in FILES else 2_000)
    gcp = api.compile(m.shape)
    blocks, chunks = LAYOUTS[layout]
    results = {}
    for engine in ("reference", "fused"):
        with patched(fusedplan, **blocks), patched(fused, **chunks):
            t = api.trainer(gcp, m.data, lr=m.lr, tol=0.0, max_iter=STEPS, engine=engine,
                            start=m.start, batch_size=BATCH.get(layout))
            assert isinstance(t._run, fused.FusedRun) == (engine == "fused")
            if engine == "fused" and chunks and name not in FILES:  # (files: a few rows)
                assert t._run.whole is not None, "bound in chunks"
            results[engine] = t.run()
    ref, got = results["reference"], results["fused"]
    assert len(got.history) == len(ref.history) == STEPS + 1, name
    assert np.isfinite(ref.loss), f"{name}: a model that trains (lr {m.lr})"
    # the first loss is the model's at the start: wrong from step 0 when a value is clobbered
    assert_close([r.loss for r in got.history], [r.loss for r in ref.history],
                 f"{name} ({layout}): the losses")
    for w in ref.weights:
        assert_close(got.weights[w], ref.weights[w], f"{name} ({layout}): {w}")


@pytest.mark.parametrize("name", NAMES)
def test_curvature_of_the_zoo_is_the_reference_one(fused_vm: Any, name: str) -> None:
    """H v (the HVP program, ``--hvp``) and the gradient at the first weights, in blocks of a
    few rows."""
    m = model(name, n=300)
    rng = np.random.default_rng(1)
    v = {w: rng.normal(0, 1, np.shape(x)) for w, x in m.start.items()}
    found = {}
    for engine in ("reference", "fused"):
        with patched(fusedplan, BLOCK_NUMBERS=16):
            c = api.curvature(m.shape, m.data, m.start, engine=engine)
            assert isinstance(c._run, fused.FusedRun) == (engine == "fused")
            loss, grad = c.gradient()
            found[engine] = (loss, grad, c.hvp(v))
    (loss, grad, hv), (ref_loss, ref_grad, ref_hv) = found["fused"], found["reference"]
    assert_close(loss, ref_loss, f"{name}: the loss")
    for w in ref_grad:
        assert_close(grad[w], ref_grad[w], f"{name}: d/L/d/{w}")
        assert_close(hv[w], ref_hv[w], f"{name}: (H v) of {w}")


def test_the_zoo_is_large_and_varied() -> None:
    """At least 20 models, and the operators the fused engine runs in its block loop."""
    assert len(NAMES) >= 20
    used = {str(d.op) for n in NAMES for d in model(n, n=4).shape.definitions()}
    assert {"softmax", "logsoftmax", "logsumexp", "mean", "relu", "tanh", "logistic",
            "exp", "ln", "sqrt", "abs", "matmul", "pow"} <= used
