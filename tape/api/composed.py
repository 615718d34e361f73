"""Functions made of recorded ops: their derivatives are the ops' own, so they need no rules.

Each takes Vars, VarArrays and plain numbers (numbers give numbers), and is written
in the numerically careful form: softplus never overflows, softmax and log_softmax
go through the fused logsumexp (shifted by the largest element).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tape.api.trace import logaddexp, logsumexp, maximum, minimum
from tape.arrays.varray import _FUNCTIONS
from tape.records._recorders import exp
from tape.records.handles import FUNCTION_HANDLERS


def softplus(x: Any) -> Any:
    """log(1 + exp(x)) as logaddexp(x, 0), one record: no overflow, softplus' is sigmoid and softplus'' sigmoid's
    slope, 1/4 at 0 (written as max(x, 0) + log1p(exp(-|x|)), the kinks' rules gave 0 there: a wrong Hessian)."""
    return logaddexp(x, 0.0)


def log_softmax(x: Any, axis: int | tuple[int, ...] | None = -1) -> Any:
    """x - logsumexp(x, axis): log-probabilities along axis."""
    return x - logsumexp(x, axis=axis, keepdims=True)


def softmax(x: Any, axis: int | tuple[int, ...] | None = -1) -> Any:
    """exp(log_softmax(x, axis)): probabilities along axis, never exp of a large number."""
    return exp(log_softmax(x, axis))


def clip(x: Any, lo: Any, hi: Any) -> Any:
    """minimum(maximum(x, lo), hi), as numpy.clip: slope 1 inside, 0 outside, 1/2 at lo or hi."""
    return minimum(maximum(x, lo), hi)


_FUNCTIONS[np.clip] = FUNCTION_HANDLERS[np.clip] = clip  # numpy.clip(X, lo, hi) on a VarArray or a Var (NumPy's own
# on a Var compared and picked: slope 1 at a bound, where the VarArray's is 1/2)
