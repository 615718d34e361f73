"""The C functions jitted array-record code calls (tape/compiled/array_records.py), made once per process (compiled,
or loaded from tape.jit's cache), each when first needed: ``by_numpy`` (by symbol), a call back into Python for the
values the driver's rows cannot give NumPy's bits for (an op it has no row for, pow, sin, arctan2 ...; a looped op
over a strided view, a sum not in C order, a matmul of views that are not blocks or of one operand twice): the Python
recorder's own rule forward on the same views of the arena, so the same bits, for a few µs a record more;
``write_record`` (by its cell of the driver's KERNELS), which writes every op's record, plan and values (so f's
machine code holds none of it and a new f compiles small), ``write_moved``, a join's or a gather's, and the regions
given away (``_lives_c``, array_lives.py), each made when f first needs it (``_writer_at``, called back: an f that
does not type with array records never makes one, an f that joins nothing never makes write_moved, one that gives no
region away never makes the lives'; one that fails to compile raises array_records.WriterFailed in f); the
compiled array driver's ``forward`` of one record (its cell: the record's row encoded and checked, array_rows.py, then
the forward) and the kernels of the ops and kinds f's rows call, made when a row first needs them where they are
cached on disk, else once by_numpy has stood in for the driver ``PAYBACK`` seconds (``_kernel_at``): a first gradient
on empty caches compiles none.
"""

from __future__ import annotations

import ctypes
import os
import time
import types as types_
from typing import Any

import numpy as np
from numba import types
from numba.core.ccallback import CFunc
from numba.core.compiler import Compiler
from numba.core.compiler_lock import global_compiler_lock

from tape.compiled.array_lives import reuse
from tape.compiled.array_moved import write_moved
from tape.compiled.array_plans import plan_of
from tape.compiled.array_records import (
    _BY_NUMPY,
    _BY_PLAN,
    _KERNEL_AT,
    _WRITE,
    FAILED,
    KERNEL_AT,
    PLAN_WIDTH,
    STAND_IN,
    STANDING,
    UNDRIVEN,
    WriterFailed,
    _pin,
    write_record,
)
from tape.compiled.array_rows import LENGTHS, SLOT, by_driver, encode, rows, size
from tape.compiled.link_only import compiling
from tape.compiled.numba_payload import arrays_from_pointer, external
from tape.compiled.recording import OPTIONS
from tape.kernels import _array_driver as kernels
from tape.kernels import array_kernels
from tape.kernels import compiling as kernel_compiling
from tape.kernels._array_driver import BASE, SHAPE, VIEW, VIEWS, WIDTH
from tape.kernels.array_ops import RULE
from tape.kernels.compiling import Clock, _index
from tape.sweeps.driver import quietly


def _forward_c(p, q, k):
    """Plan k's values by the driver's forward of its one-row table (array_rows.encode), made with the forward: k;
    UNDRIVEN where the row does not give NumPy's bits (by_driver), STANDING where its kernel is not made, FAILED."""
    try:
        s = arrays_from_pointer(q)
        encode(s, k)
        if not by_driver(s, k):
            return UNDRIVEN
        at = SLOT[s.plans[k, 0]]
        if kernels._kernel(at) == 0 and KERNEL_AT(at) == 0:
            return STANDING
        n = max(size(s.plans[k], LENGTHS), s.row[0, SHAPE + 3])  # (a logsumexp's lines: one at least)
        if s.scratch.shape[1] < n:
            s.scratch = np.empty((4, n))
        kernels.forward(rows(s, k), s.aval, s.scratch)
    except Exception:  # noqa: BLE001  # reported by the caller
        return FAILED
    return k


def _write_c(p, q, code, arg, c, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, b0, b1, b2, b3, b4, b5, b6, b7,
             b8, b9, b10, b11, e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11):
    """write_record of three operands passed as array_records.OPERAND's numbers (12 each: DIMS 4)."""
    try:
        return write_record(p, q, code, arg, c, (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11),
                            (b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11),
                            (e0, e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11))
    except Exception:  # noqa: BLE001  # out of memory: reported by the caller
        return FAILED


def _lives_c(p, q, size):
    """The lives' C function (array_lives.py): mark what the records written since it last ran read, then the freed
    record whose region a new record of ``size`` takes, or -1 (size 0: none looked for)."""
    s = arrays_from_pointer(q)
    for k in range(max(s.pinned, s.first), s.np):
        _pin(s, p, k)
    s.pinned = s.np
    return reuse(s, p, size) if size else -1


def _moved_c() -> Any:
    """_write_c calling write_moved: a C function of its own (its own cache entry, by its name)."""
    fn = types_.FunctionType(_write_c.__code__, {**globals(), "write_record": write_moved}, "_moved_c")
    fn.__qualname__ = "_moved_c"
    return fn


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
    start = time.perf_counter()
    try:
        p = plan_of(np.ctypeslib.as_array(ctypes.cast(plan, _INTS), (PLAN_WIDTH,)).tolist())
        bases = np.ctypeslib.as_array(ctypes.cast(row, _INTS), (WIDTH + VIEW,))[VIEWS + BASE::VIEW].tolist()
        arena = np.ctypeslib.as_array(ctypes.cast(aval, _DOUBLES), (size,))
        inputs = [float(arena[base]) if constants >> k & 1 else
                  np.ndarray(v.shape, np.float64, arena, 8 * base, tuple(8 * s for s in v.strides))
                  for k, (v, base) in enumerate(zip(p.inputs, bases, strict=False))]
        out = arena[p.offset:p.offset + int(np.prod(p.shape))].reshape(p.shape)
        quietly(RULE[p.code].forward, p, inputs, out)
    except np.linalg.LinAlgError:  # (a singular matrix, one not positive definite: the caller raises NumPy's)
        return 2
    except Exception:  # noqa: BLE001  # reported by the caller
        return 1
    finally:
        if constants & STAND_IN:  # (standing in for the driver's row: its seconds on the clock)
            CLOCK.add(time.perf_counter() - start)
    return 0


PAYBACK = 4.0  # seconds by_numpy stands in for the driver's rows before their kernels compile: cold, the forward
# 1.6 CPU-s, a sum's 1.3, a matmul's 1.1, an op's values 0.04-0.24 (s21's notes)
CLOCK = Clock()  # seconds by_numpy has stood in for a driver's row in this process
_installed: list = []
_made: dict[int, CFunc] = {}  # by cell (kernels.WRITE_AT, FORWARD_AT): kept alive while their addresses are there


def install() -> None:
    """Give jitted code by_numpy and _kernel_at by symbol, once per process (nothing compiled)."""
    if not _installed:
        for name, fn, signature in (("tape_jit_array_by_numpy", _by_numpy, _BY_NUMPY),
                                    ("tape_jit_array_kernel_at", _kernel_at, _KERNEL_AT),
                                    ("tape_jit_array_writer_at", _writer_at, _KERNEL_AT)):
            stub = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p if a == types.voidptr else ctypes.c_int64
                                                      for a in signature.args])(fn)
            address = ctypes.cast(stub, ctypes.c_void_p).value
            assert address, "ctypes made a C function at address 0"
            external(name, address, signature)
            _installed.append(stub)  # kept alive: jitted code calls its address


_CELLS: dict[int, tuple[Any, Any, type]] = {  # each cell's Python function, signature and pipeline
    kernels.WRITE_AT: (_write_c, _WRITE, LinkOnly), kernels.MOVE_AT: (_moved_c(), _WRITE, LinkOnly),
    kernels.FORWARD_AT: (_forward_c, _BY_PLAN, LinkOnly), kernels.LIVES_AT: (_lives_c, _BY_PLAN, LinkOnly)}


def _cfunc(cell: int) -> CFunc:
    fn, signature, pipeline = _CELLS[cell]
    made = CFunc(fn, (signature.args, signature.return_type), {}, OPTIONS, pipeline_class=pipeline)
    made.enable_caching()
    return made


def _make(cell: int) -> None:
    """Compile (or load) the C function of a cell of KERNELS and write its address there."""
    install()  # (the symbols write_record calls)
    with global_compiler_lock:  # (a thread making it too: kernels/array_kernels.py's make)
        if cell not in _made:
            made = _cfunc(cell)
            made.compile()
            assert made.address, "Numba made a C function at address 0"
            _made[cell] = made
            kernels.KERNELS[cell] = made.address


def _writer_at(cell: int) -> int:
    """Make the writer of a cell (write_record, write_moved, the lives': called back from jitted code the first time
    f needs it): its address, 0 where it failed (f raises WriterFailed, this exception its cause)."""
    try:
        _make(cell)
    except Exception as e:  # noqa: BLE001  # (reported by f)
        WriterFailed.cause = e
        return 0
    return kernels.KERNELS[cell]


def warm() -> None:
    """Make write_record, write_moved, the lives' and the driver's forward (``python -m tape warmup``: then a row's
    kernel, cached, is made when it is first needed)."""
    for cell in (kernels.WRITE_AT, kernels.MOVE_AT, kernels.LIVES_AT, kernels.FORWARD_AT):
        _make(cell)


_far: set[int] = set()  # slots whose kernel or the forward is neither made nor cached: made once stand-ins paid back


def _kernel_at(slot: int) -> int:
    """Make the driver's forward and the kernel at slot (a driven row's, called back from write_record the first time
    a row needs it) where both are cached on disk or by_numpy has stood in PAYBACK seconds in this process (at once
    with compiling.EAGER): 1, else 0 (by_numpy stands in for the row)."""
    try:
        if CLOCK.spent < PAYBACK and not kernel_compiling.EAGER:
            if slot in _far:
                return 0
            cached = kernels.FORWARD_AT in _made or os.path.exists(_index(_cfunc(kernels.FORWARD_AT)))
            if not cached or array_kernels.wanted({slot}):
                _far.add(slot)
                return 0
        _make(kernels.FORWARD_AT)
        array_kernels.make({slot})
    except Exception:  # noqa: BLE001  # (NumPy's rule stands in)
        return 0
    return 1
