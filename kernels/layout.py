"""Numba pass of tape/sweeps/layout.py: regions handed out first fit by lifetimes (its compact), a plan at a time."""

from __future__ import annotations

import numpy as np

from .compiling import jit


@jit
def first_fit(size, born, dies, n, scan, offsets):
    """offsets[k] = the region of record k (sizes, value lifetimes born..dies, in record order): the first open region
    among the first ``scan`` of its size class (the bit length of its size), then of the next class, that is as big as
    size (at most twice) and whose values all died before born; else a new one at the top. A region whose value lives
    to n or later is closed. Returns the arena length. Each class's open regions in order of making: a doubly linked
    list (``after``, ``before``; ``first``, ``last`` by class)."""
    m = len(size)
    where, big, end = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64)  # each region's
    after, before = np.full(m, -1, np.int64), np.full(m, -1, np.int64)
    first, last = np.full(66, -1, np.int64), np.full(66, -1, np.int64)
    made, top = 0, 0
    for k in range(m):
        s, bits = size[k], 0
        while s >> bits:
            bits += 1
        found = -1
        for c in (bits, bits + 1):
            r, seen = first[c], 0
            while r >= 0 and seen < scan:
                if s <= big[r] <= 2 * s and born[k] > end[r]:
                    found = r
                    break
                seen += 1
                r = after[r]
            if found >= 0:
                break
        if found < 0:
            found, made = made, made + 1
            where[found], big[found], end[found] = top, s, -1
            top += s
            if last[bits] >= 0:
                after[last[bits]], before[found] = found, last[bits]
            else:
                first[bits] = found
            last[bits] = found
        end[found] = max(end[found], dies[k])
        if dies[k] >= n:  # unlinked from its class
            c = 0
            while big[found] >> c:
                c += 1
            if before[found] >= 0:
                after[before[found]] = after[found]
            else:
                first[c] = after[found]
            if after[found] >= 0:
                before[after[found]] = before[found]
            else:
                last[c] = before[found]
        offsets[k] = where[found]
    return top
