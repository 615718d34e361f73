"""Exceptions raised by `tape`."""


class TapeError(Exception):
    """Base class of every error `tape` raises on purpose."""


class ForeignHandleError(TapeError, ValueError):
    """A handle was used with a tape that did not record it."""


class StaleHandleError(TapeError, ValueError):
    """A handle's record was discarded by ``Tape.clear()`` or ``Tape.rewind()``."""


class TapeFullError(TapeError, OverflowError):
    """The tape cannot hold more records: indices are 32-bit."""


class BranchChanged(TapeError):
    """A replay input makes a recorded comparison come out the other way.

    The tape holds the operations of the branch taken when it was recorded, so
    its values would be those of the wrong branch. ``row`` is the comparison's
    record and ``where`` the Python source line that recorded it.
    """

    def __init__(self, message: str, row: int, where: str):
        super().__init__(message)
        self.row, self.where = row, where


class TracingWarning(UserWarning):
    """A traced function did something a replay cannot follow (it read ``.value``)."""


class TracingError(TapeError):
    """What TracingWarning warns of, under ``strict=True`` (tape.trace, tape.grad, tape.value_and_grad)."""


class TapeFormatError(TapeError, ValueError):
    """A saved tape file is malformed, corrupted or of an unknown format version."""


class NonFiniteError(TapeError, FloatingPointError):
    """A value or adjoint became inf or NaN; the message names the record where it started."""

    def __init__(self, message: str, row: int):
        super().__init__(message)
        self.row = row


class DistributedError(TapeError, RuntimeError):
    """A chunk of points failed on a Dask worker."""


class JitError(TapeError, TypeError):
    """A tape.jit function uses what cannot be recorded; the first line says what and where."""
