"""The op table's helpers as records: what tape/symbolic/_partials.py (generated) calls in the rules.

kernels/ops.py writes partials with helpers over floats (``sign``, ``step``, ``pow_da``,
``max_share``, ``digamma``, ...), which branch on their arguments. Here each has a recorded
equivalent, written once, so the generated partials stay a mechanical translation: every
branch on a record's value is a ``where`` (a comparison and a select record: data, valid at
every replay, never a checked branch), the piecewise-constant pieces are ops or constants whose
derivative is 0, and every value is the same expression the kernel helper evaluates (the
same bits; tests/test_partials.py compares them). Called with numbers only, each helper is the
kernel's own.
"""

from __future__ import annotations

from math import inf, nan
from typing import Any

import numpy as np

from tape.arrays.binary import hypot as _hypot
from tape.arrays.conditions import ArrayCondition
from tape.arrays.operands import as_view, operands
from tape.arrays.varray import VarArray
from tape.kernels import ops, special
from tape.kernels.ops import CONSTANT, OPCODE, SELECT
from tape.records import array_records
from tape.records._recorders import Var, exp, floor, log, tan
from tape.records._recorders import sign as _sign
from tape.records.handles import Condition, shared_segment
from tape.records.storage import NO_INPUT

MUL_NZ = OPCODE["mul_nz"]

Value = Any  # a Var or a float (mypy cannot follow Var | float through the operators of both)


def _recorded(x: Any) -> bool:
    """A handle of records: a Var, or a VarArray (an array record's rules, tape/symbolic/array_adjoint.py)."""
    return type(x) is Var or type(x) is VarArray


def _no_record(*args: Any) -> bool:
    return not any(_recorded(x) for x in args)


def constant(t: Any, value: float) -> Var:
    """A constant record (a leaf that is not an input) holding value: one per value and tape, reused
    (a where's 0, 1, 1/2 and NaN were a quarter of a gradient tape's records). A cached row is
    checked before reuse: after a rewind it may hold another record."""
    cache = t.__dict__.setdefault("_constant_rows", {})
    key = value.hex()
    row = cache.get(key)
    if row is None or row >= t._n or t._op[row] != CONSTANT or float(t._val[row]).hex() != key:
        row = cache[key] = t._push(CONSTANT, NO_INPUT, NO_INPUT, value)
    return Var._at(t._segment(), row)


def mul_nz(x: Value, y: Value) -> Value:
    """x * y where both are nonzero, else 0.0, as one mul_nz record (a number becomes a constant
    record): the product a numeric sweep adds, so 0 * inf is 0 at every replay. With numbers only,
    the kernel's own."""
    if _no_record(x, y):
        return ops.mul_nz(float(x), float(y))
    t = shared_segment(x, y).tape if type(x) is Var and type(y) is Var else (x if type(x) is Var else y)._live_tape()
    x = x if type(x) is Var else constant(t, float(x))
    y = y if type(y) is Var else constant(t, float(y))
    vals = t._val_w
    return Var._at(t._segment(), t._push(MUL_NZ, x._index, y._index, ops.mul_nz(vals[x._index], vals[y._index])))


def where(condition: Condition | ArrayCondition | bool, x: Value, y: Value) -> Value:
    """x where condition holds, else y, as tape.where records it (numbers become constant records
    before the comparison, which the select reads as the record just before it); a bool picks.
    A comparison of arrays gives one compare and one select array record."""
    if isinstance(condition, ArrayCondition):
        t = condition._live_tape()
        views = [as_view(t, rt is not None, part) for rt, part in operands(x, y)]  # type: ignore[union-attr]
        return VarArray(t._segment(), None, array_records.elementwise(t, "select", condition._view(), *views))
    if not isinstance(condition, Condition):
        return x if condition else y
    if type(x) is VarArray or type(y) is VarArray:  # a number's comparison picking an array (hypot_da, fmin_share of a
        return where(ArrayCondition.of(np.not_equal, condition._record(), 0.0), x, y)  # number and an array)
    t = condition._tape()
    x = x if type(x) is Var else constant(t, float(x))
    y = y if type(y) is Var else constant(t, float(y))
    chosen = condition._record()
    vals = t._val_w
    value = vals[x._index] if vals[chosen._index] != 0.0 else vals[y._index]
    return Var._at(t._segment(), t._push(SELECT, x._index, y._index, value))


def pick(cases: list[tuple[Condition | bool, Value]], otherwise: Value) -> Value:
    """The value of the first case whose condition holds (as an if/elif chain), as nested wheres."""
    value = otherwise
    for condition, case in reversed(cases):
        value = where(condition, case, value)
    return value


def fdiv(p: float, q: float) -> float:
    """p / q of numbers as IEEE divides (inf or NaN for q == 0, where Python raises)."""
    with np.errstate(all="ignore"):
        return float(np.float64(p) / np.float64(q))


def pow(a: Value, b: Value) -> Value:  # noqa: A001  # the rules' name
    if _no_record(a, b):
        with np.errstate(all="ignore"):
            return float(np.power(np.float64(a), np.float64(b)))
    return a ** b


def hypot(a: Value, b: Value) -> Value:
    return _hypot(a, b)


def sign(a: Value) -> Value:
    """The sign op (its derivative is 0)."""
    return _sign(a)


def step(a: Value) -> Value:
    if _no_record(a):
        return ops.step(a)
    return pick([(a > 0.0, 1.0), (a <= 0.0, 0.0)], nan)


def max_share(a: Value, b: Value) -> Value:
    if _no_record(a, b):
        return ops.max_share(a, b)
    return pick([(a > b, 1.0), (b > a, 0.0), (a == b, 0.5)], nan)


def pow_da(a: Value, c: Value) -> Value:
    """c * a**(c-1), exactly 0 for c == 0."""
    if not _recorded(c):
        return 0.0 if c == 0.0 else c * pow(a, c - 1.0)
    return where(c == 0.0, 0.0, c * pow(a, c - 1.0))


def pow_dc(a: Value, y: Value) -> Value:
    """y * log(a), 0 at a == 0."""
    if not _recorded(a):
        return 0.0 if a == 0.0 else y * log(a)
    return where(a == 0.0, 0.0, y * log(a))


def digamma(a: Value) -> Value:
    """kernels/special.py's digamma step by step, its branches wheres (special.digamma_steps)."""
    if _no_record(a):
        return special.digamma(a)
    return special.digamma_steps(a, where, log, tan, floor)


def atan2_da(a: Value, b: Value) -> Value:
    """(b / h) / h with h = hypot(a, b); 0 at the origin and at infinities, NaN for NaN."""
    if _no_record(a, b):
        return special.atan2_da(a, b)
    h = hypot(a, b)
    edge = pick([(a != a, nan), (b != b, nan)], 0.0)
    return pick([(h == 0.0, edge), (h == inf, edge)], (b / h) / h)


def hypot_da(a: Value, b: Value, y: Value) -> Value:
    """a / y; 0 at the origin; the limits where one input is infinite; scaled where y overflowed."""
    if _no_record(a, b, y):
        return special.hypot_da(a, b, y)
    abs_a, abs_b = abs(a), abs(b)
    m = where(abs_a > abs_b, abs_a, abs_b)
    scaled = (a / m) / hypot(a / m, b / m)
    infinite = pick([(abs_a == inf, where(abs_b == inf, nan, where(a > 0.0, 1.0, -1.0))), (abs_b == inf, 0.0)],
                    scaled)
    edges = pick([(y == 0.0, 0.0), (a != a, nan), (b != b, nan)], infinite)
    return where(y > 0.0, where(y < inf, a / y, edges), edges)


def logaddexp_share(a: Value, b: Value) -> Value:
    """1 / (1 + exp(b - a)) with no exp that overflows; 1/2 at a tie (special.logaddexp_share_steps)."""
    if _no_record(a, b):
        return special.logaddexp_share(a, b)
    return special.logaddexp_share_steps(a, b, exp, where)


def fmax_share(a: Value, b: Value) -> Value:
    if _no_record(a, b):
        return special.fmax_share(a, b)
    return pick([(a > b, 1.0), (b > a, 0.0), (a == b, 0.5), (a == a, 1.0), (b == b, 0.0)],
                nan)


__all__ = ["atan2_da", "constant", "digamma", "fdiv", "fmax_share", "hypot", "hypot_da",
           "logaddexp_share", "max_share", "pick", "pow", "pow_da", "pow_dc", "sign", "step", "where"]
