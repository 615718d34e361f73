"""Small arrays of scalar records, recorded element by element in one Python loop.

Recording an operation of a VarArray of scalar records through NumPy
(tape/arrays/varray.py) pays a few microseconds per call whatever the size: operand
handling, broadcasting, slice writes, a Numba call. Below ``LOOP`` elements
one Python loop through each op's value (``FORWARD``: the expressions the Var
recorders evaluate) is faster, and it writes the same records and values.
Measured (RK4 of three bodies on length-3 arrays, 140,000 records): 13 to
2 µs per operation.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np

from tape.debug.nans import caller
from tape.records._recorders import FORWARD, Var
from tape.records.handles import new
from tape.records.storage import Storage

LOOP = 16  # at most this many elements go through the loop
Rows: TypeAlias = "list[int] | range"  # record indices


def record(t: Storage, code: int, ia: Rows, ib: Rows | None = None, c: float | None = None) -> int:
    """Append record ``code`` of ia[k] and ib[k] (or of ia[k] and the number c, one slot of the
    constant pool each, as the NumPy path writes, or of ia[k] alone) for every k; return the first
    new row."""
    value = FORWARD[code]
    n, count = t._n, len(ia)
    if n + count > t._capacity:
        t._grow(n + count)
    ops, in0, in1, vals = t._op_w, t._in0_w, t._in1_w, t._val_w
    if c is not None:
        j = t._n_consts
        if j + count > t._consts_capacity:
            t._grow_consts(max(2 * t._consts_capacity, j + count))
        pool = t._consts_w
        for r, i, slot in zip(range(n, n + count), ia, range(j, j + count), strict=True):
            pool[slot] = c
            ops[r] = code
            in0[r] = i
            in1[r] = slot
            vals[r] = value(vals[i], c)
        t._n_consts = j + count
    elif ib is not None:
        for r, i, j in zip(range(n, n + count), ia, ib, strict=True):
            ops[r] = code
            in0[r] = i
            in1[r] = j
            vals[r] = value(vals[i], vals[j])
    else:
        for r, i in zip(range(n, n + count), ia, strict=True):
            ops[r] = code
            in0[r] = i
            vals[r] = value(vals[i], 0.0)
    t._n = n + count
    if t._lines is not None:
        t._lines.update(dict.fromkeys(range(n, n + count), caller()))
    return n


def binary(codes: tuple[int, int, int, bool], x: Any, y: Any, array: type[Any]) -> Any:
    """The VarArray (class ``array``) of x <op> y by the loop, where codes are the op's for
    two records, a record and a number, a number and a record, and whether the number is negated
    (x - c is x + (-c)), -1 for an op without const ops; None where the loop does not apply."""
    seg = x._seg if type(x) is array else y._seg if type(y) is array else None
    if seg is None or not seg.live:
        return None  # no VarArray (a Var with a NumPy array), or stale
    a, b = _operand(x, seg, array), _operand(y, seg, array)
    if a is None or b is None:
        return None
    (ra, sa), (rb, sb) = a, b
    shape = sa or sb
    if sa and sb and sa != sb or not shape:
        return None  # broadcasting of two arrays, or no array at all
    pair, var_c, c_var, negate = codes
    if var_c < 0 and (type(ra) is float or type(rb) is float):
        return None  # no const op: the NumPy path records the number as a constant record
    if type(rb) is float:
        count = len(ra)
        n = record(seg.tape, var_c, ra, c=-rb if negate else rb)
    elif type(ra) is float:
        count = len(rb)
        n = record(seg.tape, c_var, rb, c=ra)
    else:
        count = max(len(ra), len(rb))
        n = record(seg.tape, pair, ra if sa else ra * count, rb if sb else rb * count)
    return fresh(array, seg, range(n, n + count), shape)


def unary(code: int, x: Any, array: type[Any]) -> Any:
    """The VarArray of unary op ``code`` on a small VarArray x by the loop, or None."""
    operand = _operand(x, x._seg, array)
    if not x._seg.live or operand is None:
        return None
    rows, shape = operand
    n = record(x._seg.tape, code, rows)
    return fresh(array, x._seg, range(n, n + len(rows)), shape)


def total(code: int, x: Any) -> Var | None:
    """The sum (code add) or product (mul) of all of a small VarArray's elements by the loop, as
    tape/arrays/varray.py's reduce records it: pairwise, one level after the other (in one loop, as each
    level's rows are known before it is recorded); or None."""
    operand = _operand(x, x._seg, type(x))
    if not x._seg.live or operand is None:
        return None
    t = x._seg.tape
    rows, ia, ib, n = list(operand[0]), [], [], t._n
    while len(rows) > 1:
        pairs = len(rows) // 2
        ia += rows[0:2 * pairs:2]
        ib += rows[1:2 * pairs:2]
        rows = list(range(n, n + pairs)) + rows[2 * pairs:]
        n += pairs
    if ia:
        record(t, code, ia, ib)
    return Var._at(x._seg, rows[0])


def fresh(array: type[Any], seg: Any, rows: Any, shape: tuple[int, ...], view: Any = None) -> Any:
    """A VarArray of rows (new ones in C order: a range) or of a view, without its __init__."""
    out: Any = new(array)
    out._seg, out._rows, out._view, out._shape = seg, rows, view, shape
    return out


def _operand(x: Any, seg: Any, array: type[Any]) -> tuple[Any, tuple[int, ...]] | None:
    """(indices as a list, shape) of a small VarArray or a Var on segment seg, (float, ()) of a real
    Python number, None for anything the loop does not take."""
    kind = type(x)
    if kind is array:
        rows = x._rows
        if x._seg is not seg or x._view is not None:
            return None
        if type(rows) is range:
            return (rows, x._shape) if 0 < len(rows) <= LOOP else None
        return (rows.ravel().tolist(), x._shape) if 0 < rows.size <= LOOP else None
    if kind is Var:
        return ([x._index], ()) if x._seg is seg else None
    if kind is float or kind is np.float64 or kind is int and abs(x) <= 2**1023:
        return float(x), ()
    return None
