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
    lu           A = P L U                A' = P L⁻ᵀ (tril(Lᵀ L', -1) + triu(U' Uᵀ)) U⁻ᵀ (P piecewise constant)

cholesky and eigh read A's lower triangle only, as NumPy does: the upper triangle gets no adjoint and the
strict lower triangle stands for both of its places, low(P) = tril(P + Pᵀ) - diag(P) (for a symmetric
perturbation, as a symmetric K(θ) gives, this is the symmetric gradient of JAX). eigh at exactly equal
eigenvalues takes F_ij = 0: the derivative of anything that does not depend on the basis chosen inside
the degenerate eigenspace (the eigenvalues, a projector); an eigenvector itself has none there.

Second order (``vjp_jvp``) evaluates the vjp formula on ``Dual`` numbers (value, tangent): the product rule
through matmul, solves and inverses; the adjoint and tangent as records (``adjoint``, ``tangent``) evaluate
the vjp and jvp formulas on handles of records (kernels/linalg_forms.py), so each formula is written once
(Solve, Inv, Slogdet keep their own short record forms). det's records take cof(A) = det(A) A⁻ᵀ: they raise
LinAlgError at an exactly singular A, and lose digits near one, where the numeric gradient and second order (by
SVD) are exact. NaN in an input
propagates (no structural-zero mask: a factorization mixes every element).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .array_rule import Rule
from .linalg_forms import (
    PART,
    Dual,
    _mt,
    cholesky_adjoint,
    cofactors,
    diag,
    diagonal_matrix,
    inv,
    linear,
    low,
    nonzero_reciprocal,
    phi,
    solve,
    symmetric,
    tril,
    triu,
)


def _square(a: tuple[int, ...]) -> None:
    if len(a) < 2 or a[-1] != a[-2]:
        raise ValueError(f"a linear algebra record reads square matrices, not {a}")


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
        tins = [np.zeros(np.shape(a)) if t is None else t for a, t in zip(ins, tins, strict=True)]  # a constant's
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
        """A' = (Q tril(C - Cᵀ, -1) + (I - Q Qᵀ) Q') R⁻ᵀ + Q R', C = Qᵀ Q' - R' Rᵀ (the transpose of jvp's map)."""
        m, n = ins[0].shape[-2:]
        q, r, gq, gr = y[..., :m, :], y[..., m:, :], g[..., :m, :], g[..., m:, :]
        c = _mt(q) @ gq - gr @ _mt(r)
        z = q @ tril(c - _mt(c), -1)
        if m > n:  # (I - Q Qᵀ) is 0 for a square Q: its rounding over a tiny r_nn was O(1) (so was Q R' Rᵀ R⁻ᵀ's)
            z = z + gq - q @ (_mt(q) @ gq)
        return [_mt(solve(r, _mt(z), False, h)) + q @ gr]

    def jvp(self, p, ins, tins, y, h=None):
        """X = Ȧ R⁻¹, M = Qᵀ X, Ω = tril(M, -1) - tril(M, -1)ᵀ: Q̇ = Q Ω + (I - Q Qᵀ) X, Ṙ = (M - Ω) R (as JAX,
        but no (I - Q Qᵀ) X for a square Q: as in back)."""
        m, n = ins[0].shape[-2:]
        q, r = y[..., :m, :], y[..., m:, :]
        x = _mt(solve(_mt(r), _mt(tins[0]), True, h))
        k = _mt(q) @ x
        omega = tril(k, -1) - _mt(tril(k, -1))
        dq = q @ omega + (x - q @ k) if m > n else q @ omega
        return np.concatenate([dq, (k - omega) @ r], -2)


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
        out = u @ z @ _mt(v)
        if m > u.shape[-1]:  # (I - U Uᵀ) is 0 for a square U: its rounding over a tiny s was all the gradient
            out = out + ((gu - u @ (_mt(u) @ gu)) * inverse[..., None, :]) @ _mt(v)
        if v.shape[-2] > v.shape[-1]:
            out = out + u @ _mt((gv - v @ (_mt(v) @ gv)) * inverse[..., None, :])
        return [out]

    def jvp(self, p, ins, tins, y, h=None):
        m = ins[0].shape[-2]
        u, s, v, f, inverse = self.parts(y, m, h)
        da = tins[0]
        pm = _mt(u) @ da @ v
        ps = pm * s[..., None, :]  # P S
        sp = s[..., :, None] * pm  # S P
        du, dv = u @ (f * (ps + _mt(ps))), v @ (f * (sp + _mt(sp)))
        if m > u.shape[-1]:  # as in back: nothing for a square U or V
            du = du + (da @ v - u @ (_mt(u) @ da @ v)) * inverse[..., None, :]
        if v.shape[-2] > v.shape[-1]:
            dv = dv + (_mt(da) @ u - v @ (_mt(v) @ _mt(da) @ u)) * inverse[..., None, :]
        return np.concatenate([du, diag(pm)[..., None, :], dv], -2)


class LU(Linalg):
    """y[..., :n, :] = SciPy's lu_factor (L strictly below the diagonal, its unit diagonal implied; U on and
    above), y[..., n:, :] = P, the permutation matrix of A = P L U: numbers with no derivative, so that what
    reads them (lu_solve) re-pivots at every replay."""

    def shape(self, views):
        return (*views[0][:-2], 2 * views[0][-1], views[0][-1])

    def forward(self, p, ins, out):
        from scipy.linalg import lu_factor  # noqa: PLC0415  not at import (see linalg_forms.triangular)

        n = ins[0].shape[-1]
        for at in np.ndindex(ins[0].shape[:-2]):
            out[at][:n], pivots = lu_factor(ins[0][at])
            order = np.arange(n)
            for k, q in enumerate(pivots):  # LAPACK's row swaps, in turn
                order[[k, q]] = order[[q, k]]
            out[at][n:] = np.eye(n)[order].T

    @staticmethod
    def parts(y: Any, n: int) -> tuple[Any, Any, Any]:
        """(L, U, P) of a packed y."""
        lu = y[..., :n, :]
        strict = tril(lu, -1)
        return strict + np.eye(n), lu - strict, y[..., n:, :]

    def back(self, p, ins, y, g, h=None):
        n = ins[0].shape[-1]
        lower, upper, perm = self.parts(y, n)
        gl = tril(g[..., :n, :], -1)  # L' (strictly lower), U' = the rest
        inner = tril(_mt(lower) @ gl, -1) + triu((g[..., :n, :] - gl) @ _mt(upper))
        return [perm @ solve(_mt(lower), _mt(solve(upper, _mt(inner), False, h)), False, h)]

    def jvp(self, p, ins, tins, y, h=None):
        """X = L⁻¹ Pᵀ Ȧ U⁻¹: L̇ = L tril(X, -1), U̇ = triu(X) U."""
        n = ins[0].shape[-1]
        lower, upper, perm = self.parts(y, n)
        x = _mt(solve(_mt(upper), _mt(solve(lower, _mt(perm) @ tins[0], True, h)), True, h))
        zeros = np.zeros(perm.shape) if h is None else h.zeros(perm.shape)
        return np.concatenate([lower @ tril(x, -1) + triu(x) @ upper, zeros], -2)


LINALG_RULES: dict[str, Rule] = {"solve": Solve(None), "solve_lower": Solve(True), "solve_upper": Solve(False),
                                 "inv": Inv(), "det": Det(), "slogdet": Slogdet(), "cholesky": Cholesky(),
                                 "eigh": Eigh(), "qr": QR(), "svd": SVD(), "lu": LU()}
