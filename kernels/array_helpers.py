"""The helpers of kernels/ops.py over NumPy arrays: the same numbers, element by element.

The scalar helpers branch per float; these say the same with ``np.where``, so an
array record applies exactly the rule a scalar record applies (a test compares
the two on edge values). A 0-d constant operand arrives as a float, and the
exponent helpers branch on it once instead of per element (``x ** 2``). Callers
run them under ``np.errstate(all="ignore")``.
"""

from __future__ import annotations

import numpy as np

from . import ops, special
from ._sweeps import grouped_map, grouped_pair_map
from .compiling import jit

nan, inf = np.nan, np.inf


def sign(a):
    """-1, 0 or 1, NaN for NaN; -0.0 gives +0.0 as in ops.sign."""
    return np.sign(a) + 0.0


def relu(a):
    """max(a, 0), NaN propagated: a <= 0 is False for NaN."""
    return np.where(a <= 0.0, 0.0, a)


def step(a):
    """1 for a > 0, 0 for a <= 0, NaN for NaN."""
    return np.where(a > 0.0, 1.0, np.where(a <= 0.0, 0.0, nan))


def maximum(a, b):
    """a where a wins or ties, b where b wins, NaN if either is NaN."""
    return np.where(np.isnan(b), b, np.where(b > a, b, a))


def minimum(a, b):
    """a where a wins or ties, b where b wins, NaN if either is NaN."""
    return np.where(np.isnan(b), b, np.where(b < a, b, a))


def max_share(a, b):
    """1 where a wins, 0 where b wins, 1/2 at a tie, NaN for NaN."""
    return np.where(a > b, 1.0, np.where(b > a, 0.0, np.where(a == b, 0.5, nan)))


def sigmoid(a):
    """1 / (1 + exp(-a)) without overflow: exp(-|a|) is exp(-a) for a >= 0 and exp(a) below."""
    e = np.exp(-np.abs(a))
    return np.where(a >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))


def pow_da(a, c):
    if isinstance(c, float):  # a constant exponent (x ** 2): no mask to build
        return 0.0 if c == 0.0 else c * a if c == 2.0 else c * np.power(a, c - 1.0)  # pow(a, 1) is a
    return np.where(c == 0.0, 0.0, c * np.power(a, c - 1.0))


def pow_dc(a, y):
    return np.where(a == 0.0, 0.0, y * np.log(a))


def pow_daa(a, c):
    if isinstance(c, float):
        return c * (c - 1.0) * np.power(a, c - 2.0) if c not in (0.0, 1.0) else 0.0
    return np.where((c == 0.0) | (c == 1.0), 0.0, c * (c - 1.0) * np.power(a, c - 2.0))


def pow_dab(a, b):
    return np.where(a == 0.0, 0.0, np.power(a, b - 1.0) * (1.0 + b * np.log(a)))


def pow_dbb(a, y):
    return np.where(a == 0.0, 0.0, y * np.log(a) * np.log(a))


# integer-valued: NumPy's give the same numbers, signed zeros included
floor, ceil, trunc, rint = np.floor, np.ceil, np.trunc, np.rint
cbrt = np.cbrt  # within an ulp of ops.cbrt's power and Newton step


def _kernel(part, name):
    """Rule ``part`` (0: value, 1: first, 2: second derivative) of grouped op ``name`` by the scalar
    kernel, element by element: NumPy has no erf, erfc or lgamma, and Python's lgamma is not the C
    library's; this gives the scalar records' very numbers (a compiled loop: ~20 ns an element)."""
    code = ops.OPCODE[name]

    def rule(a):
        x = np.ascontiguousarray(a, np.float64)
        out = np.empty_like(x)
        grouped_map(part, code, x.reshape(-1), x.reshape(-1), out.reshape(-1))
        return out[()] if out.ndim == 0 else out
    return rule


def pair_rule(part, code, a, b, y=None):
    """Rule ``part`` (0: value, 1-5: da, db, daa, dab, dbb) of grouped binary op ``code``
    (ops.GROUPED_PAIRS) by the scalar kernel over the broadcast operands: the scalar records' numbers."""
    args = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, 0.0 if y is None else y)))
    flat = [np.ascontiguousarray(v).reshape(-1) for v in args]
    out = np.empty(flat[0].size)
    grouped_pair_map(part, code, *flat, out)
    return out.reshape(args[0].shape)

erf, erfc, lgamma = (_kernel(0, name) for name in ("erf", "erfc", "lgamma"))
trigamma = _kernel(2, "lgamma")  # lgamma's rules read only a


def digamma(a):
    """lgamma's partial by NumPy's ufuncs, the steps its records take (special.digamma_steps): an array
    record's partial is then its gradient tape's bit for bit (the scalar kernel's C library log and tan are
    not NumPy's SIMD loops)."""
    return special.digamma_steps(a, np.where, np.log, np.tan, np.floor)


def logaddexp(a, b, out=None):
    """special.logaddexp's branches by NumPy's SIMD exp and log1p over the elements: max(a, b) + log1p(exp(-|a -
    b|)), a + ln 2 at a tie (a tie of numbers is that already: log1p(exp(-0)) is ln 2). Within 2 ulp of the larger
    operand's magnitude of the scalar kernel's C library calls (docs/design.md's last-bit rule); into out where given
    (in place where in C order and apart from a and b). 10^5 elements 0.4 ms, not 2.1 (s21); four passes, no
    allocation, the compiled ones reading a and b: 0.33 -> 0.22 as a rule into its output (s24: notes' lae2.py)."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    y = out if out is not None and out.flags.c_contiguous and not any(
        isinstance(v, np.ndarray) and np.may_share_memory(out, v) for v in (a, b)) else np.empty(shape)
    t, (x, i), (z, j) = y.reshape(-1), _flat(a, shape), _flat(b, shape)
    _gaps(x, i, z, j, t)
    np.exp(t, out=t)
    np.log1p(t, out=t)
    if _added(x, i, z, j, t):  # (a NaN: a NaN operand, or infinities tied, a + ln 2 there)
        _tied(y, a, b, np.add(a, 0.6931471805599453))
    if out is not None and y is not out:
        out[...] = y
    return y if out is None else out


def logaddexp_share(a, b):
    """logaddexp's partial in a: special.logaddexp_share_steps's operations (those its records take, NumPy's exp over
    a - b or b - a, then 1 / (1 + e) or e / (1 + e)), the same bits (tests/test_array_partial_bits.py): exp(-|a - b|)
    by NumPy's exp between two compiled passes that read a and b (ten NumPy passes before, 4 allocations: s22; one
    allocation, s24: 0.15 -> 0.14 ms over 10^5)."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    e = np.empty(shape)
    t, (x, i), (z, j) = e.reshape(-1), _flat(a, shape), _flat(b, shape)
    _gaps(x, i, z, j, t)
    np.exp(t, out=t)  # exp(-d) where d >= 0, exp(d) below (a NaN stays one)
    if _shares(x, i, z, j, t):
        return _tied(e, a, b, 0.5)  # (a tie of numbers has d = 0, 1 / (1 + 1) = 0.5: only infinities change)
    return e


def _flat(a, shape):
    """Operand a of a broadcast to shape as (its elements in C order, 1), or (its one number, 0): the compiled passes
    read element k at k times that."""
    if np.ndim(a) == 0 or np.size(a) == 1:
        return np.asarray(a, np.float64).reshape(1), 0
    if np.shape(a) != shape:
        a = np.broadcast_to(a, shape)
    return np.ascontiguousarray(a, np.float64).reshape(-1), 1


@jit
def _gaps(x, i, z, j, t):
    """t = -|a - b| (flat; _flat's operands: NumPy's subtract, abs, then its negative; each operand's branch taken
    out of the loop by LLVM, which then vectorizes it: 0.08 -> 0.02 ms over 10^5, not x[k * i])."""
    for k in range(t.size):
        t[k] = -abs((x[k] if i else x[0]) - (z[k] if j else z[0]))


@jit
def _added(x, i, z, j, t):
    """t = max(a, b) + t (flat; NumPy's maximum: NaN where either is, which t is then too); whether a sum is NaN."""
    nan = False
    for k in range(t.size):
        a, b = x[k] if i else x[0], z[k] if j else z[0]
        t[k] = (a if a >= b or a != a else b) + t[k]
        nan |= t[k] != t[k]
    return nan


@jit
def _shares(x, i, z, j, e):
    """e = 1 / (1 + e) where a - b >= 0, else e / (1 + e), in place (flat: e + 1.0 then the divide, as NumPy's steps);
    whether a share is NaN (a NaN operand, or infinities tied: 1/2 there)."""
    nan = False
    for k in range(e.size):
        v = e[k]
        e[k] = (1.0 if (x[k] if i else x[0]) - (z[k] if j else z[0]) >= 0.0 else v) / (v + 1.0)
        nan |= e[k] != e[k]
    return nan


def _tied(y, a, b, value):
    """y with value where a == b (a tie, equal infinities too)."""
    tie = np.equal(a, b)
    if tie.any():
        np.copyto(y, value, where=tie)
    return y


# the math functions a rule may name, as NumPy ufuncs (kernels.ops.MATH_NAMES)
exp, log, sqrt, sin, cos, tan, tanh, pow = np.exp, np.log, np.sqrt, np.sin, np.cos, np.tan, np.tanh, np.power
log1p, expm1, exp2, log2, log10, hypot = np.log1p, np.expm1, np.exp2, np.log2, np.log10, np.hypot
asin, acos, atan, sinh, cosh, asinh, acosh, atanh = (np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.arcsinh,
                                                     np.arccosh, np.arctanh)
abs = np.abs  # noqa: A001  (rules write abs(a))


def mul_nz(a, b):
    """a * b where both are nonzero, else 0 (0 * inf is 0), as kernels/ops.py's mul_nz."""
    with np.errstate(invalid="ignore"):
        return np.where((a == 0.0) | (b == 0.0), 0.0, a * b)
