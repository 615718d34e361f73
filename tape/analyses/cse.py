"""Common-subexpression elimination: a record that computes what an earlier one computes is replaced
by that earlier record in every input, view, pack and output that names it, and the pruning that
follows (tape/analyses/prune.py) drops it. Alike: a scalar record of the same op on the same inputs in the same
order with the same constant bits; a constant of the same bits; an elem of the same array and place;
an array record of the same op, shape, axes and places on the same views (a constant: the same numbers).

The merged Function is the program written with each subexpression once, record for record (tests
compare the arrays). Its values and tangents are those of the unmerged one bit for bit where no array
record is fused differently: a merge can join or split the fused runs (tape/sweeps/fusion.py computes a run
in Numba, a record alone in NumPy, whose exp, sin, ... differ in the last bits). Reverse derivatives
add the copies' adjoints before their partials multiply them, which can change the last bits (as in
any AD system that merges). Not merged: comparisons and selects (a select reads the comparison just
before it; a comparison carries its own branch check and source line), leaves (inputs, params), array
inputs, array comparisons, all and any (checks), and ``y * x`` with ``x * y`` (where both are NaN the
two orders give NaNs of different signs).
"""

from __future__ import annotations

import functools
import itertools
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from tape.kernels import cse as _kernels
from tape.kernels.array_ops import ACONSTANT, ARRAY_KIND
from tape.kernels.cse import tables
from tape.kernels.ops import ELEM, HAS_INPUT, KIND, OPCODE, TWO_RECORDS, USES_POOL
from tape.kernels.twins import Twin
from tape.sweeps.driver import Plan, View
from tape.sweeps.plans import SHAPE, VIEWS, WEIGHTS, ints, lengths, ranges, sizes

merge = Twin(_kernels.merge, globals())  # a small trace's first runs its twin while it is not ready (kernels/twins.py)
CODES = np.arange(256)
MERGEABLE = np.isin(KIND, ("unary", "binary", "const")) | (CODES == OPCODE["constant"]) | (CODES == ELEM)
RENAMES = HAS_INPUT | (CODES == ELEM)  # in0 names a record (an elem's: its array record)
USES_IN1 = TWO_RECORDS | USES_POOL | (CODES == ELEM)  # in1 is a record, a constant slot or an elem's place
# array records never merged (compare, all, any: checks); nor 0-d constants, the immediates of the ops
# that read them (merged, the copies would cost a compaction and save nothing): keys hold their number
KEPT_KINDS = ("input", "compare", "all", "any")
IS_KEPT, IS_PACK = np.isin(ARRAY_KIND, KEPT_KINDS), np.isin(ARRAY_KIND, ("pack",))  # by array opcode


def _numbers(p: Plan, arena: np.ndarray) -> bytes:
    return arena[p.offset:p.offset + p.size].tobytes()


def _key(p: Plan, arena: np.ndarray, immediates: dict[int, bytes]) -> tuple:
    """What an array record computes, its views and places already renamed (a constant: its numbers;
    a 0-d constant it reads: its number, so x * 0.5 twice is alike, each with a 0.5 record of its own, and the shape
    and strides it is read in: a join of zeros(1), g, zeros(2) is not one of zeros(2), g, zeros(1))."""
    numbers = _numbers(p, arena) if ARRAY_KIND[p.code] == "constant" else b""
    views = tuple((immediates[v.record], v.shape, v.strides) if v.record in immediates else v for v in p.inputs)
    return p.code, p.shape, p.axes, p.wide, views, p.places.tobytes(), numbers


def _renamed(p: Plan, same: np.ndarray) -> Plan:
    """p reading the first copies: its views' records, a pack's scalar records."""
    places = p.places
    if ARRAY_KIND[p.code] == "pack":
        places = same[places]
        places.flags.writeable = False  # as every plan's
    return p._replace(inputs=tuple(v._replace(record=int(same[v.record])) for v in p.inputs), places=places)


ROUNDS = 16  # passes over the records (_rounds) before cse merges in order: one pass per array record that merges
# only once an earlier one has (a loop written twice needs a pass a step). A pass costs ~0.12 us a plan (NumPy over the
# plan table and one Numba call), the in-order loop ~10 us; a loop of 1,000 steps written twice (12,000 plans) merges
# in 127 CPU-ms in order, 173 with 32 passes first: 16 bound that loss at ~20%


def cse(a: dict[str, np.ndarray], plans: list[Plan]) -> tuple[dict[str, np.ndarray], list[Plan], int]:
    """The arrays (without the plan table, which the pruning makes) and plans with every repeated
    subexpression read from its first record (the copies left for the pruning to drop), and how many
    records merged. Scalar records merge in Numba and array records by NumPy over the plan table, in
    rounds until neither changes (_rounds), else the array records one by one here, in order, so an array
    record's key names its inputs' first copies."""
    op, in0, in1 = a["op"], a["in0"], a["in1"]
    same = np.empty(len(op), np.int64)
    out0, out1 = np.empty_like(in0), np.empty_like(in1)
    args = (op, in0, in1, a["val"].view(np.int64), a["consts"].view(np.int64), RENAMES, TWO_RECORDS, USES_POOL,
            USES_IN1, MERGEABLE)
    merged = merge(*args, 0, len(op), *tables(len(op)), same, out0, out1)  # (an array record: kept, inputs as they are)
    kept = plans
    if plans:
        found = _rounds(a, plans, args, same, out0, out1, merged)
        merged, kept = found if found is not None else _in_order(a, plans, args, same, out0, out1)
    if not merged:
        return a, plans, 0
    a = dict(a, in0=out0, in1=out1, output_rows=same[a["output_rows"]])
    if plans:  # every copy is dead now, so the pruning encodes the kept plans: no stale table is left
        del a["plans"], a["plan_places"]
    return a, kept, int(merged)


def _rounds(a: dict[str, np.ndarray], plans: list[Plan], args: tuple, same: np.ndarray, out0: np.ndarray,
            out1: np.ndarray, merged: int) -> tuple[int, list[Plan]] | None:
    """(records merged, plans renamed) as _in_order gives them, or None past ROUNDS passes or where two keys' hashes
    meet by chance. A pass: each array record merged into the first of its key (_firsts, its inputs renamed by
    ``same``), then the scalar records by one Numba call, the array records they read renamed to their first copies;
    until a pass changes nothing. A pass fixes every record whose earlier records it found fixed (a key reads only
    earlier records), so the fixed point is the in-order merge."""
    op, in0, in1 = a["op"], a["in0"], a["in1"]
    rows, keys = a["plans"][:, 1], _keys(a, plans)
    first, names, ins = rows, np.arange(len(op)), [in0, in1]
    for _ in range(ROUNDS):
        found = _firsts(a, keys, same)
        if found is None:
            return None
        if np.array_equal(found, first):
            return merged + int((first != rows).sum()), _renamed_plans(a, plans, same)
        first = names[rows] = found
        renamed = [in0.copy(), in1.copy()]
        for side, reads in ((0, RENAMES[op]), (1, TWO_RECORDS[op])):
            renamed[side][reads] = names[(in0, in1)[side][reads]]
        if not all(map(np.array_equal, renamed, ins)):  # (a scalar record reads an array record renamed this round)
            ins = renamed
            merged = merge(op, *ins, *args[3:], 0, len(op), *tables(len(op)), same, out0, out1)
        same[rows] = first
    return None


def _renamed_plans(a: dict[str, np.ndarray], plans: list[Plan], same: np.ndarray) -> list[Plan]:
    """plans, those whose views' records or (a pack) places ``same`` renames made anew (_renamed's plans, by zip and
    map as prune's _kept_plans: arrays4k's 800 renamed one by one took 6 of cse's 11 CPU-ms); a pack's places each."""
    table, places = a["plans"], a["plan_places"]
    changed = np.any([(table[:, c.start] >= 0) & (same[np.maximum(table[:, c.start], 0)] != table[:, c.start])
                      for c in VIEWS], 0)
    pack = np.flatnonzero(IS_PACK[table[:, 0]] & (table[:, 5] > 0))
    read = places[ranges(table[pack, 4], table[pack, 5])]
    changed[pack[np.repeat(np.arange(len(pack)), table[pack, 5])[same[read] != read]]] = True
    at = np.flatnonzero(changed).tolist()
    kept = list(plans)
    if not at:
        return kept
    code, row, offset, shapes, inputs, axes, held, wide = zip(*map(plans.__getitem__, at), strict=True)
    flat = tuple(itertools.chain.from_iterable(inputs))
    record, place, vshapes, strides = zip(*flat, strict=True) if flat else ((),) * 4
    views = map(functools.partial(tuple.__new__, View), zip(same[ints(record)].tolist(), place, vshapes, strides,
                                                             strict=True))
    held = list(held)
    for k in np.flatnonzero(IS_PACK[ints(code)]).tolist():
        held[k] = same[held[k]]
        held[k].flags.writeable = False  # as every plan's
    renamed = map(functools.partial(tuple.__new__, Plan), zip(code, row, offset, shapes, [tuple(itertools.islice(
        views, n)) for n in lengths(inputs).tolist()], axes, held, wide, strict=True))
    for k, p in zip(at, renamed, strict=True):
        kept[k] = p
    return kept


def _in_order(a: dict[str, np.ndarray], plans: list[Plan], args: tuple, same: np.ndarray, out0: np.ndarray,
              out1: np.ndarray) -> tuple[int, list[Plan]]:
    """(records merged, plans renamed): the scalar records between array records merged by one Numba call per
    stretch, each array record merged into an earlier one of its key (its inputs renamed first)."""
    op, in0, in1 = a["op"], a["in0"], a["in1"]
    state = tables(len(op))
    merged, start, kept = 0, 0, []
    first: dict[tuple, int] = {}
    immediates = {p.row: _numbers(p, a["arena"]) for p in plans if ARRAY_KIND[p.code] == "constant" and not p.shape}
    for p in plans:  # in the order of their records
        if p.row > start:  # (one Numba call per stretch of scalar records)
            merged += merge(*args, start, p.row, *state, same, out0, out1)
        q = _renamed(p, same)
        same[p.row], out0[p.row], out1[p.row] = p.row, in0[p.row], in1[p.row]
        if ARRAY_KIND[p.code] not in KEPT_KINDS and p.row not in immediates:
            same[p.row] = first.setdefault(_key(q, a["arena"], immediates), p.row)
            merged += same[p.row] != p.row
        kept.append(q)
        start = p.row + 1
    return merged + merge(*args, start, len(op), *state, same, out0, out1), kept


class _Keys(NamedTuple):
    """What _firsts reads of the plans that no round changes: each plan's key (_key) as a row of integers (the plan
    table's row; a 0-d constant's view's record and offset read as -2 and its number's bits; its places' dtype,
    tobytes' size, for its row, and 0 for its region and places' start: the places are compared element by element),
    the keys' hashes (linear in the row, with its places' and numbers' hashes), the plans' places and the constants'
    numbers."""

    key: np.ndarray
    hashed: np.ndarray  # (wrapping uint64) a round adds what its renames change
    pack: np.ndarray  # the plans that are packs with places, and their places (renamed each round)
    packed: np.ndarray
    values: np.ndarray  # the constants' numbers (bits), where each plan's start, how many
    numbers: np.ndarray
    length: np.ndarray
    candidate: np.ndarray  # the plans that may merge


HASHED = np.random.default_rng(27).integers(0, 2**64, 4, np.uint64, endpoint=False) | 1  # places', numbers' hashes


def _keys(a: dict[str, np.ndarray], plans: list[Plan]) -> _Keys:
    table, bits = a["plans"], a["arena"].view(np.int64)
    code, offset, start, count = table[:, 0], table[:, 2], table[:, 4], table[:, 5]
    immediate = (code == ACONSTANT) & (table[:, SHAPE] == 0)
    key = table.copy()
    key[:, 1] = np.fromiter(map(attrgetter("places.dtype.num"), plans), np.int64, len(plans))
    key[:, 2] = key[:, 4] = 0
    for cols in VIEWS:
        view = key[:, cols]
        read = np.flatnonzero(view[:, 0] >= 0)
        plan = a["in0"][view[read, 0]].astype(np.int64)  # an array record's in0: its plan
        number = read[immediate[plan]]  # (its record and offset; the shape and strides it is read in stay)
        view[number, 0], view[number, 1] = -2, bits[offset[plan[immediate[plan]]]]
    constant = np.flatnonzero((code == ACONSTANT) & ~immediate)
    size = np.zeros(len(table), np.int64)
    size[constant] = sizes(table[constant], SHAPE)[1]
    numbers = np.cumsum(size) - size  # where each plan's numbers start among the constants' numbers
    values = bits[ranges(offset[constant], size[constant])]
    hashed = key.view(np.uint64) @ WEIGHTS
    for weights, hashes in zip((HASHED[:2], HASHED[2:]), (_hashes(a["plan_places"], start, count),
                                                         _hashes(values, numbers, size)), strict=True):
        hashed += hashes[0].view(np.uint64) * weights[0] + hashes[1].view(np.uint64) * weights[1]
    pack = np.flatnonzero(IS_PACK[code] & (count > 0))
    return _Keys(key, hashed, pack, ranges(start[pack], count[pack]), values, numbers, size,
                 np.flatnonzero(~IS_KEPT[code] & ~immediate))


def _renamed_keys(k: _Keys, same: np.ndarray, at: np.ndarray) -> np.ndarray:
    key = k.key[at]
    for cols in VIEWS:
        record = key[:, cols.start]
        record[record >= 0] = same[record[record >= 0]]
    return key


def _firsts(a: dict[str, np.ndarray], k: _Keys, same: np.ndarray) -> np.ndarray | None:
    """By plan: the row of the first plan of its key (_Keys, its views' records and a pack's places renamed by
    ``same``; itself for plans never merged), or None where two keys' hashes meet by chance: keys hashed (the recorded
    key's hash plus what the renames change), rows of one hash compared whole, places and numbers element by
    element. NumPy over the table: no Python per record."""
    table = a["plans"]
    start, count = table[:, 4], table[:, 5]
    hashed = k.hashed.copy()
    for cols in VIEWS:
        record = k.key[:, cols.start]
        read = record >= 0
        hashed[read] += (same[record[read]] - record[read]).view(np.uint64) * WEIGHTS[cols.start]
    places = a["plan_places"].copy()
    places[k.packed] = same[places[k.packed]]
    hashes = zip(_hashes(a["plan_places"], start[k.pack], count[k.pack]), _hashes(places, start[k.pack], count[k.pack]),
                 HASHED[:2], strict=True)
    for before, after, weight in hashes:
        hashed[k.pack] += (after - before).view(np.uint64) * weight
    _, firsts, which = np.unique(hashed[k.candidate], return_index=True, return_inverse=True)
    found = np.arange(len(table))
    found[k.candidate] = k.candidate[firsts[which.reshape(-1)]]  # the first plan of each candidate's hash
    moved = np.flatnonzero(found != np.arange(len(table)))
    alike = (_renamed_keys(k, same, moved) == _renamed_keys(k, same, found[moved])).all(1)
    for items, at, counts in ((places, start, count), (k.values, k.numbers, k.length)):
        length = counts[moved]
        here, there = ranges(at[moved], length), ranges(at[found[moved]], length)
        alike[np.repeat(np.arange(len(moved)), length)[items[here] != items[there]]] = False
    return table[found, 1] if alike.all() else None


def _hashes(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two hashes (int64, wrapping) of each piece values[start:start + count]: its sum and the sum of its prefix
    sums (which an element's place changes). Two cumulative sums over values: a piece that pieces share (np.pad's
    index) is read once."""
    total = np.zeros(len(values) + 1, np.int64)
    np.cumsum(values, out=total[1:])
    twice = np.zeros(len(values) + 2, np.int64)
    np.cumsum(total, out=twice[1:])  # twice[i]: total[0] + ... + total[i - 1]
    ends = starts + counts
    return total[ends] - total[starts], twice[ends + 1] - twice[starts + 1] - counts * total[starts]
