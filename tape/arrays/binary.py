"""The functions of two operands: maximum, minimum, arctan2, hypot, logaddexp, fmax, fmin.

Each takes Vars, VarArrays and numbers in any mix (as the NumPy ufunc of its name does on
Vars and VarArrays): two Vars record one record, a Var and a number its const op or, for
the ops without one (kernels/ops.py: GROUPED_PAIRS), a constant record and the op; a
VarArray an elementwise array operation; two numbers give the kernel's value, recording
nothing. Made once from the op table's spellings, with one typed signature for all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast, overload

import numpy as np

from tape.arrays.varray import VarArray, elementwise
from tape.kernels._sweeps import eval_op
from tape.kernels.ops import ARITHMETIC, OPCODE
from tape.records import _recorders as _recorders
from tape.records._recorders import Var
from tape.records.handles import as_constant, on_plain, plain

Scalar = Var | float


class Pairwise(Protocol):
    """The signature of each function here: a Var if a Var is given, a VarArray if a VarArray is."""

    @overload
    def __call__(self, x: float, y: float) -> float: ...
    @overload
    def __call__(self, x: Var, y: Scalar) -> Var: ...
    @overload
    def __call__(self, x: float, y: Var) -> Var: ...
    @overload
    def __call__(self, x: VarArray, y: VarArray | Scalar | np.ndarray) -> VarArray: ...
    @overload
    def __call__(self, x: Scalar | np.ndarray, y: VarArray) -> VarArray: ...


def _pairwise(name: str, ufunc: np.ufunc, var: Callable[..., Any], number: Callable[..., Any], x: Any, y: Any) -> Any:
    """tape.<name> of Vars, VarArrays and numbers in any mix."""
    if isinstance(x, VarArray) or isinstance(y, VarArray):
        result = elementwise(ufunc, x, y)
    elif type(x) is Var:
        result = var(x, y)
    elif type(y) is Var:
        result = number(y, x)
    elif (plain(x) or plain(y)) and all(plain(v) or as_constant(v) is not None for v in (x, y)):
        result = on_plain(name, x, y)
    else:
        cx, cy = as_constant(x), as_constant(y)
        result = NotImplemented if cx is None or cy is None else eval_op(OPCODE[name], cx, cy)
    if result is NotImplemented:
        raise TypeError(f"tape.{name} expects Vars, VarArrays or real numbers, "
                        f"got {type(x).__name__} and {type(y).__name__}")
    return result


def _function(name: str, doc: str) -> Pairwise:
    """tape.<name>, from the spelling of that name in the op table."""
    spelling = next(s for s in ARITHMETIC if s.name == name)
    ufunc = getattr(np, spelling.ufunc)
    var, number = getattr(_recorders, f"{name}_var"), getattr(_recorders, f"{name}_number")

    def function(x, y):
        return _pairwise(name, ufunc, var, number, x, y)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return cast(Pairwise, function)


maximum = _function("maximum", "The larger of x and y (NaN if either is NaN); at a tie each input gets 1/2 of the "
                               "adjoint.")
minimum = _function("minimum", "The smaller of x and y (NaN if either is NaN); at a tie each input gets 1/2 of the "
                               "adjoint.")
arctan2 = _function("arctan2", "atan2(x, y), the angle of the point (y, x), as numpy.arctan2; partials y/r², -x/r² "
                               "(r = hypot(x, y), no overflow), 0 at the origin.")
hypot = _function("hypot", "sqrt(x² + y²) without overflow, as numpy.hypot; partials x/r, y/r, 0 at the origin "
                           "(as abs'(0)).")
logaddexp = _function("logaddexp", "log(exp(x) + exp(y)) without overflow, as numpy.logaddexp; partials the softmax "
                                   "weights, 1/2 each at a tie (both -inf too).")
fmax = _function("fmax", "The larger of x and y, a NaN ignored (as numpy.fmax); at a tie 1/2 of the adjoint each, "
                         "all of it to the other input where one is NaN.")
fmin = _function("fmin", "The smaller of x and y, a NaN ignored (as numpy.fmin); at a tie 1/2 of the adjoint each, "
                         "all of it to the other input where one is NaN.")
