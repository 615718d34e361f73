"""The C functions jitted array-record code calls by symbol (tape/compiled/array_records.py), made once per process
(compiled, or loaded from tape.jit's cache): the compiled array driver's ``forward`` of one row; ``write_record``,
which writes every op's record, plan and values (so f's machine code holds none of it and a new f compiles small);
and ``by_numpy``, a call back into Python for the values the driver's rows cannot give NumPy's bits for (an op it
has no row for, pow, sin, arctan2 ...; a looped op over a strided view, a sum not in C order, a matmul of views that
are not blocks or of one operand twice): the Python recorder's own rule forward on the same views of the arena, so
the same bits, for a few µs a record more.
"""

from __future__ import annotations

import ctypes

import numpy as np
from numba import carray, cfunc
from numba.core.compiler import Compiler

from tape.compiled import array_gather
from tape.compiled.array_records import _BY_NUMPY, _SIGNATURE, _WRITE, FAILED, PLAN_WIDTH, plan_of, write_record
from tape.compiled.link_only import compiling
from tape.compiled.numba_payload import external
from tape.compiled.recording import OPTIONS
from tape.kernels import _array_driver as kernels
from tape.kernels import array_kernels
from tape.kernels._array_driver import BASE, VIEW, VIEWS, WIDTH
from tape.kernels.array_ops import RULE
from tape.sweeps.driver import quietly


def _forward_c(table, rows, aval, size, scratch, columns):
    try:
        kernels.forward(carray(table, (rows, WIDTH), np.int64), carray(aval, (size,), np.float64),
                        carray(scratch, (4, columns), np.float64))
    except Exception:  # noqa: BLE001  # a scratch row too short: reported by the caller
        return 1
    return 0


def _write_c(p, q, code, arg, c, a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7, e0, e1, e2, e3, e4,
             e5, e6, e7):
    try:
        return write_record(p, q, code, arg, c, (a0, a1, a2, a3, a4, a5, a6, a7), (b0, b1, b2, b3, b4, b5, b6, b7),
                            (e0, e1, e2, e3, e4, e5, e6, e7))
    except Exception:  # noqa: BLE001  # out of memory: reported by the caller
        return FAILED


class LinkOnly(Compiler):
    """Numba's pipeline, what the function calls compiled link-only (tape/compiled/link_only.py): one module
    optimized once, no machine code per callee (install() on an empty jit cache: 5.0 -> 3.4 CPU-s)."""

    def _compile_core(self):
        self.state.flags.no_cpython_wrapper = False  # the C function itself is machine code (cached as such)
        with compiling():
            return super()._compile_core()


_INTS, _DOUBLES = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_double)


def _by_numpy(plan: int, row: int, aval: int, size: int, constants: int) -> int:
    """The values of a plan row (its views' bases in its driver row; bit v of ``constants``: view v a 0-d constant,
    read as a float, as tape/sweeps/driver.py's ``read``) by the Python recorder's rule forward, into the arena."""
    try:
        p = plan_of(np.ctypeslib.as_array(ctypes.cast(plan, _INTS), (PLAN_WIDTH,)).tolist())
        bases = np.ctypeslib.as_array(ctypes.cast(row, _INTS), (WIDTH + VIEW,))[VIEWS + BASE::VIEW].tolist()
        arena = np.ctypeslib.as_array(ctypes.cast(aval, _DOUBLES), (size,))
        inputs = [float(arena[base]) if constants >> k & 1 else
                  np.ndarray(v.shape, np.float64, arena, 8 * base, tuple(8 * s for s in v.strides))
                  for k, (v, base) in enumerate(zip(p.inputs, bases, strict=False))]
        out = arena[p.offset:p.offset + int(np.prod(p.shape))].reshape(p.shape)
        quietly(RULE[p.code].forward, p, inputs, out)
    except Exception:  # noqa: BLE001  # reported by the caller
        return 1
    return 0


_installed: list = []


def install() -> None:
    """Give jitted code the three C functions by symbol, once per process."""
    if not _installed:
        stub = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p] * 3, ctypes.c_int64, ctypes.c_int64)(_by_numpy)
        address = ctypes.cast(stub, ctypes.c_void_p).value
        assert address, "ctypes made a C function at address 0"
        external("tape_jit_array_by_numpy", address, _BY_NUMPY)
        array_gather.install()
        _installed.append(stub)  # kept alive: jitted code calls its address
        array_kernels.make(array_kernels.forwards(kernels.SUM, kernels.MATMUL))  # the kernels the rows' forward calls
        for name, fn, signature, pipeline in (("tape_jit_array_forward", _forward_c, _SIGNATURE, None),
                                              ("tape_jit_array_write", _write_c, _WRITE, LinkOnly)):
            compiled = cfunc(signature, cache=True, pipeline_class=pipeline, **OPTIONS)(fn)
            assert compiled.address, "Numba made a C function at address 0"
            external(name, compiled.address, signature)
            _installed.append(compiled)
