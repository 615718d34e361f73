"""How a Function's call reads x and params, and gives results back in the caller's shapes.

A Function computes on one flat vector of input numbers. A call may pass x as
that vector, as an array of x0's shape, or (for an x0 with dicts, nesting or
several arrays) in x0's structure; derivatives with x's shape come back as x
came (tape/base/trees.py's Layout), and outputs in the shape f returned them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tape.base import trees
from tape.base.numbers import real_array
from tape.function import array_replay

FLOAT = np.dtype(np.float64)  # (a native float64 array's dtype is this one object)

if TYPE_CHECKING:
    from tape.function.function import Function


def vector(x: Any, count: int, what: str) -> np.ndarray:
    point = real_array(x, what)
    if point.shape != (count,):
        if point.ndim == 0 and count == 1:
            return point.reshape(1)
        raise ValueError(f"expected {count} {what} as a 1-D array of shape ({count},), got shape {point.shape}")
    return point


def prepare(F: Function, x: Any, params: Any) -> np.ndarray:
    """The flat point of x (params placed in their records); notes whether x came in x0's structure."""
    if type(x) is np.ndarray and x.dtype is FLOAT and x.shape == F._input_shape and params is None \
            and x.flags.c_contiguous:  # what the checks below take as it is, found sooner: 0.8 -> 0.3 µs
        F._tree_call = False
        F._at_point = point = x.reshape(-1)
        return point
    layout = F._layout
    F._tree_call = layout is not None and layout.structured and not isinstance(x, np.ndarray)
    if F._tree_call:
        assert layout is not None
        x = layout.flat(x, "inputs")
    elif F._input_shape != (F._n_in,):
        x = real_array(x, "inputs")
        if x.shape != F._input_shape and x.shape != (F._n_in,):
            raise ValueError(f"expected inputs of shape {F._input_shape}, got shape {x.shape}")
        x = x.reshape(-1)
    point = vector(x, F._n_in, "inputs")
    if params is not None:
        array_replay.place(F, F._param_pieces, flat_params(F, params))
    F._at_point = point
    return point


def flat_params(F: Function, params: Any) -> np.ndarray:
    """params as one flat vector: given flat, as an array of the shape traced, or in its structure."""
    layout = F._param_layout
    if layout is not None and layout.structured and not isinstance(params, np.ndarray):
        params = layout.flat(params, "params")  # in the structure of the params traced
    elif layout is not None and layout.spec is trees.ARRAY and np.shape(params) == layout.shapes[0]:
        params = np.ravel(params)  # an array of the shape traced
    return vector(params, F._n_par, "params")


def direction(F: Function, v: Any, what: str) -> np.ndarray:
    """A direction in input space, flat; given flat, shaped like the inputs, or (after a call
    that passed x in x0's structure) in that structure."""
    if F._tree_call and not isinstance(v, np.ndarray):
        assert F._layout is not None
        return F._layout.flat(v, what)
    direction = real_array(v, what)
    if direction.shape == F._input_shape:
        direction = direction.reshape(-1)
    return vector(direction, F._n_in, what)


def weights(F: Function, w: Any) -> np.ndarray:
    """Output weights (a vjp's w), flat; given flat or in the outputs' shape."""
    weights = real_array(w, "output weights")
    return vector(weights.reshape(-1) if weights.shape == F._output_shape else weights,
                       F._n_out, "output weights")


def shaped(F: Function, numbers: np.ndarray) -> Any:
    """Numbers of the inputs' size (a gradient) as the call passed x: in x0's structure, or an
    array of the inputs' shape."""
    if F._tree_call:
        assert F._layout is not None
        return F._layout.tree(numbers)
    return numbers.reshape(F._input_shape)


def jacobian_shaped(F: Function, J: np.ndarray) -> Any:
    """A (m, n) Jacobian shaped as JAX's: the outputs' shape, then x's (or x0's structure)."""
    lead = F._output_shape
    if F._tree_call:
        assert F._layout is not None
        return F._layout.tree(J.reshape(lead + (F._n_in,)), lead)
    return J.reshape(lead + F._input_shape)


def hessian_shaped(F: Function, H: np.ndarray) -> Any:
    """A (n, n) Hessian as x's shape twice, or x0's structure of x0's structures."""
    if F._tree_call:
        assert F._layout is not None
        return F._layout.nested(H)
    return H.reshape(F._input_shape + F._input_shape)


def output(F: Function, out: np.ndarray) -> float | np.ndarray:
    """Output numbers as f returned them: a float, or an array of the outputs' shape."""
    return float(out[0]) if F._scalar else out.reshape(F._output_shape)

