"""CPython twins of the kernels: a kernel's own source run by the interpreter on a small tape, while the
kernel is neither compiled in this process nor cached on disk, so a first use does not wait for its compile.

Same bits: the twin runs the kernel's source with its callees twinned too, on NumPy float64 scalars (IEEE
operations, as the compiled code), and calls the C library's functions (ctypes) where Numba's code calls them:
``math.exp`` and the like become LLVM intrinsics or externs that call libm's (CPython's ``math.hypot`` and
``pow`` are its own, and raise where libm returns inf or NaN). An arithmetic or domain error the twin meets anyway
(``math.floor(inf)``) runs the kernel. A twin serves only tapes of at most ``SMALL`` records
(a few ms a sweep), and at most ``PAYBACK`` seconds in a process, about a kernel's compile, after which the
kernel compiles once. ``python -m tape warmup`` sets ``ENABLED`` false: it compiles every kernel.
"""

from __future__ import annotations

import ctypes
import math
import os
import time
import types
from typing import Any

import numpy as np
from llvmlite import binding as llvm
from numba.core.registry import CPUDispatcher

SMALL = 2000  # records (a README example: 9; the forward-over-reverse sweeps run ~3 µs a record in CPython)
SQUARE = 200  # records, for a kernel whose work can grow as their square (the sparsity patterns' index sets)
PAYBACK = 1.0  # seconds of twins' runs in a process (an hvp's kernels compile in 2.7 CPU-s, a trace's in 0.8)
ENABLED = True
LIBM = ("acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cos", "cosh", "erf", "erfc", "exp",
        "exp2", "expm1", "fabs", "hypot", "lgamma", "log", "log1p", "log2", "log10", "pow", "sin", "sinh", "sqrt",
        "tan", "tanh")  # math's functions of floats that Numba's code gets from libm (sqrt, fabs: exact anyway)
_spent = 0.0
_modules: dict[str, dict[str, Any]] = {}


def _c(name: str) -> Any:
    """The C function name that Numba's code calls (the symbol LLVM's JIT links: glibc's oldest version, whose
    log(-1) is +NaN, not the default version's -NaN), giving NumPy float64 (no ZeroDivisionError on it)."""
    arity = 2 if name in ("atan2", "hypot", "pow") else 1
    f = ctypes.CFUNCTYPE(ctypes.c_double, *[ctypes.c_double] * arity)(llvm.address_of_symbol(name))
    return lambda *args: np.float64(f(*args))


def _globals(g: dict[str, Any]) -> dict[str, Any]:
    """A module's globals with its kernels twinned (a kernel calls kernels only) and math's LIBM functions libm's."""
    name = g["__name__"]
    if name not in _modules:
        twin = _modules[name] = dict(g)
        for key, value in g.items():
            if isinstance(value, CPUDispatcher):
                twin[key] = python(value.py_func)
            elif getattr(value, "__name__", "") in LIBM and getattr(math, value.__name__) is value:
                twin[key] = _c(value.__name__)
    return _modules[name]


def python(f: Any) -> Any:
    """f (a kernel's py_func) as CPython runs it in its twin."""
    return types.FunctionType(f.__code__, _globals(f.__globals__), f.__name__, f.__defaults__, f.__closure__)


class Twin:
    """A kernel, called as it is; its twin where the tape (argument ``tape``'s length) is small (at most ``small``)
    and the kernel is not compiled or cached yet. Only for kernels that make their outputs afresh from their inputs
    (not an adjoint sweep that adds to what it finds): after an arithmetic error in the twin, the kernel runs."""

    def __init__(self, kernel: Any, tape: int = 0, small: int = SMALL):
        self.kernel, self.tape, self.small, self.ready = kernel, tape, small, False
        self.twin: Any = None  # made at its first run
        self.on_disk: bool | None = None  # looked for at the first call

    def __call__(self, *args: Any) -> Any:
        global _spent
        if self.ready:
            return self.kernel(*args)
        if not ENABLED or _spent >= PAYBACK or len(args[self.tape]) > self.small or self._compiled():
            return self.kernel(*args)
        self.twin = self.twin or python(self.kernel.py_func)
        start = time.perf_counter()
        try:
            with np.errstate(all="ignore"):
                return self.twin(*args)
        except (ArithmeticError, ValueError):  # (math.floor(inf), say)
            return self.kernel(*args)
        finally:
            _spent += time.perf_counter() - start

    def _compiled(self) -> bool:
        if self.on_disk is None:
            index = getattr(getattr(self.kernel._cache, "_cache_file", None), "_index_path", "")  # (none: no cache)
            self.on_disk = bool(index) and os.path.exists(index)
        self.ready = self.on_disk or bool(self.kernel.signatures)
        return self.ready
