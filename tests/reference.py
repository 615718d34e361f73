"""Independent references for the tests, written without looking at kernels/ops.py.

- ``VALUE``: each op's value with NumPy (IEEE results, no exceptions).
- ``DERIVATIVE``: each op's partial derivatives from textbook formulas, on
  purpose in a different form from the op table where one exists
  (tan' = 1/cos^2, tanh' = 1/cosh^2, sigmoid' = e^-x/(1+e^-x)^2, ...).
- ``complex_step``: derivative of an analytic function from f(x + ih).
- ``Dual``: forward-mode dual numbers with their own rules, for random
  expression tests.
"""

from __future__ import annotations

import math
import operator

import numpy as np

import tape

OPS_ON_HANDLES = {
    # binary: callables on (x, y) where either may be a Var or a number
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "pow": operator.pow,
    "maximum": tape.maximum,
    "minimum": tape.minimum,
    # unary
    "neg": operator.neg,
    "abs": abs,
    "exp": tape.exp,
    "log": tape.log,
    "sqrt": tape.sqrt,
    "sin": tape.sin,
    "cos": tape.cos,
    "tan": tape.tan,
    "tanh": tape.tanh,
    "sigmoid": tape.sigmoid,
    "relu": tape.relu,
}
BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum")
UNARY = tuple(name for name in OPS_ON_HANDLES if name not in BINARY)


def _np(fn):
    def wrapped(*args):
        with np.errstate(all="ignore"):
            return float(fn(*(np.float64(a) for a in args)))
    return wrapped


VALUE = {
    "add": _np(np.add),
    "sub": _np(np.subtract),
    "mul": _np(np.multiply),
    "div": _np(np.divide),
    "pow": _np(np.power),
    "maximum": _np(np.maximum),
    "minimum": _np(np.minimum),
    "neg": _np(np.negative),
    "abs": _np(np.abs),
    "exp": _np(np.exp),
    "log": _np(np.log),
    "sqrt": _np(np.sqrt),
    "sin": _np(np.sin),
    "cos": _np(np.cos),
    "tan": _np(np.tan),
    "tanh": _np(np.tanh),
    "sigmoid": _np(lambda a: np.exp(-np.logaddexp(0.0, -a))),
    "relu": _np(lambda a: np.where(np.isnan(a), a, np.maximum(a, 0.0))),
}


def _sign(a):
    return float(np.sign(a))


def _share(a, b):
    """Derivative of max(a, b) in a: 1, 0, or 1/2 at ties (the documented convention)."""
    return 1.0 if a > b else 0.0 if a < b else 0.5 if a == b else math.nan


DERIVATIVE = {
    "add": (lambda a, b: 1.0, lambda a, b: 1.0),
    "sub": (lambda a, b: 1.0, lambda a, b: -1.0),
    "mul": (lambda a, b: b, lambda a, b: a),
    "div": (_np(lambda a, b: 1 / b), _np(lambda a, b: -a / (b * b))),
    "pow": (_np(lambda a, b: b * a ** (b - 1)), _np(lambda a, b: np.log(a) * a**b)),
    "maximum": (lambda a, b: _share(a, b), lambda a, b: _share(b, a)),
    "minimum": (lambda a, b: _share(b, a), lambda a, b: _share(a, b)),
    "neg": (lambda a: -1.0,),
    "abs": (_sign,),
    "exp": (_np(np.exp),),
    "log": (_np(lambda a: 1 / a),),
    "sqrt": (_np(lambda a: 1 / (2 * np.sqrt(a))),),
    "sin": (_np(np.cos),),
    "cos": (_np(lambda a: -np.sin(a)),),
    "tan": (_np(lambda a: 1 / np.cos(a) ** 2),),
    "tanh": (_np(lambda a: 1 / np.cosh(a) ** 2),),
    "sigmoid": (_np(lambda a: np.exp(-a) / (1 + np.exp(-a)) ** 2),),
    "relu": (lambda a: 1.0 if a > 0 else 0.0 if a <= 0 else math.nan,),
}

# complex versions of the analytic ops, for the complex-step derivative
COMPLEX = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: np.exp(b * np.log(a)),
    "neg": lambda a: -a,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
}


def complex_step(fn, args, which: int, h: float = 1e-30) -> float:
    """d fn / d args[which] as Im(fn(..., x + ih, ...)) / h: no subtraction, exact to rounding."""
    z = [complex(a) for a in args]
    z[which] += 1j * h
    return float(np.imag(fn(*z)) / h)


class Dual:
    """a + b·ε with ε² = 0: forward-mode derivative of whatever is computed with it."""

    __slots__ = ("re", "du")

    def __init__(self, re: float, du: float = 0.0):
        self.re, self.du = re, du

    @staticmethod
    def lift(x) -> Dual:
        return x if isinstance(x, Dual) else Dual(float(x))

    def __add__(self, o):
        o = Dual.lift(o)
        return Dual(self.re + o.re, self.du + o.du)

    __radd__ = __add__

    def __sub__(self, o):
        o = Dual.lift(o)
        return Dual(self.re - o.re, self.du - o.du)

    def __rsub__(self, o):
        return Dual.lift(o) - self

    def __mul__(self, o):
        o = Dual.lift(o)
        return Dual(self.re * o.re, self.du * o.re + self.re * o.du)

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = Dual.lift(o)
        return Dual(self.re / o.re, (self.du * o.re - self.re * o.du) / (o.re * o.re))

    def __rtruediv__(self, o):
        return Dual.lift(o) / self

    def __neg__(self):
        return Dual(-self.re, -self.du)


def dual_function(name: str):
    """The op ``name`` on Dual numbers, with rules written here (not from the op table)."""
    unary = {
        "exp": lambda d: Dual(math.exp(d.re), math.exp(d.re) * d.du),
        "log": lambda d: Dual(math.log(d.re), d.du / d.re),
        "sqrt": lambda d: Dual(math.sqrt(d.re), d.du / (2 * math.sqrt(d.re))),
        "sin": lambda d: Dual(math.sin(d.re), math.cos(d.re) * d.du),
        "cos": lambda d: Dual(math.cos(d.re), -math.sin(d.re) * d.du),
        "tan": lambda d: Dual(math.tan(d.re), d.du / math.cos(d.re) ** 2),
        "tanh": lambda d: Dual(math.tanh(d.re), d.du / math.cosh(d.re) ** 2),
        "sigmoid": lambda d: Dual(1 / (1 + math.exp(-d.re)),
                                  d.du * math.exp(-d.re) / (1 + math.exp(-d.re)) ** 2),
        "relu": lambda d: Dual(max(d.re, 0.0), d.du if d.re > 0 else 0.0),
        "abs": lambda d: Dual(abs(d.re), d.du * _sign(d.re)),
        "neg": lambda d: -d,
    }
    binary = {
        "add": operator.add,
        "sub": operator.sub,
        "mul": operator.mul,
        "div": operator.truediv,
        "maximum": lambda x, y: _dual_max(Dual.lift(x), Dual.lift(y)),
        "minimum": lambda x, y: -_dual_max(-Dual.lift(x), -Dual.lift(y)),
    }
    if name in unary:
        return lambda d: unary[name](Dual.lift(d))
    return binary[name]


def _dual_max(x: Dual, y: Dual) -> Dual:
    if x.re > y.re:
        return x
    if y.re > x.re:
        return y
    return Dual(x.re, 0.5 * (x.du + y.du))
