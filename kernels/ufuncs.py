"""NumPy's own float64 inner loops for the Numba kernels: the loop a ufunc such as np.exp calls, in the SIMD version
NumPy chose for this CPU at import.

kernels/_array_driver.py declares each loop by a symbol name (``numpy_<ufunc>``) with NumPy's inner-loop signature
``void loop(char **args, npy_intp const *dimensions, npy_intp const *steps, void *data)``; ``bind`` reads the loop's
address from the ufunc object (PyUFuncObject's ``functions``, numpy/_core/include/numpy/ufuncobject.h) and points the
name at it, so a driven exp makes NumPy's call and gets its bits, while the kernels stay cacheable. A loop is bound
only where the struct reads as documented, its ``data`` is NULL, and the loop called here gives the ufunc's own bits
on a probe of edge values at a few lengths, each element's bits the same alone (tape/sweeps/encoding.py then
gathers a view's lines and passes them at once); otherwise the name points at a function that is never called and
tape/sweeps/compiled.py leaves the op to NumPy's step.
"""

from __future__ import annotations

import ctypes
import sys

import llvmlite.binding as ll
import numpy as np

_never = ctypes.CFUNCTYPE(None)(lambda: None)  # what a name links to where its loop is not bound
_LOOP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_DOUBLE = 12  # NPY_DOUBLE
PROBE = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, -5e-324, 2.5e-310, 709.78, 709.79, -745.2,
                  0.5, -0.5, 1.0, -1.0, 0.999, 20.0, -20.0, 1e-300, 3e-8, 1e154, -1e154, 2.0, 100.0, -100.0, 0.1, -0.9,
                  1e-5, 37.5, -37.5, 7.0, -7.0, 0.75, 1.5, 1e10, -1e10, 1e-10, 3.0])


class _UFunc(ctypes.Structure):
    """PyUFuncObject's leading fields (NumPy 1.x and 2.x, CPython's PyObject_HEAD)."""

    _fields_ = [("refcnt", ctypes.c_ssize_t), ("type", ctypes.c_void_p), ("nin", ctypes.c_int), ("nout", ctypes.c_int),
                ("nargs", ctypes.c_int), ("identity", ctypes.c_int), ("functions", ctypes.POINTER(ctypes.c_void_p)),
                ("data", ctypes.POINTER(ctypes.c_void_p)), ("ntypes", ctypes.c_int), ("reserved1", ctypes.c_int),
                ("name", ctypes.c_char_p), ("types", ctypes.POINTER(ctypes.c_ubyte))]


def call(loop: int, x: np.ndarray, out: np.ndarray) -> None:
    """out = the unary loop at address ``loop`` over contiguous x, called as NumPy calls it on contiguous arrays: once,
    with the full count and strides of 8 bytes."""
    frame = np.array([x.ctypes.data, out.ctypes.data, x.size, 8, 8], np.intp)
    at = frame.ctypes.data
    _LOOP(loop)(at, at + 16, at + 24, None)


def address(ufunc: np.ufunc) -> int | None:
    """The address of ufunc's float64 loop (one input, one output), or None where it cannot be read or differs."""
    if sys.implementation.name != "cpython" or ufunc.nin != 1 or ufunc.nout != 1 or "d->d" not in ufunc.types:
        return None
    s = _UFunc.from_address(id(ufunc))
    if (s.nin, s.nout, s.nargs, s.ntypes) != (1, 1, 2, ufunc.ntypes) or s.name != ufunc.__name__.encode():
        return None
    i = ufunc.types.index("d->d")
    if (s.types[2 * i], s.types[2 * i + 1]) != (_DOUBLE, _DOUBLE) or s.data[i] or not s.functions[i]:
        return None
    loop = s.functions[i]
    with np.errstate(all="ignore"):
        for n in (1, 3, 8, 13, 40):  # its vector blocks and tails (tests/test_array_driver.py tries every length)
            x, out = np.roll(PROBE, n)[:n], np.empty(n)
            call(loop, x, out)
            if not np.array_equal(out, ufunc(x), equal_nan=True):
                return None
        alone = np.empty(1)  # each element's bits whatever its neighbours and place: a view's lines, which NumPy's
        for k in range(len(PROBE)):  # step passes its loop one by one, may be gathered and passed at once
            call(loop, PROBE[k:k + 1], alone)
            if not np.array_equal(alone, out[k:k + 1], equal_nan=True):
                return None
    return loop


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
