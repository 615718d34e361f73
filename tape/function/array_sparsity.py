"""Sparsity patterns of any Function, array records and calls included (sparse_jacobian.py and
sparse_hessian.py take them for Functions with array records).

A scalar record's pattern is its index set (kernels/sparsity.py's pool); an array record's is a
scipy.sparse boolean CSR matrix, a row per element and a column per input number, so its cost is
its nonzeros. The records are walked in order, as the sweeps walk them: each stretch of scalar
records is one Numba pass (``extend_sets``); an elem record's set is its element's row; a pack's
rows are its scalar records' sets; a gather's its places' rows; a call's its callee's pattern
times its view's rows; and every other record's rows come from its rule's ``sparsity``
(kernels/array_kinds.py), Σ over its views of L_v P_v, by row gathers and sparse sums.

The Hessian's pattern is the scalar path's (kernels/hessian_sparsity.py) per element: a reverse
pass marks the live elements of array records (through the same local patterns, transposed) and
the live scalar records; then, as the walk reaches each array record with live elements, set(u) x
set(w) for each pair (u, w) of its views' elements that its rule's ``second_pairs`` names (a call:
its callee's Hessian pattern for its live outputs), as one sparse product, joined with the scalar
records' pairs. An array record's rows are freed after their last reader: a time loop holds the
rows of its live steps, not of every step (the heat equation over 10^4 points, 40 steps: 3 GB -> 0.2).

Structural, as the scalar path: a gather by data (fancy indexing) is fixed at recording, a sort may
send any element of its line anywhere (each element's row is the union over its line), and a
branch is the one recorded (a retrace makes the pattern again).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tape.kernels.array_ops import RULE
from tape.kernels.hessian_sparsity import (
    RECORD_PAIRS,
    SECOND_AA,
    SECOND_AB,
    SECOND_BB,
    distinct_pairs,
    reach,
)
from tape.kernels.ops import ELEM, IS_ARRAY
from tape.kernels.sparsity import DEPENDS_A, DEPENDS_B, extend_sets, gather_rows, rows_room
from tape.records.array_records import places
from tape.sweeps.driver import Plan, View, whole

if TYPE_CHECKING:
    from tape.function.function import Function


def scipy_sparse() -> Any:
    """scipy.sparse, imported at the first sparse derivative (a dependency; it costs import time)."""
    import scipy.sparse

    return scipy.sparse


class Sets:
    """The pattern of every record of F: index sets (scalar records) and CSR rows (array records).

    An array record's rows are kept until its last reader has made its own (those of ``kept``, to the end), so a
    loop holds its live steps' rows, not every step's. after(sets, i), where given, runs once record i's rows are
    made and its readers' are still held; it returns True to stop the walk there (``stopped``).
    wanted: the scalar records whose sets are made (the others' are empty); None: all."""

    def __init__(self, F: Function, wanted: np.ndarray | None = None, kept: Any = (),
                 after: Callable[[Sets, int], bool] | None = None):
        self.F, self.n = F, F.n_inputs
        count = len(F._op)
        self.column = np.full(count, -1, np.int64)  # a scalar input's column
        self.first: dict[int, int] = {}  # an array input's first column
        for row, start, _ in F._in_pieces:
            if IS_ARRAY[F._op[row]]:
                self.first[row] = start
            else:
                self.column[row] = start
        self.start, self.size = np.zeros(count, np.int64), np.zeros(count, np.int64)
        self.pool, self.used = np.empty(max(16, 2 * count), np.int64), 0
        self.rows: dict[int, Any] = {}
        self.stopped = False
        wanted = np.ones(count, np.bool_) if wanted is None else wanted
        arrays, elems = np.flatnonzero(IS_ARRAY[F._op]).tolist(), np.flatnonzero(F._op == ELEM)
        last = _last_readers(F, elems, kept)
        dying, gone = sorted(arrays, key=last.__getitem__), 0
        lo = 0
        for i in [*arrays, count]:
            if lo < i:
                self._elems(elems[np.searchsorted(elems, lo):np.searchsorted(elems, i)])
                self.pool, self.used = extend_sets(F._op, F._in0, F._in1, DEPENDS_A, DEPENDS_B, self.column,
                                                   wanted, self.start, self.size, self.pool, self.used, lo, i)
            if i < count:
                self.rows[i] = self._array(F._plans[int(F._in0[i])])
                if after is not None and after(self, i):
                    self.stopped = True
                    return
                while gone < len(dying) and last[dying[gone]] <= i:
                    del self.rows[dying[gone]]
                    gone += 1
            lo = i + 1

    def csr(self, indptr: np.ndarray, indices: np.ndarray, rows: int) -> Any:
        return scipy_sparse().csr_matrix((np.ones(len(indices), np.bool_), indices, indptr), shape=(rows, self.n))

    def scalars(self, rows: np.ndarray) -> Any:
        """The sets of scalar records as CSR rows."""
        return set_rows(self.n, rows.astype(np.int64), self.start, self.size, self.pool)

    def _elems(self, rows: np.ndarray) -> None:
        """Elem records take their element's row into the pool."""
        for record in np.unique(self.F._in0[rows]).tolist():
            mine = rows[self.F._in0[rows] == record]
            picked = self.rows[record][self.F._in1[mine].astype(np.int64)]
            need = self.used + picked.nnz
            if need > len(self.pool):
                self.pool = np.concatenate([self.pool[:self.used], np.empty(need, np.int64)])
            self.pool[self.used:need] = picked.indices
            self.start[mine] = self.used + picked.indptr[:-1]
            self.size[mine] = np.diff(picked.indptr)
            self.used = need

    def view(self, v: View, pick: np.ndarray | None = None) -> Any:
        """The rows of view v's elements (of those at ``pick`` of them)."""
        P = self.rows[v.record]
        at = None if v == whole(v.record, self.F._plans[int(self.F._in0[v.record])]) else places(v).reshape(-1)
        if at is None:
            return P if pick is None else P[pick]
        return P[at if pick is None else at[pick]]

    def _array(self, p: Plan) -> Any:
        rule, F = RULE[p.code], self.F
        if rule.reads == "none":
            first = self.first.get(p.row)
            if first is None:  # a param
                return self.csr(np.zeros(p.size + 1, np.int64), np.zeros(0, np.int64), p.size)
            return self.csr(np.arange(p.size + 1), first + np.arange(p.size), p.size)
        if rule.reads == "scalars":
            return self.scalars(p.places)
        if rule.reads == "elements":
            return self.rows[p.inputs[0].record][p.places]
        if rule.reads == "callee":
            return sorted_rows(F._callees[p.places[0]]._call_pattern().astype(np.bool_) @ self.view(p.inputs[0]))
        total = None
        for v, local in zip(p.inputs, rule.sparsity(p), strict=True):
            if local is None or not self.rows[v.record].nnz:
                continue
            rows, cols = local
            if rows is None:
                part = self.view(v, cols)
            else:
                L = scipy_sparse().csr_matrix((np.ones(len(rows), np.bool_), (rows, cols)),
                                              shape=(p.size, math.prod(v.shape)))
                part = sorted_rows(L @ self.view(v))
            total = part if total is None else total + part
        return self.csr(np.zeros(p.size + 1, np.int64), np.zeros(0, np.int64), p.size) if total is None else total

    def outputs(self) -> Any:
        """The Jacobian's pattern: a row per output number (array outputs in C order)."""
        parts = [self.rows[row] if IS_ARRAY[self.F._op[row]] else self.scalars(np.array([row]))
                 for row, _, _ in self.F._out_pieces]
        return scipy_sparse().vstack(parts, format="csr") if parts else self.csr(np.zeros(1, np.int64),
                                                                                  np.zeros(0, np.int64), 0)


def _last_readers(F: Function, elems: np.ndarray, kept: Any) -> list[int]:
    """By record: the last record that reads its value (itself where none does; the count of records, past every
    one, for those kept)."""
    last = np.arange(len(F._op))
    read = [(v.record, p.row) for p in F._plans for v in p.inputs]
    if read:
        records, readers = np.array(read, np.int64).T
        np.maximum.at(last, records, readers)
    np.maximum.at(last, F._in0[elems].astype(np.int64), elems)
    last[np.asarray(kept, np.int64)] = len(F._op)
    return last.tolist()


def sorted_rows(P: Any) -> Any:
    P.sort_indices()
    return P


def jacobian_pattern(F: Function) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) of F's Jacobian pattern, each row's columns sorted."""
    P = Sets(F, kept=[row for row, _, _ in F._out_pieces]).outputs()
    return P.indptr.astype(np.int64), P.indices.astype(np.int32)


def hessian_pattern(F: Function, seeds: list[tuple[int, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) of the symmetric pattern of Σ w·F's Hessian, for weights on the outputs'
    numbers marked by seeds (record row, its live numbers: one for a scalar record), columns sorted."""
    op, in0, in1, count = F._op, F._in0, F._in1, len(F._op)
    live, wanted = np.zeros(count, np.bool_), np.zeros(count, np.bool_)
    masks: dict[int, np.ndarray] = {}

    def mask(row: int) -> np.ndarray:
        if row not in masks:
            masks[row] = np.zeros(F._plans[int(in0[row])].size, np.bool_)
        return masks[row]

    for row, marked in seeds:
        if IS_ARRAY[op[row]]:
            mask(row)[marked] = True
        else:
            live[row] |= bool(marked.any())
    arrays, elems = np.flatnonzero(IS_ARRAY[op]).tolist(), np.flatnonzero(op == ELEM)
    for p in F._plans:
        if RULE[p.code].reads == "scalars":
            wanted[p.places] = True  # every array record's rows are made: its scalar records' sets too
    hi = count
    for i in [*arrays[::-1], -1]:
        if i + 1 < hi:
            reach(op, in0, in1, DEPENDS_A, DEPENDS_B, SECOND_AA, SECOND_AB, SECOND_BB, live, wanted, i + 1, hi)
            e = elems[np.searchsorted(elems, i + 1):np.searchsorted(elems, hi)]
            for row, k in zip(in0[e[live[e]]].tolist(), in1[e[live[e]]].tolist(), strict=True):
                mask(row)[k] = True
        if i >= 0 and i in masks and masks[i].any():
            _back(F, F._plans[int(in0[i])], masks[i], live, mask)
        hi = i
    union = Union(F.n_inputs)

    def second(sets: Sets, i: int) -> bool:
        part = _second(sets, F._plans[int(in0[i])], masks[i]) if i in masks and masks[i].any() else None
        if part is not None:
            union.add(part)
        return union.full()

    sets = Sets(F, wanted, after=second)
    if not sets.stopped:
        union.add(scalar_pairs(F.n_inputs, op, in0, in1, live, sets.start, sets.size, sets.pool))
    return union.csr()


def scalar_pairs(n: int, op: np.ndarray, in0: np.ndarray, in1: np.ndarray, live: np.ndarray, start: np.ndarray,
                 size: np.ndarray, pool: np.ndarray) -> Any:
    """The n x n pattern of the live scalar records' second partials: their pairs of records (record_pairs) as one
    product of those records' index sets (start, size, pool: kernels/sparsity.py's)."""
    u, w = RECORD_PAIRS(op, in0, in1, live, SECOND_AA, SECOND_AB, SECOND_BB)
    return (set_rows(n, u, start, size, pool).T @ set_rows(n, w, start, size, pool)).tocsr()


def set_rows(n: int, rows: np.ndarray, start: np.ndarray, size: np.ndarray, pool: np.ndarray) -> Any:
    """The index sets of scalar records ``rows`` (start, size, pool: kernels/sparsity.py's) as CSR rows of n columns."""
    indptr, indices = gather_rows(rows, start, size, pool, *rows_room(rows, size))
    return scipy_sparse().csr_matrix((np.ones(len(indices), np.bool_), indices, indptr), shape=(len(rows), n))


def products(P: Any, u: np.ndarray, w: np.ndarray) -> Any:
    """The n x n pattern of set(u[t]) x set(w[t]) for every t, the sets P's rows (CSR, n columns): P[u]ᵀ P[w], so
    scipy's sparse product makes each entry once, where a list of every pair (a set of 1,001 inputs an element: 10^4
    elements, 10^10 pairs) ran out of memory; rows of one set stand for each other (distinct_pairs)."""
    u, w = distinct_pairs(P.indptr, P.indices, u, w)
    return (P[u].T @ P[w]).tocsr()


class Union:
    """A boolean n x n pattern made of many parts (scipy.sparse), merged two by two as they come: a part joins the one
    before it while that one is at most twice its size, so an entry is copied O(log parts) times, not once a part."""

    def __init__(self, n: int):
        self.n, self.parts = n, [scipy_sparse().csr_matrix((n, n), dtype=np.bool_)]

    def add(self, part: Any) -> None:
        self.parts.append(part)
        while len(self.parts) > 1 and self.parts[-2].nnz <= 2 * self.parts[-1].nnz:
            top = self.parts.pop()
            self.parts[-1] = self.parts[-1] + top

    def full(self) -> bool:
        """Whether every pair is in: nothing more can join (a GRU's weights meet each other in two steps)."""
        return max(part.nnz for part in self.parts) == self.n * self.n

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """(indptr, indices) of the union, each row's columns sorted."""
        P = sum(self.parts[1:], self.parts[0]).tocsr()
        P.sort_indices()
        return P.indptr.astype(np.int64), P.indices.astype(np.int32)


def _back(F: Function, p: Plan, marked: np.ndarray, live: np.ndarray, mask: Any) -> None:
    """Mark what array record p's live elements depend on: scalar records, or elements of earlier records."""
    rule = RULE[p.code]
    if rule.reads == "scalars":
        live[p.places[marked]] = True
    elif rule.reads == "elements":
        mask(p.inputs[0].record)[p.places[marked]] = True
    elif rule.reads == "callee":
        J = F._callees[p.places[0]]._call_pattern()
        _mark(F, p.inputs[0], np.unique(J[marked].indices), mask)
    elif rule.reads == "views":
        for v, local in zip(p.inputs, rule.sparsity(p), strict=True):
            if local is not None:
                rows, cols = local
                reached = marked if cols is None else cols[marked] if rows is None else cols[marked[rows]]
                _mark(F, v, reached, mask)


def _mark(F: Function, v: View, elements: np.ndarray, mask: Any) -> None:
    """Mark elements (a mask or places, of view v) live in v's record."""
    if v == whole(v.record, F._plans[int(F._in0[v.record])]):
        mask(v.record)[elements] = True
    else:
        mask(v.record)[places(v).reshape(-1)[elements]] = True


def call_pairs(F: Any, marked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The input pairs of Function F's Hessian pattern for the outputs marked (a call record of F)."""
    indptr, indices = hessian_pattern(F, [(row, marked[start:stop]) for row, start, stop in F._out_pieces])
    return np.repeat(np.arange(F.n_inputs), np.diff(indptr)), indices.astype(np.int64)


def _second(sets: Sets, p: Plan, marked: np.ndarray) -> Any:
    """The input pairs array record p's live elements make, an n x n pattern (None: none): set(u) x set(w) for each
    pair (u, w) of its views' elements that its rule (or its callee's Hessian pattern) names (products)."""
    rule = RULE[p.code]
    found: tuple[np.ndarray, np.ndarray] | None
    if rule.reads == "callee":
        found = sets.F._callees[p.places[0]]._call_pairs(marked)
        P = sets.view(p.inputs[0])
    elif rule.reads == "views":
        found = rule.second_pairs(p, marked)
        P = None if found is None else scipy_sparse().vstack([sets.view(v) for v in p.inputs], format="csr")
    else:
        return None
    return None if found is None else products(P, *found)
