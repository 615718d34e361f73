"""The one check of numbers from outside, at every entry point (Tape.var/vars/array, trace, calls)."""

from __future__ import annotations

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
