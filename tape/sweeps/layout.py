"""A Function's arenas laid out by liveness: regions shared by records whose lifetimes never meet.

A value (or gradient) call of a Function runs its forward sweep, then (maybe) one or more reverse
sweeps. On that timeline a record's value lives from its forward step to its last reader: the
forward step of a later record, or the reverse step of a record whose partials read it (``mul``'s
and ``matmul``'s operands, ``exp``'s y; a ``sum``, ``join``, ``gather`` or ``pack`` reads none: each
kind's ``back_reads``, kernels/array_rule.py, all where a kind does not say). Its adjoint lives from
the reverse step of its last reader that the outputs depend on to its own reverse step; a record the
outputs do not depend on gets none. Records keep one offset for both arenas, so two records may
share a region when their values' lifetimes and their adjoints' lifetimes are both disjoint (the
first implies the second, see compact): the steps of a loop whose reverse reads no values (a
stencil) use the same few regions over and over, and one whose reverse reads them (a GRU) keeps
those and shares the rest. Constants, inputs, params and outputs keep regions of their own.

Fused runs (tape/sweeps/fusion.py) write their members at their first row and send adjoints at
their last; the lifetimes cover both that and the unfused sweeps (check_finite, debug_nans). The
tangent and second-order sweeps read every value after the forward: they need the recorded layout
(tape/function/array_replay.py expands a Function back to it before them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tape.kernels.array_ops import ACONSTANT, INPUT, RULE
from tape.kernels.ops import ELEM
from tape.sweeps import live as _live
from tape.sweeps.driver import Plan

SCAN = 32  # regions of a size class that a record looks at, at most


def _reverse_reads(s: Any, p: Plan) -> tuple[bool, ...]:
    """For each of p's inputs, then p itself: whether p's reverse step reads that value (its kind says)."""
    return RULE[p.code].back_reads(p, tuple(bool(s._op[v.record] == ACONSTANT) for v in p.inputs))


def lifetimes(s: Any, runs: list[Any], outputs: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """(value from, value to, adjoint from, adjoint to) by plan: forward step r at time r, the seeds at n,
    reverse step r at 2n + 1 - r, forever 3n + 2; an adjoint that never lives has from > to.
    kept: the rows that live forever (inputs, params)."""
    n = len(s._op)
    seed, end = n, 3 * n + 2
    back = 2 * n + 1
    first, last, recompute = {}, {}, set()
    for run in runs:
        for k, r in enumerate(run.rows):
            first[r], last[r] = run.rows[0], run.rows[-1]
            if k < len(run.need) and run.need[k]:
                recompute.add(r)  # its inputs are read again by the run's reverse
    reached = _live.reaching(s._op, s._in0, s._in1, s._plans, [outputs])[0]
    life = np.empty((len(s._plans), 4), np.int64)
    for k, p in enumerate(s._plans):
        life[k] = first.get(p.row, p.row), p.row, end, back - p.row
    for p in s._plans:
        y = p.row
        sees = _reverse_reads(s, p)
        if y in recompute:
            sees = (True,) * len(p.inputs) + sees[-1:]
        for v, read in zip(p.inputs, sees, strict=False):
            x = int(s._in0[v.record])  # an array record's in0 is its plan's index
            life[x, 1] = max(life[x, 1], back - y if read else y)
            if reached[y] and RULE[p.code].derivative and s._op[v.record] != ACONSTANT:
                life[x, 2] = min(life[x, 2], back - last.get(y, y))
        if sees[-1]:
            life[s._in0[y], 1] = max(life[s._in0[y], 1], back - y)
    elems = np.flatnonzero(s._op == ELEM)
    if len(elems):
        at = s._in0[s._in0[elems]].astype(np.int64)
        np.maximum.at(life[:, 1], at, elems)
        hit = reached[elems]
        np.minimum.at(life[:, 2], at[hit], back - elems[hit])
    rows = np.array([p.row for p in s._plans], np.int64)
    code = np.array([p.code for p in s._plans], np.int64)
    forever = (code == ACONSTANT) | (code == INPUT) | np.isin(rows, kept)
    life[forever, :2] = 0, end
    life[np.isin(rows, outputs), 1] = end
    seeded = np.isin(rows, outputs) & (code != ACONSTANT)
    life[seeded, 2] = seed
    life[np.isin(rows, kept), 2:] = seed, end
    return life


def compact(s: Any, runs: list[Any], outputs: np.ndarray, kept: np.ndarray) -> tuple[list[Plan], int]:
    """s's plans with offsets shared where lifetimes allow, and the arena length they need: the first region
    handed out already that is as big as a record (at most twice) and whose values all died before the record's
    is born, else a new one; a region whose value the reverse sweep reads is closed to later records. Disjoint
    values make disjoint adjoints: a later record's value is born after the last reader of the earlier one,
    so its reverse step comes before the earliest contribution to the earlier one's adjoint (sharing checks it)."""
    life = lifetimes(s, runs, outputs, kept)
    n = len(s._op)
    open_: dict[int, list[list[int]]] = {}  # by size's bit length: regions [offset, size, when its last value dies]
    offsets, top = [], 0
    for k, p in enumerate(s._plans):
        born, dies, size = int(life[k, 0]), int(life[k, 1]), p.size
        bits = size.bit_length()
        near = [*open_.get(bits, [])[:SCAN], *open_.get(bits + 1, [])[:SCAN]]  # sizes within 2x (SCAN: no
        region = next((r for r in near if size <= r[1] <= 2 * size and born > r[2]), None)  # quadratic scan)
        if region is None:
            region = [top, size, -1]
            top += size
            open_.setdefault(bits, []).append(region)
        region[2] = max(region[2], dies)
        if dies >= n:  # no later record's value can follow this one's
            open_[region[1].bit_length()].remove(region)
        offsets.append(region[0])
    return [p._replace(offset=o) for p, o in zip(s._plans, offsets, strict=True)], top


def sharing(plans: list[Plan], life: np.ndarray) -> list[tuple[int, int]]:
    """Pairs of plans whose regions overlap while their values or their adjoints live at once (none, for a
    layout compact made): a check for tests, quadratic in plans."""
    bad = []
    for i, p in enumerate(plans):
        for j in range(i):
            q = plans[j]
            if p.offset < q.offset + q.size and q.offset < p.offset + p.size and p.size and q.size:
                values = life[i, 0] <= life[j, 1] and life[j, 0] <= life[i, 1]
                adjoints = life[i, 2] <= life[i, 3] and life[j, 2] <= life[j, 3] and (
                    life[i, 2] <= life[j, 3] and life[j, 2] <= life[i, 3])
                if values or adjoints:
                    bad.append((j, i))
    return bad
