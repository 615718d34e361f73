"""numpy.linalg and scipy.linalg on VarArrays: one array record per factorization or solve (kernels/linalg.py).

A matrix of scalar records (under 1024 elements) is packed into one array record first and the result
is an array record too: per-element records of an LU or a Cholesky factor would be thousands of records
of no use to anyone, and one record's rule (Giles', Murray's) is exact where unrolled records would
divide by pivots. Batched over leading axes as NumPy. NumPy's errors come before anything is recorded:
a singular matrix (solve, inv), one not positive definite (cholesky), one not square. SciPy's functions
are not NumPy-dispatched: ``tape.linalg`` holds them (solve_triangular, cho_factor, cho_solve, lu_factor,
lu_solve), and passes plain arrays on to SciPy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tape.arrays.operands import as_view, common_tape, operands
from tape.records import array_records
from tape.records._recorders import Var
from tape.records.storage import Storage
from tape.sweeps.driver import View, view


def _shape(x: Any) -> tuple[int, ...]:
    return x.shape if hasattr(x, "shape") else np.shape(x)


def _views(name: str, *arrays: Any, square: bool = True) -> tuple[Storage, list[View]]:
    parts = operands(*arrays)
    t = None if parts is None else common_tape(parts)
    if parts is None or t is None:
        raise TypeError(f"{name} takes VarArrays of one tape and numbers")
    views = [as_view(t, rt is not None, p) for rt, p in parts]
    a = views[0].shape
    if len(a) < 2:
        raise np.linalg.LinAlgError(f"{len(a)}-dimensional array given. Array must be at least two-dimensional")
    if square and a[-1] != a[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    return t, views


# NumPy's named results ((w, V) with .eigenvalues and .eigenvectors, ...), taken from NumPy itself
_NAMED: list[Any] = [type(f(np.eye(1))) for f in (np.linalg.eigh, np.linalg.slogdet, np.linalg.qr, np.linalg.svd)]
EIGH, SLOGDET, QR, SVD = _NAMED
ARRAY: list[type] = []  # VarArray, set by tape/arrays/varray.py (which imports this module for its table)


def _out(t: Storage, v: View) -> Any:
    """A record's view as a VarArray (a Var for 0-d)."""
    if not v.shape:
        return Var._at(t._segment(), array_records.elem(t, v))
    return ARRAY[0](t._segment(), None, v)


def _record(name: str, a: Any) -> tuple[Storage, View]:
    t, (v,) = _views(f"numpy.linalg.{name}", a)
    return t, array_records.computed(t, name, v)


def _solve(name: str, a: Any, b: Any, vector: bool) -> Any:
    """a⁻¹ b for the solve records; b a vector (read as one column) where ``vector``."""
    t, (va, vb) = _views(name, a, b)
    if vector:
        vb = View(vb.record, vb.offset, (*vb.shape, 1), (*vb.strides, 0))
    if len(vb.shape) < 2 or vb.shape[-2] != va.shape[-1]:
        raise ValueError(f"{name}: a of shape {va.shape} and b of shape {vb.shape[:-1] if vector else vb.shape}")
    x = array_records.computed(t, name, va, vb)
    return _out(t, array_records.index(t, x, (..., 0)) if vector else x)


def solve(a: Any, b: Any) -> Any:
    """numpy.linalg.solve: b a vector when it is 1-d (NumPy 2's rule), else matrices (..., n, k)."""
    return _solve("solve", a, b, len(_shape(b)) == 1)


def inv(a: Any) -> Any:
    return _out(*_record("inv", a))


def det(a: Any) -> Any:
    return _out(*_record("det", a))


def slogdet(a: Any) -> Any:
    """(sign, log |det a|); the sign has no derivative."""
    t, y = _record("slogdet", a)
    return SLOGDET(_out(t, array_records.index(t, y, (..., 0))), _out(t, array_records.index(t, y, (..., 1))))


def cholesky(a: Any, /, *, upper: bool = False) -> Any:
    """L with L Lᵀ = a, a's lower triangle read as NumPy does (for upper, U = Lᵀ from the upper triangle)."""
    t, (v,) = _views("numpy.linalg.cholesky", a)
    y = array_records.computed(t, "cholesky", _mT(v) if upper else v)
    return _out(t, _mT(y) if upper else y)


def eigh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803  NumPy's name
    """(w, V), eigenvalues ascending; at equal eigenvalues see kernels/linalg.py."""
    t, (v,) = _views("numpy.linalg.eigh", a)
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    y = array_records.computed(t, "eigh", v if UPLO == "L" else _mT(v))
    return EIGH(_rows(t, y, 0, None)[..., 0, :], _rows(t, y, 1, None))


def eigvalsh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803  NumPy's name
    return eigh(a, UPLO)[0]


def _mT(v: View) -> View:  # noqa: N802  NumPy's name
    return array_records.transpose(v, (*range(len(v.shape) - 2), len(v.shape) - 1, len(v.shape) - 2))


def matrix_power(a: Any, n: int) -> Any:
    """a to the integer power n by repeated squaring (matmul records; inv first for n < 0)."""
    shape = _shape(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    if n < 0:
        a, n = inv(a), -n
    result = None
    while n:
        if n & 1:
            result = a if result is None else result @ a
        n >>= 1
        if n:
            a = a @ a
    return result if result is not None else np.broadcast_to(np.eye(shape[-1]), shape).copy()


def _rows(t: Storage, y: View, start: int, stop: int | None) -> Any:
    """Rows start:stop of a packed record's last two axes (qr's Q and R, svd's U, s and V): a view."""
    return _out(t, array_records.index(t, y, (..., slice(start, stop), slice(None))))


def qr(a: Any, mode: str = "reduced") -> Any:
    """numpy.linalg.qr of tall matrices (m >= n): (Q, R) for "reduced", R for "r"."""
    t, (v,) = _views("numpy.linalg.qr", a, square=False)
    m, n = v.shape[-2:]
    if m < n or mode not in ("reduced", "r") and not (mode == "complete" and m == n):
        raise NotImplementedError(f"numpy.linalg.qr on VarArrays: mode 'reduced' or 'r' of a tall matrix (m >= n), "
                                  f"not mode {mode!r} of {m} x {n} (a wide or complete Q is not unique)")
    y = array_records.computed(t, "qr", v)
    return _rows(t, y, m, None) if mode == "r" else QR(_rows(t, y, 0, m), _rows(t, y, m, None))


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    """numpy.linalg.svd: (U, s, Vh), or s; a full U or Vh of a non-square matrix is refused (not unique)."""
    t, (v,) = _views("numpy.linalg.svd", a, square=False)
    m, n = v.shape[-2:]
    if full_matrices and compute_uv and m != n:
        raise NotImplementedError("numpy.linalg.svd on VarArrays of a non-square matrix: pass full_matrices=False "
                                  "(the extra columns of a full U or Vh are not unique, so have no derivative)")
    y = array_records.computed(t, "svd", v)
    s = _out(t, array_records.index(t, y, (..., m, slice(None))))
    vh = _mT(array_records.index(t, y, (..., slice(m + 1, None), slice(None))))
    return SVD(_rows(t, y, 0, m), s, _out(t, vh)) if compute_uv else s


def svdvals(x: Any, /) -> Any:
    return svd(x, compute_uv=False)


def matrix_norm(x: Any, ord: Any) -> Any:  # noqa: A002  NumPy's name
    """The 2-norm (largest singular value: a max, k tied share), -2 (smallest) or nuclear norm (their sum)."""
    s = svdvals(x)
    return s.sum(-1) if ord == "nuc" else s.max(-1) if ord == 2 else s.min(-1)


def lstsq(a: Any, b: Any, rcond: float | None = None) -> tuple[Any, Any, int, Any]:
    """numpy.linalg.lstsq of a full-rank a by QR: R⁻¹ Qᵀ b (m >= n), or the least-norm Q R⁻ᵀ b of aᵀ's QR
    (m < n); rank-deficient a is refused (its pseudo-inverse jumps with the rank)."""
    t, (va, _) = _views("numpy.linalg.lstsq", a, b, square=False)
    m, n = va.shape[-2:]
    rank = int(np.linalg.lstsq(view(t, t._aval, va), np.zeros(m), rcond)[2])
    if rank < min(m, n):
        raise NotImplementedError(f"numpy.linalg.lstsq on VarArrays of a rank-deficient matrix (rank {rank} of {m} "
                                  f"x {n}): its least-squares solution has no derivative there")
    a = _out(t, va)
    if m >= n:
        q, r = qr(a)
        x = solve_triangular(r, q.T @ b)
        residuals = ((b - a @ x) ** 2).sum(0, keepdims=len(_shape(b)) == 1) if m > n else np.empty(0)
    else:
        q, r = qr(a.T)
        x = q @ solve_triangular(r, b, trans="T")
        residuals = np.empty(0)
    return x, residuals, rank, svdvals(a)


def _recorded(*arrays: Any) -> bool:
    return any(type(x) is Var or hasattr(x, "_operand") for x in arrays)


def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False, unit_diagonal: bool = False,
                     **scipy: Any) -> Any:
    """scipy.linalg.solve_triangular: a's triangle read; trans 0 ('N'), 1 ('T') or 2 ('C', real: 'T')."""
    if not _recorded(a, b):
        from scipy import linalg  # noqa: PLC0415  only for plain arrays

        return linalg.solve_triangular(a, b, trans, lower, unit_diagonal, **scipy)
    if unit_diagonal:
        raise NotImplementedError("tape.linalg.solve_triangular: unit_diagonal=True is not supported")
    if trans in (1, 2, "T", "C"):
        t, (va, _) = _views("solve_triangular", a, b)
        a, lower = _out(t, _mT(va)), not lower
    elif trans not in (0, "N"):
        raise ValueError(f"invalid trans {trans!r}")
    return _solve("solve_lower" if lower else "solve_upper", a, b, len(_shape(b)) == 1)


def cho_factor(a: Any, lower: bool = False, **scipy: Any) -> tuple[Any, bool]:
    """scipy.linalg.cho_factor: (c, lower), c the factor (its other triangle holds zeros)."""
    if not _recorded(a):
        from scipy import linalg  # noqa: PLC0415  only for plain arrays

        return linalg.cho_factor(a, lower, **scipy)
    return cholesky(a, upper=not lower), lower


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, **scipy: Any) -> Any:
    """scipy.linalg.cho_solve: a⁻¹ b from cho_factor's (c, lower), by two triangular solves."""
    c, lower = c_and_lower
    if not _recorded(c, b):
        from scipy import linalg  # noqa: PLC0415  only for plain arrays

        return linalg.cho_solve(c_and_lower, b, **scipy)
    first, second = (0, 1) if lower else (1, 0)  # L Lᵀ x = b, or Uᵀ U x = b
    return solve_triangular(c, solve_triangular(c, b, first, lower), second, lower)


def lu_factor(a: Any, **scipy: Any) -> tuple[Any, Any]:
    """scipy.linalg.lu_factor: (lu, P), lu SciPy's (L's unit diagonal implied), but P the permutation matrix
    of a = P L U in place of SciPy's pivot indices: a view of the same record, so replay re-pivots."""
    if not _recorded(a):
        from scipy import linalg  # noqa: PLC0415  only for plain arrays

        return linalg.lu_factor(a, **scipy)
    t, (v,) = _views("scipy.linalg.lu_factor", a)
    y = array_records.computed(t, "lu", v)
    n = v.shape[-1]
    return _rows(t, y, 0, n), _rows(t, y, n, None)


def lu_solve(lu_and_p: tuple[Any, Any], b: Any, trans: int = 0, **scipy: Any) -> Any:
    """scipy.linalg.lu_solve: a⁻¹ b (trans 1 or 2: a⁻ᵀ b) from lu_factor's (lu, P), by two triangular solves."""
    lu, perm = lu_and_p
    if not _recorded(lu, perm, b):
        from scipy import linalg  # noqa: PLC0415  only for plain arrays

        return linalg.lu_solve(lu_and_p, b, trans, **scipy)
    if np.ndim(perm) != 2 or np.shape(perm) != np.shape(lu):
        raise TypeError("tape.linalg.lu_solve takes tape.linalg.lu_factor's (lu, P) of one matrix, P a permutation "
                        "matrix, not SciPy's pivot indices")
    n = _shape(lu)[-1]
    unit = lu * np.tri(n, k=-1) + np.eye(n)  # L
    if trans in (0, "N"):
        c = perm.T @ b
        return solve_triangular(lu, solve_triangular(unit, c, lower=True, **scipy), **scipy)
    if trans not in (1, 2, "T", "C"):
        raise ValueError(f"invalid trans {trans!r}")
    return perm @ solve_triangular(unit, solve_triangular(lu, b, trans=1, **scipy), trans=1, lower=True, **scipy)


FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.linalg.solve: solve, np.linalg.inv: inv, np.linalg.det: det, np.linalg.slogdet: slogdet,
    np.linalg.cholesky: cholesky, np.linalg.eigh: eigh, np.linalg.eigvalsh: eigvalsh,
    np.linalg.matrix_power: matrix_power, np.linalg.qr: qr, np.linalg.svd: svd, np.linalg.svdvals: svdvals,
    np.linalg.lstsq: lstsq,
}
