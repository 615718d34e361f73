"""VarArray's scans and sort, and their NumPy functions.

cumsum and cumprod of array records are one ``scan`` record each (kernels/scans.py: the
adjoint is the reversed cumulative sum, cumprod's rules never divide, so zeros are
exact); of scalar records they are running sums or products, one scalar record per
element. sort is one ``sort`` record in both forms (small arrays are packed first, the
result read back as scalar records): its permutation is recomputed from the values at
every pass and every replay, a stable sort (ties keep their order; NaNs last). argsort,
argmax and argmin answer from the values, plain ints, as any value read inside tape.trace
is (kept by replays, with a TracingWarning).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tape.arrays.operands import as_view
from tape.kernels.ops import OPCODE
from tape.records import array_records
from tape.records.storage import Storage
from tape.sweeps.driver import View

if TYPE_CHECKING:
    from tape.arrays.varray import VarArray


def array_form(x: VarArray) -> bool:
    """Whether x is (or is large enough to become) an array record."""
    return x._view is not None or x.size >= array_records.small()


def _as_view(x: VarArray) -> tuple[Storage, View]:
    t = x._live_tape()
    return t, as_view(t, True, x._operand()[1])


def cumulative(x: VarArray, name: str, axis: int | None) -> VarArray:
    """cumsum or cumprod along axis (of the flattened array for None), as NumPy."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    if array_form(x):
        t, v = _as_view(x)
        return type(x)(t._segment(), None, array_records.along(t, name, v, axis))
    t = x._live_tape()
    if not x.ndim:
        raise ValueError(f"{name} of a 0-d array along an axis: use axis=None")
    axis = array_records.axes(x.ndim, axis)[0]
    idx = np.moveaxis(x._idx, axis, -1)
    rows = idx.copy()
    code = OPCODE["add" if name == "cumsum" else "mul"]
    for k in range(1, idx.shape[-1]):  # a running sum (product): one block of records per position
        rows[..., k] = t._append_block(code, rows[..., k].size, in0=rows[..., k - 1].ravel(),
                                       in1=idx[..., k].ravel()).reshape(rows.shape[:-1])
    return type(x)(t._segment(), np.moveaxis(rows, -1, axis))


def sort(x: VarArray, axis: int | None = -1) -> VarArray:
    """The elements sorted along axis (flattened for None): one sort record (see the module docstring)."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    small = not array_form(x)
    t, v = _as_view(x)
    result = type(x)(t._segment(), None, array_records.along(t, "sort", v, axis))
    return result._scalars() if small else result


def argsort(x: VarArray, axis: int | None = -1) -> np.ndarray:
    """The stable sorting permutation of x's values: an array of ints (data, not recorded)."""
    return np.argsort(x.value, axis=axis, kind="stable")


def position(x: VarArray, name: str, axis: int | None = None, keepdims: bool = False) -> Any:
    """argmax or argmin of x's values, NumPy's (the first of ties, a NaN first): ints, data, as argsort."""
    return getattr(np, name)(x.value, axis=axis, keepdims=keepdims)


def _position(name: str) -> Callable[..., Any]:
    def numpy_position(a: Any, axis: int | None = None, out: None = None, *, keepdims: bool = False) -> Any:
        if out is not None:
            raise ValueError(f"np.{name} of a VarArray: out= does not apply")
        return position(a, name, axis, keepdims)
    return numpy_position


def _numpy_sort(a: Any, axis: int | None = -1, kind: str | None = None, order: None = None, *,
                stable: bool | None = None) -> Any:
    if order is not None:
        raise ValueError("np.sort of a VarArray: order= (structured arrays) does not apply")
    return sort(a, axis)  # every kind gives the same sorted values; tape's sort is stable


def _numpy_argsort(a: Any, axis: int | None = -1, kind: str | None = None, order: None = None, *,
                   stable: bool | None = None) -> np.ndarray:
    if order is not None:
        raise ValueError("np.argsort of a VarArray: order= (structured arrays) does not apply")
    return argsort(a, axis)


def _scan(name: str) -> Callable[..., Any]:
    def numpy_scan(a: Any, axis: int | None = None, dtype: None = None, out: None = None) -> Any:
        if dtype not in (None, float, np.float64) or out is not None:
            raise ValueError(f"np.{name} of a VarArray: dtype={dtype!r}, out={out!r} do not apply")
        return cumulative(a, name, axis)
    return numpy_scan


FUNCTIONS: dict[Any, Callable[..., Any]] = {  # numpy function -> on a VarArray
    np.cumsum: _scan("cumsum"),
    np.cumprod: _scan("cumprod"),
    np.sort: _numpy_sort,
    np.argsort: _numpy_argsort,
    np.argmax: _position("argmax"),
    np.argmin: _position("argmin"),
}
