"""tape: reverse-mode automatic differentiation on a flat record tape (NumPy + Numba).

    import tape
    t = tape.Tape()
    w, x = t.var(0.5), t.var(1.2)
    L = (tape.sigmoid(w * x + 0.1) - 1.0) ** 2
    t.gradient(L, [w, x])     # array([dL/dw, dL/dx])

The packages, each importing only those below it, are drawn once in docs/design.md (the layers)
and checked by tests/test_layers.py.
"""

from typing import TYPE_CHECKING, Any

from tape.base import source  # noqa: F401  # first: makes kernels/ tape.kernels in a source checkout

# isort: split
from tape.api.composed import clip, log_softmax, softmax, softplus
from tape.api.gradcheck import gradcheck
from tape.api.root import custom_root
from tape.api.trace import (
    arctan2,
    cos,
    exp,
    fmax,
    fmin,
    grad,
    hypot,
    log,
    logaddexp,
    logsumexp,
    maximum,
    minimum,
    relu,
    sigmoid,
    sin,
    sqrt,
    tan,
    tanh,
    trace,
    value_and_grad,
    where,
)
from tape.api.transforms import hessian, jacobian, jvp, sparse_hessian, sparse_jacobian, vjp
from tape.arrays import linalg
from tape.arrays.conditions import ArrayCondition
from tape.arrays.joins import concatenate, stack
from tape.arrays.ufuncs import reciprocal, square
from tape.arrays.varray import VarArray
from tape.base.gc_pacing import pace_gc
from tape.debug.nans import debug_nans
from tape.errors import (
    BranchChanged,
    DistributedError,
    ForeignHandleError,
    JitError,
    NonFiniteError,
    StaleHandleError,
    TapeError,
    TapeFormatError,
    TapeFullError,
    TracingError,
    TracingWarning,
)
from tape.function.custom import custom_jvp, custom_vjp
from tape.function.function import Function, load
from tape.records._recorders import (
    Var,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctanh,
    cbrt,
    ceil,
    cosh,
    erf,
    erfc,
    exp2,
    expm1,
    floor,
    lgamma,
    log1p,
    log2,
    log10,
    rint,
    sign,
    sinh,
    stop_gradient,
    trunc,
)
from tape.records.handles import Condition
from tape.records.storage import BYTES_PER_RECORD, MAX_RECORDS, NO_INPUT, Record
from tape.tape import Tape

__version__ = "0.1.0"

if TYPE_CHECKING:
    from tape.compiled.jit import JitFunction, jit

_LAZY = {"jit", "JitFunction"}  # tape.jit and its Numba overloads load on first use (~40 ms)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from tape.compiled import jit as _jit

        value = getattr(_jit, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tape' has no attribute {name!r}")


__all__ = [
    "ArrayCondition",
    "custom_jvp",
    "custom_root",
    "custom_vjp",
    "linalg",
    "VarArray",
    "concatenate",
    "stack",
    "BYTES_PER_RECORD",
    "BranchChanged",
    "Condition",
    "DistributedError",
    "NonFiniteError",
    "debug_nans",
    "Function",
    "TapeFormatError",
    "load",
    "pace_gc",
    "trace",
    "where",
    "MAX_RECORDS",
    "NO_INPUT",
    "Record",
    "ForeignHandleError",
    "StaleHandleError",
    "Tape",
    "TapeError",
    "TapeFullError",
    "TracingError",
    "TracingWarning",
    "Var",
    "cos",
    "exp",
    "grad",
    "gradcheck",
    "log",
    "logsumexp",
    "maximum",
    "minimum",
    "relu",
    "sigmoid",
    "sin",
    "sqrt",
    "tan",
    "tanh",
    "value_and_grad",
    "jvp",
    "vjp",
    "jacobian",
    "hessian",
    "sparse_jacobian",
    "sparse_hessian",
    "square",
    "reciprocal",
    "softplus",
    "softmax",
    "log_softmax",
    "clip",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctanh",
    "cbrt",
    "ceil",
    "cosh",
    "erf",
    "erfc",
    "exp2",
    "expm1",
    "floor",
    "lgamma",
    "log10",
    "log1p",
    "log2",
    "rint",
    "sign",
    "sinh",
    "stop_gradient",
    "trunc",
    "arctan2",
    "hypot",
    "logaddexp",
    "fmax",
    "fmin",
    "jit",
    "JitError",
    "JitFunction",
]
