"""Many points at once: F.map, map_value_and_grad, map_jvp, map_vjp, in parallel with numba.prange.

The points are split into one block per Numba thread (``numba.set_num_threads``
chooses how many); each block has its own working arrays and runs the same
statements as a single call, so every result equals the single-point call bit for
bit. A point whose recorded comparisons flip is handled by the Function's policy.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Callable

import numba
import numpy as np
from numpy.typing import ArrayLike

from tape import _distributed
from tape._debug import NonFiniteError, branch_changed
from tape._derivatives import Derivatives
from tape._numbers import real_array
from tape._replay import one_call_at_a_time
from tape.kernels._sweeps import map_gradients, map_tangents, map_values
from tape.kernels.ops import IS_LEAF

# Numba's default threading layer (workqueue) aborts the process if two threads launch
# parallel kernels at once, so the maps take turns.
_PARALLEL = threading.Lock()


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


class Maps(Derivatives):
    """The parallel maps of a Function (see tape.Function)."""

    def _batch(self, X: ArrayLike, count: int, what: str) -> np.ndarray:
        """X as a C-contiguous (N, count) float64 array (N points of count entries)."""
        points = real_array(X, what)
        if points.ndim == 1 and count == 1:
            points = points.reshape(-1, 1)
        if points.ndim != 2 or points.shape[1] != count:
            raise ValueError(f"expected {what} of shape (N, {count}), got shape {points.shape}")
        return points

    def _batch_call(self, X: ArrayLike, params: ArrayLike | None,
                    paired: tuple[ArrayLike, int, str] | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Points (N, n_inputs) and, if given, a per-point array (values, width, name) of N rows;
        sets the params for every point."""
        points = self._batch(X, self.n_inputs, "points")
        extra = None
        if paired is not None:
            extra = self._batch(paired[0], paired[1], paired[2])
            if len(extra) != len(points):
                raise ValueError(f"{len(points)} points but {len(extra)} rows of {paired[2]}")
        if params is not None:
            self._place(self._param_pieces, self._point(params, self.n_params, "params"))
        return points, extra

    def _one_by_one(self, points: np.ndarray, single: Callable[..., None]) -> None:
        """A Function with array records maps point by point, a block of points per thread, each
        thread on a copy of the Function (its own arenas; made once, kept until a retrace). NumPy's
        loops and the fused kernels run without the GIL; the Python between them takes turns, so
        threads pay only for big arrays (measured, 40 points on 2 threads: 1.5x faster with 10^5
        elements per array, 2.6x slower with 2,000)."""
        blocks = _blocks(len(points)) if len(self._aval) >= THREADED_ELEMENTS else 1
        if blocks == 1 or self._checking:
            for p in range(len(points)):
                single(p, self)
            return
        copies = self._copies(blocks)

        def block(b: int) -> None:
            for p in range(b * len(points) // blocks, (b + 1) * len(points) // blocks):
                single(p, copies[b])

        with concurrent.futures.ThreadPoolExecutor(blocks) as pool:
            list(pool.map(block, range(blocks)))

    def _copies(self, count: int) -> list:
        """count copies of this Function for the threads of a map, with its params as they are now."""
        kept = self.__dict__.setdefault("_kept_copies", [])
        while len(kept) < count:
            copy = type(self)(self._arrays(), self.on_branch_change, self._source)
            copy.check_finite, copy._lines = self.check_finite, self._lines
            kept.append(copy)
        for copy in kept[:count]:
            copy._place(copy._param_pieces, self._param_values())
        return kept[:count]

    def _settle(self, failed: np.ndarray, X: np.ndarray, single: Callable[[int], None]) -> None:
        """Apply the branch policy to the points whose recorded comparisons flipped.

        "raise" names the first such point; "retrace" redoes each with ``single(p)``
        (the one-point call, which retraces as needed); "ignore" keeps the results.
        """
        if self._checking:  # every point alone, through the checks of a single call
            for p in range(len(X)):
                try:
                    single(p)
                except NonFiniteError as exc:
                    raise NonFiniteError(f"point {p} of the {len(X)} given: {exc}", exc.row) from None
            return
        bad = np.flatnonzero(failed >= 0)
        if not len(bad) or self.on_branch_change == "ignore":
            return
        if self.on_branch_change == "raise":  # "retrace" implies a Python function (see on_branch_change)
            p = int(bad[0])
            k = int(failed[p])
            extra = f" (point {p} of the {len(X)} given; {len(bad)} points changed branch)"
            raise branch_changed(self._op, self._in0, self._in1, self._consts, int(self._check_rows[k]),
                                 bool(self._check_expected[k]), str(self._check_where[k]), extra)
        for point in bad.tolist():
            single(point)

    @one_call_at_a_time
    def map(self, X: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """F at every row of X (N, n_inputs), in parallel: (N,) for a scalar output, else (N, m)."""
        points, _ = self._batch_call(X, params)
        out = np.empty((len(points), self.n_outputs))
        failed = np.full(len(points), -1, np.int64)

        def single(p, F=self):
            out[p] = F(points[p])

        if self._plans:
            self._one_by_one(points, single)
            return out[:, 0] if self._scalar else out
        with _PARALLEL:
            map_values(_blocks(len(points)), self._op, self._in0, self._in1, self._val, self._consts,
                       self._input_rows, points, self._check_rows, self._check_expected, self._output_rows, out, failed)
        self._settle(failed, points, single)
        return out[:, 0] if self._scalar else out

    def _map_reverse_raw(self, points: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """values (N, m), W[p]^T J (N, n) and the first failed check of every point (-1: none)."""
        values = np.empty((len(points), self.n_outputs))
        grads = np.empty((len(points), self.n_inputs))
        failed = np.full(len(points), -1, np.int64)
        with _PARALLEL:
            map_gradients(_blocks(len(points)), self._op, self._in0, self._in1, self._val, self._consts,
                          self._targets, self._input_rows, points, self._check_rows, self._check_expected,
                          self._output_rows, W, values, grads, failed)
        return values, grads, failed

    def _map_reverse(self, points: np.ndarray, W: np.ndarray, method: Callable) -> tuple[np.ndarray, np.ndarray]:
        if self._plans:
            values, grads = np.empty((len(points), self.n_outputs)), np.empty((len(points), self.n_inputs))
        else:
            values, grads, failed = self._map_reverse_raw(points, W)

        def single(p, F=self):
            values[p], grads[p] = method(p, F)

        if self._plans:
            self._one_by_one(points, single)
        else:
            self._settle(failed, points, single)
        return values, grads

    @one_call_at_a_time
    def map_value_and_grad(self, X: ArrayLike, params: ArrayLike | None = None,
                           client=None) -> tuple[np.ndarray, np.ndarray]:
        """value_and_grad at every row of X, in parallel: values (N,), gradients (N, n_inputs).

        With a Dask ``client`` the points are split into chunks computed on its
        workers (see tape._distributed); results come back in the order of X.
        """
        if self.n_outputs != 1:
            raise ValueError(f"map_value_and_grad needs one output, this Function has {self.n_outputs}: "
                             "use map_vjp")
        points = self._batch(X, self.n_inputs, "points")
        if params is not None:
            self._prepare(points[0] if len(points) else np.zeros(self.n_inputs), params)
        def one(p, F=self):
            value, grad = F.value_and_grad(points[p])
            return [value], grad.reshape(-1)

        if client is not None:
            if not all(hasattr(client, name) for name in ("scatter", "map", "nthreads")):
                raise TypeError(f"client must be a dask.distributed.Client, got {type(client).__name__}")
            values, grads, failed = _distributed.map_value_and_grad_on(client, self, points)

            def single(p):
                values[p], grads[p] = one(p)

            self._settle(failed, points, single)
        else:
            values, grads = self._map_reverse(points, np.ones((len(points), 1)), one)
        return values[:, 0], grads

    @one_call_at_a_time
    def map_vjp(self, X: ArrayLike, W: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """W[p]^T J at every row X[p], in parallel: (N, n_inputs)."""
        points, weights = self._batch_call(X, params, (W, self.n_outputs, "weights"))
        assert weights is not None
        return self._map_reverse(points, weights,
                                 lambda p, F=self: (F(points[p]), F.vjp(points[p], weights[p]).reshape(-1)))[1]

    @one_call_at_a_time
    def map_jvp(self, X: ArrayLike, V: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """J V[p] at every row X[p], in parallel: (N,) for a scalar output, else (N, n_outputs)."""
        points, tangents = self._batch_call(X, params, (V, self.n_inputs, "tangents"))
        out = np.empty((len(points), self.n_outputs))
        failed = np.full(len(points), -1, np.int64)

        def single(p, F=self):
            out[p] = F.jvp(points[p], tangents[p])

        if self._plans:
            self._one_by_one(points, single)
            return out[:, 0] if self._scalar else out
        with _PARALLEL:
            map_tangents(_blocks(len(points)), IS_LEAF, self._op, self._in0, self._in1, self._val, self._consts,
                         self._targets, self._input_rows, points, tangents, self._check_rows, self._check_expected,
                         self._output_rows, out, failed)
        self._settle(failed, points, single)
        return out[:, 0] if self._scalar else out
