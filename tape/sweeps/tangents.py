"""Forward mode and forward-over-reverse on tapes with array records (jvp, hvp and what uses them).

The scalar stretches run the Numba kernels over the partials a value pass
stored (``tangent_sweep``, ``reverse_second_range``); each array record applies
its rule from kernels/array_ops.py read forward. A tangent arena ``adot`` has
the value arena's layout; the second-order reverse carries two arenas, the
adjoints and their tangents, zeroed once per call. Every product goes through
``times``/``product``, so the structural-zero rule holds here as in the
reverse sweep.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tape.kernels._array_rules import RULES
from tape.kernels._sweeps import reverse_second_range, tangent_sweep
from tape.kernels.array_ops import ACONSTANT, ARRAY_KIND, extreme_share, kept, product, times, unbroadcast
from tape.kernels.ops import ARRAY_BASE, IS_LEAF
from tape.kernels.scans import permutation, scan_jvp, scan_vjp_second, sort_vjp
from tape.sweeps.driver import Plan, View, elements, read, region, schedule, view

State = Any  # a Function with array records (tape/function/array_replay.py)


def _views(s: State, arena: np.ndarray, p: Plan) -> list[np.ndarray]:
    return [view(s, arena, v) for v in p.inputs]


def _softmax(a: np.ndarray, y: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.exp(a - y.reshape(kept(a.shape, axes)))


def tangent_one(s: State, p: Plan, dot: np.ndarray, adot: np.ndarray) -> None:
    """Array record p's tangent from its inputs' tangents."""
    kind = ARRAY_KIND[p.code]
    if kind == "input":
        return
    if kind == "call":  # a Function (tape/function/call_records.py)
        s._callees[p.places[0]]._call_tangent(s, p, adot)
        return
    out = region(adot, p)
    if kind in ("constant", "compare", "all", "any"):
        out[...] = 0.0
        return
    a, da = read(s, s._aval, p), _views(s, adot, p)
    y = region(s._aval, p)
    if kind in ("unary", "binary"):
        rule, b = RULES[p.name], (a[1] if kind == "binary" else None)
        total: Any = 0.0
        for k in range(len(p.inputs)):
            d = rule[1 + k]
            if d is not None:
                total = total + times(da[k], d if isinstance(d, float) else d(a[0], b, y))
        out[...] = total
    elif kind == "select":
        out[...] = np.where(a[0] != 0.0, da[1], da[2])
    elif kind == "sum":
        out[...] = np.sum(da[0], axis=p.axes).reshape(p.shape)
    elif kind == "logsumexp":
        out[...] = np.sum(times(da[0], _softmax(a[0], y, p.axes)), axis=p.axes).reshape(p.shape)
    elif kind == "extreme":
        out[...] = np.sum(times(da[0], extreme_share(a[0], y, p.axes)), axis=p.axes).reshape(p.shape)
    elif kind == "scan":
        out[...] = scan_jvp(p.name, a[0], da[0], p.axes[0])
    elif kind == "sort":
        out[...] = np.take_along_axis(da[0], permutation(a[0], p.axes[0]), p.axes[0])
    elif kind == "matmul":
        out.reshape(p.wide)[...] = product(da[0], a[1]) + product(a[0], da[1])
    elif kind == "gather":
        out.reshape(-1)[...] = region(adot, s._plans[s._in0[p.inputs[0].record]]).reshape(-1)[p.places]
    elif kind == "pack":
        out.reshape(-1)[...] = dot[p.places, 0]


def tangents(s: State, dot: np.ndarray, adot: np.ndarray) -> None:
    """Tangents of every record, inputs seeded in dot (scalar records) and adot (array inputs)."""
    n = len(s._op)
    arrays, elems, offsets = schedule(s, n)
    lo = 0
    with np.errstate(all="ignore"):
        for i in [*arrays, n]:
            if lo < i:
                e = elems[np.searchsorted(elems, lo):np.searchsorted(elems, i)]
                dot[e, 0] = adot[elements(s, e, offsets)]
                tangent_sweep(IS_LEAF, s._op, s._partials[0], s._partials[1], s._targets[0], s._targets[1],
                              dot, lo, i)
            if i < n:
                tangent_one(s, s._plans[s._in0[i]], dot, adot)
            lo = i + 1


def _add(s: State, arena: np.ndarray, v: View, c: np.ndarray) -> None:
    if s._op[v.record] != ACONSTANT:
        target = view(s, arena, v)
        target += unbroadcast(c, v.shape)


def reverse_second_one(s: State, p: Plan, arenas: tuple[np.ndarray, np.ndarray, np.ndarray],
                       adj_dot: np.ndarray) -> None:
    """Array record p sends (g, ġ) to its inputs: ġ' = ġ d + g ḋ, ḋ from the second partials."""
    adot, aadj, aadj_dot = arenas
    kind = ARRAY_KIND[p.code]
    if kind in ("input", "constant", "compare", "all", "any"):
        return
    if kind == "call":
        s._callees[p.places[0]]._call_second(s, p, arenas)
        return
    g, gd = region(aadj, p), region(aadj_dot, p)
    if kind == "pack":
        np.add.at(s._adj, p.places, g.reshape(-1))
        np.add.at(adj_dot, p.places, gd.reshape(-1))
        return
    if kind == "gather":
        source = s._plans[s._in0[p.inputs[0].record]]
        np.add.at(region(aadj, source).reshape(-1), p.places, g.reshape(-1))
        np.add.at(region(aadj_dot, source).reshape(-1), p.places, gd.reshape(-1))
        return
    a, ta = read(s, s._aval, p), _views(s, adot, p)
    y = region(s._aval, p)
    sends: list[tuple[View, Any, Any]] = []  # (input, contribution, its tangent)
    if kind in ("unary", "binary"):
        rule, b = RULES[p.name], (a[1] if kind == "binary" else None)
        d = [r if r is None or isinstance(r, float) else r(a[0], b, y) for r in rule[1:3]]
        h = [r if r is None or isinstance(r, float) else r(a[0], b, y) for r in rule[3:]]  # daa, dab, dbb

        def dd(k: int) -> Any:  # the tangent of partial k: Σ_j d2y/dk dj ẋ_j, None where no second partial
            pairs = [(h[0], 0), (h[1], 1)] if k == 0 else [(h[1], 0), (h[2], 1)]
            terms = [times(ta[j], second) for second, j in pairs if second is not None and j < len(p.inputs)]
            return sum(terms[1:], terms[0]) if terms else None  # a 0-d operand's term is a NumPy scalar

        for k, v in enumerate(p.inputs):
            if d[k] is not None:
                tangent = dd(k)
                sends.append((v, times(g, d[k]), times(gd, d[k]) + (0.0 if tangent is None else times(g, tangent))))
    elif kind == "select":
        cond = a[0]
        sends = [(p.inputs[1], np.where(cond != 0.0, g, 0.0), np.where(cond != 0.0, gd, 0.0)),
                 (p.inputs[2], np.where(cond == 0.0, g, 0.0), np.where(cond == 0.0, gd, 0.0))]
    elif kind == "sum":
        shape = kept(p.inputs[0].shape, p.axes)
        sends = [(p.inputs[0], np.broadcast_to(g.reshape(shape), p.inputs[0].shape),
                  np.broadcast_to(gd.reshape(shape), p.inputs[0].shape))]
    elif kind == "extreme":  # piecewise linear: the shares do not move with the input
        shape, share = kept(p.inputs[0].shape, p.axes), extreme_share(a[0], y, p.axes)
        sends = [(p.inputs[0], times(g.reshape(shape), share), times(gd.reshape(shape), share))]
    elif kind == "scan":  # cumsum is linear; cumprod's adjoint-tangent from the same recurrences
        sends = [(p.inputs[0], *scan_vjp_second(p.name, a[0], ta[0], g, gd, p.axes[0]))]
    elif kind == "sort":  # piecewise linear: the permutation does not move with the input
        sends = [(p.inputs[0], sort_vjp(a[0], g, p.axes[0]), sort_vjp(a[0], gd, p.axes[0]))]
    elif kind == "logsumexp":
        shape = kept(p.inputs[0].shape, p.axes)
        soft = _softmax(a[0], y, p.axes)
        y_dot = np.sum(times(ta[0], soft), axis=p.axes, keepdims=True)
        soft_dot = times(soft, ta[0] - y_dot)
        sends = [(p.inputs[0], times(g.reshape(shape), soft),
                  times(gd.reshape(shape), soft) + times(g.reshape(shape), soft_dot))]
    elif kind == "matmul":
        G, Gd = g.reshape(p.wide), gd.reshape(p.wide)
        At, Bt = np.swapaxes(a[0], -1, -2), np.swapaxes(a[1], -1, -2)
        sends = [(p.inputs[0], product(G, Bt), product(Gd, Bt) + product(G, np.swapaxes(ta[1], -1, -2))),
                 (p.inputs[1], product(At, G), product(np.swapaxes(ta[0], -1, -2), G) + product(At, Gd))]
    for v, c, cd in sends:
        _add(s, aadj, v, c)
        _add(s, aadj_dot, v, cd)


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
