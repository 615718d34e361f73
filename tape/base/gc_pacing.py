"""Pacing CPython's full garbage collections while a big tape records (a process-wide effect, undone).

A program that keeps a handle per record (``nodes.append(x * y)``) holds one live, GC-tracked
object per record. CPython 3.11 runs a full collection whenever the objects that survived into
the oldest generation since the last one reach 25% of those it held then, so each record pays
about four traversals of every live handle: on the 10^6-op random DAG with every handle in a list,
8 full collections took ~430 of ~1,500 ns per record. (Untracked handles are not possible from
Python: every class a ``class`` statement makes is GC-tracked, ``int`` and ``float`` subclasses
included. ``gc.freeze`` would also hide other code's cyclic garbage from the collector, for good if
the tape itself ended up in such a cycle.)

So while a tape that has grown to ``GROWN`` records or more is recording, the third generation
threshold (``gc.get_threshold()[2]``: young-generation collections between full ones) is raised
so that full collections come about once per ``2 * capacity`` tracked allocations instead of once
per 25% growth; young collections, where most cyclic garbage dies, run exactly as before, and
the raise is bounded by the tape's size. The process's thresholds are restored as soon as no such
tape is recording: at the tape's next sweep (``backward``, ``gradient``, ``forward``,
``function``), its ``clear``/``rewind``, or when it is freed. If the program changed the
thresholds itself meanwhile, its values are kept. ``tape.pace_gc(False)`` turns this off.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import weakref
from collections.abc import Iterator
from typing import Any

GROWN = 2**15  # records: below this the full collections cost little
_lock = threading.Lock()
_holders: dict[int, Any] = {}  # id(storage) -> its weakref.finalize, while it holds the raise
_saved: tuple[int, int, int] | None = None  # the program's thresholds before the raise
_ours: tuple[int, int, int] | None = None  # what we set (a change by the program since: theirs wins)
_enabled = True


def pace_gc(enabled: bool = True) -> bool:
    """Whether tapes of more than 2^15 records raise the process's full-collection threshold while
    they record (on by default; see docs/benchmarks.md): ``False`` turns it off (and restores
    the thresholds now). Returns the previous setting."""
    global _enabled
    previous, _enabled = _enabled, bool(enabled)
    if not _enabled:
        with _lock:
            for finalizer in list(_holders.values()):
                finalizer.detach()
            _holders.clear()
            _restore()
    return previous


def pace(storage: object, capacity: int) -> None:
    """``storage`` can now hold ``capacity`` records: raise the full-collection threshold for it."""
    global _saved, _ours
    if not _enabled or capacity < GROWN or not gc.isenabled():
        return
    with _lock:
        current = gc.get_threshold()
        if _saved is None or current != _ours:  # the program's own values, as of now
            _saved = current
        t0, t1, t2 = _saved
        if t0 <= 0:  # automatic collection off: nothing to pace
            return
        want = (t0, t1, max(t2, -(-2 * capacity // (t0 * max(t1, 1)))))
        key = id(storage)
        if key not in _holders:
            _holders[key] = weakref.finalize(storage, _release, key)
            storage._gc_paced = True  # type: ignore[attr-defined]
        if _ours is None or want[2] > _ours[2] or current != _ours:
            gc.set_threshold(*want)
            _ours = want


def release(storage: object) -> None:
    """``storage`` stopped recording (a sweep, a rewind): restore the thresholds if no other tape
    holds the raise. Callers check ``storage._gc_paced`` first (it is cheap)."""
    storage._gc_paced = False  # type: ignore[attr-defined]
    finalizer = _holders.get(id(storage))
    if finalizer is not None:
        finalizer.detach()
        _release(id(storage))


def _release(key: int) -> None:
    with _lock:
        if _holders.pop(key, None) is not None and not _holders:
            _restore()


def _restore() -> None:
    global _saved, _ours
    if _saved is not None and gc.get_threshold() == _ours:
        gc.set_threshold(*_saved)
    _saved = _ours = None


def state() -> tuple[int, tuple[int, int, int] | None]:
    """(tapes holding the raise, the program's thresholds saved), for tests."""
    return len(_holders), _saved


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No automatic collection inside (a Function made from a tape: tape's own passes, no program code, whose
    garbage dies by reference counting). Their plan lists, alive for the whole making, were promoted to the
    oldest generation and set off full collections of every object the process holds: 2 of ~40 CPU-ms each
    in tape.trace of a 4,000-array-record program. Collection is back on after (unless it was off before)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
