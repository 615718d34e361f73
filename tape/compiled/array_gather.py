"""np.pad's copying modes ('edge', 'reflect', 'symmetric', 'wrap') of an array record inside tape.jit: one gather
record, as tape/arrays/assign.py's pad writes it. Its places are that module's ``_padded`` (kept: a loop that pads
alike at every step gathers by one index object), made by a call back into Python (``tape_jit_array_padded``), which
also gathers the values; the plan row names them by a number (``numbered``) until ``adopt`` makes the Plan.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from tape.arrays.assign import _padded
from tape.compiled.numba_internals import types
from tape.compiled.numba_payload import external
from tape.kernels.array_ops import ARRAY_OPCODE
from tape.sweeps.driver import whole

MODES = ("edge", "reflect", "symmetric", "wrap")
GATHER = ARRAY_OPCODE["gather"]
_CALLS = threading.local()  # this thread's call: its gathers' places by number, while its plan rows name them
_SIGNATURE = types.int64(types.voidptr, *[types.int64] * 13)
PADDED = types.ExternalFunction("tape_jit_array_padded", _SIGNATURE)
_INTS, _DOUBLES = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_double)


def _places(mode: int, n0: int, n1: int, ndim: int, b0: int, a0: int, b1: int, a1: int, start: int,
            stride: int) -> tuple[int, np.ndarray]:
    shape, widths = ((n0, n1), ((b0, a0), (b1, a1))) if ndim == 2 else ((n1,), ((b1, a1),))
    flat = _padded(shape, widths, MODES[mode], start, stride)[0]
    places = numbered()
    places.append(flat)
    return len(places) - 1, flat


def _gather(aval: int, size: int, mode: int, n0: int, n1: int, ndim: int, b0: int, a0: int, b1: int, a1: int,
            start: int, stride: int, base: int, out: int) -> int:
    """The places of np.pad(mode, widths) of a view (start, stride) of a record's region (at base) of shape
    (n0, n1) (n0 1 for 1-d): their elements written at ``out``; the places' number (-1: failed)."""
    try:
        number, flat = _places(mode, n0, n1, ndim, b0, a0, b1, a1, start, stride)
        arena = np.ctypeslib.as_array(ctypes.cast(aval, _DOUBLES), (size,))
        arena[out:out + flat.size] = arena[base + flat]
    except Exception:  # noqa: BLE001  # reported by the caller
        return -1
    return number


def numbered() -> list[np.ndarray]:
    """The places of this thread's call by number (a call and its adoption run in one thread)."""
    if not hasattr(_CALLS, "places"):
        _CALLS.places = []
    return _CALLS.places


def adopted(t, first: int) -> None:
    """After a call's plans (from ``first``) are the tape's: its places numbers are no longer read, and each gather
    reads its input's whole region, as the Python recorder's."""
    numbered().clear()
    for k in range(first, len(t._plans)):
        p = t._plans[k]
        if p.code == GATHER:
            t._plans[k] = p._replace(inputs=(whole(p.inputs[0].record, t._plan(p.inputs[0].record)),))


_installed: list = []


def install() -> None:
    """Give jitted code ``tape_jit_array_padded`` by symbol, once per process."""
    if not _installed:
        stub = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, *[ctypes.c_int64] * 13)(_gather)
        address = ctypes.cast(stub, ctypes.c_void_p).value
        assert address, "ctypes made a C function at address 0"
        external("tape_jit_array_padded", address, _SIGNATURE)
        _installed.append(stub)
