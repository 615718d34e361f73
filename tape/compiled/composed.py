"""Functions made of other ops, inside tape.jit: tape.clip, softplus, softmax and log_softmax (tape/api/composed.py),
np.clip, np.square, np.reciprocal, np.outer, np.trace, np.diff and np.linalg.norm, of array records, Var arrays
and Vars (numbers too, for tape's own names): the Python recorder's own functions compiled where they compile, else
written as it writes them (the same ops in the same order, so the same records and numbers). What the ops
themselves refuse, these refuse (a TypingError: f is recorded otherwise)."""

from __future__ import annotations

import inspect

import numpy as np

from tape.api import composed
from tape.api.trace import logsumexp
from tape.arrays import methods, ufuncs
from tape.compiled.array_overloads import is_record
from tape.compiled.arrays import is_array
from tape.compiled.numba_internals import types
from tape.compiled.overload_cache import overload
from tape.compiled.recording import is_var, jit, plain


def _taped(*typs) -> bool:
    """Whether one of the arguments is recorded: an array record, a Var array or a Var."""
    return any(is_record(t) or is_array(t) or is_var(t) for t in typs)


def _given(typ, *allowed) -> bool:
    """Whether an argument's type (or the typer's own default, where it was not passed) is one of ``allowed``."""
    if isinstance(typ, types.Omitted):
        typ = typ.value
    elif isinstance(typ, types.Literal):
        typ = typ.literal_value
    elif isinstance(typ, types.NoneType):
        typ = None
    return any(typ is a or type(typ) is type(a) and typ == a for a in allowed)


def outer(a, b):
    return a.reshape(-1, 1) * b.reshape(1, -1)  # (methods.outer's, which also takes a NumPy array's b)


def _as(impl, when=None):
    """A typer of impl's signature (Numba compares the two, annotations too) that gives impl where ``when`` of the
    arguments' types holds (None: always; else NumPy's own function, Numba's overload of it, takes the rest)."""
    def typer(*args, **kwargs):
        return impl if when is None or when(*args, *kwargs.values()) else None
    typer.__signature__ = inspect.signature(impl)  # type: ignore[attr-defined]
    return typer


def _square_c(a) -> bool:
    """A 2-d Var array in C order (a view in another order, which the driver cannot reshape flat, is refused; an array
    record's trace: tape/compiled/array_arranged.py)."""
    return is_array(a) and a.layout == "C" and a.ndim == 2


@jit
def _lse(v):
    """log Σ exp of a 1-d array, shifted by its largest element (0 where that is not finite), as the array rule."""
    if v.size == 0:
        return -np.inf
    top = np.max(v)
    top = top if np.isfinite(top) else 0.0
    return np.log(np.sum(np.exp(v - top))) + top


@jit
def _line(a, axis):
    """_lse of a 1-d array along its axis."""
    if axis not in (0, -1):
        raise ValueError("tape.logsumexp: axis out of range for a 1-d array")
    return _lse(np.asarray(a, np.float64))


@jit
def _lines(a, axis):
    """_lse of each line of a 2-d array along an axis."""
    x = np.asarray(a, np.float64)
    if axis not in (0, 1, -1, -2):
        raise ValueError("tape.logsumexp: axis out of range for a 2-d array")
    rows = axis in (1, -1)
    out = np.empty(x.shape[0] if rows else x.shape[1])
    for i in range(len(out)):
        out[i] = _lse(np.ascontiguousarray(x[i, :] if rows else x[:, i]))
    return out


def plain_logsumexp(a, axis=None, keepdims=False):
    """tape.logsumexp of a NumPy array (f called with plain numbers): of all its elements (a float), or along an axis
    of a 1-d or 2-d one (keepdims a constant); else None (Numba's TypingError)."""
    if not plain(a):
        return None
    keep = _given(keepdims, True)
    if _given(axis, None) and not keep:
        return lambda a, axis=None, keepdims=False: _lse(np.asarray(a, np.float64).ravel())
    if not isinstance(axis, types.Integer) or a.ndim not in (1, 2) or not (keep or _given(keepdims, False)):
        return None
    if a.ndim == 1:
        return (lambda a, axis=None, keepdims=False: np.full(1, _line(a, axis))) if keep else (
            lambda a, axis=None, keepdims=False: _line(a, axis))
    if not keep:
        return lambda a, axis=None, keepdims=False: _lines(a, axis)
    return lambda a, axis=None, keepdims=False: (_lines(a, axis).reshape(-1, 1) if axis in (1, -1) else
                                                 _lines(a, axis).reshape(1, -1))


def _register() -> None:
    """The Python recorder's own functions, compiled: one source for both recorders' records."""
    for fn in (composed.clip, composed.softplus, composed.log_softmax, composed.softmax):
        overload(fn, prefer_literal=True)(_as(fn))
    overload(np.clip)(_as(composed.clip, _taped))
    overload(np.square)(_as(ufuncs.square, _taped))
    overload(np.reciprocal)(_as(ufuncs.reciprocal, _taped))
    overload(np.trace)(_as(methods.strided_trace, _square_c))  # (the Python recorder's trace of a C-order region)
    overload(np.outer)(lambda a, b: outer if _taped(a, b) and not (is_var(a) or is_var(b)) else None)
    overload(np.diff)(diff_typer)
    overload(logsumexp, prefer_literal=True)(plain_logsumexp)
    overload(np.linalg.norm)(norm_typer)


def diff_typer(a, n=1, axis=-1):
    """np.diff along the last axis of a 1-d or 2-d array record or Var array: n differences of neighbours."""
    if not (is_record(a) or is_array(a)) or a.ndim not in (1, 2) or not _given(axis, -1, a.ndim - 1):
        return None
    if a.ndim == 1:
        def diff(a, n=1, axis=-1):
            for _ in range(n):
                a = a[1:] - a[:-1]
            return a
        return diff

    def diff2(a, n=1, axis=-1):
        for _ in range(n):
            a = a[:, 1:] - a[:, :-1]
        return a
    return diff2


def norm_typer(x, ord=None, axis=None, keepdims=False):  # noqa: A002  NumPy's name
    """np.linalg.norm(x) of an array record or Var array: the 2-norm of all its elements, sqrt(sum(x * x)) (slope 0
    at 0, as the Python recorder's); of an array record along an int axis, sqrt(sum(x * x, axis)), keepdims a
    constant (other orders and axes: the Python recorder's)."""
    if is_record(x) and _given(ord, None) and isinstance(axis, types.Integer):
        if _given(keepdims, True):
            return lambda x, ord=None, axis=None, keepdims=False: (x * x).sum(axis=axis, keepdims=True) ** 0.5
        return (lambda x, ord=None, axis=None, keepdims=False: (x * x).sum(axis=axis) ** 0.5) if _given(
            keepdims, False) else None
    if not (is_record(x) or is_array(x)) or not all(_given(t, None) for t in (ord, axis)) or not _given(
            keepdims, False):
        return None

    def norm(x, ord=None, axis=None, keepdims=False):
        return (x * x).sum() ** 0.5
    return norm


_register()
