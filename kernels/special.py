"""Helpers of the op table (kernels/ops.py) for its rarer ops: rounding, the cube root, digamma.

Plain Python over floats, as the table's own helpers: the sweeps compile them with Numba, and
tape/_recorders.py evaluates the grouped ops through the compiled kernel, so both give the
same bits.
"""

from __future__ import annotations

from math import ceil as _ceil
from math import copysign, inf, log, nan, pi, pow, sin, tan
from math import floor as _floor
from math import trunc as _trunc

# floor, ceil, trunc, rint: integer-valued floats; a zero result takes a's sign (floor(-0.0) and
# ceil(-0.5) are -0.0, as in NumPy); inf and NaN come back unchanged. Their derivative is 0. From
# 2**52 on every float is an integer (and math.floor's int would overflow Numba's int64).


def floor(a):
    """The largest integer <= a."""
    f = a if not abs(a) < 4503599627370496.0 else float(_floor(a))  # 2**52 and up: integers (or inf, NaN)
    return copysign(f, a) if f == 0.0 else f


def ceil(a):
    """The smallest integer >= a."""
    f = a if not abs(a) < 4503599627370496.0 else float(_ceil(a))  # 2**52 and up: integers (or inf, NaN)
    return copysign(f, a) if f == 0.0 else f


def trunc(a):
    """a rounded toward zero."""
    f = a if not abs(a) < 4503599627370496.0 else float(_trunc(a))  # 2**52 and up: integers (or inf, NaN)
    return copysign(f, a) if f == 0.0 else f


def rint(a):
    """a rounded to the nearest integer, halves to even (as numpy.rint)."""
    if not abs(a) < 4503599627370496.0:  # 2**52 and up: integers (or inf, NaN)
        return a
    f = float(_floor(a))
    d = a - f  # exact below 2**52
    if d > 0.5 or (d == 0.5 and f % 2.0 != 0.0):
        f += 1.0
    return copysign(f, a) if f == 0.0 else f


def cbrt(a):
    """The real cube root (negative for negative a): a power, then one Newton step."""
    if a == 0.0 or a - a != 0.0:
        return a
    y = copysign(pow(abs(a), 1.0 / 3.0), a)
    return y - (y - a / (y * y)) / 3.0  # a / y**2 rather than y**3: no underflow for subnormal a


def digamma(a):
    """lgamma'(a): reflection below 1/2, the recurrence up to 10, then the asymptotic series.
    NaN at the poles (0, -1, -2, ...: the left and right limits are -inf and +inf)."""
    if a <= 0.0 and a == _floor(a) or a != a:
        return nan
    if a == inf:
        return inf
    reflected = a < 0.5
    x = 1.0 - a if reflected else a
    acc = 0.0
    while x < 10.0:
        acc -= 1.0 / x
        x += 1.0
    r = 1.0 / (x * x)  # the series' first omitted term is below 1e-15 from 10 on
    acc += log(x) - 0.5 / x - r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * (
        1.0 / 132 - r * (691.0 / 32760 - r / 12))))))
    return acc - pi / tan(pi * a) if reflected else acc


def trigamma(a):
    """lgamma''(a) = digamma'(a), computed as digamma is; NaN at the poles."""
    if a <= 0.0 and a == _floor(a) or a != a:
        return nan
    if a == inf:
        return 0.0
    reflected = a < 0.5
    x = 1.0 - a if reflected else a
    acc = 0.0
    while x < 10.0:
        acc += 1.0 / (x * x)
        x += 1.0
    r = 1.0 / (x * x)
    acc += 1.0 / x + 0.5 * r + r / x * (1.0 / 6 - r * (1.0 / 30 - r * (1.0 / 42 - r * (1.0 / 30 - r * (
        5.0 / 66 - r * (691.0 / 2730 - r * 7.0 / 6))))))
    if reflected:
        s = sin(pi * a)
        return pi * pi / (s * s) - acc
    return acc
