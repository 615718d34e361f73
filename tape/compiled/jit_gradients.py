"""tape.value_and_grad of a jitted f (JitFunction._value_and_grad, tape/api/trace.py's first try): a flat list of
floats or a float array as xs with no Python handle per input, on the tape of the wrapper's last call; an array of
SMALL elements or more as one array record, with no handle, tree or check of f's Python made."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tape.compiled.array_plans import recycling
from tape.compiled.array_records import GATHER
from tape.compiled.packing import Packed
from tape.compiled.recording import NEVER
from tape.debug import nans
from tape.errors import JitError
from tape.function.array_replay import has_nan
from tape.kernels.ops import LEAF
from tape.records import array_records as python_arrays
from tape.sweeps.driver import whole
from tape.tape import _FEW, Tape

if TYPE_CHECKING:
    from tape.compiled.jit import JitFunction

FIRST_CAPACITY = 1 << 16  # records of the tape tape.value_and_grad of f records on (one per thread, reused)


def value_and_grad(self: JitFunction, idle: Any, args: tuple) -> tuple[float, Any] | None:
    """tape.value_and_grad of f at a flat list of floats, or a 1-d or 2-d float array (the gradient an
    array of its shape), with no Python handle per input: the leaves' rows go straight in, on the tape
    of the last call (``idle``, per thread); None where the general path must run (other structures,
    Vars, debug_nans)."""
    x: Any = args[0] if args else None
    array = type(x) is np.ndarray and x.dtype == np.float64 and x.ndim in (1, 2) and x.size > 0
    if not array and (type(x) is not list or not x or not set(map(type, x)) <= {float, int}) or nans.active():
        return None  # Vars (an outer transform's), bools, nesting: the general path says what it does
    k = len(x) if not array else x.size
    if array and k >= python_arrays.small() and self._tries_arrays(x, args[1:]):
        return self._array_value_and_grad(idle, x, args[1:]) if self._arrays_direct else None
    big = python_arrays.small() if array and self._arrays is not False else NEVER
    if big != NEVER and self._packs:
        return None  # packed into one array record: the general path packs it
    t, idle.jit_tape = getattr(idle, "jit_tape", None), None  # taken (a failing f drops it)
    if t is None:  # room for 65,536 records (1.9 MB): a first call that fills it compiles the growth (0.1-0.5 s)
        t = Tape(capacity=max(FIRST_CAPACITY, 4 * k))
    few = not array and k <= _FEW  # Python floats written by memoryviews: a per-call cost
    if few:
        rows = np.arange(t._leaf_records(x), t._n)
    else:
        rows = t._append_block(LEAF, k, values=np.array(x, float).reshape(-1)).reshape(np.shape(x))
    try:
        idx, vals, form = self._record(t, rows.copy(), args[1:], big)  # (f's xs: its assignments leave rows)
    except (Packed, JitError):
        if big == NEVER:
            raise
        t.clear()
        idle.jit_tape, self._packs = t, True  # (a JitError: f may type with an array record)
        return None
    if len(form):
        raise TypeError("f must return a Var or a real number, got a sequence")
    i, value = int(idx[0]), float(vals[0])
    grads: Any = np.zeros(np.shape(x)) if array else [0.0] * k
    if i >= 0:
        value = t._val_w[i]
        grads = t._gradient_and_clear(i, rows)
        grads = grads if array else grads.tolist()
    else:
        t.clear()
    idle.jit_tape = t
    return value, grads


MOST = 4096  # records, at most, of a call whose tape Again keeps as the call left it (compared at the next call)


class Again:
    """The direct path's last call (array_value_and_grad), its tape left as the call left it, not renewed: the next
    call drives f on it as on the renewed tape (``args``: the driver's arguments but data and scratch), and where f
    writes the same records and plan rows (``drove``: their bytes), the tape already holds what _took, adopt and the
    renewal would make again, and none of them runs (bench/array_programs.py's MLP, batch 32: 107-110 -> 88-104 µs a
    call). Else the tape is renewed keeping what f wrote, and the call goes on as any other."""

    __slots__ = ("args", "start", "table", "scratch", "key", "wrote")

    def __init__(self) -> None:
        self.args: tuple | None = None  # (None: the tape is renewed, or new)
        self.start = (0, 0, 0)  # the renewed tape's count of constants, its arena's top, whether f recycled
        self.wrote: tuple | None = None  # this call's (key, start, plan table, its rows' end), for keep
        self.scratch = np.empty(0, np.int64)

    def drive_args(self, data: tuple) -> tuple | None:
        """The driver's arguments for a call on the kept tape (None: none is kept)."""
        return None if self.args is None else (*self.args, data, self.scratch)

    def drove(self, t: Tape, got: tuple, table: np.ndarray, np1: int, aval: np.ndarray, na: int,
              released: np.ndarray, start: tuple[int, int, int]) -> bool:
        """Whether f wrote on the kept tape what it wrote in the last call (the tape is then the call's own); else
        the tape is renewed keeping f's records, as if it had been renewed before f ran (``start``: the renewed
        tape's count of constants, its arena's top, whether f recycled)."""
        op, in0, in1, _, consts, n, nc, checks, *_, wanted = got[0]
        key = (n, nc, np1, na, wanted, table[1:np1].tobytes(), released.tobytes(), op[1:n].tobytes(),
               in0[1:n].tobytes(), in1[1:n].tobytes()) if n <= MOST and not len(checks) else None
        self.wrote = (key, start, table, np1) if key is not None else None
        if self.args is None:
            return False
        if key is not None and key == self.key and table is self.table and op is t._op and consts is t._consts \
                and aval is t._aval:
            return True
        if in0 is t._in0:  # (else Numba grew new arrays, which _took adopts)
            kept = in0[1:n].copy(), in1[1:n].copy()
            t._renew(keep=True)
            t._in0[1:n], t._in1[1:n] = kept
        else:
            t._renew(keep=True)
        self.args = None
        return False

    def keep(self, t: Tape, scratch: int) -> bool:
        """Keep t as this call left it for the next call, where f wrote few records, no checked branch, no gather, no
        call; its driver's arguments are the renewed tape's."""
        if self.args is not None:  # (the call held: its tape is the last call's)
            return True
        if self.wrote is None:
            return False
        key, start, table, np1 = self.wrote
        if (table[1:np1, 0] == GATHER).any() or t._borrowed or t._callees:
            return False
        self.key, self.start, self.table, view = key, start, table, whole(0, t._plans[0])
        nc0, na0, recycle = self.start
        self.args = (t._op, t._in0, t._in1, t._val, t._consts, 1, nc0, 0, view.offset, view.offset, view.shape,
                     view.strides, self.table, 1, t._aval, na0, recycle)
        if len(self.scratch) != scratch:
            self.scratch = np.empty(scratch, np.int64)
        return True


def array_value_and_grad(self: JitFunction, idle: Any, x: np.ndarray, data: tuple) -> tuple[float, np.ndarray] | None:
    """value_and_grad where f records x as an array record (tape.value_and_grad's INPUT record), as the general
    path does it, on its tape (``idle.tape``), with no handle, tree or check of f's Python made (the MLP of
    bench/array_programs.py: 142 -> 117 CPU-µs a call, s24); None where the general path must run (f returns no Var
    nor number; f's operands do not fit array records: from then on always)."""
    t, idle.direct = getattr(idle, "direct", None), None  # (its own: x's INPUT record kept, not the general path's)
    again, idle.again = getattr(idle, "again", None), None  # (t as the last call left it: Again's)
    if t is None or not t._recycling:
        t, again = Tape._afresh(x.size, getattr(idle, "arena", 0)), None
    again = again if again is not None else Again()
    if again.args is not None and (t._plans[0].shape != x.shape or recycling(t, self._written) != again.start[2]):
        t._renew(keep=True)
        again.args = None
    if t._n and t._plans[0].shape == x.shape:  # x's INPUT record kept by _renew: its values written
        view: Any = whole(0, t._plans[0])
        t._aval[t._plans[0].offset:][:x.size] = x.reshape(-1)
    else:
        if t._n:
            t._renew()
        view = t.array(x)._view  # (an array record: x has SMALL elements or more)
    found = self._record_arrays(t, view, data, again)
    if found is None or len(found[2]):
        self._arrays_direct = found is not None
        return None
    i, value, grad = int(found[0][0]), float(found[1][0]), np.zeros(x.shape)
    if i >= 0:
        value = float(t._val_w[i])
        unchecked = t._reverse(i, False, True, False)  # (trace._gradients': checked where a NaN came back)
        grad = t._array_grads(view)
        if unchecked and has_nan(grad):
            t._reverse(i, False, True, True)
            grad = t._array_grads(view)
    idle.arena = t._n_arena
    if t._renewable():
        if again.keep(t, self._arena):
            idle.again = again
        else:
            t._renew(keep=True)
        idle.direct = t
    return value, grad
