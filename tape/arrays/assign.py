"""Item assignment into a VarArray, and numpy.pad (a constant pad is an item assignment).

Item assignment is functional: ``y[key] = v`` records new elements for y and nothing
else changes: arrays it was copied from, or views taken of it before, keep their records
(NumPy would write through a view; tape never writes through). Scalar records: the copy
of y's index array gets v's records. Array records: one gather of v's elements to their
places and one select between them and y's old elements (a constant mask). Reading
elements (``y[key]``) is VarArray.__getitem__, a view or the scalar records' indices.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tape.arrays.conditions import ArrayCondition
from tape.arrays.operands import as_view, common_tape, operands
from tape.arrays.scans import array_form
from tape.kernels.ops import CONSTANT
from tape.records import array_records
from tape.records._recorders import Var
from tape.records.handles import Condition
from tape.records.storage import Storage
from tape.sweeps.driver import View

if TYPE_CHECKING:
    from tape.arrays.varray import VarArray


def _record_rows(t: Storage, part: Any, value: Any) -> np.ndarray:
    """Scalar record indices of an assigned value (numbers become constant records)."""
    if isinstance(part, View):
        return value._scalars()._idx
    if hasattr(value, "_operand") or type(value) is Var:
        return part
    return t._append_block(CONSTANT, part.size, values=part.ravel()).reshape(part.shape)


def setitem(x: VarArray, key: Any, value: Any) -> None:
    """x[key] = value, recorded (see the module docstring): value a Var, VarArray, number or
    NumPy array broadcast to the slot as NumPy does."""
    keys = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, (Var, ArrayCondition, Condition)) or hasattr(k, "_operand") for k in keys):
        raise TypeError("index a VarArray with integers, slices or NumPy arrays, not with recorded values")
    t = x._live_tape()
    parts = operands(value)
    if parts is None:
        raise TypeError(f"a VarArray's elements are Vars, VarArrays or real numbers, not {type(value).__name__}")
    common_tape([(t, None), *parts])  # raises for another tape
    part = parts[0][1]
    if x._view is None:
        rows = x._idx.copy()
        rows[key] = _record_rows(t, part, value)
        x._rows, x._seg = rows, t._segment()
        return
    v = as_view(t, parts[0][0] is not None, part)
    slot = np.arange(x.size).reshape(x.shape)[key]
    try:
        source = np.broadcast_to(array_records.places(v), slot.shape)
    except ValueError:
        raise ValueError(f"could not broadcast input array from shape {v.shape} into shape {slot.shape}") from None
    if slot.size == 0:
        return  # nothing assigned (a gather from an empty source would read element 0)
    chosen, mask = np.zeros(x.size, np.int64), np.zeros(x.size)
    chosen[slot.ravel()], mask[slot.ravel()] = source.ravel(), 1.0
    new = array_records.gather(t, v.record, chosen.reshape(x.shape))
    if not mask.all():
        assigned = array_records.constant(t, mask.reshape(x.shape))
        new = array_records.elementwise(t, "select", assigned, new, x._view)
    x._view, x._seg = new, t._segment()


COPYING_MODES = ("edge", "reflect", "symmetric", "wrap")  # pads that repeat elements: one gather


@functools.lru_cache(maxsize=64)
def _padded(shape: tuple[int, ...], pad_width: Any, mode: str, offset: int = 0,
            stride: int = 1) -> tuple[np.ndarray, tuple[int, ...]]:
    """(np.pad of the places of an array of shape, read from a flat view at offset by stride, flat; its shape): kept,
    so a loop that pads alike at every step gathers by one index, one object on the tape and in its Function
    (heat's 10^4 x 500 steps: 80 kB, not 40 MB; NumPy's pad takes 30 µs)."""
    padded = offset + stride * np.pad(np.arange(math.prod(shape)).reshape(shape), pad_width, mode)  # type: ignore
    flat = padded.reshape(-1)
    flat.flags.writeable = False
    return flat, padded.shape


def _ints(w: Any) -> bool:  # an int or tuples of them: a key _padded may keep (1.0 must not find 1's)
    return type(w) is int or type(w) is tuple and all(_ints(k) for k in w)


def pad(a: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    """numpy.pad: 'constant' (constant_values numbers) joins an array record with constant slabs (a
    join per padded axis) and writes scalar records into a constant array by item assignment;
    'edge', 'reflect', 'symmetric' and 'wrap' gather a's elements (np.pad of their places says which)."""
    if mode in COPYING_MODES and not kwargs.keys() - {"reflect_type"} and kwargs.get("reflect_type", "even") == "even":
        padded = _padded if _ints(pad_width) else _padded.__wrapped__
        flat = a.reshape(-1)
        v = flat._view
        if v is None or not a.ndim:  # scalar records, or a 0-d array (which np.pad gives back): by indexing
            index, shape = padded(a.shape, pad_width, mode)
            return flat[index.reshape(shape)]
        t = flat._live_tape()
        return type(a)(t._segment(), None, array_records.gather(t, v.record, *padded(
            a.shape, pad_width, mode, v.offset, v.strides[0])))
    if mode != "constant" or kwargs.keys() - {"constant_values"}:
        raise ValueError(f"np.pad of a VarArray: mode {mode!r} with {sorted(kwargs)} is not supported (tape has "
                         "'constant' with numbers, 'edge', 'reflect', 'symmetric', 'wrap')")
    values = kwargs.get("constant_values", 0.0)
    if any(hasattr(v, "_operand") or type(v) is Var for v in np.ravel(np.asarray(values, object))):
        raise TypeError("np.pad of a VarArray: constant_values must be numbers")
    filled = np.pad(np.zeros(a.shape), pad_width, "constant", constant_values=values)  # NumPy's checks
    if array_form(a) and a.ndim and not isinstance(pad_width, dict):  # a join per padded axis, not a constant,
        # a mask and a select of the padded size (heat equation, np.pad 'constant', 10^4 x 500: see bench/)
        t = a._live_tape()
        v = as_view(t, True, a._operand()[1])
        widths = np.broadcast_to(np.asarray(pad_width, np.int64), (a.ndim, 2)).tolist()
        return type(a)(t._segment(), None, array_records.pad(t, v, widths, np.broadcast_to(
            np.asarray(values, np.float64), (a.ndim, 2)).tolist()))
    inside = np.pad(np.ones(a.shape, bool), pad_width, "constant", constant_values=False)
    t = a._live_tape()
    if filled.size >= array_records.small():
        out = type(a)(t._segment(), None, array_records.constant(t, filled))
    else:
        out = type(a)(t._segment(), t._append_block(CONSTANT, filled.size, values=filled.ravel()).reshape(filled.shape))
    out[inside] = a.reshape(-1)
    return out


FUNCTIONS: dict[Any, Callable[..., Any]] = {  # numpy function -> on a VarArray
    np.pad: pad,
}
