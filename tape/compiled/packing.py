"""A small x0 packed into one array record, as the Python recorder packs a small VarArray where an op makes SMALL
elements or more (params meeting data: ``X @ w[:d]``, ``(x - mu)`` of many points).

f's first call on a small array x0 runs on its scalar records, its tape's ``big`` set to SMALL: the first Var array
of that many elements raises Packed (``sized``), before anything of the call is kept. From then on (and where f does
not type with an array of Vars) f runs on one pack record of the x0's records as its array record xs, where f takes
one; else on the scalar records, as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tape.arrays.varray import VarArray
from tape.compiled.numba_payload import tape_from_pointer
from tape.compiled.recording import hot
from tape.errors import JitError
from tape.records import array_records as python_arrays


class Packed(Exception):
    """A Var array of ``tape.big`` elements or more, made where f's xs may be packed into one array record."""


@hot
def sized(p, count):
    """count, the elements of a new Var array; Packed where that is ``big`` or more (tape.jit's driver sets it)."""
    if count >= tape_from_pointer(p).big:
        raise Packed
    return count


def may_pack(fn: Any, xs: Any) -> bool:
    """Whether xs is a small array of records (1-d or 2-d, under SMALL elements) that JitFunction fn may pack."""
    return type(xs) is VarArray and xs._view is None and fn._arrays is not False and xs.ndim in (1, 2) and \
        0 < xs.size < python_arrays.small()


def packed(fn: Any, t: Any, rows: np.ndarray, data: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """JitFunction fn on small xs's records (``rows``) of tape t where it makes no Var array of SMALL elements; else
    (and from then on; also where f does not type with an array of Vars) on one pack record of them as an array record
    xs, where f takes one (fn._record_arrays' outputs). None: the caller records scalar records."""
    refused = None
    if not fn._packs:
        try:
            return fn._record(t, rows, data, python_arrays.small())
        except Packed:
            fn._packs = True
        except JitError as e:  # f does not type with an array of Vars: it may with an array record
            refused = e
    if not fn._tries_arrays(np.zeros((1,) * (rows.ndim - 1) + (python_arrays.small(),)), data):
        if refused is not None:
            raise refused
        return None
    found = fn._record_arrays(t, python_arrays.pack(t, rows), data)
    if found is None and refused is not None:
        raise refused
    return found


__all__ = ["Packed", "sized", "may_pack", "packed"]
