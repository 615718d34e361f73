"""Elementary functions on Vars and numbers, and the one-call derivative helpers."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from kernels import OPCODE, OPS, eval_op
from tape._tape import RECORDERS, Condition, Tape, Var, _as_constant
from tape.errors import ForeignHandleError

Scalar = Var | float


def _describe(name: str) -> str:
    op = OPS[OPCODE[name]]
    rules = f"dy/da = {op.da}" + (f", dy/db = {op.db}" if op.db else "")
    return (f"{name}: records one row when an argument is a Var; plain arithmetic on numbers.\n\n"
            f"forward y = {op.forward}; partials {rules}.")


def _unary_function(name: str) -> Callable[[Scalar], Scalar]:
    function = RECORDERS[f"record_{name}"]
    function.__name__ = function.__qualname__ = name
    function.__doc__ = _describe(name)
    function.__annotations__ = {"x": Scalar, "return": Scalar}
    return function


def _binary_function(name: str) -> Callable[[Scalar, Scalar], Scalar]:
    code = OPCODE[name]
    left, right = RECORDERS[f"record_{name}"], RECORDERS[f"record_r{name}"]
    ufunc = getattr(np, name)

    def function(x: Scalar, y: Scalar) -> Scalar:
        from tape._array import VarArray, elementwise

        if isinstance(x, VarArray) or isinstance(y, VarArray):
            result = elementwise(ufunc, x, y)
        elif type(x) is Var:
            result = left(x, y)
        elif type(y) is Var:
            result = right(y, x)
        else:
            cx, cy = _as_constant(x), _as_constant(y)
            result = NotImplemented if cx is None or cy is None else eval_op(code, cx, cy)
        if result is NotImplemented:
            raise TypeError(f"tape.{name} expects Vars or real numbers, "
                            f"got {type(x).__name__} and {type(y).__name__}")
        return result

    function.__name__ = function.__qualname__ = name
    function.__doc__ = _describe(name)
    return function


exp = _unary_function("exp")
log = _unary_function("log")
sqrt = _unary_function("sqrt")
sin = _unary_function("sin")
cos = _unary_function("cos")
tan = _unary_function("tan")
tanh = _unary_function("tanh")
sigmoid = _unary_function("sigmoid")
relu = _unary_function("relu")
maximum = _binary_function("maximum")
minimum = _binary_function("minimum")

_SELECT = OPCODE["select"]


def where(condition: Condition | bool, a: Scalar, b: Scalar) -> Scalar:
    """``a`` where the condition holds, else ``b``, as one select record: valid at every replay.

    The condition (``x > 0``, ...) is recorded as data, not as a branch, so
    nothing needs re-checking. Only the chosen input receives the adjoint: the
    other branch is never visited, and its inf/NaN partials cannot leak into
    the gradient (``where(y > 1, x / y, 0.0)`` at y = 0 has finite gradients).
    """
    if isinstance(condition, (bool, np.bool_)):
        return a if condition else b
    from tape._array import ArrayCondition, VarArray
    from tape._array import where as where_arrays

    if type(condition) is ArrayCondition:
        return where_arrays(condition, a, b)
    if type(condition) is Condition and (isinstance(a, VarArray) or isinstance(b, VarArray)):
        raise TypeError("tape.where with a scalar condition takes scalar branches")
    if type(condition) is not Condition:
        raise TypeError(f"tape.where needs a comparison of Vars (x > 0) or a bool, got {type(condition).__name__}")
    t = condition._tape()
    branches = []
    for branch in (a, b):
        if type(branch) is Var:
            if branch._seg.tape is not t:
                raise ForeignHandleError(f"{branch!r} was recorded on another tape than the condition")
            t._resolve(branch)
            branches.append(branch)
        else:
            c = _as_constant(branch)
            if c is None:
                raise TypeError(f"tape.where branches must be Vars or real numbers, got {type(branch).__name__}")
            branches.append(t._constant(c))
    chosen = condition._record()  # the select reads the record just before it
    x, y = branches
    value = x.value if chosen.value != 0.0 else y.value
    return t._push(t._segment(), _SELECT, x.index, y.index, value)


VarFunction = Callable[[Sequence[Var]], Scalar]


def _point(x: ArrayLike) -> np.ndarray:
    point = np.asarray(x, dtype=np.float64)
    if point.ndim != 1:
        raise ValueError(f"expected a 1-D array of inputs, got shape {point.shape}")
    return point


def value_and_grad(f: VarFunction) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """``value_and_grad(f)(x)`` records ``f(xs)`` on a fresh tape at the 1-D point x.

    ``f`` receives a list of Vars (one leaf per element of x) and returns a
    Var or a number; the result is (f(x), gradient as an array shaped like x).
    """

    def evaluate_with_gradient(x) -> tuple[float, np.ndarray]:
        point = _point(x)
        t = Tape(capacity=max(1024, 4 * len(point)))
        xs = t.vars(point)
        y = f(xs)
        if type(y) is not Var:
            value = _as_constant(y)
            if value is None:
                raise TypeError(f"f must return a Var or a real number, got {type(y).__name__}")
            return value, np.zeros_like(point)
        return y.value, t.gradient(y, xs)

    return evaluate_with_gradient


def grad(f: VarFunction) -> Callable[[np.ndarray], np.ndarray]:
    """``grad(f)(x)``: the gradient of ``f`` at the 1-D point x (see ``value_and_grad``)."""
    vg = value_and_grad(f)
    return lambda x: vg(x)[1]


def gradcheck(f: VarFunction, x: ArrayLike, step: float | None = None, floor: float = 1e-8) -> float:
    """Worst relative error between the tape's gradient and central differences.

    Each input i is moved by h_i = step * max(1, |x_i|) (step defaults to
    eps**(1/3) ~ 6e-6); the error of input i is |tape - fd| / max(|tape|, |fd|, floor).
    """
    point = _point(x)
    step = np.finfo(float).eps ** (1 / 3) if step is None else step
    vg = value_and_grad(f)
    _, analytic = vg(point)
    worst = 0.0
    for i in range(len(point)):
        h = step * max(1.0, abs(point[i]))
        up, down = point.copy(), point.copy()
        up[i] += h
        down[i] -= h
        numeric = (vg(up)[0] - vg(down)[0]) / (up[i] - down[i])
        scale = max(abs(analytic[i]), abs(numeric), floor)
        worst = max(worst, abs(analytic[i] - numeric) / scale)
    return worst
