"""Comparisons of array records and np.where/tape.where of them inside tape.jit, as the Python recorder writes them
(tape/arrays/conditions.py, tape/api/trace.py's where): ``x > y`` records nothing yet (an ArrayCondition of its
operands); a where of it records its branches as operands (numbers and
NumPy arrays as constants, Vars as packs), then the comparison's operands and its comparison record, then one select
record. A where with a boolean NumPy array: the branches, the mask as a constant, a select. Anything else of a
comparison of array records (``.all()``, ``bool``, ``&``) fails typing: scalar records.
"""

from __future__ import annotations

import operator

import numpy as np

from tape.api import trace
from tape.compiled.array_overloads import _ndim, _pointers, is_data, is_record, maker, operand
from tape.compiled.array_records import LAST, ONES, common, data, whole, written, written3
from tape.compiled.numba_internals import ArrayConditionType, make_array_condition, types
from tape.compiled.overload_cache import overload
from tape.compiled.recording import is_number, is_var, jit
from tape.kernels import ops
from tape.kernels.array_ops import ARRAY_OPCODE

SPELLING = {s.name: s for s in ops.COMPARISONS}
SELECT = ARRAY_OPCODE["select"]


def _operand(typ) -> bool:
    return is_record(typ) or is_data(typ) or is_var(typ) or is_number(typ)


def _of_records(x, y) -> bool:
    return (is_record(x) or is_record(y)) and _operand(x) and _operand(y)


def extent(x):
    """The DIMS lengths of an operand, right-aligned after 1s (all 1 for a number or a Var)."""


@overload(extent)
def _extent(x):
    if (is_record(x) or is_data(x)) and maker(x.ndim):
        return lambda x: (ONES + x.shape)[LAST:]
    return lambda x: ONES


@jit
def _broadcast(x, y):
    """NumPy's check that x and y broadcast, at the comparison (as ArrayCondition.of)."""
    a, b = extent(x), extent(y)
    for d in range(len(a)):
        if common(a[d], b[d]) < 0:
            raise ValueError("operands could not be broadcast together (tape.jit: a comparison of array records)")


def comparison(name: str):
    """The overload of ``x <name> y`` with an array record among x and y. (Python mirrors ``2.0 < u`` as ``u > 2.0``:
    the same records, as the pair of either is ``lt`` of (2.0, u).)"""
    def typer(x, y):
        if not _of_records(x, y):
            return None

        def impl(x, y):
            _broadcast(x, y)
            return make_array_condition(name, x, y)
        return impl
    return typer


def _compared(c):
    """(code, swap) of condition c's comparison record: its spelling's pair, operands swapped for gt and ge."""
    spelling = SPELLING[c.op]
    return ARRAY_OPCODE[spelling.pair], spelling.swap


def where_typer(c, x, y):
    """np.where(c, x, y) of a comparison of array records: branches, comparison, select (trace._where_arrays)."""
    if not (isinstance(c, ArrayConditionType) and _of_records(c.x, c.y) and _operand(x) and _operand(y)):
        return None
    code, swap = _compared(c)
    cndim = max(_ndim(c.x), _ndim(c.y))
    make, pointers = maker(max(cndim, _ndim(x), _ndim(y))), _pointers(c.x, c.y)

    def impl(c, x, y):
        p, q = pointers(c.x, c.y)
        a = operand(p, q, x)
        b = operand(p, q, y)
        u = operand(p, q, c.x)
        v = operand(p, q, c.y)
        k = written(p, q, code, 2, 0.0, v, u) if swap else written(p, q, code, 2, 0.0, u, v)
        return make(p, q, written3(p, q, SELECT, 3, 0.0, whole(k[0], k[1], cndim, k[2]), a, b))
    return impl


def where_mask_typer(c, x, y):
    """np.where(mask, x, y) with a boolean NumPy mask and an array record among x and y: branches, the mask as a
    constant record, a select (trace._where_mask)."""
    if not (isinstance(c, types.Array) and isinstance(c.dtype, types.Boolean) and c.ndim >= 1
            and (is_record(x) or is_record(y)) and _operand(x) and _operand(y)):
        return None
    make, pointers = maker(max(c.ndim, _ndim(x), _ndim(y))), _pointers(x, y)

    def impl(c, x, y):
        p, q = pointers(x, y)
        a = operand(p, q, x)
        b = operand(p, q, y)
        return make(p, q, written3(p, q, SELECT, 3, 0.0, data(p, q, c * 1.0), a, b))
    return impl


def _register() -> None:
    for spelling in ops.COMPARISONS:
        for fn in (getattr(operator, spelling.name), getattr(np, spelling.ufunc)):
            overload(fn)(comparison(spelling.name))
    for fn in (np.where, trace.where):
        overload(fn)(where_typer)
        overload(fn)(where_mask_typer)


_register()
