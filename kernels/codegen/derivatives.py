"""The generator's fixed kernels of ``kernels/_sweeps.py``: sweeps over stored partials, and replays.

These need no op dispatch: the tangent sweep, vector reverse and second-order sweeps run
over the partials a value pass stored (forward_partials, forward_second), and the replay
entry points are one Numba call per Function call (low per-call overhead).
"""

from __future__ import annotations

from .sweeps import JIT

# np.int64(0), not 0, where a kernel passes a start to another: a literal 0 compiles the callee again for it
DERIVATIVE_KERNELS = f'''@{JIT}
def tangent_sweep(is_leaf, op, p0, p1, r0, r1, dot, start, stop):
    """Forward mode over records [start, stop), k directions at once: dot[i] = p0[i] dot[r0[i]] + p1[i] dot[r1[i]].

    dot has a row per record plus the zero dummy row; leaves keep their seeded
    tangents. A product with a zero factor, tangent or partial, contributes nothing
    (the structural-zero rule of every sweep: 0 * inf stays out).
    """
    k = dot.shape[1]
    for r in range(start, stop):
        i = np.uint64(r)
        if is_leaf[op[i]]:
            continue
        a = r0[i]
        b = r1[i]
        pa = p0[i]
        pb = p1[i]
        for q in range(k):
            t = 0.0
            if pa != 0.0 and dot[a, q] != 0.0:
                t += pa * dot[a, q]
            if pb != 0.0 and dot[b, q] != 0.0:
                t += pb * dot[b, q]
            dot[i, q] = t


@{JIT}
def reverse_vector(adj, p0, p1, r0, r1, seeds, weights):
    """k reverse sweeps in one pass: column q is reverse_partials seeded with weights[:, q]."""
    adj[:] = 0.0
    k = adj.shape[1]
    top = 0
    for s in range(len(seeds)):
        for q in range(k):
            adj[seeds[s], q] += weights[s, q]
        top = max(top, seeds[s])
    for r in range(top + 1):
        i = np.uint64(top - r)
        a = r0[i]
        b = r1[i]
        pa = p0[i]
        pb = p1[i]
        for q in range(k):
            g = adj[i, q]
            if g != 0.0:
                if pa != 0.0:
                    adj[a, q] += g * pa
                if pb != 0.0:
                    adj[b, q] += g * pb


@{JIT}
def reverse_second_range(adj, adj_dot, dot, p0, p1, h0, h1, h2, r0, r1, low, high):
    """Forward-over-reverse over records [low, high), high first, adjoints as they stand: adj as reverse_partials and
    adj_dot, its derivative along the tangents dot (one direction), so that from the output's adj 1.0 (and adj_dot
    0.0) adj_dot at the inputs is H v (tape/function/derivatives.py; tape/sweeps/driver.py runs it between array
    records)."""
    for r in range(high - low):
        i = np.uint64(high - 1 - r)
        g = adj[i]
        gd = adj_dot[i]
        if g == 0.0 and gd == 0.0:
            continue
        a = r0[i]
        b = r1[i]
        pa = p0[i]
        pb = p1[i]
        # tangents of the partials: d p0 = h0 ta + h1 tb, d p1 = h1 ta + h2 tb; as everywhere, a
        # product with a zero factor adds nothing
        ta = dot[a, 0]
        tb = dot[b, 0]
        dp0 = 0.0
        dp1 = 0.0
        if ta != 0.0:
            if h0[i] != 0.0:
                dp0 += h0[i] * ta
            if h1[i] != 0.0:
                dp1 += h1[i] * ta
        if tb != 0.0:
            if h1[i] != 0.0:
                dp0 += h1[i] * tb
            if h2[i] != 0.0:
                dp1 += h2[i] * tb
        if g != 0.0:
            if pa != 0.0:
                adj[a] += g * pa
            if pb != 0.0:
                adj[b] += g * pb
            if dp0 != 0.0:
                adj_dot[a] += g * dp0
            if dp1 != 0.0:
                adj_dot[b] += g * dp1
        if gd != 0.0:
            if pa != 0.0:
                adj_dot[a] += gd * pa
            if pb != 0.0:
                adj_dot[b] += gd * pb

'''


REPLAY_KERNELS = f'''@{JIT}
def set_inputs(rows, x, val):
    """val[rows] = x, before a sweep."""
    for k in range(len(rows)):
        val[rows[k]] = x[k]


@{JIT}
def first_failed(val, checks, expected):
    """After a sweep: the first failed check, or -1. (Two kernels, not one taking a flag: a literal flag
    compiled it once per value.)"""
    for k in range(len(checks)):
        if (val[checks[k]] != 0.0) != expected[k]:
            return k
    return -1


@{JIT}
def replay(op, in0, in1, val, consts, rows, x, checks, expected):
    """Set val[rows] = x, recompute every record; return the first failed check, or -1; or -2 - r where
    forward_sweep stopped at grouped record r (tape/function/replay.py goes on, then checks)."""
    set_inputs(rows, x, val)
    at = forward_sweep(op, in0, in1, val, consts, np.int64(0), len(op))
    return -2 - at if at >= 0 else first_failed(val, checks, expected)


@{JIT}
def replay_from(op, in0, in1, val, consts, rows, x, checks, expected, start):
    """replay on from record start (where forward_sweep stopped, or 0: a Function with grouped records starts here),
    grouped records included; the first failed check, or -1."""
    set_inputs(rows, x, val)
    forward_range(op, in0, in1, val, consts, start, len(op))
    return first_failed(val, checks, expected)


@{JIT}
def replay_partials(op, in0, in1, val, consts, partials, targets, rows, x, checks, expected):
    """Values and first partials at x; returns the first failed check, or -1; or -2 - r where forward_partials
    stopped at grouped record r (tape/function/derivatives.py goes on, then checks)."""
    set_inputs(rows, x, val)
    at = forward_partials(op, in0, in1, val, consts, partials[0], partials[1], targets[0], targets[1], np.int64(0))
    return -2 - at if at >= 0 else first_failed(val, checks, expected)


@{JIT}
def replay_gradient(op, in0, in1, val, consts, partials, targets, adj, rows, x, checks, expected,
                    seeds, weights, grad):
    """Values and partials at x, then one multiply-add reverse sweep seeded with weights.

    grad[k] = adjoint of rows[k]; returns the first failed check, or -1; or -2 - r, with no sweep, where
    forward_partials stopped at grouped record r (tape/function/replay.py goes on with replay_gradient_from).
    """
    set_inputs(rows, x, val)
    at = forward_partials(op, in0, in1, val, consts, partials[0], partials[1], targets[0], targets[1], np.int64(0))
    if at >= 0:
        return -2 - at
    return gradient_of_partials(val, partials, targets, adj, rows, checks, expected, seeds, weights, grad)


@{JIT}
def replay_gradient_from(op, in0, in1, val, consts, partials, targets, adj, rows, x, checks, expected,
                         seeds, weights, grad, start):
    """replay_gradient on from record start (where forward_partials stopped, or 0 as replay_from): one call."""
    set_inputs(rows, x, val)
    forward_partials_from(op, in0, in1, val, consts, partials[0], partials[1], targets[0], targets[1], start)
    return gradient_of_partials(val, partials, targets, adj, rows, checks, expected, seeds, weights, grad)


@{JIT}
def gradient_of_partials(val, partials, targets, adj, rows, checks, expected, seeds, weights, grad):
    """The checks, then the reverse sweep over the stored partials; grad[k] = adjoint of rows[k]."""
    failed = first_failed(val, checks, expected)
    reverse_partials(adj, partials[0], partials[1], targets[0], targets[1], seeds, weights)
    for k in range(len(rows)):
        grad[k] = adj[rows[k]]
    return failed

'''


def kernels() -> list[str]:
    """The lines of the fixed kernels."""
    return [DERIVATIVE_KERNELS, "", REPLAY_KERNELS, ""]
