"""Comparisons of whole Var arrays inside tape.jit functions, recorded as the Python recorder records
its ArrayCondition (tape/arrays/conditions.py) on a small VarArray.

``a > b`` (or ``np.greater(a, b)``) records nothing yet. ``np.where``/``tape.where`` of it record the
branches' numbers as constant records (the first branch's, then the second's), then per element of the
result its comparison and a select. ``.all()``, ``.any()`` and a branch on a one-element comparison
(``if a > b:``, ``bool``, ``not``) record every element's comparison as a checked branch named by its
line (compiler_pass.BranchLines), so a replay where one flips raises BranchChanged. Anything else of a
comparison (``np.all``, ``&``, ``.sum()``, indexing with it) is refused when f compiles.
"""

from __future__ import annotations

import operator

import numpy as np

from tape.api import trace
from tape.compiled._recorders import COMPARISONS
from tape.compiled.arrays import (
    _ndim,
    _result,
    at,
    blank,
    common,
    dims,
    element,
    is_array,
    of_arrays,
    operand,
    records_of,
    release,
    tape_of_pair,
)
from tape.compiled.compiler_pass import all_of, any_of, branch
from tape.compiled.numba_internals import ArrayConditionType, condition_type, make_array_condition, types
from tape.compiled.overload_cache import overload, overload_method
from tape.compiled.overloads import _where, check, select
from tape.compiled.recording import constant_record, hot, is_var, jit
from tape.kernels import ops

AMBIGUOUS = "the truth value of an array comparison with more than one element is ambiguous; use .all() or .any()"


def is_condition(typ) -> bool:
    return isinstance(typ, ArrayConditionType)


@hot
def steps(x):
    """(row step, column step) of reading operand x at a position of a broadcast shape: 0 along an axis of length 1."""
    a, b = dims(x)
    return int(a != 1), int(b != 1)


@hot
def extent(c):
    """The broadcast shape of an ArrayCondition's operands, seen as 2-d (as dims)."""
    (a, b), (d, e) = dims(c.x), dims(c.y)
    return common(a, d), common(b, e)


def compared(c, i, j):
    """Element (i, j) of ArrayCondition c (its operands broadcast): a Condition."""


@overload(compared)
def _compared(c, i, j):
    vv = COMPARISONS[c.op]

    def impl(c, i, j):
        (xi, xj), (yi, yj) = steps(c.x), steps(c.y)
        return vv(at(c.x, i * xi, j * xj), at(c.y, i * yi, j * yj))
    return impl


def comparison(name: str, reflected: bool):
    """The overload of ``x <name> y`` with a Var array among x and y (or a NumPy array with a Var). ``reflected``:
    ``v == a`` of a Var and a Var array is Python's ``a == v`` (Var's operator declines), as ``!=`` (for the
    others the mirrored op records the same)."""
    def typer(x, y):
        if not of_arrays(x, y):
            return None
        swap = reflected and is_var(x) and is_array(y)

        def impl(x, y):
            c = make_array_condition(name, y, x) if swap else make_array_condition(name, x, y)
            extent(c)  # operands that do not broadcast: ValueError here, as NumPy's
            return c
        return impl
    return typer


@jit
def checked(c, where):
    """Record every element's comparison as a checked branch at ``where``: (all, any) of the outcomes."""
    n, m = extent(c)
    every, some = True, False
    for i in range(n):
        for j in range(m):
            outcome = check(compared(c, i, j), where)
            every, some = every & outcome, some | outcome
    return every, some


@jit
def truth(c, where):
    """A branch on an ArrayCondition: one element's comparison, checked."""
    n, m = extent(c)
    if n * m != 1:
        raise ValueError(AMBIGUOUS)
    return checked(c, where)[0]


@jit
def spread(p, z, rows, vals, n, m):
    """Branch z of a where at every element of the (n, m) result into 1-d rows and vals, numbers as constant records."""
    zi, zj = steps(z)
    for i in range(n):
        for j in range(m):
            w = at(z, i * zi, j * zj)
            if w.index < 0:
                w = constant_record(p, w.c)
            rows[i * m + j], vals[i * m + j] = w.index, w.c


def where_arrays(c, x, y):
    """np.where/tape.where of an ArrayCondition c: branches x and y as records (spread), then per element of the
    result the comparison and a select (tape/api/trace.py's _where_arrays)."""
    if not (is_condition(c) and operand(x) and operand(y)):
        return None
    make, store = _result(_ndim(c.x, c.y, x, y))
    tape = tape_of_pair(c.x, c.y)

    def impl(c, x, y):
        p = tape(c.x, c.y)
        (a, b), (d, e), (f, g) = extent(c), dims(x), dims(y)
        n, m = common(common(a, d), f), common(common(b, e), g)
        out = make(p, n, m)
        work = blank(p, 2, n * m)  # scratch, given back
        spread(p, x, work.rows[0], work.vals[0], n, m)
        spread(p, y, work.rows[1], work.vals[1], n, m)
        ci, cj, k = int(a != 1), int(b != 1), 0
        for i in range(n):
            for j in range(m):
                chosen = select(compared(c, i * ci, j * cj), element(p, work.rows[0, k], work.vals[0, k]),
                                element(p, work.rows[1, k], work.vals[1, k]))
                store(out, i, j, chosen)
                k += 1
        release(p, 4 * n * m)
        return out
    return impl


def where_mask(c, x, y):
    """np.where/tape.where with a boolean NumPy array c (data: chosen once) and a Var or Var array among x and y:
    numbers as constant records (records_of), then the chosen elements, nothing recorded (trace.py's _where_mask)."""
    if not (isinstance(c, types.Array) and isinstance(c.dtype, types.Boolean) and c.ndim in (1, 2) and operand(x)
            and operand(y) and any(is_array(z) or is_var(z) for z in (x, y))):
        return None
    make, store = _result(max(c.ndim, _ndim(x, y)))
    tape = tape_of_pair(x, y)

    def impl(c, x, y):
        p = tape(x, y)
        rx, ry, flags = records_of(x, p), records_of(y, p), c * 1.0
        (a, b), (d, e), (f, g) = dims(flags), dims(rx), dims(ry)
        n, m = common(common(a, d), f), common(common(b, e), g)
        out = make(p, n, m)
        (ci, cj), (xi, xj), (yi, yj) = steps(flags), steps(rx), steps(ry)
        for i in range(n):
            for j in range(m):
                chosen = at(flags, i * ci, j * cj).c != 0.0
                store(out, i, j, at(rx, i * xi, j * xj) if chosen else at(ry, i * yi, j * yj))
        return out
    return impl


def truths(method: str, pick: int):
    """The overload of x.all() (pick 0) or x.any() (pick 1) as BranchLines rewrites them (all_of, any_of)."""
    def typer(x, where):
        if is_condition(x):
            return lambda x, where: checked(x, where)[pick]
        return (lambda x, where: x.all()) if method == "all" else lambda x, where: x.any()
    return typer


def _register() -> None:
    for spelling in ops.COMPARISONS:
        overload(getattr(operator, spelling.name))(comparison(spelling.name, spelling.name in ("eq", "ne")))
        overload(getattr(np, spelling.ufunc))(comparison(spelling.name, False))
    overload(trace.where)(where_arrays)
    overload(np.where)(where_arrays)
    overload(np.where)(where_mask)
    overload(trace.where)(where_mask)
    overload(trace.where)(lambda cond, a, b: (lambda cond, a, b: np.where(cond, a, b)) if isinstance(
        cond, types.Array) and not any(is_array(z) or is_var(z) for z in (a, b)) else None)  # numbers: NumPy's
    overload(np.where)(lambda cond, a, b: _where(cond, a, b) if cond is condition_type else None)  # tape.where's
    for method, stub, pick in (("all", all_of, 0), ("any", any_of, 1)):
        overload(stub)(truths(method, pick))
        overload_method(ArrayConditionType, method)(lambda c, pick=pick: lambda c: checked(c, -1)[pick])
    overload(branch)(lambda x, where: (lambda x, where: truth(x, where)) if is_condition(x) else None)
    overload(bool)(lambda x: (lambda x: truth(x, -1)) if is_condition(x) else None)
    overload(operator.not_)(lambda x: (lambda x: not truth(x, -1)) if is_condition(x) else None)


_register()
