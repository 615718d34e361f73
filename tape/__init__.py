"""tape: reverse-mode automatic differentiation on a flat record tape (NumPy + Numba).

    import tape
    t = tape.Tape()
    w, x = t.var(0.5), t.var(1.2)
    L = (tape.sigmoid(w * x + 0.1) - 1.0) ** 2
    t.gradient(L, [w, x])     # array([dL/dw, dL/dx])
"""

from tape._api import (
    cos,
    exp,
    grad,
    gradcheck,
    log,
    maximum,
    minimum,
    relu,
    sigmoid,
    sin,
    sqrt,
    tan,
    tanh,
    value_and_grad,
    where,
)
from tape._array import ArrayCondition, VarArray, concatenate, stack
from tape._debug import NonFiniteError, debug_nans
from tape._distributed import DistributedError
from tape._function import Function, load, trace
from tape._tape import BYTES_PER_RECORD, MAX_RECORDS, NO_INPUT, Condition, Record, Tape, Var
from tape.errors import (
    BranchChanged,
    ForeignHandleError,
    StaleHandleError,
    TapeError,
    TapeFormatError,
    TapeFullError,
)

__version__ = "0.1.0"

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
    "Var",
    "cos",
    "exp",
    "grad",
    "gradcheck",
    "log",
    "maximum",
    "minimum",
    "relu",
    "sigmoid",
    "sin",
    "sqrt",
    "tan",
    "tanh",
    "value_and_grad",
]
