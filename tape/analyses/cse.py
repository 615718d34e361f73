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

import numpy as np

from tape.kernels import cse as _kernels
from tape.kernels.array_ops import ACONSTANT, ARRAY_KIND
from tape.kernels.cse import tables
from tape.kernels.ops import ELEM, HAS_INPUT, KIND, OPCODE, TWO_RECORDS, USES_POOL
from tape.kernels.twins import Twin
from tape.sweeps.driver import Plan
from tape.sweeps.plans import SHAPE, VIEWS, WEIGHTS, ranges, sizes

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
    a 0-d constant it reads: its number, so x * 0.5 twice is alike, each with a 0.5 record of its own)."""
    numbers = _numbers(p, arena) if ARRAY_KIND[p.code] == "constant" else b""
    views = tuple(immediates.get(v.record, v) for v in p.inputs)
    return p.code, p.shape, p.axes, p.wide, views, p.places.tobytes(), numbers


def _renamed(p: Plan, same: np.ndarray) -> Plan:
    """p reading the first copies: its views' records, a pack's scalar records."""
    places = p.places
    if ARRAY_KIND[p.code] == "pack":
        places = same[places]
        places.flags.writeable = False  # as every plan's
    return p._replace(inputs=tuple(v._replace(record=int(same[v.record])) for v in p.inputs), places=places)


def cse(a: dict[str, np.ndarray], plans: list[Plan]) -> tuple[dict[str, np.ndarray], list[Plan], int]:
    """The arrays (without the plan table, which the pruning makes) and plans with every repeated
    subexpression read from its first record (the copies left for the pruning to drop), and how many
    records merged. Scalar records merge in Numba, in one call where no two array records are alike
    (_apart), else the array records between them here, in order, so an array record's key names its
    inputs' first copies."""
    op, in0, in1 = a["op"], a["in0"], a["in1"]
    same = np.empty(len(op), np.int64)
    out0, out1 = np.empty_like(in0), np.empty_like(in1)
    args = (op, in0, in1, a["val"].view(np.int64), a["consts"].view(np.int64), RENAMES, TWO_RECORDS, USES_POOL,
            USES_IN1, MERGEABLE)
    merged = merge(*args, 0, len(op), *tables(len(op)), same, out0, out1)  # (an array record: kept, inputs as they are)
    kept = plans
    if plans and _apart(a, same):  # then no array record merges in order either: its reads are renamed as here
        kept = list(plans)
        for k in np.flatnonzero(IS_PACK[a["plans"][:, 0]]).tolist():
            kept[k] = _renamed(plans[k], same)
    elif plans:
        merged, kept = _in_order(a, plans, args, same, out0, out1)
    if not merged:
        return a, plans, 0
    a = dict(a, in0=out0, in1=out1, output_rows=same[a["output_rows"]])
    if plans:  # every copy is dead now, so the pruning encodes the kept plans: no stale table is left
        del a["plans"], a["plan_places"]
    return a, kept, int(merged)


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


def _apart(a: dict[str, np.ndarray], same: np.ndarray) -> bool:
    """Whether no two array records have alike keys (_key), a pack's reads renamed by ``same``: each key a row of
    integers that alike records share (the plan table's row, its views' records renamed, a 0-d constant read
    as its number's bits, its places' first and last, a sum of its numbers' bits), hashed. Hashes that repeat
    (alike, or equal by chance) send cse the exact way, in order. NumPy over the table: no Python per record."""
    table, places, bits = a["plans"], a["plan_places"], a["arena"].view(np.int64)
    code, offset, start, count = table[:, 0], table[:, 2], table[:, 4], table[:, 5]
    size = sizes(table, SHAPE)[1]
    immediate = (code == ACONSTANT) & (table[:, SHAPE] == 0)
    key = table.copy()
    key[:, 1:3] = key[:, 4] = 0  # its row, region and where its places start: not what it computes
    for cols in VIEWS:
        view = key[:, cols]
        read = view[:, 0] >= 0
        plan = a["in0"][view[read, 0]].astype(np.int64)  # an array record's in0: its plan
        number = immediate[plan]  # (an array record's own: same names it, as none merged)
        rows = np.flatnonzero(read)[number]
        view[rows] = 0
        view[rows, 0], view[rows, 1] = -2, bits[offset[plan[number]]]
    placed = count > 0  # its places' first and last (a pack's: scalar records, renamed)
    pack = IS_PACK[code[placed]]
    for col, at in ((1, start[placed]), (4, start[placed] + count[placed] - 1)):
        ends = places[at]
        ends[pack] = same[ends[pack]]
        key[placed, col] = ends
    constant = (code == ACONSTANT) & ~immediate
    key[constant, 2] = _sums(bits[ranges(offset[constant], size[constant])], size[constant])
    hashed = key[~IS_KEPT[code] & ~immediate].view(np.uint64) @ WEIGHTS  # (wrapping; np.unique of rows: 6x slower)
    return len(np.unique(hashed)) == len(hashed)


def _sums(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Sums (int64, wrapping) of the pieces of values, counts long, one after another."""
    total = np.zeros(len(values) + 1, np.int64)
    np.cumsum(values, out=total[1:])
    ends = np.cumsum(counts)
    return total[ends] - total[ends - counts]
