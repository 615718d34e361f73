"""The symbolic sweeps: a derivative emitted as records, so that the gradient of a tape is a tape.

The numeric sweeps (kernels/_sweeps.py) turn records into numbers. ``reverse`` and ``forward``
here run the same passes over records [start, stop) of a storage but append records instead:
each contribution ``adj[in] += g * da`` (reverse) or ``dot[i] += da * dot[in]`` (forward) is
recorded with the op's partials as records (tape/symbolic/_partials.py, generated from the op table), so
the result can be replayed, saved, mapped and differentiated again like any recorded program.

The structural-zero rule of every sweep holds as structure: nothing is recorded for a record
no adjoint (tangent) reaches, for a record that reaches no wanted input (``needed``), for a
comparison, for a partial that is the number 0, and a select sends its adjoint to each input
through a select of its own (``where(cond, g, 0)``), so at replay the unchosen side gets a zero.
The rule at replay is the op mul_nz: every product ``g * p`` is one record that gives 0 where a
factor is 0, as the numeric sweeps skip every product with a zero factor. So an inf/NaN partial
meets a zero adjoint or tangent and gives 0, whatever made the zero: a select's unchosen side, a
zero seed (w, v), or arithmetic (x * sqrt(y) at x = 0: adjoint 0 times sqrt's inf at y = 0).

Function.grad_function, vjp_function and jvp_function (tape/function/function.py) copy a Function's
records first and append these sweeps; tape/symbolic/nest.py runs them over the records of an inner
function recorded on the outer tape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tape.kernels.array_ops import RULE
from tape.kernels.ops import ARRAY_BASE, ELEM, HAS_INPUT, IS_COMPARISON, SELECT, TWO_RECORDS, USES_POOL
from tape.records._recorders import Var
from tape.records.storage import Storage
from tape.symbolic import array_adjoint as arrays
from tape.symbolic._partials import PARTIALS
from tape.symbolic.partial_helpers import Value, constant, mul_nz, where


class Sweep:
    """Appends a symbolic sweep's records to storage t."""

    def __init__(self, t: Storage):
        self.t = t
        self._zero: Var | None = None
        self.start = len(t)
        self.arrays = arrays.Emit(t)  # array records' rules as records

    def var(self, row: int) -> Var:
        return Var._at(self.t._segment(), row)

    @property
    def zero(self) -> Var:
        """One constant record 0.0 for every select of this sweep."""
        if self._zero is None or self._zero._index >= len(self.t):
            self._zero = constant(self.t, 0.0)
        return self._zero

    def times(self, g: Value, p: Value | None, partial_first: bool = False) -> Value | None:
        """g * p as one mul_nz record, 0 at replay where a factor is 0 (None: structurally zero; a
        factor that is the number 1 passes the other through). ``partial_first``: recorded as p * g,
        the tangent sweep's order (of two NaNs, a product keeps the first one's sign)."""
        if p is None or g is None:
            return None
        if type(p) is not Var:
            if p == 0.0:
                return None
            if type(g) is not Var:
                return g * p or None
            if p == 1.0:
                return g
        elif type(g) is not Var:
            if g == 0.0:
                return None
            if g == 1.0:
                return p
        return mul_nz(p, g) if partial_first else mul_nz(g, p)

    @staticmethod
    def settled(x: Value) -> Value:
        """x + 0.0 (one add_c record): -0.0 becomes +0.0, anything else keeps its bits. The numeric
        sweeps start every sum at +0.0 (a first write is ``d + 0.0``, a tangent ``t = 0.0; t +=``) and
        skip each product with a zero factor; a recorded sum starts at its first term and adds the 0
        of every such product. The two agree as numbers at every record (NaNs included, the same
        products in the same order), so only an exact zero's sign can differ, and only where the
        recorded sum's terms are all zeros with a -0.0 among them (a partial that is -0.0 at
        replay, passed through where the factor is the number 1, or an underflow). Adding +0.0 once
        to each result gives the numeric sweep's bits: one record per result, not one per sum."""
        return x + 0.0

    def plus(self, x: Value | None, y: Value | None) -> Value | None:
        if x is None or y is None:
            return y if x is None else x
        return x + y

    def chosen(self, select: int, g: Value, side: int) -> Value:
        """g where select's condition (the record just before it) chose this side, else 0."""
        cond = self.var(select - 1)
        return where(cond != 0.0, g, self.zero) if side == 0 else where(cond == 0.0, g, self.zero)

    def partials(self, i: int, want_a: bool, want_b: bool) -> tuple[Value | None, Value | None]:
        t = self.t
        code = int(t._op[i])
        a = self.var(int(t._in0[i]))
        b = self.var(int(t._in1[i])) if TWO_RECORDS[code] else None
        c = float(t._consts[t._in1[i]]) if USES_POOL[code] else None
        return PARTIALS[code](a, b, self.var(i), c, want_a, want_b)


def _reads(t: Storage, i: int, code: int) -> list[int]:
    """The records record i reads that carry a derivative ([] for leaves, comparisons, selects' conditions)."""
    if code >= ARRAY_BASE:
        return arrays.sources(t, i) if RULE[code].derivative else []
    if code == ELEM:
        return [int(t._in0[i])]
    if not HAS_INPUT[code] or IS_COMPARISON[code]:
        return []
    return [int(t._in0[i]), int(t._in1[i])] if TWO_RECORDS[code] else [int(t._in0[i])]


def needed(t: Storage, start: int, stop: int, wanted: Any) -> np.ndarray:
    """needed[i]: record i depends on a wanted row (through records [start, stop)); comparisons
    carry no derivative."""
    need = np.zeros(max(len(t), stop), np.bool_)
    need[np.asarray(list(wanted), np.int64)] = True
    op = t._op
    for i in range(start, stop):
        if not need[i]:
            need[i] = any(need[j] for j in _reads(t, i, int(op[i])))
    return need


def reverse(sweep: Sweep, start: int, stop: int, seeds: list[tuple[int, Value]], wanted: Any) -> dict[int, Value]:
    """Adjoints of the wanted rows: a reverse sweep over records [start, stop), seeded with (row,
    adjoint) pairs, recorded; rows not reached are absent. In the numeric sweep's order (records
    last to first, in0 then in1), so the gradient is its sums in its order. An array record's
    adjoint is array records (tape/symbolic/array_adjoint.py)."""
    t = sweep.t
    wanted = set(wanted)
    need = needed(t, start, stop, wanted)
    adj: dict[int, Value] = {}
    elements: dict[int, dict[int, Value]] = {}  # array record -> {place: adjoint} sent by its elem readers
    for row, g in seeds:
        if need[row]:
            adj[row] = sweep.plus(adj.get(row), g)  # type: ignore[assignment]
    op, in0, in1 = t._op, t._in0, t._in1
    for i in range(stop - 1, start - 1, -1):
        code = op[i]
        if code >= ARRAY_BASE:
            g = arrays.total(sweep.arrays, i, adj, elements) if need[i] else None
            if g is not None:
                if i in wanted:
                    adj[i] = g
                arrays.back(sweep.arrays, i, g, need, adj)
            continue
        if i not in adj or not _reads(t, i, code):
            continue
        g = adj[i] if i in wanted else adj.pop(i)
        if code == ELEM:  # an element of an array record (a leaf to the scalar kernels)
            sent = elements.setdefault(int(in0[i]), {})
            sent[int(in1[i])] = sweep.plus(sent.get(int(in1[i])), g)  # type: ignore[assignment]
            continue
        j, k = int(in0[i]), int(in1[i])
        two = bool(TWO_RECORDS[code])
        if code == SELECT:
            contributions = [(j, sweep.chosen(i, g, 0) if need[j] else None),
                             (k, sweep.chosen(i, g, 1) if need[k] else None)]
        else:
            da, db = sweep.partials(i, bool(need[j]), two and bool(need[k]))
            contributions = [(j, sweep.times(g, da) if need[j] else None),
                             (k, sweep.times(g, db) if two and need[k] else None)]
        for row, c in contributions:
            if c is not None:
                adj[row] = sweep.plus(adj.get(row), c)  # type: ignore[assignment]
    for row in wanted:  # an array input read only by elem records
        if row in elements or row in sweep.arrays.runs:
            adj[row] = arrays.total(sweep.arrays, row, adj, elements)
    return {row: sweep.settled(adj[row]) for row in wanted if row in adj}  # never -0.0, as the numeric sweep


def used(t: Storage, start: int, stop: int, outputs: Any) -> np.ndarray:
    """used[i]: an output depends on record i through records [start, stop)."""
    use = np.zeros(max(len(t), stop), np.bool_)
    use[np.asarray(list(outputs), np.int64)] = True
    op = t._op
    for i in range(stop - 1, start - 1, -1):
        if use[i]:
            use[_reads(t, i, int(op[i]))] = True
    return use


def forward(sweep: Sweep, start: int, stop: int, tangents: dict[int, Value], outputs: Any) -> dict[int, Value]:
    """Tangents of the records [start, stop) that outputs depend on, given those of some rows
    (absent: zero), recorded; in the numeric tangent sweep's order (in0's term, then in1's)."""
    t = sweep.t
    dot = dict(tangents)
    use = used(t, start, stop, outputs)
    op, in0, in1 = t._op, t._in0, t._in1
    for i in range(start, stop):
        code = op[i]
        if not use[i] or i in tangents or not _reads(t, i, code):
            continue
        if code >= ARRAY_BASE:
            d = arrays.ahead(sweep.arrays, i, dot)
            if d is not None:
                dot[i] = d
            continue
        if code == ELEM:
            if int(in0[i]) in dot:
                dot[i] = arrays.element(sweep.arrays, dot[int(in0[i])], int(in1[i]))
            continue
        two = bool(TWO_RECORDS[code])
        ta, tb = dot.get(int(in0[i])), dot.get(int(in1[i])) if two else None
        if ta is None and tb is None:
            continue
        if code == SELECT:
            cond = sweep.var(i - 1)
            zero = sweep.zero
            dot[i] = where(cond != 0.0, zero if ta is None else ta, zero if tb is None else tb)
            continue
        da, db = sweep.partials(i, ta is not None, tb is not None)
        total = sweep.plus(sweep.times(ta, da, True), sweep.times(tb, db, True))
        if total is not None:
            dot[i] = total
    # an output's tangent as the numeric sweep's (a sum from +0.0, never -0.0), a leaf's its seed
    wanted = set(outputs)
    return {row: sweep.settled(d) if row in wanted and row not in tangents else d for row, d in dot.items()}
