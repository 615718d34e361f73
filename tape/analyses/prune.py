"""Constant folding and dead-record elimination: a Function keeps only the records its outputs and
its checked comparisons depend on, with its inputs and params (in order, even where unused), and a
record that depends on no input or param (nor is a comparison) becomes a constant record.

It runs where a Function is made from a tape (Tape.function, tape.trace and its retraces; on by
default). The kept records are the same records in the same order, a folded one holding the value
its replay computes (the Numba forward sweep's), so every value, derivative and branch check comes
out bit for bit as before: no adjoint or tangent reaches an input through a record that depends on none.
With array records (tape/sweeps/driver.py's plans; call records are array records too) an array record reads
the records of its views (a pack its scalar rows) and an elem record its array record: an array record
is kept or dropped whole, the kept plans are renumbered (rows, views' records, pack places, callee
slots: a Function no kept call record calls is dropped) and the arena is compacted (the format wants
the regions one after another; copying the kept ones costs one pass). Only scalar records fold:
array and elem records count as varying, so nothing reading them folds. Between folding and pruning,
repeated subexpressions are merged (tape/analyses/cse.py): the pruning then drops the copies.
"""

from __future__ import annotations

import functools
import itertools
from operator import itemgetter
from typing import Any

import numpy as np

from tape.analyses.cse import cse
from tape.kernels import prune as _kernels
from tape.kernels.array_ops import ARRAY_KIND
from tape.kernels.ops import CONSTANT, ELEM, HAS_INPUT, IS_ARRAY, IS_COMPARISON, TWO_RECORDS, USES_POOL
from tape.kernels.twins import Twin
from tape.records.storage import NO_INPUT
from tape.sweeps import live as _live
from tape.sweeps import plans as _plans
from tape.sweeps.arenas import move, untouched
from tape.sweeps.driver import Plan, View, forward_scalars

compact, mark_varying = Twin(_kernels.compact, globals()), Twin(_kernels.mark_varying, globals())  # (kernels/twins.py)
ROWS = ("input_rows", "param_rows", "output_rows", "check_rows")  # the rows that name records
PLACED = np.isin(ARRAY_KIND, ("pack", "call"))  # by opcode: its places name records (pack) or a callee (call)


def prune(a: dict[str, np.ndarray], lines: dict[int, str] | None, plans: list[Plan], callees: list[Any],
          leaves_only: bool = False) -> tuple[dict[str, np.ndarray], dict[int, str] | None, list[Plan], list[Any]]:
    """The arrays (as _format.validate checks them) without the dead records, the source lines of the
    kept ones, the kept plans and the Functions their call records call; a, lines, plans and callees
    themselves where nothing is dead."""
    op, in0, in1 = a["op"], a["in0"], a["in1"]
    n = len(op)
    live, kept = _live.reaching(op, in0, in1, plans, [a[name] for name in ROWS])
    if kept == n:
        return a, lines, plans, callees
    new_row = np.full(n, -1, np.int64)
    slot_map = np.full(len(a["consts"]), -1, np.int64)
    slots = np.empty(len(a["consts"]), np.int64)
    out = np.empty(kept, np.uint8), np.empty(kept, np.uint32), np.empty(kept, np.uint32), np.empty(kept)
    n_slots = compact(op, in0, in1, a["val"], HAS_INPUT, TWO_RECORDS, USES_POOL, live, new_row, slot_map, *out,
                      slots)
    pruned = dict(a, op=out[0], in0=out[1], in1=out[2], val=out[3], consts=a["consts"][slots[:n_slots]])
    pruned.update({name: new_row[a[name]] for name in ROWS})
    if plans:
        plans, callees = _kept_plans(pruned, a["arena"], plans, callees, live, new_row, leaves_only)
    if lines is not None:
        lines = {int(new_row[r]): where for r, where in lines.items() if 0 <= r < n and live[r]}
    return pruned, lines, plans, callees


def _kept_plans(pruned: dict[str, np.ndarray], arena: np.ndarray, plans: list[Plan], callees: list[Any],
                live: np.ndarray, new_row: np.ndarray, leaves_only: bool) -> tuple[list[Plan], list[Any]]:
    """The live plans renumbered (into pruned's in0 too: an array record's plan, an elem's record),
    their regions packed one after another (pruned's plan table and arena), and the callees that the
    kept call records call (their slots renumbered in order)."""
    op, in0 = pruned["op"], pruned["in0"]
    in0[IS_ARRAY[op]] = np.arange(np.count_nonzero(IS_ARRAY[op]))
    elems = op == ELEM
    in0[elems] = new_row[in0[elems]]
    regions = list(itertools.compress(plans, live[_plans.ints(tuple(map(itemgetter(1), plans)))]))  # in order
    code, rows, before, shapes, inputs, axes, held, wide = zip(*regions, strict=True) if regions else ((),) * 8
    size = _plans.regions(regions)[2]
    offset = int(size.sum())
    views = tuple(itertools.chain.from_iterable(inputs))
    record, at, vshapes, strides = zip(*views, strict=True) if views else ((),) * 4
    renamed = map(functools.partial(tuple.__new__, View), zip(new_row[_plans.ints(record)].tolist(), at, vshapes,
                                                               strides, strict=True))
    places = list(held)
    slots: dict[int, int] = {}  # a kept callee's slot: its new one
    for k in np.flatnonzero(PLACED[_plans.ints(code)]).tolist():  # packs' scalar rows, call records' callees
        places[k] = new_row[places[k]] if ARRAY_KIND[code[k]] == "pack" else np.array(
            [slots.setdefault(int(places[k][0]), len(slots))], np.int64)
        places[k].flags.writeable = False
    kept = list(map(functools.partial(tuple.__new__, Plan), zip(
        code, new_row[_plans.ints(rows)].tolist(), (np.cumsum(size) - size).tolist(), shapes,
        [tuple(itertools.islice(renamed, k)) for k in _plans.lengths(inputs).tolist()], axes, places, wide,
        strict=True)))  # (by zip and map, as plans.relaid: the GRU's 907 plans 7.8 -> 6.0 CPU-ms, was a loop)
    pruned["plans"], pruned["plan_places"] = _plans.encode(kept)
    if leaves_only:  # (the rest stays zero pages)
        pruned["arena"] = untouched(offset)
        move(regions, arena, kept, pruned["arena"])
    else:
        pruned["arena"] = np.concatenate([arena[o:o + n] for o, n in zip(before, size.tolist(), strict=True)]) if \
            regions else np.zeros(0)
    return kept, [callees[old] for old in slots]


def fold(a: dict[str, np.ndarray], plans: list[Plan]) -> tuple[dict[str, np.ndarray], int]:
    """The arrays with every scalar record that depends on no input or param, other than comparisons
    (checks name them) and leaves, made a constant record of its replayed value; and how many there
    were. Array and elem records count as varying: nothing that reads them folds."""
    op = a["op"]
    varying, foldable = np.zeros(len(op), np.bool_), np.zeros(len(op), np.bool_)
    arrays = [p.row for p in plans] + (np.flatnonzero(op == ELEM).tolist() if plans else [])
    rows = np.concatenate([a["input_rows"], a["param_rows"], np.array(arrays, np.int64)]).astype(np.int64)
    if not mark_varying(op, a["in0"], a["in1"], HAS_INPUT, TWO_RECORDS, _live.IS_SELECT, IS_COMPARISON, rows, varying,
                        foldable):
        return a, 0
    folded = np.flatnonzero(foldable)
    swept = a["val"].copy()  # the values a replay gives them (recording may differ in the last bit)
    forward_scalars(op, a["in0"], a["in1"], swept, a["consts"], int(folded[0]), int(folded[-1]) + 1)
    a = dict(a, op=op.copy(), in0=a["in0"].copy(), in1=a["in1"].copy(), val=a["val"].copy())
    a["op"][folded], a["in0"][folded], a["in1"][folded] = CONSTANT, NO_INPUT, NO_INPUT
    a["val"][folded] = swept[folded]
    return a, len(folded)


def run(a: dict[str, np.ndarray], lines: dict[int, str] | None, wanted: bool, plans: list[Plan], callees: list[Any],
        merge: bool = True, leaves_only: bool = False) -> tuple[dict[str, np.ndarray], dict[int, str] | None,
                                                                list[Plan], list[Any], tuple[int, int, str]]:
    """fold, merge common subexpressions (tape/analyses/cse.py; if merge) and prune where wanted, with the kept
    plans and callees and what stats() reports of it: the records folded, the records merged, and "done"
    or "off" (not wanted, or a tape's own records lent for derivatives at once). leaves_only: the arena
    holds only the constants' and inputs' numbers (a traced tape's, tape/sweeps/arenas.py): only those are copied."""
    if not wanted:
        return a, lines, plans, callees, (0, 0, "off")
    a, folded = fold(a, plans)
    a, plans, merged = cse(a, plans) if merge else (a, plans, 0)
    return (*prune(a, lines, plans, callees, leaves_only), (folded, merged, "done"))


def counts(pruning: tuple[int, int, int, str] | None, records: int) -> dict:
    """stats()'s entries of pruning: records as recorded, dropped, folded, merged, and what the passes did."""
    recorded, folded, merged, note = pruning or (records, 0, 0, "not run (loaded from a file)")
    return {"records_recorded": recorded, "records_dropped": recorded - records, "records_folded": folded,
            "records_merged": merged, "pruning": note}
