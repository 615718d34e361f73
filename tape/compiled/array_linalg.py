"""np.linalg inside tape.jit: solve, inv, det, slogdet and cholesky of array records (and NumPy arrays meeting them),
one record each, as tape/arrays/linalg.py records them (its values NumPy's, array_calls.by_numpy: the same bits).
Matrices of two to DIMS axes, batched over the leading ones; solve's b a vector (of a 2-d a) or matrices. NumPy's
errors: a LinAlgError for fewer than two axes, a matrix not square, a singular one (solve, inv) or one not positive
definite (cholesky), a ValueError for shapes that do not fit; the call then leaves the tape as it was."""

from __future__ import annotations

import numpy as np

from tape.compiled.array_overloads import _pointers, is_data, is_record, maker, operand
from tape.compiled.array_records import CHOLESKY, DET, INV, OL, OS, SLOGDET, SOLVE, written
from tape.compiled.overload_cache import overload

L1, S1 = OL + 1, OS + 1  # an operand's lengths and strides but the first (a vector's, moved left for its column)


def _fewer(*typs) -> bool:
    """Whether a matrix argument has fewer than two axes: NumPy's LinAlgError, raised by f."""
    return any(t.ndim < 2 for t in typs)


def _refused(a):
    if a.ndim < 2:  # (always: f's typing then goes on with a, as it would with NumPy's result)
        raise np.linalg.LinAlgError("Array must be at least two-dimensional (tape.jit: an array record's np.linalg)")
    return a


def _refused_solve(a, b):
    return _refused(a)


def unary(code: int, drop: int):
    """The typer of np.linalg.<code>(a): one record of a's shape less its last ``drop`` axes (det 2, slogdet 1: then
    (sign, log |det|), read as NumPy's pair; inv and cholesky 0)."""
    def typer(a):
        if not is_record(a):
            return None
        if _fewer(a):
            return _refused
        make = maker(a.ndim - drop)
        if code != SLOGDET:
            def impl(a):
                o = operand(a.tape, a.arrays, a)
                return make(a.tape, a.arrays, written(a.tape, a.arrays, code, 0, 0.0, o, o))
            return impl
        if a.ndim > 3:
            return None

        def pair(a):
            o = operand(a.tape, a.arrays, a)
            y = make(a.tape, a.arrays, written(a.tape, a.arrays, code, 0, 0.0, o, o))
            return y[0], y[1]

        def pairs(a):
            o = operand(a.tape, a.arrays, a)
            y = make(a.tape, a.arrays, written(a.tape, a.arrays, code, 0, 0.0, o, o))
            return y[:, 0], y[:, 1]
        return pair if a.ndim == 2 else pairs
    return typer


def solve_typer(a, b):
    """np.linalg.solve(a, b): b a vector where it has one axis (NumPy 2's rule; of a 2-d a), read as one column,
    else matrices (..., n, k)."""
    if not (is_record(a) or is_record(b)) or not all(is_record(v) or is_data(v) for v in (a, b)):
        return None
    if _fewer(a):
        return _refused_solve
    pointers = _pointers(a, b)
    if b.ndim > 1:
        make = maker(max(a.ndim, b.ndim))

        def matrices(a, b):
            p, q = pointers(a, b)
            x = operand(p, q, a)
            return make(p, q, written(p, q, SOLVE, 0, 0.0, x, operand(p, q, b)))
        return matrices
    if a.ndim != 2:
        return None
    make = maker(2)

    def vector(a, b):
        p, q = pointers(a, b)
        x = operand(p, q, a)
        y = operand(p, q, b)  # (n,) as (n, 1), its last stride 0: tape/arrays/linalg.py's _solve
        column = (y[0], y[1], y[2], 2) + y[L1:OS] + (1,) + y[S1:] + (0,)
        return make(p, q, written(p, q, SOLVE, 0, 0.0, x, column))[:, 0]
    return vector


def _register() -> None:
    overload(np.linalg.solve)(solve_typer)
    for fn, code, drop in ((np.linalg.inv, INV, 0), (np.linalg.det, DET, 2), (np.linalg.slogdet, SLOGDET, 1),
                           (np.linalg.cholesky, CHOLESKY, 0)):
        overload(fn)(unary(code, drop))


_register()
