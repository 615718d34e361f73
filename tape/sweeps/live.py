"""The records a Function's roots (inputs, params, outputs, checked comparisons) depend on, array
records included: dead-record elimination (tape/analyses/prune.py) keeps them, and fusion (tape/sweeps/fusion.py)
finds its runs among them only, so a Function fuses the same runs with or without its dead records
(a run's numbers differ from NumPy's record by record in the last bits)."""

from __future__ import annotations

import itertools
from operator import itemgetter
from typing import Any

import numpy as np

from tape.kernels import graph
from tape.kernels.array_ops import ARRAY_KIND
from tape.kernels.ops import ELEM, HAS_INPUT, OPCODE, TWO_RECORDS
from tape.kernels.twins import Twin
from tape.sweeps.plans import ints, lengths

IS_SELECT = np.arange(256) == OPCODE["select"]
IS_PACK = np.array(ARRAY_KIND) == "pack"  # by opcode
mark_reaching = Twin(graph.mark_reaching, globals())  # a small trace's first runs its twin while it is not ready


def reads(op: np.ndarray, in0: np.ndarray, plans: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(starts, reads) for mark_reaching: the records each array record reads (its views' records, a
    pack's scalar rows) and each elem record's array record, by reader (empty without array records). The plans
    taken apart by zip and map (tape/sweeps/plans.py's encode): no Python step per plan."""
    if not plans:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    elems = np.flatnonzero(op == ELEM)
    code, rows_, _, _, inputs, _, places, _ = zip(*plans, strict=True)
    row = ints(rows_)
    packs = np.flatnonzero(IS_PACK[ints(code)]).tolist()
    rows = tuple(map(places.__getitem__, packs))  # each pack's scalar rows
    n_in = lengths(inputs)
    views = tuple(itertools.chain.from_iterable(inputs))
    reader = np.concatenate([elems, np.repeat(row[packs], lengths(rows)), np.repeat(row, n_in)])
    read = np.concatenate([in0[elems].astype(np.int64), *rows, ints(tuple(map(itemgetter(0), views)))])
    starts = np.zeros(len(op) + 1, np.int64)
    np.cumsum(np.bincount(reader, minlength=len(op)), out=starts[1:])
    return starts, read[np.argsort(reader, kind="stable")]


def reaching(op: np.ndarray, in0: np.ndarray, in1: np.ndarray, plans: list[Any], roots: list[np.ndarray],
             table: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, int]:
    """(mask of the records the roots depend on, how many), by one reverse pass by index; table:
    reads(op, in0, plans) if the caller has it."""
    live = np.zeros(len(op), np.bool_)
    count = mark_reaching(op, in0, in1, HAS_INPUT, TWO_RECORDS, IS_SELECT, *(table or reads(op, in0, plans)),
                          np.concatenate(roots).astype(np.int64), live)
    return live, count
