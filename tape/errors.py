"""Exceptions raised by `tape`."""


class TapeError(Exception):
    """Base class of every error `tape` raises on purpose."""


class ForeignHandleError(TapeError, ValueError):
    """A handle was used with a tape that did not record it."""


class StaleHandleError(TapeError, ValueError):
    """A handle's record was discarded by ``Tape.clear()`` or ``Tape.rewind()``."""


class TapeFullError(TapeError, OverflowError):
    """The tape cannot hold more records: indices are 32-bit."""
