"""The fused program listed (core/fusedlisting.py, tf.fusion) and shown (the ``fusion``
view): what it says must be what the fused engine runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_fused_shared_values import LAYER_NORM

import tenflang_nb as tf
from tenflang_nb.core import api, fused, fusedlisting, fusedplan
from tenflang_nb.core.arguments import ArgumentError
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.plan import Plan
from tenflang_nb.notebook import TenFlangModel
from tenflang_nb.notebook.grading_mode import GRADING

DIGITS = Path(__file__).resolve().parents[1] / "examples" / "digits"


def test_the_seed_model_is_one_pass_storing_nothing(fused_vm: Any) -> None:
    listing = tf.fusion(tf.compile(SEED_EXAMPLE))
    assert [p.how for p in listing.passes] == ["block loop"]
    (only,) = listing.passes
    assert only.stored == () and sorted(only.summed) == ["d/lambda/d/w", "lambda"]
    assert "o" in only.cached and "d/lambda/d/z" in only.cached
    assert listing.means == ()
    text = listing.text()
    assert "sum lambda += " in text and "[stored]" not in text
    # every line of the GCP that the pass computes is named, with its line number
    gcp = tf.compile(SEED_EXAMPLE).program().text().splitlines()
    for d in only.lines:
        assert f"line {d.src.line}: {d}" in text and gcp[d.src.line - 1] == str(d)


def test_the_digits_network_sends_its_matrix_products_to_numpy(fused_vm: Any) -> None:
    listing = tf.fusion(api.parse_file(DIGITS / "gcp.tf"), examples=2_000)
    hows = [(p.how, [d.op for d in p.lines]) for p in listing.passes]
    assert all(ops == ["matmul"] or ops == ["transpose"] for how, ops in hows
               if how != "block loop")
    assert ("once", ["transpose"]) in hows  # transpose W2: the same for every example
    blocks = [p for p in listing.passes if p.how == "block loop"]
    assert len(blocks) == 3 and all(p.block >= 1 for p in blocks)
    # h is read by the next matrix product: stored; z1 only by tanh: in cache
    assert blocks[0].stored == ("h",) and blocks[0].cached == ("z1",)
    assert listing.means == ("d/lambda/d/W2", "d/lambda/d/W1")  # outer products: numpy


def test_the_listing_is_the_schedule_the_engine_runs(fused_vm: Any) -> None:
    """Same stages, same block sizes, same instructions as the run's schedule."""
    shape = api.parse(LAYER_NORM, "ln.tf")
    gcp = api.compile(shape).program()
    rng = np.random.default_rng(0)
    data = {"x": rng.normal(size=(3_000, 8)), "y": rng.normal(size=(3_000, 8)),
            "g": np.ones(8), "b": np.zeros(8)}
    run = fused.FusedRun(Plan(gcp), data, 3_000, ["L", "d/L/d/g", "d/L/d/b"], set(), fused_vm)
    listing = fusedlisting.listing(run)
    groups = [s for s in run.parts[0].schedule.stages if isinstance(s, fusedplan.Group)]
    loops = [p for p in listing.passes if p.how == "block loop"]
    assert [g.block for g in groups] == [p.block for p in loops]
    for g, p in zip(groups, loops, strict=True):
        body = p.instructions[p.instructions.index("per block:") + 1:]
        assert len(body) == len(g.code)
        head = p.instructions[1:p.instructions.index("per block:")]
        assert len(head) == len(g.head)
    # the layer norm's g and b are tiled once per call, and named so
    text = listing.text()
    assert re.search(r"once per call:\n\s+tile g = BROADCAST g\n\s+tile b = BROADCAST b", text)
    assert "MUL s" in text and "tile g" in text.split("per block:")[1]


def test_the_fusion_view_is_a_table_a_screen_reader_can_read(fused_vm: Any) -> None:
    net = TenFlangModel(SEED_EXAMPLE, "net")
    html = net.show("fusion")._repr_html_()
    assert "<caption>How the fused engine runs net&#x27;s GCP in training" in html \
        or "<caption>How the fused engine runs net's GCP in training" in html
    assert html.count('scope="col"') == 6 and 'scope="row">1<' in html
    assert "define lambda = pow diff 2" in html
    assert "d/lambda/d/w" in html


def test_the_fusion_is_withheld_in_grading_mode(fused_vm: Any, monkeypatch: Any) -> None:
    net = TenFlangModel(SEED_EXAMPLE, "net")
    monkeypatch.setattr(GRADING, "withheld",
                        lambda name, source, what: f"grading mode withholds {what}")
    with pytest.raises(tf.TenFlangError, match="withholds the fused program"):
        net.fusion()
    html = net.show("fusion")._repr_html_()
    assert "No fused program to show" in html and "define lambda" not in html


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ArgumentError, match="examples must be"):
        tf.fusion(tf.compile(SEED_EXAMPLE), examples=0)
    with pytest.raises(tf.TenFlangError, match="exactly one loss"):
        tf.fusion("declare input x\ndeclare output y\ndefine y = mul x 2\n")


# ---------------------------------------------------------------------------- verification


def _layer_norm_group(fused_vm: Any) -> tuple[fusedplan.Group, Any]:
    from tenflang_nb.core.fusedverify import verify

    shape = api.parse(LAYER_NORM, "ln.tf")
    gcp = api.compile(shape).program()
    rng = np.random.default_rng(0)
    data = {"x": rng.normal(size=(600, 8)), "y": rng.normal(size=(600, 8)),
            "g": np.ones(8), "b": np.zeros(8)}
    run = fused.FusedRun(Plan(gcp), data, 600, ["L", "d/L/d/g"], set(), fused_vm)
    (group,) = [s for s in run.parts[0].schedule.stages if isinstance(s, fusedplan.Group)]
    verify(group, run.bound, fused_vm, 600)  # as built: right
    return group, run.bound


def _broken(group: fusedplan.Group, k: int, column: int, value: int) -> fusedplan.Group:
    code = [list(row) for row in group.code]
    code[k][column] = value
    return fusedplan.Group(**{**group.__dict__, "code": code})


def test_verification_catches_a_line_writing_a_shared_tile(fused_vm: Any) -> None:
    """The class of issue 23's silent bug: an earlier line's scratch array is the tile."""
    from tenflang_nb.core.fusedverify import ScheduleError, verify

    group, run = _layer_norm_group(fused_vm)
    tile = int(group.head[0][2])
    first = next(k for k, line in enumerate(group.lines)
                 if line is not None and group.scratch[group.code[k][2]]
                 and group.size[group.code[k][2]] == group.size[tile])
    with pytest.raises(ScheduleError, match="filled once per call by the head"):
        verify(_broken(group, first, 2, tile), run, fused_vm, 600)


def test_verification_catches_a_scratch_value_overwritten_before_it_is_read(
        fused_vm: Any) -> None:
    from tenflang_nb.core.fusedverify import ScheduleError, verify

    group, run = _layer_norm_group(fused_vm)
    # c2 = mul c c reads c's scratch array: point its second operand at another one
    k = next(k for k, line in enumerate(group.lines) if line is not None
             and line.define.target == "c2")
    other = next(i for i, s in enumerate(group.scratch) if s and i != group.code[k][3]
                 and group.size[i] == group.size[group.code[k][3]]
                 and i not in {int(r[2]) for r in group.head})
    with pytest.raises(ScheduleError, match=r"another value than it holds|before anything"):
        verify(_broken(group, k, 4, other), run, fused_vm, 600)


def test_verification_catches_indices_and_sizes_out_of_range(fused_vm: Any) -> None:
    from tenflang_nb.core.fusedverify import ScheduleError, verify

    group, run = _layer_norm_group(fused_vm)
    with pytest.raises(ScheduleError, match="out of range"):
        verify(_broken(group, 0, 3, len(group.space) + 5), run, fused_vm, 600)
    with pytest.raises(ScheduleError, match="holds"):  # more rows than the buffers hold
        verify(group, run, fused_vm, 10_000)


def test_an_offset_outside_its_arena_is_an_error_not_a_crash(fused_vm: Any) -> None:
    """The debug mode (on in the tests) checks every array's offset and extent before each
    call of the block loop: a wrong offset raises instead of writing past the arena."""
    from tenflang_nb.core.fusedverify import ScheduleError, verify

    group, bound = _layer_norm_group(fused_vm)
    stored = next(i for i, slot in enumerate(group.slots) if slot is not None)
    moved = fusedplan.Group(**{**group.__dict__,
                               "offset": [*group.offset[:stored], group.run.size - 1,
                                          *group.offset[stored + 1:]]})
    with pytest.raises(ScheduleError, match="outside its arena"):
        verify(moved, bound, fused_vm, 600)  # when the schedule is made
    shape = api.parse(LAYER_NORM, "ln.tf")
    gcp = api.compile(shape).program()
    rng = np.random.default_rng(1)
    data = {"x": rng.normal(size=(600, 8)), "y": rng.normal(size=(600, 8)),
            "g": np.ones(8), "b": np.zeros(8)}
    run = fused.FusedRun(Plan(gcp), data, 600, ["L"], set(), fused_vm)
    run.run()  # as built: right
    (stage, call), = [(s, c) for s, c in run.parts[0].stages if c is not None]
    scratch = next(i for i, s in enumerate(stage.scratch) if s)
    call.offset[scratch] = call.group.size  # when it runs: past the group's own arena
    with pytest.raises(ScheduleError, match="outside its arena"):
        run.run()
    call.offset[scratch] = -8
    with pytest.raises(ScheduleError, match="outside its arena"):
        run.run()


def test_a_failed_verification_falls_back_only_outside_debug_mode(
        fused_vm: Any, monkeypatch: Any) -> None:
    from tenflang_nb.core import fusedverify

    def wrong(*args: Any) -> None:
        raise fusedverify.ScheduleError("fused schedule: wrong on purpose")

    monkeypatch.setattr(fusedverify, "verify", wrong)
    plan = Plan(tf.compile(SEED_EXAMPLE).program())
    data = {"x": np.linspace(-1, 1, 2_000_000), "y": np.zeros(2_000_000), "w": 1.0}
    with pytest.raises(fusedverify.ScheduleError):
        fused.bind(plan, data, 2_000_000, ["lambda"], engine="fused")
    monkeypatch.setenv("TENFLANG_FUSED_DEBUG", "0")
    with pytest.warns(fused.EngineWarning, match="wrong on purpose"):
        run = fused.bind(plan, data, 2_000_000, ["lambda"], engine="fused")
    assert type(run).__name__ == "Run" and "wrong on purpose" in fused.status()
