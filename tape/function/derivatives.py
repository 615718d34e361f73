"""Derivatives beyond the gradient: J v, Jacobians (vector mode) and Hessians (forward-over-reverse).

Vector mode carries k tangent or adjoint columns through one pass over the
stored partials (ADOL-C's ``fov_*``, CppAD's ``Forward(q, r)``); Hessian-vector
products use each op's second partials in a reverse sweep that also carries
the adjoints' tangents.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tape.base.numbers import real_array
from tape.function.replay import Replay, one_call_at_a_time
from tape.kernels._sweeps import (
    forward_partials,
    forward_second,
    replay_partials,
    replay_second,
    reverse_second,
    reverse_vector,
    tangent_sweep,
)
from tape.kernels.ops import IS_LEAF
from tape.sweeps import tangents as _tangents


class Derivatives(Replay):
    """jvp, jacobian, hvp and hessian of a Function (see tape.Function)."""

    def _at(self, point: np.ndarray, second: bool = False) -> None:
        """Values and partials at point (second partials too), with the branch policy applied."""
        if second and self._second is None:
            n = len(self)
            self._second = (np.zeros((3, n)), np.zeros(n + 1))
            self._aadj_dot = np.zeros(len(self._aval))
        if self._plans:
            self._at_arrays(point, second)
            return
        args = (self._op, self._in0, self._in1, self._val, self._consts, self._partials)
        checks = (self._input_rows, point, self._check_rows, self._check_expected)
        if second:
            assert self._second is not None
            failed = replay_second(*args, self._second[0], self._targets, *checks)
        else:
            failed = replay_partials(*args, self._targets, *checks)
        if failed >= 0 and self._branch_changed(failed, point):
            self._again(self._at, point, second)
        elif self._checking:
            self._check()

    def _at_arrays(self, point: np.ndarray, second: bool) -> None:
        """_at for a Function with array records: the array sweep for values, then the scalar
        records' partials (a scalar kernel recomputes their values, the same numbers)."""
        failed = self._sweep_forward(point, fused=False)
        if failed >= 0 and self._branch_changed(failed, point):
            self._again(self._at, point, second)
            return
        p, r = self._partials, self._targets
        if second:
            assert self._second is not None
            h = self._second[0]
            forward_second(self._op, self._in0, self._in1, self._val, self._consts, p[0], p[1], h[0], h[1], h[2],
                           r[0], r[1])
        else:
            forward_partials(self._op, self._in0, self._in1, self._val, self._consts, p[0], p[1], r[0], r[1])
        if self._checking:
            self._check()

    def _array_jvp(self, direction: np.ndarray) -> np.ndarray:
        dot, adot = self._array_tangents(direction)
        return self._collect(self._out_pieces, dot[:, 0], adot)

    def _array_hvp(self, direction: np.ndarray) -> np.ndarray:
        assert self._second is not None
        dot, adot = self._array_tangents(direction)
        adj_dot = self._second[1]
        _tangents.reverse_second(self, int(self._output_rows[0]), dot, adot, adj_dot)
        return self._collect(self._in_pieces, adj_dot, self._aadj_dot)

    def _tangents(self, seeds: np.ndarray) -> np.ndarray:
        """Tangents of every record for the input directions seeds (n_inputs, k); for one direction,
        in a column kept for the next call (valid until then)."""
        if seeds.shape[1] == 1:
            dot = self.__dict__.get("_dot")
            if dot is None or len(dot) != len(self) + 1:
                dot = self._dot = np.zeros((len(self) + 1, 1))
            dot.fill(0.0)
        else:
            dot = np.zeros((len(self) + 1, seeds.shape[1]))
        dot[self._input_rows] = seeds
        tangent_sweep(IS_LEAF, self._op, self._partials[0], self._partials[1], self._targets[0],
                      self._targets[1], dot, 0, len(self._op))
        if self._checking:
            self._check(tangents=dot)
        return dot

    @one_call_at_a_time
    def jvp(self, x: Any, v: Any, params: Any = None) -> float | np.ndarray:
        """J v at x (v shaped as x): one forward tangent sweep; a float, or an array of the outputs' shape."""
        point = self._prepare(x, params)
        direction = self._direction(v, "tangent entries")
        self._at(point)
        return self._output(self._array_jvp(direction) if self._plans
                            else self._tangents(direction[:, None])[self._output_rows, 0])

    @one_call_at_a_time
    def jacobian(self, x: Any, params: Any = None, mode: str = "auto", block: int = 16,
                 seeds: Any = None) -> Any:
        """The Jacobian at x, shaped as JAX's: for an array x, the outputs' shape then x's (``()`` for a
        scalar output: (m, n) for m outputs of an x of n); for x in x0's structure (a list, a dict),
        that structure with an array of the outputs' shape + the leaf's shape per leaf.

        mode "forward" sweeps the inputs' directions (n / block passes), "reverse"
        the outputs' (m / block passes); "auto" picks the fewer passes; ``block`` directions per sweep.

        seeds: an (n_inputs, k) matrix S (flat numbering): J S instead, shaped as the outputs then (k,),
        from one pass of partials and k / block forward sweeps (compressed Jacobians: see sparse_jacobian).
        """
        if seeds is not None:
            if mode == "reverse" or block < 1:
                raise ValueError(f"seeds take mode auto or forward and block >= 1, got {mode!r}, {block!r}")
            S = real_array(seeds, "seeds")
            if S.ndim != 2 or S.shape[0] != self.n_inputs:
                raise ValueError(f"seeds must be an (n_inputs, k) = ({self.n_inputs}, k) matrix, got shape {S.shape}")
            self._at(self._prepare(x, params))
            return self._seeded(S, block).reshape(self._output_shape + (S.shape[1],))
        return self._jacobian_shaped(self._jacobian(x, params, mode, block))

    def _seeded(self, seeds: np.ndarray, block: int) -> np.ndarray:
        """J seeds, (n_outputs, k), at the point of the last _at: forward sweeps of block columns each."""
        k = seeds.shape[1]
        out = np.empty((self.n_outputs, k))
        if self._plans:  # one direction per sweep
            for q in range(k):
                out[:, q] = self._array_jvp(np.ascontiguousarray(seeds[:, q]))
            return out
        for start in range(0, k, block):
            out[:, start:start + block] = self._tangents(seeds[:, start:start + block])[self._output_rows]
        return out

    def _jacobian(self, x: Any, params: Any, mode: str, block: int) -> np.ndarray:
        """The (n_outputs, n_inputs) Jacobian."""
        if mode not in ("auto", "forward", "reverse") or block < 1:
            raise ValueError(f"mode must be auto, forward or reverse and block >= 1, got {mode!r}, {block!r}")
        n, m = self.n_inputs, self.n_outputs
        self._at(self._prepare(x, params))
        J = np.empty((m, n))
        if self._plans:  # one direction per sweep
            eye = np.eye(max(n, m))
            if mode == "forward" or (mode == "auto" and n <= m):
                for j in range(n):
                    J[:, j] = self._array_jvp(eye[j, :n])
            else:
                for i in range(m):
                    J[i] = self._sweep_reverse(eye[i, :m])
            return J
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
            if self._checking:
                self._check(adjoints=adj)
            J[start:start + k] = adj[self._input_rows].T
        return J

    def _hessian_columns(self, directions: np.ndarray) -> np.ndarray:
        """H v for each column v of directions, from the second partials stored by _at(second=True)."""
        assert self._second is not None, "_at(second=True) first"
        h, adj_dot = self._second
        out = np.empty_like(directions)
        p, r = self._partials, self._targets
        for q in range(directions.shape[1]):
            dot = self._tangents(directions[:, q:q + 1])
            reverse_second(self._adj, adj_dot, dot, p[0], p[1], h[0], h[1], h[2], r[0], r[1],
                           self._output_rows[0])
            if self._checking:
                self._check(adjoints=self._adj)
                self._check(adjoints=adj_dot, what="adjoint's tangent")
            out[:, q] = adj_dot[self._input_rows]
        return out

    @one_call_at_a_time
    def hvp(self, x: Any, v: Any, params: Any = None) -> Any:
        """H v at x (v shaped as x, and so is H v) for a scalar output, by forward-over-reverse over the
        same records."""
        if self.n_outputs != 1:
            raise ValueError(f"hvp needs one output, this Function has {self.n_outputs}")
        point = self._prepare(x, params)
        direction = self._direction(v, "direction entries")
        self._at(point, second=True)
        if self._plans:
            return self._shaped(self._array_hvp(direction))
        return self._shaped(self._hessian_columns(direction[:, None])[:, 0])

    @one_call_at_a_time
    def value_grad_hvp(self, x: Any, v: Any, params: Any = None) -> tuple[float, Any, Any]:
        """(f(x), gradient, H v) for a scalar output from one pass of values and second partials and
        one forward-over-reverse sweep (whose adjoints are the gradient): what a Newton or trust-region
        step needs, for the price of an hvp."""
        if self.n_outputs != 1:
            raise ValueError(f"value_grad_hvp needs one output, this Function has {self.n_outputs}")
        point = self._prepare(x, params)
        direction = self._direction(v, "direction entries")
        self._at(point, second=True)
        if self._plans:
            hv = self._array_hvp(direction)
            grad = self._collect(self._in_pieces, self._adj, self._aadj)
        else:
            hv = self._hessian_columns(direction[:, None])[:, 0]
            grad = self._adj[self._input_rows]
        return float(self._val[self._output_rows[0]]), self._shaped(grad), self._shaped(hv)

    @one_call_at_a_time
    def hessian(self, x: Any, params: Any = None) -> Any:
        """The Hessian at x (one Hessian-vector product per input), symmetrized, shaped as JAX's:
        x's shape twice; for x in a structure of several leaves, that structure of that structure."""
        if self.n_outputs != 1:
            raise ValueError(f"hessian needs one output, this Function has {self.n_outputs}")
        self._at(self._prepare(x, params), second=True)
        if self._plans:
            H = np.stack([self._array_hvp(e) for e in np.eye(self.n_inputs)], axis=1)
        else:
            H = self._hessian_columns(np.eye(self.n_inputs))
        return self._hessian_shaped(0.5 * (H + H.T))
