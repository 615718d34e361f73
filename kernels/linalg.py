"""The rules of linear algebra as array records: each vjp written once, its second order from the same formula.

    solve        X = A⁻¹ B                B' = A⁻ᵀ G,  A' = -B' Xᵀ                 (Giles 2008, 2.2.3)
    solve_lower  X = tril(A)⁻¹ B          the same, A' masked to the triangle read   (SciPy's solve_triangular)
    solve_upper  X = triu(A)⁻¹ B
    inv          Y = A⁻¹                  A' = -Yᵀ G Yᵀ
    det          y = det A                A' = g cof(A): the cofactors by SVD, exact at a singular A
    slogdet      y = (sign, log|det A|)   A' = g₁ A⁻ᵀ (the sign is piecewise constant)
    cholesky     L Lᵀ = A                 A' = low(L⁻ᵀ Φ(Lᵀ G) L⁻¹), Φ: the lower triangle, half the diagonal
                                          (Murray 2016, "Differentiation of the Cholesky decomposition")
    eigh         A = V diag(w) Vᵀ         A' = low(V (diag(w') + F∘(Vᵀ V')) Vᵀ), F_ij = 1/(w_j - w_i)
    qr           A = Q R (m >= n)         A' = (Q' + Q N) R⁻ᵀ (see QR.back)
    svd          A = U diag(s) Vᵀ         A' = U Z Vᵀ + ... (Townsend 2016; see SVD.back)

cholesky and eigh read A's lower triangle only, as NumPy does: the upper triangle gets no adjoint and the
strict lower triangle stands for both of its places, low(P) = tril(P + Pᵀ) - diag(P) (for a symmetric
perturbation, as a symmetric K(θ) gives, this is the symmetric gradient of JAX). eigh at exactly equal
eigenvalues takes F_ij = 0: the derivative of anything that does not depend on the basis chosen inside
the degenerate eigenspace (the eigenvalues, a projector); an eigenvector itself has none there.

Second order (``vjp_jvp``) evaluates the vjp formula on ``Dual`` numbers (value, tangent): the product rule
through matmul, solves and inverses, so the formula is written once. NaN in an input propagates (no
structural-zero mask: a factorization mixes every element).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .array_rule import Rule


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


def cofactors(a: Any, y: Any = None, h: Any = None) -> Any:
    """cof(A) = det(A) A⁻ᵀ, the gradient of det: by SVD, exact at a singular A; its tangent, and the records
    of either (y = det A), through A⁻¹ (these raise LinAlgError at an exactly singular A)."""
    if h is not None:
        return y[..., None, None] * _mt(h.linalg("inv", a))
    if isinstance(a, Dual):
        y = np.linalg.det(a.v)
        det = Dual(y, y * np.trace(np.linalg.solve(a.v, a.d), axis1=-2, axis2=-1))
        return det[..., None, None] * inv(a).mT
    u, s, vh = np.linalg.svd(a)
    before = np.cumprod(np.concatenate([np.ones_like(s[..., :1]), s[..., :-1]], -1), -1)
    after = np.cumprod(np.concatenate([np.ones_like(s[..., :1]), s[..., :0:-1]], -1), -1)[..., ::-1]
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return sign[..., None, None] * (u * (before * after)[..., None, :]) @ vh


def nonzero_reciprocal(x: Any, h: Any = None) -> Any:
    """1 / x, 0 where x == 0 (eigh's F at equal eigenvalues and on the diagonal); as selects by h."""
    if h is not None:
        nonzero = h.compare("ne", x, 0.0)
        return h.select(nonzero, 1.0 / h.select(nonzero, x, 1.0), 0.0)
    if isinstance(x, Dual):
        r = nonzero_reciprocal(x.v)
        return Dual(r, -x.d * r * r)
    return np.divide(1.0, x, out=np.zeros_like(x), where=x != 0.0)


def _square(a: tuple[int, ...]) -> None:
    if len(a) < 2 or a[-1] != a[-2]:
        raise ValueError(f"a linear algebra record reads square matrices, not {a}")


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


class Linalg(Rule):
    """A rule whose adjoints come from one formula ``back`` over arrays, Duals or handles: vjp evaluates it on
    arrays, vjp_jvp on Duals (each input with its tangent, y with jvp's, g with ġ), adjoint on handles with
    h (records); tangent likewise runs jvp on handles."""

    def shapes(self, shape, wide, views, axes):
        _square(views[0])
        return [self.shape(views)]

    def shape(self, views: list[tuple[int, ...]]) -> tuple[int, ...]:
        return views[0]

    def back(self, p: Any, ins: list[Any], y: Any, g: Any, h: Any = None) -> list[Any]:
        raise NotImplementedError

    def adjoint(self, p, g, ins, y, h):
        return self.back(p, ins, y, g, h)

    def tangent(self, p, ins, tins, y, h):
        return None if tins[0] is None else self.jvp(p, ins, tins, y, h)

    @staticmethod
    def _elements(p: Any) -> tuple[np.ndarray, list[np.ndarray]]:
        """(output elements, each view's elements) per place of the batch, rows in the batch's C order: a
        factorization's every output element reads every element of its batch place's matrices."""
        batch = np.broadcast_shapes(*(v.shape[:-2] for v in p.inputs))
        outs = np.arange(math.prod(p.shape), dtype=np.int64).reshape(math.prod(batch), -1)
        views = [np.broadcast_to(np.arange(math.prod(v.shape), dtype=np.int64).reshape(*v.shape[:-2], -1),
                                 (*batch, v.shape[-2] * v.shape[-1])).reshape(len(outs), -1) for v in p.inputs]
        return outs, views

    def sparsity(self, p):
        """Dense blocks: each output matrix on each input matrix of its batch place."""
        outs, views = self._elements(p)
        return [(np.repeat(outs, v.shape[1], axis=1).reshape(-1), np.tile(v, (1, outs.shape[1])).reshape(-1))
                for v in views]

    def second_pairs(self, p, live):
        """Every pair of the input matrices' elements at a batch place some live output element reads."""
        outs, views = self._elements(p)
        wanted = np.zeros(outs.size, np.bool_)
        wanted[live] = True
        offsets = np.cumsum([0] + [math.prod(v.shape) for v in p.inputs])[:-1]
        both = np.concatenate([v + k for v, k in zip(views, offsets, strict=True)], axis=1)
        both = both[wanted.reshape(outs.shape).any(axis=1)]
        n = both.shape[1]
        return np.repeat(both, n, axis=1).reshape(-1), np.tile(both, (1, n)).reshape(-1)

    def vjp(self, p, g, ins, y, check):
        sends = functools.cache(lambda: self.back(p, ins, y, g))
        return [lambda k=k: sends()[k] for k in range(len(ins))]

    def vjp_jvp(self, p, g, gd, ins, tins, y):
        duals = [Dual(a, np.broadcast_to(t, np.shape(a))) for a, t in zip(ins, tins, strict=True)]
        sends = self.back(p, duals, Dual(y, self.jvp(p, ins, tins, y)), Dual(g, gd))
        return [(s.v, s.d) for s in sends]


class Solve(Linalg):
    """X = A⁻¹ B, of A's triangle for ``lower`` True (solve_lower) or False (solve_upper)."""

    def __init__(self, lower: bool | None):
        self.lower = lower

    def shape(self, views):
        a, b = views
        if len(b) < 2 or b[-2] != a[-1]:
            raise ValueError(f"solve of {a} and {b}")
        return (*np.broadcast_shapes(a[:-2], b[:-2]), a[-1], b[-1])

    def forward(self, p, ins, out):
        out[...] = solve(ins[0], ins[1], self.lower)

    def back(self, p, ins, y, g):
        b = solve(ins[0].mT, g, None if self.lower is None else not self.lower)
        return [linear(PART[self.lower], -(b @ y.mT)), b]

    def jvp(self, p, ins, tins, y):
        return solve(ins[0], tins[1] - PART[self.lower](tins[0]) @ y, self.lower)

    # as records (tape/symbolic/array_adjoint.py): the same formulas over handles, A's triangle masked
    NAMES = {None: "solve", True: "solve_lower", False: "solve_upper"}

    def _part(self, x: Any) -> Any:
        return x if self.lower is None else x * PART[self.lower](np.ones(x.shape[-2:]))

    def adjoint(self, p, g, ins, y, h):
        b = h.linalg(self.NAMES[None if self.lower is None else not self.lower], _mt(ins[0]), g)
        return [self._part(-(b @ _mt(y))) if h.want[0] else None, b]

    def tangent(self, p, ins, tins, y, h):
        rhs = h.plus(tins[1], None if tins[0] is None else -(self._part(tins[0]) @ y))
        return h.linalg(self.NAMES[self.lower], ins[0], rhs)


class Inv(Linalg):
    """Y = A⁻¹."""

    def forward(self, p, ins, out):
        out[...] = np.linalg.inv(ins[0])

    def back(self, p, ins, y, g):
        return [-(y.mT @ g @ y.mT)]

    def jvp(self, p, ins, tins, y):
        return -(y @ tins[0] @ y)

    def adjoint(self, p, g, ins, y, h):
        return [-(_mt(y) @ g @ _mt(y))]

    def tangent(self, p, ins, tins, y, h):
        return -(y @ tins[0] @ y)


class Det(Linalg):
    """y = det A."""

    def shape(self, views):
        return views[0][:-2]

    def forward(self, p, ins, out):
        out[...] = np.linalg.det(ins[0])

    def back(self, p, ins, y, g, h=None):
        return [g[..., None, None] * cofactors(ins[0], y, h)]

    def jvp(self, p, ins, tins, y, h=None):
        return np.sum(cofactors(ins[0], y, h) * tins[0], axis=(-2, -1))


class Slogdet(Linalg):
    """y[..., 0] = sign det A (no derivative), y[..., 1] = log |det A|."""

    def shape(self, views):
        return (*views[0][:-2], 2)

    def forward(self, p, ins, out):
        out[..., 0], out[..., 1] = np.linalg.slogdet(ins[0])

    def back(self, p, ins, y, g):
        return [g[..., 1, None, None] * inv(ins[0]).mT]

    def jvp(self, p, ins, tins, y):
        d = np.trace(np.linalg.solve(ins[0], tins[0]), axis1=-2, axis2=-1)
        return np.stack([np.zeros_like(d), d], -1)

    def adjoint(self, p, g, ins, y, h):
        return [g[..., 1:2, None] * _mt(h.linalg("inv", ins[0]))]

    def tangent(self, p, ins, tins, y, h):
        d = np.sum(h.linalg("solve", ins[0], tins[0]) * np.eye(ins[0].shape[-1]), axis=(-2, -1))
        return np.concatenate([h.zeros((*d.shape, 1)), d.reshape(*d.shape, 1)], -1)


class Cholesky(Linalg):
    """L Lᵀ = A (A's lower triangle read), L lower triangular."""

    def forward(self, p, ins, out):
        out[...] = np.linalg.cholesky(ins[0])

    def back(self, p, ins, y, g, h=None):
        if isinstance(y, np.ndarray):  # numbers: Murray's blocked algorithm, the same formula in level-3 steps
            return [cholesky_adjoint(y, g)]
        z = solve(_mt(y), phi(_mt(y) @ g), False, h)  # L⁻ᵀ Φ(Lᵀ G)
        return [low(_mt(solve(_mt(y), _mt(z), False, h)))]  # ... L⁻¹

    def jvp(self, p, ins, tins, y, h=None):
        z = solve(y, symmetric(tins[0]), True, h)
        return y @ phi(solve(y, _mt(z), True, h))  # L Φ(L⁻¹ Ȧ L⁻ᵀ)


class Eigh(Linalg):
    """y[..., 0, :] = w ascending, y[..., 1:, :] = V (columns), A's lower triangle read."""

    def shape(self, views):
        return (*views[0][:-2], views[0][-1] + 1, views[0][-1])

    def forward(self, p, ins, out):
        out[..., 0, :], out[..., 1:, :] = np.linalg.eigh(ins[0])

    @staticmethod
    def gaps(w: Any, h: Any) -> Any:
        """F_ij = 1 / (w_j - w_i), 0 where they are equal."""
        return nonzero_reciprocal(w[..., None, :] - w[..., :, None], h)

    def back(self, p, ins, y, g, h=None):
        w, v = y[..., 0, :], y[..., 1:, :]
        inner = diagonal_matrix(g[..., 0, :]) + self.gaps(w, h) * (_mt(v) @ g[..., 1:, :])
        return [low(v @ inner @ _mt(v))]

    def jvp(self, p, ins, tins, y, h=None):
        w, v = y[..., 0, :], y[..., 1:, :]
        m = _mt(v) @ symmetric(tins[0]) @ v
        return np.concatenate([diag(m)[..., None, :], v @ (self.gaps(w, h) * m)], -2)


class QR(Linalg):
    """y[..., :m, :] = Q (m x n), y[..., m:, :] = R (n x n): NumPy's reduced QR of a tall A (m >= n)."""

    def shapes(self, shape, wide, views, axes):
        a = views[0]
        if len(a) < 2 or a[-2] < a[-1]:
            raise ValueError(f"qr records a tall matrix (m >= n), not {a}")
        return [(*a[:-2], a[-2] + a[-1], a[-1])]

    def forward(self, p, ins, out):
        m = ins[0].shape[-2]
        out[..., :m, :], out[..., m:, :] = np.linalg.qr(ins[0])

    def back(self, p, ins, y, g, h=None):
        """A' = (Q' + Q N) R⁻ᵀ, N = tril(C - Cᵀ, -1) - C, C = Qᵀ Q' - R' Rᵀ (the transpose of jvp's map)."""
        m = ins[0].shape[-2]
        q, r, gq, gr = y[..., :m, :], y[..., m:, :], g[..., :m, :], g[..., m:, :]
        c = _mt(q) @ gq - gr @ _mt(r)
        n = tril(c - _mt(c), -1) - c
        return [_mt(solve(r, _mt(gq + q @ n), False, h))]

    def jvp(self, p, ins, tins, y, h=None):
        """X = Ȧ R⁻¹, M = Qᵀ X, Ω = tril(M, -1) - tril(M, -1)ᵀ: Q̇ = Q (Ω - M) + X, Ṙ = (M - Ω) R (as JAX)."""
        m = ins[0].shape[-2]
        q, r = y[..., :m, :], y[..., m:, :]
        x = _mt(solve(_mt(r), _mt(tins[0]), True, h))
        k = _mt(q) @ x
        omega = tril(k, -1) - _mt(tril(k, -1))
        return np.concatenate([q @ (omega - k) + x, (k - omega) @ r], -2)


class SVD(Linalg):
    """y[..., :m, :] = U (m x k), y[..., m, :] = s (descending), y[..., m+1:, :] = V (n x k, Vh = Vᵀ):
    NumPy's reduced SVD, k = min(m, n). F_ij = 1/(s_j² - s_i²), 0 at equal singular values (as eigh);
    1/s is taken 0 at s = 0."""

    def shapes(self, shape, wide, views, axes):
        a = views[0]
        if len(a) < 2:
            raise ValueError(f"svd of a {len(a)}-d view")
        return [(*a[:-2], a[-2] + 1 + a[-1], min(a[-2:]))]

    def forward(self, p, ins, out):
        m = ins[0].shape[-2]
        u, s, vh = np.linalg.svd(ins[0], full_matrices=False)
        out[..., :m, :], out[..., m, :], out[..., m + 1:, :] = u, s, vh.mT

    @staticmethod
    def parts(y: Any, m: int, h: Any) -> tuple[Any, Any, Any, Any, Any]:
        """(U, s, V, F, 1/s) of a packed y (arrays, Duals or handles)."""
        u, s, v = y[..., :m, :], y[..., m, :], y[..., m + 1:, :]
        square = s * s
        return u, s, v, nonzero_reciprocal(square[..., None, :] - square[..., :, None], h), nonzero_reciprocal(s, h)

    def back(self, p, ins, y, g, h=None):
        """A' = U Z Vᵀ + (I - U Uᵀ) U' S⁻¹ Vᵀ + U S⁻¹ V'ᵀ (I - V Vᵀ), Z = diag(s') + (J + Jᵀ) S + S (K + Kᵀ),
        J = F∘(Uᵀ U'), K = F∘(Vᵀ V') (Townsend 2016)."""
        m = ins[0].shape[-2]
        u, s, v, f, inverse = self.parts(y, m, h)
        gu, gs, gv = g[..., :m, :], g[..., m, :], g[..., m + 1:, :]
        j, k = f * (_mt(u) @ gu), f * (_mt(v) @ gv)
        z = diagonal_matrix(gs) + (j + _mt(j)) * s[..., None, :] + s[..., :, None] * (k + _mt(k))
        left = (gu - u @ (_mt(u) @ gu)) * inverse[..., None, :]
        right = (gv - v @ (_mt(v) @ gv)) * inverse[..., None, :]
        return [u @ z @ _mt(v) + left @ _mt(v) + u @ _mt(right)]

    def jvp(self, p, ins, tins, y, h=None):
        m = ins[0].shape[-2]
        u, s, v, f, inverse = self.parts(y, m, h)
        da = tins[0]
        pm = _mt(u) @ da @ v
        ps = pm * s[..., None, :]  # P S
        sp = s[..., :, None] * pm  # S P
        du = u @ (f * (ps + _mt(ps))) + (da @ v - u @ (_mt(u) @ da @ v)) * inverse[..., None, :]
        dv = v @ (f * (sp + _mt(sp))) + (_mt(da) @ u - v @ (_mt(v) @ _mt(da) @ u)) * inverse[..., None, :]
        return np.concatenate([du, diag(pm)[..., None, :], dv], -2)


LINALG_RULES: dict[str, Rule] = {"solve": Solve(None), "solve_lower": Solve(True), "solve_upper": Solve(False),
                                 "inv": Inv(), "det": Det(), "slogdet": Slogdet(), "cholesky": Cholesky(),
                                 "eigh": Eigh(), "qr": QR(), "svd": SVD()}
