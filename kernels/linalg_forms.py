"""The matrix forms of kernels/linalg.py's rules, each over NumPy arrays, ``Dual`` numbers (value, tangent:
the product rule through matmul, solves and inverses, for second order) and handles of records (VarArrays,
with ``h`` to record what NumPy cannot spell: tape/symbolic/array_adjoint.py), so each rule's formula is
written once; and Murray's blocked Cholesky adjoint over arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


class Dual:
    """A value and its tangent; +, -, *, @, .mT and indexing follow the product rule."""

    __slots__ = ("v", "d")
    __array_ufunc__ = None  # ndarray @ Dual: NumPy defers to Dual's reflected methods

    def __init__(self, v: Any, d: Any):
        self.v, self.d = v, d

    def __add__(self, o: Any) -> Dual:
        return Dual(self.v + o.v, self.d + o.d) if isinstance(o, Dual) else Dual(self.v + o, self.d)

    __radd__ = __add__

    def __neg__(self) -> Dual:
        return Dual(-self.v, -self.d)

    def __sub__(self, o: Any) -> Dual:
        return self + -o

    def __rsub__(self, o: Any) -> Dual:
        return -self + o

    def __mul__(self, o: Any) -> Dual:
        return Dual(self.v * o.v, self.d * o.v + self.v * o.d) if isinstance(o, Dual) else Dual(self.v * o, self.d * o)

    __rmul__ = __mul__

    def __matmul__(self, o: Any) -> Dual:
        return Dual(self.v @ o.v, self.d @ o.v + self.v @ o.d) if isinstance(o, Dual) else Dual(self.v @ o, self.d @ o)

    def __rmatmul__(self, o: Any) -> Dual:
        return Dual(o @ self.v, o @ self.d)

    def __getitem__(self, key: Any) -> Dual:
        return Dual(self.v[key], self.d[key])

    @property
    def mT(self) -> Dual:  # noqa: N802  NumPy's name
        return Dual(self.v.mT, self.d.mT)

    def swapaxes(self, a: int, b: int) -> Dual:  # np.swapaxes of a Dual
        return Dual(np.swapaxes(self.v, a, b), np.swapaxes(self.d, a, b))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.v.shape


def linear(f: Callable[[Any], Any], x: Any) -> Any:
    """f(x) for a linear f: applied to a Dual's value and tangent alike."""
    return Dual(f(x.v), f(x.d)) if isinstance(x, Dual) else f(x)


# The helpers below take arrays, Duals and handles of records (VarArrays: tape/symbolic/array_adjoint.py) alike:
# a triangle is a product with a mask, a transpose np.swapaxes, a diagonal a fancy index.

def _mt(x: Any) -> Any:
    """x with its last two axes swapped (of a handle: a view)."""
    return np.swapaxes(x, -1, -2)


def tril(x: Any, k: int = 0) -> Any:
    return x * np.tri(x.shape[-1], k=k)


def triu(x: Any) -> Any:
    return x - tril(x, -1)


def diag(x: Any) -> Any:
    n = np.arange(x.shape[-1])
    return x[..., n, n]


def diagonal_matrix(d: Any) -> Any:
    return d[..., :, None] * np.eye(d.shape[-1])


def low(p: Any) -> Any:
    """The adjoint of a lower-triangle read from the adjoint p of the symmetric matrix it stands for."""
    return tril(p + _mt(p)) - p * np.eye(p.shape[-1])


def symmetric(a: Any) -> Any:
    """The symmetric matrix a lower-triangle read sees (NumPy's cholesky and eigh)."""
    return tril(a) + _mt(tril(a, -1))


def phi(x: Any) -> Any:
    """Murray's Φ: the lower triangle with half the diagonal."""
    return x * (np.tri(x.shape[-1]) - 0.5 * np.eye(x.shape[-1]))


def triangular(a: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """tril(a)⁻¹ b (triu for not lower) over leading axes: SciPy's solve_triangular per matrix."""
    from scipy.linalg import solve_triangular  # not at import: scipy.linalg costs tape's import ~0.1 s

    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a, b = np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(b, batch + b.shape[-2:])
    out = np.empty(batch + b.shape[-2:])
    for k in np.ndindex(batch):
        out[k] = solve_triangular(a[k], b[k], lower=lower)
    return out


PART: dict[bool | None, Callable[[np.ndarray], np.ndarray]] = {None: lambda a: a, True: np.tril, False: np.triu}
SOLVES = {None: "solve", True: "solve_lower", False: "solve_upper"}  # the records of each


def solve(a: Any, b: Any, lower: bool | None = None, h: Any = None) -> Any:
    """a⁻¹ b (a's triangle for lower True or False), on arrays or Duals, or as a record by h (handles)."""
    if h is not None:
        return h.linalg(SOLVES[lower], a, b)
    if not isinstance(a, Dual):
        if isinstance(b, Dual):
            return Dual(solve(a, b.v, lower), solve(a, b.d, lower))
        return np.linalg.solve(a, b) if lower is None else triangular(a, b, lower)
    x = solve(a.v, b.v if isinstance(b, Dual) else b, lower)
    rhs = (b.d if isinstance(b, Dual) else 0.0) - PART[lower](a.d) @ x
    return Dual(x, solve(a.v, rhs, lower))


def inv(a: Any, h: Any = None) -> Any:
    if h is not None:
        return h.linalg("inv", a)
    if not isinstance(a, Dual):
        return np.linalg.inv(a)
    y = np.linalg.inv(a.v)
    return Dual(y, -(y @ a.d @ y))


def _others(s: Any) -> Any:
    """The product of every element of s's last axis but each one (no division: exact where one is 0)."""
    before = np.cumprod(np.concatenate([np.ones_like(s[..., :1]), s[..., :-1]], -1), -1)
    after = np.cumprod(np.concatenate([np.ones_like(s[..., :1]), s[..., :0:-1]], -1), -1)[..., ::-1]
    return before * after


def cofactors(a: Any, y: Any = None, h: Any = None) -> Any:
    """cof(A) = det(A) A⁻ᵀ, the gradient of det, and its tangent by SVD (exact at a singular A): cof(U S Vᵀ + t D) =
    ± U cof(S + t D') Vᵀ, D' = Uᵀ D V, whose tangent is -D'ⱼᵢ ∏ₗ≠ᵢ,ⱼ sₗ off the diagonal, Σₖ≠ᵢ D'ₖₖ ∏ₗ≠ᵢ,ₖ sₗ on it.
    Its records (y = det A) go through A⁻¹: they raise LinAlgError at an exactly singular A, lose digits near one."""
    if h is not None:
        return y[..., None, None] * _mt(h.linalg("inv", a))
    u, s, vh = np.linalg.svd(a.v if isinstance(a, Dual) else a)
    sign = (np.linalg.det(u) * np.linalg.det(vh))[..., None, None]
    value = sign * (u * _others(s)[..., None, :]) @ vh
    if not isinstance(a, Dual):
        return value
    n = s.shape[-1]
    d = _mt(u) @ a.d @ _mt(vh)  # D' = Uᵀ D V
    pairs = _others(np.where(np.eye(n, dtype=bool), 1.0, s[..., None, :]))  # [i, j]: ∏ over l not i or j
    moved = diagonal_matrix(np.sum(pairs * diag(d)[..., None, :], -1)) - _mt(d) * pairs  # (-D'ᵢᵢ ∏ₗ≠ᵢ sₗ: k = i's)
    return Dual(value, sign * u @ moved @ vh)


def nonzero_reciprocal(x: Any, h: Any = None) -> Any:
    """1 / x, 0 where x == 0 (eigh's F at equal eigenvalues and on the diagonal); as selects by h."""
    if h is not None:
        nonzero = h.compare("ne", x, 0.0)
        return h.select(nonzero, 1.0 / h.select(nonzero, x, 1.0), 0.0)
    if isinstance(x, Dual):
        r = nonzero_reciprocal(x.v)
        return Dual(r, -x.d * r * r)
    return np.divide(1.0, x, out=np.zeros_like(x), where=x != 0.0)


def cholesky_adjoint(factor: np.ndarray, g: np.ndarray, block: int = 64) -> np.ndarray:
    """low(L⁻ᵀ Φ(Lᵀ G) L⁻¹) by Murray's blocked algorithm (2016, "Differentiation of the Cholesky
    decomposition", §3.2): the left-looking Cholesky's block steps undone in reverse, each a triangular solve
    and products of blocks, the diagonal block by the formula. About 2n³/3 flops, where the formula's
    product and two n x n triangular solves take 4n³."""
    from scipy.linalg import solve_triangular  # noqa: PLC0415  not at import (see triangular)

    a = np.tril(g)  # the strict upper triangle of G meets only L's zeros
    n = factor.shape[-1]
    for at in np.ndindex(factor.shape[:-2]):
        lk, ak = factor[at], a[at]
        for k in reversed(range(0, n, block)):
            j = min(k + block, n)
            r, d, b, c = lk[k:j, :k], lk[k:j, k:j], lk[j:, :k], lk[j:, k:j]
            rb, db, bb, cb = ak[k:j, :k], ak[k:j, k:j], ak[j:, :k], ak[j:, k:j]  # views: updated in place
            cb[...] = solve_triangular(d, cb.T, trans=1, lower=True).T  # C' D⁻¹
            bb -= cb @ r
            rb -= cb.T @ b
            db -= np.tril(cb.T @ c)
            z = solve_triangular(d, phi(d.T @ db), trans=1, lower=True)  # the block by the formula
            db[...] = low(solve_triangular(d, z.T, trans=1, lower=True).T)
            rb -= (db + db.T) @ r
    return a
