"""tape: reverse-mode automatic differentiation on a flat record tape (NumPy + Numba).

    import tape
    t = tape.Tape()
    w, x = t.var(0.5), t.var(1.2)
    L = (tape.sigmoid(w * x + 0.1) - 1.0) ** 2
    t.gradient(L, [w, x])     # array([dL/dw, dL/dx])

Layers, each importing only those below it (tests/test_layers.py checks it):
kernels (the op table and the Numba sweeps) <- storage (tape/_storage.py) <-
handles and recorders (_handles.py, _recorders.py) <- arrays (_array.py) <-
Function (_calls.py, _replay.py <- _derivatives.py <- _maps.py <- _function.py;
_format.py, _distributed.py) <- Tape (_tape.py) <- the functions users call
(_api.py, _composed.py, _transforms.py, _gradcheck.py) <- this module, pictures
and the CLI (bench.py).
"""

from typing import TYPE_CHECKING, Any

from tape import _source  # noqa: F401  # first: makes kernels/ tape.kernels in a source checkout
from tape._api import (
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
from tape._array import VarArray, concatenate, stack
from tape._composed import clip, log_softmax, softmax, softplus
from tape._conditions import ArrayCondition
from tape._debug import NonFiniteError, debug_nans
from tape._distributed import DistributedError
from tape._function import Function, load
from tape._gc import pace_gc
from tape._gradcheck import gradcheck
from tape._handles import Condition
from tape._recorders import (
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
from tape._storage import BYTES_PER_RECORD, MAX_RECORDS, NO_INPUT, Record
from tape._tape import Tape
from tape._transforms import hessian, jacobian, jvp, vjp
from tape._ufuncs import reciprocal, square
from tape.errors import (
    BranchChanged,
    ForeignHandleError,
    StaleHandleError,
    TapeError,
    TapeFormatError,
    TapeFullError,
    TracingError,
    TracingWarning,
)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from tape._jit import JitError, JitFunction, jit

_LAZY = {"jit", "JitError", "JitFunction"}  # tape.jit and its Numba overloads load on first use (~40 ms)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from tape import _jit

        value = getattr(_jit, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tape' has no attribute {name!r}")


__all__ = [
    "ArrayCondition",
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
