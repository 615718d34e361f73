"""Making arrays of Vars inside tape.jit functions: ``np.empty/zeros/ones/full(shape, dtype=xs.dtype)``
and ``np.empty_like/zeros_like/ones_like/full_like(a)`` of a Var array (tape/compiled/arrays.py; of an array record
a NumPy array of its shape, as the Python recorder's);
joining them: ``np.concatenate``, ``np.stack``, ``np.hstack``, ``np.vstack`` of Var arrays and NumPy
arrays (numbers as constant records first, as tape/arrays/joins.py's concatenate and stack write them).

The compiler pass turns these eight NumPy functions into tape's stand-ins (compiler_pass.MAKERS);
their overloads here make a Var array on the tape ``xs.dtype`` carries, every element a number or
never written (np.empty's), and hand every other call to NumPy's own.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import extending

from tape.compiled.array_overloads import is_record
from tape.compiled.arrays import NUMBER, UNWRITTEN, axis_of, fill, fresh, is_array, is_data, records_of
from tape.compiled.compiler_pass import MAKERS
from tape.compiled.numba_internals import TypingError, types, var_dtype_type
from tape.compiled.overload_cache import overload
from tape.compiled.recording import is_number, jit


@jit
def _filled(p, shape, number, written):
    """A Var array of that shape on the tape p points to: every element the number, or unwritten."""
    out = fresh(p, shape)
    fill(out.rows, out.vals, NUMBER if written else UNWRITTEN, float(number))
    return out


def _absent(dtype) -> bool:
    return dtype is None or isinstance(dtype, (types.NoneType, types.Omitted))


def _flat(shape) -> None:
    """Refuse the shape of a Var array of three axes or more while typing f (a refusal from inside _filled
    would keep the tape alive in Numba's cached error)."""
    if isinstance(shape, types.BaseTuple) and len(shape) > 2:
        raise TypingError(f"tape.jit: Var arrays are 1-d or 2-d, not of shape {shape}")


def _maker(fn, fill: float, written: bool):
    """np.empty/zeros/ones(shape, dtype): of ``dtype=xs.dtype`` a Var array, else NumPy's."""
    def typer(shape, dtype=None):
        if dtype is var_dtype_type:
            _flat(shape)
            return lambda shape, dtype=None: _filled(dtype.tape, shape, fill, written)
        return (lambda shape, dtype=None: fn(shape)) if _absent(dtype) else lambda shape, dtype=None: fn(shape, dtype)
    return typer


def _like(fn, fill: float, written: bool):
    """np.empty_like/zeros_like/ones_like(a, dtype): of a Var array a Var array, of an array record a NumPy array of
    its shape (zeros for empty_like: tape/arrays/methods.py's, no derivative reaches it), else NumPy's."""
    def typer(a, dtype=None):
        if is_array(a):
            return lambda a, dtype=None: _filled(a.tape, a.rows.shape, fill, written)
        if is_record(a):
            return lambda a, dtype=None: np.full(a.shape, fill)
        return (lambda a, dtype=None: fn(a)) if _absent(dtype) else lambda a, dtype=None: fn(a, dtype)
    return typer


def _full(shape, fill_value, dtype=None):
    if dtype is var_dtype_type and is_number(fill_value):
        _flat(shape)
        return lambda shape, fill_value, dtype=None: _filled(dtype.tape, shape, fill_value, True)
    if _absent(dtype):
        return lambda shape, fill_value, dtype=None: np.full(shape, fill_value)
    return lambda shape, fill_value, dtype=None: np.full(shape, fill_value, dtype)


def _full_like(a, fill_value, dtype=None):
    if is_array(a) and is_number(fill_value):
        return lambda a, fill_value, dtype=None: _filled(a.tape, a.rows.shape, fill_value, True)
    if is_record(a) and is_number(fill_value):
        return lambda a, fill_value, dtype=None: np.full(a.shape, float(fill_value))
    if _absent(dtype):
        return lambda a, fill_value, dtype=None: np.full_like(a, fill_value)
    return lambda a, fill_value, dtype=None: np.full_like(a, fill_value, dtype)


_MAKERS: list[tuple[Any, float, bool]] = [(np.empty, 0.0, False), (np.zeros, 0.0, True), (np.ones, 1.0, True)]
_LIKES: list[tuple[Any, float, bool]] = [(np.empty_like, 0.0, False), (np.zeros_like, 0.0, True),
                                         (np.ones_like, 1.0, True)]
for _fn, _fill, _written in _MAKERS:
    overload(MAKERS[_fn])(_maker(_fn, _fill, _written))
for _fn, _fill, _written in _LIKES:
    overload(MAKERS[_fn])(_like(_fn, _fill, _written))
overload(MAKERS[np.full])(_full)
overload(MAKERS[np.full_like])(_full_like)


@jit
def concat_shape(shapes, k):
    """The shape of 2-d pieces joined along axis k."""
    n, m = shapes[0]
    for s in shapes[1:]:
        if s[1 - k] != (m if k == 0 else n):
            raise ValueError("tape.jit: np.concatenate: the pieces' other dimension differs")
        n, m = (n + s[0], m) if k == 0 else (n, m + s[1])
    return n, m


@jit
def stack_shape(shapes, k):
    """The shape of 1-d pieces stacked along axis k (0: as rows)."""
    for s in shapes:
        if s[0] != shapes[0][0]:
            raise ValueError("tape.jit: np.stack: all pieces must have the same shape")
    return (len(shapes), shapes[0][0]) if k == 0 else (shapes[0][0], len(shapes))


def place(out, piece, at, k):
    """Write piece into out from position ``at`` along axis k (a 1-d piece of a stack: row or column at);
    the next position."""


@overload(place)
def _place(out, piece, at, k):
    if out.ndim == 1:
        def row(out, piece, at, k):
            n = piece.rows.shape[0]
            fill(out.rows[at:at + n], out.vals[at:at + n], piece.rows, piece.vals)
            return at + n
        return row
    if piece.ndim == 1:
        def stacked(out, piece, at, k):
            if k == 0:
                fill(out.rows[at], out.vals[at], piece.rows, piece.vals)
            else:
                fill(out.rows[:, at], out.vals[:, at], piece.rows, piece.vals)
            return at + 1
        return stacked

    def block(out, piece, at, k):
        n, m = piece.rows.shape
        if k == 0:
            fill(out.rows[at:at + n], out.vals[at:at + n], piece.rows, piece.vals)
            return at + n
        fill(out.rows[:, at:at + m], out.vals[:, at:at + m], piece.rows, piece.vals)
        return at + m
    return block


@functools.cache
def _joiner(size: int, first: int, ndim: int, stacked: bool) -> Any:
    """np.concatenate (stacked: np.stack) of a tuple of ``size`` pieces of ndim, ``first`` a Var array: one
    line per piece, as the pieces' types differ (layouts, Var or NumPy arrays)."""
    pieces = "".join(f"records_of(arrays[{k}], p), " for k in range(size))
    shapes = "".join(f"pieces[{k}].rows.shape, " for k in range(size))
    shape = (f"stack_shape(({shapes}), k)" if stacked else f"concat_shape(({shapes}), k)" if ndim == 2
             else " + ".join(f"pieces[{k}].rows.shape[0]" for k in range(size)))
    places = "".join(f"    at = place(out, pieces[{k}], at, k)\n" for k in range(size))
    source = (f"def join(arrays, axis=0):\n    p = arrays[{first}].tape\n    pieces = ({pieces})\n"
              f"    k = axis_of(axis, {ndim + stacked})\n    out = fresh(p, {shape})\n    at = 0\n{places}"
              "    return out\n")
    namespace: dict[str, Any] = {"records_of": records_of, "stack_shape": stack_shape, "concat_shape": concat_shape,
                                 "axis_of": axis_of, "fresh": fresh, "place": place}
    exec(compile(source, f"<tape.jit join of {size} pieces>", "exec"), namespace)  # noqa: S102  # our source
    return namespace["join"]


def _join(stacked: bool):
    """The overload of np.concatenate (np.stack) of a tuple of Var arrays and NumPy arrays."""
    def typer(arrays, axis=0):
        kinds = list(getattr(arrays, "types", ()))
        if not isinstance(arrays, types.BaseTuple) or not any(map(is_array, kinds)) or not all(
                is_array(x) or is_data(x) for x in kinds):
            return None
        if len({x.ndim for x in kinds}) != 1 or (stacked and kinds[0].ndim != 1):
            raise TypingError("tape.jit: np.concatenate joins Var arrays of one number of dimensions (1 or 2), "
                              "np.stack 1-d ones (Var arrays are 1-d or 2-d)")
        return _joiner(len(kinds), kinds.index(next(filter(is_array, kinds))), kinds[0].ndim, stacked)
    return typer


# the joins are generated source, which no cache can locate: Numba's overload, compiled in each process
extending.overload(np.concatenate)(_join(False))
extending.overload(np.stack)(_join(True))


def _sided(one_d, two_d):
    """The overload of np.hstack (np.vstack): the join NumPy makes of 1-d pieces (one_d) or of 2-d ones (two_d)."""
    def typer(arrays):
        if _join(False)(arrays) is None:
            return None
        return one_d if arrays.types[0].ndim == 1 else two_d
    return typer


extending.overload(np.hstack)(_sided(lambda arrays: np.concatenate(arrays, 0),
                                     lambda arrays: np.concatenate(arrays, 1)))
extending.overload(np.vstack)(_sided(lambda arrays: np.stack(arrays, 0), lambda arrays: np.concatenate(arrays, 0)))
