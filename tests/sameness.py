"""Bit-for-bit comparison of two Functions' results, for the tests of the passes over records
(test_prune, test_prune_arrays, test_cse)."""

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
