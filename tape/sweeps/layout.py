"""A Function's arenas laid out by liveness: regions shared by records whose lifetimes never meet.

A value (or gradient) call of a Function runs its forward sweep, then (maybe) one or more reverse
sweeps. On that timeline a record's value lives from its forward step to its last reader: the
forward step of a later record, or the reverse step of a record whose partials read it (``mul``'s
and ``matmul``'s operands, ``exp``'s y; a ``sum``, ``join``, ``gather`` or ``pack`` reads none: each
kind's ``back_reads``, kernels/array_rule.py, all where a kind does not say). Its adjoint lives from
the reverse step of its last reader that the outputs depend on to its own reverse step; a record the
outputs do not depend on gets none. Each arena is laid out by its own lifetimes: two records share a value region
where their values never live at once (compact), an adjoint region where their adjoints never do (adjoints): the
steps of a loop whose reverse reads no values (a stencil) use the same few regions over and over, and one whose reverse
reads them (a GRU) keeps those values, while their adjoints, each alive for a step or so of the reverse, take a few
regions between them. Constants, inputs, params, outputs and small packs keep value regions of their own; the
constants no sweep sends an adjoint to lie past the adjoint arena's end.

Fused runs (tape/sweeps/fusion.py) write their members at their first row and send adjoints at
their last; the lifetimes cover both that and the unfused sweeps (check_finite, debug_nans). The
tangent and second-order sweeps read every value after the forward: they need the recorded layout
(tape/function/array_replay.py expands a Function back to it before them).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from tape.kernels.array_ops import ACONSTANT, INPUT, RULE
from tape.kernels.ops import ELEM
from tape.sweeps import live as _live
from tape.sweeps import plans as _table
from tape.sweeps.driver import Plan
from tape.sweeps.encoding import IS_EXACT

SMALL = 256  # elements up to which a pack of scalar records keeps a region of its own (2 KB at most): a small vector
# made between a compiled table's rows then shares no region with them, so the table runs on past it
# (tape/sweeps/compiled.grouped; the mixture of bench/array_programs.py, one table a sweep, not four)
PACK = np.array([rule.reads == "scalars" for rule in RULE])  # by opcode


DERIVATIVE = np.array([rule.derivative for rule in RULE])  # by opcode
RECORDS = [cols.start for cols in _table.VIEWS]  # the plan table's columns of its views' records (-1: none)


def _reverse_reads(s: Any, p: Plan) -> tuple[bool, ...]:
    """For each of p's inputs, then p itself: whether p's reverse step reads that value (its kind says)."""
    return RULE[p.code].back_reads(p, tuple(bool(s._op[v.record] == ACONSTANT) for v in p.inputs))


def _reads_by_plan(s: Any, table: np.ndarray, constant: np.ndarray) -> np.ndarray:
    """By plan: for each of its 3 views, then itself, whether its reverse step reads that value (its kind's
    back_reads, asked once per distinct (code, axes, views, which are constants): all it depends on)."""
    present = table[:, RECORDS] >= 0
    keys = np.column_stack([table[:, [0, 3]], present, constant])
    first, which = _table.distinct(keys)
    sees = np.zeros((len(first), 4), np.bool_)
    for j, k in enumerate(first.tolist()):
        reads = _reverse_reads(s, s._plans[k])
        sees[j, :len(reads) - 1], sees[j, 3] = reads[:-1], reads[-1]
    return sees[which]


DEPTH = 6  # members a back stretch computes again in a chain, at most (the mixture's d, z, 0.5 z: 3; its logsumexp's
# operand, taken into the stretch: 6)


def again(s: Any, table: np.ndarray) -> np.ndarray:
    """By plan: whether a back stretch may compute its value again rather than read it (tape/sweeps/stretches.py): an
    exact elementwise op whose views are smaller records than itself (a number, a line: read again from cache) or, up
    to DEPTH deep, such values again. lifetimes keeps the smaller ones alive while its value is read back."""
    code, size = table[:, 0], _table.regions(s._plans)[2]
    records = table[:, RECORDS[:2]]
    x = np.where(records >= 0, s._in0[np.maximum(records, 0)], 0).astype(np.int64)  # (each view's record's plan)
    small = (records < 0) | (size[x] < size[:, None])
    exact = IS_EXACT[code]
    ok = exact & small.all(1)
    for _ in range(DEPTH - 1):
        ok = exact & (small | ok[x]).all(1)
    return ok


def _kept_again(s: Any, table: np.ndarray, life: np.ndarray, n: int) -> None:
    """Keep alive, as long as a value that a back stretch may compute again is read back, the smaller values it is
    computed from (again's): the time each such value is needed, passed down its chain."""
    ok, records = again(s, table), table[:, RECORDS[:2]]
    x = np.where(records >= 0, s._in0[np.maximum(records, 0)], 0).astype(np.int64)
    size = _table.regions(s._plans)[2]
    small = (records >= 0) & (size[x] < size[:, None]) & ok[:, None]
    big = (records >= 0) & ~small & ok[:, None]
    need = np.where(ok & (life[:, 1] > n), life[:, 1], -1)
    for _ in range(DEPTH - 1):
        np.maximum.at(need, x[big], np.broadcast_to(need[:, None], x.shape)[big])
    np.maximum.at(life[:, 1], x[small], np.broadcast_to(need[:, None], x.shape)[small])


def lifetimes(s: Any, runs: list[Any], outputs: np.ndarray, kept: np.ndarray, rowed: Sequence[Any] = ()
              ) -> np.ndarray:
    """(value from, value to, adjoint from, adjoint to) by plan: forward step r at time r, the seeds at n,
    reverse step r at 2n + 1 - r, forever 3n + 2; an adjoint that never lives has from > to.
    kept: the rows that live forever (inputs, params); rowed: fused runs whose members run as rows (compiled.kept's
    others), each member and each record it reads then living to the run's last row at least, and its adjoint (where it
    has one) from that row's reverse step at most. NumPy over s's plan table (s._table)."""
    n, table = len(s._op), s._table
    if len(table) != len(s._plans):
        raise ValueError(f"a plan table of {len(table)} rows for {len(s._plans)} plans")
    seed, end = n, 3 * n + 2
    back = 2 * n + 1
    rows, code = table[:, 1], table[:, 0]
    first, last, recompute = rows.copy(), rows.copy(), np.zeros(len(table), np.bool_)
    if runs:  # every run's rows at once (a Python step per run took 1.9 of arrays4k's 6.7 CPU-ms here)
        order = tuple(map(attrgetter("rows"), runs))
        count = _table.lengths(order)
        ran = _table.ints(tuple(itertools.chain.from_iterable(order)))
        at, ends = s._in0[ran].astype(np.int64), np.cumsum(count)  # an array record's in0: its plan
        first[at], last[at] = np.repeat(ran[ends - count], count), np.repeat(ran[ends - 1], count)
        members = s._in0[np.concatenate(tuple(map(attrgetter("members"), runs)))].astype(np.int64)
        recompute[members[np.concatenate(tuple(map(attrgetter("need"), runs)))]] = True  # its inputs: read again by
        # its reverse
    reached = _live.reaching(s._op, s._in0, s._in1, s._plans, [outputs])[0]
    life = np.column_stack([first, rows, np.full(len(table), end), back - rows])
    records = table[:, RECORDS]
    present = records >= 0
    constant = present & (s._op[np.maximum(records, 0)] == ACONSTANT)
    sees = _reads_by_plan(s, table, constant)
    sees[:, :3] |= recompute[:, None]
    reader, j = np.nonzero(present)  # each view: its plan, which view
    x = s._in0[records[reader, j]].astype(np.int64)  # the plan of the record it reads
    y = rows[reader]
    np.maximum.at(life[:, 1], x, np.where(sees[reader, j], back - y, y))
    sends = reached[y] & DERIVATIVE[code[reader]] & ~constant[reader, j]
    np.minimum.at(life[:, 2], x[sends], back - last[reader[sends]])
    life[sees[:, 3], 1] = np.maximum(life[sees[:, 3], 1], back - rows[sees[:, 3]])
    _kept_again(s, table, life, n)
    elems = np.flatnonzero(s._op == ELEM)
    if len(elems):
        at = s._in0[s._in0[elems]].astype(np.int64)
        np.maximum.at(life[:, 1], at, elems)
        hit = reached[elems]
        np.minimum.at(life[:, 2], at[hit], back - elems[hit])
    if rowed:  # (no region taken inside such a run: its rows are a stretch each way, whose pass reads a region a
        # member stores at other indices, and reads the last member's adjoint where a view's adds would go; so an
        # adjoint such a run sends to lives from its last row's reverse step)
        held = [np.concatenate([run.members, run.reads]) for run in rowed]
        ends = np.repeat(np.array([run.rows[-1] for run in rowed], np.int64), _table.lengths(held))
        at = s._in0[np.concatenate(held)].astype(np.int64)
        np.maximum.at(life[:, 1], at, ends)
        sent = life[at, 2] <= life[at, 3]
        np.minimum.at(life[:, 2], at[sent], back - ends[sent])
    forever = (code == ACONSTANT) | (code == INPUT) | np.isin(rows, kept)
    life[forever, :2] = 0, end
    life[np.isin(rows, outputs), 1] = end
    seeded = np.isin(rows, outputs) & (code != ACONSTANT)
    life[seeded, 2] = seed
    life[np.isin(rows, kept), 2:] = seed, end
    return life


def compact(s: Any, runs: list[Any], outputs: np.ndarray, kept: np.ndarray, rowed: Sequence[Any] = (),
            life: np.ndarray | None = None) -> tuple[list[Plan], int]:
    """s's plans with offsets shared where their values' lifetimes allow, and the value arena's length they need.
    Records of one size class (a power of 2) share regions: each record, in order of birth, takes the region of the
    record of its class that died first among those whose regions are free (dead before it is born, no later record in
    it), else a new one; so a class takes as many regions as most of its values live at once (a region whose value the
    reverse sweep reads never frees), each as big as the most it holds (sharing checks it)."""
    life = lifetimes(s, runs, outputs, kept, rowed) if life is None else life
    n = len(s._op)
    code, _, size = _table.regions(s._plans)
    born, dies = life[:, 0], life[:, 1]
    alone = ((size <= SMALL) & PACK[code]) | ((born <= 0) & (dies >= n))  # a region of its own: small packs, and
    # what lives throughout (0-d constants: arrays4k's 2,000 of 7,600 plans)
    offsets, end, _ = place(size, born, dies, alone, np.zeros(len(size), np.bool_))
    return _table.relaid(s._plans, offsets), end


def laid(s: Any, runs: list[Any], outputs: np.ndarray, kept: np.ndarray, rowed: Sequence[Any] = ()
         ) -> tuple[list[Plan], int, np.ndarray, int]:
    """(compact's plans, the value arena's length, adjoints' offset by plan, the adjoint arena's length) on one
    lifetimes'."""
    life = lifetimes(s, runs, outputs, kept, rowed)
    return *compact(s, runs, outputs, kept, rowed, life), *adjoints(s, runs, outputs, life)


def adjoints(s: Any, runs: list[Any], outputs: np.ndarray, life: np.ndarray) -> tuple[np.ndarray, int]:
    """(offset by plan in the adjoint arena, its length) for adjoints laid out by their own lifetimes (life's adjoint
    columns), apart from the values': a kept value's adjoint takes room only from its first reverse reader's step to
    its own (bench/array_programs.py's GRU: 643,123 -> 20,033 elements). A constant a fused run reads lives from the
    run's reverse step (its kernels send to every view); one no sweep sends to (_bare) lies past the arena's end; any
    other adjoint that never lives holds a region at its own reverse step. Small packs keep regions of their own
    (compact's rule, for the back walks' tables)."""
    n, table = len(s._op), s._table
    back, rows = 2 * n + 1, table[:, 1]
    born, dies = life[:, 2].copy(), life[:, 3].copy()
    if runs:  # (every run's reads at once)
        reads = [run.reads for run in runs]
        ends = np.repeat(np.array([run.rows[-1] for run in runs], np.int64), _table.lengths(reads))
        np.minimum.at(born, s._in0[np.concatenate(reads)].astype(np.int64), back - ends)
    code, _, size = _table.regions(s._plans)
    bare = _bare(s, runs, outputs)
    never = (born > dies) & ~bare
    born[never] = dies[never] = back - rows[never]
    alone = bare | ((size <= SMALL) & PACK[code])
    offsets, _, end = place(size, born, dies, alone, bare)
    return offsets, end


def place(size: np.ndarray, born: np.ndarray, dies: np.ndarray, alone: np.ndarray,
          bare: np.ndarray) -> tuple[np.ndarray, int, int]:
    """(offset by plan, the arena's length, its length before the regions of bare plans) for plans of these sizes
    living from born to dies (compact's rule; alone: a region of its own each, bare: such plans' regions last where a
    region holds only them). A plan not alone must live (born <= dies): else two such could take each other's."""
    if (born > dies)[~alone].any():
        raise ValueError("tape: a plan that never lives takes a region of its kind (place it alone)")
    kind = np.frexp(size)[1]  # (an int's bit length)
    came = _freed(kind, born, dies, alone)
    for pairs in (kind // 2, (kind + 1) // 2):  # then a region, after its last value dies, to one of the class beside
        at = _first(came)  # (attention's arena 86,146 -> 77,954 elements, the first-fit loop's)
        last = np.zeros(len(size), np.int64)
        np.maximum.at(last, at, dies)
        came = np.maximum(came, _freed(pairs, born, last, alone | (came >= 0)))
    at = _first(came)
    most = np.zeros(len(size), np.int64)
    np.maximum.at(most, at, size)
    only = np.ones(len(size), np.bool_)
    np.logical_and.at(only, at, bare)  # (a region of bare plans only; small ones stay among the rest: a loop's 0-d
    # constants, whose numbers the compiled tables read beside their rows)
    order = np.argsort(only, kind="stable")  # the regions in the order of their first plans, bare ones last
    offsets = np.empty_like(most)
    room = staggered(most)
    offsets[order] = np.cumsum(room[order]) - room[order]
    end = np.where(most > 0, offsets + most, 0)  # (no room past the last region)
    return offsets[at], int(end.max(initial=0)), int(end[~only].max(initial=0))


PAGE = 512  # elements of a 4 KB page: a load whose address matches an earlier store's in its last 12 bits waits for it
NEAR = 64  # (4K aliasing): regions of a length within NEAR of whole pages laid end to end start at nearly the same
# place of a page, and a pass storing to one while it reads another (Burgers' stretch, 4,096 elements) ran 6.5-8.3 ->
# 4.5 us CPU a call with them apart (s22's notes, stretch_variants.py)


def staggered(length: np.ndarray) -> np.ndarray:
    """Each region's room: its length, and for one of at least a PAGE within NEAR of whole pages, up to NEAR past them
    (so such regions end to end start NEAR apart in a page; Burgers' 4,096 elements 1.6% more, the LSTM's 1,024 6%)."""
    past = length % PAGE
    near = (length >= PAGE) & ((past < NEAR) | (past > PAGE - NEAR))
    return np.where(near, length + (NEAR - past) % PAGE, length)


def _bare(s: Any, runs: list[Any], outputs: np.ndarray) -> np.ndarray:
    """By plan: a constant whose adjoint region no sweep touches, so the adjoint arena can end before it (GRU's inputs,
    a regression's data matrix: 16 MB in the logistic's 18.4 of adjoints). The NumPy steps, the compiled tables, the
    stretches and call records send nothing to a constant (driver._wants, a view's WANT); a fused run's kernels send to
    every view they read, an elem record to its array: constants those read keep theirs, as do outputs (their
    seeds)."""
    touched = np.zeros(len(s._op), np.bool_)
    touched[outputs] = True
    touched[s._in0[s._op == ELEM]] = True
    if runs:
        touched[np.concatenate([run.reads for run in runs])] = True
    return (s._table[:, 0] == ACONSTANT) & ~touched[s._table[:, 1]]


def _first(came: np.ndarray) -> np.ndarray:
    """Each plan's region's first plan (came: _freed's), by pointer jumping: passes as many as the log of a region's
    plans."""
    at = np.where(came < 0, np.arange(len(came)), came)
    for _ in range(len(came).bit_length() + 1):  # (a chain of k plans ends in log2 k + 1 passes; a cycle never)
        if not (came[at] >= 0).any():
            return at
        at = at[at]
    raise ValueError("tape: plans that take each other's regions (a cycle: a layout bug)")


def _freed(kind: np.ndarray, born: np.ndarray, dies: np.ndarray, alone: np.ndarray) -> np.ndarray:
    """By plan, the plan of its kind whose region it takes, or -1 for a new region, by NumPy over all plans (the
    first-fit loop over them took arrays4k's compact 6 of 12 CPU-ms). A kind's plans in order of birth take freed
    regions in order of death: the k-th has taken r_k = min(r_(k-1) + 1, f_k) of them, f_k the count of its kind's dead
    before it is born (no more can be taken, and a free one is taken), so r_k = k + min(0, min over j <= k of f_j - j);
    the r-th it takes is the r-th to die."""
    plans = np.flatnonzero(~alone)
    span = int(max(born.max(initial=0), dies.max(initial=0))) + 2  # (a kind's times apart from the next kind's)
    start, end = kind[plans] * span + born[plans], kind[plans] * span + dies[plans]
    by_birth, by_death = plans[np.argsort(start, kind="stable")], plans[np.argsort(end, kind="stable")]
    start.sort()
    end.sort()
    first = np.searchsorted(start, kind[by_birth] * span)  # each one's kind's first in either order
    k = np.arange(len(plans)) - first + 1  # its place among its kind's, from 1
    dead = np.searchsorted(end, start, "left") - first  # f_k: its kind's that died before it is born
    least = np.minimum.accumulate(dead - k - 4 * len(plans) * kind[by_birth])  # (each kind below the one before)
    taken = k + np.minimum(0, least + 4 * len(plans) * kind[by_birth])
    takes = taken > np.where(k > 1, np.roll(taken, 1), 0)
    came = np.full(len(kind), -1)
    came[by_birth[takes]] = by_death[first[takes] + taken[takes] - 1]
    return came


def sharing(starts: np.ndarray, size: np.ndarray, life: np.ndarray) -> list[tuple[int, int]]:
    """Pairs of plans whose regions (from starts, of size) overlap while both live (life: (from, to) by plan, one
    that never lives has from > to): none for the values of a layout compact made (life's first two columns), nor for
    the adjoints adjoints laid out (its last two); a check for tests, quadratic in plans."""
    bad = []
    for i in range(len(size)):
        for j in range(i):
            if starts[i] < starts[j] + size[j] and starts[j] < starts[i] + size[i] and size[i] and size[j] and (
                    life[i, 0] <= life[i, 1] and life[j, 0] <= life[j, 1] and life[i, 0] <= life[j, 1] and
                    life[j, 0] <= life[i, 1]):
                bad.append((j, i))
    return bad
