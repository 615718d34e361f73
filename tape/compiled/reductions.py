"""Reductions and products of Var arrays inside tape.jit functions (tape/compiled/arrays.py): ``sum``,
``prod``, ``mean`` of all elements or along an axis (pairwise, level by level, as tape/arrays/varray.py's
reduce records them), ``max``/``min`` (a chain of tape.maximum/minimum: Python writes one array record,
with the same gradient away from ties), ``np.dot``/``@``/``.dot`` of 1-d and 2-d (as its matmul records
them on small arrays). Scratch comes from the call's arena and is given back.
"""

from __future__ import annotations

import operator

import numpy as np

from tape.compiled.arrays import (
    add_vv,
    at,
    axis_of,
    blank,
    dims,
    element,
    fill,
    flat_into,
    fresh,
    is_array,
    is_data,
    maximum_vv,
    minimum_vv,
    mul_vv,
    release,
    tape_of_first,
    tape_of_second,
)
from tape.compiled.numba_internals import TypingError, VarArrayType, make_array, types, unbound
from tape.compiled.overload_cache import overload, overload_method, own_name
from tape.compiled.recording import constant_record, hot, jit


def _pairwise(record):
    """pairwise(p, rows, vals) of one op (record: add_vv for sums, mul_vv for products; one op per compiled
    function): each row of 2-d (rows, vals), in place, as tape/arrays/varray.py's reduce records it: pairs
    (0, 1), (2, 3), ... of every row, then of the results (an odd one last), one level after the other. The row
    results are left in column 0."""
    @jit
    @own_name
    def pairwise(p, rows, vals):
        n, k = rows.shape
        while k > 1:
            pairs = k // 2
            for r in range(n):
                for q in range(pairs):
                    a = element(p, rows[r, 2 * q], vals[r, 2 * q])
                    b = element(p, rows[r, 2 * q + 1], vals[r, 2 * q + 1])
                    w = record(a, b)
                    rows[r, q], vals[r, q] = w.index, w.c
                if k % 2:
                    rows[r, pairs], vals[r, pairs] = rows[r, k - 1], vals[r, k - 1]
            k = pairs + k % 2
    return pairwise


def _totals(record, empty: float):
    """(pairwise, total, total_along) of one op: sums (add_vv, 0.0 of no elements), products (mul_vv, 1.0)."""
    pairwise = _pairwise(record)

    @jit
    @own_name
    def total(a):
        """The sum (product) of all elements, pairwise; of none ``empty``, a number."""
        size = a.rows.size
        if size == 0:
            return unbound(empty)
        work = blank(a.tape, 1, size)  # scratch, given back
        flat_into(work.rows[0], work.vals[0], a)
        pairwise(a.tape, work.rows, work.vals)
        out = element(a.tape, work.rows[0, 0], work.vals[0, 0])
        release(a.tape, 2 * size)
        return out

    @jit
    @own_name
    def total_along(a, axis):
        """The sums (products) along an axis of a 2-d Var array, a 1-d one: pairwise, every row's level
        before the next level (as reduce records them); of no elements constant records ``empty``."""
        p = a.tape
        src = a if axis_of(axis, 2) == 1 else make_array(p, a.rows.T, a.vals.T)
        n, m = src.rows.shape
        out = fresh(p, n)
        if m == 0:
            for i in range(n):
                w = constant_record(p, empty)
                out.rows[i], out.vals[i] = w.index, w.c
            return out
        work = blank(p, n, m)  # scratch, given back
        fill(work.rows, work.vals, src.rows, src.vals)
        pairwise(p, work.rows, work.vals)
        fill(out.rows, out.vals, work.rows[:, 0], work.vals[:, 0])
        release(p, 2 * n * m)
        return out
    return pairwise, total, total_along


def _folds(record):
    """(fold, fold_along) of one op: the largest (record: maximum_vv) or smallest (minimum_vv) element."""
    @jit
    @own_name
    def fold(a):
        """tape.maximum (minimum) of the first and each next element."""
        if a.rows.size == 0:
            raise ValueError("tape.jit: max/min of an empty Var array")
        n, m = dims(a)
        best = at(a, 0, 0)
        for i in range(n):
            for j in range(1 if i == 0 else 0, m):
                best = record(best, at(a, i, j))
        return best

    @jit
    @own_name
    def fold_along(a, axis):
        """The largest (smallest) elements along an axis of a 2-d Var array (fold of each row), a 1-d one."""
        src = a if axis_of(axis, 2) == 1 else make_array(a.tape, a.rows.T, a.vals.T)
        out = fresh(a.tape, src.rows.shape[0])
        for i in range(src.rows.shape[0]):
            w = fold(src[i])
            out.rows[i], out.vals[i] = w.index, w.c
        return out
    return fold, fold_along


(pairwise_sum, sums, sums_along), (_, products, products_along) = _totals(add_vv, 0.0), _totals(mul_vv, 1.0)
(largest, largest_along), (smallest, smallest_along) = _folds(maximum_vv), _folds(minimum_vv)


def _reduction(whole, along):
    """The overload of a reduction (``whole``, ``along``: its implementations of all elements and along one axis,
    a 2-d Var array's, a 1-d result; a 1-d one's only axis is all of it). Returned as they are, not called from a
    layer: that was a compile per reduction and type."""
    whole_of_1d = hot(whole)

    def typer(a, axis=None):
        if not is_array(a):
            return None
        if axis is None or isinstance(axis, (types.NoneType, types.Omitted)):
            return whole
        if not isinstance(axis, types.Integer):
            raise TypingError(f"tape.jit: reduce a Var array over all its axes or over one (an int), not {axis}")
        if a.ndim == 2:
            return along

        def one(a, axis=None):
            axis_of(axis, 1)
            return whole_of_1d(a, axis)
        return one
    return typer


def _implementations(whole, along, mean: bool = False):
    """(of all elements, along an axis) of a reduction by its jitted functions (``mean``: the sums scaled), each
    named by what it is (own_name: its own cache entry and symbol)."""
    if mean:
        return (own_name(lambda a, axis=None: whole(a) * (1.0 / a.rows.size)),
                own_name(lambda a, axis=None: along(a, axis) * (1.0 / a.rows.shape[axis_of(axis, 2)])))
    return own_name(lambda a, axis=None: whole(a)), own_name(lambda a, axis=None: along(a, axis))


REDUCTIONS = {"sum": _implementations(sums, sums_along), "prod": _implementations(products, products_along),
              "mean": _implementations(sums, sums_along, mean=True), "max": _implementations(largest, largest_along),
              "min": _implementations(smallest, smallest_along)}
for _name, (_whole, _along) in REDUCTIONS.items():
    _typer = _reduction(_whole, _along)
    overload_method(VarArrayType, _name, forceinline=True)(_typer)
    overload({"max": np.max, "min": np.min}.get(_name, getattr(np, _name)), forceinline=True)(_typer)


# np.dot's layers, named (a symbol each) and shared by its overloads (one made per overload was a compile each)
@hot
def _b_of_column(b, k, j):
    return at(b, 0, k)


@hot
def _b_at(b, k, j):
    return at(b, k, j)


@hot
def _dot_scalar(out, n, q):
    return element(out.tape, out.rows[0], out.vals[0])


@hot
def _dot_matrix(out, n, q):
    return make_array(out.tape, out.rows.reshape((n, q)), out.vals.reshape((n, q)))


@hot
def _dot_vector(out, n, q):
    return out


def _dot(a, b):
    """a @ b of 1-d and 2-d operands (one a Var array) as tape/arrays/varray.py's matmul records it: the
    products in C order of (i, k, j), then each (i, j)'s sum over k pairwise, level by level."""
    if not (is_array(a) or is_array(b)) or not all((is_array(x) or is_data(x)) for x in (a, b)):
        return None
    tape_of = tape_of_first if is_array(a) else tape_of_second
    column = b.ndim == 1  # b's k-th element: at(b, 0, k) for 1-d b, else at(b, k, j)
    b_at = _b_of_column if column else _b_at
    result = _dot_scalar if a.ndim == 1 and b.ndim == 1 else _dot_matrix if a.ndim == 2 and b.ndim == 2 else _dot_vector

    def impl(a, b):
        n, m = dims(a)
        mb, q = (len(b), 1) if column else dims(b)
        if m != mb:
            raise ValueError("tape.jit: np.dot: the inner dimensions differ")
        p = tape_of(a, b)
        out = fresh(p, n * q)
        work = blank(p, n * q, m)  # scratch, given back
        for i in range(n):
            for k in range(m):
                for j in range(q):
                    w = mul_vv(at(a, i, k), b_at(b, k, j))
                    work.rows[i * q + j, k], work.vals[i * q + j, k] = w.index, w.c
        pairwise_sum(p, work.rows, work.vals)
        fill(out.rows, out.vals, work.rows[:, 0], work.vals[:, 0])
        release(p, 2 * n * q * m)
        return result(out, n, q)
    return impl


for _fn in (np.dot, operator.matmul):  # type: ignore[assignment]  # numpy's and the operator's
    overload(_fn)(_dot)
overload_method(VarArrayType, "dot")(_dot)


