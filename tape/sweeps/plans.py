"""Plans as plain arrays (for Functions and files), and their validation.

A Function keeps its array records' plans as one int64 table, one row per
plan, plus the gather/pack places and the value arena, so ``save`` writes
plain arrays and ``load`` reads them back without pickle. ``decode`` checks
every row before a plan is built from it: a hostile file gets a
TapeFormatError naming the record, never a read outside an arena.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tape.errors import TapeFormatError
from tape.kernels.array_ops import ARRAY_KIND, ARRAY_OPS, IS_ARRAY_OP, NAME, RULE
from tape.kernels.ops import ARRAY_BASE, ELEM, IS_ARRAY
from tape.sweeps.driver import Plan, View, contiguous

MAX_DIMS = 8  # dimensions an array record may have (NumPy allows 64; the table has room for 8)
_SHAPE = 1 + MAX_DIMS  # ndim, then the sizes
_VIEW = 2 + _SHAPE + MAX_DIMS  # record, offset, ndim and sizes, strides
# columns: code, row, offset, axes (a bit per axis), index start, index length | shape | wide | 3 views
_HEAD = 6
SHAPE = _HEAD  # the shape's columns: ndim, then MAX_DIMS sizes
WIDTH = _HEAD + 2 * _SHAPE + 3 * _VIEW
READS_VIEWS = np.array([op.inputs for op in ARRAY_OPS])  # by array op: views it reads, views it must read
LEAST_VIEWS = np.array([op.inputs if op.least is None else op.least for op in ARRAY_OPS])
ROWS, INPUT, OUTPUT, CALLEE = 1, 2, 3, 4  # what a plan's places index (RULE[code].places), by opcode:
PLACES = np.array([("", "rows", "input", "output", "callee").index(RULE[c].places) for c in range(256)])
WEIGHTS = np.random.default_rng(26).integers(0, 2**64, WIDTH, np.uint64, endpoint=False) | 1  # odd: a key row's hash
VIEWS = tuple(slice(_HEAD + 2 * _SHAPE + j * _VIEW, _HEAD + 2 * _SHAPE + (j + 1) * _VIEW) for j in range(3))  # each
# view's columns: record (-1: none), offset, ndim and sizes, strides


def indexed(values: tuple) -> tuple[list, np.ndarray]:
    """(the distinct values, in order of first appearance; each value's index among them), by dicts and map: no
    Python step per value."""
    distinct = list(dict.fromkeys(values))
    number = dict(zip(distinct, range(len(distinct)), strict=True))
    return distinct, np.fromiter(map(number.__getitem__, values), np.int64, len(values))


def rows_of(values: tuple, width: int, row: Callable[[Any], list[int]]) -> np.ndarray:
    """row(value) of each value (a shape, strides, axes), made once per distinct value, width columns."""
    distinct, index = indexed(values)
    rows = np.zeros((len(distinct), width), np.int64)
    for k, v in enumerate(distinct):
        cells = row(v)
        rows[k, :len(cells)] = cells
    return rows[index]


def ints(values: tuple) -> np.ndarray:
    """Ints (Python's or NumPy's: np.array takes 1 µs for each NumPy one) as an int64 array."""
    return np.fromiter(values, np.int64, len(values))


def lengths(items: Any) -> np.ndarray:
    """len of each item (a sequence of tuples or arrays) as an int64 array, by map: no Python step per item."""
    return np.fromiter(map(len, items), np.int64, len(items))


def _shape(shape: tuple[int, ...]) -> list[int]:
    return [len(shape), *shape]


def encode(plans: list[Plan]) -> tuple[np.ndarray, np.ndarray]:
    """(table, places) for a list of plans, column by column (the plans' fields taken apart by zip and map: no Python
    step per plan; each distinct shape, strides and axes written once). Plans that share their places (one object:
    np.pad's index in a loop) share one range of them."""
    m = len(plans)
    table = np.zeros((m, WIDTH), np.int64)
    if not m:
        return table, np.zeros(0, np.int64)
    code, row, offset, shape, inputs, axes, places, wide = zip(*plans, strict=True)
    ndim = lengths(shape), lengths(wide)
    if (ndim[0] > MAX_DIMS).any() or (ndim[1] > MAX_DIMS).any():
        k = int(np.argmax((ndim[0] > MAX_DIMS) | (ndim[1] > MAX_DIMS)))
        raise ValueError(f"array record #{row[k]} has {ndim[0][k]} dimensions; a Function holds at most {MAX_DIMS}")
    count = lengths(places)
    objects, which = indexed(tuple(map(id, places)))  # (every plan holds its places: no id is reused)
    first = np.full(len(objects), m)
    np.minimum.at(first, which, np.arange(m))
    added = np.zeros(m, np.int64)
    added[first] = count[first]  # each places object's count, at its first plan
    before = np.cumsum(added) - added
    table[:, :_HEAD] = np.column_stack([ints(code), ints(row), ints(offset), rows_of(
        axes, 1, lambda a: [sum(1 << k for k in a)]), np.where(count > 0, before[first[which]], before), count])
    table[:, _HEAD:_HEAD + _SHAPE] = rows_of(shape, _SHAPE, _shape)
    table[:, _HEAD + _SHAPE:_HEAD + 2 * _SHAPE] = rows_of(wide, _SHAPE, _shape)
    n_in = lengths(inputs)
    plan = np.repeat(np.arange(m), n_in)
    j = np.arange(len(plan)) - np.repeat(np.cumsum(n_in) - n_in, n_in)  # each view's place among its plan's
    views = tuple(itertools.chain.from_iterable(inputs))
    record, at, vshape, strides = zip(*views, strict=True) if views else ((),) * 4
    cells = np.column_stack([ints(record), ints(at), rows_of(vshape, _SHAPE, _shape), rows_of(strides, MAX_DIMS, list)])
    for k, cols in enumerate(VIEWS):
        table[:, cols.start] = -1
        table[plan[j == k], cols] = cells[j == k]
    return table, np.concatenate([np.zeros(0, np.int64), *map(places.__getitem__, first.tolist())])  # each once


def relaid(plans: list[Plan], offsets: np.ndarray) -> list[Plan]:
    """The plans on regions at offsets (made by tuple.__new__ through map: no Python step per plan)."""
    code, row, _, shape, inputs, axes, places, wide = zip(*plans, strict=True) if plans else ((),) * 8
    return list(map(functools.partial(tuple.__new__, Plan), zip(code, row, offsets.tolist(), shape, inputs, axes,
                                                                 places, wide, strict=True)))


def at_least(plans: Any, size: int) -> int:
    """How many plans, not 0-d, have ``size`` elements or more (a tape's plan rows not made Plans yet counted by their
    own ``at_least``: tape/compiled/array_plans.py's Pending)."""
    counted = getattr(plans, "at_least", None)
    return counted(size) if counted is not None else sum(p.size >= size and len(p.shape) > 0 for p in plans)


def same_plans(a: list[Plan], b: list[Plan]) -> bool:
    """Whether two lists of plans are equal, field by field (a gather's places by their elements)."""
    try:
        return a == b  # (by C: 0.3 µs a plan; a field of the same object is equal, and places are read-only)
    except (ValueError, DeprecationWarning):  # places not of one element nor the same object (NumPy 1 warns for an
        # empty one where warnings raise): compared as arrays
        return len(a) == len(b) and all(p[:6] == q[:6] and p[7:] == q[7:] and np.array_equal(p[6], q[6])
                                        for p, q in zip(a, b, strict=True))


def regions(plans: list[Plan]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(opcode, offset, size) of each plan, as arrays (each distinct shape's size found once)."""
    code, _, offset, shape, *_ = zip(*plans, strict=True) if plans else ((),) * 4
    return ints(code), ints(offset), rows_of(shape, 1, lambda s: [math.prod(s)])[:, 0]


def _get_shape(row: list[int], at: int, what: str) -> tuple[int, ...]:
    ndim = row[at]
    if not 0 <= ndim <= MAX_DIMS:
        raise ValueError(f"{what} has {ndim} dimensions")
    dims = row[at + 1:at + 1 + ndim]
    if any(d < 0 for d in dims) or any(row[at + 1 + ndim:at + _SHAPE]) or math.prod(dims) >= 2**40:
        raise ValueError(f"{what} has a bad shape {row[at + 1:at + _SHAPE]}")
    return tuple(dims)


def decode(table: np.ndarray, places: np.ndarray, op: np.ndarray, in0: np.ndarray, in1: np.ndarray,
           callees: tuple[tuple[int, int, int], ...] = (), plans: list[Plan] | None = None) -> list[Plan]:
    """The plans of a table, each row checked against the records (TapeFormatError otherwise).

    callees: (inputs, params, outputs) of each Function the call records may name (none in a file). plans: the
    plans the table encodes (a tape's own), returned where NumPy finds every row fine (_fine), not built again."""
    rows = np.flatnonzero(IS_ARRAY[op])
    if table.ndim != 2 or table.shape[1] != WIDTH or len(table) != len(rows):
        raise TapeFormatError(f"plan table of shape {table.shape} for {len(rows)} array records ({WIDTH} columns)")
    if plans and _fine(table, places, op, in0, in1):
        plans = list(plans)  # a list of the Function's own: the tape may record on
    else:
        plans = []
        end = 0
        shared: dict[tuple[int, int], np.ndarray] = {}  # each range's places: one object for the rows sharing it
        for k, row in enumerate(table.tolist()):  # Python ints: ~10x faster to check than NumPy scalars
            try:
                plans.append(_plan(row, k, plans, places, op, in0, in1, end, callees, shared))
            except (ValueError, IndexError) as exc:
                raise TapeFormatError(f"array record #{int(row[1])} (plan {k}): {exc}") from None
            end = plans[-1].offset + plans[-1].size
    elems = np.flatnonzero(op == ELEM)  # checked by NumPy: a Python loop took 1.7 µs an elem record
    source = in0[elems].astype(np.int64)
    ok = source < elems
    ok[ok] = IS_ARRAY[op[source[ok]]]
    elements = sizes(table, _HEAD)[1]  # by plan: an array record's in0, checked above
    ok[ok] = in1[elems[ok]] < elements[in0[source[ok]]]
    if not ok.all():
        raise TapeFormatError(f"record {elems[~ok][0]} (elem): reads no element of an earlier array record")
    return plans


def sizes(table: np.ndarray, at: int) -> tuple[np.ndarray, np.ndarray]:
    """(whether each row's shape at column ``at`` passes _get_shape, its element count where it does)."""
    ndim, dims = table[:, at], table[:, at + 1:at + _SHAPE]
    inside = np.arange(MAX_DIMS) < ndim[:, None]
    fine = (ndim >= 0) & (ndim <= MAX_DIMS) & ((dims >= 0) | ~inside).all(1) & ((dims == 0) | inside).all(1)
    counted = np.where(inside & fine[:, None], dims, 1)
    fine &= np.where(counted > 0, np.log2(np.maximum(counted, 1)), -np.inf).sum(1) < 40 - 1e-9  # (a product < 2**40)
    return fine, np.where(fine[:, None], counted, 0).prod(1)


def _fine(table: np.ndarray, places: np.ndarray, op: np.ndarray, in0: np.ndarray, in1: np.ndarray) -> bool:
    """Whether every row passes _plan's checks, found by NumPy over the table (no Python per record; a Function
    call's rows, and any doubt, answer False: _plan then checks row by row, naming the first bad one). Each
    rule's shape check runs once per distinct (code, shapes, views' shapes, axes)."""
    n, m = len(op), len(table)
    code, r, offset, axes, start, count = table[:, :_HEAD].T
    known = (code >= ARRAY_BASE) & (code < ARRAY_BASE + len(ARRAY_OPS)) & IS_ARRAY_OP[np.clip(code, 0, 255)]
    rc = np.clip(r, 0, n - 1)
    fine = known & (r >= 0) & (r < n) & (op[rc] == code) & (in0[rc] == np.arange(m)) & (in1[rc] == 0xFFFFFFFF)
    fine &= np.diff(r, prepend=-1) > 0
    shaped, size = sizes(table, _HEAD)
    wide, _ = sizes(table, _HEAD + _SHAPE)
    fine &= shaped & wide & (offset == np.concatenate([[0], np.cumsum(size)[:-1]])) & (axes >> MAX_DIMS == 0)
    kind = np.where(known, code - ARRAY_BASE, 0)
    takes, least = READS_VIEWS[kind], LEAST_VIEWS[kind]
    present = np.ones(m, np.bool_)
    signature = [code, axes, table[:, _HEAD:_HEAD + 2 * _SHAPE]]
    for j, cols in enumerate(VIEWS):
        view = table[:, cols]
        record = view[:, 0]
        present &= (j < takes) & ((j < least) | (record != -1))
        fine &= present | ((record == -1) & (view[:, 1:] == 0).all(1))
        rec = np.clip(record, 0, n - 1)
        fine &= ~present | ((record >= 0) & (record < r) & IS_ARRAY[op[rec]])
        plan = np.clip(in0[rec].astype(np.int64), 0, m - 1)
        vshape, elements = sizes(view, 2)
        ndim, strides = view[:, 2], view[:, 2 + _SHAPE:]
        fine &= ~present | (vshape & ((strides == 0) | (np.arange(MAX_DIMS) < ndim[:, None])).all(1))
        reach = (np.maximum(view[:, 3:2 + _SHAPE], 1) - 1) * strides.astype(np.float64)  # (exact below 2**48;
        huge = (np.abs(reach) >= 2**48).any(1) | (np.abs(view[:, 1]) >= 2**48)  # past any record above)
        low, high = view[:, 1] + np.minimum(reach, 0).sum(1), view[:, 1] + np.maximum(reach, 0).sum(1)
        fine &= ~present | (elements == 0) | (~huge & (low >= 0) & (high < size[plan]))
        signature.append(np.where(present[:, None], view[:, 2:2 + _SHAPE], -1))
        if j == 0:
            first, whole = plan, (view[:, 1] == 0) & (view[:, 2:2 + _SHAPE] == table[plan, _HEAD:_HEAD + _SHAPE]).all(
                1) & (strides == _contiguous(table[plan, _HEAD:_HEAD + _SHAPE])).all(1)
            out_of = elements
    what = PLACES[np.where(known, code, 0)]
    placed = what > 0
    fine &= (what != CALLEE) & (placed | (count == 0))
    needed = np.where(what == OUTPUT, out_of, size)
    fine &= ~placed | ((start >= 0) & (start + count <= len(places)) & (count == needed))
    fine &= (what != INPUT) | whole
    if not fine.all():
        return False
    limit = np.where(what == ROWS, r, np.where(what == OUTPUT, size, size[first]))
    at = placed & (count > 0)
    read = np.column_stack([start[at], count[at]])
    pick, which = distinct(read)  # (a shared range: once)
    order = np.argsort(read[pick, 0], kind="stable")  # the ranges by where they start
    spans, rank = read[pick[order]], np.empty_like(order)
    rank[order] = np.arange(len(order))
    least = np.full(len(spans), np.iinfo(np.int64).max)
    np.minimum.at(least, rank[which], limit[at])  # the least limit of the rows that read a range
    starts = np.cumsum(spans[:, 1]) - spans[:, 1]
    if np.array_equal(spans[:, 0], starts):  # (a tape's: its places one after another, read where they are)
        index = places[:starts[-1] + spans[-1, 1] if len(starts) else 0]
    else:
        index = places[ranges(spans[:, 0], spans[:, 1])]
    if len(index) and ((np.minimum.reduceat(index, starts) < 0).any() or (
            np.maximum.reduceat(index, starts) >= least).any()):
        return False
    packs = at & (what == ROWS)
    if IS_ARRAY[op[places[ranges(start[packs], count[packs])]]].any():
        return False
    pick, _ = distinct(np.column_stack(signature))
    for row in table[pick].tolist():  # each rule's check, once per distinct signature
        try:
            RULE[row[0]].check(*_shapes(row))
        except ValueError:
            return False
    return True


def distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a row of each distinct row of int64 keys, the distinct row of each): rows hashed with odd weights, then
    checked against their pick (np.unique of rows sorts them as records, ~10x slower: it takes a collision)."""
    keys = np.ascontiguousarray(keys, np.int64)
    _, pick, which = np.unique(keys.view(np.uint64) @ WEIGHTS[:keys.shape[1]], return_index=True, return_inverse=True)
    if not np.array_equal(keys[pick][which], keys):
        _, pick, which = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return pick, which.reshape(-1)


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The ranges [start, start + count) one after another."""
    ends = np.cumsum(counts)
    return np.arange(ends[-1] if len(ends) else 0) - np.repeat(ends - counts - starts, counts)


def _contiguous(shapes: np.ndarray) -> np.ndarray:
    """contiguous(shape) of each row's shape columns (ndim, sizes), zeros past its dimensions."""
    ndim, dims = shapes[:, 0], shapes[:, 1:]
    inside = np.arange(MAX_DIMS) < ndim[:, None]
    after = np.cumprod(np.where(inside, np.maximum(dims, 1), 1)[:, ::-1], axis=1)[:, ::-1]
    return np.where(inside, np.concatenate([after[:, 1:], np.ones((len(dims), 1), np.int64)], axis=1), 0)


def _shapes(row: list[int]) -> tuple[tuple[int, ...], tuple[int, ...], list[tuple[int, ...]], tuple[int, ...]]:
    """A fine row's (shape, wide, views' shapes, axes), as a rule's check takes them."""
    def shape(at: int) -> tuple[int, ...]:
        return tuple(row[at + 1:at + 1 + row[at]])
    views = [shape(cols.start + 2) for cols in VIEWS if row[cols.start] != -1]
    op_ = ARRAY_OPS[row[0] - ARRAY_BASE]
    return shape(_HEAD), shape(_HEAD + _SHAPE), views[:op_.inputs], tuple(a for a in range(MAX_DIMS) if row[3] >> a & 1)


def _plan(row: list[int], k: int, plans: list[Plan], places: np.ndarray, op: np.ndarray, in0: np.ndarray,
          in1: np.ndarray, end: int, callees: tuple[tuple[int, int, int], ...],
          shared: dict[tuple[int, int], np.ndarray]) -> Plan:
    code, r, offset, axes_mask, start, count = row[:_HEAD]
    if not (0 <= r < len(op) and op[r] == code and IS_ARRAY_OP[code] and int(in0[r]) == k
            and int(in1[r]) == 0xFFFFFFFF):
        raise ValueError(f"row does not match the record table ({NAME[code & 255]})")
    if k and r <= plans[-1].row:
        raise ValueError("plans out of record order")
    if offset != end:
        raise ValueError(f"region starts at {offset}, not right after the previous one ({end})")
    shape, wide = _get_shape(row, _HEAD, "shape"), _get_shape(row, _HEAD + _SHAPE, "wide shape")
    op_ = ARRAY_OPS[code - ARRAY_BASE]
    inputs: list[View] = []
    least = op_.inputs if op_.least is None else op_.least
    for j in range(3):
        at = _HEAD + 2 * _SHAPE + j * _VIEW
        record = row[at]
        if j >= op_.inputs or (j >= least and (record == -1 or len(inputs) < j)):  # the optional views: absent
            if record != -1 or any(row[at + 1:at + _VIEW]):
                raise ValueError(f"{op_.name} reads {op_.inputs} views, this row more")
            continue
        if not 0 <= record < r or not IS_ARRAY[op[record]]:
            raise ValueError(f"view {j} reads record {record}, not an earlier array record")
        vshape = _get_shape(row, at + 2, f"view {j}")
        strides = tuple(row[at + 2 + _SHAPE:at + 2 + _SHAPE + len(vshape)])
        if any(row[at + 2 + _SHAPE + len(vshape):at + _VIEW]):
            raise ValueError(f"view {j} has strides past its dimensions")
        v = View(record, row[at + 1], vshape, strides)
        size = plans[int(in0[record])].size
        if math.prod(vshape):
            low = v.offset + sum(min(0, (n - 1) * s) for n, s in zip(vshape, strides, strict=True))
            high = v.offset + sum(max(0, (n - 1) * s) for n, s in zip(vshape, strides, strict=True))
            if low < 0 or high >= size:
                raise ValueError(f"view {j} reaches elements {low}..{high} of a record of {size}")
        inputs.append(v)
    axes = tuple(a for a in range(MAX_DIMS) if axes_mask >> a & 1)
    if axes_mask >> MAX_DIMS:
        raise ValueError("axes past the dimensions")
    index = np.zeros(0, np.int64)
    what = RULE[code].places
    if what in ("rows", "input", "output"):  # a place per element it writes (a scatter: per element it reads)
        elements = math.prod(inputs[0].shape) if what == "output" else math.prod(shape)
        if not (0 <= start and start + count <= len(places) and count == elements):
            raise ValueError(f"places {start}..{start + count} do not fit its {elements} elements")
        if (start, count) not in shared:
            shared[start, count] = places[start:start + count].copy()
            shared[start, count].flags.writeable = False
        index = shared[start, count]
        limit = r if what == "rows" else math.prod(shape) if what == "output" else plans[
            int(in0[inputs[0].record])].size
        if len(index) and (index.min() < 0 or index.max() >= limit):
            raise ValueError("a place outside what it reads")
        if what == "rows" and np.any(IS_ARRAY[op[index]]):
            raise ValueError("pack reads scalar records only")
        if what == "input" and inputs[0] != View(inputs[0].record, 0, plans[int(in0[inputs[0].record])].shape,
                                                 contiguous(plans[int(in0[inputs[0].record])].shape)):
            raise ValueError("gather reads a whole region")
    elif what == "callee":
        index = _callee(places, start, count, shape, inputs, op, callees)
    elif count:
        raise ValueError(f"{ARRAY_KIND[code]} has no places")
    RULE[code].check(shape, wide, [v.shape for v in inputs], axes)  # the output shape its rule gives
    return Plan(code, r, offset, shape, tuple(inputs), axes, index, wide)


def _callee(places: np.ndarray, start: int, count: int, shape: tuple[int, ...], inputs: list[View], op: np.ndarray,
            callees: tuple[tuple[int, int, int], ...]) -> np.ndarray:
    """A call record's one place: its Function's slot, whose sizes its views and shape must have."""
    if not callees:
        raise ValueError("a call record names a Function, and this tape holds none")
    if not (count == 1 and 0 <= start < len(places) and 0 <= places[start] < len(callees)):
        raise ValueError(f"names no Function of the {len(callees)} this tape calls")
    n_in, n_par, n_out = callees[int(places[start])]
    if [v.shape for v in inputs] != [(n_in,)] + ([(n_par,)] if n_par else []) or shape != (n_out,):
        raise ValueError(f"a call of a Function of {n_in} inputs, {n_par} params and {n_out} outputs cannot read "
                         f"{[v.shape for v in inputs]} and have shape {shape}")
    if n_par and ARRAY_KIND[op[inputs[1].record]] != "constant":
        raise ValueError("a call's params are a constant array record")
    index = places[start:start + 1].copy()
    index.flags.writeable = False
    return index
