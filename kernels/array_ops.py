"""The array op table: one record per array operation, its forward and reverse rule side by side.

An array record is one row of the same record table as the scalar records
(opcode ``ARRAY_BASE`` + its place here), so creation order is still a
topological order and the reverse sweep still goes by index. Its elements
live in a value arena and an adjoint arena (tape/sweeps/driver.py); what it reads is
described by views (record, offset, shape, strides), so slices, transposes
and reshapes record nothing.

Elementwise ops apply the scalar table's rules of kernels/ops.py to every
element (kernels/_array_rules.py, generated), so a program gives the same
derivatives whether its arrays are scalar records or array records. NumPy
broadcasting is summed back to each input's shape by the sweep, once for all
ops (``unbroadcast``), as autograd's and JAX's single helper does: no rule
below handles shapes. The rules of the other ops, as the articles derive them:

``sum``        y = Σ_axes a                 a' += g, broadcast back over the axes
``matmul``     Y = A B                      A' += G Bᵀ, B' += Aᵀ G (batch axes summed back)
``logsumexp``  y = log Σ_axes exp(a)        a' += g exp(a - y): softmax times g, fused
``select``     y = a where c != 0 else b    a' += g where c != 0, b' += g where c == 0
``gather``     y = a.flat[index]            a'.flat[index] += g (repeated places add up)
``pack``       y = scalar records' values   each scalar record's adjoint += its element of g
``compare``, ``all``, ``any``               1.0 or 0.0 per element; no derivative
``scan``       y = cumsum or cumprod along  cumsum: a' += reversed cumsum of g; cumprod: a' += P_{j-1} R_j,
               one axis                     no division, zero-safe (kernels/scans.py)
``sort``       y = a[perm] along one axis   a'[perm] += g; perm recomputed from a at every pass (stable)
``call``       y = F(a), F a Function       a' += F.vjp(a, g); its tangent F.jvp, its second order F's own
               (places: F's slot)           sweeps (tape/function/call_records.py: CppAD's checkpoint functions)

Tangents (forward mode) are the same rules read forward: an elementwise record's
tangent is da ȧ + db ḃ, a matmul's Ȧ B + A Ḃ, a reduction's the reduced tangent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._array_rules import RULES
from .ops import ARRAY_BASE, OPS, UNARY


@dataclass(frozen=True)
class ArrayOp:
    name: str
    kind: str  # input constant unary binary compare select sum matmul logsumexp gather pack all any extreme
    # scan sort call
    inputs: int = 1  # views it reads (pack and gather read scalar rows or places instead)


BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "arctan2", "hypot", "logaddexp", "fmax", "fmin")
COMPARE_UFUNC = {"lt": np.less, "le": np.less_equal, "eq": np.equal, "ne": np.not_equal}

ARRAY_OPS: tuple[ArrayOp, ...] = (
    ArrayOp("input", "input", 0),  # an array of inputs (Tape.array, tape.trace)
    ArrayOp("constant", "constant", 0),  # numbers an op reads (x * c for an array c); never gets an adjoint
    *(ArrayOp(name, "unary") for name in UNARY),
    *(ArrayOp(name, "binary", 2) for name in BINARY),
    *(ArrayOp(name, "compare", 2) for name in COMPARE_UFUNC),
    ArrayOp("select", "select", 3),  # inputs: condition, a, b
    ArrayOp("sum", "sum"),
    ArrayOp("matmul", "matmul", 2),
    ArrayOp("logsumexp", "logsumexp"),
    ArrayOp("gather", "gather"),
    ArrayOp("pack", "pack", 0),
    ArrayOp("all", "all"),
    ArrayOp("any", "any"),
    ArrayOp("max", "extreme"),  # max and min over axes: the adjoint goes to the tied extremes in equal shares
    ArrayOp("min", "extreme"),
    ArrayOp("cumsum", "scan"),  # along the one axis in ``axes``; cumprod's rules are zero-safe recurrences
    ArrayOp("cumprod", "scan"),
    ArrayOp("sort", "sort"),  # along the one axis in ``axes``: a stable sort, its permutation recomputed
    ArrayOp("call", "call", 2),  # a Function of a flat view (and a view of its params): tape/function/call_records.py
)
assert ARRAY_BASE + len(ARRAY_OPS) < 256, "opcodes are stored as uint8; 255 stays unknown (V3_OPCODES)"
assert all(op.name in RULES for op in ARRAY_OPS if op.kind in ("unary", "binary"))

ARRAY_OPCODE = {op.name: ARRAY_BASE + k for k, op in enumerate(ARRAY_OPS)}
INPUT, ACONSTANT = ARRAY_OPCODE["input"], ARRAY_OPCODE["constant"]
# the name of every opcode, scalar and array (tables, pictures, errors)
NAME = [op.name for op in OPS] + [f"opcode {k}" for k in range(len(OPS), ARRAY_BASE)] + \
    [f"array {op.name}" for op in ARRAY_OPS] + [f"opcode {k}" for k in range(ARRAY_BASE + len(ARRAY_OPS), 256)]
ARRAY_KIND = ["" for _ in range(ARRAY_BASE)] + [op.kind for op in ARRAY_OPS] + \
    ["" for _ in range(ARRAY_BASE + len(ARRAY_OPS), 256)]
IS_ARRAY_OP = np.array([bool(kind) for kind in ARRAY_KIND])  # a known array opcode

# The array ops of tape format version 3, frozen: opcode 64 + place. tape/function/format.py maps such a file's
# opcodes by name through V3_OPCODES (its scalar opcodes, all below 64, are today's; 255: unknown).
V3_ARRAY_OPS = (
    "input", "constant", "neg", "abs", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "log1p",
    "expm1", "exp2", "log2", "log10", "cbrt", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh",
    "arctanh", "erf", "erfc", "lgamma", "floor", "ceil", "trunc", "rint", "sign", "stop_gradient", "add", "sub", "mul",
    "div", "pow", "maximum", "minimum", "lt", "le", "eq", "ne", "select", "sum", "matmul", "logsumexp", "gather",
    "pack", "all", "any", "max", "min")
V3_OPCODES = np.array(list(range(64)) + [ARRAY_OPCODE[name] for name in V3_ARRAY_OPS]
                      + [255] * (256 - 64 - len(V3_ARRAY_OPS)), np.uint8)
IS_ARRAY_LEAF = np.isin(ARRAY_KIND, ("input", "constant"))  # an array record without inputs
NO_DERIVATIVE = ("input", "constant", "compare", "all", "any")  # kinds that send no adjoint back


# --- the rules of the ops that are not elementwise (the sweep calls these) ---------------


def sum_forward(a: np.ndarray, axes: tuple[int, ...], out: np.ndarray) -> None:
    out[...] = np.sum(a, axis=axes).reshape(out.shape)  # NumPy's pairwise sum


def sum_vjp(g: np.ndarray, a_shape: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(g.reshape(kept(a_shape, axes)), a_shape)


def logsumexp_forward(a: np.ndarray, axes: tuple[int, ...], out: np.ndarray) -> None:
    """log Σ exp(a), shifted by the largest element (no overflow); -inf for all -inf."""
    top = np.max(a, axis=axes, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    out[...] = (np.log(np.sum(np.exp(a - top), axis=axes, keepdims=True)) + top).reshape(out.shape)


def logsumexp_vjp(g: np.ndarray, a: np.ndarray, y: np.ndarray, axes: tuple[int, ...], check: bool = True
                  ) -> np.ndarray:
    kept_shape = kept(a.shape, axes)
    return times(g.reshape(kept_shape), np.exp(a - y.reshape(kept_shape)), check)  # g times the softmax


EXTREME = {"max": np.max, "min": np.min}


def extreme_forward(name: str, a: np.ndarray, axes: tuple[int, ...], out: np.ndarray) -> None:
    """max or min over axes; NaN where a NaN is among the elements (as NumPy)."""
    out[...] = EXTREME[name](a, axis=axes, keepdims=True).reshape(out.shape)


def extreme_share(a: np.ndarray, y: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """d y / d a of y = max (or min) over axes: 1/k at each of the k elements equal to the result
    (a tie shares the slope equally, as JAX's), 0 elsewhere; where y is NaN, the NaNs share it."""
    result = y.reshape(kept(a.shape, axes))
    hit = np.where(np.isnan(result), np.isnan(a), a == result)
    return hit / np.sum(hit, axis=axes, keepdims=True)


def matmul_vjp_a(g: np.ndarray, b: np.ndarray, check: bool = True) -> np.ndarray:
    """A' = G Bᵀ over the last two axes (operands widened to at least 2-d)."""
    return product(g, np.swapaxes(b, -1, -2), check)


def matmul_vjp_b(g: np.ndarray, a: np.ndarray, check: bool = True) -> np.ndarray:
    """B' = Aᵀ G."""
    return product(np.swapaxes(a, -1, -2), g, check)


# --- products where a zero factor adds nothing (the structural-zero rule of every sweep) -------


def times(g: np.ndarray, d: Any, check: bool = True) -> np.ndarray:
    """g * d, where g == 0 or d == 0 gives 0 even against inf or NaN: the plain product, redone
    with the mask only when it holds a NaN (its sum is NaN then: one pass, no temporary).
    ``check=False`` skips that pass: for a sweep that checks its result and redoes itself."""
    if type(d) is float:  # a rule's number: 0 sends nothing, 1 and -1 need no product (not a NumPy scalar: masked)
        return g if d == 1.0 else -g if d == -1.0 else np.zeros_like(g) if d == 0.0 else g * d
    c = g * d
    if check and math.isnan(np.sum(c)):
        c = np.where((g == 0.0) | (d == 0.0), 0.0, c)
    return c


def product(x: np.ndarray, y: np.ndarray, check: bool = True) -> np.ndarray:
    """x @ y by BLAS, redone term by term with times' mask only if it holds a NaN."""
    c = x @ y
    if check and math.isnan(np.sum(c)):
        c = np.zeros_like(c)
        for j in range(x.shape[-1]):
            left, right = x[..., :, j:j + 1], y[..., j:j + 1, :]
            c += np.where((left == 0.0) | (right == 0.0), 0.0, left * right)
    return c


def kept(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """shape with the reduced axes kept as 1."""
    return tuple(1 if k in axes else n for k, n in enumerate(shape))


def unbroadcast(c: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum c over the axes NumPy broadcast to reach c's shape from ``shape``: the one sum-back."""
    if c.shape == shape:
        return c
    lead = c.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + k for k, n in enumerate(shape) if n == 1 and c.shape[lead + k] != 1)
    return np.sum(c, axis=axes).reshape(shape) if axes else c.reshape(shape)
