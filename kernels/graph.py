"""Numba passes over the records as a graph (for pictures and stats): what the outputs depend on,
the longest chain, how often each record is used. Linear in the records, no recursion."""

from __future__ import annotations

import numpy as np

from .compiling import jit


@jit
def mark_reaching(op, in0, in1, has_input, two_records, reads_previous, starts, reads, outputs, marked):
    """marked[i] = True for every record the outputs depend on (outputs included; a record of an op
    with reads_previous also reads the record just before it: a select its comparison; record i also
    reads reads[starts[i]:starts[i + 1]] where starts has n + 1 entries: an array record its operands,
    an elem record its array record; starts may be empty); returns how many."""
    top = 0
    for k in range(len(outputs)):
        marked[outputs[k]] = True
        top = max(top, outputs[k])
    count = 0
    for r in range(top + 1):
        i = top - r
        if not marked[i]:
            continue
        count += 1
        k = op[i]
        if has_input[k]:
            marked[in0[i]] = True
            if two_records[k]:
                marked[in1[i]] = True
        if reads_previous[k]:
            marked[i - 1] = True
        if i + 1 < len(starts):
            for j in range(starts[i], starts[i + 1]):
                marked[reads[j]] = True
    return count


@jit
def depth_and_uses(op, in0, in1, has_input, two_records, depth, uses):
    """depth[i]: the longest chain of records ending at i; uses[j]: how many inputs name record j."""
    for i in range(len(op)):
        k = op[i]
        d = 0
        if has_input[k]:
            d = depth[in0[i]] + 1
            uses[in0[i]] += 1
            if two_records[k]:
                d = max(d, depth[in1[i]] + 1)
                uses[in1[i]] += 1
        depth[i] = d


def reaching(op: np.ndarray, in0: np.ndarray, in1: np.ndarray, has_input: np.ndarray, two_records: np.ndarray,
             outputs: np.ndarray) -> np.ndarray:
    """Sorted records that the outputs depend on through their inputs (in0, in1)."""
    marked = np.zeros(len(op), np.bool_)
    none = np.zeros(0, np.int64)
    mark_reaching(op, in0, in1, has_input, two_records, np.zeros(256, np.bool_), none, none,
                  np.asarray(outputs, np.int64), marked)
    return np.flatnonzero(marked)
