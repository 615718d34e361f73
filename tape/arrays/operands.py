"""Operands of array operations: records in one of two forms, or numbers.

A VarArray holds either scalar record indices (``_idx``, one record per
element: small arrays) or a view of an array record (``_view``). Handles
answer ``_operand()`` with (tape, indices or view), so this module needs no
class above it; numbers come back as (None, float64 array).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from tape.errors import ForeignHandleError
from tape.records import array_records
from tape.records._recorders import Var
from tape.records.storage import Storage
from tape.sweeps.driver import View


def operand(x: Any) -> tuple[Storage | None, Any] | None:
    """(tape, indices) for Vars and small VarArrays, (tape, View) for array records, (None, numbers)
    for real numbers and arrays of them, None for anything else."""
    if type(x) is Var:
        return x._live_tape(), np.array(x._index)
    if hasattr(x, "_operand"):
        return x._operand()
    if isinstance(x, (numbers.Real, np.bool_, np.ndarray, list, tuple)):  # bools count as 0 and 1, as in NumPy
        array = np.asarray(x)
        if array.dtype.kind in "fiub":
            return None, array.astype(np.float64, copy=False)  # copied where it is stored
    return None


def operands(*xs: Any) -> list[tuple[Storage | None, Any]] | None:
    """operand() of each, or None if one of them is not an operand."""
    parts = [operand(x) for x in xs]
    return None if any(p is None for p in parts) else parts  # type: ignore[return-value]  # none is None


def common_tape(parts: list[tuple[Storage | None, Any]]) -> Storage | None:
    tapes = {id(t): t for t, _ in parts if t is not None}
    if len(tapes) > 1:
        raise ForeignHandleError("cannot combine arrays recorded on different tapes")
    return next(iter(tapes.values()), None)


def shape_of(part: Any) -> tuple[int, ...]:
    return part.shape if isinstance(part, (View, np.ndarray)) else ()


def as_view(t: Storage, recorded: bool, part: Any) -> View:
    """Any operand as a view of an array record: indices are packed, numbers become a constant."""
    if isinstance(part, View):
        return part
    if recorded:
        return array_records.pack(t, part)
    return array_records.constant(t, part)
