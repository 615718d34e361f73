"""Making arrays of Vars inside tape.jit functions: ``np.empty/zeros/ones/full(shape, dtype=xs.dtype)``
and ``np.empty_like/zeros_like/ones_like/full_like(a)`` of a Var array (tape/compiled/arrays.py).

The compiler pass turns these eight NumPy functions into tape's stand-ins (compiler_pass.MAKERS);
their overloads here make a Var array on the tape ``xs.dtype`` carries, every element a number or
never written (np.empty's), and hand every other call to NumPy's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.extending import overload

from tape.compiled.arrays import NUMBER, UNWRITTEN, fresh, is_array
from tape.compiled.compiler_pass import MAKERS
from tape.compiled.numba_internals import types, var_dtype_type
from tape.compiled.recording import is_number, jit


@jit
def _filled(p, shape, fill, written):
    """A Var array of that shape on the tape p points to: every element the number fill, or unwritten."""
    out = fresh(p, shape)
    out.rows[:], out.vals[:] = NUMBER if written else UNWRITTEN, fill
    return out


def _absent(dtype) -> bool:
    return dtype is None or isinstance(dtype, (types.NoneType, types.Omitted))


def _maker(fn, fill: float, written: bool):
    """np.empty/zeros/ones(shape, dtype): of ``dtype=xs.dtype`` a Var array, else NumPy's."""
    def typer(shape, dtype=None):
        if dtype is var_dtype_type:
            return lambda shape, dtype=None: _filled(dtype.tape, shape, fill, written)
        return (lambda shape, dtype=None: fn(shape)) if _absent(dtype) else lambda shape, dtype=None: fn(shape, dtype)
    return typer


def _like(fn, fill: float, written: bool):
    """np.empty_like/zeros_like/ones_like(a, dtype): of a Var array a Var array, else NumPy's."""
    def typer(a, dtype=None):
        if is_array(a):
            return lambda a, dtype=None: _filled(a.tape, a.rows.shape, fill, written)
        return (lambda a, dtype=None: fn(a)) if _absent(dtype) else lambda a, dtype=None: fn(a, dtype)
    return typer


def _full(shape, fill_value, dtype=None):
    if dtype is var_dtype_type and is_number(fill_value):
        return lambda shape, fill_value, dtype=None: _filled(dtype.tape, shape, fill_value, True)
    if _absent(dtype):
        return lambda shape, fill_value, dtype=None: np.full(shape, fill_value)
    return lambda shape, fill_value, dtype=None: np.full(shape, fill_value, dtype)


def _full_like(a, fill_value, dtype=None):
    if is_array(a) and is_number(fill_value):
        return lambda a, fill_value, dtype=None: _filled(a.tape, a.rows.shape, fill_value, True)
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
