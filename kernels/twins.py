"""CPython twins of the kernels: a kernel's own source run by the interpreter on a small tape, while the kernel
is not compiled in this process (kernels/compiling.py's Gate): a first use waits neither for a compile nor, where
the kernel is cached, for its load (Numba's first load in a process costs 0.3-0.4 CPU-s, a small tape's twin
about 1 ms). TWINNED lists the kernels twinned; modules bind ``Twin(kernel, globals())`` at their call sites.

Same bits: the twin runs the kernel's source with its callees twinned too, on NumPy float64 scalars (IEEE
operations, as the compiled code), and calls the C library's functions (ctypes) where Numba's code calls them:
``math.exp`` and the like become LLVM intrinsics or externs that call libm's (CPython's ``math.hypot`` and
``pow`` are its own, and raise where libm returns inf or NaN). An arithmetic or domain error the twin meets anyway
(``math.floor(inf)``) runs the kernel, on the arrays as they were. A twin serves only tapes of at most ``SMALL``
records (a map: records x points; a few ms a sweep), and the twins run at most ``PAYBACK`` seconds in a process
(about a kernel's compile) before an uncached kernel compiles, ``LOAD`` seconds before a cached one loads.
``python -m tape warmup`` sets ``ENABLED`` false: it compiles every kernel.
"""

from __future__ import annotations

import ctypes
import math
import types
from typing import Any

import numpy as np
from llvmlite import binding as llvm
from numba.core.registry import CPUDispatcher

from .compiling import LOAD, Clock, Gate

SMALL = 2000  # records (a README example: 9; the forward-over-reverse sweeps run ~3 µs a record in CPython)
SQUARE = 200  # records, for a kernel whose work can grow as their square (the sparsity patterns' index sets)
PASSES = 50_000  # records, for tape.trace's passes (pruning, CSE, liveness): 0.2 CPU-s at 47,557 records in CPython,
# once a trace, where compiling them took 1.1-1.5 s (Burgers' 2,805: its trace 1.67 -> 0.12 s, empty cache)
PAYBACK = 1.0  # seconds of twins' runs in a process (an hvp's kernels compile in 2.7 CPU-s, a trace's in 0.8)
ENABLED = True
CLOCK = Clock()  # the twins' seconds in this process
TWINNED: dict[str, tuple[int | tuple[int, ...] | slice, int]] = {  # the kernels with twins: (the argument that is the
    # tape, or the arguments whose lengths multiply to its work, records x points, or a slice of the two arguments
    # that bound the records it sweeps; the most of that a twin serves)
    "replay": (0, SMALL), "replay_from": (0, SMALL), "replay_gradient": (0, SMALL), "replay_gradient_from": (0, SMALL),
    "forward_partials": (0, SMALL), "forward_partials_from": (0, SMALL), "forward_second": (0, SMALL),
    "forward_second_from": (0, SMALL), "replay_partials": (0, SMALL),
    "reverse_vector": (0, SMALL), "tangent_sweep": (1, SMALL),
    "reverse_second_range": (slice(10, 11), SMALL), "reverse_range": (slice(7, 8), SMALL),  # (the records between two
    # array records: Burgers' first gradient compiled these two for its last 2 records, 1.5-2 CPU-s)
    "forward_sweep": (slice(5, 6), SMALL), "forward_range": (slice(5, 6), SMALL), "reverse_sweep": (0, SMALL),
    "fresh_reverse": (0, SMALL),
    "fresh_reverse_from": (0, SMALL),
    "compact": (0, PASSES), "mark_varying": (0, PASSES), "merge": (0, PASSES), "mark_reaching": (0, PASSES),
    "reach": (0, SMALL), "record_pairs": (0, SMALL), "recover": (1, SMALL), "decompress": (1, SMALL),
    # the sparsity patterns' index sets, whose work can grow as the square of the records:
    "_extend_sets": (0, SQUARE), "gather_rows": (0, SQUARE),
    "star_coloring": (2, SQUARE), "color_columns": (2, SQUARE),
    # the maps (F.map, map_value_and_grad, map_vjp, map_jvp), whose work is the records times the points:
    "map_values": ((2, 8), SMALL), "map_gradients": ((2, 9), SMALL), "map_tangents": ((3, 10), SMALL),
}
LIBM = ("acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cos", "cosh", "erf", "erfc", "exp",
        "exp2", "expm1", "fabs", "hypot", "lgamma", "log", "log1p", "log2", "log10", "pow", "sin", "sinh", "sqrt",
        "tan", "tanh")  # math's functions of floats that Numba's code gets from libm (sqrt, fabs: exact anyway)
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
    """A kernel, called as it is; its twin where the tape (argument ``tape``'s length, TWINNED) is small and the kernel
    not ready (``gate``). Once ready, the Twin puts the kernel where it was bound in ``namespace`` (a module's globals),
    so later calls reach the kernel directly. After an arithmetic error in the twin, the kernel runs on the arrays as
    they were (restored: a sweep that adds to adjoints can be twinned too)."""

    def __init__(self, kernel: Any, namespace: dict[str, Any]):
        self.kernel, self.namespace = kernel, namespace
        self.tape, self.small = TWINNED[kernel.py_func.__name__]
        self.gate = Gate((kernel,), (LOAD, PAYBACK), CLOCK)
        self.twin: Any = None  # made at its first run

    def __call__(self, *args: Any) -> Any:
        if self.gate.open:
            return self.gate.call(self.kernel, *args)
        if self.gate.ready():
            out = self.gate.call(self.kernel, *args)  # (loaded before it is bound: others' calls find it loaded)
            for name in [name for name, value in self.namespace.items() if value is self]:
                self.namespace[name] = self.kernel
            return out
        if not ENABLED or self._size(args) > self.small:
            return self.gate.call(self.kernel, *args)
        self.twin = self.twin or python(self.kernel.py_func)
        done, out = self.gate.timed(self._twinned, *args)  # (the arrays' copies on the clock too)
        return out if done else self.gate.call(self.kernel, *args)

    def _size(self, args: tuple[Any, ...]) -> int:
        """The tape's records, records x points, or the records swept (TWINNED)."""
        if isinstance(self.tape, slice):
            return int(args[self.tape.stop]) - int(args[self.tape.start])
        return len(args[self.tape]) if isinstance(self.tape, int) else math.prod(len(args[i]) for i in self.tape)

    def _twinned(self, *args: Any) -> tuple[bool, Any]:
        """(True, what the twin returns), or (False, None) after an arithmetic error, the arrays restored."""
        kept = [(a, a.copy()) for a in args if isinstance(a, np.ndarray) and a.flags.writeable]
        try:
            with np.errstate(all="ignore"):
                return True, self.twin(*args)
        except (ArithmeticError, ValueError):  # (math.floor(inf), say)
            for a, copy in kept:
                a[...] = copy
            return False, None
