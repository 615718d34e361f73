"""Forward mode and forward-over-reverse on tapes with array records (jvp, hvp and what uses them).

The scalar stretches run the Numba kernels over the partials a value pass
stored (``tangent_sweep``, ``reverse_second_range``); each array record applies
its rule (kernels/array_kinds.py) read forward: one direction is vector mode's
k = 1 (tape/sweeps/vectors.py), a constant's tangent None, never a product with
zeros. A tangent arena ``adot`` has the value arena's layout; the second-order
reverse carries two arenas, the adjoints and their tangents, zeroed once per
call, and sends nothing to a constant. Every product goes through
``times``/``product``, so the structural-zero rule holds here as in the
reverse sweep.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tape.kernels import _sweeps
from tape.kernels.array_ops import ACONSTANT, RULE
from tape.kernels.array_rule import unbroadcast
from tape.kernels.ops import ARRAY_BASE, IS_LEAF
from tape.kernels.twins import Twin
from tape.sweeps.driver import Plan, View, elements, read, region, schedule, view

State = Any  # a Function with array records (tape/function/array_replay.py)
tangent_sweep = Twin(_sweeps.tangent_sweep, globals())  # (a twin while not ready: tape/kernels/twins.py)
reverse_second_range = Twin(_sweeps.reverse_second_range, globals())


def tangents(s: State, dot: np.ndarray, adot: np.ndarray, one: Callable[..., None]) -> None:
    """Tangents of every record, inputs seeded in dot (scalar records, (n + 1, k)) and adot (array inputs,
    (k, arena)); ``one`` takes an array record (sweeps/vectors.py's)."""
    n = len(s._op)
    arrays, elems, offsets = schedule(s, n)
    lo = 0
    with np.errstate(all="ignore"):
        for i in [*arrays, n]:
            if lo < i:
                e = elems[np.searchsorted(elems, lo):np.searchsorted(elems, i)]
                dot[e] = adot[..., elements(s, e, offsets)].T.reshape(len(e), dot.shape[1])
                tangent_sweep(IS_LEAF, s._op, s._partials[0], s._partials[1], s._targets[0], s._targets[1],
                              dot, lo, i)
            if i < n:
                one(s, s._plans[s._in0[i]], dot, adot)
            lo = i + 1


def tangents_of(s: State, p: Plan, view: Callable[[View], np.ndarray]) -> list[np.ndarray | None]:
    """Array record p's inputs' tangents, each ``view`` of its arena's; a constant's None: no product with its zeros,
    and the second-order reverse sends it nothing."""
    return [None if s._op[v.record] == ACONSTANT else view(v) for v in p.inputs]


def _add(s: State, arena: np.ndarray, v: View, c: np.ndarray) -> None:
    target = view(s, arena, v)
    target += unbroadcast(c, v.shape)


def reverse_second_one(s: State, p: Plan, arenas: tuple[np.ndarray, np.ndarray, np.ndarray],
                       adj_dot: np.ndarray) -> None:
    """Array record p sends (g, ġ) to its inputs: ġ' = ġ d + g ḋ, ḋ from the second partials."""
    adot, aadj, aadj_dot = arenas
    rule = RULE[p.code]
    if not rule.derivative:
        return
    if rule.reads == "callee":
        s._callees[p.places[0]]._call_second(s, p, arenas)
        return
    g, gd = region(aadj, p), region(aadj_dot, p)
    if rule.reads == "scalars":
        np.add.at(s._adj, p.places, g.reshape(-1))
        np.add.at(adj_dot, p.places, gd.reshape(-1))
    elif rule.reads == "elements":
        source = s._plans[s._in0[p.inputs[0].record]]
        np.add.at(region(aadj, source).reshape(-1), p.places, g.reshape(-1))
        np.add.at(region(aadj_dot, source).reshape(-1), p.places, gd.reshape(-1))
    else:
        tins = tangents_of(s, p, lambda v: view(s, adot, v))
        if all(t is None for t in tins):
            return
        sends = rule.vjp_jvp(p, g, gd, read(s, s._aval, p), tins, region(s._aval, p))
        for v, t, send in zip(p.inputs, tins, sends, strict=True):
            if send is not None and t is not None:
                _add(s, aadj, v, send[0])
                _add(s, aadj_dot, v, send[1])


def reverse_second(s: State, seed: int, dot: np.ndarray, adot: np.ndarray, adj_dot: np.ndarray,
                   weights: list[tuple[int, Any, Any]] | None = None) -> None:
    """Forward-over-reverse from scalar record seed: s._adj and adj_dot (scalar records), s._aadj
    and the adjoint-tangent arena (array records) hold (adjoint, its tangent) afterwards.

    weights: (row, w, ẇ) seeds of the outputs instead of 1 at seed, the last of them (a call
    record's Function: H(w·F) v + Jᵀ ẇ, tape/function/call_records.py)."""
    h = s._second[0]
    aadj_dot = s._aadj_dot
    s._adj[:] = 0.0
    adj_dot[:] = 0.0
    s._aadj[:] = 0.0
    aadj_dot[:] = 0.0
    for row, w, wd in weights if weights is not None else [(seed, 1.0, 0.0)]:
        if s._op[row] >= ARRAY_BASE:
            region(s._aadj, s._plans[s._in0[row]]).reshape(-1)[...] += w
            region(aadj_dot, s._plans[s._in0[row]]).reshape(-1)[...] += wd
        else:
            s._adj[row] += w
            adj_dot[row] += wd
    arrays, elems, offsets = schedule(s, seed + 1)
    hi = seed + 1
    p, r = s._partials, s._targets
    with np.errstate(all="ignore"):
        for i in [*arrays[::-1], -1]:
            if i + 1 < hi:
                reverse_second_range(s._adj, adj_dot, dot, p[0], p[1], h[0], h[1], h[2], r[0], r[1], i + 1, hi)
                e = elems[np.searchsorted(elems, i + 1):np.searchsorted(elems, hi)][::-1]
                np.add.at(s._aadj, elements(s, e, offsets), s._adj[e])  # elem records back to their elements
                np.add.at(aadj_dot, elements(s, e, offsets), adj_dot[e])
            if i >= 0:
                reverse_second_one(s, s._plans[s._in0[i]], (adot, s._aadj, aadj_dot), adj_dot)
            hi = i
