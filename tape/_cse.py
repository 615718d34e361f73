"""Common-subexpression elimination: a record that computes what an earlier one computes (the same op
on the same inputs in the same order, with the same constant bits; or a constant of the same bits) is
replaced by that earlier record in every input and output that names it, and the pruning that follows
(tape/_prune.py) drops it.

Values and tangents come out bit for bit as before: a merged record computed the same number from
the same numbers. Reverse-mode derivatives are those of the program written with each subexpression
once: the adjoints of the copies are added before their partials multiply them, which can change the
last bits (as in any AD system that merges). Comparisons and selects are not merged (a select reads
the comparison just before it, and a comparison carries its own branch check and source line), nor
are leaves (inputs, params, array elements) or array records. ``y * x`` is not merged with ``x * y``: where both are
NaN the two orders give NaNs of different signs.
"""

from __future__ import annotations

import numpy as np

from tape import _plans
from tape._sweep import Plan
from tape.kernels.array_ops import ARRAY_KIND
from tape.kernels.cse import merge
from tape.kernels.ops import HAS_INPUT, KIND, OPCODE, TWO_RECORDS, USES_POOL

MERGEABLE = np.isin(KIND, ("unary", "binary", "const")) | (np.arange(256) == OPCODE["constant"])


def _renamed(p: Plan, same: np.ndarray) -> Plan:
    places = same[p.places]
    places.flags.writeable = False  # as every plan's
    return p._replace(places=places)


def cse(a: dict[str, np.ndarray], plans: list[Plan]) -> tuple[dict[str, np.ndarray], list[Plan], int]:
    """The arrays and plans with every repeated subexpression read from its first record (the copies
    left for the pruning to drop; a pack's scalar records renamed too), and how many records merged."""
    op = a["op"]
    same = np.empty(len(op), np.int64)
    in0, in1 = np.empty_like(a["in0"]), np.empty_like(a["in1"])
    merged = merge(op, a["in0"], a["in1"], a["val"].view(np.int64), a["consts"].view(np.int64), HAS_INPUT,
                   TWO_RECORDS, USES_POOL, MERGEABLE, same, in0, in1)
    if not merged:
        return a, plans, 0
    a = dict(a, in0=in0, in1=in1, output_rows=same[a["output_rows"]])
    if any(ARRAY_KIND[p.code] == "pack" for p in plans):
        plans = [_renamed(p, same) if ARRAY_KIND[p.code] == "pack" else p for p in plans]
        a["plans"], a["plan_places"] = _plans.encode(plans)
    return a, plans, merged
