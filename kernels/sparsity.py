"""Numba passes for sparse Jacobians: the pattern (forward propagation of index sets over the
records) and a greedy distance-2 coloring of its columns. No recursion; see tape/function/sparse_jacobian.py.

Dependence is structural, by the op table: a record depends on its first input when the op has a
partial ``da`` that is not the constant ``0.0``, and on its second input likewise with ``db``.
So comparisons (no partials), floor/ceil/trunc/rint/sign/stop_gradient (``da = 0.0``) and leaves
carry no dependence; select depends on both sides (its condition is a separate record, not an
input); mul by a constant 0 still depends on its input (the constant is not looked at).
"""

from __future__ import annotations

import numpy as np

from .compiling import jit
from .ops import HAS_INPUT, OPS, TWO_RECORDS
from .twins import Twin

_ZERO_A = np.isin(np.arange(256), [code for code, op in enumerate(OPS) if op.da == "0.0"])
_ZERO_B = np.isin(np.arange(256), [code for code, op in enumerate(OPS) if op.db == "0.0"])
_HAS_DA = np.isin(np.arange(256), [code for code, op in enumerate(OPS) if op.da])
_HAS_DB = np.isin(np.arange(256), [code for code, op in enumerate(OPS) if op.db])
DEPENDS_A = HAS_INPUT & _HAS_DA & ~_ZERO_A  # indexed by opcode: the record depends on in0
DEPENDS_B = TWO_RECORDS & _HAS_DB & ~_ZERO_B  # ... on in1


def index_sets(op, in0, in1, depends_a, depends_b, column, top, wanted):
    """Forward propagation over records [0, top] (those with wanted[i]; the others get the empty
    set, as do records their sets would come from): record i's set of input columns is
    pool[start[i]:start[i] + size[i]], sorted. A record whose set equals an input's set shares it
    (no copy), so the cost is the total size of the distinct sets made: linear in the records when
    every set is bounded (stencils, blocks), quadratic for a long chain of sums over all inputs.
    column[i]: the input column of record i, or -1. Returns (start, size, pool)."""
    n = top + 1
    start, size = np.zeros(n, np.int64), np.zeros(n, np.int64)
    pool, _ = extend_sets(op, in0, in1, depends_a, depends_b, column, wanted, start, size,
                          np.empty(max(16, 2 * n), np.int64), 0, 0, n)
    return start, size, pool


def extend_sets(op, in0, in1, depends_a, depends_b, column, wanted, start, size, pool, used, lo, hi):
    """index_sets' pass over records [lo, hi) only, continuing (start, size, pool[:used]); a record
    whose set the caller put there (an elem record's, from its array's pattern) keeps it. Returns
    (pool, used): the pool grown (doubled) where it had to be, here, between calls of the kernel."""
    while lo < hi:
        lo, used = _EXTEND(op, in0, in1, depends_a, depends_b, column, wanted, start, size, pool, used, lo, hi)
        if lo < hi:
            grown = np.empty(max(16, 2 * len(pool)), np.int64)
            grown[:used] = pool[:used]
            pool = grown
    return pool, used


@jit
def _extend_sets(op, in0, in1, depends_a, depends_b, column, wanted, start, size, pool, used, lo, hi):
    """extend_sets' pass; (the record it stopped at, the pool's use): hi, or a record whose set does not fit.
    (Growing the pool here, a new array bound to pool in the loop, took 3.2 s more of its compile: 3.6 s.)"""
    for i in range(lo, hi):
        if column[i] >= 0:
            if used == len(pool):
                return i, used
            pool[used] = column[i]
            start[i] = used
            size[i] = 1
            used += 1
            continue
        if not wanted[i]:
            continue
        k = op[i]
        a = np.int64(in0[i]) if depends_a[k] else -1
        b = np.int64(in1[i]) if depends_b[k] else -1
        if a >= 0 and size[a] == 0:
            a = -1
        if b >= 0 and size[b] == 0:
            b = -1
        if a >= 0 and b >= 0 and start[a] == start[b] and size[a] == size[b]:
            b = -1
        if a < 0 and b < 0:
            continue
        if b < 0 or a < 0:
            s = a if b < 0 else b
            start[i] = start[s]
            size[i] = size[s]
            continue
        if used + size[a] + size[b] > len(pool):
            return i, used
        p, q, pe, qe, out = start[a], start[b], start[a] + size[a], start[b] + size[b], used
        while p < pe and q < qe:
            u, v = pool[p], pool[q]
            if u <= v:
                pool[out] = u
                p += 1
                if u == v:
                    q += 1
            else:
                pool[out] = v
                q += 1
            out += 1
        while p < pe:
            pool[out] = pool[p]
            p += 1
            out += 1
        while q < qe:
            pool[out] = pool[q]
            q += 1
            out += 1
        m = out - used
        if m == size[a]:
            start[i], size[i] = start[a], m
        elif m == size[b]:
            start[i], size[i] = start[b], m
        else:
            start[i], size[i] = used, m
            used = out
    return hi, used


_EXTEND = Twin(_extend_sets, globals())  # (a small tape's first pattern: tape/kernels/twins.py)


def rows_room(rows, size):
    """gather_rows' indptr (made here) and indices (to fill) for the sets of the given records."""
    indptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(size[rows], out=indptr[1:])
    return indptr, np.empty(indptr[-1], np.int32)


@jit
def gather_rows(rows, start, size, pool, indptr, indices):
    """The CSR arrays (indptr, indices) of the sets of the given records, one row each: indices filled, indptr and
    indices as rows_room makes them (NumPy's allocations compiled in took 0.25 of its 0.4 CPU-s of compile)."""
    for r in range(len(rows)):
        s = start[rows[r]]
        for t in range(size[rows[r]]):
            indices[indptr[r] + t] = pool[s + t]
    return indptr, indices


@jit
def color_columns(n, indptr, indices, colptr, rowidx, order, color, forbidden):
    """Greedy distance-2 coloring of the n columns, in the given order: each column takes the
    smallest color that no column sharing a row with it has. Cost: the sum over rows of the row's
    length squared (linear for bounded rows). Columns with no entries get color 0. color and forbidden come as n
    and n + 1 times -1 (forbidden[c] == j: color c is taken near column j; made by NumPy: np.full compiled in took
    0.15 of the kernel's 0.3 CPU-s of compile)."""
    for t in range(n):
        j = order[t]
        for p in range(colptr[j], colptr[j + 1]):
            i = rowidx[p]
            for q in range(indptr[i], indptr[i + 1]):
                c = color[indices[q]]
                if c >= 0:
                    forbidden[c] = j
        c = 0
        while forbidden[c] == j:
            c += 1
        color[j] = c
    return color


@jit
def decompress(indptr, indices, colors, first, dot, output_rows, data):
    """data[p] = the compressed entry of nonzero p (row r, column j): dot[output_rows[r], colors[j] - first]
    for the colors first .. first + dot's columns - 1 (one block of sweeps); other entries stay."""
    k = dot.shape[1]
    for r in range(len(indptr) - 1):
        row = output_rows[r]
        for p in range(indptr[r], indptr[r + 1]):
            c = colors[indices[p]] - first
            if 0 <= c < k:
                data[p] = dot[row, c]
