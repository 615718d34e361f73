"""The one check of numbers from outside, at every entry point (Tape.var/vars/array, trace, calls)."""

from __future__ import annotations

import math
import numbers

import numpy as np


def real_array(values: object, what: str) -> np.ndarray:
    """values as a C-contiguous float64 array, or a TypeError naming what expected real numbers.

    The one check of numbers from outside, at every entry point: None, strings, complex numbers
    and objects are refused, never turned into NaN, parsed or truncated.
    """
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:  # ragged sequences
        raise TypeError(f"{what} expects real numbers: {exc}") from None
    if array.dtype.kind not in "fiub":
        raise TypeError(f"{what} expects real numbers, got {array.dtype} from {type(values).__name__}")
    return np.asarray(array, dtype=np.float64, order="C")  # 0-d stays 0-d (not so with ascontiguousarray)


def positive_int(value: object, what: str) -> int:
    """value as an int if it is a whole number >= 1 (Python or NumPy, not a bool), else a TypeError
    (not an int) or ValueError (< 1) naming what."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{what} must be a positive int, got {value!r} ({type(value).__name__})")
    if int(value) < 1:
        raise ValueError(f"{what} must be a positive int, got {value!r}")
    return int(value)


def positive_step(value: object, what: str) -> float:
    """value as a float if it is a real number > 0 and finite, else a TypeError or ValueError naming what."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{what} must be a positive finite number, got {value!r} ({type(value).__name__})")
    if not (math.isfinite(float(value)) and float(value) > 0):
        raise ValueError(f"{what} must be a positive finite number, got {value!r}")
    return float(value)

