"""How a Function's call reads x and params, and gives results back in the caller's shapes.

A Function computes on one flat vector of input numbers. A call may pass x as
that vector, as an array of x0's shape, or (for an x0 with dicts, nesting or
several arrays) in x0's structure; derivatives with x's shape come back as x
came (tape/base/trees.py's Layout), and outputs in the shape f returned them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tape.base import trees
from tape.base.numbers import real_array


class Calls:
    """The call-shape half of a Function (mixed into tape.function.replay.Replay)."""

    _input_shape: tuple[int, ...]
    _output_shape: tuple[int, ...]
    _scalar: bool
    _layout: trees.Layout | None
    _param_layout: trees.Layout | None
    _tree_call: bool
    _at_point: np.ndarray
    _param_pieces: list[tuple[int, int, int]]
    _n_in: int
    _n_out: int
    _n_par: int

    def _place(self, pieces: list[tuple[int, int, int]], numbers: np.ndarray) -> None: ...

    def _point(self, x: Any, count: int, what: str) -> np.ndarray:
        point = real_array(x, what)
        if point.shape != (count,):
            if point.ndim == 0 and count == 1:
                return point.reshape(1)
            raise ValueError(f"expected {count} {what} as a 1-D array of shape ({count},), got shape {point.shape}")
        return point

    def _prepare(self, x: Any, params: Any) -> np.ndarray:
        """The flat point of x (params placed in their records); notes whether x came in x0's structure."""
        layout = self._layout
        self._tree_call = layout is not None and layout.structured and not isinstance(x, np.ndarray)
        if self._tree_call:
            assert layout is not None
            x = layout.flat(x, "inputs")
        elif self._input_shape != (self._n_in,):
            x = real_array(x, "inputs")
            if x.shape != self._input_shape and x.shape != (self._n_in,):
                raise ValueError(f"expected inputs of shape {self._input_shape}, got shape {x.shape}")
            x = x.reshape(-1)
        point = self._point(x, self._n_in, "inputs")
        if params is not None:
            self._place(self._param_pieces, self._flat_params(params))
        self._at_point = point
        return point

    def _flat_params(self, params: Any) -> np.ndarray:
        """params as one flat vector: given flat, as an array of the shape traced, or in its structure."""
        layout = self._param_layout
        if layout is not None and layout.structured and not isinstance(params, np.ndarray):
            params = layout.flat(params, "params")  # in the structure of the params traced
        elif layout is not None and layout.spec is trees.ARRAY and np.shape(params) == layout.shapes[0]:
            params = np.ravel(params)  # an array of the shape traced
        return self._point(params, self._n_par, "params")

    def _direction(self, v: Any, what: str) -> np.ndarray:
        """A direction in input space, flat; given flat, shaped like the inputs, or (after a call
        that passed x in x0's structure) in that structure."""
        if self._tree_call and not isinstance(v, np.ndarray):
            assert self._layout is not None
            return self._layout.flat(v, what)
        direction = real_array(v, what)
        if direction.shape == self._input_shape:
            direction = direction.reshape(-1)
        return self._point(direction, self._n_in, what)

    def _weights(self, w: Any) -> np.ndarray:
        """Output weights (a vjp's w), flat; given flat or in the outputs' shape."""
        weights = real_array(w, "output weights")
        return self._point(weights.reshape(-1) if weights.shape == self._output_shape else weights,
                           self._n_out, "output weights")

    def _shaped(self, numbers: np.ndarray) -> Any:
        """Numbers of the inputs' size (a gradient) as the call passed x: in x0's structure, or an
        array of the inputs' shape."""
        if self._tree_call:
            assert self._layout is not None
            return self._layout.tree(numbers)
        return numbers.reshape(self._input_shape)

    def _jacobian_shaped(self, J: np.ndarray) -> Any:
        """A (m, n) Jacobian shaped as JAX's: the outputs' shape, then x's (or x0's structure)."""
        lead = self._output_shape
        if self._tree_call:
            assert self._layout is not None
            return self._layout.tree(J.reshape(lead + (self._n_in,)), lead)
        return J.reshape(lead + self._input_shape)

    def _hessian_shaped(self, H: np.ndarray) -> Any:
        """A (n, n) Hessian as x's shape twice, or x0's structure of x0's structures."""
        if self._tree_call:
            assert self._layout is not None
            return self._layout.nested(H)
        return H.reshape(self._input_shape + self._input_shape)

    def _output(self, out: np.ndarray) -> float | np.ndarray:
        """Output numbers as f returned them: a float, or an array of the outputs' shape."""
        return float(out[0]) if self._scalar else out.reshape(self._output_shape)
