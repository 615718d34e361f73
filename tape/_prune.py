"""Constant folding and dead-record elimination: a Function keeps only the records its outputs and
its checked comparisons depend on, with its inputs and params (in order, even where unused), and a
record that depends on no input or param (nor is a comparison) becomes a constant record.

It runs where a Function is made from a tape (Tape.function, tape.trace and its retraces; on by
default). The kept records are the same records in the same order, a folded one holding the value
its replay computes (the Numba forward sweep's), so every value, derivative and branch check comes
out bit for bit as before: no adjoint or tangent reaches an input through a record that depends on none.
Functions with array records or call records (whose plans name records and arena places) are
left as recorded for now: ``stats()["pruning"]`` says so.
"""

from __future__ import annotations

import numpy as np

from tape._cse import cse
from tape._storage import NO_INPUT
from tape.kernels._sweeps import forward_sweep
from tape.kernels.graph import mark_reaching
from tape.kernels.ops import CONSTANT, HAS_INPUT, IS_COMPARISON, OPCODE, TWO_RECORDS, USES_POOL
from tape.kernels.prune import compact, mark_varying

IS_SELECT = np.arange(256) == OPCODE["select"]
ROWS = ("input_rows", "param_rows", "output_rows", "check_rows")  # the rows that name records


def prune(a: dict[str, np.ndarray], lines: dict[int, str] | None) -> tuple[dict[str, np.ndarray],
                                                                           dict[int, str] | None]:
    """The arrays (as _format.validate checks them; scalar records only) without the dead records,
    and the source lines of the kept ones; a itself where nothing is dead."""
    op, in0, in1 = a["op"], a["in0"], a["in1"]
    n = len(op)
    live = np.zeros(n, np.bool_)
    roots = np.concatenate([a[name] for name in ROWS]).astype(np.int64)
    kept = mark_reaching(op, in0, in1, HAS_INPUT, TWO_RECORDS, IS_SELECT, roots, live)
    if kept == n:
        return a, lines
    new_row = np.full(n, -1, np.int64)
    slot_map = np.full(len(a["consts"]), -1, np.int64)
    slots = np.empty(len(a["consts"]), np.int64)
    out = np.empty(kept, np.uint8), np.empty(kept, np.uint32), np.empty(kept, np.uint32), np.empty(kept)
    n_slots = compact(op, in0, in1, a["val"], HAS_INPUT, TWO_RECORDS, USES_POOL, live, new_row, slot_map, *out,
                      slots)
    pruned = dict(a, op=out[0], in0=out[1], in1=out[2], val=out[3], consts=a["consts"][slots[:n_slots]])
    pruned.update({name: new_row[a[name]] for name in ROWS})
    if lines is not None:
        lines = {int(new_row[r]): where for r, where in lines.items() if 0 <= r < n and live[r]}
    return pruned, lines


def fold(a: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], int]:
    """The arrays with every record that depends on no input or param, other than comparisons (checks
    name them) and leaves, made a constant record of its replayed value; and how many there were."""
    op = a["op"]
    varying, foldable = np.zeros(len(op), np.bool_), np.zeros(len(op), np.bool_)
    rows = np.concatenate([a["input_rows"], a["param_rows"]]).astype(np.int64)
    if not mark_varying(op, a["in0"], a["in1"], HAS_INPUT, TWO_RECORDS, IS_SELECT, IS_COMPARISON, rows, varying,
                        foldable):
        return a, 0
    folded = np.flatnonzero(foldable)
    swept = a["val"].copy()  # the values a replay gives them (recording may differ in the last bit)
    forward_sweep(op, a["in0"], a["in1"], swept, a["consts"], int(folded[0]), int(folded[-1]) + 1)
    a = dict(a, op=op.copy(), in0=a["in0"].copy(), in1=a["in1"].copy(), val=a["val"].copy())
    a["op"][folded], a["in0"][folded], a["in1"][folded] = CONSTANT, NO_INPUT, NO_INPUT
    a["val"][folded] = swept[folded]
    return a, len(folded)


def run(a: dict[str, np.ndarray], lines: dict[int, str] | None, wanted: bool, plans: list, merge: bool = True
        ) -> tuple[dict[str, np.ndarray], dict[int, str] | None, tuple[int, int, str]]:
    """fold, merge common subexpressions (tape/_cse.py; if merge) and prune where wanted and possible, with what
    stats() reports of it: the records folded, the records merged, and "done", "off" (not wanted, or a
    tape's own records lent for derivatives at once) or why skipped."""
    if not wanted:
        return a, lines, (0, 0, "off")
    if plans:
        return a, lines, (0, 0, "skipped: array or call records")
    a, folded = fold(a)
    a, merged = cse(a) if merge else (a, 0)
    return (*prune(a, lines), (folded, merged, "done"))


def counts(pruning: tuple[int, int, int, str] | None, records: int) -> dict:
    """stats()'s entries of pruning: records as recorded, dropped, folded, merged, and what the passes did."""
    recorded, folded, merged, note = pruning or (records, 0, 0, "not run (loaded from a file)")
    return {"records_recorded": recorded, "records_dropped": recorded - records, "records_folded": folded,
            "records_merged": merged, "pruning": note}
