"""np.linalg inside tape.jit: solve, inv, det, slogdet, cholesky, eigh (eigvalsh), qr and svd (svdvals) of array
records (and NumPy arrays meeting solve's), one record each, as tape/arrays/linalg.py records them (its values NumPy's,
array_calls.by_numpy: the same bits; eigh's, qr's and svd's factors views of their one record's rows, a tuple where
NumPy gives a named one). Matrices of two to DIMS axes, batched over the leading ones; solve's b a vector (of a 2-d a)
or matrices. NumPy's errors: a LinAlgError for fewer than two axes, a matrix not square, a singular one (solve, inv)
or one not positive definite (cholesky), a ValueError for shapes that do not fit; the call then leaves the tape as it
was. As the Python recorder, qr takes tall matrices (mode 'reduced' or 'r') and svd a full U or Vh of square ones
only (NotImplementedError); qr's mode and svd's compute_uv must be constants."""

from __future__ import annotations

import numpy as np
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.np.unsafe.ndarray import to_fixed_tuple

from tape.compiled.array_overloads import _pointers, is_data, is_record, maker, operand, view
from tape.compiled.array_records import CHOLESKY, DET, EIGH, INV, OL, OS, QR, SLOGDET, SOLVE, SVD, written
from tape.compiled.array_rows import DIMS
from tape.compiled.composed import _given
from tape.compiled.overload_cache import overload
from tape.compiled.recording import jit

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


_refusing = jit(_refused)  # (called by the factorizations' typers, of their own signatures, their results a's)


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


def _rower(ndim: int):
    """(y, k) -> row k of the last-but-one axis of a record of ndim axes (that axis dropped): a view."""
    less = ndim - 1  # (to_fixed_tuple's length: a constant of the closure)

    @jit
    def row(y, k):
        n, s, j = np.empty(less, np.int64), np.empty(less, np.int64), 0
        for d in range(ndim):
            if d != ndim - 2:
                n[j], s[j], j = y.shape[d], y.strides[d], j + 1
        return view(y, k * y.strides[ndim - 2], to_fixed_tuple(n, less), to_fixed_tuple(s, less))
    return row


ROW = {ndim: _rower(ndim) for ndim in range(2, DIMS + 1)}


@jit
def _rows(y, start, stop):
    """Rows start:stop of the last-but-one axis of y: a view."""
    d = len(y.shape) - 2
    return view(y, start * y.strides[d], tuple_setitem(y.shape, d, stop - start), y.strides)


def _factorer(code: int, ndim: int):
    """(p, q, a) -> the np.linalg record ``code`` of a, of ndim axes (kernels/linalg.py's packed factors)."""
    make = maker(ndim)

    @jit
    def factored(p, q, a):
        o = operand(p, q, a)
        return make(p, q, written(p, q, code, 0, 0.0, o, o))
    return factored


FACTORED = {(code, ndim): _factorer(code, ndim) for code in (EIGH, QR, SVD) for ndim in range(2, DIMS + 1)}


def eigh_typer(a, UPLO="L"):  # noqa: N803  NumPy's name
    """np.linalg.eigh: (w, V), rows 0 and 1: of one record of a's lower triangle (of its transpose for UPLO 'U')."""
    if not is_record(a):
        return None
    if _fewer(a):
        return lambda a, UPLO="L": (_refusing(a), a)
    factored, row = FACTORED[EIGH, a.ndim], ROW[a.ndim]

    def eigh(a, UPLO="L"):  # noqa: N803
        if UPLO != "L" and UPLO != "U":
            raise ValueError("UPLO argument must be 'L' or 'U'")
        y = factored(a.tape, a.arrays, a if UPLO == "L" else a.swapaxes(-2, -1))
        return row(y, 0), _rows(y, 1, y.shape[-2])
    return eigh


def eigvalsh_typer(a, UPLO="L"):  # noqa: N803  NumPy's name
    return (lambda a, UPLO="L": np.linalg.eigh(a, UPLO)[0]) if is_record(a) else None


@jit
def _tall(a):
    """(m, n) of a's matrices: NotImplementedError where m < n (a wide matrix's Q, as the Python recorder)."""
    m, n = a.shape[-2], a.shape[-1]
    if m < n:
        raise NotImplementedError("numpy.linalg.qr of array records: of a tall matrix (m >= n) (tape.jit)")
    return m, n


def qr_typer(a, mode="reduced"):
    """np.linalg.qr of a tall matrix: (Q, R), or R for mode 'r' (a constant), rows of one record."""
    if not is_record(a) or not _given(mode, "reduced", "r"):
        return None
    given = "r" if _given(mode, "r") else "reduced"
    if _fewer(a):
        return (lambda a, mode="reduced": _refusing(a)) if given == "r" else (
            lambda a, mode="reduced": (_refusing(a), a))
    factored = FACTORED[QR, a.ndim]

    def qr(a, mode="reduced"):
        m, n = _tall(a)
        y = factored(a.tape, a.arrays, a)
        return _rows(y, 0, m), _rows(y, m, m + n)

    def r(a, mode="reduced"):
        m, n = _tall(a)
        return _rows(factored(a.tape, a.arrays, a), m, m + n)
    return r if given == "r" else qr


def svd_typer(a, full_matrices=True, compute_uv=True, hermitian=False):
    """np.linalg.svd: (U, s, Vh), or s (compute_uv a constant), rows of one record; a full U or Vh of a square matrix
    only."""
    if not is_record(a) or not _given(compute_uv, True, False):
        return None
    uv = _given(compute_uv, True)
    if _fewer(a):
        return (lambda a, full_matrices=True, compute_uv=True, hermitian=False: (_refusing(a), a, a)) if uv else (
            lambda a, full_matrices=True, compute_uv=True, hermitian=False: _refusing(a))
    factored, row = FACTORED[SVD, a.ndim], ROW[a.ndim]

    def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
        m, n = a.shape[-2], a.shape[-1]
        if full_matrices and m != n:
            raise NotImplementedError("numpy.linalg.svd of array records of a non-square matrix: pass "
                                      "full_matrices=False (tape.jit)")
        y = factored(a.tape, a.arrays, a)
        return _rows(y, 0, m), row(y, m), _rows(y, m + 1, m + 1 + n).swapaxes(-2, -1)

    def s(a, full_matrices=True, compute_uv=True, hermitian=False):
        return row(factored(a.tape, a.arrays, a), a.shape[-2])
    return svd if uv else s


def _register() -> None:
    overload(np.linalg.eigh, prefer_literal=True)(eigh_typer)
    overload(np.linalg.eigvalsh, prefer_literal=True)(eigvalsh_typer)
    overload(np.linalg.qr, prefer_literal=True)(qr_typer)
    overload(np.linalg.svd, prefer_literal=True)(svd_typer)
    overload(np.linalg.svdvals)(lambda x: (lambda x: np.linalg.svd(x, False, False)) if is_record(x) else None)
    overload(np.linalg.solve)(solve_typer)
    for fn, code, drop in ((np.linalg.inv, INV, 0), (np.linalg.det, DET, 2), (np.linalg.slogdet, SLOGDET, 1),
                           (np.linalg.cholesky, CHOLESKY, 0)):
        overload(fn)(unary(code, drop))


_register()
