"""tape.jit: record tapes from Numba-compiled user code.

``@tape.jit`` compiles ``f(xs, *data)`` with Numba, ``xs`` an array of Vars (1-d or 2-d:
tape/compiled/arrays.py), ``data`` arrays and numbers. Called with Vars of a tape (as tape.trace, tape.grad and
tape.value_and_grad call it), it appends to that tape exactly the records the Python
recorder writes for the same source, and returns Vars (a number where f returned one). The
records go straight into the tape's arrays (grown inside Numba when full, then adopted).
Branches on comparisons are checked branches with their file:line.
"""

from __future__ import annotations

import functools
import inspect
import os
import types as types_
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from numba.extending import typeof_impl

from tape.arrays.varray import VarArray
from tape.compiled import (  # noqa: F401  # registers the overloads
    array_arranged,
    array_calls,
    array_einsum,
    array_linalg,
    array_overloads,
    array_plans,
    array_records,
    array_views,
    conditions,
    overloads,
    reshapes,
)
from tape.compiled.by_reference import CALLERS
from tape.compiled.compiler_pass import Pipeline, forget_failures
from tape.compiled.jit_cache import USER_CACHED, cache_as, frozen, refusal, refuse, refused_why
from tape.compiled.jit_errors import check_data, first_line
from tape.compiled.jit_gradients import Again, array_value_and_grad, value_and_grad
from tape.compiled.link_only import LINKED
from tape.compiled.numba_internals import (
    borrowed,
    file_id,
    make_array_record,
    no_life,
    types,
    where_of,
)
from tape.compiled.numba_payload import tape_pointer
from tape.compiled.outputs import RECORD, outputs
from tape.compiled.packing import may_pack, packed
from tape.compiled.recording import (
    NEVER,
    OPTIONS,
    finish,
    inputs,
    install,
    new_tape,
    values,
)
from tape.errors import ForeignHandleError, JitError
from tape.records._recorders import Var
from tape.records.handles import Handle
from tape.tape import Tape

__all__ = ["jit", "JitFunction", "JitError"]
ARENA_MAX = 1 << 24  # elements (128 MiB) at most in a call's arena for Var arrays; beyond, they are allocated


def _driver(user: Any, cache: bool) -> Callable[..., Any]:
    """The jitted entry: f on the tape over the given arrays; the arrays, counts, checks and outputs (cached as
    f is, with cache: a new process loads it, f inside, and compiles nothing). A Var array of ``big`` elements or more
    raises Packed (tape/compiled/packing.py)."""
    @numba.njit(pipeline_class=Pipeline, **{**OPTIONS, "no_cfunc_wrapper": True})  # called from Python only
    def drive(op, in0, in1, val, consts, n, nc, rows, data, arena, big):
        t = new_tape(op, in0, in1, val, consts, n, nc, arena)
        t.big = big
        vals = values(t, rows)  # held here: xs and the data are lent to f (borrowed)
        return finish(t, outputs(user(borrowed(inputs(t, rows, vals)), *borrowed(data))), vals)
    return _kept(drive, user, cache, "-driver")


def _array_driver(user: Any, cache: bool) -> Callable[..., Any]:
    """The jitted entry of f on an array record xs (tape/compiled/array_records.py): as _driver, and the plan rows,
    their count, the arena and its top after f, and the rows of the records released since the last record was written
    (tape/compiled/array_lives.py)."""
    @numba.njit(pipeline_class=Pipeline, **{**OPTIONS, "no_cfunc_wrapper": True})  # called from Python only
    def drive(op, in0, in1, val, consts, n, nc, record, offset, start, shape, strides, plans, np_, aval, na, recycle,
              data, arena):
        t = new_tape(op, in0, in1, val, consts, n, nc, arena)
        s = array_records.new_arrays(plans, np_, aval, na, recycle)
        xs = make_array_record(tape_pointer(t), tape_pointer(s), record, offset, start, shape, strides, no_life())
        done = finish(t, outputs(user(xs, *borrowed(data))), shape)
        array_records.ended(tape_pointer(t), tape_pointer(s))
        return done, (s.plans, s.np, s.aval, s.na, s.released.rows[:s.released.n])
    return _kept(drive, user, cache, "-arrays")


def _kept(drive: Any, user: Any, cache: bool, suffix: str) -> Any:
    """A driver cached as f is (``suffix``: its file's), else for this process only (f called by reference)."""
    if cache:
        cache_as(drive, user.py_func, suffix)
    else:
        CALLERS.add(drive.py_func)
    return drive


class JitFunction:
    """A function compiled by tape.jit (see ``jit``)."""

    def __init__(self, fn: Callable[..., Any], cache: bool | None = None, arrays: bool = True):
        functools.update_wrapper(self, fn)
        self.py_func = fn
        code = fn.__code__
        install()
        file_id(code.co_filename)
        self._where = f"{code.co_filename}:{code.co_firstlineno}"
        if cache and code.co_name in code.co_names:
            raise JitError(f"tape.jit(cache=True) refuses {code.co_name}, which calls itself: Numba's cache of "
                           "recursive functions crashes on load (numba issue 6061); use cache=False")
        self._cache = cache if cache is not None else None if _cacheable(fn) else False  # None: decided at 1st call
        if self._cache is not False:
            USER_CACHED.add(code)
        elif inspect.getmodule(fn) is None and fn.__module__ is not None:
            fn = _without_module(fn)
        self.dispatcher = numba.njit(pipeline_class=Pipeline, **OPTIONS)(fn)
        self._drive: Any = None  # made at the first call (_settled)
        self._arena = 0  # elements of Var arrays the last calls made (each call gets an arena of this many)
        self._arrays: bool | None = None if arrays else False  # f compiles for an array record xs (None: untried)
        self._array_drive: Any = None
        self._array_refusal = ""  # why f did not compile for an array record xs (told where Var arrays fail too)
        self._array_room = 0  # arena elements the array records of a call wrote, at most
        self._plan_room = 64  # plan rows a call wrote, at most (the table grows inside f by doubling, a copy each: the
        # heat equation's 4,500 rows, peak 612 -> 590 bytes per element of state)
        self._written = -1  # elements of array records the last call wrote (-1: none yet; array_plans.recycling)
        self._arrays_direct = True  # tape.value_and_grad records an array x as xs in _array_value_and_grad
        self._packs = False  # a small array x0 is packed into one array record (known where a call raised Packed)

    def _settled(self) -> Any:
        """f's driver; by default (cache=None) f is cached unless it reaches itself through the jitted functions it
        calls (known by the first call, when they are defined): Numba's cache of recursive functions crashes."""
        if self._drive is None:
            if self._cache is None:
                seen: set = set()
                frozen(self.py_func.__code__, self.py_func.__globals__, seen)
                self._cache = self.py_func.__code__ not in seen
            if self._cache:
                cache_as(self.dispatcher, self.py_func, "")
                LINKED.add(self.dispatcher.py_func)  # the driver links f: f of Vars gets no machine code of its own
            self._drive = _driver(self.dispatcher, self._cache)
        return self._drive

    def __call__(self, xs: Any, *data: Any) -> Any:
        self._settled()
        if _numbers(xs):  # plain numbers: f's value as numba.njit computes it (f's dispatcher on floats: recursion too)
            return self.dispatcher(np.asarray(xs, float) if isinstance(xs, (list, tuple)) else xs, *data)
        if type(xs) is VarArray and xs._view is not None and self._arrays is not False and array_plans.fits(
                xs._view) and xs._view.record not in xs.tape._borrowed:  # (a borrowed constant: not in the arena)
            t = xs._live_tape()
            assert isinstance(t, Tape)
            found = self._record_arrays(t, xs._view, data)
            if found is None:  # f takes no array record (typing), or an op's operands do not fit the driver's rows
                return self(xs._scalars(), *data)
            idx, vals, form = found
        else:
            t, rows = _tape_and_rows(xs)
            found = packed(self, t, rows, data) if may_pack(self, xs) else None
            idx, vals, form = found if found is not None else self._record(t, rows, data)
        seg = t._segment()
        if len(form) and form[0] == RECORD[0]:  # a view of an array record: a VarArray of it
            return VarArray(seg, None, array_plans.view_of(idx))
        if len(form) and form[0] >= 0:  # a Var array: a VarArray of its shape
            return VarArray(seg, idx.reshape(form))
        outs = [Var._at(seg, i) if i >= 0 else v for i, v in zip(idx.tolist(), vals.tolist(), strict=True)]
        return outs if len(form) else outs[0]

    _value_and_grad, _array_value_and_grad = value_and_grad, array_value_and_grad  # tape/compiled/jit_gradients.py

    def _record(self, t: Tape, rows: np.ndarray, data: tuple, big: int = NEVER) -> tuple[np.ndarray, np.ndarray,
                                                                                       np.ndarray]:
        """Record f on t with records ``rows`` as xs: the outputs' indices (-1: a number), values, and
        what f returned: one (form empty), a sequence (form [-1]) or a Var array (form its shape). A Var array of
        ``big`` elements or more raises Packed, nothing of the call kept."""
        _only_data(data)
        n0, nc0 = t._n, t._n_consts
        message: str | None = None
        try:
            got = self._settled()(t._op, t._in0, t._in1, t._val, t._consts, n0, nc0, rows, tuple(data),
                                  np.empty(self._arena, np.int64), big)
        except numba.core.errors.NumbaError as e:  # typing, or what Numba does not support (a generator)
            message = str(e)
            forget_failures(self.dispatcher, self._drive)  # Numba keeps the errors: they would keep t alive
        if message is not None:
            check_data(self.py_func, data)
            tried = f"\n(with xs an array record: {self._array_refusal.removeprefix('tape.jit: ')})" if (
                self._array_refusal) else ""
            raise JitError(first_line(message, self.py_func) + tried + "\n\n" + message)
        return self._took(t, n0, nc0, got)

    def _record_arrays(self, t: Tape, view: Any, data: tuple, again: Again | None = None) -> tuple[
            np.ndarray, np.ndarray, np.ndarray] | None:
        """Record f on t with array record ``view`` as xs (array records: tape/compiled/array_records.py), as
        _record; None where f does not compile for an array record (then never tried again) or an op's operands
        do not fit the driver's rows (array_records.Unfit): nothing of this call is then the tape's. ``again``: t
        as the direct path's last call left it, where it kept it (jit_gradients.Again)."""
        _only_data(data)
        args = again.drive_args(tuple(data)) if again is not None else None
        if again is None or args is None:
            n0, nc0, np0, na0 = t._n, t._n_consts, len(t._plans), t._n_arena
            t._reserve(na0 + self._array_room)  # what the last call wrote: no growth inside (a spare arena, no faults)
            recycle = array_plans.recycling(t, self._written)
            args = self._array_args(t, view, data, recycle)
            if not self._takes_arrays(args):
                return None
        else:
            (nc0, na0, recycle), n0, np0 = again.start, 1, 1
        try:
            got, (plans, np1, aval, na, released) = self._array_drive(*args)
        except numba.core.errors.NumbaError:  # typing: an op array records lack
            forget_failures(self.dispatcher, self._array_drive)
            self._arrays = False
            return None
        except array_records.Unfit:
            return None
        self._arrays = True
        self._array_room = max(self._array_room, na - na0)
        self._plan_room = max(self._plan_room, np1 - np0)
        if again is not None and again.drove(t, got, plans, np1, aval, na, released, (nc0, na0, recycle)):
            return got[1]  # (the tape holds the records, plans and regions of the last call, which wrote the same)
        found = self._took(t, n0, nc0, got)
        self._written = array_plans.adopt(t, plans, np0, np1, aval, na, released, recycle)
        if t._recycling:  # xs's values stay while the records read them (tape/sweeps/arenas.py: _pin)
            t._read.add(view.record)
            t._watched.discard(view.record)
        return found

    def _array_args(self, t: Tape, view: Any, data: tuple, recycle: int = 0) -> tuple:
        """The array driver's arguments for f on t with array record ``view`` as xs (``recycle``: array_plans')."""
        return (t._op, t._in0, t._in1, t._val, t._consts, t._n, t._n_consts, view.record, t._plan(view.record).offset,
                view.offset, view.shape, view.strides, array_plans.plan_table(t, self._plan_room), len(t._plans),
                t._aval, t._n_arena, recycle, tuple(data), np.empty(self._arena, np.int64))

    def _tries_arrays(self, x: np.ndarray, data: tuple) -> bool:
        """Whether f records x as an array record: known after its first try, typed first on a tape of its own (an f
        that takes none is then recorded on as scalar records by the caller, as it would be after a failed try)."""
        if self._arrays is None:
            _only_data(data)
            t = Tape()
            return self._takes_arrays(self._array_args(t, t.array(x)._view, data))
        return bool(self._arrays)

    def _takes_arrays(self, args: tuple) -> bool:
        """Whether f compiles for an array record xs (the array driver's ``args``): typed at the first try, before
        anything of array records is made (write_record when f first writes a record); an f that does not (an op array
        records lack) is recorded as scalar records from then on, and where f is cached, so in later processes
        (jit_cache.refusal)."""
        array_calls.install()
        if self._array_drive is None:
            self._settled()
            self._array_drive = _array_driver(self.dispatcher, bool(self._cache))
        if self._arrays is None:
            kinds = tuple(map(self._array_drive.typeof_pyval, args))
            refused = refusal(self.py_func, kinds) if self._cache else ""  # (a cached f's refusal: on disk)
            why = refused_why(refused) if refused else None
            if why is not None:
                self._arrays, self._array_refusal = False, why
                return False
            try:
                self._array_drive.compile(kinds)
            except numba.core.errors.NumbaError as e:
                self._array_refusal = first_line(str(e), self.py_func)
                forget_failures(self.dispatcher, self._array_drive)
                self._arrays = False
                if refused:
                    refuse(refused, self._array_refusal)
                return False
        return self._arrays is not False

    def _took(self, t: Tape, n0: int, nc0: int, got: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Make what a driver wrote the tape's: records, constants, checked branches; f's outputs."""
        (op, in0, in1, val, consts, n, nc, chk_rows, chk_outs, chk_wheres, wanted), (idx, vals, form) = got
        self._arena = min(max(self._arena, wanted), ARENA_MAX)  # the next call's arena: all this one wanted
        _adopt(t, n0, nc0, op, in0, in1, val, consts, n, nc)
        if len(chk_rows):  # kept as arrays: tuples only if the tape's checks are read (Tape._checks)
            pending = t._jit_checks
            if not isinstance(pending, list):
                pending = t._jit_checks = []
            pending.append(_Checks(chk_rows, chk_outs, chk_wheres, self._where))
        if t._lines is not None:
            t._lines.update(dict.fromkeys(range(n0, n), self._where))
        return idx, vals, form


def _only_data(data: tuple) -> None:
    for d in data:
        if isinstance(d, (Handle, VarArray)) or (isinstance(d, (list, tuple)) and any(
                isinstance(v, Handle) for v in d)):
            raise TypeError("tape.jit: only the first argument holds Vars; data must be arrays and numbers")


@typeof_impl.register(JitFunction)
def _typeof_jit_function(fn: JitFunction, c: Any) -> Any:
    """Inside jitted code a JitFunction is its dispatcher: jitted helpers and recursion call it."""
    return types.Dispatcher(fn.dispatcher)


class _Checks:
    """The checked branches of one tape.jit call: rows, outcomes, where codes (see where_of)."""

    __slots__ = ("rows", "outs", "wheres", "fallback")

    def __init__(self, rows: np.ndarray, outs: np.ndarray, wheres: np.ndarray, fallback: str):
        self.rows, self.outs, self.wheres, self.fallback = rows, outs, wheres, fallback

    def below(self, mark: int) -> _Checks | None:
        """Those of rows below mark (None if none), as a rewind to mark keeps them."""
        keep = self.rows < mark
        if keep.all():
            return self
        if not keep.any():
            return None
        return _Checks(self.rows[keep], self.outs[keep], self.wheres[keep], self.fallback)

    def tuples(self) -> Any:
        """(row, outcome, file:line) of each, each branch's file:line made once."""
        codes, which = np.unique(self.wheres, return_inverse=True)
        names = [where_of(int(c), self.fallback) for c in codes.tolist()]
        return zip(self.rows.tolist(), (self.outs != 0).tolist(), [names[k] for k in which.tolist()], strict=True)


def _numbers(xs: Any) -> bool:
    """Whether xs holds plain numbers: a NumPy array of numbers, or a list or tuple of floats and ints."""
    if isinstance(xs, np.ndarray):
        return xs.dtype.kind in "fiu"
    return isinstance(xs, (list, tuple)) and bool(xs) and all(type(v) is float or type(v) is int for v in xs)


def _tape_and_rows(xs: Any) -> tuple[Tape, np.ndarray]:
    """The tape of the inputs and their records (of a VarArray's shape: 1-d or 2-d)."""
    if isinstance(xs, VarArray):
        if xs.ndim not in (1, 2):
            raise TypeError(f"tape.jit: the inputs are a VarArray of shape {xs.shape}; pass 1-d or 2-d arrays")
        scalars = xs._scalars()  # one array record (1024 numbers or more): an elem record per number
        return scalars._live_tape(), np.ascontiguousarray(scalars._idx, np.int64)  # type: ignore[return-value]
    else:
        if isinstance(xs, (list, tuple)) and not xs:
            raise TypeError("tape.jit: a jitted function needs at least one input Var (x0 is empty): there is "
                            "no tape to record into and nothing to differentiate")
        if type(xs) is Var or not isinstance(xs, (list, tuple)) or any(type(v) is not Var for v in xs):
            raise TypeError("tape.jit: a jitted function takes Vars (through tape.trace, tape.grad or "
                            "tape.value_and_grad, or a list of Vars of one tape) or plain numbers")
        t = xs[0].tape
    assert isinstance(t, Tape)
    try:
        return t, t._rows(xs)
    except ForeignHandleError:  # inside, every Var is of this one tape: mixing can only happen here
        k = next(k for k, v in enumerate(xs) if v._seg.tape is not t)
        raise ForeignHandleError(f"tape.jit: cannot combine Vars of different tapes: xs[{k}] ({xs[k]!r}) was "
                                 "recorded on another tape than xs[0]; record them on one tape") from None


def _cacheable(fn: Callable[..., Any]) -> bool:
    """Whether tape.jit may cache f by default: f has a source file, a module and no closure cells (Numba keys those
    by pickling them)."""
    return os.path.isfile(fn.__code__.co_filename) and inspect.getmodule(fn) is not None and not fn.__closure__


def _without_module(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn, for a module that is not in sys.modules (importlib.util.spec_from_file_location without
    registering it), as a function of no module. Numba names a function by its module twice: by
    fn.__module__ for the compiled symbol, and by inspect.getmodule(fn) (None here: "<dynamic>") for
    the symbol a recursive call looks for; the two differ and the call dies of an unresolved symbol.
    Without a module both are "<dynamic>" (and the globals are fn's own)."""
    copy = types_.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__, copy.__qualname__ = fn.__kwdefaults__, fn.__qualname__
    copy.__module__ = None  # type: ignore[assignment]  # None is what Numba reads as no module
    return copy


def _adopt(t: Tape, n0: int, nc0: int, op, in0, in1, val, consts, n: int, nc: int) -> None:
    """Make the records written inside Numba the tape's (the arrays Numba grew, if it did)."""
    if len(op) != t._capacity:  # grown (growth always adds room): Numba's arrays are new
        t._allocate(len(op), (op, in0, in1, val))
    if len(consts) != t._consts_capacity:
        t._grow_consts(len(consts))
        t._consts[nc0:nc] = consts[nc0:nc]
    t._n, t._n_consts = n, nc


def jit(fn: Callable[..., Any] | None = None, *, cache: bool | None = None, arrays: bool = True) -> Any:
    """Compile ``f(xs, *data)`` with Numba so that it records at C speed (``@tape.jit`` or ``tape.jit(cache=True)``).

    ``xs`` is an array of Vars (``xs[i]``, ``xs[1:]``, ``len(xs)``, ``xs.shape``, ``for v in xs``;
    2-d for a 2-d x0); ``data`` arrays and numbers. Arrays of Vars are made by
    ``np.empty/zeros/ones/full(shape, dtype=xs.dtype)`` and ``*_like``, read and written by element
    (``a[i, j] += v``), and take whole-array arithmetic, the op table's ufuncs, ``sum``, ``prod``,
    ``mean``, ``max``, ``min`` and ``np.dot``; f may return one (a VarArray). Inside, Vars take
    + - * / **, unary -, abs, comparisons, ``math.*``, NumPy ufuncs and ``tape.*`` functions of the
    op table (of plain numbers: floats, of NumPy arrays: arrays, nothing recorded),
    ``tape.where``, ``sum``, builtin ``max``/``min`` of several arguments or of one sequence (as
    Python runs them: checked comparisons, one of the arguments returned); ``if``/``while`` on
    comparisons record checked branches with their file:line. It may call itself, other tape.jit
    or numba.njit functions of Vars and plain Python functions (one given a closure of f's is inlined), and read
    attributes of objects Numba cannot type (``nn.sigmoid`` of a SimpleNamespace: constants, read when f
    compiles). Give it to tape.trace, tape.grad or tape.value_and_grad (or
    call it with a list of Vars of one tape): the records are the Python recorder's for the same
    source, bit for bit. Called with plain numbers (a list or array of floats) it returns f's value as
    numba.njit computes it. The compiled code is kept across processes (a new process loads it and compiles
    nothing, and compiles again where f's file, the values of the globals f reads or the jitted functions it
    calls changed) where f has a file and a module, no closure cells and does not call itself; ``cache=True``
    insists (refused for a recursive f), ``cache=False`` compiles in every process. By default an x0 of 1,024
    elements or more is one array record and whole-array operations write array records, as the Python recorder
    does (docs/jit.md#array-records): 2.5-7 µs an operation, not one record per element (a first call on empty caches
    about 5 CPU-s); an f that does not type with one records scalar records; ``arrays=False`` always does.
    """
    if fn is None:
        return lambda f: JitFunction(f, cache, arrays)
    return JitFunction(fn, cache, arrays)

