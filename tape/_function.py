"""Function: a recorded tape compiled for replay at new inputs (one Numba call each).

A Function owns copies of the tape's record arrays, so the tape it came from
can go on recording or be rewound. Every replay re-evaluates the comparisons
that Python branches took while recording and applies the Function's
``on_branch_change`` policy when one comes out differently.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import BinaryIO

import numba
import numpy as np
from numpy.typing import ArrayLike

from kernels import (
    OPS,
    map_gradients,
    map_tangents,
    map_values,
    replay,
    replay_gradient,
    replay_partials,
    replay_second,
    reverse_second,
    reverse_vector,
    tangent_sweep,
)
from kernels.ops import KINDS_WITH_CONSTANT, LEAF, OPCODE, TWO_RECORD_KINDS
from tape import _debug, _show
from tape._tape import MAX_RECORDS, NO_INPUT, Tape, Var, _as_constant, branch_changed
from tape.errors import TapeFormatError

FORMAT_VERSION = 1
POLICIES = ("raise", "retrace", "ignore")
_KIND = np.array([op.kind for op in OPS])
_COMPARISON = np.isin(_KIND, ("compare", "compare_c"))
_HAS_DA = np.array([bool(op.da) for op in OPS])
_HAS_DB = np.array([bool(op.db) for op in OPS])
_IS_LEAF = _KIND == "leaf"
OPCODE_CONSTANT = OPCODE["constant"]


class Function:
    """Value, gradient and vector-Jacobian products of a recorded tape at new inputs.

    Make one with ``tape.trace(f, x0)`` or ``Tape.function(inputs, outputs)``.
    Not thread-safe: a Function reuses its working arrays on every call.
    """

    def __init__(self, arrays: dict[str, np.ndarray], on_branch_change: str = "raise",
                 source: tuple[Callable, bool] | None = None):
        if on_branch_change not in POLICIES:
            raise ValueError(f"on_branch_change must be one of {POLICIES}, got {on_branch_change!r}")
        self.on_branch_change = on_branch_change
        self.retraces = 0
        self.check_finite = False  # True: raise tape.NonFiniteError at the first inf/NaN of a call
        self._lines: dict[int, str] | None = None  # source lines, when traced inside tape.debug_nans()
        self._source = source  # (f, takes_params) when made by tape.trace
        self._install(arrays)

    def _install(self, a: dict[str, np.ndarray]) -> None:
        self._op, self._in0, self._in1 = a["op"], a["in0"], a["in1"]
        self._val, self._consts = a["val"].copy(), a["consts"]
        self._input_rows, self._param_rows = a["input_rows"], a["param_rows"]
        self._output_rows, self._scalar = a["output_rows"], bool(a["scalar_output"])
        self._check_rows, self._check_expected = a["check_rows"], a["check_expected"]
        self._check_where = a["check_where"]
        n = len(self._op)
        # working memory of value_and_grad: local partials, the records they point to
        # (row n is a dummy that absorbs contributions to absent inputs), adjoints.
        self._partials = np.zeros((2, n))
        self._targets = np.full((2, n), n, np.uint32)
        self._targets[0, _HAS_DA[self._op]] = self._in0[_HAS_DA[self._op]]
        self._targets[1, _HAS_DB[self._op]] = self._in1[_HAS_DB[self._op]]
        self._adj = np.zeros(n + 1)
        self._ones = np.ones(len(self._output_rows))
        self._second = None  # second partials and adj_dot, allocated by the first hvp

    # -- construction ---------------------------------------------------------------

    @classmethod
    def from_tape(cls, t: Tape, inputs: Sequence[Var], outputs: Var | Sequence[Var],
                  params: Sequence[Var] = (), on_branch_change: str = "raise",
                  source: tuple[Callable, bool] | None = None) -> Function:
        """See ``Tape.function``."""
        input_rows = _leaf_rows(t, inputs, "inputs")
        param_rows = _leaf_rows(t, params, "params")
        if set(input_rows.tolist()) & set(param_rows.tolist()):
            raise ValueError("a record cannot be both an input and a parameter")
        from tape._array import VarArray

        scalar = type(outputs) is Var
        if isinstance(outputs, VarArray):
            output_rows = outputs._idx.ravel().astype(np.int64)
            if outputs._live_tape() is not t:
                raise ValueError("outputs were recorded on another tape")
        else:
            output_rows = t._rows([outputs] if scalar else list(outputs))
        if not len(output_rows):
            raise ValueError("a Function needs at least one output")
        n = len(t)
        checks = t._checks
        arrays = {
            "op": t._op[:n].copy(), "in0": t._in0[:n].copy(), "in1": t._in1[:n].copy(),
            "val": t._val[:n].copy(), "consts": t._consts[: t.n_consts].copy(),
            "input_rows": input_rows, "param_rows": param_rows, "output_rows": output_rows,
            "scalar_output": np.array(scalar),
            "check_rows": np.array([c[0] for c in checks], np.int64),
            "check_expected": np.array([c[1] for c in checks], np.bool_),
            "check_where": np.array([c[2] for c in checks], dtype=np.str_) if checks else np.zeros(0, "<U1"),
        }
        F = cls(arrays, on_branch_change, source)
        F._lines = dict(t._lines) if t._lines is not None else None
        return F

    # -- shape --------------------------------------------------------------------------

    @property
    def n_inputs(self) -> int:
        return len(self._input_rows)

    @property
    def n_outputs(self) -> int:
        return len(self._output_rows)

    @property
    def n_params(self) -> int:
        return len(self._param_rows)

    def __len__(self) -> int:
        return len(self._op)

    @property
    def nbytes(self) -> int:
        """Bytes of the records (op, in0, in1, val, consts) plus the working memory of
        value_and_grad (partials, their targets, adjoints): see stats()."""
        return self._record_bytes() + self._working_bytes()

    def _record_bytes(self) -> int:
        return sum(a.nbytes for a in (self._op, self._in0, self._in1, self._val, self._consts))

    def _working_bytes(self) -> int:
        return sum(a.nbytes for a in (self._partials, self._targets, self._adj))

    def _records(self) -> _show.Records:
        notes = {int(i): "constant" for i in np.flatnonzero(self._op == OPCODE_CONSTANT)}
        notes.update({int(r): f"input {k}" for k, r in enumerate(self._input_rows)})
        notes.update({int(r): f"param {k}" for k, r in enumerate(self._param_rows)})
        notes.update({int(r): f"checked branch (was {bool(e)})" for r, e in zip(self._check_rows,
                                                                               self._check_expected, strict=True)})
        for k, r in enumerate(self._output_rows):
            notes[int(r)] = (notes.get(int(r), "") + f" output {k}").strip()
        return _show.Records(self._op, self._in0, self._in1, self._val, self._consts,
                             lambda idx: self._adj[idx], notes)

    def table(self, rows: slice | range | None = None, head: int = 20, tail: int = 20) -> str:
        """The node table at the last replayed point: adjoints are those of the last
        value_and_grad/vjp call; see Tape.table."""
        return _show.table(self._records(), rows, head, tail)

    def to_dot(self, limit: int = 300) -> str:
        """Graphviz DOT of the records the outputs depend on (values of the last replay)."""
        return _show.to_dot(self._records(), [int(r) for r in self._output_rows], limit)

    def render(self, path: str, limit: int = 300) -> None:
        """Draw ``to_dot()`` to an .svg or .png file (needs Graphviz's ``dot``)."""
        _show.render(self.to_dot(limit), path)

    def stats(self) -> dict:
        """Records by op, inputs, parameters, outputs, constants, comparisons, bytes, longest
        dependency chain and fan-out histogram ({uses: records used that often})."""
        by_op = Counter(OPS[k].name for k in self._op.tolist())
        depth, fan_out = _show.depth_and_fan_out(self._records())
        return {
            "records": len(self), "inputs": self.n_inputs, "params": self.n_params, "outputs": self.n_outputs,
            "constants": len(self._consts), "comparisons_checked": len(self._check_rows),
            "selects": by_op.get("select", 0), "by_op": dict(by_op.most_common()),
            "record_bytes": self._record_bytes(), "working_bytes": self._working_bytes(),
            "bytes_per_record": self.nbytes / len(self), "retraces": self.retraces,
            "longest_chain": depth, "fan_out": fan_out,
        }

    def __repr__(self) -> str:
        return (f"<tape.Function {self.n_inputs} inputs -> {self.n_outputs} outputs, {len(self)} records, "
                f"{len(self._check_rows)} checked comparisons>")

    # -- replay ---------------------------------------------------------------------------

    def _point(self, x: ArrayLike, count: int, what: str) -> np.ndarray:
        try:
            point = np.ascontiguousarray(x, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{what} must be real numbers: {exc}") from None
        if point.shape != (count,):
            if point.ndim == 0 and count == 1:
                return point.reshape(1)
            raise ValueError(f"expected {count} {what} as a 1-D array of shape ({count},), got shape {point.shape}")
        return point

    def _prepare(self, x: ArrayLike, params: ArrayLike | None) -> np.ndarray:
        point = self._point(x, self.n_inputs, "inputs")
        if params is not None:
            self._val[self._param_rows] = self._point(params, self.n_params, "params")
        return point

    def __call__(self, x: ArrayLike, params: ArrayLike | None = None) -> float | np.ndarray:
        """Forward replay at x: a float for a scalar output, else an array of the outputs."""
        point = self._prepare(x, params)
        failed = replay(self._op, self._in0, self._in1, self._val, self._consts, self._input_rows,
                        point, self._check_rows, self._check_expected)
        if failed >= 0 and self._branch_changed(failed, point):
            return self._again(self.__call__, point)
        if self.check_finite or _debug.active():
            _debug.check(self._records(), self._lines, len(self), adjoints=False)
        out = self._val[self._output_rows]
        return float(out[0]) if self._scalar else out

    def _reverse(self, point: np.ndarray, weights: np.ndarray) -> np.ndarray:
        grad = np.empty(self.n_inputs)
        failed = replay_gradient(self._op, self._in0, self._in1, self._val, self._consts, self._partials,
                                 self._targets, self._adj, self._input_rows, point, self._check_rows,
                                 self._check_expected, self._output_rows, weights, grad)
        if failed >= 0 and self._branch_changed(failed, point):
            return self._again(self._reverse, point, weights)
        if self.check_finite or _debug.active():
            _debug.check(self._records(), self._lines, len(self), adjoints=True)
        return grad

    def value_and_grad(self, x: ArrayLike, params: ArrayLike | None = None) -> tuple[float, np.ndarray]:
        """(f(x), gradient) for a scalar output; fits scipy.optimize.minimize(..., jac=True)."""
        if self.n_outputs != 1:
            raise ValueError(f"value_and_grad needs one output, this Function has {self.n_outputs}: use vjp")
        grad = self._reverse(self._prepare(x, params), self._ones)
        return float(self._val[self._output_rows[0]]), grad

    def gradient(self, x: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """The gradient at x of a scalar-output Function."""
        return self.value_and_grad(x, params)[1]

    def vjp(self, x: ArrayLike, w: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """w^T J at x: one reverse sweep seeded with w on the outputs."""
        weights = self._point(w, self.n_outputs, "output weights")
        return self._reverse(self._prepare(x, params), weights)

    # -- forward mode, Jacobians, Hessians -------------------------------------------------------

    def _at(self, point: np.ndarray, second: bool = False) -> None:
        """Values and partials at point (second partials too), with the branch policy applied."""
        args = (self._op, self._in0, self._in1, self._val, self._consts, self._partials)
        checks = (self._input_rows, point, self._check_rows, self._check_expected)
        if second:
            if self._second is None:
                n = len(self)
                self._second = (np.zeros((3, n)), np.zeros(n + 1))
            failed = replay_second(*args, self._second[0], self._targets, *checks)
        else:
            failed = replay_partials(*args, self._targets, *checks)
        if failed >= 0 and self._branch_changed(failed, point):
            self._again(self._at, point, second)

    def _tangents(self, seeds: np.ndarray) -> np.ndarray:
        """Tangents of every record for the input directions seeds (n_inputs, k)."""
        dot = np.zeros((len(self) + 1, seeds.shape[1]))
        dot[self._input_rows] = seeds
        tangent_sweep(_IS_LEAF, self._op, self._partials[0], self._partials[1], self._targets[0],
                      self._targets[1], dot)
        return dot

    def jvp(self, x: ArrayLike, v: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """J v at x: one forward tangent sweep -> (n_outputs,)."""
        direction = self._point(v, self.n_inputs, "tangent entries")
        self._at(self._prepare(x, params))
        return self._tangents(direction[:, None])[self._output_rows, 0]

    def jacobian(self, x: ArrayLike, params: ArrayLike | None = None, mode: str = "auto",
                 block: int = 16) -> np.ndarray:
        """The (n_outputs, n_inputs) Jacobian at x, ``block`` directions per sweep.

        mode "forward" sweeps the inputs' directions (n / block passes), "reverse"
        the outputs' (m / block passes); "auto" picks the fewer passes.
        """
        if mode not in ("auto", "forward", "reverse") or block < 1:
            raise ValueError(f"mode must be auto, forward or reverse and block >= 1, got {mode!r}, {block!r}")
        n, m = self.n_inputs, self.n_outputs
        self._at(self._prepare(x, params))
        J = np.empty((m, n))
        if mode == "forward" or (mode == "auto" and n <= m):
            for start in range(0, n, block):
                k = min(block, n - start)
                seeds = np.zeros((n, k))
                seeds[start + np.arange(k), np.arange(k)] = 1.0
                J[:, start:start + k] = self._tangents(seeds)[self._output_rows]
            return J
        for start in range(0, m, block):
            k = min(block, m - start)
            weights = np.zeros((m, k))
            weights[start + np.arange(k), np.arange(k)] = 1.0
            adj = np.empty((len(self) + 1, k))
            reverse_vector(adj, self._partials[0], self._partials[1], self._targets[0], self._targets[1],
                           self._output_rows, weights)
            J[start:start + k] = adj[self._input_rows].T
        return J

    def _hessian_columns(self, directions: np.ndarray) -> np.ndarray:
        """H v for each column v of directions, from the second partials stored by _at(second=True)."""
        h, adj_dot = self._second
        out = np.empty_like(directions)
        p, r = self._partials, self._targets
        for q in range(directions.shape[1]):
            dot = self._tangents(directions[:, q:q + 1])
            reverse_second(self._adj, adj_dot, dot, p[0], p[1], h[0], h[1], h[2], r[0], r[1],
                           self._output_rows[0])
            out[:, q] = adj_dot[self._input_rows]
        return out

    def hvp(self, x: ArrayLike, v: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """H v at x for a scalar output, by forward-over-reverse over the same records."""
        if self.n_outputs != 1:
            raise ValueError(f"hvp needs one output, this Function has {self.n_outputs}")
        direction = self._point(v, self.n_inputs, "direction entries")
        self._at(self._prepare(x, params), second=True)
        return self._hessian_columns(direction[:, None])[:, 0]

    def hessian(self, x: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """The (n, n) Hessian at x (one Hessian-vector product per input), symmetrized."""
        if self.n_outputs != 1:
            raise ValueError(f"hessian needs one output, this Function has {self.n_outputs}")
        self._at(self._prepare(x, params), second=True)
        H = self._hessian_columns(np.eye(self.n_inputs))
        return 0.5 * (H + H.T)

    # -- many points at once ------------------------------------------------------------------

    def _batch(self, X: ArrayLike, count: int, what: str) -> np.ndarray:
        """X as a C-contiguous (N, count) float64 array (N points of count entries)."""
        try:
            points = np.ascontiguousarray(X, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{what} must be real numbers: {exc}") from None
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
            self._val[self._param_rows] = self._point(params, self.n_params, "params")
        return points, extra

    def _settle(self, failed: np.ndarray, X: np.ndarray, single: Callable[[int], None]) -> None:
        """Apply the branch policy to the points whose recorded comparisons flipped.

        "raise" names the first such point; "retrace" redoes each with ``single(p)``
        (the one-point call, which retraces as needed); "ignore" keeps the results.
        """
        bad = np.flatnonzero(failed >= 0)
        if not len(bad) or self.on_branch_change == "ignore":
            return
        if self.on_branch_change == "raise" or self._source is None:
            p = int(bad[0])
            k = int(failed[p])
            extra = f" (point {p} of the {len(X)} given; {len(bad)} points changed branch)"
            raise branch_changed(self._op, self._in0, self._in1, self._consts, int(self._check_rows[k]),
                                 bool(self._check_expected[k]), str(self._check_where[k]), extra)
        for p in bad:
            single(int(p))

    def map(self, X: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """F at every row of X (N, n_inputs), in parallel: (N,) for a scalar output, else (N, m)."""
        points, _ = self._batch_call(X, params)
        out = np.empty((len(points), self.n_outputs))
        failed = np.full(len(points), -1, np.int64)
        with _PARALLEL:
            map_values(_blocks(len(points)), self._op, self._in0, self._in1, self._val, self._consts,
                       self._input_rows, points, self._check_rows, self._check_expected, self._output_rows, out, failed)

        def single(p):
            out[p] = self(points[p])

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
        values, grads, failed = self._map_reverse_raw(points, W)

        def single(p):
            values[p], grads[p] = method(p)

        self._settle(failed, points, single)
        return values, grads

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
        def one(p):
            value, grad = self.value_and_grad(points[p])
            return [value], grad

        if client is not None:
            from tape._distributed import map_value_and_grad_on

            values, grads, failed = map_value_and_grad_on(client, self, points)

            def single(p):
                values[p], grads[p] = one(p)

            self._settle(failed, points, single)
        else:
            values, grads = self._map_reverse(points, np.ones((len(points), 1)), one)
        return values[:, 0], grads

    def map_vjp(self, X: ArrayLike, W: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """W[p]^T J at every row X[p], in parallel: (N, n_inputs)."""
        points, weights = self._batch_call(X, params, (W, self.n_outputs, "weights"))
        return self._map_reverse(points, weights, lambda p: (self(points[p]), self.vjp(points[p], weights[p])))[1]

    def map_jvp(self, X: ArrayLike, V: ArrayLike, params: ArrayLike | None = None) -> np.ndarray:
        """J V[p] at every row X[p], in parallel: (N, n_outputs)."""
        points, tangents = self._batch_call(X, params, (V, self.n_inputs, "tangents"))
        out = np.empty((len(points), self.n_outputs))
        failed = np.full(len(points), -1, np.int64)
        with _PARALLEL:
            map_tangents(_blocks(len(points)), _IS_LEAF, self._op, self._in0, self._in1, self._val, self._consts,
                         self._targets, self._input_rows, points, tangents, self._check_rows, self._check_expected,
                         self._output_rows, out, failed)

        def single(p):
            out[p] = self.jvp(points[p], tangents[p])

        self._settle(failed, points, single)
        return out

    # -- branch safety ----------------------------------------------------------------------

    def _branch_changed(self, k: int, point: np.ndarray) -> bool:
        """Apply the policy to failed check k; True if the call should be repeated (retraced)."""
        if self.on_branch_change == "ignore":
            return False
        extra = ""
        if self.on_branch_change == "retrace":
            if self._source is None:
                extra = " (this Function has no Python function to retrace: it was loaded or built from a tape)"
            elif self._retracing:
                extra = " (again right after retracing at this input: f does not branch deterministically)"
            else:
                self._retrace(point)
                return True
        raise branch_changed(self._op, self._in0, self._in1, self._consts, int(self._check_rows[k]),
                             bool(self._check_expected[k]), str(self._check_where[k]), extra)

    _retracing = False

    def _again(self, method, *args):
        """Repeat a call once after a retrace."""
        self._retracing = True
        try:
            return method(*args)
        finally:
            self._retracing = False

    def _retrace(self, point: np.ndarray) -> None:
        f, takes_params = self._source
        params = self._val[self._param_rows].copy() if takes_params else None
        fresh = trace(f, point, params=params, on_branch_change="raise")
        if (fresh.n_outputs, fresh._scalar) != (self.n_outputs, self._scalar):
            raise ValueError(f"retracing f at this input gave {fresh.n_outputs} outputs instead of {self.n_outputs}")
        self._install(fresh._arrays())
        self._lines = fresh._lines
        self.retraces += 1

    # -- persistence ------------------------------------------------------------------------

    def _arrays(self) -> dict[str, np.ndarray]:
        return {
            "op": self._op, "in0": self._in0, "in1": self._in1, "val": self._val, "consts": self._consts,
            "input_rows": self._input_rows, "param_rows": self._param_rows, "output_rows": self._output_rows,
            "scalar_output": np.array(self._scalar), "check_rows": self._check_rows,
            "check_expected": self._check_expected, "check_where": self._check_where,
        }

    def save(self, path: str | os.PathLike | BinaryIO) -> None:
        """Write a versioned .npz of plain arrays (no pickle); ``tape.load`` reads it back."""
        if hasattr(path, "write"):
            np.savez(path, format_version=np.array(FORMAT_VERSION, np.int64), **self._arrays())
            return
        with open(path, "wb") as fh:
            self.save(fh)


# Numba's default threading layer (workqueue) aborts the process if two threads launch
# parallel kernels at once, so the maps take turns.
_PARALLEL = threading.Lock()


def _blocks(points: int) -> int:
    """One block of points per Numba thread (numba.set_num_threads chooses how many)."""
    return max(1, min(points, numba.get_num_threads()))


def _leaf_rows(t: Tape, handles: Sequence[Var], what: str) -> np.ndarray:
    from tape._array import VarArray

    if type(handles) is Var:
        raise TypeError(f"{what} must be a sequence of Vars")
    if isinstance(handles, VarArray):
        if handles._live_tape() is not t:
            raise ValueError(f"{what} were recorded on another tape")
        rows = handles._idx.ravel().astype(np.int64)
    else:
        rows = t._rows(handles)
    if len(rows) and np.any(t._op[rows] != LEAF):
        raise ValueError(f"{what} must be leaf records made by Tape.var/Tape.vars")
    if len(set(rows.tolist())) != len(rows):
        raise ValueError(f"{what} contain the same record twice")
    return rows


def trace(f: Callable, x0: ArrayLike, params: ArrayLike | None = None, on_branch_change: str = "raise") -> Function:
    """Record ``f`` once at x0 and return a Function that replays it at any x.

    ``f(xs)`` gets a list of Vars (one per element of the 1-D x0) and returns
    a Var or a sequence of Vars (numbers allowed). With ``params``, ``f(xs,
    ps)`` also gets handles for values that are not differentiated and can
    change at replay (``F(x, params=p)``) without retracing.
    """
    point = np.asarray(x0, dtype=np.float64)
    if point.ndim != 1:
        raise ValueError(f"x0 must be a 1-D array, got shape {point.shape}")
    t = Tape(capacity=max(1024, 4 * point.size))
    xs = t.array(point) if isinstance(x0, np.ndarray) else t.vars(point)
    if params is None:
        ps, out = [], f(xs)
    else:
        ps = t.vars(np.asarray(params, dtype=np.float64).reshape(-1))
        out = f(xs, ps)
    from tape._array import VarArray

    if isinstance(out, VarArray):
        outputs = out.ravel()
        scalar = False
    else:
        scalar = not isinstance(out, (list, tuple, np.ndarray))
        outputs = [_as_record(t, y) for y in ([out] if scalar else list(out))]
    return Function.from_tape(t, xs, outputs[0] if scalar else outputs, ps, on_branch_change,
                              source=(f, params is not None))


def _as_record(t: Tape, y) -> Var:
    if type(y) is Var:
        return y
    c = _as_constant(y)
    if c is None:
        raise TypeError(f"f must return Vars or numbers, got {type(y).__name__}")
    return t._constant(c)


# -- loading untrusted files ------------------------------------------------------------------

_SPEC = {  # name: (dtype kind check, ndim)
    "format_version": (np.int64, 0), "op": (np.uint8, 1), "in0": (np.uint32, 1), "in1": (np.uint32, 1),
    "val": (np.float64, 1), "consts": (np.float64, 1), "input_rows": (np.int64, 1),
    "param_rows": (np.int64, 1), "output_rows": (np.int64, 1), "scalar_output": (np.bool_, 0),
    "check_rows": (np.int64, 1), "check_expected": (np.bool_, 1), "check_where": (np.str_, 1),
}


def load(path: str | os.PathLike | BinaryIO, on_branch_change: str = "raise") -> Function:
    """Read a Function saved by ``Function.save``, validating every array first.

    Anything malformed raises ``TapeFormatError`` (naming the first bad record
    where there is one) before any kernel touches the data.
    """
    try:
        with np.load(path, allow_pickle=False) as npz:
            names = set(npz.files)
            if names != set(_SPEC):
                missing, extra = sorted(set(_SPEC) - names), sorted(names - set(_SPEC))
                raise TapeFormatError(f"{path}: not a tape file (missing {missing}, unexpected {extra})")
            arrays = {name: npz[name] for name in _SPEC}
    except (TapeFormatError, FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as exc:  # zip, npy-header and decoding errors of every kind a hostile file can cause
        raise TapeFormatError(f"{path}: unreadable tape file ({type(exc).__name__}: {exc})") from None
    validate(arrays)
    del arrays["format_version"]
    return Function(arrays, on_branch_change)


def validate(a: dict[str, np.ndarray]) -> None:
    """Raise TapeFormatError unless the arrays form a well-formed tape."""
    for name, (dtype, ndim) in _SPEC.items():
        arr = a[name]
        if np.dtype(dtype).kind == "U":
            ok = arr.dtype.kind == "U"
        else:
            ok = arr.dtype == np.dtype(dtype)
        if not ok or arr.ndim != ndim:
            raise TapeFormatError(f"array {name!r} must be {np.dtype(dtype).name} with {ndim} dimension(s), "
                                  f"got {arr.dtype} with shape {arr.shape}")
    if int(a["format_version"]) != FORMAT_VERSION:
        raise TapeFormatError(f"tape format version {int(a['format_version'])}; this tape reads {FORMAT_VERSION}")
    op, in0, in1 = a["op"], a["in0"], a["in1"]
    n = len(op)
    if not 0 < n <= MAX_RECORDS or not len(in0) == len(in1) == len(a["val"]) == n:
        raise TapeFormatError(f"record arrays disagree in length: op {n}, in0 {len(in0)}, in1 {len(in1)}, "
                              f"val {len(a['val'])}")
    _first_bad(op >= len(OPS), "unknown opcode", op)
    rows = np.arange(n, dtype=np.int64)
    kind = _KIND[op]
    no_inputs = kind == "leaf"
    two = np.isin(kind, TWO_RECORD_KINDS)
    pooled = np.isin(kind, KINDS_WITH_CONSTANT)
    _first_bad(no_inputs & ((in0 != NO_INPUT) | (in1 != NO_INPUT)), "leaf with inputs", op)
    _first_bad(~no_inputs & (in0.astype(np.int64) >= rows), "first input not before its record", op)
    _first_bad(two & (in1.astype(np.int64) >= rows), "second input not before its record", op)
    _first_bad(pooled & (in1.astype(np.int64) >= len(a["consts"])), "constant slot out of range", op)
    _first_bad((kind == "unary") & (in1 != NO_INPUT), "unary op with a second input", op)
    previous_is_comparison = np.concatenate([[False], _COMPARISON[op[:-1]]])
    _first_bad((kind == "select") & ~previous_is_comparison, "select not preceded by a comparison", op)
    for name, need_leaf in (("input_rows", True), ("param_rows", True), ("output_rows", False),
                            ("check_rows", False)):
        r = a[name]
        if np.any((r < 0) | (r >= n)):
            raise TapeFormatError(f"{name} holds a record outside 0..{n - 1}")
        if need_leaf and np.any(op[r] != LEAF):
            raise TapeFormatError(f"{name} must name leaf records")
    if len(np.unique(np.concatenate([a["input_rows"], a["param_rows"]]))) != len(a["input_rows"]) + len(
            a["param_rows"]):
        raise TapeFormatError("input_rows and param_rows must be distinct records")
    if len(a["output_rows"]) == 0:
        raise TapeFormatError("a tape file needs at least one output")
    if np.any(~_COMPARISON[op[a["check_rows"]]]):
        raise TapeFormatError("check_rows must name comparison records")
    if not len(a["check_rows"]) == len(a["check_expected"]) == len(a["check_where"]):
        raise TapeFormatError("check arrays disagree in length")
    if bool(a["scalar_output"]) and len(a["output_rows"]) != 1:
        raise TapeFormatError("a scalar-output tape has exactly one output")


def _first_bad(bad: np.ndarray, what: str, op: np.ndarray) -> None:
    if np.any(bad):
        row = int(np.argmax(bad))
        name = OPS[op[row]].name if op[row] < len(OPS) else f"opcode {op[row]}"
        raise TapeFormatError(f"record {row} ({name}): {what}")
