"""The rules of the scans (cumsum, cumprod) and of sort along one axis, over NumPy arrays.

cumsum is linear: its adjoint is the reversed cumulative sum of g, its tangent the
cumulative sum of the tangent. cumprod's are written without dividing by the input, so
they hold with zeros in it (one zero, several, or all). With P_j = a_0 ... a_j (P_-1 = 1),

    y_k = P_k                     ẏ_k = ẏ_{k-1} a_k + P_{k-1} ȧ_k
    a'_j = P_{j-1} R_j,           R_j = g_j + a_{j+1} R_{j+1}   (R_{n-1} = g_{n-1})

two O(n) recurrences per lane (compiled); the second-order sweep carries the tangents
of P and R through the same recurrences. Every product there is ``mul0``: 0 when a factor
is 0, even against inf or NaN (the structural-zero rule of the sweeps).

sort recomputes its permutation from the values at every pass (a stable sort: tied
elements keep their order, -0.0 ties 0.0, NaNs go last as in NumPy); the adjoint of
y = a[perm] goes back through the permutation, and nothing else moves with the input.
"""

from __future__ import annotations

import numpy as np

from .compiling import jit


@jit
def _mul0(x: float, y: float) -> float:
    return 0.0 if x == 0.0 or y == 0.0 else x * y


@jit
def _cumprod_jvp(a: np.ndarray, da: np.ndarray, out: np.ndarray) -> None:
    for lane in range(a.shape[0]):
        y, dy = 1.0, 0.0
        for k in range(a.shape[1]):
            dy = _mul0(dy, a[lane, k]) + _mul0(y, da[lane, k])
            y = y * a[lane, k]
            out[lane, k] = dy


@jit
def _cumprod_vjp(a: np.ndarray, da: np.ndarray, g: np.ndarray, gd: np.ndarray, out: np.ndarray,
                 out_dot: np.ndarray, second: bool) -> None:
    """out = a' (and out_dot its tangent along da, with g's tangent gd, when second)."""
    n = a.shape[1]
    for lane in range(a.shape[0]):
        p, dp = 1.0, 0.0
        for j in range(n):  # the exclusive prefix products P_{j-1} (and their tangents), kept in out
            out[lane, j] = p
            if second:
                out_dot[lane, j] = dp
                dp = _mul0(dp, a[lane, j]) + _mul0(p, da[lane, j])
            p = p * a[lane, j]
        r, dr = 0.0, 0.0
        for j in range(n - 1, -1, -1):
            if j == n - 1:
                r, dr = g[lane, j], (gd[lane, j] if second else 0.0)
            else:
                if second:
                    dr = gd[lane, j] + _mul0(da[lane, j + 1], r) + _mul0(a[lane, j + 1], dr)
                r = g[lane, j] + _mul0(a[lane, j + 1], r)
            if second:
                out_dot[lane, j] = _mul0(out_dot[lane, j], r) + _mul0(out[lane, j], dr)
            out[lane, j] = _mul0(out[lane, j], r)


def _lanes(x: np.ndarray, axis: int) -> np.ndarray:
    """x with ``axis`` last, as a C-contiguous (lanes, n) array."""
    return np.ascontiguousarray(np.moveaxis(x, axis, -1)).reshape(-1, x.shape[axis])


def _back(lanes: np.ndarray, shape: tuple[int, ...], axis: int) -> np.ndarray:
    moved = tuple(n for k, n in enumerate(shape) if k != axis) + (shape[axis],)
    return np.moveaxis(lanes.reshape(moved), -1, axis)


def scan_forward(name: str, a: np.ndarray, axis: int, out: np.ndarray) -> None:
    (np.cumsum if name == "cumsum" else np.cumprod)(a, axis=axis, out=out)


def reversed_cumsum(g: np.ndarray, axis: int) -> np.ndarray:
    """Σ_{k >= j} g_k along axis: cumsum's adjoint."""
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


def scan_jvp(name: str, a: np.ndarray, da: np.ndarray, axis: int) -> np.ndarray:
    if name == "cumsum":
        return np.cumsum(da, axis)
    if not a.size:
        return np.zeros(a.shape)
    la = _lanes(a, axis)
    out = np.empty(la.shape)
    _cumprod_jvp(la, _lanes(da, axis), out)
    return _back(out, a.shape, axis)


def scan_vjp(name: str, a: np.ndarray, g: np.ndarray, axis: int) -> np.ndarray:
    if name == "cumsum":
        return reversed_cumsum(g, axis)
    if not a.size:
        return np.zeros(a.shape)
    la = _lanes(a, axis)
    out = np.empty(la.shape)
    _cumprod_vjp(la, la, _lanes(g, axis), la, out, out[:0], False)
    return _back(out, a.shape, axis)


def scan_vjp_second(name: str, a: np.ndarray, da: np.ndarray, g: np.ndarray, gd: np.ndarray, axis: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(a', its tangent) for adjoint g with tangent gd at input a with tangent da."""
    if name == "cumsum":
        return reversed_cumsum(g, axis), reversed_cumsum(gd, axis)
    if not a.size:
        return np.zeros(a.shape), np.zeros(a.shape)
    la = _lanes(a, axis)
    out, out_dot = np.empty(la.shape), np.empty(la.shape)
    _cumprod_vjp(la, _lanes(da, axis), _lanes(g, axis), _lanes(gd, axis), out, out_dot, True)
    return _back(out, a.shape, axis), _back(out_dot, a.shape, axis)


def permutation(a: np.ndarray, axis: int) -> np.ndarray:
    """The stable sorting permutation of a along axis (recomputed from the values at every pass)."""
    return np.argsort(a, axis=axis, kind="stable")


def sort_forward(a: np.ndarray, axis: int, out: np.ndarray) -> None:
    out[...] = np.take_along_axis(a, permutation(a, axis), axis)


def sort_vjp(a: np.ndarray, g: np.ndarray, axis: int) -> np.ndarray:
    """a'[perm] = g: each element's adjoint is the one of the place it was sorted to."""
    back = np.empty(a.shape)
    np.put_along_axis(back, permutation(a, axis), g, axis)
    return back
