"""VarArray's shape methods that are other views, written with reshape, transpose and slicing only
(they record nothing, or what those record), and its max and min reductions (one array record).

Records are never changed after they are made, so ``copy()`` and ``flatten()`` may share the
records of the array they copy; the answer is the same as NumPy's copy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


class Shapes:
    """Mixed into VarArray, which provides shape, ndim, reshape, transpose and __getitem__."""

    __slots__ = ()

    def swapaxes(self: Any, a: int, b: int) -> Any:
        axes = list(range(self.ndim))
        a, b = _axis(a, self.ndim), _axis(b, self.ndim)
        axes[a], axes[b] = axes[b], axes[a]
        return self.transpose(*axes)

    def squeeze(self: Any, axis: int | tuple[int, ...] | None = None) -> Any:
        picked = range(self.ndim) if axis is None else [_axis(a, self.ndim) for a in np.atleast_1d(axis).tolist()]
        if axis is not None and any(self.shape[a] != 1 for a in picked):
            raise ValueError(f"cannot select an axis to squeeze out which has size not equal to one: {axis}")
        drop = {a for a in picked if self.shape[a] == 1}
        return self.reshape(tuple(n for k, n in enumerate(self.shape) if k not in drop))

    def max(self: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
        """The largest element over axes (NaN if one is NaN); its adjoint goes to the elements equal to
        it, in equal shares at a tie."""
        return self._reduce("max", axis, keepdims)

    def min(self: Any, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Any:
        """The smallest element over axes, as max."""
        return self._reduce("min", axis, keepdims)

    def flatten(self: Any) -> Any:
        return self.reshape(-1)

    def copy(self: Any) -> Any:
        return self


def expand_dims(a: Any, axis: int | tuple[int, ...]) -> Any:
    """numpy.expand_dims: a size-1 axis at each of ``axis`` (of the result)."""
    axes = np.atleast_1d(axis).tolist()
    ndim = a.ndim + len(axes)
    where = {_axis(k, ndim) for k in axes}
    if len(where) != len(axes):
        raise ValueError("repeated axis")
    dims = iter(a.shape)
    return a.reshape(tuple(1 if k in where else next(dims) for k in range(ndim)))


def flip(a: Any, axis: int | tuple[int, ...] | None = None) -> Any:
    """numpy.flip: a view with the order of elements along ``axis`` (all, for None) reversed."""
    axes = range(a.ndim) if axis is None else {_axis(k, a.ndim) for k in np.atleast_1d(axis).tolist()}
    return a[tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(a.ndim))]


def moveaxis(a: Any, source: int | tuple[int, ...], destination: int | tuple[int, ...]) -> Any:
    """numpy.moveaxis: the axes ``source`` at the places ``destination``, the others in order."""
    src = [_axis(k, a.ndim) for k in np.atleast_1d(source).tolist()]
    dst = [_axis(k, a.ndim) for k in np.atleast_1d(destination).tolist()]
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [k for k in range(a.ndim) if k not in src]
    for place, axis in sorted(zip(dst, src, strict=True)):
        order.insert(place, axis)
    return a.transpose(*order)


FUNCTIONS: dict[Any, Callable[..., Any]] = {  # numpy function -> on a VarArray (its __array_function__)
    np.swapaxes: lambda a, axis1, axis2: a.swapaxes(axis1, axis2),
    np.squeeze: lambda a, axis=None: a.squeeze(axis),
    np.expand_dims: expand_dims,
    np.flip: flip,
    np.ravel: lambda a: a.ravel(),
    np.copy: lambda a: a.copy(),
    **{fn: (lambda a, axis=None, keepdims=False, name=name: getattr(a, name)(axis, keepdims))
       for fn, name in ((np.max, "max"), (np.amax, "max"), (np.min, "min"), (np.amin, "min"))},
    np.moveaxis: lambda a, source, destination: moveaxis(a, source, destination),
}
