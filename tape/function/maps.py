"""Many points at once: F.map, map_value_and_grad, map_jvp, map_vjp, in parallel threads.

The points are split into one block per thread (``numba.set_num_threads`` chooses how many), each
one call of a map kernel (kernels/_sweeps.py, which releases the GIL) with its own working arrays,
running the same statements as a single call, so every result equals the single-point call bit for
bit. A point whose recorded comparisons flip is handled by the Function's policy.
"""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numba
import numpy as np
from numpy.typing import ArrayLike

from tape.base.numbers import real_array
from tape.debug.nans import branch_changed
from tape.errors import BranchChanged, NonFiniteError
from tape.function import arguments, array_replay, derivatives, distributed, format, replay
from tape.kernels import _sweeps, twins
from tape.kernels.compiling import LOAD, Gate
from tape.kernels.ops import IS_LEAF
from tape.kernels.twins import Twin

if TYPE_CHECKING:
    from tape.function.function import Function

_PARALLEL = threading.Lock()  # the maps take turns (each uses every thread)
map_values = Twin(_sweeps.map_values, globals())  # (a twin while not ready, on few records x points: kernels/twins.py)
map_gradients = Twin(_sweeps.map_gradients, globals())
map_tangents = Twin(_sweeps.map_tangents, globals())


def _unlock_in_child() -> None:
    """A fork copies the lock as it was: held, if another thread was mapping. The child has no such thread."""
    global _PARALLEL
    _PARALLEL = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_unlock_in_child)


THREADED_ELEMENTS = 2**16  # arena elements from which a map of a Function with array records uses threads


def _blocks(points: int) -> int:
    """One block of points per Numba thread (numba.set_num_threads chooses how many)."""
    return max(1, min(points, numba.get_num_threads()))


def in_blocks(kernel: Any, points: int, records: int, *args: Any) -> None:
    """kernel(lo, hi, *args) over blocks of the points, one per thread; in this thread where records x points is
    small enough for the kernel's CPython twin (kernels/twins.py), whose restore after an arithmetic error would undo
    another thread's block. Past the twin, while the map kernel is not ready (its Gate), the points may run on the
    single call's kernels (by_point)."""
    small = records * points <= twins.SMALL
    by_point = BY_POINT.get(getattr(kernel, "kernel", kernel))
    lo = by_point_first(*by_point, points, args) if by_point is not None and not small and twins.ENABLED else 0
    if lo < points:
        spread(kernel, lo, points, 1 if small else _blocks(points - lo), args)


def spread(f: Callable[..., Any], lo: int, hi: int, blocks: int, args: tuple) -> list:
    """f(a, b, *args) over ``blocks`` blocks of the points lo to hi, one per thread (in this one where one): their
    results."""
    cuts = [lo + b * (hi - lo) // blocks for b in range(blocks + 1)]
    if blocks == 1:
        return [f(lo, hi, *args)]
    with concurrent.futures.ThreadPoolExecutor(blocks) as pool:
        return [block.result() for block in [pool.submit(f, a, b, *args) for a, b in itertools.pairwise(cuts)]]


def cpu(stand_in: Callable[..., None], lo: int, hi: int, *args: Any) -> float:
    """stand_in(lo, hi, *args); the CPU seconds of this thread it took (under load a wall clock runs 2-8x its CPU)."""
    start = time.thread_time()
    stand_in(lo, hi, *args)
    return time.thread_time() - start


def by_point_first(gate: Gate, stand_in: Callable[..., None], points: int, args: tuple) -> int:
    """How many points the single call's kernels serve before the map kernel, its Gate shut: a first few (PROBE), then
    all, in a block per thread (their kernels release the GIL), where the stand-ins' CPU seconds in this process and
    the rest's (as the first few's) stay within the Gate's payback; else the map kernel is compiled (or loaded) at
    once, as it would be after renting up to the payback: a ski rental that knows this map's length."""
    if gate.ready():
        return 0
    lo = 0
    if stand_in not in _RUN:  # off the clock: it may compile the single call's kernels, which the next point does not
        stand_in(0, 1, *args)
        _RUN.add(stand_in)
        lo = 1
    first, seconds = lo, 0.0
    while lo < points and seconds < PROBE[0] and lo - first < points * PROBE[1]:  # 1, 2, 4... points
        hi = min(points, 2 * lo - first + 1)
        seconds += cpu(stand_in, lo, hi, *args)
        lo = hi
    if lo > first:
        gate.clock.add(seconds)
        gate.clock.last = seconds / (lo - first) * (points - lo)  # what the rest would cost: the Gate's next run
        if lo < points and not gate.ready():
            gate.clock.add(sum(spread(functools.partial(cpu, stand_in), lo, points, _blocks(points - lo), args)))
            lo = points
        gate.clock.last = seconds / (lo - first)  # the next run: a next map's first point
    return lo


# The map kernels' stand-ins: the single call's kernels point by point (the statements a map kernel runs per point,
# so the same bits), which a Function's single calls compile too. A map kernel compiles its own op switch (and the
# grouped ops' rules, by forward_partials_from): map_jvp's first use cold 4.0-4.9 -> 1.7-1.9 CPU-s, map_value_and_grad's
# 3.2-4.2 -> 1.9-2.4 (bench/first_uses.py). A ski rental, as the twins': the map kernel once the points would have run
# about its compile (COMPILE), or its load where cached (LOAD); at 1 s of wall (twins.PAYBACK) a 20,000-point
# map_value_and_grad of an 8k-record tape compiled map_gradients after 1 s: 5.7-6.6 CPU-s cold, now 2.7-2.9.


def _values_by_point(lo: int, hi: int, *a: np.ndarray) -> None:
    """map_values (its arguments) by F(x)'s kernels (replay.call)."""
    op, in0, in1, val0, consts, rows, X, checks, expected, outputs, out, failed = a
    val, grouped = val0.copy(), replay.grouped(op)
    for p in range(lo, hi):
        args = (op, in0, in1, val, consts, rows, X[p], checks, expected)
        at = replay.replay_from(*args, 0) if grouped else replay.replay(*args)
        failed[p] = replay.replay_from(*args, -2 - at) if at <= -2 else at
        out[p] = val[outputs]


def _gradients_by_point(lo: int, hi: int, *a: np.ndarray) -> None:
    """map_gradients (its arguments) by F.vjp's kernels (replay.reverse)."""
    op, in0, in1, val0, consts, targets0, rows, X, checks, expected, seeds, W, values, grads, failed = a
    n = len(op)
    val, targets, partials, adj = val0.copy(), targets0.copy(), np.zeros((2, n)), np.zeros(n + 1)
    grad, grouped = np.empty(len(rows)), replay.grouped(op)
    for p in range(lo, hi):
        args = (op, in0, in1, val, consts, partials, targets, adj, rows, X[p], checks, expected, seeds, W[p], grad)
        at = replay.replay_gradient_from(*args, 0) if grouped else replay.replay_gradient(*args)
        failed[p] = replay.replay_gradient_from(*args, -2 - at) if at <= -2 else at
        grads[p], values[p] = grad, val[seeds]


def _tangents_by_point(lo: int, hi: int, *a: np.ndarray) -> None:
    """map_tangents (its arguments) by F.jvp's kernels (derivatives.at, derivatives.tangents)."""
    is_leaf, op, in0, in1, val0, consts, targets0, rows, X, V, checks, expected, outputs, out, failed = a
    n = len(op)
    val, targets, partials, dot = val0.copy(), targets0.copy(), np.zeros((2, n)), np.zeros((n + 1, 1))
    (p0, p1), (r0, r1) = partials, targets
    for p in range(lo, hi):
        at = derivatives.replay_partials(op, in0, in1, val, consts, partials, targets, rows, X[p], checks, expected)
        if at <= -2:
            replay.forward_partials_from(op, in0, in1, val, consts, p0, p1, r0, r1, -2 - at)
            at = _sweeps.first_failed(val, checks, expected)
        failed[p] = at
        dot[rows, 0] = V[p]  # (every other row: a leaf's 0.0, or written by the sweep)
        derivatives.tangent_sweep(is_leaf, op, p0, p1, r0, r1, dot, 0, n)
        out[p] = dot[outputs, 0]


_RUN: set[Callable[..., None]] = set()  # the stand-ins that have run a point in this process
PROBE = (0.02, 1 / 64)  # the first points' seconds and share of a map's that tell the rest's cost: one point's CPU-s
# varied 2x under load (a 20,000-point map compiled its kernel at load 10, where its stand-ins took 2.4-2.8 s of 3.4)
COMPILE = {"map_values": 1.9, "map_gradients": 3.4, "map_tangents": 2.8}  # CPU-s, each map kernel's compile after a
# first gradient (load 6; measured in s18)
BY_POINT: dict[Any, tuple[Gate, Callable[..., None]]] = {
    kernel: (Gate((kernel,), (LOAD, COMPILE[kernel.py_func.__name__])), stand_in) for kernel, stand_in in (
        (_sweeps.map_values, _values_by_point), (_sweeps.map_gradients, _gradients_by_point),
        (_sweeps.map_tangents, _tangents_by_point))}


def batch(F: Function, X: ArrayLike, count: int, what: str) -> np.ndarray:
    """X as a C-contiguous (N, count) float64 array (N points of count entries)."""
    points = real_array(X, what)
    if points.ndim == 1 and count == 1:
        points = points.reshape(-1, 1)
    if points.ndim != 2 or points.shape[1] != count:
        raise ValueError(f"expected {what} of shape (N, {count}), got shape {points.shape}")
    return points


def batch_call(F: Function, X: ArrayLike, params: ArrayLike | None,
                paired: tuple[ArrayLike, int, str] | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Points (N, n_inputs) and, if given, a per-point array (values, width, name) of N rows;
    sets the params for every point."""
    points = batch(F, X, F.n_inputs, "points")
    extra = None
    if paired is not None:
        extra = batch(F, paired[0], paired[1], paired[2])
        if len(extra) != len(points):
            raise ValueError(f"{len(points)} points but {len(extra)} rows of {paired[2]}")
    if params is not None:
        array_replay.place(F, F._param_pieces, arguments.vector(params, F.n_params, "params"))
    return points, extra


def one_by_one(F: Function, points: np.ndarray, single: Callable[..., None]) -> None:
    """A Function with array records maps point by point, a block of points per thread, each
    thread on a copy of the Function (its own arenas; made once, kept until a retrace). NumPy's
    loops and the fused kernels run without the GIL; the Python between them takes turns, so
    threads pay only for big arrays (measured, 40 points on 2 threads: 1.5x faster with 10^5
    elements per array, 2.6x slower with 2,000)."""
    blocks = _blocks(len(points)) if len(F._aval) >= THREADED_ELEMENTS else 1
    if blocks == 1 or array_replay.checking(F):
        for p in range(len(points)):
            single(p, F)
        return
    clones = copies(F, blocks)

    def block(b: int) -> None:
        for p in range(b * len(points) // blocks, (b + 1) * len(points) // blocks):
            single(p, clones[b])

    with concurrent.futures.ThreadPoolExecutor(blocks) as pool:
        list(pool.map(block, range(blocks)))


def copies(F: Function, count: int) -> list:
    """count copies of this Function for the threads of a map, with its params as they are now."""
    kept = F.__dict__.setdefault("_kept_copies", [])
    while len(kept) < count:
        copy = type(F)(format.arrays(F), F.on_branch_change, F._source, array_replay.recorded(F)[0], callees=F._callees)
        copy.check_finite, copy._lines = F.check_finite, F._lines
        kept.append(copy)
    for copy in kept[:count]:
        array_replay.place(copy, copy._param_pieces, array_replay.param_values(F))
    return kept[:count]


def settle(F: Function, failed: np.ndarray, X: np.ndarray, single: Callable[[int], None]) -> None:
    """Apply the branch policy to the points whose recorded comparisons flipped.

    "raise" names the first such point; "retrace" redoes each with ``single(p)``
    (the one-point call, which retraces as needed); "ignore" keeps the results.
    """
    if array_replay.checking(F):  # every point alone, through the checks of a single call
        for p in range(len(X)):
            try:
                single(p)
            except NonFiniteError as exc:
                raise NonFiniteError(f"point {p} of the {len(X)} given: {exc}", exc.row) from None
        return
    bad = np.flatnonzero(failed >= 0)
    if not len(bad) or F.on_branch_change == "ignore":
        return
    if F.on_branch_change == "raise":  # "retrace" implies a Python function (see on_branch_change)
        p = int(bad[0])
        k = int(failed[p])
        extra = f" (point {p} of the {len(X)} given; {len(bad)} points changed branch)"
        raise branch_changed(F._op, F._in0, F._in1, F._consts, int(F._check_rows[k]),
                             bool(F._check_expected[k]), str(F._check_where[k]), extra)
    for point in bad.tolist():
        single(point)


# -- one point, many points -------------------------------------------------------------


def single(F: Function, method: str, x: np.ndarray, *row: np.ndarray) -> tuple[np.ndarray, ...]:
    """The one-point call of a map, as flat result rows (see _widths)."""
    if method == "map":
        return (np.reshape(F(x), -1),)
    if method == "value_and_grad":
        value, grad = F.value_and_grad(x)
        return np.array([value]), np.reshape(grad, -1)
    return (np.reshape(getattr(F, method)(x, row[0]), -1),)


def widths(F: Function, method: str) -> tuple[int, ...]:
    n, m = F.n_inputs, F.n_outputs
    return {"map": (m,), "value_and_grad": (1, n), "vjp": (n,), "jvp": (m,), "hvp": (n,)}[method]


def raw(F: Function, method: str, points: np.ndarray, *rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """The results of a map at every point, computed under the policy "ignore", and the first
    failed check of each point (-1: none), last: what a Dask worker sends back."""
    if not F._plans and method != "hvp":
        out = np.empty((len(points), F.n_outputs))  # the values, or J v
        failed = np.full(len(points), -1, np.int64)
        with _PARALLEL:
            if method in ("value_and_grad", "vjp"):
                W = np.ones((len(points), 1)) if method == "value_and_grad" else rows[0]
                grads = np.empty((len(points), F.n_inputs))
                in_blocks(map_gradients, len(points), len(F._op), F._op, F._in0, F._in1, F._val, F._consts,
                          F._targets, F._input_rows, points, F._check_rows, F._check_expected, F._output_rows, W,
                          out, grads, failed)
                return (out, grads, failed) if method == "value_and_grad" else (grads, failed)
            if method == "map":
                in_blocks(map_values, len(points), len(F._op), F._op, F._in0, F._in1, F._val, F._consts,
                          F._input_rows, points, F._check_rows, F._check_expected, F._output_rows, out, failed)
            else:
                in_blocks(map_tangents, len(points), len(F._op), IS_LEAF, F._op, F._in0, F._in1, F._val,
                          F._consts, F._targets, F._input_rows, points, rows[0], F._check_rows,
                          F._check_expected, F._output_rows, out, failed)
        return out, failed
    columns = [np.empty((len(points), w)) for w in widths(F, method)]
    failed = np.full(len(points), -1, np.int64)
    for p in range(len(points)):  # on a worker (policy "ignore"): each point notes its first failed check
        F._noted = -1
        for column, result in zip(columns, single(F, method, points[p], *(r[p] for r in rows)), strict=True):
            column[p] = result
        failed[p] = F._noted
    return (*columns, failed)


def mapped(F: Function, method: str, points: np.ndarray, client, *rows: np.ndarray) -> list[np.ndarray]:
    """The result columns of a map: on the client's Dask workers, in a parallel kernel, or point by
    point (array records, hvp), with the branch policy applied to the points that changed branch."""
    columns = [np.empty((len(points), w)) for w in widths(F, method)]

    def single_point(p: int, G: Any = F) -> None:
        try:
            results = single(G, method, points[p], *(r[p] for r in rows))
        except BranchChanged as exc:  # point by point: name the point, as the kernels' maps do
            raise BranchChanged(f"{exc} (point {p} of the {len(points)} given)", exc.row, exc.where) from None
        for column, result in zip(columns, results, strict=True):
            column[p] = result

    if client is None and (F._plans or method == "hvp"):
        one_by_one(F, points, single_point)
        return columns
    if client is not None:
        *columns, failed = distributed.map_on(client, F, raw, method, points, *rows)
    else:
        *columns, failed = raw(F, method, points, *rows)
    settle(F, failed, points, single_point)
    return columns


def map(F: Function, X: ArrayLike, params: ArrayLike | None = None, client=None) -> np.ndarray:
    """F.map: what Function.map says (tape/function/function.py)."""
    points, _ = batch_call(F, X, params)
    (out,) = mapped(F, "map", points, client)
    return out[:, 0] if F._scalar else out


def map_value_and_grad(F: Function, X: ArrayLike, params: ArrayLike | None = None,
                       client=None) -> tuple[np.ndarray, np.ndarray]:
    """F.map_value_and_grad: what Function.map_value_and_grad says (tape/function/function.py)."""
    if F.n_outputs != 1:
        raise ValueError(f"map_value_and_grad needs one output, this Function has {F.n_outputs}: "
                         "use map_vjp")
    points, _ = batch_call(F, X, params)
    values, grads = mapped(F, "value_and_grad", points, client)
    return values[:, 0], grads


def map_vjp(F: Function, X: ArrayLike, W: ArrayLike, params: ArrayLike | None = None, client=None) -> np.ndarray:
    """F.map_vjp: what Function.map_vjp says (tape/function/function.py)."""
    W = real_array(W, "weights")
    if W.ndim >= 1 and W.shape[1:] == F._output_shape:
        W = W.reshape(len(W), -1)
    points, weights = batch_call(F, X, params, (W, F.n_outputs, "weights"))
    assert weights is not None
    return mapped(F, "vjp", points, client, weights)[0]


def map_jvp(F: Function, X: ArrayLike, V: ArrayLike, params: ArrayLike | None = None, client=None) -> np.ndarray:
    """F.map_jvp: what Function.map_jvp says (tape/function/function.py)."""
    points, tangents = batch_call(F, X, params, (V, F.n_inputs, "tangents"))
    assert tangents is not None
    (out,) = mapped(F, "jvp", points, client, tangents)
    return out[:, 0] if F._scalar else out


def map_hvp(F: Function, X: ArrayLike, V: ArrayLike, params: ArrayLike | None = None, client=None) -> np.ndarray:
    """F.map_hvp: what Function.map_hvp says (tape/function/function.py)."""
    if F.n_outputs != 1:
        raise ValueError(f"map_hvp needs one output, this Function has {F.n_outputs}")
    points, directions = batch_call(F, X, params, (V, F.n_inputs, "directions"))
    assert directions is not None
    return mapped(F, "hvp", points, client, directions)[0]

