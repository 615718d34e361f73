"""Vector mode on tapes with array records: k tangent directions in one forward sweep.

The tangent arena has a row per direction, (k, arena size), so a record's tangents are an array
with a leading axis of directions (its region of every row). Scalar stretches run the Numba
tangent kernel over k columns (``tangent_sweep``, as the scalar vector mode does); each array
record applies its rule's ``jvps`` (kernels/array_rule.py: its jvp, where NumPy broadcasts it over
the leading axis, or the kind's own; a constant's tangents are None there, zero without a product);
packs, gathers and elem reads move k numbers per element;
a call record runs its Function once per direction. A seeded or compressed Jacobian so costs one
sweep of products with k columns, not k sweeps. The buffers are this module's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tape.kernels.array_ops import RULE
from tape.kernels.ops import ARRAY_BASE
from tape.sweeps import tangents as single
from tape.sweeps.driver import Plan, View, contiguous, read, region

State = Any  # a Function with array records (tape/function/array_replay.py)


def rows(arena: np.ndarray, start: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """Elements (start, strides: in elements) of every row of a (k, size) arena, (k, *shape), no copy."""
    return np.ndarray((len(arena), *shape), np.float64, arena, 8 * start,
                      (arena.strides[0], *(8 * k for k in strides)))


def own(arena: np.ndarray, p: Plan) -> np.ndarray:
    """Record p's tangents, (k, *p.shape)."""
    return rows(arena, p.offset, p.shape, contiguous(p.shape))


def flat(arena: np.ndarray, p: Plan) -> np.ndarray:
    """Record p's tangents, (k, p.size)."""
    return arena[:, p.offset:p.offset + p.size]


def view(s: State, arena: np.ndarray, v: View) -> np.ndarray:
    return rows(arena, s._plans[s._in0[v.record]].offset + v.offset, v.shape, v.strides)


def one(s: State, p: Plan, dot: np.ndarray, adot: np.ndarray) -> None:
    """Array record p's k tangents from its inputs' (its rule's jvps; the plumbing kinds here)."""
    rule = RULE[p.code]
    if rule.reads == "views":
        tins = single.tangents_of(s, p, lambda v: view(s, adot, v))
        if rule.derivative and any(t is not None for t in tins):  # else it keeps the zeros it was allocated with
            out = own(adot, p)
            found = rule.jvps(p, read(s, s._aval, p), tins, region(s._aval, p), out)
            if found is not out:
                out[...] = found
    elif rule.reads == "callee":  # a Function (tape/function/call_records.py), once per direction
        for q in range(len(adot)):
            s._callees[p.places[0]]._call_tangent(s, p, adot[q])
    elif rule.reads == "elements":
        flat(adot, p)[...] = flat(adot, s._plans[s._in0[p.inputs[0].record]])[:, p.places]
    elif rule.reads == "scalars":
        flat(adot, p)[...] = dot[p.places].T


def buffers(s: State, k: int, keep: bool) -> tuple[np.ndarray, np.ndarray]:
    """(scalar tangents (n + 1, k), tangent arena (k, size)), zero but for what a sweep writes; ``keep``: kept by
    the Function for its next sweep of k directions (every sweep rewrites every record's tangents but the
    leaves', and seeds the inputs), k times its value arena held (at 10^6 numbers, faster by a quarter)."""
    kept = s.__dict__.get("_vector_buffers")  # (records, dot, adot): a retrace's records start from zeros
    if kept is None or kept[0] is not s._op or kept[2].shape != (k, len(s._aval)):
        kept = (s._op, np.zeros((len(s._op) + 1, k)), np.zeros((k, len(s._aval))))
        s.__dict__["_vector_buffers"] = kept if keep else None
    return kept[1], kept[2]


def tangents(s: State, dot: np.ndarray, adot: np.ndarray) -> None:
    """Tangents of every record for k directions, the inputs seeded in dot (scalar records, (n + 1, k)) and adot
    (array inputs, (k, size))."""
    single.tangents(s, dot, adot, one)


def piece(s: State, arenas: tuple[np.ndarray, np.ndarray], row: int) -> np.ndarray:
    """A leaf's or an output's tangents, (k, its numbers): its region of every row, or its column of dot."""
    dot, adot = arenas
    return flat(adot, s._plans[s._in0[row]]) if s._op[row] >= ARRAY_BASE else dot[row:row + 1].T


def jacobian_times(s: State, seeds: np.ndarray, block: int = 16, keep: bool = False) -> np.ndarray:
    """(J Sᵀ)ᵀ for directions S as rows, (k, inputs) -> (k, outputs), at the point of the last value pass: sweeps
    of ``block`` directions each, inputs and outputs as a Function's pieces (tape/function/array_replay.py);
    ``keep``: the buffers kept for the next call (a sparse Jacobian's few colors, called again and again)."""
    out = np.empty((len(seeds), s._n_out))
    for start in range(0, len(seeds), block):
        chunk = seeds[start:start + block]
        arenas = buffers(s, len(chunk), keep)
        for row, a, b in s._in_pieces:
            piece(s, arenas, row)[...] = chunk[:, a:b]
        tangents(s, *arenas)
        for row, a, b in s._out_pieces:
            out[start:start + block, a:b] = piece(s, arenas, row)
    return out
