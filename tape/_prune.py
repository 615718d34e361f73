"""Dead-record elimination: a Function keeps only the records its outputs and its checked
comparisons depend on, with its inputs and params (in order, even where unused).

It runs where a Function is made from a tape (Tape.function, tape.trace and its retraces; on by
default). The kept records are the same records in the same order, so every value, derivative
and branch check comes out bit for bit as before; only records whose values nothing reads go.
Functions with array records or call records (whose plans name records and arena places) are
left as recorded for now: ``stats()["pruning"]`` says so.
"""

from __future__ import annotations

import numpy as np

from tape.kernels.ops import HAS_INPUT, OPCODE, TWO_RECORDS, USES_POOL
from tape.kernels.prune import compact, mark_live

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
    kept = mark_live(op, in0, in1, HAS_INPUT, TWO_RECORDS, IS_SELECT, roots, live)
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


def run(a: dict[str, np.ndarray], lines: dict[int, str] | None, wanted: bool, plans: list
        ) -> tuple[dict[str, np.ndarray], dict[int, str] | None, str]:
    """prune where wanted and possible, with what stats() reports of it: "done", "off" (not wanted,
    or a tape's own records lent for derivatives at once) or why it was skipped."""
    if not wanted:
        return a, lines, "off"
    if plans:
        return a, lines, "skipped: array or call records"
    return (*prune(a, lines), "done")


def counts(pruning: tuple[int, str] | None, records: int) -> dict:
    """stats()'s entries of pruning: records as recorded, records dropped, and what the pass did."""
    recorded, note = pruning or (records, "not run (loaded from a file)")
    return {"records_recorded": recorded, "records_dropped": recorded - records, "pruning": note}
