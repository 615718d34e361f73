"""What a tape.jit function returns, as its driver hands it back: Vars, numbers, a tuple or list of them, an array of
Vars or an array record (``outputs``: indices, values and form)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import extending

from tape.compiled.arrays import array_output, is_array
from tape.compiled.numba_internals import ArrayRecordType, TypingError, types
from tape.compiled.overload_cache import overload
from tape.compiled.recording import SEQUENCE, is_number, is_var, one_output, var_of
from tape.compiled.recording import jit as internal


def outputs(out):
    """(indices, values, form) of what f returned (index -1: a number, not recorded; form: ONE,
    SEQUENCE or a Var array's shape)."""


@overload(outputs)
def _outputs(out):
    if is_var(out):
        return one_output
    if is_number(out):
        return lambda out: one_output(var_of(out))
    if is_array(out):
        return lambda out: array_output(out)
    if isinstance(out, ArrayRecordType):
        return lambda out: record_output(out)
    if isinstance(out, types.List) and (is_var(out.dtype) or is_number(out.dtype)):
        def listed(out):
            idx, vals = np.empty(len(out), np.int64), np.empty(len(out))
            for k in range(len(out)):
                w = var_of(out[k])
                idx[k], vals[k] = w.index, w.c
            return idx, vals, SEQUENCE
        return listed
    if _tuple_of_vars(out):
        return None  # _tuple_outputs: its implementation is generated source, which no cache can locate
    raise TypingError(f"tape.jit: f returns {out}; return a Var, a number, or a tuple or list of them (Vars inside "
                      "other containers would outlive the tape they point into)")


RECORD = np.full(1, -2, np.int64)  # the form of an array record f returns


@internal
def record_output(a):
    """A view of an array record f returns, as the driver reports outputs: (record, start, shape, strides) in
    array_plans.view_of's order; form RECORD."""
    return np.array((a.record, a.start) + a.shape + a.strides, np.int64), np.zeros(1), RECORD


def _tuple_of_vars(out):
    return isinstance(out, types.BaseTuple) and all(is_var(v) or is_number(v) for v in out.types)


@extending.overload(outputs)
def _tuple_outputs(out):
    return _tupled(len(out.types)) if _tuple_of_vars(out) else None


@functools.cache
def _tupled(size: int) -> Callable[..., Any]:
    """outputs of a tuple of ``size`` Vars and numbers in any mix: one line per element, as
    literal_unroll does not take a tuple of mixed types here."""
    lines = [f"    w = var_of(out[{k}])\n    idx[{k}], vals[{k}] = w.index, w.c\n" for k in range(size)]
    source = (f"def tupled(out):\n    idx, vals = np.empty({size}, np.int64), np.empty({size})\n"
              + "".join(lines) + "    return idx, vals, SEQUENCE\n")
    namespace: dict[str, Any] = {"np": np, "var_of": var_of, "SEQUENCE": SEQUENCE}
    exec(compile(source, f"<tape.jit outputs of a {size}-tuple>", "exec"), namespace)  # noqa: S102  # our source
    return namespace["tupled"]


__all__ = ["outputs", "RECORD", "record_output"]
