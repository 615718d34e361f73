"""The arenas cut into pieces at both ends of every region a compiled table's walk compares (tape/sweeps/compiled.py's
_walked): two regions meet exactly where they share a piece, so whether an item between a table's rows meets them is a
question of Python ints, not of NumPy's arrays per item."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tape.kernels import _array_driver as kernels
from tape.kernels._array_driver import VIEW, VIEWS
from tape.sweeps import driver
from tape.sweeps.driver import State
from tape.sweeps.plans import regions


class Pieces(NamedTuple):
    """The arenas cut at both ends of every region grouped compares (a plan's own; a table row's output and views'),
    so that two regions meet exactly where they share a piece: each plan's rows' pieces (flat, plan k's from
    begins[k]), each plan's own region's first piece and the one past it, how many pieces (n)."""

    flat: list[int]
    begins: list[int]
    first: list[int]
    past: list[int]
    n: int

    def rows(self, k: int) -> list[int]:
        """The pieces of plan k's table rows."""
        return self.flat[self.begins[k]:self.begins[k + 1]]


def cut(s: State, encoded: np.ndarray, starts: np.ndarray, back: bool) -> Pieces:
    """The Pieces of s's arenas (back: the adjoint arena's, encoded placing adjoints), by NumPy over all rows at once,
    kept by a Function (``_encoded``)."""
    cache = getattr(s, "_encoded", None)
    if cache is not None and ("pieces", back) in cache:
        return cache["pieces", back]
    _, _, size = regions(s._plans)
    offset = driver.starts(s, back)
    t = encoded
    lo = np.concatenate([t[:, kernels.OUT], *(t[:, VIEWS + VIEW * q + kernels.REGION] for q in range(2))])
    hi = lo + np.concatenate([t[:, kernels.SIZE], *(t[:, VIEWS + VIEW * q + kernels.REGION_SIZE] for q in range(2))])
    cuts = distinct(np.concatenate([lo, hi, offset, offset + size]))
    first, past = np.searchsorted(cuts, lo), np.searchsorted(cuts, hi)
    count = np.maximum(past - first, 0)  # (an empty region: no piece)
    plan = np.tile(np.repeat(np.arange(len(starts) - 1), np.diff(starts)), 3)
    piece = np.repeat(first, count) + np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    key = distinct(np.repeat(plan, count) * len(cuts) + piece)  # (each plan's pieces once, in order)
    found = Pieces((key % len(cuts)).tolist(), np.searchsorted(key // len(cuts), np.arange(len(starts))).tolist(),
                   np.searchsorted(cuts, offset).tolist(), np.searchsorted(cuts, offset + size).tolist(), len(cuts))
    if cache is not None:
        cache["pieces", back] = found
    return found


def distinct(a: np.ndarray) -> np.ndarray:
    """a's distinct values in order: np.unique without its first call's import of numpy.ma, on which a child forked
    amid another thread's import would wait for good (tests/test_twins.py's fork)."""
    a = np.sort(a)
    return a[np.diff(a, prepend=a[:1] - 1) != 0]
