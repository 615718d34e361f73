"""The tape's payload inside jitted code, through its borrowed meminfo pointer: records, constants and the call's
arena read and appended by intrinsics (no reference count touched), and C functions called by symbol.

Numba internals (listed with the rest in tape/compiled/numba_internals.py, whose ``tape_type`` this reads):
``structref._Utils`` (the payload's layout), ``cgutils`` struct proxies and meminfo pointers, and
``llvmlite.binding.add_symbol`` (the growth cfuncs, called by symbol).
"""

from __future__ import annotations

import llvmlite.binding as llvm
from numba import types
from numba.core import cgutils
from numba.experimental import structref
from numba.extending import intrinsic

from tape.compiled.numba_internals import TAPE_FIELDS, arrays_type, tape_type


@intrinsic
def tape_pointer(typingctx, t):
    """The tape's meminfo pointer (or an array records' state's: tape/compiled/array_records.py), borrowed: for the
    out-of-line growth functions, and held by Vars and array records."""
    def codegen(context, builder, sig, args):
        st = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
        return builder.bitcast(st.meminfo, cgutils.voidptr_t)
    return types.voidptr(t), codegen


def from_pointer(struct_type, name: str):
    """An intrinsic named ``name``: the struct of struct_type (the tape's, the array records' state) of a meminfo
    pointer (a new reference)."""
    def of(typingctx, p):
        def codegen(context, builder, sig, args):
            st = cgutils.create_struct_proxy(struct_type)(context, builder)
            st.meminfo = builder.bitcast(args[0], st.meminfo.type)
            context.nrt.incref(builder, struct_type, st._getvalue())
            return st._getvalue()
        return struct_type(types.voidptr), codegen
    of.__name__ = of.__qualname__ = name
    return intrinsic(of)


tape_from_pointer = from_pointer(tape_type, "tape_from_pointer")
arrays_from_pointer = from_pointer(arrays_type, "arrays_from_pointer")


def _fields(context, builder, p):
    """The tape's fields (loads and stores through its payload) from its borrowed pointer."""
    st = cgutils.create_struct_proxy(tape_type)(context, builder)
    st.meminfo = builder.bitcast(p, st.meminfo.type)
    return structref._Utils(context, builder, tape_type).get_data_struct(st._getvalue())


def _array(context, builder, fields, name):
    """(data pointer, length) of the tape's array ``name``, no reference taken."""
    array = context.make_array(dict(TAPE_FIELDS)[name])(context, builder, value=getattr(fields, name))
    return array.data, array.nitems


def _room(count: str, array: str):
    """An intrinsic giving (count, capacity) of the tape's records or constants."""
    @intrinsic
    def room(typingctx, p):
        def codegen(context, builder, sig, args):
            fields = _fields(context, builder, args[0])
            counts = [getattr(fields, count), _array(context, builder, fields, array)[1]]
            return context.make_tuple(builder, sig.return_type, counts)
        return types.UniTuple(types.int64, 2)(types.voidptr), codegen
    return room


records, constants, arena_room = _room("n", "op"), _room("nc", "consts"), _room("used", "arena")


@intrinsic
def want(typingctx, p, count):
    """Count ``count`` more elements in use (fewer if negative: scratch given back); the next call's arena
    is sized by the most in use at once (``peak``)."""
    def codegen(context, builder, sig, args):
        fields = _fields(context, builder, args[0])
        fields.want = builder.add(fields.want, args[1])
        fields.peak = builder.select(builder.icmp_signed(">", fields.want, fields.peak), fields.want, fields.peak)
        return context.get_dummy_value()
    return types.none(types.voidptr, types.int64), codegen


@intrinsic
def carve(typingctx, p, count):
    """The address of the next ``count`` elements of the tape's arena (room checked by the caller): no allocation,
    no array, so no reference count. The arena and its Var arrays live as long as the call."""
    def codegen(context, builder, sig, args):
        fields = _fields(context, builder, args[0])
        start = builder.gep(_array(context, builder, fields, "arena")[0], [fields.used])
        fields.used = builder.add(fields.used, args[1])
        return start
    return types.CPointer(types.int64)(types.voidptr, types.int64), codegen


@intrinsic
def give_back(typingctx, p, count):
    """Return the last ``count`` elements carved (scratch) to the arena."""
    def codegen(context, builder, sig, args):
        fields = _fields(context, builder, args[0])
        fields.used = builder.sub(fields.used, args[1])
        return context.get_dummy_value()
    return types.none(types.voidptr, types.int64), codegen


@intrinsic
def value_at(typingctx, p, i):
    """The value of record i (below the count: the caller's index came from the tape)."""
    def codegen(context, builder, sig, args):
        data, _ = _array(context, builder, _fields(context, builder, args[0]), "val")
        return builder.load(builder.gep(data, [args[1]]))
    return types.float64(types.voidptr, types.int64), codegen


@intrinsic
def append(typingctx, p, code, i, j, v):
    """Write record (code, i, j, v) at the count and count it (room checked by the caller)."""
    def codegen(context, builder, sig, args):
        fields = _fields(context, builder, args[0])
        n = fields.n
        for name, value, typ in zip(("op", "in0", "in1", "val"), args[1:], sig.args[1:], strict=True):
            data, _ = _array(context, builder, fields, name)
            stored = context.cast(builder, value, typ, dict(TAPE_FIELDS)[name].dtype)
            builder.store(stored, builder.gep(data, [n]))
        fields.n = builder.add(n, context.get_constant(types.int64, 1))
        return context.get_dummy_value()
    return types.none(types.voidptr, types.int64, types.int64, types.int64, types.float64), codegen


@intrinsic
def append_const(typingctx, p, c):
    """Write c at the constant count and count it (room checked by the caller)."""
    def codegen(context, builder, sig, args):
        fields = _fields(context, builder, args[0])
        data, _ = _array(context, builder, fields, "consts")
        builder.store(args[1], builder.gep(data, [fields.nc]))
        fields.nc = builder.add(fields.nc, context.get_constant(types.int64, 1))
        return context.get_dummy_value()
    return types.none(types.voidptr, types.float64), codegen


def external(name: str, address: int, signature) -> types.ExternalFunction:
    """A C function (a cfunc's address) that jitted code calls by symbol, not linked into its module."""
    llvm.add_symbol(name, address)
    return types.ExternalFunction(name, signature)


__all__ = ["tape_pointer", "tape_from_pointer", "arrays_from_pointer", "records",
           "constants", "arena_room", "want", "carve", "give_back",
           "value_at", "append", "append_const", "external"]
