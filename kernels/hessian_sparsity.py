"""Numba passes for sparse Hessians: the pattern, a star coloring of its graph, and direct
recovery of the entries from one Hessian-vector product per color. See tape/function/sparse_hessian.py.

The Hessian of a scalar output y is the sum over the records r that y depends on of
``adj_r * sum_{u, w in r's inputs} d2r/du dw * grad(u) grad(w)^T``, so its pattern is the union,
over the records the output reaches (a reverse pass along the dependent partials), of
set(u) x set(w) for every second partial of the op that is not zero by the op table (set: the
record's Jacobian index set, kernels/sparsity.py). A unary op with ``daa`` joins its input's set
with itself; ``mul`` (``dab`` only) makes the cross pairs; add, sub, mul_c, neg ... (no second
partials) make none. This is the index-set scheme of Walther (2008) with the nonlinear
interactions gathered per record instead of per input. Index sets are made only for the records
the pairs read (and those they depend on), so the linear chain of a long sum makes none. The pairs of
records (record_pairs) become the pattern as one sparse product of their sets (tape/function/array_sparsity.py's
products), so the cost is linear in the records plus the products of the paired sets' sizes, each entry made once.
"""

from __future__ import annotations

import numpy as np

from .compiling import jit
from .ops import HAS_INPUT, OPS, TWO_RECORDS
from .twins import Twin


def _nonzero(part: str) -> np.ndarray:
    """Indexed by opcode: the op has the second partial ``part`` and it is not the constant 0.0."""
    return np.isin(np.arange(256), [code for code, op in enumerate(OPS) if getattr(op, part) not in ("", "0.0")])


SECOND_AA = HAS_INPUT & _nonzero("daa")  # indexed by opcode: d2/da2 is not zero by the table
SECOND_AB = TWO_RECORDS & _nonzero("dab")
SECOND_BB = TWO_RECORDS & _nonzero("dbb")


def reached(op, in0, in1, depends_a, depends_b, second_aa, second_ab, second_bb, output):
    """(live, wanted), one reverse pass: live[r] when the output depends on record r through dependent
    partials; wanted[r] when a live record's nonzero second partial reads r, or a wanted record depends
    on r (the records whose index sets the pairs need: not the linear chain of a long sum)."""
    live = np.zeros(output + 1, np.bool_)
    wanted = np.zeros(output + 1, np.bool_)
    live[output] = True
    _REACH(op, in0, in1, depends_a, depends_b, second_aa, second_ab, second_bb, live, wanted, 0, output + 1)
    return live, wanted


@jit
def reach(op, in0, in1, depends_a, depends_b, second_aa, second_ab, second_bb, live, wanted, lo, hi):
    """reached's pass over records [lo, hi) only, from hi - 1 down, on the caller's live and wanted."""
    for t in range(hi - lo):
        r = hi - 1 - t
        k = op[r]
        if live[r]:
            if second_aa[k] or second_ab[k]:
                wanted[in0[r]] = True
            if second_bb[k] or second_ab[k]:
                wanted[in1[r]] = True
        if depends_a[k]:
            live[in0[r]] |= live[r]
            wanted[in0[r]] |= wanted[r]
        if depends_b[k]:
            live[in1[r]] |= live[r]
            wanted[in1[r]] |= wanted[r]


@jit
def record_pairs(op, in0, in1, live, second_aa, second_ab, second_bb):
    """(u, w): the pairs of records whose sets' products make the pattern: for each live record (an input has no
    second partial), its inputs as its second partials that are not zero pair them (daa: (a, a); dab: (a, b) and
    (b, a); dbb: (b, b)). Two passes: count, then fill (a NumPy form's eleven passes over the records' columns
    took 100 ms at 5 million records)."""
    count = 0
    for r in range(len(live)):
        if live[r]:
            k = op[r]
            count += second_aa[k] + 2 * second_ab[k] + second_bb[k]
    u, w = np.empty(count, np.int64), np.empty(count, np.int64)
    at = 0
    for r in range(len(live)):
        if not live[r]:
            continue
        k, a, b = op[r], in0[r], in1[r]
        if second_aa[k]:
            u[at], w[at], at = a, a, at + 1
        if second_ab[k]:
            u[at], w[at], u[at + 1], w[at + 1], at = a, b, b, a, at + 2
        if second_bb[k]:
            u[at], w[at], at = b, b, at + 1
    return u, w


_REACH = Twin(reach, globals())  # (a small tape's first: twins.py)
RECORD_PAIRS = Twin(record_pairs, globals())


@jit
def star_coloring(n, indptr, indices, order, color, forbidden):
    """Greedy star coloring of the pattern's graph (vertices: the inputs; edges: the off-diagonal
    entries), in the given order, as Gebremedhin, Manne and Pothen's (SIAM Review 2005) first star
    coloring algorithm: vertex v takes the smallest color not forbidden, where a color is forbidden
    when a neighbor w has it, when a vertex x two steps away has it through an uncolored w, or
    when x has it through a colored w and x has a neighbor y (not w) of w's color (v, w, x, y
    would be a two-colored path). So adjacent vertices differ and every path on four vertices
    has three colors. Cost: the sum over v of the paths of length 3 from v. color and forbidden come as n and n + 1
    times -1 (forbidden[c] == v: color c is taken for v; made by NumPy: np.full compiled in took 0.15-0.2 CPU-s)."""
    for t in range(n):
        v = order[t]
        for p in range(indptr[v], indptr[v + 1]):  # the neighbors' colors first: a color forbidden already
            if indices[p] != v and color[indices[p]] >= 0:  # is not looked at again below (dense: n^3, not n^4)
                forbidden[color[indices[p]]] = v
        for p in range(indptr[v], indptr[v + 1]):
            w = indices[p]
            if w == v:
                continue
            cw = color[w]
            for q in range(indptr[w], indptr[w + 1]):
                x = indices[q]
                cx = color[x]
                if x == w or x == v or cx < 0 or forbidden[cx] == v:
                    continue
                if cw < 0:
                    forbidden[cx] = v
                    continue
                for s in range(indptr[x], indptr[x + 1]):
                    y = indices[s]
                    if y != x and y != w and color[y] == cw:
                        forbidden[cx] = v
                        break
        c = 0
        while forbidden[c] == v:
            c += 1
        color[v] = c
    return color


@jit
def recover(indptr, indices, colors, compressed, data, count, direct):
    """data[p] for entry p = (i, j) of the pattern, from compressed[:, c] = H times the sum of the
    unit vectors of color c: H[i, j] is compressed[i, c(j)] when j is the only neighbor of i of its
    color ("direct from row i"). Where both (i, j) and (j, i) are direct (the diagonal always), the
    entry is 0.5 * (compressed[i, c(j)] + compressed[j, c(i)]), as the dense Hessian symmetrizes;
    else the one that is. Returns -1, or the first entry direct from neither side (not a star coloring).
    Scratch from the caller: count, the colors + 1 zeros; direct, a bool per entry (np.zeros and np.searchsorted
    compiled in took 0.7 of the kernel's 1.0 CPU-s of compile, a sparse Hessian's first use)."""
    n = len(indptr) - 1
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] != i:
                count[colors[indices[p]]] += 1
        for p in range(indptr[i], indptr[i + 1]):
            direct[p] = indices[p] == i or count[colors[indices[p]]] == 1
        for p in range(indptr[i], indptr[i + 1]):
            count[colors[indices[p]]] = 0
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            t, hi = indptr[j], indptr[j + 1]  # the entry (j, i): the first of row j's sorted columns >= i
            while t < hi:
                mid = (t + hi) // 2
                if indices[mid] < i:
                    t = mid + 1
                else:
                    hi = mid
            a = compressed[i, colors[j]]
            b = compressed[j, colors[i]]
            if direct[p] and direct[t]:
                data[p] = 0.5 * (a + b)
            elif direct[p]:
                data[p] = a
            elif direct[t]:
                data[p] = b
            else:
                return p
    return -1


DISTINCT = 1 << 20  # products of set sizes past which distinct_pairs makes each pair of sets once (below, hashing the
# rows costs more than it saves: conv1d's Hessian pattern 0.17 -> 0.22-0.31 s)


def distinct_pairs(indptr, indices, u, w):
    """The pairs (u[t], w[t]) of a CSR pattern's rows (an array record's views' rows, whose sets' products make the
    Hessian's pattern), past DISTINCT entries of those products with each row that has the same set as an earlier
    row standing for it, each pair once (a logsumexp over the 16 components of 10^4 points had 2.56 million pairs of
    rows of one set of 18 inputs: 829 million entries, an out-of-memory kill when each was listed; 256 pairs)."""
    sizes = np.diff(indptr)
    if int((sizes[u] * sizes[w]).sum()) <= DISTINCT:
        return u, w
    first, n = _first_of_set(indptr, indices), len(indptr) - 1
    key = np.unique(first[u] * n + first[w])
    return key // n, key % n


def _first_of_set(indptr, indices):
    """Each row's first row with the same columns in the same order (CSR rows sorted: the same set): rows hashed,
    the first of each hash compared whole (two sets of one hash by chance: each its own)."""
    n = len(indptr) - 1
    hashes = np.empty(n, np.int64)
    _set_hashes(indptr, indices, hashes)
    _, at, which = np.unique(hashes, return_index=True, return_inverse=True)
    first = np.arange(n)
    _same_sets(indptr, indices, at[which.reshape(-1)], first)
    return first


@jit
def _set_hashes(indptr, indices, hashes):
    """hashes[r]: a hash of row r's size and columns (wrapping int64 products of odd constants)."""
    for r in range(len(indptr) - 1):
        h = (indptr[r + 1] - indptr[r]) * 0x1E3779B97F4A7C15
        for p in range(indptr[r], indptr[r + 1]):
            h = (h ^ indices[p]) * 0x100000001B3 + 0x2545F4914F6CDD1D
        hashes[r] = h


@jit
def _same_sets(indptr, indices, candidate, first):
    """first[r] = candidate[r] where row r's columns are that row's."""
    for r in range(len(indptr) - 1):
        c = candidate[r]
        if c == r or indptr[r + 1] - indptr[r] != indptr[c + 1] - indptr[c]:
            continue
        same = True
        for k in range(indptr[r + 1] - indptr[r]):
            if indices[indptr[r] + k] != indices[indptr[c] + k]:
                same = False
                break
        if same:
            first[r] = c
