"""The array driver's kernels (kernels/_array_driver.py), each compiled the first time a table needs it.

The driver's ``forward`` and ``reverse`` know no op and no row kind but the elementwise and STRETCH rows: an
elementwise row calls its op's kernel (``values_<opcode>``, ``sends_<opcode>``), any other row its kind's (SUM,
MATMUL, COPY/GATHER, LOGSUMEXP, LINED, SELECT, forward and reverse), each a C function at its slot of the driver's
KERNELS (0: not compiled, which the driver refuses with an error). ``make(slots)`` compiles (or loads from tape's
cache) the kernels at those slots and writes their addresses there; ``needed(table, back)`` names the slots a table's
rows call. So a program compiles the kernels of the ops and kinds it uses, not the whole op table (the reverse's switch
over every op was 30 of its 39 CPU-s; s20's notes), and ``python -m tape warmup`` compiles them all.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np
from numba import types
from numba.core.ccallback import CFunc
from numba.core.compiler_lock import global_compiler_lock

from . import _array_driver as driver
from .compiling import _index

_P, _I, _F = types.CPointer, types.int64, types.float64
SIGNATURES = (  # a kind's forward and reverse (a status back), an op's values and sends, a sum back: the driver's
    _I(_P(_I), _P(_F), _P(_F), _P(types.intp), _I, _I, _I),  # arguments
    _I(_P(_I), _P(_F), _P(_F), _P(types.uint32), _P(_F), _I, _I, _I, _I, _I, _I, _I, _I),
    types.void(_P(_F), _P(_F), _P(_F), _I, _I, _P(types.intp)),
    types.void(_I, _P(_F), _P(_F), _P(_F), _P(_F), _P(_F), _I, _I, _I, _P(types.intp), _P(_F)),
    types.void(_P(_I), _I, _P(_F), _P(_F), _P(_F), _I, _I),
)
_made: dict[int, CFunc] = {}  # by slot: kept alive while their addresses are in KERNELS


def _signature(slot: int) -> Any:
    if slot == driver.SUMMED:
        return SIGNATURES[4]
    return SIGNATURES[0 if slot < driver.BACK else 1 if slot < driver.VALUES else 2 if slot < driver.SENDS else 3]


def _kernel(slot: int) -> CFunc:
    """The C function of the kernel at slot, not compiled yet; ValueError for a slot that holds none."""
    name = driver.NAMES[slot] if 0 <= slot < driver.SLOTS else ""
    if not name:
        raise ValueError(f"tape: the compiled array driver has no kernel at slot {slot} (an unknown row kind or "
                         "an op it does not run)")
    sig = _signature(slot)
    kernel = CFunc(getattr(driver, name), (sig.args, sig.return_type), {},
                   {"nopython": True, "nogil": True, "error_model": "numpy"})
    kernel.enable_caching()
    return kernel


def make(slots: Iterable[int]) -> None:
    """Compile (or load) the kernels at slots not made yet, and write their addresses into the driver's KERNELS;
    ValueError for a slot that holds none (an unknown row kind or op)."""
    for slot in sorted(set(slots).difference(_made)):
        kernel = _kernel(slot)
        with global_compiler_lock:  # (a fork waits for it: kernels/compiling.py; a thread making it too, for _made)
            if slot in _made:
                continue
            kernel.compile()
            _made[slot] = kernel
            driver.KERNELS[slot] = kernel.address or 0  # (an address, once compiled)


def wanted(slots: Iterable[int]) -> set[int]:
    """The slots whose kernels are neither made in this process nor cached on disk (their index there)."""
    return {slot for slot in set(slots).difference(_made) if not os.path.exists(_index(_kernel(slot)))}


def made(slots: set[int]) -> bool:
    """Whether the kernels at slots are all made in this process."""
    return slots.issubset(_made)


def _summed(table: np.ndarray) -> bool:
    """Whether an elementwise or SELECT row of table sends back to a view not laid out as its output (the driver's
    _send sums it back by SUMMED's kernel, as reverse_select does its branch's, view 1; its condition sends none)."""
    rows = table[(table[:, driver.KIND] == driver.ELEMENTWISE) | (table[:, driver.KIND] == driver.SELECT)]
    out = rows[:, driver.OUT_STRIDES:driver.OUT_STRIDES + 4]
    return any(((rows[:, driver.NIN] > q) & (rows[:, f + driver.WANT] != 0) & (
        rows[:, f + driver.STRIDES:f + driver.STRIDES + 4] != out).any(axis=1)).any()
               for q, f in enumerate((driver.VIEWS, driver.VIEWS + driver.VIEW)))


ROWED = {driver.SUM, driver.MATMUL, driver.COPY, driver.GATHER, driver.LOGSUMEXP, driver.LINED, driver.SELECT}  # the
# row kinds with kernels of their own (a GATHER's are COPY's)


def needed(table: np.ndarray, back: bool) -> set[int]:
    """The slots of the kernels that table's rows call, forward or back (a STRETCH's members' too: they run row by
    row until its kernel is set; SUMMED back where a row sends to a view not laid out as its output)."""
    kind, op = table[:, driver.KIND], table[:, driver.OP]  # (sets, not np.unique: its first call imports numpy.ma,
    # on which a child forked amid another thread's import would wait for good: tests/test_twins.py's fork)
    driven = kind == driver.ELEMENTWISE
    if back:  # (the driver skips an elementwise row that sends nothing: a comparison's, which has no sends kernel)
        driven &= (table[:, driver.VIEWS + driver.WANT] != 0) | (
            (table[:, driver.NIN] > 1) & (table[:, driver.VIEWS + driver.VIEW + driver.WANT] != 0))
    ops = set(op[driven | (kind == driver.LINED)].tolist())
    kinds = set(kind[(kind != driver.ELEMENTWISE) & (kind != driver.STRETCH)].tolist())
    first = (driver.SENDS, driver.BACK) if back else (driver.VALUES, 0)
    return {*(first[0] + k if 0 <= k < driver.OPS else -1 for k in ops),  # (-1: none, which make refuses)
            *(first[1] + (driver.COPY if k == driver.GATHER else k) if k in ROWED else -1 for k in kinds),
            *((driver.SUMMED,) if back and _summed(table) else ())}


def ready(table: np.ndarray, back: bool) -> None:
    """make(needed(table, back)): every kernel the table's sweep calls compiled (or loaded)."""
    make(needed(table, back))


def every() -> list[int]:
    """Every slot that holds a kernel (``python -m tape warmup`` makes them all)."""
    return [slot for slot, name in enumerate(driver.NAMES) if name]


def forwards(*kinds: int) -> list[int]:
    """The forward kernels of row kinds ``kinds`` and of every elementwise op (tape.jit's rows call those)."""
    return [*kinds, *(slot for slot in every() if driver.VALUES <= slot < driver.SENDS)]
