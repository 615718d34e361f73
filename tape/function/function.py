"""tape.Function: a recorded tape replayed at new inputs, and ``tape.load``.

The capabilities stack one module each: tape/function/replay.py (records, value, gradient,
vjp, branch policy, pictures, save), tape/function/derivatives.py (jvp, Jacobian, Hessian),
tape/function/maps.py (many points in parallel, Dask) and tape/function/format.py (the file).
"""

from __future__ import annotations

import os
from typing import BinaryIO

from tape.function import format
from tape.function.maps import Maps
from tape.symbolic import gradient_tapes


class Function(Maps):
    """Value, gradient and every derivative of a recorded tape at new inputs, one Numba call each.

    Make one with ``tape.trace(f, x0)`` or ``Tape.function(inputs, outputs)``.
    Safe to share between threads: calls on one Function take turns (F.map runs points in parallel).
    """

    # -- derivatives as Functions (tape/symbolic/gradient_tapes.py): the gradient of a tape is a tape ----------

    def grad_function(self, value: bool = False) -> Function:
        """The gradient as a Function of x (x's shape), its records this Function's followed by the
        reverse sweep as records: replay it, save it, map it, differentiate it again
        (``F.grad_function().jacobian(x)`` is the Hessian). ``value=True``: x -> [f(x), gradient...].
        Checked branches stay checked (BranchChanged, or a retrace, at the same points)."""
        return gradient_tapes.grad_function(self, value)

    def vjp_function(self) -> Function:
        """(x, w) -> w^T J as a Function (x's shape; w in the outputs' shape; call it with the pair
        ``(x, w)`` or one flat vector of both)."""
        return gradient_tapes.vjp_function(self)

    def jvp_function(self, value: bool = False) -> Function:
        """(x, v) -> J v as a Function (the outputs' shape; v in x's shape), the tangents as records
        (forward mode); ``value=True``: [outputs..., J v...]."""
        return gradient_tapes.jvp_function(self, value)


def load(path: str | os.PathLike | BinaryIO, on_branch_change: str | None = None,
         max_bytes: int = format.MAX_BYTES) -> Function:
    """Read a Function saved by ``Function.save``, validating every array first.

    Anything malformed raises ``TapeFormatError`` (naming the first bad record
    where there is one) before any kernel touches the data. A file whose arrays claim
    more than ``max_bytes`` (2 GiB, about 10^8 records) is refused before it is read.
    The saved ``on_branch_change`` and ``check_finite`` come back, except that a loaded
    Function has no Python function to retrace: a saved "retrace" loads as "raise", and
    asking for "retrace" here is a ValueError. The Functions its call records call come back inside
    it, with their own saved options.
    """
    return format.build(Function, format.read(path, max_bytes), on_branch_change)
