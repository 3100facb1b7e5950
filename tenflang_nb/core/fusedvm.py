"""The fused engine's inner loop: a small instruction set run over blocks of examples (numba).

One :func:`execute` call runs a *group* of planned GCP lines (see ``fused.py``) over a range
of example rows, a block of rows at a time: every instruction of the group runs on the block
before the next block starts, so the intermediate values of a block stay in the CPU's cache
(``scratch`` arrays of one block) and only the values needed outside the group are written to
full-size buffers. The loops are compiled once per machine and cached on disk
(``cache=True``); a program is only data for them (integer instructions), so no program is
ever compiled and no text is ever executed.

Arrays are one flat float64 array each, passed by address (``arrays[i]``, int64: the caller
keeps them alive and in place); ``size[i]`` is the numbers per
example of array ``i``. A *scratch* array holds the current block (row 0 is the block's first
row); any other array is indexed by example row, shifted by ``base[i]`` (a data array read from
the row where the current chunk starts), or, for a *shared* value, is the same for every row.

Instruction rows (int64, ``fusedplan.WIDTH`` columns; the instruction set is defined there):
``kind, op, out, a, b, mode_a, mode_b, extra``:

* ``UNARY_I`` / ``BINARY_I``: an elementwise operator (``op``) on whole operands of the result's
  size; a binary operand may instead be a scalar (``MODE_CONST``: ``consts[a]``;
  ``MODE_SHARED``: ``arrays[a][0]``, a shared scalar such as a weight);
* ``EXPAND_I``: broadcast ``a`` to ``out`` through the index map ``maps[extra:extra + size]``
  (``mode_a`` = ``MODE_SHARED`` when ``a`` is the same for every row);
* ``FILL_I``: ``out`` set to ``consts[a]``;
* ``ROW_I``: a reduction or normalisation over each example's numbers (sum, mean, softmax,
  ...; ``extra``: a scratch array of ``2 size[a] + 2`` numbers a row, or -1 for sum, mean);
* ``ACCSUM_I`` / ``ACCDOT_I``: add the block's column sums of ``a`` (or the sum of ``a * b``) to
  the accumulator ``out`` (batch means, without storing the per-example values).

Arithmetic follows numpy's (IEEE division, NaN and inf propagate; ``error_model="numpy"``).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.extending import intrinsic

from .fusedmath import exp_, ln_, logistic_, tanh_
from .fusedplan import (
    ABS,
    ACCDOT_I,
    ACCSUM_I,
    ADD,
    BINARY_I,
    COPY,
    DIV,
    EXP,
    EXPAND_I,
    FILL_I,
    LN,
    LNZ,
    LOGISTIC,
    LOGSOFTMAX,
    MEAN,
    MODE_ARRAY,
    MODE_CONST,
    MODE_SHARED,
    MUL,
    NEG,
    RECIP,
    RELU,
    ROW_I,
    SIGN,
    SOFTMAX,
    SQRT,
    SQUARE,
    STEP,
    SUB,
    SUM,
    TANH,
    UNARY_I,
)

_FLAGS = {"error_model": "numpy", "fastmath": {"contract"}, "cache": True, "nogil": True}


# The loops over exp, ln, tanh and logistic are functions of their own (not inlined into the
# dispatch below): compiled alone, LLVM vectorises them fully; inlined into the big dispatch
# function it left tanh's selects as branches, at half the speed.


@njit(**_FLAGS)
def _exp(o: np.ndarray, a: np.ndarray) -> None:
    for i in range(o.shape[0]):
        o[i] = exp_(a[i])


@njit(**_FLAGS)
def _ln(o: np.ndarray, a: np.ndarray) -> None:
    for i in range(o.shape[0]):
        o[i] = ln_(a[i])


@njit(**_FLAGS)
def _lnz(o: np.ndarray, a: np.ndarray) -> None:
    for i in range(o.shape[0]):
        x = a[i]
        o[i] = ln_(1.0 if x == 0.0 else x)


@njit(**_FLAGS)
def _tanh(o: np.ndarray, a: np.ndarray) -> None:
    for i in range(o.shape[0]):
        o[i] = tanh_(a[i])


@njit(**_FLAGS)
def _logistic(o: np.ndarray, a: np.ndarray) -> None:
    for i in range(o.shape[0]):
        o[i] = logistic_(a[i])


@njit(inline="always", **_FLAGS)
def _unary(op: int, o: np.ndarray, a: np.ndarray) -> None:
    n = o.shape[0]
    if op == COPY:
        o[:n] = a[:n]
    elif op == NEG:
        for i in range(n):
            o[i] = -a[i]
    elif op == EXP:
        _exp(o, a)
    elif op == LN:
        _ln(o, a)
    elif op == LOGISTIC:
        _logistic(o, a)
    elif op == TANH:
        _tanh(o, a)
    elif op == RELU:  # numpy's maximum(a, 0): NaN stays NaN
        for i in range(n):
            x = a[i]
            o[i] = 0.0 if x < 0.0 else x
    elif op == SQRT:
        for i in range(n):
            o[i] = np.sqrt(a[i])
    elif op == ABS:
        for i in range(n):
            o[i] = abs(a[i])
    elif op == STEP:
        for i in range(n):
            o[i] = 1.0 if a[i] > 0.0 else 0.0
    elif op == SIGN:
        for i in range(n):
            x = a[i]
            o[i] = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else x * 0.0)
    elif op == LNZ:
        _lnz(o, a)
    elif op == SQUARE:
        for i in range(n):
            o[i] = a[i] * a[i]
    elif op == RECIP:
        for i in range(n):
            o[i] = 1.0 / a[i]


@njit(inline="always", **_FLAGS)
def _binary(op: int, o: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    n = o.shape[0]
    if op == ADD:
        for i in range(n):
            o[i] = a[i] + b[i]
    elif op == SUB:
        for i in range(n):
            o[i] = a[i] - b[i]
    elif op == MUL:
        for i in range(n):
            o[i] = a[i] * b[i]
    elif op == DIV:
        for i in range(n):
            o[i] = a[i] / b[i]


@njit(inline="always", **_FLAGS)
def _binary_right(op: int, o: np.ndarray, a: np.ndarray, c: float) -> None:
    n = o.shape[0]
    if op == ADD:
        for i in range(n):
            o[i] = a[i] + c
    elif op == SUB:
        for i in range(n):
            o[i] = a[i] - c
    elif op == MUL:
        for i in range(n):
            o[i] = a[i] * c
    elif op == DIV:
        for i in range(n):
            o[i] = a[i] / c


@njit(inline="always", **_FLAGS)
def _binary_left(op: int, o: np.ndarray, c: float, b: np.ndarray) -> None:
    n = o.shape[0]
    if op == ADD:
        for i in range(n):
            o[i] = c + b[i]
    elif op == SUB:
        for i in range(n):
            o[i] = c - b[i]
    elif op == MUL:
        for i in range(n):
            o[i] = c * b[i]
    elif op == DIV:
        for i in range(n):
            o[i] = c / b[i]


@njit(inline="always", **_FLAGS)
def _row_max(a: np.ndarray, start: int, s: int) -> float:
    # numpy's maximum: a NaN anywhere makes the maximum NaN
    m = a[start]
    bad = m != m
    for j in range(start + 1, start + s):  # no branch: a short loop LLVM can unroll
        x = a[j]
        m = x if x > m else m
        bad = bad | (x != x)
    return np.nan if bad else m


@njit(inline="always", **_FLAGS)
def _row(op: int, o: np.ndarray, a: np.ndarray, t: np.ndarray, rows: int, s: int) -> None:
    """A reduction or normalisation over each row of ``s`` numbers. ``t`` is scratch of
    ``rows * (2 s + 2)`` numbers: the rows shifted by their maxima, their exponentials (apart:
    an exp loop in place defeats LLVM's overlap check), each row's maximum and sum. The
    exponentials and logarithms run as flat loops over the whole block (SIMD); the short
    loops along a row only subtract and add."""
    if op == SUM or op == MEAN:
        for r in range(rows):
            total = 0.0
            for j in range(r * s, r * s + s):
                total += a[j]
            o[r] = total if op == SUM else total / s
        return
    # softmax and friends from e^(a - max): as ops._shifted_exp, never overflowing
    n = rows * s
    shifted = t[:n]
    e = t[n:2 * n]
    peak = t[2 * n:2 * n + rows]
    sums = t[2 * n + rows:2 * n + 2 * rows]
    for r in range(rows):
        m = _row_max(a, r * s, s)
        peak[r] = m
        for j in range(r * s, r * s + s):
            shifted[j] = a[j] - m
    _exp(e, shifted)
    for r in range(rows):
        total = 0.0
        for j in range(r * s, r * s + s):
            total += e[j]
        sums[r] = total
    if op == SOFTMAX:
        for r in range(rows):
            total = sums[r]
            for j in range(r * s, r * s + s):
                o[j] = e[j] / total
        return
    _ln(shifted[:rows], sums)
    for r in range(rows):
        shift = shifted[r] + peak[r]
        if op == LOGSOFTMAX:
            for j in range(r * s, r * s + s):
                o[j] = a[j] - shift
        else:  # LOGSUMEXP
            o[r] = shift


@njit(error_model="numpy", fastmath={"contract", "reassoc"}, cache=True, nogil=True)
def _total(a: np.ndarray) -> float:
    # reassociation lets the sum run in SIMD lanes (a different order than numpy's: rounding)
    t = 0.0
    for i in range(a.shape[0]):
        t += a[i]
    return t


@njit(error_model="numpy", fastmath={"contract", "reassoc"}, cache=True, nogil=True)
def _dot(a: np.ndarray, b: np.ndarray) -> float:
    t = 0.0
    for i in range(a.shape[0]):
        t += a[i] * b[i]
    return t


@intrinsic
def _pointer(typingctx, address):  # type: ignore[no-untyped-def]
    """The float64 pointer at the int64 ``address``."""
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.inttoptr(args[0], ir.PointerType(ir.DoubleType()))

    return types.CPointer(types.float64)(types.int64), codegen


@njit(inline="always", **_FLAGS)
def _view(arrays: np.ndarray, i: int, row: int, rows: int, size: np.ndarray,
          scratch: np.ndarray, base: np.ndarray) -> np.ndarray:
    # arrays are passed by address: a typed list of arrays costs ~100 ns an access in
    # reference counting, more than a whole instruction on a small block
    s = size[i]
    start = 0 if scratch[i] else (base[i] + row) * s
    return carray(_pointer(arrays[i] + 8 * start), (rows * s,))


@njit(inline="always", **_FLAGS)
def _whole(arrays: np.ndarray, i: int, count: int) -> np.ndarray:
    return carray(_pointer(arrays[i]), (count,))


@njit(inline="always", **_FLAGS)
def _scalar(arrays: np.ndarray, consts: np.ndarray, mode: int, index: int) -> float:
    return consts[index] if mode == MODE_CONST else _whole(arrays, index, 1)[0]


@njit(inline="always", **_FLAGS)
def _instruction(c: np.ndarray, arrays, size: np.ndarray, scratch: np.ndarray,
                 base: np.ndarray, consts: np.ndarray, maps: np.ndarray, row: int,
                 rows: int) -> None:
    kind, op, out, a, b, mode_a, mode_b, extra = c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
    if kind == ACCSUM_I or kind == ACCDOT_I:
        acc = _whole(arrays, out, size[a] if kind == ACCSUM_I else 1)
        va = _view(arrays, a, row, rows, size, scratch, base)
        s = size[a]
        if kind == ACCDOT_I:
            acc[0] += _dot(va, _view(arrays, b, row, rows, size, scratch, base))
        elif s == 1:
            acc[0] += _total(va)
        else:
            for r in range(rows):
                for j in range(s):
                    acc[j] += va[r * s + j]
        return
    o = _view(arrays, out, row, rows, size, scratch, base)
    if kind == UNARY_I:
        _unary(op, o, _view(arrays, a, row, rows, size, scratch, base))
    elif kind == BINARY_I:
        if mode_a == MODE_ARRAY and mode_b == MODE_ARRAY:
            _binary(op, o, _view(arrays, a, row, rows, size, scratch, base),
                    _view(arrays, b, row, rows, size, scratch, base))
        elif mode_a == MODE_ARRAY:
            _binary_right(op, o, _view(arrays, a, row, rows, size, scratch, base),
                          _scalar(arrays, consts, mode_b, b))
        else:
            _binary_left(op, o, _scalar(arrays, consts, mode_a, a),
                         _view(arrays, b, row, rows, size, scratch, base))
    elif kind == EXPAND_I:
        s = size[out]
        s_a = size[a]
        if mode_a == MODE_SHARED:
            src = _whole(arrays, a, s_a)
        else:
            src = _view(arrays, a, row, rows, size, scratch, base)
        if s_a == 1 and mode_a != MODE_SHARED:  # one number per row, repeated along it
            for r in range(rows):
                v = src[r]
                for j in range(r * s, r * s + s):
                    o[j] = v
        else:
            for r in range(rows):
                from_row = 0 if mode_a == MODE_SHARED else r * s_a
                for j in range(s):
                    o[r * s + j] = src[from_row + maps[extra + j]]
    elif kind == FILL_I:
        o[:] = consts[a]
    elif kind == ROW_I:
        s = size[a]
        temp = o if extra < 0 else _view(arrays, extra, row, rows, size, scratch, base)
        _row(op, o, _view(arrays, a, row, rows, size, scratch, base), temp, rows, s)


@njit(**_FLAGS)
def execute(head: np.ndarray, code: np.ndarray, arrays, size: np.ndarray,
            scratch: np.ndarray, base: np.ndarray, consts: np.ndarray, maps: np.ndarray,
            rows: int, block: int) -> None:
    """Run ``head`` once (filling blocks of values shared by every row) and then ``code``
    block by block over ``rows`` example rows (``block`` rows at a time)."""
    # one call site for the (inlined) instruction: the head is the block before the first
    for block_index in range(-1, (rows + block - 1) // block):
        if block_index < 0:
            program, row, count = head, 0, block
        else:
            program, row = code, block_index * block
            count = min(block, rows - row)
        for k in range(program.shape[0]):
            _instruction(program[k], arrays, size, scratch, base, consts, maps, row, count)
