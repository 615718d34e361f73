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
from tape.symbolic import partial_helpers

OPS_ON_HANDLES = {
    # binary: callables on (x, y) where either may be a Var or a number
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "pow": operator.pow,
    "maximum": tape.maximum,
    "minimum": tape.minimum,
    **{name: getattr(tape, name) for name in ("arctan2", "hypot", "logaddexp", "fmax", "fmin")},
    "mul_nz": partial_helpers.mul_nz,  # what gradient tapes record for products (not public)
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
    **{name: getattr(tape, name) for name in (
        "log1p", "expm1", "exp2", "log2", "log10", "cbrt", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
        "arccosh", "arctanh", "erf", "erfc", "lgamma", "floor", "ceil", "trunc", "rint", "sign")},
}
BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "arctan2", "hypot", "logaddexp", "fmax", "fmin",
          "mul_nz")
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
    **{name: _np(getattr(np, name)) for name in ("arctan2", "hypot", "logaddexp", "fmax", "fmin")},
    "mul_nz": _np(lambda a, b: np.where(np.logical_or(a == 0, b == 0), 0.0, a * b)),  # a zero factor wins
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
    **{name: _np(getattr(np, name)) for name in (
        "log1p", "expm1", "exp2", "log2", "log10", "cbrt", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh",
        "arccosh", "arctanh", "floor", "ceil", "trunc", "rint", "sign")},
    "erf": math.erf,
    "erfc": math.erfc,
    "lgamma": lambda a: _lgamma(a),
}


def _lgamma(a: float) -> float:
    """log|Gamma(a)|, +inf at the poles (where Python's math raises)."""
    try:
        return math.lgamma(a)
    except ValueError:
        return math.inf


def digamma(x: float, n: int = 1000) -> float:
    """psi(x) = psi(x + n) - sum 1/(x + k), psi(x + n) from four terms of its asymptotic series;
    NaN at the poles and where x + n is not positive (not needed)."""
    z = x + n
    if not math.isfinite(x) or z <= 0 or x == math.floor(x) <= 0 or abs(x) < 1e-300:
        return math.nan
    return math.log(z) - 1 / (2 * z) - 1 / (12 * z * z) + 1 / (120 * z * z * z * z) - math.fsum(
        1 / (x + k) for k in range(n))


def trigamma(x: float, n: int = 1000) -> float:
    """psi'(x) = sum 1/(x + k)^2 + psi'(x + n), the tail from its asymptotic series."""
    z = x + n
    if not math.isfinite(x) or z <= 0 or x == math.floor(x) <= 0 or abs(x) < 1e-150:
        return math.nan
    return math.fsum(1 / ((x + k) * (x + k)) for k in range(n)) + 1 / z + 1 / (2 * z * z) + 1 / (6 * z * z * z)


def _sign(a):
    return float(np.sign(a))


def _share(a, b):
    """Derivative of max(a, b) in a: 1, 0, or 1/2 at ties (the documented convention)."""
    return 1.0 if a > b else 0.0 if a < b else 0.5 if a == b else math.nan


def _fshare(a, b):
    """Derivative of fmax(a, b) in a: as _share, and a NaN loses: all to the other side."""
    if math.isnan(a) or math.isnan(b):
        return math.nan if math.isnan(a) and math.isnan(b) else 0.0 if math.isnan(a) else 1.0
    return _share(a, b)


def _r2(a, b):
    return a * a + b * b


DERIVATIVE = {
    "add": (lambda a, b: 1.0, lambda a, b: 1.0),
    "sub": (lambda a, b: 1.0, lambda a, b: -1.0),
    "mul": (lambda a, b: b, lambda a, b: a),
    "div": (_np(lambda a, b: 1 / b), _np(lambda a, b: -a / (b * b))),
    "pow": (_np(lambda a, b: b * a ** (b - 1)), _np(lambda a, b: np.log(a) * a**b)),
    "maximum": (lambda a, b: _share(a, b), lambda a, b: _share(b, a)),
    "minimum": (lambda a, b: _share(b, a), lambda a, b: _share(a, b)),
    # textbook forms, with no care for overflow (the tests keep to moderate points there)
    "arctan2": (_np(lambda a, b: b / _r2(a, b)), _np(lambda a, b: -a / _r2(a, b))),
    "hypot": (_np(lambda a, b: a / np.sqrt(_r2(a, b))), _np(lambda a, b: b / np.sqrt(_r2(a, b)))),
    "logaddexp": (_np(lambda a, b: np.exp(a) / (np.exp(a) + np.exp(b))),
                  _np(lambda a, b: np.exp(b) / (np.exp(a) + np.exp(b)))),
    "fmax": (lambda a, b: _fshare(a, b), lambda a, b: _fshare(b, a)),
    "fmin": (lambda a, b: _fshare(-a, -b), lambda a, b: _fshare(-b, -a)),
    "mul_nz": (lambda a, b: b, lambda a, b: a),  # a * b's: it differs from a * b only where a factor is 0
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
    # the rarer ops, in other forms than the table's (through the inverse function, or exp)
    "log1p": (_np(lambda a: 1 / (1 + a)),),
    "expm1": (_np(np.exp),),
    "exp2": (_np(lambda a: np.log(2) * np.exp(a * np.log(2))),),
    "log2": (_np(lambda a: 1 / (a * np.log(2))),),
    "log10": (_np(lambda a: 1 / (a * np.log(10))),),
    "cbrt": (_np(lambda a: np.abs(a) ** (-2 / 3) / 3),),
    "arcsin": (_np(lambda a: 1 / np.sqrt((1 - a) * (1 + a))),),
    "arccos": (_np(lambda a: -1 / np.sqrt((1 - a) * (1 + a))),),
    "arctan": (_np(lambda a: np.exp(-np.log1p(a * a))),),
    "sinh": (_np(lambda a: (np.exp(a) + np.exp(-a)) / 2),),
    "cosh": (_np(lambda a: (np.exp(a) - np.exp(-a)) / 2),),
    "arcsinh": (_np(lambda a: 1 / np.cosh(np.arcsinh(a))),),
    "arccosh": (_np(lambda a: 1 / np.sinh(np.arccosh(a))),),
    "arctanh": (_np(lambda a: np.cosh(np.arctanh(a)) ** 2),),
    "erf": (_np(lambda a: 2 / np.sqrt(np.pi) * np.exp(-a * a)),),
    "erfc": (_np(lambda a: -2 / np.sqrt(np.pi) * np.exp(-a * a)),),
    "lgamma": (lambda a: digamma(a),),
    **{name: (lambda a: 0.0,) for name in ("floor", "ceil", "trunc", "rint", "sign")},
}



def second_pair(name: str, a: float, b: float) -> list[list[float]]:
    """The 2x2 Hessian of the binary ops after the first seven, written out (zero for fmax and fmin)."""
    r2 = a * a + b * b
    if name == "arctan2":
        return [[-2 * a * b / r2**2, (a * a - b * b) / r2**2], [(a * a - b * b) / r2**2, 2 * a * b / r2**2]]
    if name == "hypot":
        return [[b * b / r2**1.5, -a * b / r2**1.5], [-a * b / r2**1.5, a * a / r2**1.5]]
    if name == "logaddexp":
        w = math.exp(a) * math.exp(b) / (math.exp(a) + math.exp(b)) ** 2
        return [[w, -w], [-w, w]]
    if name == "mul_nz":
        return [[0.0, 1.0], [1.0, 0.0]]
    return [[0.0, 0.0], [0.0, 0.0]]


# second derivatives, written out here (tests/test_derivatives.py holds those of the first ops)
SECOND = {
    "log1p": lambda a: -1 / (1 + a) ** 2,
    "expm1": math.exp,
    "exp2": lambda a: math.log(2) ** 2 * 2**a,
    "log2": lambda a: -1 / (a * a * math.log(2)),
    "log10": lambda a: -1 / (a * a * math.log(10)),
    "cbrt": lambda a: -2 / 9 * math.copysign(abs(a) ** (-5 / 3), a),
    "arcsin": lambda a: a / (1 - a * a) ** 1.5,
    "arccos": lambda a: -a / (1 - a * a) ** 1.5,
    "arctan": lambda a: -2 * a / (1 + a * a) ** 2,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "arcsinh": lambda a: -a / (1 + a * a) ** 1.5,
    "arccosh": lambda a: -a / (a * a - 1) ** 1.5,
    "arctanh": lambda a: 2 * a / (1 - a * a) ** 2,
    "erf": lambda a: -4 * a / math.sqrt(math.pi) * math.exp(-a * a),
    "erfc": lambda a: 4 * a / math.sqrt(math.pi) * math.exp(-a * a),
    "lgamma": trigamma,
    **{name: (lambda a: 0.0) for name in ("floor", "ceil", "trunc", "rint", "sign")},
}


def domain_of(name: str) -> tuple[float, float] | None:
    """Where the rarer ops are smooth and defined, for random points; None: anywhere."""
    return {"arcsin": (-0.95, 0.95), "arccos": (-0.95, 0.95), "arctanh": (-0.95, 0.95), "arccosh": (1.05, 12.0),
            "log1p": (-0.9, 20.0), "log2": (0.01, 50.0), "log10": (0.01, 50.0), "exp2": (-30.0, 30.0),
            "erf": (-5.0, 5.0), "erfc": (-5.0, 5.0), "lgamma": (-6.0, 12.0)}.get(name)

# complex versions of the analytic ops, for the complex-step derivative
COMPLEX = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: np.exp(b * np.log(a)),
    "arctan2": lambda a, b: np.arctan(a / b),  # atan2 less a constant where b != 0
    "hypot": lambda a, b: np.sqrt(a * a + b * b),
    "logaddexp": lambda a, b: np.log(np.exp(a) + np.exp(b)),
    "mul_nz": lambda a, b: a * b,  # where neither is 0
    "neg": lambda a: -a,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
    "log1p": np.log1p,
    "expm1": np.expm1,
    "exp2": lambda a: np.exp(a * np.log(2)),
    "log2": lambda a: np.log(a) / np.log(2),
    "log10": np.log10,
    **{name: getattr(np, name) for name in ("arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh",
                                            "arctanh")},
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
        **{name: _dual(name) for name in _DUAL_RULES},
    }
    binary = {
        "add": operator.add,
        "sub": operator.sub,
        "mul": operator.mul,
        "div": operator.truediv,
        "maximum": lambda x, y: _dual_max(Dual.lift(x), Dual.lift(y)),
        "minimum": lambda x, y: -_dual_max(-Dual.lift(x), -Dual.lift(y)),
        "fmax": lambda x, y: _dual_max(Dual.lift(x), Dual.lift(y)),  # no NaN in these programs
        "fmin": lambda x, y: -_dual_max(-Dual.lift(x), -Dual.lift(y)),
        "arctan2": lambda x, y: _dual_pair(math.atan2, lambda a, b: (b / _r2(a, b), -a / _r2(a, b)), x, y),
        "hypot": lambda x, y: _dual_pair(math.hypot, lambda a, b: (a / math.hypot(a, b), b / math.hypot(a, b)), x, y),
        "logaddexp": lambda x, y: _dual_pair(lambda a, b: math.log(math.exp(a) + math.exp(b)),
                                             lambda a, b: (1 / (1 + math.exp(b - a)), 1 / (1 + math.exp(a - b))), x, y),
        "mul_nz": lambda x, y: _dual_pair(lambda a, b: 0.0 if a == 0 or b == 0 else a * b, lambda a, b: (b, a), x, y),
    }
    if name in unary:
        return lambda d: unary[name](Dual.lift(d))
    return binary[name]


# the rarer unary ops on Dual numbers: (value, derivative) by Python's math
_DUAL_RULES = {
    "log1p": (math.log1p, lambda a: 1 / (1 + a)),
    "expm1": (math.expm1, math.exp),
    "exp2": (lambda a: 2.0**a, lambda a: math.log(2) * 2.0**a),
    "log2": (math.log2, lambda a: 1 / (a * math.log(2))),
    "log10": (math.log10, lambda a: 1 / (a * math.log(10))),
    "cbrt": (lambda a: math.copysign(abs(a) ** (1 / 3), a), lambda a: abs(a) ** (-2 / 3) / 3),
    "arcsin": (math.asin, lambda a: 1 / math.sqrt(1 - a * a)),
    "arccos": (math.acos, lambda a: -1 / math.sqrt(1 - a * a)),
    "arctan": (math.atan, lambda a: 1 / (1 + a * a)),
    "sinh": (math.sinh, math.cosh),
    "cosh": (math.cosh, math.sinh),
    "arcsinh": (math.asinh, lambda a: 1 / math.sqrt(1 + a * a)),
    "arccosh": (math.acosh, lambda a: 1 / math.sqrt(a * a - 1)),
    "arctanh": (math.atanh, lambda a: 1 / (1 - a * a)),
    "erf": (math.erf, lambda a: 2 / math.sqrt(math.pi) * math.exp(-a * a)),
    "erfc": (math.erfc, lambda a: -2 / math.sqrt(math.pi) * math.exp(-a * a)),
    "lgamma": (math.lgamma, digamma),
    "floor": (lambda a: float(np.floor(a)), lambda a: 0.0),  # (IEEE's, as floats: ceil(-0.5) is -0.0, where Python's
    "ceil": (lambda a: float(np.ceil(a)), lambda a: 0.0),  # math.ceil gives the int 0, whose sign arctan2 reads: ±pi)
    "trunc": (lambda a: float(np.trunc(a)), lambda a: 0.0),
    "rint": (lambda a: float(np.rint(a)), lambda a: 0.0),
    "sign": (_sign, lambda a: 0.0),
}


def _dual(name: str):
    value, slope = _DUAL_RULES[name]
    return lambda d: Dual(float(value(d.re)), slope(d.re) * d.du)


def _dual_max(x: Dual, y: Dual) -> Dual:
    if x.re > y.re:
        return x
    if y.re > x.re:
        return y
    return Dual(x.re, 0.5 * (x.du + y.du))


def _dual_pair(value, slopes, x, y) -> Dual:
    x, y = Dual.lift(x), Dual.lift(y)
    da, db = slopes(x.re, y.re)
    return Dual(value(x.re, y.re), da * x.du + db * y.du)


def central(f, x, h=1e-6):
    """Central differences of a NumPy function of one array (any shape): its gradient."""
    x = np.asarray(x, float)
    g = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        g.flat[k] = (f(x + e) - f(x - e)) / (2 * h)
    return g
