"""Bit-for-bit comparison of two Functions' results, for the tests of the passes over records
(test_prune, test_prune_arrays, test_cse), and edge points with NaN-canonical sameness for the compiled tables' tests
(test_stretches, test_one_table)."""

from __future__ import annotations

import os

import numpy as np

import tape


def bits(result) -> bytes:
    """The float64 bytes of a result (a tuple's parts joined)."""
    if isinstance(result, tuple):
        return b"|".join(bits(r) for r in result)
    return np.asarray(result, np.float64).tobytes()


def same(F, G, method: str, *args) -> None:
    """F.method(*args) and G.method(*args) give the same bits, or the same BranchChanged (file:line)."""
    got = []
    for H in (F, G):
        try:
            got.append(bits(getattr(H, method)(*args)))
        except tape.BranchChanged as exc:
            got.append(("BranchChanged", os.path.basename(exc.where)))  # a file keeps the name only
    assert got[0] == got[1], method


def same_maps(Fs, Gs, Fv, Gv, X: np.ndarray, p) -> None:
    """Every map of the scalar pair (Fs, Gs) and the vector pair (Fv, Gv) at the rows of X, params p."""
    for F, G in ((Fs, Gs), (Fv, Gv)):
        same(F, G, "map", X, p)
        same(F, G, "map_jvp", X, X[::-1], p)
    same(Fs, Gs, "map_value_and_grad", X, p)
    same(Fs, Gs, "map_hvp", X, X[::-1], p)
    same(Fv, Gv, "map_vjp", X, np.ones((len(X), Fv.n_outputs)), p)


EDGES = ([0.0, -0.0], [np.inf, -np.inf], [np.nan], [1e300, -1e300], [1e-310, -5e-324], [800.0, -800.0])


def edge_points(x: np.ndarray) -> list[np.ndarray]:
    """x, +-0 everywhere, and x with every third element set to each pair of EDGES in turn."""
    points = [x, np.zeros_like(x), -np.zeros_like(x)]
    for values in EDGES:
        y = x.copy()
        y[::3] = np.resize(values, y[::3].shape)
        points.append(y)
    return points


def same_bits(a, b) -> bool:
    """The same bits (signed zeros too), NaN for NaN."""
    a, b = np.atleast_1d(np.asarray(a, np.float64)), np.atleast_1d(np.asarray(b, np.float64))
    return bool(((a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b))).all())
