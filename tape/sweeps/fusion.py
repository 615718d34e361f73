"""Fusion: runs of elementwise array records become one pass each (kernels' fused_*).

NumPy runs one op at a time over whole arrays, so a chain of k elementwise
records reads and writes memory k times. A Function finds its runs once, when
it is made (``value_and_grad(f)`` before its one reverse sweep): consecutive
elementwise records of one shape (1-d or 2-d), whose ops are cheap in Numba
(transcendentals stay with NumPy's SIMD loops, 8-40x faster than the C
library's), each reading earlier members whole, views of other records of
exactly that shape, or 0-d constants; a full sum right after the last member
joins the run. Only members read outside the run are written. Runs are found
among the records the Function's roots depend on (tape/sweeps/live.py): a dead record
neither joins nor breaks one (the forward computes it where it is), so the
runs, and the numbers, are the same with or without the dead records.
Measured (Rosenbrock, replayed value_and_grad): 2.5x faster than a NumPy call per record at
256 elements, where the per-record Python overhead dominates, 1.2x at 65,536, 1.5x at 10^6
(memory traffic); so every run of two or more records is fused.
A Run and the kernels that run it are tape/sweeps/fused_runs.py's; this module finds the runs and makes them.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator
from operator import attrgetter, itemgetter
from typing import Any, NamedTuple

import numpy as np

from tape.kernels.array_ops import ACONSTANT, ARRAY_KIND
from tape.kernels.ops import ARRAY_BASE, FUSIBLE, OPCODE, READS, SQUARE_READS
from tape.kernels.shaped import MEMBERS
from tape.sweeps import fused_numpy
from tape.sweeps import live as _live
from tape.sweeps.driver import SHORT_NAME, Plan, contiguous, whole
from tape.sweeps.fused_runs import Run, Shaped
from tape.sweeps.plans import at_least, indexed, ints, lengths, rows_of, same_plans

# a Tape's one reverse sweep fuses runs of arrays from this size: finding a run costs about 50 µs, which 10^4 elements
# do not win back (value_and_grad ms fused vs not: heat 10^4 x 500, 226 vs 183; stencil 10^5, 4.4 vs 5.5)
TAPE_RUNS = 2**15


def find(s: Any, outputs: set[int], roots: tuple[np.ndarray, ...] | None = None) -> list[Run]:
    """The runs of a Function's (or, without roots, a Tape's for one reverse sweep) array records worth
    fusing; with roots (a Function's inputs, params, checks), among the records that they and the
    outputs depend on. NumPy over the plans' fields, a Python step per distinct run structure, none per run or member
    (the loop over the plans it replaced, kept in tests/test_trace_passes.py, took 40 ms of the heat-pad program's
    tape.trace)."""
    n = getattr(s, "_n", len(s._op))  # a Tape's record arrays run past its records
    if roots is None:  # a Tape's one reverse sweep: among all its records, of big arrays only (0-d ones end runs)
        if at_least(s._plans, TAPE_RUNS) < 2:
            return []
        key = (n, TAPE_RUNS, s._op[:n].tobytes(), s._in0[:n].tobytes(), s._in1[:n].tobytes(), tuple(sorted(outputs)))
        found = KEPT.get(key)
        if found is not None and found.fits(s):
            return found.runs
        arrays = [p for p in s._plans if p.size >= TAPE_RUNS or not p.shape]
    table = _live.reads(s._op[:n], s._in0[:n], s._plans)
    if roots is None:
        live = np.ones(len(s._op), np.bool_)
    else:
        live = _live.reaching(s._op, s._in0, s._in1, s._plans, [np.array(sorted(outputs), np.int64), *roots],
                              table)[0]
        arrays = list(itertools.compress(s._plans, live[ints(tuple(map(itemgetter(1), s._plans)))]))  # in order
    members, count, summed, sums = _groups(s, arrays, live, n)
    runs = _runs(s, members, count, summed, sums, table, outputs, live, n) if len(count) else []
    if roots is None:
        if len(KEPT) >= KEPT_MOST:
            KEPT.clear()
        KEPT[key] = Kept.of(s, runs)
    return runs


class Kept(NamedTuple):
    """A tape's runs (find's, roots None) for the next tape of its structure: a loop calling tape.value_and_grad(f)
    records the same records each call (the 83-record 3-tap filter's find took 1.1 of its 4.5 CPU-ms a call). Kept by
    the records' op, in0 and in1, the outputs and TAPE_RUNS (KEPT's key), served where the tape's plans, borrowed
    records and recycled regions are equal too, and the numbers that find reads from the arena (the 0-d constants'
    views: a run's imm, a power's exponent) are the same bits."""

    plans: Any  # the tape's plans (a copy: a Pending's rows compared as bytes)
    borrowed: tuple[int, ...]
    freed: dict[int, int]
    places: np.ndarray  # where find read the arena
    numbers: bytes  # what it read there
    runs: list[Run]

    @classmethod
    def of(cls, s: Any, runs: list[Run]) -> Kept:
        places = ints(tuple(s._plans[s._in0[v.record]].offset + v.offset for p in s._plans for v in p.inputs
                            if not v.shape and s._op[v.record] == ACONSTANT))
        return cls(s._plans.copy(), tuple(s._borrowed), dict(s._freed), places, s._aval[places].tobytes(), runs)

    def fits(self, s: Any) -> bool:
        """Whether tape s (of the key's records) is of this structure, with the same numbers where find reads them."""
        return (type(self.plans) is type(s._plans) and same_plans(self.plans, s._plans) and  # (tape.jit's packs'
                # places: arrays, compared by their elements; by ==, which raised, every jit tape missed: the mixture's
                # find 0.33 ms a call)
                self.borrowed == tuple(s._borrowed) and self.freed == s._freed and
                self.numbers == s._aval[self.places].tobytes())


KEPT: dict[tuple, Kept] = {}
KEPT_MOST = 64  # structures kept, at most (cleared past it)


FITS = np.isin(ARRAY_KIND, ("unary", "binary")) & np.isin(SHORT_NAME, FUSIBLE)  # by array opcode
FUSED = np.array([OPCODE.get(name, -1) for name in SHORT_NAME], np.int64)  # an array opcode's in the fused kernels
SUM = np.array(ARRAY_KIND) == "sum"  # by array opcode


def _exact_power(s: Any, p: Plan) -> bool:
    """x ** c for a number c of fused_numpy.POWERS (2, 1, 0: exact in the kernels and in NumPy alike); any other power
    stays NumPy's step (its SIMD loop is not the kernels' C pow: np.std of 3,000 numbers had 144 gradient elements
    changed by fusion; and it is the faster)."""
    record, at, shape, _ = p.inputs[1]
    return not shape and s._op[record] == ACONSTANT and s._aval[s._plans[s._in0[record]].offset + at] in \
        fused_numpy.POWERS


def _groups(s: Any, arrays: list[Plan], live: np.ndarray, n: int) -> tuple[list[Plan], np.ndarray, np.ndarray,
                                                                            list[Plan]]:
    """(the members, their count by group, the groups a sum joins, those sums) of each run of two or more:
    consecutive array records (0-d constants skipped) that fit (unary or binary, FUSIBLE, a power only x ** 2, 1 or
    0, 1-d or 2-d), of one shape, with only dead records and 0-d constants between each and the next; a 0-d sum of the
    last member whole right after it joins (_sums asked of 0-d sums there only). A longer group is cut into runs of
    MEMBERS (a run's kernels are straight-line code per member)."""
    if len(arrays) < 2:
        return [], np.zeros(0, np.int64), np.zeros(0, np.int64), []
    code, rows, _, shapes, *_ = zip(*arrays, strict=True)
    code, rows, shape, ndim = ints(code), ints(rows), indexed(shapes)[1], lengths(shapes)
    op = s._op[:n]
    constants = np.flatnonzero(op == ACONSTANT)
    zero_d = np.zeros(n, np.bool_)  # the 0-d constants
    zero_d[constants] = lengths(tuple(map(itemgetter(3), map(s._plans.__getitem__, s._in0[constants].tolist())))) == 0
    blocking = np.zeros(n + 1, np.int64)  # live records other than 0-d constants before each row
    np.cumsum(live[:n] & ~zero_d, out=blocking[1:])
    b = np.flatnonzero((code != ACONSTANT) | (ndim != 0))  # (0-d constants between members: immediates)
    fits, at, same = FITS[code[b]] & ((ndim[b] == 1) | (ndim[b] == 2)), rows[b], shape[b]
    powers = np.flatnonzero(fits & (FUSED[code[b]] == OPCODE["pow"]))
    fits[powers] = [_exact_power(s, arrays[i]) for i in b[powers].tolist()]
    next_to = blocking[at[1:]] == blocking[at[:-1] + 1]  # only 0-d constants and dead records between
    link = fits[:-1] & fits[1:] & (same[:-1] == same[1:]) & next_to
    first = np.flatnonzero(fits & ~np.concatenate([[False], link]))
    last = np.flatnonzero(fits & ~np.concatenate([link, [False]]))
    pieces = (last - first) // MEMBERS + 1
    piece = np.arange(pieces.sum()) - np.repeat(np.cumsum(pieces) - pieces, pieces)  # (its place in its group)
    first = np.repeat(first, pieces) + MEMBERS * piece
    last = np.minimum(first + MEMBERS - 1, np.repeat(last, pieces))
    first, last = first[last > first], last[last > first]
    count = last - first + 1
    members = b[np.repeat(first - np.cumsum(count) + count, count) + np.arange(count.sum())]
    after = last[last + 1 < len(b)]
    after = after[next_to[after] & SUM[code[b[after + 1]]] & (ndim[b[after + 1]] == 0)]  # a 0-d sum right after
    joined = np.array(list(map(_sums, map(arrays.__getitem__, b[after + 1].tolist()),
                               map(arrays.__getitem__, b[after].tolist()))), np.bool_).reshape(-1)
    return (list(map(arrays.__getitem__, members.tolist())), count, np.searchsorted(last, after[joined]),
            list(map(arrays.__getitem__, b[after[joined] + 1].tolist())))


MADE: dict[tuple, tuple] = {}  # what a run's structure alone decides (_needed, _lags, twinned, _shape), by structure,
# in this process: a loop's steps are alike (heat-pad's 500 runs are one) and a program recorded afresh each call has
# the same ones each time (stencil5's 8 took 0.5 of find's 1.2 CPU-ms)
MADE_MOST = 2**12  # structures kept, at most (cleared past it)


def _cut(a: Any, starts: np.ndarray, stops: np.ndarray) -> Iterator[Any]:
    """a[starts[k]:stops[k]] for each k, by map (no Python step per slice)."""
    return map(a.__getitem__, map(slice, starts.tolist(), stops.tolist()))


def _runs(s: Any, members: list[Plan], count: np.ndarray, summed: np.ndarray, sums: list[Plan],
          table: tuple[np.ndarray, np.ndarray], outputs: set[int], live: np.ndarray, n: int) -> list[Run]:
    """The Runs of the groups. Each member's operands (a member whole: kind 0; a view of the run's shape: 1, its
    place and strides in ext; a 0-d constant: 2, its number in imm) by NumPy over every member at once; a group that
    reads a member otherwise, a view of another shape or a borrowed array is no run. What a run's structure alone
    decides (_needed, _lags, twinned, _shape) is found once per distinct structure (a loop's steps are alike:
    heat-pad's 500 runs are one) and the Runs made by map over columns: no Python step per run (find, min CPU-ms with
    GC off, against the loop per run: arrays4k's 799 runs 15.4 -> 14.2, 13.8 with MADE's structures known)."""
    groups = len(count)
    group = np.repeat(np.arange(groups), count)  # each member's
    code, rows, offsets, shapes, inputs, *_ = zip(*members, strict=True)
    rows, n_in = ints(rows), lengths(inputs)
    view_records, view_at, vshapes, strides = zip(*itertools.chain.from_iterable(inputs), strict=True)
    distinct, shape = indexed(shapes + vshapes)
    dims = lengths(distinct)
    shape, vshape = shape[:len(members)], shape[len(members):]
    record, at = ints(view_records), ints(view_at)
    member = np.repeat(np.arange(len(members)), n_in)  # each view's
    j = np.arange(len(member)) - np.repeat(np.cumsum(n_in) - n_in, n_in)  # its place among its member's views
    step = rows_of(strides, 2, lambda st: list(st[:2]))
    whole_steps = rows_of(tuple(distinct), 2, lambda sh: list(contiguous(sh)[:2]))
    of = np.full(n, -1, np.int64)  # a member's record: its group (the sum's too, for the readers)
    of[rows] = group
    slot = np.zeros(n, np.int64)
    slot[rows] = np.arange(len(members)) - np.repeat(np.cumsum(count) - count, count)
    vgroup, own = group[member], shape[member]
    mine = of[record] == vgroup
    kind = np.where(mine & (at == 0) & (vshape == own) & (step == whole_steps[own]).all(1), 0,
                    np.where((s._op[record] == ACONSTANT) & (dims[vshape] == 0), 2, 1))
    borrowed = np.isin(record, np.fromiter(getattr(s, "_borrowed", {}), np.int64))
    bad = np.bincount(vgroup[(kind == 1) & ((vshape != own) | mine | borrowed)], minlength=groups) > 0
    if bad.all():
        return []
    place = ints(tuple(map(itemgetter(2), s._plans)))[s._in0[record]] + at
    one_d = dims[own] == 1
    index = np.where(kind == 0, slot[record], 0)
    starts = {}
    for k in (1, 2):  # an ext's or imm's index: those of its kind before it in its group
        kth = (kind == k).astype(np.int64)
        before = np.cumsum(kth) - kth
        index = np.where(kind == k, before - before[np.searchsorted(vgroup, vgroup)], index)
        starts[k] = np.searchsorted(vgroup[kind == k], np.arange(groups + 1))
    ops = np.zeros((5, len(members)), np.int64)  # code, ka, ia, kb, ib
    ops[0], ops[3] = FUSED[ints(code)], 2  # a unary member's b: no operand, read as the number imm[0]
    ops[1 + 2 * j, member], ops[2 + 2 * j, member] = kind, index
    imm = np.zeros(groups + int((kind == 2).sum()))  # each group's numbers, then 0.0 (a unary's b)
    at_imm = starts[2] + np.arange(groups + 1)
    imm[np.arange(len(imm) - groups) + vgroup[kind == 2]] = s._aval[place[kind == 2]]
    ext_group = vgroup[kind == 1]
    spare = np.bincount(ext_group, minlength=groups) == 0  # a group without views: ext one row of zeros
    at_ext = starts[1] + np.concatenate([[0], np.cumsum(spare)])
    ext = np.zeros((at_ext[-1], 5), np.int64)  # place, row stride, element stride, lag, the place of its adjoints
    # (moved's; here the values' place) (a group after another)
    in_ext = np.arange(len(ext_group)) + (at_ext - starts[1])[ext_group]  # each view's row in ext
    ext[in_ext, :3] = np.column_stack([place, np.where(one_d, 0, step[:, 0]), np.where(one_d, step[:, 0],
                                                                                        step[:, 1])])[kind == 1]
    ext[:, 4] = ext[:, 0]
    ext_rows, ext_at = record[kind == 1], at[kind == 1]
    firsts, inverse = np.unique(ext_group * n + ext_rows, return_index=True, return_inverse=True)[1:]
    same_as = firsts[inverse.reshape(-1)] - starts[1][ext_group]  # the first ext in its group of the same record
    from_input = s._op[ext_rows] != ACONSTANT
    joined = np.zeros(groups, np.bool_)
    joined[summed] = True
    total_row, total_at = np.full(groups, -1), np.full(groups, -1)
    total_row[joined], total_at[joined] = ints(tuple(map(itemgetter(1), sums))), ints(tuple(map(itemgetter(2), sums)))
    of[total_row[joined]] = np.flatnonzero(joined)
    reader = np.repeat(np.arange(len(table[0]) - 1), np.diff(table[0]))
    read = table[1]
    outside = np.zeros(n, np.bool_)  # a member read by a record not in its run
    outside[read[(of[read] >= 0) & (of[reader] != of[read])]] = True
    written = np.where(outside[rows] | np.isin(rows, np.fromiter(outputs, np.int64)), ints(offsets), -1)
    watched = np.bincount(group, written >= 0, groups) > 0
    m_at = np.concatenate([[0], np.cumsum(count)])
    first = shape[m_at[:-1]]  # each group's shape
    sizes = rows_of(tuple(distinct), 2, lambda sh: list(sh[:2]))[first]
    n0, n1 = np.where(dims[first] == 1, 1, sizes[:, 0]), np.where(dims[first] == 1, sizes[:, 0], sizes[:, 1])
    apart = np.bincount(ext_group, ext[in_ext, 1] != n1[ext_group] * ext[in_ext, 2], groups) > 0
    n0, n1 = np.where(apart, n0, 1), np.where(apart, n1, n0 * n1)  # rows one after another: one row, in blocks of
    # 512 (a kernel call per row of 10 took 37 ms for 1,000 records of 200 x 10, 1-d 8 ms)
    structure = np.column_stack([ops.T, written >= 0])  # what a run's choices depend on, with its numbers
    views = np.column_stack([ext[in_ext, 1:3], ext_at, same_as, from_input])
    dead = np.flatnonzero(~live & (s._op >= ARRAY_BASE))
    last = np.where(joined, total_row, rows[m_at[1:] - 1])
    dead_at = np.searchsorted(dead, np.column_stack([rows[m_at[:-1]], last]))
    good = np.flatnonzero(~bad)
    e_at, ends = starts[1], good + 1

    def cut(a: Any, at: np.ndarray) -> Iterator[Any]:  # each good group's slice of a, by at
        return _cut(a, at[good], at[ends])

    keys = zip(*(map(np.ndarray.tobytes, cut(a, at)) for a, at in ((structure, m_at), (views, e_at), (imm, at_imm))),
               n0[good].tolist(), n1[good].tolist(), joined[good].tolist(), strict=True)
    distinct, which = indexed(tuple(keys))  # each good group's structure
    reps = np.full(len(distinct), len(good))
    np.minimum.at(reps, which, np.arange(len(good)))
    if len(MADE) > MADE_MOST:
        MADE.clear()
    made = []
    for key, g in zip(distinct, good[reps].tolist(), strict=True):
        found = MADE.get(key)
        if found is not None:
            made.append(found)
            continue
        ms, me, es, ee, x0 = m_at[g], m_at[g + 1], e_at[g], e_at[g + 1], at_ext[g]
        program = (*ops[:, ms:me], imm[at_imm[g]:at_imm[g + 1]], ext[x0:at_ext[g + 1]])
        code_, ka, ia, kb, ib = program[:5]
        view_rows, view_list = ext_rows[es:ee].tolist(), list(map(tuple, ext[x0:x0 + ee - es, :3].tolist()))
        need = _needed(code_, ka, ia, kb, ib, program[5][:-1].tolist())
        lags, ordered = _lags(view_list, view_rows, set(itertools.compress(view_rows, from_input[es:ee].tolist())),
                              int(n0[g]), int(n1[g]))
        made.append((need, np.array(lags, np.int64), ordered, fused_numpy.twinned(
            program[0], program[3], program[4], program[5], view_list), _shape(
                program, need, written[ms:me], bool(joined[g])) if ordered else None))
        MADE[key] = made[-1]
    need_, lags_, ordered_, twinned_, shapes = (list(z) for z in zip(*made, strict=True)) if made else ([],) * 5
    shaped_ = [None if one is None else Shaped.of(one) for one in shapes]  # (Shaped.made: one a shape)
    structure_of = np.full(groups, -1)
    structure_of[good] = which
    lag_at = np.concatenate([[0], np.cumsum(lengths(lags_))])  # each structure's lags in all of them
    v = np.flatnonzero(structure_of[ext_group] >= 0)  # the views of good groups
    ext[in_ext[v], 3] = np.concatenate([np.zeros(0, np.int64), *lags_])[
        lag_at[structure_of[ext_group[v]]] + v - e_at[ext_group[v]]]
    inputs_at = np.sort(firsts[from_input[firsts]])  # each group's inputs: its views' records, each once, in order
    ins_at = np.concatenate([[0], np.cumsum(np.bincount(ext_group[inputs_at], minlength=groups))])
    o_at = m_at + np.concatenate([[0], np.cumsum(joined)])  # each group's rows, its sum's after them
    order = np.insert(rows, m_at[1:][joined], total_row[joined]).tolist()
    pick = which.tolist()
    runs = list(map(Run._make, zip(
        map(tuple, cut(order, o_at)), zip(*(cut(ops[k], m_at) for k in range(5)), cut(imm, at_imm),
                                          cut(ext, at_ext), strict=True),
        map(np.ndarray.copy, map(need_.__getitem__, pick)), cut(written, m_at),
        map(tuple, cut(ext_rows[inputs_at].tolist(), ins_at)), zip(n0[good].tolist(), n1[good].tolist(), strict=True),
        total_row[good].tolist(), total_at[good].tolist(), cut(rows, m_at),
        map(frozenset, _cut(dead.tolist(), dead_at[good, 0], dead_at[good, 1])), map(twinned_.__getitem__, pick),
        watched[good].tolist(), map(ordered_.__getitem__, pick), map(shaped_.__getitem__, pick),
        cut(ext_rows, e_at), cut(written, m_at), total_at[good].tolist(), strict=True)))
    if getattr(s, "_freed", None):  # a recycling Tape (a Python step per run)
        runs = [run for run, end in zip(runs, last[good].tolist(), strict=True) if not _recycled(
            s, run.reads.tolist(), run.need, run.program[1], run.program[2], run.program[3], run.program[4], end)]
    return runs


def _sums(p: Plan, last: Plan) -> bool:
    return ARRAY_KIND[p.code] == "sum" and p.inputs[0] == whole(last.row, last) and not p.shape


def moved(runs: list[Run], before: list[Plan], after: list[Plan], in0: np.ndarray, back: np.ndarray | None = None
          ) -> list[Run]:
    """The runs find gave for plans ``before``, on their regions ``after`` (tape/sweeps/layout.py's compact), their
    adjoints at ``back`` (layout.adjoints; None: at the values' offsets): a layout moves regions, not what a run reads
    or computes (of find's choices only _lags reads offsets, and only differences within one record's region), so only
    where a run reads and writes in the arenas changes. By NumPy over every run's fields at once, cut back by map (a
    Python step per run took arrays4k's 5.9 CPU-ms; the loop is kept in tests/test_layout.py)."""
    if not runs:
        return []
    plan = in0.astype(np.int64)  # an array record's plan
    old = ints(tuple(map(attrgetter("offset"), before)))
    new = ints(tuple(map(attrgetter("offset"), after)))
    new_back = new if back is None else back
    f = dict(zip(Run._fields, zip(*runs, strict=True), strict=True))  # each field, by run
    exts = tuple(map(itemgetter(6), f["program"]))
    count, read = lengths(exts), lengths(f["reads"])
    at = np.cumsum(count) - count
    ext = np.concatenate(exts)  # (a copy)
    views = np.repeat(at, read) + np.arange(read.sum()) - np.repeat(np.cumsum(read) - read, read)  # (ext's first)
    reads = plan[np.concatenate(f["reads"])]
    ext[views, 0] += new[reads] - old[reads]
    ext[views, 4] = ext[views, 0] + new_back[reads] - new[reads]
    members = lengths(f["members"])
    ran, cuts = plan[np.concatenate(f["members"])], (np.cumsum(members) - members, np.cumsum(members))
    written = np.concatenate(f["live"]) >= 0
    total = ints(f["total"])
    summed = total >= 0
    total_at, total_back = np.full(len(runs), -1), np.full(len(runs), -1)
    total_at[summed], total_back[summed] = new[plan[total[summed]]], new_back[plan[total[summed]]]
    f["program"] = map(operator.add, map(itemgetter(slice(6)), f["program"]), zip(_cut(ext, at, at + count)))
    f["live"] = _cut(np.where(written, new[ran], -1), *cuts)
    f["adj_live"] = _cut(np.where(written, new_back[ran], -1), *cuts)
    f["total_at"], f["adj_total"] = total_at.tolist(), total_back.tolist()
    return list(map(Run._make, zip(*f.values(), strict=True)))


def _shape(program: tuple[np.ndarray, ...], need: np.ndarray, live: np.ndarray, summed: bool) -> tuple:
    """What a run's own kernels are generated from (kernels/codegen/shaped.py): each member's (opcode, whether
    x ** 2, ka, ia, kb, ib), which views step by one, the live members, the sum, the members the reverse
    recomputes, the members with adjoints from outside, and whether a sum's adjoint seeds the last."""
    code, ka, ia, kb, ib, imm, ext = program
    members = tuple((int(code[k]), fused_numpy.square(code, kb, ib, imm, k), int(ka[k]), int(ia[k]), int(kb[k]),
                     int(ib[k])) for k in range(len(code)))
    written = tuple(bool(x) for x in live >= 0)
    return members, tuple(bool(x) for x in ext[:, 2] == 1), written, summed, tuple(bool(x) for x in need), written, \
        summed


LAGS = fused_numpy.BLOCK // 2  # elements a view's adds lag at most (a block then recomputes at most half its elements)


def _lags(ext: list[tuple[int, int, int]], records: list[int], inputs: set[int], n0: int,
          n1: int) -> tuple[list[int], bool]:
    """Each view's lag in the fused reverse (kernels/codegen/fused.py), and whether each element of the run's inputs
    then gets its adds in the NumPy steps' order (else compiled.kept keeps the run fused): where views of an input
    that meet are one, or in one row of one stride, each lagging by its shift in elements from the first of its
    residue (u[:-2], u[1:-1], u[2:]: 0, 1, 2), at most LAGS."""
    lags, ordered = [0] * len(ext), True
    for record in inputs:
        for views in _meeting([i for i, r in enumerate(records) if r == record], ext, n0, n1):
            steps = {ext[i][2] for i in views}
            if 0 in steps or (n0 > 1 and any(ext[i][1] == 0 for i in views)):  # an element read again along a row
                ordered = False
            elif len({ext[i] for i in views}) > 1:
                step, residue = min(steps), {i: ext[i][0] % abs(min(steps)) for i in views}
                shift = {i: (ext[i][0] - ext[views[0]][0]) // step for i in views}  # exact within a residue
                lag = {i: shift[i] - min(shift[j] for j in views if residue[j] == residue[i]) for i in views}
                if len(steps) > 1 or n0 > 1 or max(lag.values()) > LAGS:
                    ordered = False
                    continue
                for i in views:
                    lags[i] = lag[i]
    return lags, ordered


def _meeting(views: list[int], ext: list[tuple[int, int, int]], n0: int, n1: int) -> list[list[int]]:
    """views (indices into ext) in groups whose spans of elements meet (X[:48] and X[48:] apart)."""
    spans = []
    for i in views:
        base, row, step = ext[i]
        reach = ((n0 - 1) * row, (n1 - 1) * step)
        spans.append((base + sum(min(0, d) for d in reach), base + sum(max(0, d) for d in reach), i))
    groups: list[list[int]] = []
    end = -1
    for lo, hi, i in sorted(spans):
        if not groups or lo > end:
            groups.append([])
        groups[-1].append(i)
        end = max(end, hi)
    return groups


def _recycled(s: Any, ext_rows: list[int], need: np.ndarray, ka: np.ndarray, ia: np.ndarray, kb: np.ndarray,
              ib: np.ndarray, last: int) -> bool:
    """Whether a recycling tape (tape/sweeps/arenas.py) freed a record the run reads whose value the recompute
    needs, or gave its region to a record up to the run's end (whose adjoint the run's reverse would meet)."""
    freed = getattr(s, "_freed", None)
    if not freed:
        return False
    read = {ext_rows[i] for k in np.flatnonzero(need) for kind, i in ((ka[k], ia[k]), (kb[k], ib[k])) if kind == 1}
    return any(r in freed and (r in read or 0 <= freed[r] <= last) for r in ext_rows)


def _needed(code: np.ndarray, ka: np.ndarray, ia: np.ndarray, kb: np.ndarray, ib: np.ndarray,
            imm: list[float]) -> np.ndarray:
    """The members whose values the reverse needs: those a partial reads (for an operand that is
    not a number: kind 2), and the members those are computed from."""
    need = np.zeros(len(code), np.bool_)
    for k in range(len(code)):
        operand = {"a": (ka[k], ia[k]), "b": (kb[k], ib[k])}
        square = code[k] == OPCODE["pow"] and kb[k] == 2 and imm[ib[k]] == 2.0
        for side, names in zip("ab", SQUARE_READS if square else READS[int(code[k])], strict=True):
            if operand[side][0] == 2:
                continue
            for name in names:
                if name == "y":
                    need[k] = True
                elif operand[name][0] == 0:
                    need[operand[name][1]] = True
    for k in range(len(code) - 1, -1, -1):  # a needed member needs the members it is computed from
        if need[k]:
            need[[j for kind, j in ((ka[k], ia[k]), (kb[k], ib[k])) if kind == 0]] = True
    return need
