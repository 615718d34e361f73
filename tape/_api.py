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


class GradcheckReport(float):
    """The worst relative error of the tape's derivatives against central differences (this
    float), with the details: ``analytic`` and ``numeric`` Jacobians (m, n), ``relative_error``
    per input, ``worst_input``, and ``dot_products``: (w.J u, its difference quotient, relative
    error) for random directions u and output weights w."""

    analytic: np.ndarray
    numeric: np.ndarray
    relative_error: np.ndarray
    worst_input: int
    dot_products: list[tuple[float, float, float]]

    def __str__(self) -> str:
        lines = [f"{'input':>6} {'tape':>16} {'differences':>16} {'rel. error':>11}"]
        for i in range(self.analytic.shape[1]):
            lines.append(f"{i:>6} {self.analytic[0, i]:>16.9g} {self.numeric[0, i]:>16.9g} "
                         f"{self.relative_error[i]:>11.2e}" + ("  <- worst" if i == self.worst_input else ""))
        lines += [f"dot-product test: w.J u = {a:.9g}, differences {n:.9g}, rel. error {e:.2e}"
                  for a, n, e in self.dot_products]
        lines.append(f"worst relative error {float(self):.2e} (input {self.worst_input})")
        return "\n".join(lines)


def gradcheck(f, x: ArrayLike, step: float | None = None, floor: float = 1e-8, directions: int = 3,
              seed: int = 0) -> GradcheckReport:
    """Check a Function's (or a function of Vars') derivatives against central differences.

    Each input i moves by h_i = step * max(1, |x_i|) (step defaults to eps**(1/3) ~ 6e-6);
    the error of input i is max over outputs of |tape - fd| / max(|tape|, |fd|, floor).
    ``directions`` random dot-product tests compare w.J u with a difference quotient along u.
    Returns the worst error, as a float that also carries the whole report (``print`` it).
    """
    from tape._function import Function, trace

    point = _point(x)
    F = f if isinstance(f, Function) else trace(f, point, on_branch_change="retrace")
    step = np.finfo(float).eps ** (1 / 3) if step is None else step

    def values(p: np.ndarray) -> np.ndarray:
        return np.atleast_1d(np.asarray(F(p), dtype=np.float64))

    analytic = F.jacobian(point)
    numeric = np.empty_like(analytic)
    for i in range(len(point)):
        h = step * max(1.0, abs(point[i]))
        up, down = point.copy(), point.copy()
        up[i] += h
        down[i] -= h
        numeric[:, i] = (values(up) - values(down)) / (up[i] - down[i])
    scale = np.maximum(np.maximum(np.abs(analytic), np.abs(numeric)), floor)
    relative = (np.abs(analytic - numeric) / scale).max(axis=0, initial=0.0)
    rng = np.random.default_rng(seed)
    dots = []
    for _ in range(directions):
        u, w = rng.normal(size=len(point)), rng.normal(size=analytic.shape[0])
        h = step * max(1.0, float(np.abs(point).max(initial=0.0)))
        exact = float(w @ (analytic @ u))
        quotient = float(w @ (values(point + h * u) - values(point - h * u)) / (2 * h))
        dots.append((exact, quotient, abs(exact - quotient) / max(abs(exact), abs(quotient), floor)))
    report = GradcheckReport(float(relative.max(initial=0.0)))
    report.analytic, report.numeric, report.relative_error = analytic, numeric, relative
    report.worst_input = int(np.argmax(relative)) if len(relative) else -1
    report.dot_products = dots
    return report
