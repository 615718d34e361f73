"""VarArray's scans, sort and item assignment (mixed into VarArray), and their NumPy functions.

cumsum and cumprod of array records are one ``scan`` record each (kernels/scans.py: the
adjoint is the reversed cumulative sum, cumprod's rules never divide, so zeros are
exact); of scalar records they are running sums or products, one scalar record per
element. sort is one ``sort`` record in both forms (small arrays are packed first, the
result read back as scalar records): its permutation is recomputed from the values at
every pass and every replay, a stable sort (ties keep their order; NaNs last). argsort
answers from the values, a plain array of ints, as any value read inside tape.trace is.

Item assignment is functional: ``y[key] = v`` records new elements for y and nothing
else changes: arrays it was copied from, or views taken of it before, keep their records
(NumPy would write through a view; tape never writes through). Scalar records: the copy
of y's index array gets v's records. Array records: one gather of v's elements to their
places and one select between them and y's old elements (a constant mask).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tape.arrays.conditions import ArrayCondition
from tape.arrays.operands import as_view, common_tape, operands
from tape.kernels.ops import CONSTANT, OPCODE
from tape.records import array_records
from tape.records._recorders import Var
from tape.records.handles import Condition
from tape.records.storage import Storage
from tape.sweeps.driver import View


def _array_form(x: Any) -> bool:
    return x._view is not None or x.size >= array_records.SMALL


def _as_view(x: Any) -> tuple[Storage, View]:
    t = x._live_tape()
    return t, as_view(t, True, x._operand()[1])


def cumulative(x: Any, name: str, axis: int | None) -> Any:
    """cumsum or cumprod along axis (of the flattened array for None), as NumPy."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    if _array_form(x):
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


def sort(x: Any, axis: int | None = -1) -> Any:
    """The elements sorted along axis (flattened for None): one sort record (see the module docstring)."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    small = not _array_form(x)
    t, v = _as_view(x)
    result = type(x)(t._segment(), None, array_records.along(t, "sort", v, axis))
    return result._scalars() if small else result


def _record_rows(t: Storage, part: Any, value: Any) -> np.ndarray:
    """Scalar record indices of an assigned value (numbers become constant records)."""
    if isinstance(part, View):
        return value._scalars()._idx
    if hasattr(value, "_operand") or type(value) is Var:
        return part
    return t._append_block(CONSTANT, part.size, values=part.ravel()).reshape(part.shape)


class ArrayFunctions:
    """Mixed into VarArray (which provides _idx, _view, _operand, _live_tape, reshape, value)."""

    __slots__ = ()

    def cumsum(self: Any, axis: int | None = None) -> Any:
        """Cumulative sums along axis (of the flattened array for None)."""
        return cumulative(self, "cumsum", axis)

    def cumprod(self: Any, axis: int | None = None) -> Any:
        """Cumulative products along axis; the derivatives are exact with zeros in the input."""
        return cumulative(self, "cumprod", axis)

    def sort(self: Any, axis: int = -1) -> None:
        """Sort in place along axis, as ndarray.sort (np.sort gives a sorted copy)."""
        y = sort(self, axis)
        self._rows, self._view, self._seg = y._rows, y._view, y._seg

    def argsort(self: Any, axis: int | None = -1) -> np.ndarray:
        """The stable sorting permutation of the values: an array of ints (data, not recorded)."""
        return np.argsort(self.value, axis=axis, kind="stable")

    def copy(self: Any) -> Any:
        """An independent VarArray of the same records (assigning into it leaves self as it is)."""
        return type(self)(self._seg, self._idx.copy()) if self._view is None else type(self)(self._seg, None,
                                                                                              self._view)

    def __setitem__(self: Any, key: Any, value: Any) -> None:
        """self[key] = value, recorded (see the module docstring): value a Var, VarArray, number or
        NumPy array broadcast to the slot as NumPy does."""
        keys = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, (Var, ArrayCondition, Condition)) or hasattr(k, "_operand") for k in keys):
            raise TypeError("index a VarArray with integers, slices or NumPy arrays, not with recorded values")
        t = self._live_tape()
        parts = operands(value)
        if parts is None:
            raise TypeError(f"a VarArray's elements are Vars, VarArrays or real numbers, not {type(value).__name__}")
        common_tape([(t, None), *parts])  # raises for another tape
        part = parts[0][1]
        if self._view is None:
            rows = self._idx.copy()
            rows[key] = _record_rows(t, part, value)
            self._rows, self._seg = rows, t._segment()
            return
        v = as_view(t, parts[0][0] is not None, part)
        slot = np.arange(self.size).reshape(self.shape)[key]
        try:
            source = np.broadcast_to(array_records.places(v), slot.shape)
        except ValueError:
            raise ValueError(f"could not broadcast input array from shape {v.shape} into shape {slot.shape}") from None
        chosen, mask = np.zeros(self.size, np.int64), np.zeros(self.size)
        chosen[slot.ravel()], mask[slot.ravel()] = source.ravel(), 1.0
        new = array_records.gather(t, v.record, chosen.reshape(self.shape))
        if not mask.all():
            written = array_records.constant(t, mask.reshape(self.shape))
            new = array_records.elementwise(t, "select", written, new, self._view)
        self._view, self._seg = new, t._segment()


COPYING_MODES = ("edge", "reflect", "symmetric", "wrap")  # pads that repeat elements: one gather


def pad(a: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    """numpy.pad: 'constant' (constant_values numbers, constant records) writes a into a
    constant array by item assignment; 'edge', 'reflect', 'symmetric' and 'wrap' gather a's
    elements (np.pad of their places says which)."""
    places = np.arange(a.size).reshape(a.shape)
    if mode in COPYING_MODES and not kwargs.keys() - {"reflect_type"} and kwargs.get("reflect_type", "even") == "even":
        return a.reshape(-1)[np.pad(places, pad_width, mode)]  # type: ignore[call-overload]  # a str mode
    if mode != "constant" or kwargs.keys() - {"constant_values"}:
        raise ValueError(f"np.pad of a VarArray: mode {mode!r} with {sorted(kwargs)} is not supported (tape has "
                         "'constant' with numbers, 'edge', 'reflect', 'symmetric', 'wrap')")
    values = kwargs.get("constant_values", 0.0)
    if any(hasattr(v, "_operand") or type(v) is Var for v in np.ravel(np.asarray(values, object))):
        raise TypeError("np.pad of a VarArray: constant_values must be numbers")
    filled = np.pad(np.zeros(a.shape), pad_width, "constant", constant_values=values)
    inside = np.pad(np.ones(a.shape, bool), pad_width, "constant", constant_values=False)
    t = a._live_tape()
    if _array_form(a) or filled.size >= array_records.SMALL:
        out = type(a)(t._segment(), None, array_records.constant(t, filled))
    else:
        out = type(a)(t._segment(), t._append_block(CONSTANT, filled.size, values=filled.ravel()).reshape(filled.shape))
    out[inside] = a.reshape(-1)
    return out


def _numpy_sort(a: Any, axis: int | None = -1, kind: str | None = None, order: None = None, *,
                stable: bool | None = None) -> Any:
    if order is not None:
        raise ValueError("np.sort of a VarArray: order= (structured arrays) does not apply")
    return sort(a, axis)  # every kind gives the same sorted values; tape's sort is stable


def _numpy_argsort(a: Any, axis: int | None = -1, kind: str | None = None, order: None = None, *,
                   stable: bool | None = None) -> np.ndarray:
    if order is not None:
        raise ValueError("np.argsort of a VarArray: order= (structured arrays) does not apply")
    return a.argsort(axis)


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
    np.pad: pad,
}
