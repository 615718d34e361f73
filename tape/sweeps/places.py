"""Where a stretch's views meet (tape/sweeps/stretches.py): forward, the spans whose stored members meet each other or
a place read from outside the pass; back, how each view sends to the arena (its group: kernels/stretched.py) and the
spans whose sends could not keep the rows' order in one pass; and the rows moved aside before stretches are found,
where they meet none of the rows they pass (``hoisted``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tape.kernels import stretched
from tape.kernels._array_driver import (
    BASE,
    ELEMENTWISE,
    KIND,
    LINED,
    LOGSUMEXP,
    NIN,
    OP,
    OUT,
    REGION,
    REGION_SIZE,
    ROW,
    SELECT,
    SHAPE,
    SIZE,
    STRIDES,
    SUM,
    VIEW,
    VIEWS,
    WANT,
    WIDTH,
)
from tape.kernels.ops import EXACT, OPS
from tape.kernels.shaped import MEMBERS
from tape.sweeps import driver
from tape.sweeps.plans import regions

SAME = stretched.SAME
JOINS = np.array([op.name in EXACT or op.kind == "compare" for op in OPS])  # by opcode: the ops of a stretch's
# elementwise rows (a comparison's value from its rule; it sends nothing back)
Q = np.arange(2)  # a row's views 0, 1
UNSENT = -2  # (a member's view back that sends nothing: it reads a member, or wants no adjoint)


def overlapping(m: np.ndarray, span: np.ndarray, at: np.ndarray, stored: np.ndarray, outer: np.ndarray,
                 how: np.ndarray, n: np.ndarray, refused: np.ndarray) -> None:
    """Refuse (forward) each span whose stored members meet (their regions in order, n apart), or whose region meets
    a place read from outside the pass (a view laid out as the output: unless it reads at an index no lower, by a
    member no later; its number, its line, one number a line: any)."""
    w = np.flatnonzero(stored)
    w = w[np.lexsort((m[w, OUT], span[w]))]
    sp, starts = span[w], m[w, OUT]
    meet = (sp[1:] == sp[:-1]) & (starts[1:] - starts[:-1] < n[w[1:]])
    refused[sp[1:][meet]] = True
    v, q = np.nonzero(outer)
    if not len(w) or not len(v):
        return
    b, h, line = m[v, VIEWS + VIEW * q + BASE], how[v, q], m[v, SHAPE:SHAPE + 4]
    strides = m[v[:, None], VIEWS + VIEW * q[:, None] + STRIDES + np.arange(1, 4)]
    same = h == SAME  # (a line, one number a line: from its base to its last element, strides not negative)
    length = np.where(h == 0, 1, np.where(same, n[v], 1 + ((line[:, 1:] - 1) * strides).sum(1)))
    low, high = np.where(same, b, b - n[v]), b + length  # (a member's region meets a place at [b, b + length)
    least = min(starts.min(), (b - n[v]).min()) - 1  # where it starts in (low, high))
    wide = max(starts.max(), high.max(), b.max()) - least + 1  # (offsets in an arena: < 2^40; spans < 2^20)
    keys = sp * wide + starts - least
    sv = span[v] * wide - least
    refused[span[v][np.searchsorted(keys, sv + high) > np.searchsorted(keys, sv + low, "right")]] = True
    p = np.maximum(np.searchsorted(keys, sv + b, "right") - 1, 0)  # the stored member at or below b, within n
    refused[span[v][same & (keys[p] > sv + b - n[v]) & (keys[p] <= sv + b) & (at[w[p]] < at[v])]] = True


def sends(m: np.ndarray, span: np.ndarray, back_at: np.ndarray, views: np.ndarray, line: np.ndarray,
           number: np.ndarray, n: np.ndarray, last: np.ndarray, refused: np.ndarray, at: np.ndarray) -> np.ndarray:
    """How each view back sends to the arena: its group, the views of each place apart from the others (no view of the
    span at a base less than n away) a group each (0, 1, ... as first seen: last member first, a before b), their adds
    into one local an element stored in the pass (only the place most views read did: the heat equation's two joins were
    added after the pass from a scratch row, its replayed value_and_grad 8.0 -> 6.5 ms CPU), the others
    stretched.SCRATCH, added after the pass, view by view (the rows' order for every element), or where every view is a
    LINED row's line read by every line (``line``), stretched.SUMMED (summed back across lines in the pass, added after
    it), or a 3-d space's one number a line (``at``), stretched.EACHSUM (each line's sum made after its elements, the
    rows' _lined_send's); UNSENT for views that send nothing. Refuses the spans where a number wants an adjoint (a sum
    back), a view's region meets the last member's adjoint (read as the pass goes), lines summed back meet other views
    (beside the arena's stores in the pass LLVM vectorized neither: normalisation's 236 -> 257 us CPU) or a region that
    one number a line sends to meets another view's that sends (those add in the rows' order only in one place)."""
    v, q = np.nonzero(views)
    sv, nv, region, size = span[v], n[v], m[v, VIEWS + VIEW * q + REGION], m[v, VIEWS + VIEW * q + REGION_SIZE]
    refused[sv[(number[v] == q + 1) | ((region < last[sv] + nv) & (last[sv] < region + size))]] = True
    sums = at[v, q]
    for x in np.unique(sv[sums]).tolist():  # (a loop over the spans with such views: a 3-d space's few)
        mine, others = (sv == x) & sums, (sv == x) & ~sums
        refused[x] |= bool(((region[mine, None] < region[others] + size[others])
                            & (region[others] < region[mine, None] + size[mine, None])).any())
    group = np.full(views.shape, UNSENT)
    group[v[sums], q[sums]] = stretched.EACHSUM
    views = views & ~at
    v, q = np.nonzero(views)
    sv, nv = span[v], n[v]
    lined, summed = line[v, q], np.zeros(len(refused), bool)
    summed[sv[lined]] = True
    refused[sv[summed[sv] & ~lined]] = True
    b, seen = m[v, VIEWS + VIEW * q + BASE], back_at[v] * 2 + q  # (the views' order: last member first, a before b)
    o = np.lexsort((seen, b, sv))
    b, sv, nv, seen = b[o], sv[o], nv[o], seen[o]
    new = np.ones(len(o), bool)
    new[1:] = (sv[1:] != sv[:-1]) | (b[1:] != b[:-1])
    place = np.flatnonzero(new)  # each span's places (a base of views), in order
    pb, ps, pn = b[place], sv[place], nv[place]
    alone = np.ones(len(place), bool)  # (no view of its span at a base less than n away)
    alone[1:] &= (ps[1:] != ps[:-1]) | (pb[1:] - pb[:-1] >= pn[1:])
    alone[:-1] &= (ps[1:] != ps[:-1]) | (pb[1:] - pb[:-1] >= pn[:-1])
    views_at = np.diff(np.append(place, len(o)))
    order = np.lexsort((seen[place], ~alone, ps))  # (a span's places apart first, each by its first view seen)
    before = np.cumsum(alone[order]) - alone[order]  # (the places apart before each, in every span: counted from 0)
    rank = np.empty(len(place), np.int64)
    rank[order] = before - np.maximum.accumulate(np.where(np.append(True, ps[order][1:] != ps[order][:-1]), before, 0))
    group[v[o], q[o]] = np.repeat(np.where(alone, rank, stretched.SCRATCH), views_at)
    group[v[lined], q[lined]] = stretched.SUMMED
    return group


HOIST = MEMBERS  # rows of other sizes a row moves up past, at most (hoisted): a stretch's most members


def joining(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row of table t: whether it is elementwise (a LINED row too), and whether it may join a stretch (an exact
    op or a comparison, or a select's row: stretches.py's _picked pairs them; two elements or more)."""
    elementwise = (t[:, KIND] == ELEMENTWISE) | (t[:, KIND] == LINED)
    ops = elementwise & JOINS[np.where(elementwise, t[:, OP], 0)]
    return elementwise, (ops | (t[:, KIND] == SELECT)) & (t[:, SIZE] >= 2)


def hoisted(s: Any, rows: list[np.ndarray], back: bool = False) -> list[np.ndarray]:
    """A table's rows (forward order), each that may join a stretch moved up past the rows of other sizes just before
    it (HOIST at most) to just after a row of its size that may join one too, where it meets none of theirs: so
    tape.jit's mixture, whose exp(-logs) of 16 elements is made between x - mu and the rest of 160,000, has one stretch
    a sweep, as the Python recorder's (exp(-logs) scalar records there). Rows meet where one's output region meets the
    other's, or one's output region meets the elements the other's views read, or both send adjoints back to one
    element (their adds' order); so forward each reads what it read, and back each row's adjoint is whole before it
    runs (no moved row reads another) and every element's adds come in the same order."""
    if len(rows) < 3:
        return rows
    t = np.array(rows, np.int64).reshape(-1, WIDTH)
    size, kind = t[:, SIZE], t[:, KIND]
    elementwise, fits = joining(t)
    moving = np.flatnonzero(fits[1:] & (size[1:] != size[:-1])) + 1
    if not len(moving):
        return rows
    _, _, length = regions(s._plans)
    offset = driver.starts(s, back)  # (back: the rows place adjoints)
    plan = s._in0[t[:, ROW]]
    lo, hi, want = np.zeros((len(t), 3), np.int64), np.zeros((len(t), 3), np.int64), np.zeros((len(t), 3), bool)
    lo[:, 0], hi[:, 0] = offset[plan], offset[plan] + length[plan]
    spaced = elementwise | (kind == SUM) | (kind == LOGSUMEXP)  # (views' strides in the row's space)
    for q in range(2):
        f = VIEWS + VIEW * q
        steps = (t[:, SHAPE:SHAPE + 4] - 1) * t[:, f + STRIDES:f + STRIDES + 4]
        on = Q[q] < t[:, NIN]
        lo[:, 1 + q] = np.where(spaced, t[:, f + BASE] + np.minimum(steps, 0).sum(1), t[:, f + REGION])
        hi[:, 1 + q] = np.where(spaced, t[:, f + BASE] + np.maximum(steps, 0).sum(1) + 1,
                                t[:, f + REGION] + t[:, f + REGION_SIZE])
        hi[:, 1 + q] = np.where(on, hi[:, 1 + q], lo[:, 1 + q])  # (no view: empty)
        want[:, 1 + q] = on & (t[:, f + WANT] != 0)
    lo_, hi_, want_ = lo.tolist(), hi.tolist(), want.tolist()

    def meet(a: int, b: int) -> bool:
        return any(lo_[a][i] < hi_[b][j] and lo_[b][j] < hi_[a][i] and (i == 0 or j == 0 or want_[a][i] and want_[b][j])
                   for i in range(3) for j in range(3))

    order, sizes, fit = list(range(len(t))), size.tolist(), fits.tolist()
    tried = np.zeros(len(t) + HOIST, bool)  # (a row after a moved one may move too: its new neighbour of another size)
    for c in moving.tolist():
        tried[c:c + HOIST] = True
    for j in np.flatnonzero(tried[:len(t)]).tolist():  # (rows only before place j moved so far)
        row = order[j]
        if not fit[row] or sizes[order[j - 1]] == sizes[row]:
            continue
        k = j - 1
        while k >= max(0, j - HOIST) and sizes[order[k]] != sizes[row] and not meet(order[k], row):
            k -= 1
        if k >= max(0, j - HOIST) and sizes[order[k]] == sizes[row] and fit[order[k]]:  # (so k < j - 1)
            order.insert(k + 1, order.pop(j))
    return [rows[i] for i in order]
