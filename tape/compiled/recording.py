"""Recording inside jitted code: appending records, constants and checked branches to the tape.

The tape is a structref over the record arrays of tape/records/storage.py (op uint8, in0/in1 uint32,
val float64, the constant pool) plus the checked branches. Every append checks the
capacity first and grows out of line (``grow``, ``grow_consts``: doubling, as Storage does),
so nothing is written past an array's end. The op-by-op recorders are generated
(tape/compiled/_recorders.py); the overloads that are not per op live here.
"""

from __future__ import annotations

import ctypes
import operator
from typing import Any

import numpy as np
from numba import cfunc, njit
from numba.core.registry import CPUDispatcher

from tape.compiled.numba_internals import (
    TypingError,
    VarArrayType,
    VarType,
    make_array,
    make_condition,
    make_var,
    new_struct,
    tape_type,
    types,
    unbound,
    var_type,
)
from tape.compiled.numba_payload import (
    append,
    append_const,
    constants,
    external,
    records,
    tape_from_pointer,
    tape_pointer,
    value_at,
)
from tape.compiled.overload_cache import NO_WRAPPERS, overload
from tape.errors import TapeFullError
from tape.kernels.ops import CONSTANT
from tape.records.storage import MAX_RECORDS, NO_INPUT

OPTIONS: Any = {"nogil": True, "error_model": "numpy"}
INTERNAL: Any = {**OPTIONS, **NO_WRAPPERS}
jit = njit(cache=True, **INTERNAL)
# An op's entry (tape/compiled/_recorders.py: unary_<code>, <name>_vv/_vc/_cv) is inlined by LLVM where it is called
# (alwaysinline), in the user's code and in the loops over a Var array's elements alike. It always was in effect:
# Numba's flags inherit forceinline from the compile that calls a function first (its ConfigStack), and an entry's
# first caller is always an op's overload (forceinline). Said outright, the loops call the entries themselves, not
# copies of their own (n-body's cold first gradient: 3 compiles fewer).
entry = njit(cache=True, forceinline=True, **INTERNAL)


class Hot(CPUDispatcher):
    """The layers under each op's entry (``hot``): compiled once per argument types, their callers' literal numbers
    taken as their types (``push(p, 3, ...)`` and ``push(p, 9, ...)`` compile one push; LLVM inlines it and knows 3)."""

    def get_call_template(self, args, kws):
        return super().get_call_template(tuple(map(types.unliteral, args)),
                                         {k: types.unliteral(v) for k, v in kws.items()})


def hot(fn):
    """fn inlined by LLVM into what calls it (alwaysinline), so an op's entry makes one call: compiled once per
    argument types, where Numba's inline="always" parsed, typed and lowered it again at every call site (cold
    first gradient, CPU s, at load 2-4: n-body 8.8 -> 7.2, RK4 5.9 -> 4.7)."""
    return Hot(py_func=fn, locals={}, targetoptions={"nopython": True, "forceinline": True, **INTERNAL})


def once(fn):
    """fn compiled (and cached) once per argument types, its callers' literal numbers taken as their types, and not
    forced inline: array records' row writers (array_records.py), one machine function each for every op of every f."""
    dispatcher = Hot(py_func=fn, locals={}, targetoptions={"nopython": True, **INTERNAL})
    dispatcher.enable_caching()
    return dispatcher


NEVER = 1 << 62  # a tape's ``big`` where no Var array raises Packed (tape/compiled/arrays.py)
LIST_REFUSAL = "storing a Var into a list of "  # tape/compiled/var_lists.py: typed again as a list of Vars
NOT_A_FLOAT = ("tape.jit: a Var is not a float inside a jitted function (float(v), storing it into a float array, "
               "or a function that takes floats only); keep it a Var, or read values after the call")


@jit
def new_tape(op, in0, in1, val, consts, n, nc, arena):
    """The tape over a Storage's arrays, with ``n`` records and ``nc`` constants already there, and the
    call's arena for Var arrays (tape/compiled/arrays.py)."""
    t = new_struct(tape_type)
    t.op, t.in0, t.in1, t.val, t.consts, t.n, t.nc = op, in0, in1, val, consts, n, nc
    t.rows, t.outs, t.wheres, t.nchk = np.empty(16, np.int64), np.empty(16, np.uint8), np.empty(16, np.int64), 0
    t.arena, t.used, t.want, t.peak, t.kept = arena, 0, 0, 0, [arena]
    t.big = NEVER  # (tape.jit's driver of an x0 it may pack: its first Var array this big raises Packed)
    return t


@njit(**INTERNAL)
def grow(t, need):
    """Reallocate the record arrays for at least ``need`` records (doubling), keeping t.n of them."""
    cap = max(need, min(2 * t.op.size, MAX_RECORDS))
    n = t.n
    op, in0, in1, val = np.empty(cap, np.uint8), np.empty(cap, np.uint32), np.empty(cap, np.uint32), np.empty(cap)
    for i in range(n):  # loops, not slice copies: those compile Numba's shape-error message (2-3 s cold)
        op[i], in0[i], in1[i], val[i] = t.op[i], t.in0[i], t.in1[i], t.val[i]
    in1[n:] = NO_INPUT  # as Storage allocates it: the tape takes these arrays as they are
    t.op, t.in0, t.in1, t.val = op, in0, in1, val


@njit(**INTERNAL)
def grow_consts(t):
    """Double the constant pool."""
    consts = np.empty(2 * t.consts.size + 16)
    for i in range(t.nc):  # as in grow
        consts[i] = t.consts[i]
    t.consts = consts


@njit(**INTERNAL)
def grow_checks(t):
    """Double the arrays of checked branches."""
    k = t.nchk
    rows, outs, wheres = np.empty(2 * k + 16, np.int64), np.empty(2 * k + 16, np.uint8), np.empty(2 * k + 16, np.int64)
    for i in range(k):  # as in grow
        rows[i], outs[i], wheres[i] = t.rows[i], t.outs[i], t.wheres[i]
    t.rows, t.outs, t.wheres = rows, outs, wheres


def _grow_c(p, need):
    try:
        grow(tape_from_pointer(p), need)
    except Exception:  # noqa: BLE001  # MemoryError: reported by the caller
        return 1
    return 0


def _grow_consts_c(p):
    try:
        grow_consts(tape_from_pointer(p))
    except Exception:  # noqa: BLE001
        return 1
    return 0


def _grow_checks_c(p):
    try:
        grow_checks(tape_from_pointer(p))
    except Exception:  # noqa: BLE001
        return 1
    return 0


# Growth is out of line: cfuncs called by symbol, so no op links their code (compiles stay small)
GROWTH = {"tape_jit_grow": (_grow_c, types.int64(types.voidptr, types.int64)),
          "tape_jit_grow_consts": (_grow_consts_c, types.int64(types.voidptr)),
          "tape_jit_grow_checks": (_grow_checks_c, types.int64(types.voidptr))}
GROW, GROW_CONSTS, GROW_CHECKS = (types.ExternalFunction(name, sig) for name, (_, sig) in GROWTH.items())
_installed: list = []


def _on_first_growth(fn: Any, sig: Any) -> Any:
    """A C function for symbol ``sig``: compiles (or loads) the cfunc of ``fn`` at its first call and calls it. Most
    tapes never grow, so a first call does not wait for these compiles (1.5 s cold); a growth is rare (doubling)."""
    compiled: list = []

    def call(*args: int) -> int:
        try:
            if not compiled:
                compiled.append(cfunc(sig, cache=True, **OPTIONS)(fn))  # type: ignore[type-var]
            return int(compiled[0].ctypes(*args))
        except Exception:  # noqa: BLE001  # reported by the caller as out of memory: never let ctypes return 0
            return 1

    return ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, *[ctypes.c_int64] * (len(sig.args) - 1))(call)


def install() -> None:
    """Give jitted code the growth symbols; once per process."""
    if not _installed:
        for name, (fn, sig) in GROWTH.items():
            stub = _on_first_growth(fn, sig)
            address = ctypes.cast(stub, ctypes.c_void_p).value
            assert address, "ctypes made a C function at address 0"
            external(name, address, sig)
            _installed.append(stub)  # kept alive: jitted code calls its address


@hot
def push(p, code, i, j, v):
    """Append record (code, i, j, v) to the tape p points to; return its Var."""
    n, capacity = records(p)
    if n >= capacity:
        if n >= MAX_RECORDS:
            raise TapeFullError("a tape holds at most 4294967295 records (32-bit indices); record in pieces")
        if GROW(p, n + 1) != 0:
            raise MemoryError("tape.jit: out of memory growing the tape")
    append(p, code, i, j, v)
    return make_var(p, n, v)


@hot
def push_const(p, c):
    """Append c to the constant pool; return its slot."""
    k, capacity = constants(p)
    if k >= capacity and GROW_CONSTS(p) != 0:
        raise MemoryError("tape.jit: out of memory growing the constant pool")
    append_const(p, c)
    return k


@hot
def constant_record(p, c):
    """A constant record (a number where a record is needed: tape.where, arctan2, outputs); its Var."""
    return push(p, CONSTANT, NO_INPUT, NO_INPUT, c)


@jit
def push_check(p, row, outcome, where):
    """Remember that comparison record ``row`` came out ``outcome`` at branch ``where``."""
    t = tape_from_pointer(p)
    k = t.nchk
    if k >= t.rows.size and GROW_CHECKS(p) != 0:
        raise MemoryError("tape.jit: out of memory recording a branch")
    t.rows[k] = row
    t.outs[k] = outcome
    t.wheres[k] = where
    t.nchk = k + 1


@jit
def condition(x, y, pair, var_c, c_var, swap, known):
    """x <op> y for Vars (either may be a number not yet recorded) as a Condition."""
    if x.index < 0 and y.index < 0:
        return make_condition(x.tape, 0, 0, 0, 0.0, 2, known)
    if x.index < 0:
        return make_condition(y.tape, c_var, y.index, 0, x.c, 1, False)
    if y.index < 0:
        return make_condition(x.tape, var_c, x.index, 0, y.c, 1, False)
    if swap:
        return make_condition(x.tape, pair, y.index, x.index, 0.0, 0, False)
    return make_condition(x.tape, pair, x.index, y.index, 0.0, 0, False)


# --- overloads that are not per op ---------------------------------------------------------


def is_var(typ) -> bool:
    return isinstance(typ, VarType)


def is_number(typ) -> bool:
    return isinstance(typ, (types.Float, types.Integer)) and not isinstance(typ, types.Boolean)


def plain(typ) -> bool:
    """Whether typ is a NumPy array of numbers (bools too), which tape.<name> takes as NumPy does."""
    return isinstance(typ, types.Array) and isinstance(typ.dtype, (types.Float, types.Integer, types.Boolean))


@jit
def identity(v):  # named, not a lambda: two lambdas of a module share a name, so symbols (test_jit_cache.py)
    return v


@jit
def to_var(v):
    return unbound(v)  # type: ignore[call-arg]


def var_of(v):
    """v as a Var: itself, or a number not yet recorded."""


@overload(var_of)
def _var_of(v):
    if is_var(v):
        return identity
    if is_number(v):
        return lambda v: unbound(v)
    return None


def as_var(typ):
    """A jitted function turning a value of typ (Var or number) into a Var."""
    return identity if is_var(typ) else to_var


@overload(float)
def _float(x):
    if is_var(x):
        raise TypingError(NOT_A_FLOAT)
    return None


@overload(operator.setitem)
def _setitem(a, i, v):
    if isinstance(a, types.Array) and (is_var(v) or isinstance(v, VarArrayType)):
        raise TypingError(f"tape.jit: storing a Var into a NumPy array of {a.dtype} is not supported: its "
                          "value would lose its record; make a Var array (np.empty(n, dtype=xs.dtype)) or a list")
    if isinstance(a, types.List) and is_var(a.dtype) and isinstance(i, types.Integer) and is_number(v):
        def store(a, i, v):  # a list of Vars made of numbers (var_lists.py) takes numbers again
            a[i] = unbound(v)
        return store
    if isinstance(a, types.List) and is_number(a.dtype) and is_var(v):  # made here: made again (var_lists.py)
        raise TypingError(f"tape.jit: {LIST_REFUSAL}{a.dtype} not made by this function (an argument) is not "
                          "supported: a Numba list keeps the type it was made with; store the Var where the list is "
                          "made ([0.0] * n), or pass a Var array (np.zeros(n, dtype=xs.dtype))")
    return None


ONE, SEQUENCE = np.zeros(0, np.int64), np.full(1, -1, np.int64)  # the form of a Var output, a tuple or list


@jit
def one_output(v):
    """What f returned, one Var: (indices, values, form) as the driver reports outputs (form: ONE,
    SEQUENCE or the shape of a Var array)."""
    idx, vals = np.empty(1, np.int64), np.empty(1)
    idx[0], vals[0] = v.index, v.c
    return idx, vals, ONE


@jit
def finish(t, outputs, held):
    """What the driver hands back: the arrays, counts and checks of the tape, the arena wanted (peak), the outputs
    (``held``: what the driver lent f, alive until here)."""
    k = t.nchk
    return (t.op, t.in0, t.in1, t.val, t.consts, t.n, t.nc, t.rows[:k], t.outs[:k], t.wheres[:k], t.peak), outputs


@jit
def values(t, rows):
    """The values of records ``rows`` (1-d or 2-d): NumPy's fancy index, which compiles sooner cold than a loop over
    reshapes now that link-only code is optimized once, in the driver (0.1-0.3 CPU-s: n-body, heat, 3-line f)."""
    return t.val[rows]


@jit
def inputs(t, rows, vals):
    """xs: a Var array of the input records ``rows`` (1-d or 2-d) with their values (held by the driver)."""
    return make_array(tape_pointer(t), rows, vals)


@overload(operator.pos)
def _pos(x):
    if is_var(x):
        return lambda x: x
    return None


__all__ = ["install", "jit", "entry", "hot", "value_at", "push", "push_const", "push_check", "constant_record",
           "condition", "new_tape", "is_var", "is_number", "as_var", "to_var", "var_of", "unbound", "var_type",
           "inputs", "values", "NOT_A_FLOAT", "LIST_REFUSAL", "one_output", "finish"]
