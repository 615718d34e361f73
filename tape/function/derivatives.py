"""Derivatives beyond the gradient: J v, Jacobians (vector mode) and Hessians (forward-over-reverse).

Vector mode carries k tangent or adjoint columns through one pass over the
stored partials (ADOL-C's ``fov_*``, CppAD's ``Forward(q, r)``), and k tangent
directions through one array sweep (tape/sweeps/vectors.py); Hessian-vector
products use each op's second partials in a reverse sweep that also carries
the adjoints' tangents.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tape.base.numbers import positive_int, real_array
from tape.function import arguments, array_replay, call_records, replay
from tape.kernels import _sweeps
from tape.kernels.array_ops import ACONSTANT
from tape.kernels.ops import ARRAY_BASE, IS_LEAF
from tape.kernels.twins import Twin
from tape.sweeps import driver, vectors
from tape.sweeps import tangents as _tangents

if TYPE_CHECKING:
    from tape.function.function import Function

# a small tape's first J v, Jacobian, H v or Hessian runs these kernels' twins while they are not compiled
replay_partials, reverse_vector = Twin(_sweeps.replay_partials, globals()), Twin(_sweeps.reverse_vector, globals())
tangent_sweep = Twin(_sweeps.tangent_sweep, globals())
reverse_second_range = Twin(_sweeps.reverse_second_range, globals())


def at(F: Function, point: np.ndarray, second: bool = False) -> None:
    """Values and partials at point (second partials too), with the branch policy applied."""
    array_replay.full(F)
    if second and F._second is None:
        n = len(F)
        F._second = (np.zeros((3, n)), np.zeros(n + 1))
        F._aadj_dot = np.zeros(len(F._aval))
    if F._plans:
        at_arrays(F, point, second)
        return
    args = (F._op, F._in0, F._in1, F._val, F._consts, F._partials)
    checks = (F._input_rows, point, F._check_rows, F._check_expected)
    if second:  # replay_partials' steps for second partials, from here: a kernel of them compiled forward_second
        # into itself once more (0.25 CPU-s of a first hvp, sparse or dense Hessian, cold)
        F._val[F._input_rows] = point
        row = replay.partials(F, True, 0)
        failed = -2 - row if row >= 0 else array_replay.first_failed(F)
    else:
        failed = replay_partials(*args, F._targets, *checks)
    if failed <= -2:  # stopped at a grouped record: the _from kernels have their rules
        replay.partials(F, second, -2 - failed, full=True)
        failed = array_replay.first_failed(F)
    if failed >= 0 and replay.branch_changed(F, failed, point):
        replay.again(F, at, F, point, second)
    elif array_replay.checking(F):
        replay.check(F)


def at_arrays(F: Function, point: np.ndarray, second: bool) -> None:
    """_at for a Function with array records: the array sweep for values, then the scalar
    records' partials (a scalar kernel recomputes their values, the same numbers)."""
    failed = array_replay.sweep_forward(F, point, fused=False)
    if failed >= 0 and replay.branch_changed(F, failed, point):
        replay.again(F, at, F, point, second)
        return
    if (row := replay.partials(F, second, 0)) >= 0:  # a grouped record: the _from kernels have their rules
        replay.partials(F, second, row, full=True)
    if array_replay.checking(F):
        replay.check(F)


def array_jvp(F: Function, direction: np.ndarray) -> np.ndarray:
    dot, adot = array_replay.array_tangents(F, direction)
    return array_replay.collect(F, F._out_pieces, dot[:, 0], adot)


def array_hvp(F: Function, direction: np.ndarray) -> np.ndarray:
    assert F._second is not None
    dot, adot = array_replay.array_tangents(F, direction)
    adj_dot = F._second[1]
    _tangents.reverse_second(F, int(F._output_rows[0]), dot, adot, adj_dot)
    return array_replay.collect(F, F._in_pieces, adj_dot, F._aadj_dot)


def tangents(F: Function, seeds: np.ndarray) -> np.ndarray:
    """Tangents of every record for the input directions seeds (n_inputs, k); for one direction,
    in a column kept for the next call (valid until then)."""
    if seeds.shape[1] == 1:
        dot = F.__dict__.get("_dot")
        if dot is None or len(dot) != len(F) + 1:
            dot = F._dot = np.zeros((len(F) + 1, 1))
        dot.fill(0.0)
    else:
        dot = np.zeros((len(F) + 1, seeds.shape[1]))
    dot[F._input_rows] = seeds
    tangent_sweep(IS_LEAF, F._op, F._partials[0], F._partials[1], F._targets[0],
                  F._targets[1], dot, 0, len(F._op))
    if array_replay.checking(F):
        replay.check(F, tangents=dot)
    return dot


def jvp(F: Function, x: Any, v: Any, params: Any = None) -> float | np.ndarray:
    """F.jvp: what Function.jvp says (tape/function/function.py)."""
    point = arguments.prepare(F, x, params)
    direction = arguments.direction(F, v, "tangent entries")
    at(F, point)
    return arguments.output(F, array_jvp(F, direction) if F._plans
                        else tangents(F, direction[:, None])[F._output_rows, 0])


def jacobian(F: Function, x: Any, params: Any = None, mode: str = "auto", block: int = 16,
             seeds: Any = None) -> Any:
    """F.jacobian: what Function.jacobian says (tape/function/function.py)."""
    block = positive_int(block, "block")
    if seeds is not None:
        if mode == "reverse" or block < 1:
            raise ValueError(f"seeds take mode auto or forward and block >= 1, got {mode!r}, {block!r}")
        S = real_array(seeds, "seeds")
        if S.ndim != 2 or S.shape[0] != F.n_inputs:
            raise ValueError(f"seeds must be an (n_inputs, k) = ({F.n_inputs}, k) matrix, got shape {S.shape}")
        at(F, arguments.prepare(F, x, params))
        return seeded(F, S, block).reshape(F._output_shape + (S.shape[1],))
    return arguments.jacobian_shaped(F, dense_jacobian(F, x, params, mode, block))


def seeded(F: Function, seeds: np.ndarray, block: int) -> np.ndarray:
    """J seeds, (n_outputs, k), at the point of the last _at: forward sweeps of block columns each."""
    k = seeds.shape[1]
    if F._plans:  # vector mode: array sweeps of block directions each
        return vectors.jacobian_times(F, np.ascontiguousarray(seeds.T), block).T
    out = np.empty((F.n_outputs, k))
    for start in range(0, k, block):
        out[:, start:start + block] = tangents(F, seeds[:, start:start + block])[F._output_rows]
    return out


def dense_jacobian(F: Function, x: Any, params: Any, mode: str, block: int) -> np.ndarray:
    """The (n_outputs, n_inputs) Jacobian."""
    if mode not in ("auto", "forward", "reverse") or block < 1:
        raise ValueError(f"mode must be auto, forward or reverse and block >= 1, got {mode!r}, {block!r}")
    n, m = F.n_inputs, F.n_outputs
    at(F, arguments.prepare(F, x, params))
    J = np.empty((m, n))
    if mode == "forward" or (mode == "auto" and n <= m):
        for start in range(0, n, block):
            k = min(block, n - start)
            seeds = np.zeros((n, k))
            seeds[start + np.arange(k), np.arange(k)] = 1.0
            J[:, start:start + k] = seeded(F, seeds, block)
        return J
    if F._plans:  # one output per reverse sweep
        eye = np.eye(m)
        for i in range(m):
            J[i] = array_replay.sweep_reverse(F, eye[i])
        return J
    for start in range(0, m, block):
        k = min(block, m - start)
        weights = np.zeros((m, k))
        weights[start + np.arange(k), np.arange(k)] = 1.0
        adj = np.empty((len(F) + 1, k))
        reverse_vector(adj, F._partials[0], F._partials[1], F._targets[0], F._targets[1],
                       F._output_rows, weights)
        if array_replay.checking(F):
            replay.check(F, adjoints=adj)
        J[start:start + k] = adj[F._input_rows].T
    return J


def hessian_columns(F: Function, directions: np.ndarray) -> np.ndarray:
    """H v for each column v of directions, from the second partials stored by _at(second=True)."""
    assert F._second is not None, "_at(second=True) first"
    h, adj_dot = F._second
    out = np.empty_like(directions)
    p, r = F._partials, F._targets
    seed = int(F._output_rows[0])
    for q in range(directions.shape[1]):
        dot = tangents(F, directions[:, q:q + 1])
        F._adj.fill(0.0)  # forward-over-reverse from the output: adj as reverse_partials, adj_dot its tangent
        adj_dot.fill(0.0)
        F._adj[seed] = 1.0
        reverse_second_range(F._adj, adj_dot, dot, p[0], p[1], h[0], h[1], h[2], r[0], r[1], 0, seed + 1)
        if array_replay.checking(F):
            replay.check(F, adjoints=F._adj)
            replay.check(F, adjoints=adj_dot, what="adjoint's tangent")
        out[:, q] = adj_dot[F._input_rows]
    return out


def hvp(F: Function, x: Any, v: Any, params: Any = None) -> Any:
    """F.hvp: what Function.hvp says (tape/function/function.py)."""
    if F.n_outputs != 1:
        raise ValueError(f"hvp needs one output, this Function has {F.n_outputs}")
    point = arguments.prepare(F, x, params)
    direction = arguments.direction(F, v, "direction entries")
    at(F, point, second=True)
    if F._plans:
        return arguments.shaped(F, array_hvp(F, direction))
    return arguments.shaped(F, hessian_columns(F, direction[:, None])[:, 0])


def value_grad_hvp(F: Function, x: Any, v: Any, params: Any = None) -> tuple[float, Any, Any]:
    """F.value_grad_hvp: what Function.value_grad_hvp says (tape/function/function.py)."""
    if F.n_outputs != 1:
        raise ValueError(f"value_grad_hvp needs one output, this Function has {F.n_outputs}")
    point = arguments.prepare(F, x, params)
    direction = arguments.direction(F, v, "direction entries")
    at(F, point, second=True)
    if F._plans:
        hv = array_hvp(F, direction)
        grad = array_replay.collect(F, F._in_pieces, F._adj, F._aadj)
    else:
        hv = hessian_columns(F, direction[:, None])[:, 0]
        grad = F._adj[F._input_rows]
    return float(F._val[F._output_rows[0]]), arguments.shaped(F, grad), arguments.shaped(F, hv)


def hessian(F: Function, x: Any, params: Any = None) -> Any:
    """F.hessian: what Function.hessian says (tape/function/function.py)."""
    if F.n_outputs != 1:
        raise ValueError(f"hessian needs one output, this Function has {F.n_outputs}")
    at(F, arguments.prepare(F, x, params), second=True)
    if F._plans:
        H = np.stack([array_hvp(F, e) for e in np.eye(F.n_inputs)], axis=1)
    else:
        H = hessian_columns(F, np.eye(F.n_inputs))
    return arguments.hessian_shaped(F, 0.5 * (H + H.T))


# -- as a call record of another tape (tape/function/call_records.py) ------------------------


def call_second(F: Function, s: Any, p: driver.Plan, arenas: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    adot, aadj, aadj_dot = arenas
    g, gd = driver.region(aadj, p).reshape(-1), driver.region(aadj_dot, p).reshape(-1)
    v = p.inputs[0]
    if (not g.any() and not gd.any()) or s._op[v.record] == ACONSTANT:
        return
    x, params = call_records.reads(s, p)
    with call_records.inside(F, p):
        c, cd = weighted_second(F, x, params, g, driver.view(s, adot, v), gd)
    for arena, numbers_ in ((aadj, c), (aadj_dot, cd)):
        target = driver.view(s, arena, v)
        target += numbers_.reshape(v.shape)


def weighted_second(F: Function, x: np.ndarray, params: np.ndarray | None, w: np.ndarray, v: np.ndarray,
                    w_dot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Jᵀ w, H(w·F) v + Jᵀ ẇ) at x: d/dt of Jᵀ w along (v, ẇ), by one forward-over-reverse sweep."""
    with F._lock:
        point = arguments.prepare(F, np.ascontiguousarray(x), params)
        direction = arguments.direction(F, np.ascontiguousarray(v), "tangent entries")
        at(F, point, second=True)
        assert F._second is not None
        if F._plans:
            dot, adot = array_replay.array_tangents(F, direction)
            adj_dot = F._second[1]
            weights = [(row, w[a:b] if F._op[row] >= ARRAY_BASE else w[a], w_dot[a:b] if F._op[row] >= ARRAY_BASE
                        else w_dot[a]) for row, a, b in F._out_pieces]
            _tangents.reverse_second(F, max(row for row, _, _ in weights), dot, adot, adj_dot, weights)
            return (array_replay.collect(F, F._in_pieces, F._adj, F._aadj),
                    array_replay.collect(F, F._in_pieces, adj_dot, F._aadj_dot))
        dot = tangents(F, direction[:, None])
        adj, adj_dot = F._adj, F._second[1]
        adj[:] = 0.0
        adj_dot[:] = 0.0
        np.add.at(adj, F._output_rows, w)
        np.add.at(adj_dot, F._output_rows, w_dot)
        (h, _), p, r = F._second, F._partials, F._targets
        reverse_second_range(adj, adj_dot, dot, p[0], p[1], h[0], h[1], h[2], r[0], r[1], 0,
                             int(F._output_rows.max()) + 1)
        return adj[F._input_rows].copy(), adj_dot[F._input_rows].copy()
