"""NumPy's own float64 inner loops for the Numba kernels: the loop a ufunc such as np.exp (or np.power, of two
inputs) calls, in the SIMD version NumPy chose for this CPU at import.

kernels/_array_driver.py declares each loop by a symbol name (``numpy_<ufunc>``) with NumPy's inner-loop signature
``void loop(char **args, npy_intp const *dimensions, npy_intp const *steps, void *data)``; ``bind`` reads the loop's
address from the ufunc object (PyUFuncObject's ``functions``, numpy/_core/include/numpy/ufuncobject.h) and points the
name at it, so a driven exp makes NumPy's call and gets its bits, while the kernels stay cacheable. A loop is bound only
where the struct reads as documented, its ``data`` is NULL, and the loop called here gives the ufunc's own bits on a
probe of edge values at a few lengths (a binary loop's on pairs, and with numbers read by all: a step of 0), each
element's bits the same alone (tape/sweeps/encoding.py then gathers a view's lines and passes them at once); otherwise
the name points at a function that is never called and tape/sweeps/compiled.py leaves the op to NumPy's step.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from typing import Any

import llvmlite.binding as ll
import numpy as np

_never = ctypes.CFUNCTYPE(None)(lambda: None)  # what a name links to where its loop is not bound
_LOOP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_DOUBLE = 12  # NPY_DOUBLE
NUMBERS = np.array([0.0, -0.0, np.inf, np.nan, 0.5, 1.0, -1.0, 2.0, 3.0])  # a binary loop's probe's, read by all
# (np.power's loop has cases of its own for some)
PROBE = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, -5e-324, 2.5e-310, 709.78, 709.79, -745.2,
                  0.5, -0.5, 1.0, -1.0, 0.999, 20.0, -20.0, 1e-300, 3e-8, 1e154, -1e154, 2.0, 100.0, -100.0, 0.1, -0.9,
                  1e-5, 37.5, -37.5, 7.0, -7.0, 0.75, 1.5, 1e10, -1e10, 1e-10, 3.0])


class _UFunc(ctypes.Structure):
    """PyUFuncObject's leading fields (NumPy 1.x and 2.x, CPython's PyObject_HEAD)."""

    _fields_ = [("refcnt", ctypes.c_ssize_t), ("type", ctypes.c_void_p), ("nin", ctypes.c_int), ("nout", ctypes.c_int),
                ("nargs", ctypes.c_int), ("identity", ctypes.c_int), ("functions", ctypes.POINTER(ctypes.c_void_p)),
                ("data", ctypes.POINTER(ctypes.c_void_p)), ("ntypes", ctypes.c_int), ("reserved1", ctypes.c_int),
                ("name", ctypes.c_char_p), ("types", ctypes.POINTER(ctypes.c_ubyte))]


def call(loop: int, x: np.ndarray, out: np.ndarray, y: np.ndarray | None = None, number: bool = False) -> None:
    """out = the loop at address ``loop`` over contiguous x (and y, a binary loop's), called as NumPy calls it on
    contiguous arrays: once, with the full count and steps of 8 bytes (0 over y where it is a ``number`` read by all,
    one element, as over a float: np.power's loop squares at a step of 0 and 2.0, so each number's bits follow the
    step)."""
    operands = (x,) if y is None else (x, y)
    if x.size != out.size or y is not None and (y.size not in (1, out.size) or number and y.size != 1) or not all(
            v.dtype == np.float64 and v.flags.c_contiguous for v in (*operands, out)):
        raise ValueError("tape: a loop's operands are contiguous float64 arrays as long as its output, or one number")
    steps = [8] if y is None else [8, 0 if number or y.size == 1 < out.size else 8]
    frame = np.array([*(v.ctypes.data for v in operands), out.ctypes.data, out.size, *steps, 8], np.intp)
    at, k = frame.ctypes.data, len(operands)
    _function(loop)(at, at + 8 * (k + 1), at + 8 * (k + 2), None)


@functools.lru_cache(maxsize=64)
def _function(loop: int) -> Any:
    return _LOOP(loop)


def address(ufunc: np.ufunc) -> int | None:
    """The address of ufunc's float64 loop (one or two inputs, one output), or None where it cannot be read or
    differs: on a probe of edge values (pairs of them, and each with one number read by all), at a few lengths, and
    each element alone."""
    kind = "d" * ufunc.nin + "->d"
    if sys.implementation.name != "cpython" or ufunc.nin not in (1, 2) or ufunc.nout != 1 or kind not in ufunc.types:
        return None
    s = _UFunc.from_address(id(ufunc))
    if (s.nin, s.nout, s.nargs, s.ntypes) != (ufunc.nin, 1, ufunc.nin + 1, ufunc.ntypes) or (
            s.name != ufunc.__name__.encode()):
        return None
    i = ufunc.types.index(kind)
    if any(s.types[(ufunc.nin + 1) * i + j] != _DOUBLE for j in range(ufunc.nin + 1)) or s.data[i] or (
            not s.functions[i]):
        return None
    loop = s.functions[i]
    pairs = [()] if ufunc.nin == 1 else [(np.roll(PROBE, 7),), *((NUMBERS[k:k + 1],) for k in range(len(NUMBERS)))]
    with np.errstate(all="ignore"):
        for y in pairs:
            if not _same(loop, ufunc, *y):
                return None
    return loop


def _same(loop: int, ufunc: np.ufunc, y: np.ndarray | None = None) -> bool:
    """Whether the loop gives ufunc's bits over the probe (with y: as many elements, or one read by all) at lengths of
    its vector blocks and tails (tests/test_array_driver.py tries every length), and each element alone the same (a
    view's lines, which NumPy's step passes its loop one by one, may be gathered and passed at once)."""
    number = y is not None and y.size == 1  # (a number read by all: the loop's special cases at a step of 0)
    for n in (1, 3, 8, 13, 40):  # (at 40, x is the probe)
        x, out = np.roll(PROBE, n)[:n], np.empty(n)
        ys = () if y is None else (y if number else y[:n],)
        call(loop, x, out, ys[0] if ys else None, number)
        if not np.array_equal(out, ufunc(x, *ys), equal_nan=True):
            return False
    alone = np.empty(1)
    for k in range(len(PROBE) * (not number)):
        call(loop, PROBE[k:k + 1], alone, None if y is None else y[k:k + 1], number)
        if not np.array_equal(alone, out[k:k + 1], equal_nan=True):
            return False
    return True


def bind(ufuncs: tuple[str, ...]) -> frozenset[str]:
    """Point each name ``numpy_<ufunc>``, for Numba's linker, at NumPy's float64 loop of np.<ufunc>; the names
    bound."""
    never = ctypes.cast(_never, ctypes.c_void_p).value
    bound = set()
    for name in ufuncs:
        loop = address(getattr(np, name))
        ll.add_symbol(f"numpy_{name}", loop or never)
        if loop:
            bound.add(name)
    return frozenset(bound)
