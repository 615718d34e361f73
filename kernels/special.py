"""Helpers of the op table (kernels/ops.py) for its rarer ops: rounding, the cube root, digamma,
and the rules of arctan2, hypot, logaddexp, fmax and fmin.

Plain Python over floats, as the table's own helpers: the sweeps compile them with Numba, and
tape/records/_recorders.py evaluates the grouped ops through the compiled kernel, so both give the
same bits.
"""

from __future__ import annotations

from math import ceil as _ceil
from math import copysign, exp, hypot, inf, log, log1p, nan, pi, pow, sin, tan
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


def digamma_steps(a, where, log, tan, floor):
    """digamma's steps with each branch a ``where`` and its loop unrolled (at most 10 steps, as x >= 1/2
    there), over the primitives given: NumPy's (kernels/array_helpers.py: an array record's partial) or
    records' (tape/symbolic/partial_helpers.py: the partial as records, whose array records replay NumPy's
    loops), so an array record's partial and its gradient tape's are the same operations, the same bits."""
    reflected = a < 0.5
    x = where(reflected, 1.0 - a, a)
    acc = 0.0
    for _ in range(10):
        going = x < 10.0
        acc = where(going, acc - 1.0 / x, acc)
        x = where(going, x + 1.0, x)
    r = 1.0 / (x * x)
    acc = acc + (log(x) - 0.5 / x - r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * (
        1.0 / 132 - r * (691.0 / 32760 - r / 12)))))))
    value = where(reflected, acc - pi / tan(pi * a), acc)
    return where(a != a, nan, where(a == inf, inf, where(a <= 0.0, where(a == floor(a), nan, value), value)))


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


# arctan2, hypot, logaddexp, fmax, fmin (ops.GROUPED_PAIRS). Conventions (docs/design.md, "Conventions at kinks"):
# atan2's and hypot's partials are 0 at the origin (hypot(a, 0) = |a|, and abs'(0) = 0); a tie of
# logaddexp or fmax/fmin gives each input 1/2 (infinite ties included); fmax/fmin ignore a NaN.


def atan2_da(a, b):
    """d atan2(a, b) / da = b / (a² + b²), as (b / h) / h with h = hypot(a, b): no overflow. 0 at the
    origin and where a or b is infinite (the limit, whatever the direction); NaN for NaN."""
    h = hypot(a, b)
    if h == 0.0 or h == inf:
        return 0.0 if a == a and b == b else nan
    return (b / h) / h


def atan2_curvature(a, b):
    """2ab / (a² + b²)² = d2 atan2(a, b) / db2 = -d2 atan2 / da2, scaled and taken as atan2_da."""
    h = hypot(a, b)
    if h == 0.0 or h == inf:
        return 0.0 if a == a and b == b else nan
    return 2.0 * (a / h) * (b / h) / h / h


def atan2_mixed(a, b):
    """(a² - b²) / (a² + b²)² = d2 atan2(a, b) / da db, scaled and taken as atan2_da."""
    h = hypot(a, b)
    if h == 0.0 or h == inf:
        return 0.0 if a == a and b == b else nan
    u, v = a / h, b / h
    return (u - v) * (u + v) / h / h


def hypot_da(a, b, y):
    """d hypot(a, b) / da = a / y. 0 at the origin; where one input is infinite the limits (±1 for it,
    0 for the other); NaN where both are infinite (no limit) or one is NaN; a, b scaled where y overflowed."""
    if 0.0 < y < inf:
        return a / y
    if y == 0.0:
        return 0.0
    if a != a or b != b or abs(a) == inf and abs(b) == inf:
        return nan
    if abs(a) == inf:
        return copysign(1.0, a)
    if abs(b) == inf:
        return 0.0
    m = abs(a) if abs(a) > abs(b) else abs(b)  # finite a and b: y overflowed
    return (a / m) / hypot(a / m, b / m)


def hypot_curvature(u, v, y):
    """u v / y³ for u, v among a, b (d2 hypot / da2 = b b / y³, d2 / da db = -a b / y³), as
    (u / y) (v / y) / y: no overflow; 0 at the origin and where y is infinite, NaN for NaN."""
    if 0.0 < y < inf:
        return (u / y) * (v / y) / y
    return 0.0 if u == u and v == v else nan


def logaddexp(a, b):
    """log(exp(a) + exp(b)) as numpy.logaddexp computes it: the larger plus log1p(exp(-|a - b|)); at a
    tie (equal infinities too) a + ln 2; NaN for NaN."""
    if a == b:
        return a + 0.6931471805599453
    d = a - b
    if d > 0.0:
        return a + log1p(exp(-d))
    if d <= 0.0:
        return b + log1p(exp(d))
    return d


def logaddexp_share(a, b):
    """d logaddexp(a, b) / da = exp(a - y) = 1 / (1 + exp(b - a)), with no exp that overflows: 1/2 at a
    tie (both -inf or both +inf too), 1 for a = +inf > b, 0 for a = -inf < b; NaN for NaN."""
    if a == b:
        return 0.5
    d = a - b
    if d >= 0.0:
        return 1.0 / (1.0 + exp(-d))
    e = exp(d)
    return e / (1.0 + e)


def logaddexp_share_steps(a, b, exp, where):
    """logaddexp_share with each branch a ``where``, over the primitives given (as digamma_steps): a tie of numbers
    by the branch of d >= 0 (1/2 exactly, and as records its slope 1/4: a constant 1/2 there made the gradient tape's
    second derivative 0), of infinities 1/2."""
    d = a - b
    e = exp(d)
    return where(d >= 0.0, 1.0 / (1.0 + exp(-d)), where(a == b, 0.5, e / (1.0 + e)))


def fmax(a, b):
    """The larger of a and b, a NaN ignored (as numpy.fmax, a scalar at a time): a at a tie."""
    return a if a >= b or b != b else b


def fmin(a, b):
    """The smaller of a and b, a NaN ignored (as numpy.fmin): a at a tie."""
    return a if a <= b or b != b else b


def fmax_share(a, b):
    """d fmax(a, b) / da: 1 where a wins or b is NaN, 0 where b wins or a is NaN, 1/2 at a tie, NaN when
    both are NaN. fmin's is fmax_share(-a, -b)."""
    if a > b:
        return 1.0
    if b > a:
        return 0.0
    if a == b:
        return 0.5
    if a == a:
        return 1.0
    return 0.0 if b == b else nan
