"""THE operator table of TenFlang: one entry per operator, forward and derivative side by side.

Every other module reads this table: the parser (names, arity), the checker (shape rules), the
compiler (derivative rules, emitted as TenFlang), the planner (numpy kernels), the docs and the
Pygments lexer. Adding an operator means adding one :class:`Op` entry to ``OPS`` below.

Values are per-example: a shape ``()`` is a scalar, ``(3,)`` a vector, ``(64, 32)`` a matrix.
The planner adds the batch axis; kernels here receive arrays whose axis 0 is the batch (of size
N, or 1 for values that do not depend on the example) and the per-example axes after it.

Derivative rules come in two flavours, as in JAX's per-primitive tables:

* ``partials``: for elementwise operators, one rule per operand giving the *local partial*
  ``d/v/d/a`` as TenFlang (the seed's GCP layout: ``d/L/d/a = mul d/L/d/v d/v/d/a``), which
  both modes use (forward mode's tangent is ``d/v/d/a * d/a/d/w``);
* ``vjp``: for every other operator, one rule per operand giving the vector-Jacobian product
  (the contribution to ``d/L/d/a`` given the adjoint ``g = d/L/d/v``), never a Jacobian;
* ``jvp``: beside ``vjp``, one rule per operand giving the Jacobian-vector product (the
  contribution to the tangent ``d/v/d/w`` given the operand's tangent ``t = d/a/d/w``), which
  forward mode (``forward.py``) needs. Most are not written but derived, as JAX's
  ``deflinear`` does: in an operand of ``linear_in`` the result is linear, so its JVP is the
  operator itself applied to the tangent (``matmul t b``) and its VJP is the transpose the
  ``vjp`` rule gives; an operand of ``constant_in`` (a shape or an index) has no tangent and a
  zero adjoint. Only the rules of nonlinear operators (``softmax``) are written twice.

A rule receives an emitter ``e``; ``e("mul", x, y)`` emits a TenFlang line and returns the name
of its result, ``e.shape(x)`` gives a per-example shape. ``core/describe_ops.py`` runs every
rule on symbolic operands to write the Guide's operator table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .arguments import shown
from .errors import TenFlangError
from .formatting import did_you_mean, fmt_shape

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Const:
    """A numeric literal as written (``text``) and as a float (``value``).

    >>> Const.of(2.0)
    Const(value=2.0, text='2')
    """

    value: float
    text: str

    @staticmethod
    def of(value: float) -> Const:
        value = float(value)
        text = repr(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
        return Const(value, text)

    def __str__(self) -> str:
        return self.text


Ref = str | Const  # an operand: a variable's name or a constant


class ShapeError(ValueError):
    """Raised by a shape rule; the checker adds the file, line and operator."""


class Emitter(Protocol):
    def __call__(self, op: str, *args: Ref) -> Ref: ...

    def shape(self, ref: Ref) -> Shape: ...


@dataclass(frozen=True)
class KernelSpec:
    """What the planner knows when it resolves an operator to a numpy kernel."""

    in_shapes: tuple[Shape, ...]  # per-example shapes of the operands
    out_shape: Shape
    batched: tuple[bool, ...]  # does operand i carry the batch axis of size N?
    consts: tuple[float | None, ...]  # operand i's value if it is a constant


Kernel = Callable[..., Any]  # kernel(*operand_arrays, out=array) -> array
PartialRule = Callable[..., Ref]  # rule(e, *operands, out) -> Ref
VjpRule = Callable[..., Ref]  # rule(e, g, *operands, out) -> Ref
# rule(e, t, *operands, out) -> Ref, or None when this operand cannot change the value
JvpRule = Callable[..., Ref | None]


class MeanContext(Protocol):
    """What a ``batch_mean`` rule sees, provided by the planner for one line of a bound run.

    ``args`` are the line's operands as its kernel receives them (batch axis first: N rows
    for values that vary with the example, 1 for the others; a float for a constant), ``n``
    the batch size, and ``out`` the buffer (the per-example shape) that the mean goes to.
    """

    n: int
    args: tuple[Any, ...]
    out: np.ndarray


MeanRule = Callable[[MeanContext], Callable[[], object] | None]


@dataclass(frozen=True)
class Op:
    name: str
    arity: int
    doc: str  # one line, shown in the Guide, --help and the notebook
    math: str  # the formula, e.g. "a + b"
    shape_rule: Callable[..., Shape]  # operand shapes -> result shape (or ShapeError)
    kernel: Callable[[KernelSpec], Kernel]
    partials: tuple[PartialRule, ...] | None = None
    # a None rule is derived (see linear_in and constant_in below): once the table is built,
    # every operator with vjp rules has a vjp and a jvp rule for each operand
    vjp: tuple[VjpRule | None, ...] | None = None
    jvp: tuple[JvpRule | None, ...] | None = None
    helper: bool = False  # mainly emitted by the compiler (still valid by hand)
    elementwise: bool = True
    aliases: tuple[str, ...] = field(default=())
    # (k, c): when operand k is the constant c, the result is the other operand (mul by 1);
    # the compiler drops such lines from the GCP, the planner runs them as aliases
    identities: tuple[tuple[int, float], ...] = field(default=())
    # Operands in which the result is linear while the others stay fixed (``mul``: each;
    # ``div``: the first; ``matmul``: each); and operands that only give a shape or an index
    # (the result does not change with them). A non-elementwise operator's ``jvp`` rules, and
    # the ``vjp`` rules of such operands, follow from these and are left out (None).
    linear_in: tuple[int, ...] = ()
    constant_in: tuple[int, ...] = ()
    # Planner hooks for the mean over the batch (what a weight's gradient is). ``linear``: the
    # result is linear in all operands together (``add``), so the mean of the result is the
    # operator applied to the operands' means, and a sum of gradient terms is summed after
    # averaging. ``batch_mean``: a rule computing the mean of the result directly from the
    # operands, without the per-example results (see :class:`MeanContext`); None when it
    # does not apply to these operands.
    linear: bool = False
    batch_mean: MeanRule | None = None
    # The operand shapes at which the Guide writes out the derivative rules, one case each
    # (default: scalars for an elementwise operator, vectors [3] for any other)
    guide_shapes: tuple[tuple[Shape, ...], ...] = ()

    def __post_init__(self) -> None:
        assert (self.partials is None) != (self.vjp is None), self.name
        assert all(len(r) == self.arity for r in (self.partials, self.vjp, self.jvp) if r), \
            self.name
        if self.vjp is None:
            assert self.jvp is None, f"{self.name}: local partials serve both modes"
            return
        # the frozen dataclass's fields, completed once here with the rules they imply
        object.__setattr__(self, "vjp", _completed(self, "vjp", self.vjp))
        object.__setattr__(self, "jvp", _completed(self, "jvp", self.jvp or (None,) * self.arity))

    @property
    def affine_in(self) -> tuple[int, ...]:
        """The operands in which the result is affine (linear plus a constant) while the other
        operands stay fixed; with ``linear``, also when they vary together. The loss
        landscape computes such a line three times over a plane of weight settings, not once
        per grid point (see core/landscape/evaluation.py).

        >>> OPS["add"].affine_in, OPS["div"].affine_in, OPS["exp"].affine_in
        ((0, 1), (0,), ())
        """
        return tuple(range(self.arity)) if self.linear else self.linear_in


def _completed(op: Op, kind: str, rules: tuple[Callable[..., Any] | None, ...]
               ) -> tuple[Callable[..., Any], ...]:
    """``rules`` with each None replaced by the rule that ``linear_in`` or ``constant_in``
    implies (JAX's ``deflinear``): a linear operand's JVP, a constant operand's JVP and VJP."""
    done: list[Callable[..., Any]] = []
    for i, rule in enumerate(rules):
        if rule is None and i in op.constant_in:
            rule = _zero_adjoint(i) if kind == "vjp" else _no_tangent
        elif rule is None and i in op.linear_in and kind == "jvp":
            rule = _linear_tangent(op.name, i)
        elif rule is None:
            raise TypeError(f"{op.name}: operand {i} needs a {kind} rule (only that of an "
                            "operand in constant_in, or the jvp of one in linear_in, follows)")
        done.append(rule)
    return tuple(done)


def _linear_tangent(name: str, i: int) -> JvpRule:
    """The JVP in an operand the result is linear in: the operator applied to the tangent."""

    def rule(e: Emitter, t: Ref, *operands: Ref) -> Ref:
        args = list(operands[:-1])  # the last one is the result
        args[i] = t
        return e(name, *args)

    return rule


def _zero_adjoint(i: int) -> VjpRule:
    """The VJP in an operand that only gives a shape or an index: 0 (of its shape)."""
    return lambda e, g, *operands: zeros_like(e, operands[i])


def _no_tangent(e: Emitter, t: Ref, *operands: Ref) -> None:
    # the operand only gives a shape (or an index): changing it does not change the value
    return None


def zeros_like(e: Emitter, ref: Ref) -> Ref:
    """0 of ``ref``'s shape: ``mul 0 ref`` for a tensor, the constant 0 for a scalar (a scalar 0
    would make the gradient of a tensor weight a scalar)."""
    return e("mul", Const.of(0), ref) if e.shape(ref) else Const.of(0)


# ---------------------------------------------------------------------------- shape rules


def _same(a: Shape) -> Shape:
    return a


def _broadcast(a: Shape, b: Shape) -> Shape:
    if a == b or not b:  # the common cases, without numpy's slower general rule
        return a
    if not a:
        return b
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise ShapeError(
            f"shapes {fmt_shape(a)} and {fmt_shape(b)} do not broadcast "
            "(trailing dimensions must be equal or 1)"
        ) from None


def _scalar(*_: Shape) -> Shape:
    return ()


def _vector(a: Shape) -> Shape:
    if len(a) != 1:
        raise ShapeError("needs a vector (shape [n])")
    return a


def _vector_to_scalar(a: Shape) -> Shape:
    _vector(a)
    return ()


def _matmul_shape(a: Shape, b: Shape) -> Shape:
    if not a or not b or len(a) > 2 or len(b) > 2:
        raise ShapeError("needs vectors or matrices (a scalar has shape [])")
    inner_a = a[-1]
    inner_b = b[0]
    if inner_a != inner_b:
        raise ShapeError(f"inner dimensions {inner_a} and {inner_b} differ")
    return a[:-1] + b[1:]


def _transpose_shape(a: Shape) -> Shape:
    if len(a) > 2:
        raise ShapeError("needs a vector or a matrix")
    return tuple(reversed(a))


def _outer_shape(a: Shape, b: Shape) -> Shape:
    if len(a) > 1 or len(b) > 1:
        raise ShapeError("needs scalars or vectors")
    return a + b


def _sumto_shape(a: Shape, b: Shape) -> Shape:
    if _broadcast(a, b) != a:
        raise ShapeError(f"cannot sum {fmt_shape(a)} down to {fmt_shape(b)}")
    return b


def _onehot_shape(a: Shape, b: Shape) -> Shape:
    if b:
        raise ShapeError("the index (the second operand) must be a scalar")
    return a


def _broadcast_to_shape(a: Shape, b: Shape) -> Shape:
    if _broadcast(a, b) != b:
        raise ShapeError(f"cannot broadcast {fmt_shape(a)} to {fmt_shape(b)}")
    return b


# ---------------------------------------------------------------------------- kernels


def _ufunc(f: Callable[..., Any]) -> Callable[[KernelSpec], Kernel]:
    return lambda spec: f


def _into(out: np.ndarray | None, result: Any) -> np.ndarray:
    """``result``, written into ``out`` when the caller gave one (numpy's ``out=`` contract)."""
    if out is None:
        return np.array(result)
    out[...] = result
    return out


def _logistic(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    # for a << 0, e^-a overflows to inf and 1 / (1 + inf) is exactly the limit 0 (callers
    # silence the overflow warning); 2.5x faster than the tanh form on large batches
    out = np.negative(a, out=out)
    np.exp(out, out=out)
    np.add(out, 1.0, out=out)
    return np.reciprocal(out, out=out)


def _lnz(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    # ln 1 = 0 where a = 0: JAX's way of writing pow's exponent partial at a zero base
    return np.log(np.where(a == 0, 1.0, a), out=out)


def _relu(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return np.maximum(a, 0.0, out=out)


def _step(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return _into(out, np.greater(a, 0.0))


def _pow_kernel(spec: KernelSpec) -> Kernel:
    # a constant exponent picks a faster, more accurate ufunc than the general power
    special: dict[float, Kernel] = {
        2.0: lambda a, b, out=None: np.square(a, out=out),
        1.0: lambda a, b, out=None: _into(out, a),
        0.5: lambda a, b, out=None: np.sqrt(a, out=out),
        -1.0: lambda a, b, out=None: np.reciprocal(a, out=out),
    }
    exponent = spec.consts[1]
    if exponent is not None and exponent in special:
        return special[exponent]
    return np.power


def _batch_axes(spec: KernelSpec, operand: int = 0) -> tuple[int, ...]:
    return tuple(range(1, len(spec.in_shapes[operand]) + 1))


def _sum_kernel(spec: KernelSpec) -> Kernel:
    axes = _batch_axes(spec)
    shape = spec.in_shapes[0]
    if len(shape) == 1:
        # one BLAS product with a ones vector beats numpy's reduction over short rows 5x
        ones = np.ones(shape[0])
        return lambda a, out=None: np.matmul(a, ones, out=out)
    return lambda a, out=None: np.sum(a, axis=axes, out=out)


def _mean_kernel(spec: KernelSpec) -> Kernel:
    axes = _batch_axes(spec)
    return lambda a, out=None: np.mean(a, axis=axes, out=out)


def _last_axis_kernel(body: Callable[..., np.ndarray]) -> Callable[[KernelSpec], Kernel]:
    """A kernel over the last axis that keeps its scratch arrays between runs (no churn)."""

    def factory(spec: KernelSpec) -> Kernel:
        scratch: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}

        def kernel(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            pair = scratch.get(a.shape)
            if pair is None:
                pair = scratch[a.shape] = (np.empty(a.shape), np.empty((*a.shape[:-1], 1)))
            return body(a, pair[0], pair[1], out)

        return kernel

    return factory


def _row_max(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Maximum over the last axis into ``out`` (shape ``a.shape[:-1] + (1,)``)."""
    if a.shape[-1] > 32:
        return np.max(a, axis=-1, keepdims=True, out=out)
    # over short rows, one ufunc per column is 3x faster than numpy's reduction
    m = out[..., 0]
    np.copyto(m, a[..., 0])
    for j in range(1, a.shape[-1]):
        np.maximum(m, a[..., j], out=m)
    return out


def _row_sum(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Sum over the last axis into ``out`` (shape ``a.shape[:-1] + (1,)``)."""
    np.matmul(a, np.ones(a.shape[-1]), out=out[..., 0])
    return out


def _shifted_exp(a: np.ndarray, e: np.ndarray, s: np.ndarray) -> None:
    # subtracting the row maximum first: e^(a - max) never overflows
    _row_max(a, s)
    np.subtract(a, s, out=e)
    np.exp(e, out=e)
    _row_sum(e, s)


def _logsumexp(a: np.ndarray, e: np.ndarray, s: np.ndarray, out: np.ndarray | None
               ) -> np.ndarray:
    m = _row_max(a, np.empty(s.shape))[..., 0]
    _shifted_exp(a, e, s)
    return _into(out, np.log(s[..., 0]) + m)


def _softmax(a: np.ndarray, e: np.ndarray, s: np.ndarray, out: np.ndarray | None
             ) -> np.ndarray:
    _shifted_exp(a, e, s)
    return np.divide(e, s, out=out)


def _logsoftmax(a: np.ndarray, e: np.ndarray, s: np.ndarray, out: np.ndarray | None
                ) -> np.ndarray:
    m = _row_max(a, np.empty(s.shape))
    _shifted_exp(a, e, s)
    np.log(s, out=s)
    s += m
    return np.subtract(a, s, out=out)


def _promote(shape: Shape, side: str) -> Shape:
    # numpy's matmul treats a vector as a row (left) or a column (right) matrix
    if len(shape) == 1:
        return (1, shape[0]) if side == "left" else (shape[0], 1)
    return shape


def _matmul_kernel(spec: KernelSpec) -> Kernel:
    sa, sb = spec.in_shapes
    ba, bb = spec.batched
    if len(sa) == 1 and len(sb) == 2 and ba and not bb:
        # batch of row vectors times one matrix: a single GEMM over the whole batch
        return lambda a, b, out=None: np.matmul(a, b[0], out=out)
    if len(sa) == 2 and len(sb) == 1 and bb and not ba:
        return lambda a, b, out=None: np.matmul(b, a[0].T, out=out)
    if len(sa) == 1 and len(sb) == 1:
        return lambda a, b, out=None: np.einsum("ni,ni->n", a, b, out=out)
    pa, pb = _promote(sa, "left"), _promote(sb, "right")
    out_shape = spec.out_shape

    def general(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        r = np.matmul(a.reshape(a.shape[:1] + pa), b.reshape(b.shape[:1] + pb))
        return _into(out, r.reshape(r.shape[:1] + out_shape))

    return general


def _transpose_kernel(spec: KernelSpec) -> Kernel:
    if len(spec.in_shapes[0]) < 2:
        return lambda a, out=None: _into(out, a)
    return lambda a, out=None: _into(out, np.swapaxes(a, 1, 2))


def _outer_kernel(spec: KernelSpec) -> Kernel:
    sa, sb = spec.in_shapes

    def outer(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        left = a.reshape(a.shape[:1] + sa + (1,) * len(sb))
        right = b.reshape(b.shape[:1] + (1,) * len(sa) + sb)
        return np.multiply(left, right, out=out)

    return outer


def sumto_axes(a: Shape, b: Shape) -> tuple[int, ...]:
    """The axes of a per-example shape ``a`` that ``sumto`` sums over to reach ``b``: those
    ``b`` lacks in front, and those where ``b`` has 1 and ``a`` more (the broadcast axes).

    >>> sumto_axes((5, 3), (3,)), sumto_axes((2, 3), (2, 1)), sumto_axes((3,), (3,))
    ((0,), (1,), ())
    """
    lead = len(a) - len(b)
    return tuple(range(lead)) + tuple(lead + i for i, d in enumerate(b)
                                      if d == 1 and a[lead + i] != 1)


def _sumto_kernel(spec: KernelSpec) -> Kernel:
    sa, sb = spec.in_shapes
    axes = tuple(1 + i for i in sumto_axes(sa, sb))  # after the batch axis
    out_shape = sb

    def sumto(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        return _into(out, np.sum(a, axis=axes).reshape(a.shape[:1] + out_shape) if axes else a)

    return sumto


def _onehot_kernel(spec: KernelSpec) -> Kernel:
    shape = spec.out_shape
    flat = np.arange(_size(shape), dtype=np.float64).reshape((1, *shape))
    k = spec.consts[1]
    if k is not None:  # forward mode's seeds: the same tensor at every run
        fixed = np.equal(flat, k).astype(np.float64)
        return lambda a, b, out=None: _into(out, fixed)

    def onehot(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        return _into(out, np.equal(flat, np.reshape(b, (-1,) + (1,) * len(shape))))

    return onehot


def _broadcast_kernel(spec: KernelSpec) -> Kernel:
    sa, out_shape = spec.in_shapes[0], spec.out_shape
    aligned = (1,) * (len(out_shape) - len(sa)) + sa

    def broadcast(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if np.ndim(a) == len(sa) + 1:  # align per-example axes: a batch of scalars is
            a = a.reshape(a.shape[:1] + aligned)  # (N,), which numpy would put on a data axis
        return _into(out, np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape)))

    return broadcast


# ---------------------------------------------------------------------------- derivative rules
# Elementwise rules return the local partial d/v/d/operand; ``v`` is the operator's own result,
# already computed by the forward lines, so rules reuse it (exp' = exp, tanh' = 1 - tanh^2).


def _pow_base(e: Emitter, a: Ref, b: Ref, v: Ref) -> Ref:
    if isinstance(b, Const):
        if b.value == 0:  # a^0 = 1 whatever a is: not 0 * a^-1, which is NaN at a = 0
            return Const.of(0)
        return e("mul", b, e("pow", a, Const.of(b.value - 1)))
    return e("mul", b, e("pow", a, e("sub", b, Const.of(1))))


def _matmul_vjp_a(e: Emitter, g: Ref, a: Ref, b: Ref, v: Ref) -> Ref:
    sa, sb = e.shape(a), e.shape(b)
    if len(sa) == 1 and len(sb) == 1:
        return e("mul", g, b)
    if len(sb) == 1:  # [m,k] @ [k] -> [m]
        return e("outer", g, b)
    return e("matmul", g, e("transpose", b))  # [k]@[k,m] and [m,k]@[k,p]


def _matmul_vjp_b(e: Emitter, g: Ref, a: Ref, b: Ref, v: Ref) -> Ref:
    sa, sb = e.shape(a), e.shape(b)
    if len(sa) == 1 and len(sb) == 1:
        return e("mul", g, a)
    if len(sa) == 1:  # [k] @ [k,m] -> [m]
        return e("outer", a, g)
    return e("matmul", e("transpose", a), g)  # [m,k]@[k] and [m,k]@[k,p]


# ---------------------------------------------------------------------------- batch-mean rules


def _rows(x: object, n: int) -> bool:
    return isinstance(x, np.ndarray) and x.shape[0] == n and x.ndim <= 2


def _outer_mean(c: MeanContext) -> Callable[[], object] | None:
    # the mean over examples of a_i b_j without N per-example matrices: one GEMM A^T B / N
    a, b = c.args
    n = c.n
    if not (_rows(a, n) and _rows(b, n)):
        return None
    fa, fb = a.reshape(n, -1), b.reshape(n, -1)
    flat = c.out.reshape(fa.shape[1], fb.shape[1])

    def mean() -> None:
        np.matmul(fa.T, fb, out=flat)
        np.divide(flat, n, out=flat)

    return mean


def _product_mean(c: MeanContext) -> Callable[[], object] | None:
    a, b = c.args
    n, out = c.n, c.out
    if all(isinstance(x, np.ndarray) and x.shape == (n,) for x in (a, b)):
        # the mean of a per-example product of scalars: one dot product, no N-vector

        def dot_mean() -> None:
            out[...] = np.dot(a, b) / n

        return dot_mean
    for s, shared in ((a, b), (b, a)):
        # a per-example scalar times a tensor shared by every example (forward mode adds
        # d/L/d/W.i.j * d/W/d/W.i.j to d/L/d/W): the scalar's mean times the tensor, without
        # N tensors
        if (isinstance(s, np.ndarray) and s.shape[0] == n and s.size == n
                and isinstance(shared, np.ndarray) and shared.shape[0] == 1):
            scalars, tensor = s.reshape(n), shared.reshape(shared.shape[1:])  # views

            def scaled_mean(scalars: np.ndarray = scalars, tensor: np.ndarray = tensor
                            ) -> None:
                np.multiply(tensor, np.mean(scalars), out=out)

            return scaled_mean
    return None


def _size(shape: Shape) -> int:
    return int(np.prod(shape)) if shape else 1


OPS_LIST: list[Op] = [
    # -- the original's primitives
    Op("add", 2, "sum of two values", "a + b", _broadcast, _ufunc(np.add),
       partials=(lambda e, a, b, v: Const.of(1), lambda e, a, b, v: Const.of(1)),
       identities=((0, 0.0), (1, 0.0)), linear=True),
    Op("sub", 2, "difference", "a - b", _broadcast, _ufunc(np.subtract),
       partials=(lambda e, a, b, v: Const.of(1), lambda e, a, b, v: Const.of(-1)),
       identities=((1, 0.0),), linear=True),
    Op("mul", 2, "product (elementwise for tensors)", "a * b", _broadcast, _ufunc(np.multiply),
       partials=(lambda e, a, b, v: b, lambda e, a, b, v: a), identities=((0, 1.0), (1, 1.0)),
       linear_in=(0, 1), batch_mean=_product_mean),
    Op("pow", 2, "power", "a ^ b", _broadcast, _pow_kernel,
       # the exponent's partial is 0 where the base is 0 (as PyTorch and JAX): lnz, not ln
       partials=(_pow_base, lambda e, a, b, v: e("mul", v, e("lnz", a))),
       identities=((1, 1.0),)),
    Op("logistic", 1, "logistic sigmoid", "1 / (1 + exp(-a))", _same, _ufunc(_logistic),
       partials=(lambda e, a, v: e("mul", v, e("sub", Const.of(1), v)),)),
    Op("exp", 1, "base-e exponential", "e ^ a", _same, _ufunc(np.exp),
       partials=(lambda e, a, v: v,)),
    Op("ln", 1, "natural logarithm", "ln a", _same, _ufunc(np.log),
       partials=(lambda e, a, v: e("div", Const.of(1), a),), aliases=("log",)),
    # -- added by tenflang_nb
    Op("div", 2, "quotient", "a / b", _broadcast, _ufunc(np.divide),
       partials=(lambda e, a, b, v: e("div", Const.of(1), b),
                 lambda e, a, b, v: e("neg", e("div", v, b))),
       identities=((1, 1.0),), linear_in=(0,)),
    Op("neg", 1, "negation", "-a", _same, _ufunc(np.negative),
       partials=(lambda e, a, v: Const.of(-1),), linear_in=(0,)),
    Op("tanh", 1, "hyperbolic tangent", "tanh a", _same, _ufunc(np.tanh),
       partials=(lambda e, a, v: e("sub", Const.of(1), e("mul", v, v)),)),
    Op("relu", 1, "rectified linear unit", "max(a, 0)", _same, _ufunc(_relu),
       partials=(lambda e, a, v: e("step", a),)),
    Op("sqrt", 1, "square root", "a ^ 0.5", _same, _ufunc(np.sqrt),
       partials=(lambda e, a, v: e("div", Const.of(0.5), v),)),
    Op("abs", 1, "absolute value", "abs(a)", _same, _ufunc(np.abs),
       partials=(lambda e, a, v: e("sign", a),)),
    # -- helpers the GCP needs (derivatives are 0 almost everywhere)
    Op("step", 1, "Heaviside step: 1 where a > 0, else 0 (relu's derivative)", "a > 0 ? 1 : 0",
       _same, _ufunc(_step), partials=(lambda e, a, v: Const.of(0),), helper=True),
    Op("sign", 1, "sign of a: -1, 0 or 1 (abs's derivative)", "sign(a)", _same,
       _ufunc(np.sign), partials=(lambda e, a, v: Const.of(0),), helper=True),
    Op("lnz", 1, "ln a, but 0 where a = 0 (pow's exponent partial at a zero base)",
       "a = 0 ? 0 : ln a", _same, _ufunc(_lnz),
       partials=(lambda e, a, v: e("div", Const.of(1), a),), helper=True),
    # -- tensors
    Op("matmul", 2, "matrix product of vectors/matrices (as numpy's matmul)", "a @ b",
       _matmul_shape, _matmul_kernel, vjp=(_matmul_vjp_a, _matmul_vjp_b), linear_in=(0, 1),
       elementwise=False,
       guide_shapes=(((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((3,), (3,)))),
    Op("transpose", 1, "transpose of a matrix (a vector is unchanged)", "a^T",
       _transpose_shape, _transpose_kernel,
       vjp=(lambda e, g, a, v: e("transpose", g),), linear_in=(0,), elementwise=False,
       guide_shapes=(((2, 3),),)),
    Op("sum", 1, "sum of all elements (a scalar)", "sum_i a_i", _scalar, _sum_kernel,
       vjp=(lambda e, g, a, v: e("broadcast", g, a),), linear_in=(0,), elementwise=False),
    Op("mean", 1, "mean of all elements (a scalar)", "sum_i a_i / n", _scalar, _mean_kernel,
       vjp=(lambda e, g, a, v: e("div", e("broadcast", g, a), Const.of(_size(e.shape(a)))),),
       linear_in=(0,), elementwise=False),
    Op("logsumexp", 1, "log of the sum of exponentials of a vector (a scalar)",
       "ln sum_i e^a_i", _vector_to_scalar, _last_axis_kernel(_logsumexp),
       vjp=(lambda e, g, a, v: e("mul", g, e("softmax", a)),),
       jvp=(lambda e, t, a, v: e("sum", e("mul", e("softmax", a), t)),), elementwise=False),
    Op("softmax", 1, "softmax of a vector", "e^a_i / sum_j e^a_j", _vector,
       _last_axis_kernel(_softmax),
       vjp=(lambda e, g, a, v: e("mul", v, e("sub", g, e("sum", e("mul", g, v)))),),
       jvp=(lambda e, t, a, v: e("mul", v, e("sub", t, e("sum", e("mul", v, t)))),),
       elementwise=False),
    Op("logsoftmax", 1, "log of the softmax of a vector", "a_i - ln sum_j e^a_j", _vector,
       _last_axis_kernel(_logsoftmax),
       # softmax(a) = e^v: cheaper than recomputing the softmax from a
       vjp=(lambda e, g, a, v: e("sub", g, e("mul", e("exp", v), e("sum", g))),),
       jvp=(lambda e, t, a, v: e("sub", t, e("sum", e("mul", e("exp", v), t))),),
       elementwise=False),
    Op("outer", 2, "outer product of two vectors (or scalars)", "a_i * b_j", _outer_shape,
       _outer_kernel,
       vjp=(lambda e, g, a, b, v: _outer_vjp(e, g, b, "a"),
            lambda e, g, a, b, v: _outer_vjp(e, g, a, "b")), linear_in=(0, 1),
       helper=True, elementwise=False, batch_mean=_outer_mean,
       guide_shapes=(((3,), (2,)), ((), (2,)))),
    Op("sumto", 2, "sum a down to the shape of b (undoes broadcasting)", "unbroadcast(a)",
       _sumto_shape, _sumto_kernel,
       vjp=(lambda e, g, a, b, v: e("broadcast", g, a), None), linear_in=(0,), constant_in=(1,),
       helper=True, elementwise=False, guide_shapes=(((2, 3), (3,)),)),
    Op("broadcast", 2, "broadcast a to the shape of b", "broadcast(a)", _broadcast_to_shape,
       _broadcast_kernel,
       vjp=(lambda e, g, a, b, v: e("sumto", g, a), None), linear_in=(0,), constant_in=(1,),
       helper=True, elementwise=False, guide_shapes=(((3,), (2, 3)),)),
    Op("onehot", 2, "1 at the flat (row-major) index b of a tensor shaped like a, 0 elsewhere "
       "(forward mode's seed)", "[i == b]", _onehot_shape, _onehot_kernel,
       vjp=(None, None), constant_in=(0, 1), helper=True, elementwise=False,
       guide_shapes=(((3,), ()),)),
]


def _outer_vjp(e: Emitter, g: Ref, other: Ref, which: str) -> Ref:
    # v_ij = a_i b_j: dL/da_i = sum_j g_ij b_j, dL/db_j = sum_i a_i g_ij
    so = e.shape(other)
    if not so:
        return e("mul", g, other)
    if which == "a":
        return e("matmul", g, other) if len(e.shape(g)) == 2 else e("sum", e("mul", g, other))
    return e("matmul", other, g) if len(e.shape(g)) == 2 else e("sum", e("mul", g, other))


OPS: dict[str, Op] = {}
for _op in OPS_LIST:
    for _name in (_op.name, *_op.aliases):
        OPS[_name] = _op


def identity_operand(name: str, consts: Sequence[float | None]) -> int | None:
    """Which operand ``name``'s result equals, given its constant operands (None: variable).

    >>> identity_operand("mul", (None, 1.0)), identity_operand("sub", (0.0, None))
    (0, None)
    """
    for k, c in OPS[name].identities:
        if consts[k] == c:
            return 1 - k
    return None


def lookup(name: str) -> Op | None:
    """The operator called ``name`` (aliases included), or None.

    >>> lookup("log").name
    'ln'
    """
    return OPS.get(name)


def operator_names() -> Sequence[str]:
    """Every operator keyword, aliases included, in table order."""
    return list(OPS)


# ---------------------------------------------------------------------------- at numbers
# The table's own rules evaluated at numbers rather than emitted as TenFlang: what an engine
# written by hand computes with (notebook 07), and the compiler's constant folding.

Number = float | np.ndarray


def value(name: str | None, *operands: Any) -> Number:
    """The value of the operator ``name`` at ``operands`` (numbers, or numpy arrays for
    tensors), computed by its kernel as a program's line is; ``None`` is a copy
    (``define v = a``). A scalar comes back as a float.

    >>> value("mul", 2.0, 3.0), value("logistic", 0.0), value(None, 1.5)
    (6.0, 0.5, 1.5)
    >>> value("sum", np.array([1.0, 2.0]))
    3.0
    """
    op = _operator(name, operands, "tf.ops.value")
    numbers = _numbers(operands, "tf.ops.value")
    if op is None:
        return _plain(numbers[0])
    return _apply(op, numbers)


def local_partials(name: str | None, *operands: Any) -> tuple[Number, ...]:
    """The local partials ``d/v/d/a`` (and ``d/v/d/b``) of the elementwise line
    ``v = name a b`` at the operands' values: the table's derivative rules (the ones the
    compiler writes into the GCP) evaluated at numbers, one per operand position. An operand
    written twice (``mul a a``) has a partial per position; its adjoint gets both terms. A
    copy (``None``) has the partial 1. For tensors a partial is elementwise (a constant one is
    a float); an operator that is not elementwise has no local partials (its ``vjp`` gives
    the adjoints).

    >>> local_partials("mul", 2.0, 3.0), local_partials("sub", 5.0, 1.0)
    ((3.0, 2.0), (1.0, -1.0))
    >>> local_partials("logistic", 0.0), local_partials("pow", 3.0, 2.0)[0]
    ((0.25,), 6.0)
    """
    op = _operator(name, operands, "tf.ops.local_partials")
    if op is None:
        return (1.0,)
    if op.partials is None:
        raise TenFlangError.at(
            f"'{op.name}' is not elementwise: it has no local partials",
            "tf.ops.local_partials",
            hint="its rule is a vector-Jacobian product (the Guide's section 5): what the "
                 "line adds to each operand's adjoint, given the adjoint of its result")
    e = _AtNumbers()
    refs = tuple(e.ref(a) for a in _numbers(operands, "tf.ops.local_partials"))
    result = e.ref(np.asarray(_apply(op, tuple(e.number(r) for r in refs))))
    return tuple(_plain(e.number(rule(e, *refs, result))) for rule in op.partials)


class _AtNumbers:
    """An emitter (see :class:`Emitter`) whose lines are computed at once: a scalar is a
    :class:`Const` (so a rule sees a constant exponent as the compiler does), a tensor a
    name for its array."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def ref(self, array: np.ndarray) -> Ref:
        if array.ndim == 0:
            return Const.of(float(array))
        name = f"#{len(self.arrays)}"
        self.arrays[name] = array
        return name

    def number(self, ref: Ref) -> np.ndarray:
        return np.asarray(ref.value) if isinstance(ref, Const) else self.arrays[ref]

    def shape(self, ref: Ref) -> Shape:
        return np.shape(self.number(ref))

    def __call__(self, name: str, *args: Ref) -> Ref:
        return self.ref(np.asarray(_apply(OPS[name], tuple(self.number(a) for a in args))))


def _operator(name: str | None, operands: Sequence[Any], caller: str) -> Op | None:
    """The operator ``name`` (None: a copy), checked against the number of operands; an
    error names the ``caller``."""
    op = None if name is None else OPS.get(str(name))
    if name is not None and op is None:
        raise TenFlangError.at(f"unknown operator {name!r}", caller,
                               hint=did_you_mean(str(name), operator_names()))
    arity = 1 if op is None else op.arity
    if len(operands) != arity:
        raise TenFlangError.at(f"{name or 'a copy'} takes {arity} operand"
                               f"{'s' * (arity != 1)}, not {len(operands)}", caller)
    return op


def _numbers(operands: Sequence[Any], caller: str) -> tuple[np.ndarray, ...]:
    """The operands as arrays of floats; an error naming the ``caller`` for anything else (a
    variable's name where its value belongs is the usual slip of an engine written by hand).
    """
    out = []
    for k, a in enumerate(operands):
        array = None
        if not isinstance(a, str | bytes | complex | np.complexfloating):
            try:
                array = np.asarray(a, dtype=float)
            except (TypeError, ValueError, OverflowError):
                pass
        if array is None:
            raise TenFlangError.at(
                f"operand {k + 1} must be a number or numbers (a numpy array), not {shown(a)}",
                caller, hint=f"{a!r} is a name: give its value (values[{a!r}])"
                if isinstance(a, str) else None)
        out.append(array)
    return tuple(out)


def _apply(op: Op, operands: tuple[np.ndarray, ...]) -> Number:
    """``op`` at per-example values (a batch of one, as the planner runs a line)."""
    shapes = tuple(a.shape for a in operands)
    try:
        out = op.shape_rule(*shapes)
    except ShapeError as exc:
        raise TenFlangError.at(f"{op.name} of shapes {', '.join(map(fmt_shape, shapes))}: "
                               f"{exc}", "tf.ops") from None
    spec = KernelSpec(shapes, out, (True,) * len(shapes),
                      tuple(float(a) if a.ndim == 0 else None for a in operands))
    # the planner's alignment: numpy would put a batch axis on a data axis
    batch = [a.reshape((1,) + (1,) * (len(out) - a.ndim) * op.elementwise + a.shape)
             for a in operands]
    with np.errstate(all="ignore"):  # a NaN or an infinity, as the program would compute
        return _plain(op.kernel(spec)(*batch)[0])


def _plain(a: Any) -> Number:
    array = np.asarray(a, dtype=np.float64)
    return float(array) if array.ndim == 0 else np.array(array)
