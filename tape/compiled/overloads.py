"""The operators and functions of Vars inside tape.jit functions, as Numba overloads.

Registered once, from the generated tables of tape/compiled/_recorders.py: each unary op as
``-x``/``abs(x)``, ``tape.<name>``, ``math.<name>`` and ``numpy.<ufunc>``; each arithmetic
spelling as its operator (both sides), ``tape.<name>`` and ``numpy.<ufunc>`` (``math.pow``,
``math.atan2``, ``math.hypot`` too); comparisons as Conditions, recorded when a branch reads
them (``if``/``while``: a checked comparison with its file:line) or by ``tape.where`` as data.
A number meeting a Var is an unrecorded Var (index -1) until it meets a recorded one, so the
records are the Python recorder's: ``0.0 + x`` is ``add_c(x, 0.0)``, two numbers record nothing.
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np

from tape.api import trace
from tape.arrays import binary as _binary
from tape.compiled import composed, makers, reductions  # noqa: F401  # register their overloads (np.empty, sum, clip...)
from tape.compiled._recorders import ARITHMETIC, COMPARISONS, UNARY, compare_value
from tape.compiled.arrays import binary_array, inplace_array, unary_array
from tape.compiled.compiler_pass import branch, max_of, max_over, min_of, min_over
from tape.compiled.numba_internals import ArrayConditionType, TypingError, VarArrayType, condition_type, types
from tape.compiled.overload_cache import overload
from tape.compiled.recording import (
    as_var,
    constant_record,
    is_number,
    is_var,
    jit,
    plain,
    push,
    push_check,
    push_const,
    value_at,
    var_of,
)
from tape.kernels import ops
from tape.kernels.ops import SELECT
from tape.records import _recorders as _recorders

TRUTH = "tape.jit: the truth value of a Var is not defined (`if v:`); compare it: `if v > 0:`"


@jit
def record_condition(cond):
    """Record a Condition's comparison (as Condition._record does); return its Var."""
    p = cond.tape
    if cond.mode == 0:
        a, b, j = value_at(p, cond.i), value_at(p, cond.j), cond.j
    else:
        a, b = value_at(p, cond.i), cond.c
        j = push_const(p, b)
    return push(p, cond.code, cond.i, j, compare_value(cond.code, a, b))


@jit
def check(cond, where):
    """A branch on cond: record the comparison as a checked branch; return its outcome."""
    if cond.mode == 2:
        return cond.outcome
    r = record_condition(cond)
    outcome = r.c != 0.0
    push_check(r.tape, r.index, outcome, where)
    return outcome


@overload(branch)
def _branch(x, where):
    if x is condition_type:
        return check
    if is_var(x):
        raise TypingError(TRUTH)
    return None if isinstance(x, ArrayConditionType) else lambda x, where: bool(x)  # the former: conditions.py


@overload(bool)
def _bool(x):
    if x is condition_type:
        return lambda x: check(x, -1)
    if is_var(x):
        raise TypingError(TRUTH)
    return None


@overload(operator.not_)
def _not(x):
    if x is condition_type:
        return lambda x: not check(x, -1)
    if is_var(x):
        raise TypingError(TRUTH)
    return None


def minmax(test):
    """max_of/min_of(a, b, where) as Python's builtin runs max(a, b)/min(a, b) on Vars: the
    branch ``b > a`` (``b < a``) recorded checked at ``where``, then b if it holds, else a."""
    def typer(a, b, where):
        if not (is_var(a) or is_var(b)):
            return (lambda a, b, where: max(a, b)) if test is COMPARISONS["gt"] else lambda a, b, where: min(a, b)
        if not all(is_var(v) or is_number(v) for v in (a, b)):
            return None
        ca, cb = as_var(a), as_var(b)
        return lambda a, b, where: cb(b) if check(test(cb(b), ca(a)), where) else ca(a)
    return typer


def sequence_of_vars(xs) -> bool:
    """A 1-d Var array (the inputs), or a list or tuple of Vars: what builtin max, min and sum fold."""
    return (isinstance(xs, VarArrayType) and xs.ndim == 1) or (
        isinstance(xs, (types.List, types.UniTuple)) and is_var(xs.dtype))


def over(pick, builtin):
    """max_over/min_over(xs, where) as Python's builtin runs max(xs)/min(xs) on Vars: the first
    element, then pick(best, next, where) for each next one (max_of, min_of: checked comparisons)."""
    def typer(xs, where):
        if not sequence_of_vars(xs):
            return lambda xs, where: builtin(xs)

        empty = f"{builtin.__name__}() arg is an empty sequence"

        def impl(xs, where):
            if len(xs) == 0:
                raise ValueError(empty)
            best = xs[0]
            for k in range(1, len(xs)):
                best = pick(best, xs[k], where)
            return best
        return impl
    return typer


@overload(sum)
def _sum(xs, start=0):
    """sum of Vars as Python adds them: ``start + xs[0] + xs[1] ...``."""
    if sequence_of_vars(xs):
        def impl(xs, start=0):
            acc = var_of(start)
            for v in xs:
                acc = acc + v
            return acc
        return impl
    return None


def unary(of_var, value, numbers: bool):
    """The overload of one unary op; ``numbers``: also for a plain number (tape.<name> of a float) or a NumPy array of
    them (element by element, the number's value)."""
    def typer(x):
        if is_var(x):
            return of_var
        if numbers and is_number(x):
            return lambda x: value(float(x))
        if numbers and plain(x):
            def each(x):
                out = np.empty(x.shape)
                for i in np.ndindex(x.shape):
                    out[i] = value(float(x[i]))
                return out
            return each
        return None
    return typer


def _pairs(value):
    """value of two NumPy arrays or numbers, element by element, broadcast as NumPy does."""
    def each(x, y):
        a, b = np.broadcast_arrays(np.asarray(x), np.asarray(y))
        out = np.empty(a.shape)
        for i in np.ndindex(a.shape):
            out[i] = value(float(a[i]), float(b[i]))
        return out
    return each


def binary(vv, vc, cv, value, numbers: bool):
    """The overload of one arithmetic spelling: Vars and numbers on either side (a float as is: ``direct``); with
    ``numbers``, two numbers, or NumPy arrays and numbers (element by element)."""
    def typer(x, y):
        if numbers and (plain(x) or plain(y)) and all(plain(v) or is_number(v) for v in (x, y)):
            return _pairs(value)
        if is_var(x) and is_var(y):
            return vv
        if is_var(x) and y is types.float64:
            return vc
        if x is types.float64 and is_var(y):
            return cv
        if is_var(x) and is_number(y):
            return lambda x, y: vc(x, float(y))
        if is_number(x) and is_var(y):
            return lambda x, y: cv(float(x), y)
        if numbers and is_number(x) and is_number(y):
            return lambda x, y: value(float(x), float(y))
        return None
    return typer


def comparison(vv):
    def typer(x, y):
        if not (is_var(x) or is_var(y)) or not all(is_var(v) or is_number(v) for v in (x, y)):
            return None
        if is_var(x) and is_var(y):
            return vv
        cx, cy = as_var(x), as_var(y)
        return lambda x, y: vv(cx(x), cy(y))
    return typer


CONSTANT_OPERANDS = {s.name for s in ops.ARITHMETIC if not s.var_c}  # numbers meet them as constant records


def _register() -> None:
    # the ops' overloads inline where called: a Var or Var array returned by a call passes through memory, and the
    # caller's wide load of it waits for the callee's stores (no store forwarding): a third of RK4's recording
    inline = functools.partial(overload, forceinline=True)
    for name, (of_var, value, math_name, ufunc) in UNARY.items():
        own = operator.neg if name == "neg" else abs if name == "abs" else getattr(_recorders, name)
        inline(own)(unary(of_var, value, name not in ("neg", "abs")))
        inline(own)(unary_array(of_var))  # -a, abs(a), tape.exp(a) of a Var array: per element
        if math_name and hasattr(math, math_name):
            inline(getattr(math, math_name))(unary(of_var, value, False))
        if ufunc:
            if name not in ("neg", "abs"):
                inline(getattr(np, ufunc))(unary(of_var, value, False))
            inline(getattr(np, ufunc))(unary_array(of_var))
    for name, (vv, vc, cv, value, is_operator, ufunc) in ARITHMETIC.items():
        own = getattr(operator, name) if is_operator else getattr(_binary, name)
        for fn in (own, getattr(np, ufunc)):
            inline(fn)(binary(vv, vc, cv, value, fn is own and not is_operator))  # of numbers: tape.<name>
            inline(fn)(binary_array(vv, name in CONSTANT_OPERANDS))
        if is_operator:
            inline(getattr(operator, f"i{name}"))(binary(vv, vc, cv, value, False))
            inline(getattr(operator, f"i{name}"))(inplace_array(own, vv))
    for name, math_name in (("pow", "pow"), ("arctan2", "atan2"), ("hypot", "hypot")):
        vv, vc, cv, value, _, _ = ARITHMETIC[name]
        inline(getattr(math, math_name))(binary(vv, vc, cv, value, False))
    for name, vv in COMPARISONS.items():
        overload(getattr(operator, name))(comparison(vv))
    overload(max_of)(minmax(COMPARISONS["gt"]))
    overload(min_of)(minmax(COMPARISONS["lt"]))
    overload(max_over)(over(max_of, max))
    overload(min_over)(over(min_of, min))


@jit
def select(cond, x, y):
    """tape.where(cond, x, y) as tape/api/trace.py records it: constants for number branches, the
    comparison, the select."""
    if cond.mode == 2:
        return x if cond.outcome else y
    p = cond.tape
    a = x if x.index >= 0 else constant_record(p, x.c)
    b = y if y.index >= 0 else constant_record(p, y.c)
    chosen = record_condition(cond)
    return push(p, SELECT, a.index, b.index, a.c if chosen.c != 0.0 else b.c)


@overload(trace.where)
def _where(cond, a, b):
    if not all(is_var(v) or is_number(v) for v in (a, b)):
        raise TypingError("tape.jit: tape.where branches must be Vars or numbers")
    ca, cb = as_var(a), as_var(b)
    if isinstance(cond, types.Boolean):
        return lambda cond, a, b: ca(a) if cond else cb(b)
    if cond is not condition_type:
        raise TypingError(f"tape.jit: tape.where needs a comparison of Vars (x > 0) or a bool, got {cond}")

    return lambda cond, a, b: select(cond, ca(a), cb(b))


_register()
