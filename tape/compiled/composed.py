"""Functions made of other ops, inside tape.jit: tape.clip, softplus, softmax and log_softmax (tape/api/composed.py),
np.clip, np.square, np.reciprocal, np.outer, np.trace, np.diff and np.linalg.norm, each written as the Python
recorder writes it (the same ops in the same order, so the same records and numbers), of array records, Var arrays
and Vars (numbers too, for tape's own names). What the ops themselves refuse, these refuse (a TypingError: f is
recorded otherwise)."""

from __future__ import annotations

import numpy as np

from tape.api import composed
from tape.api.trace import logsumexp
from tape.compiled.array_overloads import is_record
from tape.compiled.arrays import is_array
from tape.compiled.numba_internals import types
from tape.compiled.overload_cache import overload
from tape.compiled.recording import is_var


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


def clip(x, lo, hi):
    """minimum(maximum(x, lo), hi): tape.clip's (slope 1/2 at lo or hi)."""
    return np.minimum(np.maximum(x, lo), hi)


def softplus(x):
    return np.maximum(x, 0.0) + np.log1p(np.exp(-abs(x)))


def log_softmax(x, axis=-1):
    return x - logsumexp(x, axis=axis, keepdims=True)


def softmax(x, axis=-1):
    return np.exp(x - logsumexp(x, axis=axis, keepdims=True))  # (exp of log_softmax's)


def square(x):
    return x ** 2  # (one pow_c record: exactly x * x, slope exactly 2x)


def reciprocal(x):
    return 1.0 / x


def outer(a, b):
    return a.reshape(-1, 1) * b.reshape(1, -1)


def _register() -> None:
    overload(composed.clip)(lambda x, lo, hi: clip)
    overload(composed.softplus)(lambda x: softplus)
    overload(composed.log_softmax, prefer_literal=True)(lambda x, axis=-1: log_softmax)
    overload(composed.softmax, prefer_literal=True)(lambda x, axis=-1: softmax)
    overload(np.clip)(lambda x, lo, hi: clip if _taped(x, lo, hi) else None)
    overload(np.square)(lambda x: square if _taped(x) else None)
    overload(np.reciprocal)(lambda x: reciprocal if _taped(x) else None)
    overload(np.outer)(lambda a, b: outer if _taped(a, b) and not (is_var(a) or is_var(b)) else None)
    overload(np.trace)(trace_typer)
    overload(np.diff)(diff_typer)
    overload(np.linalg.norm)(norm_typer)


def trace_typer(a):
    """np.trace of a 2-d array record or Var array: the sum of its diagonal, a view of every n + 1st element (the
    Python recorder's; a view not in C order, which the driver cannot reshape, is refused)."""
    if not (is_record(a) or is_array(a) and a.layout == "C") or a.ndim != 2:
        return None

    def trace(a):
        m, n = a.shape
        return a.reshape(-1)[0:min(m, n) * (n + 1):n + 1].sum()
    return trace


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
    at 0, as the Python recorder's; other orders and axes: the Python recorder's)."""
    if not (is_record(x) or is_array(x)) or not all(_given(t, None) for t in (ord, axis)) or not _given(
            keepdims, False):
        return None

    def norm(x, ord=None, axis=None, keepdims=False):
        return (x * x).sum() ** 0.5
    return norm


_register()
