"""Regions of array records given away inside jitted f, as a recycling tape gives them (tape/sweeps/arenas.py).

Each array record f makes on a recycling tape (tape.value_and_grad's own) has a life: a meminfo that Numba counts
references to with every copy of the record and of its views (in variables, lists, tuples, conditions), and whose
destructor appends the record's row to the call's ``released`` rows when nothing in f holds it any more. A record
whose value a reverse step reads (its readers' ``back_reads``: array_records._pin) keeps its region; the others go to
free lists by size class when the arena is full (``drain``), and a later record of about their size takes one
(``take``): one offset then serves both arenas, as on the Python recorder's tapes (the taker is born after the last
reader). This code is a C function of its own (array_calls.py's ``_lives_c``, made when a record first ``due``s it:
an f that never gives a region away never compiles it), which marks what the records written since it last ran read
before it looks for a region (and once more after f: array_records.ended; where it never ran, every record keeps
its region). xs, constants, packs and the records of a tape that does
not recycle have no life (a null meminfo) and keep their regions. After the call, array_plans.adopt gives the tape
what a recycling tape keeps (``_freed``, ``_caps``, ``_read``, ``_free``; what was released and not yet collected is
watched, as a dropped VarArray's).

Numba internals (listed in numba_internals.py): NRT meminfos with a destructor (``meminfo_alloc_dtor``), a function
compiled into it (``compile_subroutine``, ``call_internal_no_propagate``: a destructor has no status to pass on).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from tape.compiled.array_rows import CAP, LINK, STATE
from tape.compiled.numba_internals import LIFE, released_type, types
from tape.compiled.numba_payload import tape_from_pointer
from tape.compiled.recording import once
from tape.kernels.array_ops import ARRAY_OPCODE, RULE
from tape.sweeps.arenas import EARLY, SCAN
from tape.sweeps.driver import Plan, View

# plan row columns (array_rows.py): its region's capacity (CAP), its state (STATE: bits below), the next record in its
# free list (LINK; taken: the row of the record that took its region)
READ, FREED, TAKEN = 1, 2, 4  # a reverse step reads its value; its region is in a free list; given to a later record
RECYCLE, CHECKED = 1, 2  # the arrays' ``recycle``: regions given away; and freed ones NaN-filled (arenas.CHECK)
_PAYLOAD = types.Tuple((released_type, types.int64))  # a life's: the call's released rows, the record's row


def release(r, row):
    """Append ``row`` to the released rows (a life's destructor)."""
    if r.n == r.rows.size:
        rows = np.empty(2 * r.n + 64, np.int64)
        for i in range(r.n):  # (a loop: a slice copy compiles NumPy's shape-mismatch message, 1 CPU-s cold)
            rows[i] = r.rows[i]
        r.rows = rows
    r.rows[r.n] = row
    r.n += 1


def _destructor(context, module):
    """A life's destructor (NRT's signature: payload, size, info): release, then let go of the released rows."""
    fn = cgutils.get_or_insert_function(module, ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t, cgutils.intp_t,
                                                                                 cgutils.voidptr_t]),
                                        "_Dtor.tape_array_life")
    if fn.is_declaration:
        fn.linkage = "linkonce_odr"
        builder = ir.IRBuilder(fn.append_basic_block())
        model = context.data_model_manager[_PAYLOAD]
        value = model.load_from_data_pointer(builder, builder.bitcast(fn.args[0], model.get_data_type().as_pointer()))
        released, row = cgutils.unpack_tuple(builder, value)
        sig = types.void(released_type, types.int64)
        done = context.compile_subroutine(builder, release, sig)
        context.call_internal_no_propagate(builder, done.fndesc, sig, [released, row])
        context.nrt.decref(builder, released_type, released)
        builder.ret_void()
    return fn


@intrinsic
def new_life(typingctx, released, row):
    """A life for the record at ``row``: a meminfo whose destructor appends row to ``released`` (held until then)."""
    def codegen(context, builder, sig, args):
        model = context.data_model_manager[_PAYLOAD]
        size = context.get_constant(types.uintp, context.get_abi_sizeof(model.get_data_type()))
        life = context.nrt.meminfo_alloc_dtor(builder, size, _destructor(context, builder.module))
        context.nrt.incref(builder, released_type, args[0])
        payload = builder.bitcast(context.nrt.meminfo_data(builder, life), model.get_data_type().as_pointer())
        builder.store(model.as_data(builder, context.make_tuple(builder, _PAYLOAD, args)), payload)
        return life
    return LIFE(released_type, types.int64), codegen


@once
def _bits(n):
    """n's bit length."""
    b = 0
    while n:
        n >>= 1
        b += 1
    return b


@once
def drain(s, p):
    """Put the released records that no reverse step reads in the free lists (those the record being written reads
    stay released): how many elements."""
    r, in0, freed, kept = s.released, tape_from_pointer(p).in0, 0, 0
    for j in range(r.n):
        row = r.rows[j]
        if row == s.busy[0] or row == s.busy[1] or row == s.busy[2]:
            r.rows[kept] = row
            kept += 1
            continue
        k = in0[row]
        if k < s.first or k >= s.np or s.plans[k, STATE] & (READ | FREED):
            continue
        plan = s.plans[k]
        cap, b = plan[CAP], _bits(plan[CAP])
        plan[STATE] |= FREED
        plan[LINK], s.heads[b] = s.heads[b], k
        freed += cap
        s.free += 1
        if s.recycle == CHECKED:
            for i in range(plan[2], plan[2] + cap):
                s.aval[i] = np.nan
    r.n = kept
    return freed


@once
def take(s, size):
    """A freed record whose region holds size to twice that (taken out of its free list), or -1."""
    for b in range(_bits(size), _bits(size) + 2):
        before, k, seen = -1, s.heads[b], 0
        while k >= 0 and seen < SCAN:
            plan = s.plans[k]
            if size <= plan[CAP] <= 2 * size:
                if before < 0:
                    s.heads[b] = plan[LINK]
                else:
                    s.plans[before, LINK] = plan[LINK]
                s.free -= 1
                return k
            before, k, seen = k, plan[LINK], seen + 1
    return -1


@once
def _collects(s, size):
    """Whether a new record of ``size`` collects the released records: where the arena is full, or a quarter of its
    used part was recorded since the last collection (at every record where checked)."""
    return s.released.n > 0 and (s.na + size > s.aval.size or s.recycle == CHECKED or
                                 s.recorded >= max(s.na // 4, EARLY))


@once
def due(s, size):
    """Whether a new record of ``size`` looks for a freed region (a free list holds one, or it collects): else reuse
    gives -1 and changes nothing, and the C function is not called."""
    return s.free > 0 or _collects(s, size)


@once
def reuse(s, p, size):
    """A freed record whose region a new record of ``size`` takes, or -1 (the arena's top), as Arenas._place decides:
    a free region that fits; else the released records collected (_collects), unless that frees under a quarter of a
    full arena (it grows)."""
    k = take(s, size)
    if k >= 0 or not _collects(s, size):
        return k
    s.recorded = 0
    if 4 * drain(s, p) < s.aval.size and s.na + size > s.aval.size and s.recycle != CHECKED:
        return -1
    return take(s, size)


@once
def kept(s):
    """Mark every record of the call read (lives never ran: nothing was given away, and the tape keeps all)."""
    for k in range(s.first, s.np):
        s.plans[k, STATE] |= READ


def _reads() -> np.ndarray:
    """back_reads as bits (an input's, 8 for the record's own), by code * 32 + inputs * 8 + the constant inputs' bits:
    all they depend on for the ops f writes (a kind that asks more of the plan reads all)."""
    table, view = np.full(32 * len(RULE), 15, np.int64), View(0, 0, (), ())
    for code in ARRAY_OPCODE.values():
        for nin in range(4):
            plan = tuple.__new__(Plan, (code, 0, 0, (), (view,) * nin, (0,), None, ()))
            for mask in range(1 << nin):
                try:
                    reads = RULE[code].back_reads(plan, tuple(bool(mask >> v & 1) for v in range(nin)))
                except Exception:  # noqa: BLE001  (all: safe)
                    continue
                table[code * 32 + nin * 8 + mask] = sum(1 << v for v, read in enumerate(reads[:-1]) if read) | (
                    8 if reads[-1] else 0)
    return table


READS = _reads()
