"""The fused engine's inner loop: a small instruction set run over blocks of examples (numba).

One :func:`execute` call runs a *group* of planned GCP lines (``fusedplan``) over a range of
example rows, a block of rows at a time: every instruction runs on the block before the next
block starts, so a block's intermediate values stay in cache (block-sized *scratch* arrays)
and only values needed outside the group are written to full-size buffers. The loops are
compiled once per machine and cached on disk; a program is only data for them (integer
instructions): no program is ever compiled, no text ever executed. Every compiled function is
in this one file on purpose: numba's cache is keyed by the text of the function's own file,
so code inlined from another file could stay cached after that file changed.

Arrays are extents of three flat float64 arenas (a run's slots, the group's own scratch and
accumulators, the whole data set: ``Space``), each at an offset, with ``size[i]`` numbers per
example; the addresses are taken here, from the arenas (the debug mode checks every offset
and extent before the call: ``fusedverify.check_call``). A scratch array holds the current
block; any other is indexed by example row, shifted by ``base[i]`` (data read from the row where the
current chunk starts), or is the same for every row (a *shared* value). An instruction is
a :class:`Code` (``WIDTH`` int64: ``kind, op, out, a, b, mode_a, mode_b, extra``):

* ``Kind.UNARY`` / ``Kind.BINARY``: an elementwise operator ``op`` (``Unary``, ``Binary``),
  operands of the result's size; a binary operand may be a scalar (``Mode.CONST``:
  ``consts[a]``; ``Mode.SHARED``: ``arrays[a][0]``, a weight say);
* ``Kind.EXPAND``: ``a`` broadcast to ``out`` through the map ``maps[extra:extra + size]``;
* ``Kind.FILL``: ``out`` set to ``consts[a]``;
* ``Kind.ROW``: ``op`` (``Row``: sum, mean, softmax, ...) over each example's numbers
  (``extra``: scratch of ``2 size[a] + 2`` numbers a row, or -1);
* ``Kind.ACCSUM`` / ``Kind.ACCDOT``: the block's column sums of ``a`` (or the sum of ``a * b``),
  weighted by ``consts[extra]`` (1/N: a batch mean), added to the accumulator ``out``: batch
  means without per-example values.

Arithmetic follows numpy's (IEEE division, NaN and inf propagate: ``error_model="numpy"``).
"""

from __future__ import annotations

import math
from enum import IntEnum
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.extending import intrinsic

from .fusedcache import choose

# cached on disk where some folder is writable (core/fusedcache.py), else compiled in memory
_CACHE = choose().enabled

# ---------------------------------------------------------------------------- instruction set
# (fusedplan writes programs in these numbers; one row of WIDTH int64 per instruction)

# The one table: every name below is an IntEnum member, which numba compiles as the constant
# it is; the int64 rows of a program are ``Code`` tuples (``Code._fields`` in order).


class Code(NamedTuple):
    """One instruction: its kind, the operator of that kind, the array it writes, its
    operands, how a binary instruction reads each (``Mode``), and an extra number (a map
    offset, a scratch array, a constant: see the module docstring)."""

    kind: int
    op: int = 0
    out: int = 0
    a: int = 0
    b: int = 0
    mode_a: int = 0
    mode_b: int = 0
    extra: int = 0


WIDTH = len(Code._fields)


# the kinds of instruction, the arenas, how a binary operand is read, and each kind's operators
Kind = IntEnum("Kind", ["UNARY", "BINARY", "EXPAND", "FILL", "ROW", "ACCSUM", "ACCDOT"], start=0)
Space = IntEnum("Space", ["RUN", "GROUP", "DATA"], start=0)  # execute's run, group, data
Mode = IntEnum("Mode", ["ARRAY", "CONST", "SHARED"], start=0)
Unary = IntEnum("Unary", ["COPY", "NEG", "EXP", "LN", "LOGISTIC", "TANH", "RELU", "SQRT", "ABS",
                          "STEP", "SIGN", "LNZ", "SQUARE", "RECIP"], start=0)
Binary = IntEnum("Binary", ["ADD", "SUB", "MUL", "DIV"], start=0)
Row = IntEnum("Row", ["SUM", "MEAN", "SOFTMAX", "LOGSOFTMAX", "LOGSUMEXP"], start=0)

# ---------------------------------------------------------------------------- the math
# exp, ln, expm1 and tanh written so that LLVM vectorises a loop over them. numpy has a SIMD
# exp for float64 only on AVX-512 machines; elsewhere it calls the C library one element at a
# time (3-4 ns each, tanh 8-13 ns), and so does a numba loop over math.exp. These are plain
# arithmetic on the float and its bits (range reduction by ln 2, a polynomial, the power of
# two built in the exponent field) with no branch on the element: 0.5-1.8 ns an element in
# AVX2 or AVX-512 code, within 4 units in the last place of numpy (tests/test_fused.py), with
# numpy's special values (inf, NaN, signed limits, subnormal results).

@intrinsic
def _as_float(typingctx, bits):  # type: ignore[no-untyped-def]
    """The float64 whose bits are the int64 ``bits`` (a free reinterpretation)."""
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def _as_bits(typingctx, value):  # type: ignore[no-untyped-def]
    """The bits of the float64 ``value`` as an int64."""
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


_SHIFT = 6755399441055744.0  # 1.5 * 2^52: adding it rounds to an integer, kept in the low bits
_SHIFT_BITS = 0x4338000000000000
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts (fdlibm): k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
# 1/i!, for the Taylor series of e^r - 1 on |r| <= ln(2)/2 (the 14th term is below 2^-60)
_C = [1.0 / math.factorial(i) for i in range(14)]
_C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12, _C13 = _C[2:]


@njit(inline="always", error_model="numpy")
def _reduce(x: float) -> tuple[float, int]:
    """x = k ln 2 + r with k an integer and |r| <= ln(2)/2; x must be in [-1100, 1100]."""
    t = x * _LOG2E + _SHIFT
    k = _as_bits(t) - _SHIFT_BITS
    kf = t - _SHIFT
    return (x - kf * _LN2_HI) - kf * _LN2_LO, k


@njit(inline="always", error_model="numpy")
def _expm1_series(r: float) -> float:
    """e^r - 1 for |r| <= ln(2)/2, accurate relative to the result (Estrin's scheme)."""
    r2 = r * r
    r4 = r2 * r2
    return (r + r2 * (0.5 + r * _C3)) + r4 * (
        (_C4 + r * _C5) + r2 * (_C6 + r * _C7)
        + r4 * ((_C8 + r * _C9) + r2 * (_C10 + r * _C11) + r4 * (_C12 + r * _C13)))


@njit(inline="always", error_model="numpy")
def _pow2(k: int) -> float:
    """2^k for -1022 <= k <= 1023."""
    return _as_float((k + 1023) << 52)


@njit(inline="always", error_model="numpy")
def exp_(x: float) -> float:
    """e^x; inf above 709.78, 0 below -745.13, subnormal between (as numpy)."""
    # clamped so that k fits the two factors below; NaN passes the comparisons unchanged
    c = 710.0 if x > 710.0 else x
    c = -746.0 if c < -746.0 else c
    r, k = _reduce(c)
    p = 1.0 + _expm1_series(r)
    half = k >> 1  # 2^k in two factors: each a normal number, so subnormal results round once
    return (p * _pow2(half)) * _pow2(k - half)


@njit(inline="always", error_model="numpy")
def expm1_(x: float) -> float:
    """e^x - 1 for x <= 0 (tanh's range), accurate relative to the result also near 0."""
    c = -50.0 if x < -50.0 else x  # e^-50 - 1 is -1 to the last bit
    r, k = _reduce(c)
    s = _pow2(k)
    # for k = 0 this is the series itself: no cancellation around 0
    return s * _expm1_series(r) + (s - 1.0)


@njit(inline="always", error_model="numpy")
def tanh_(x: float) -> float:
    """tanh x = -u / (u + 2) with u = e^(-2|x|) - 1, in (-1, 0]: no cancellation at either
    end (never 1 - 2/(e^2x + 1), which loses the relative accuracy near 0), and one formula
    for every x: no select between two, which made AVX2 code twice as slow."""
    u = expm1_(-2.0 * abs(x))
    t = math.copysign(-u / (u + 2.0), x)
    return x if x != x else t


@njit(inline="always", error_model="numpy")
def logistic_(x: float) -> float:
    """1 / (1 + e^-x), the formula of the reference kernel (ops._logistic)."""
    return 1.0 / (1.0 + exp_(-x))


# ln: fdlibm's e_log.c, on the 64-bit pattern instead of the high and low words
_LG1 = 6.666666666666735130e-01
_LG2 = 3.999999999940941908e-01
_LG3 = 2.857142874366239149e-01
_LG4 = 2.222219843214978396e-01
_LG5 = 1.818357216161805012e-01
_LG6 = 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_TWO54 = 1.80143985094819840000e16
_TINY = 2.2250738585072014e-308  # the smallest normal number


@njit(inline="always", error_model="numpy")
def ln_(x: float) -> float:
    """ln x: -inf at 0, NaN below 0 and for NaN, inf at inf (as numpy)."""
    sub = x < _TINY
    y = x * _TWO54 if sub else x  # a subnormal made normal (garbage for x <= 0: replaced)
    bits = _as_bits(y)
    hx = (bits >> 32) & 0x000FFFFF
    i = (hx + 0x95F64) & 0x100000  # the mantissa is scaled into [sqrt(2)/2, sqrt(2))
    k = ((bits >> 52) & 0x7FF) - 1023 + (i >> 20) - (54 if sub else 0)
    m = _as_float(((hx | (i ^ 0x3FF00000)) << 32) | (bits & 0xFFFFFFFF))
    f = m - 1.0
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    dk = float(k)
    result = dk * _LN2_HI - ((hfsq - (s * (hfsq + (t1 + t2)) + dk * _LN2_LO)) - f)
    if x == 0.0:
        result = -math.inf
    elif x < 0.0:
        result = math.nan
    elif x == math.inf or x != x:
        result = x + 0.0
    return result


_FLAGS = {"error_model": "numpy", "fastmath": {"contract"}, "cache": _CACHE, "nogil": True}


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
    if op == Unary.COPY:
        o[:n] = a[:n]
    elif op == Unary.NEG:
        for i in range(n):
            o[i] = -a[i]
    elif op == Unary.EXP:
        _exp(o, a)
    elif op == Unary.LN:
        _ln(o, a)
    elif op == Unary.LOGISTIC:
        _logistic(o, a)
    elif op == Unary.TANH:
        _tanh(o, a)
    elif op == Unary.RELU:  # numpy's maximum(a, 0): NaN stays NaN, -0.0 gives +0.0
        for i in range(n):
            x = a[i]
            o[i] = 0.0 if x <= 0.0 else x
    elif op == Unary.SQRT:
        for i in range(n):
            o[i] = np.sqrt(a[i])
    elif op == Unary.ABS:
        for i in range(n):
            o[i] = abs(a[i])
    elif op == Unary.STEP:
        for i in range(n):
            o[i] = 1.0 if a[i] > 0.0 else 0.0
    elif op == Unary.SIGN:
        for i in range(n):
            x = a[i]
            # numpy's sign: +0.0 for either zero (1 / sign -0.0 is +inf), NaN for NaN
            o[i] = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else (0.0 if x == 0.0 else x))
    elif op == Unary.LNZ:
        _lnz(o, a)
    elif op == Unary.SQUARE:
        for i in range(n):
            o[i] = a[i] * a[i]
    elif op == Unary.RECIP:
        for i in range(n):
            o[i] = 1.0 / a[i]


@njit(inline="always", **_FLAGS)
def _binary(op: int, o: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    n = o.shape[0]
    if op == Binary.ADD:
        for i in range(n):
            o[i] = a[i] + b[i]
    elif op == Binary.SUB:
        for i in range(n):
            o[i] = a[i] - b[i]
    elif op == Binary.MUL:
        for i in range(n):
            o[i] = a[i] * b[i]
    elif op == Binary.DIV:
        for i in range(n):
            o[i] = a[i] / b[i]


@njit(inline="always", **_FLAGS)
def _binary_right(op: int, o: np.ndarray, a: np.ndarray, c: float) -> None:
    n = o.shape[0]
    if op == Binary.ADD:
        for i in range(n):
            o[i] = a[i] + c
    elif op == Binary.SUB:
        for i in range(n):
            o[i] = a[i] - c
    elif op == Binary.MUL:
        for i in range(n):
            o[i] = a[i] * c
    elif op == Binary.DIV:
        for i in range(n):
            o[i] = a[i] / c


@njit(inline="always", **_FLAGS)
def _binary_left(op: int, o: np.ndarray, c: float, b: np.ndarray) -> None:
    n = o.shape[0]
    if op == Binary.ADD:
        for i in range(n):
            o[i] = c + b[i]
    elif op == Binary.SUB:
        for i in range(n):
            o[i] = c - b[i]
    elif op == Binary.MUL:
        for i in range(n):
            o[i] = c * b[i]
    elif op == Binary.DIV:
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
    if op == Row.SUM or op == Row.MEAN:
        for r in range(rows):
            total = 0.0
            for j in range(r * s, r * s + s):
                total += a[j]
            o[r] = total if op == Row.SUM else total / s
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
    if op == Row.SOFTMAX:
        for r in range(rows):
            total = sums[r]
            for j in range(r * s, r * s + s):
                o[j] = e[j] / total
        return
    _ln(shifted[:rows], sums)
    for r in range(rows):
        shift = shifted[r] + peak[r]
        if op == Row.LOGSOFTMAX:
            for j in range(r * s, r * s + s):
                o[j] = a[j] - shift
        else:  # LOGSUMEXP
            o[r] = shift


@njit(error_model="numpy", fastmath={"contract", "reassoc"}, cache=_CACHE, nogil=True)
def _total(a: np.ndarray, w: float) -> float:
    # reassociation lets the sum run in SIMD lanes (a different order than numpy's: rounding)
    t = 0.0
    for i in range(a.shape[0]):
        t += a[i] * w
    return t


@njit(error_model="numpy", fastmath={"contract", "reassoc"}, cache=_CACHE, nogil=True)
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
    # arrays are addressed by pointer: a typed list of arrays costs ~100 ns an access in
    # reference counting, more than a whole instruction on a small block
    s = size[i]
    start = 0 if scratch[i] else (base[i] + row) * s
    return carray(_pointer(arrays[i] + 8 * start), (rows * s,))


@njit(inline="always", **_FLAGS)
def _whole(arrays: np.ndarray, i: int, count: int) -> np.ndarray:
    return carray(_pointer(arrays[i]), (count,))


@njit(inline="always", **_FLAGS)
def _scalar(arrays: np.ndarray, consts: np.ndarray, mode: int, index: int) -> float:
    return consts[index] if mode == Mode.CONST else _whole(arrays, index, 1)[0]


@njit(inline="always", **_FLAGS)
def _instruction(c: np.ndarray, arrays, size: np.ndarray, scratch: np.ndarray,
                 base: np.ndarray, consts: np.ndarray, maps: np.ndarray, row: int,
                 rows: int) -> None:
    kind, op, out, a, b, mode_a, mode_b, extra = c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
    if kind == Kind.ACCSUM or kind == Kind.ACCDOT:
        acc = _whole(arrays, out, size[a] if kind == Kind.ACCSUM else 1)
        va = _view(arrays, a, row, rows, size, scratch, base)
        s = size[a]
        # each term weighted (1/N for a mean, as the reference's BLAS product with weights
        # 1/N): a mean of values near the largest float does not overflow as their sum does
        w = consts[extra]
        if kind == Kind.ACCDOT:  # as ops._product_mean: the products' sum, then weighted
            acc[0] += _dot(va, _view(arrays, b, row, rows, size, scratch, base)) * w
        elif s == 1:
            acc[0] += _total(va, w)
        else:
            for r in range(rows):
                for j in range(s):
                    acc[j] += va[r * s + j] * w
        return
    o = _view(arrays, out, row, rows, size, scratch, base)
    if kind == Kind.UNARY:
        _unary(op, o, _view(arrays, a, row, rows, size, scratch, base))
    elif kind == Kind.BINARY:
        if mode_a == Mode.ARRAY and mode_b == Mode.ARRAY:
            _binary(op, o, _view(arrays, a, row, rows, size, scratch, base),
                    _view(arrays, b, row, rows, size, scratch, base))
        elif mode_a == Mode.ARRAY:
            _binary_right(op, o, _view(arrays, a, row, rows, size, scratch, base),
                          _scalar(arrays, consts, mode_b, b))
        else:
            _binary_left(op, o, _scalar(arrays, consts, mode_a, a),
                         _view(arrays, b, row, rows, size, scratch, base))
    elif kind == Kind.EXPAND:
        s = size[out]
        s_a = size[a]
        if mode_a == Mode.SHARED:
            src = _whole(arrays, a, s_a)
        else:
            src = _view(arrays, a, row, rows, size, scratch, base)
        if s_a == 1 and mode_a != Mode.SHARED:  # one number per row, repeated along it
            for r in range(rows):
                v = src[r]
                for j in range(r * s, r * s + s):
                    o[j] = v
        else:
            for r in range(rows):
                from_row = 0 if mode_a == Mode.SHARED else r * s_a
                for j in range(s):
                    o[r * s + j] = src[from_row + maps[extra + j]]
    elif kind == Kind.FILL:
        o[:] = consts[a]
    elif kind == Kind.ROW:
        s = size[a]
        temp = o if extra < 0 else _view(arrays, extra, row, rows, size, scratch, base)
        _row(op, o, _view(arrays, a, row, rows, size, scratch, base), temp, rows, s)


@njit(**_FLAGS)
def execute(head: np.ndarray, code: np.ndarray, run: np.ndarray, group: np.ndarray,
            data: np.ndarray, space: np.ndarray, offset: np.ndarray, size: np.ndarray,
            scratch: np.ndarray, base: np.ndarray, consts: np.ndarray, maps: np.ndarray,
            rows: int, block: int) -> None:
    """Run ``head`` once (filling blocks of values shared by every row) and then ``code``
    block by block over ``rows`` example rows (``block`` rows at a time). Array ``i`` is
    ``offset[i]`` numbers into the arena ``space[i]`` (``Space``)."""
    # the addresses, from the arenas numba was given (never from the caller)
    arrays = np.empty(space.shape[0], dtype=np.int64)
    for i in range(space.shape[0]):
        where = space[i]
        arena = run if where == Space.RUN else (group if where == Space.GROUP else data)
        arrays[i] = np.int64(arena.ctypes.data) + 8 * offset[i]
    # one call site for the (inlined) instruction: the head is the block before the first
    for block_index in range(-1, (rows + block - 1) // block):
        if block_index < 0:
            program, row, count = head, 0, block
        else:
            program, row = code, block_index * block
            count = min(block, rows - row)
        for k in range(program.shape[0]):
            _instruction(program[k], arrays, size, scratch, base, consts, maps, row, count)


def elementwise(op: int, x: np.ndarray) -> np.ndarray:
    """``Unary`` operator ``op`` of every number of ``x`` (flat) through :func:`execute`:
    the self-test of the loaded loops, and the tests'."""
    x = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    count = len(x)
    arena = np.concatenate([x, np.empty(count)])
    execute(np.zeros((0, WIDTH), dtype=np.int64),
            np.array([Code(Kind.UNARY, op, out=1)], dtype=np.int64), arena, arena, arena,
            np.zeros(2, dtype=np.int64), np.array([0, count], dtype=np.int64),
            np.ones(2, dtype=np.int64), np.zeros(2, dtype=np.int64),
            np.zeros(2, dtype=np.int64), np.zeros(1), np.zeros(1, dtype=np.int64), count,
            max(1, count))
    return arena[count:]
