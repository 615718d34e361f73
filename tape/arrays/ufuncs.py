"""A Var as a 0-d array wherever NumPy is involved.

NumPy hands every ufunc with a Var or a VarArray among its operands to their
``__array_ufunc__``, which calls ``handle`` here: when every operand is 0-d (Vars,
numbers, NumPy scalars and 0-d arrays) the ufunc is the Var's own operator or
tape function, so ``np.exp(x)`` and ``np.float64(2) * x`` record one scalar
record and give a Var; with a NumPy array or a VarArray among them it is an
array operation (tape/arrays/varray.py), so ``a * np.exp(-k * t)`` with Vars ``a``, ``k``
and an ndarray ``t`` gives a VarArray.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from tape.arrays.conditions import ArrayCondition
from tape.arrays.varray import BINARY, UNARY_CODES, VarArray, elementwise, matmul
from tape.kernels.ops import ARITHMETIC, COMPARISONS, UNARY_OPERATORS, UNARY_UFUNCS
from tape.records import _recorders as _recorders
from tape.records import handles
from tape.records._recorders import Var


def _either(name: str) -> Callable[[Any, Any], Var]:
    """tape.<name> of a Var and a Var or number in either order: <name>_var(x, y), or
    <name>_number(y, x), which records x <op> y for a number x."""
    var, number = getattr(_recorders, f"{name}_var"), getattr(_recorders, f"{name}_number")
    return lambda x, y: var(x, y) if type(x) is Var else number(y, x)


SCALAR: dict[np.ufunc, Callable[..., Any]] = {  # ufunc -> what it is on 0-d operands
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
    np.true_divide: operator.truediv, np.power: operator.pow,
    **{getattr(np, s.ufunc): _either(s.name) for s in ARITHMETIC if not s.operator},  # maximum, arctan2, ...
    np.less: operator.lt, np.less_equal: operator.le, np.greater: operator.gt,
    np.greater_equal: operator.ge, np.equal: operator.eq, np.not_equal: operator.ne,
    np.negative: operator.neg, np.absolute: operator.abs, np.positive: operator.pos,
    **{getattr(np, ufunc): getattr(_recorders, name) for name, ufunc in UNARY_UFUNCS.items()
       if name not in UNARY_OPERATORS},
}


COMPARE = {getattr(np, s.ufunc) for s in COMPARISONS}


def square(x: Any) -> Any:
    """x ** 2: one pow_c record, exactly x * x, slope exactly 2x (numpy.square too)."""
    return x ** 2


def reciprocal(x: Any) -> Any:
    """1 / x (numpy.reciprocal too)."""
    return 1.0 / x


COMPOSED = {np.square: square, np.reciprocal: reciprocal, np.positive: operator.pos}  # ufuncs that are other ops


def _scalar(x: Any) -> Any:
    """A 0-d operand as what Var's operators take (a NumPy scalar or 0-d array as a float), or
    None if x is an array of more dimensions (or a VarArray)."""
    if type(x) is Var or type(x) is float:
        return x
    if isinstance(x, VarArray) or np.ndim(x) > 0:
        return None
    return float(x) if isinstance(x, (int, float, np.number, np.bool_, np.ndarray)) else x


def handle(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc(*inputs)`` with a Var or a VarArray among the inputs."""
    if method != "__call__" or kwargs:
        raise TypeError(f"numpy.{ufunc.__name__}.{method} with {sorted(kwargs)} is not supported on tape's values")
    scalars = [_scalar(x) for x in inputs]
    if ufunc in SCALAR and all(x is not None for x in scalars):
        return SCALAR[ufunc](*scalars)
    if ufunc in COMPOSED:
        return COMPOSED[ufunc](*inputs)
    if ufunc in UNARY_CODES or ufunc in BINARY:
        return elementwise(ufunc, *inputs)
    if ufunc is np.matmul:
        return matmul(*inputs)
    if ufunc in COMPARE:
        return ArrayCondition.of(ufunc, *inputs)
    raise TypeError(f"numpy.{ufunc.__name__} is not supported on tape's values (no recorded rule)")


handles.UFUNC_HANDLERS.append(handle)
