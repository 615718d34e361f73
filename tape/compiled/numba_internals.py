"""Every Numba API tape.jit relies on beyond ``njit`` and ``overload`` (its compiler pass: compiler_pass.py;
calls by reference: by_reference.py).

Tested with Numba 0.68.1 (pyproject.toml pins the range). What is internal or experimental:
``numba.experimental.structref`` (the tape inside jitted code) and its payload layout read through
``structref._Utils`` (Vars hold the tape's meminfo pointer, borrowed, and append through it: the intrinsics over the
payload are in tape/compiled/numba_payload.py),
NRT meminfos with a destructor and a function compiled into it (array records' lives, tape/compiled/array_lives.py),
``numba.np.arrayobj.populate_array`` (Var arrays over the call's arena, no meminfo; their ``rows``/``vals`` attributes
by ``infer_getattr`` and ``lower_getattr``), ``numba.core.cgutils`` and meminfo pointers (the tape handed to
out-of-line growth cfuncs by ``llvmlite.binding.add_symbol``), struct proxies (building Var values in intrinsics),
``Type.unify`` plus ``lower_cast`` (a float meeting a Var), a compiler pass keyed to the ``bool()`` call Numba's
interpreter inserts before every branch (``$bool<offset>`` globals; the pass also rewrites builtin max/min calls and
swaps plain numba.njit helpers, read through ``CPUDispatcher._compiler.pipeline_class`` and ``targetoptions``, for
recompiles by this pipeline; their ``_compiler._failed_cache``: failed compiles' errors, tracebacks dropped),
the pass-manager API used to add it, and ``lower_builtin("getiter"/"iternext")`` with
``iternext_impl`` (``for v in xs``), and ``FunctionCache`` (its ``_index_key``) with ``IndexDataCacheFile`` set as a
dispatcher's ``_cache`` (tape.jit(cache=True): f and its driver; in tape/compiled/jit_cache.py), and the untyped
IR with a compile's state (lists of numbers made lists of Vars: tape/compiled/var_lists.py). A Numba release that
changes one of these breaks tape.jit here, in tape/compiled/numba_payload.py, jit_cache.py, compiler_pass.py,
var_lists.py and array_lives.py, and only
there (``typeof_impl`` in tape/compiled/jit.py, the
public extension API, makes a JitFunction its dispatcher inside jitted code). ``numba.np.linalg.ensure_blas`` is
swapped while ``numba.np.arraymath`` imports, at the first ``CPUContext.load_additional_registries`` (_registries).
"""

from __future__ import annotations

import importlib.util
import zlib

import numba
from numba import types
from numba.core import cgutils, cpu
from numba.core.compiler_lock import global_compiler_lock
from numba.core.errors import TypingError
from numba.core.imputils import RefType, impl_ret_new_ref, iternext_impl, lower_builtin, lower_getattr
from numba.core.typing.templates import AttributeTemplate, infer_getattr
from numba.experimental import structref
from numba.extending import intrinsic, lower_cast, make_attribute_wrapper, models, register_model
from numba.np.arrayobj import populate_array


def _scipy_linalg_installed() -> None:
    """numba.np.linalg.ensure_blas's ImportError where SciPy's linalg is not installed, without importing it."""
    if importlib.util.find_spec("scipy.linalg") is None:
        raise ImportError("scipy 0.16+ is required for linear algebra")


def _registries(context) -> None:
    """Numba's first compile in a process (CPUContext.load_additional_registries, then Numba's own again), with
    numba.np.arraymath imported first without scipy.linalg: its import calls ensure_blas, which imports scipy.linalg
    (0.15 CPU-s, reaching numpy.f2py) for a flag one typer reads; here that check asks only whether it is installed.
    Numba's BLAS users still call ensure_blas where they compile. A first compile: 0.30 -> 0.12 CPU-s."""
    from numba.np import linalg

    cpu.CPUContext.load_additional_registries = _load_registries  # type: ignore[method-assign]
    with global_compiler_lock:  # (no compile in another thread meets the swapped check)
        ensure, linalg.ensure_blas = linalg.ensure_blas, _scipy_linalg_installed
        try:
            from numba.np import arraymath
        finally:
            linalg.ensure_blas = ensure
        arraymath.ensure_blas = ensure
    _load_registries(context)


_load_registries = cpu.CPUContext.load_additional_registries
cpu.CPUContext.load_additional_registries = _registries  # type: ignore[method-assign]
TESTED = ("0.68.1",)  # Numba versions the jit tests ran on
NUMBA_VERSION = numba.__version__
FILES: dict[int, str] = {}  # file id (a crc32 of the path, as branches carry it) -> path


def file_id(path: str) -> int:
    """The number a branch carries for its file (stable across processes, so cached code agrees)."""
    key = zlib.crc32(path.encode()) & 0x7FFFFFFF
    FILES[key] = path
    return key


def where_of(code: int, fallback: str) -> str:
    """file:line of a branch code (file id << 24 | line); ``fallback`` for a branch without one."""
    if code < 0:
        return fallback
    path, line = FILES.get(code >> 24, "?"), code & 0xFFFFFF
    return f"{path}:{line}"


# --- the tape inside jitted code -------------------------------------------------------------


@structref.register
class TapeType(types.StructRef):
    """The record arrays, counts and checked branches, in jitted code."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


TAPE_FIELDS = [("op", types.uint8[::1]), ("in0", types.uint32[::1]), ("in1", types.uint32[::1]),
               ("val", types.float64[::1]), ("consts", types.float64[::1]), ("n", types.int64), ("nc", types.int64),
               ("rows", types.int64[::1]), ("outs", types.uint8[::1]), ("wheres", types.int64[::1]),
               ("nchk", types.int64), ("arena", types.int64[::1]), ("used", types.int64), ("want", types.int64),
               ("peak", types.int64), ("kept", types.List(types.int64[::1])), ("big", types.int64)]
tape_type = TapeType(TAPE_FIELDS)
new_struct = structref.new


# --- value types: Var, Condition, the inputs' sequence -----------------------------------------


class VarType(types.Type):
    """A record of the tape being recorded (index >= 0), or a number not yet recorded (index -1)."""

    def __init__(self):
        super().__init__(name="tape.Var")

    def unify(self, typingctx, other):
        if isinstance(other, (types.Float, types.Integer)):
            return self  # total = 0.0; total = total + x: the float becomes an unrecorded Var
        return None


class ConditionType(types.Type):
    """A comparison not yet recorded: a branch records it checked, tape.where as data."""

    def __init__(self):
        super().__init__(name="tape.Condition")


class VarArrayType(types.IterableType):
    """An array of Vars (1-d or 2-d, any layout): the inputs, and arrays made from them or by
    np.empty/zeros/ones/full with ``dtype=xs.dtype``. Per element a record index (``rows``; -1: a
    number not recorded, -2: never written) and its value or number (``vals``), two NumPy arrays of
    one shape, so views, slices, reshapes and copies are NumPy's."""

    def __init__(self, ndim: int, layout: str):
        self.ndim, self.layout, self.dtype = ndim, layout, types.float64  # (the values'; as ArrayRecordType's)
        self.rows_type = types.Array(types.int64, ndim, layout)  # type: ignore[call-overload]  # numba's stubs
        self.vals_type = types.Array(types.float64, ndim, layout)  # type: ignore[call-overload]
        super().__init__(name=f"tape.VarArray({ndim}d, {layout})")

    @property
    def iterator_type(self):
        return VarArrayIterType(self)

    def unify(self, typingctx, other):
        if isinstance(other, VarArrayType) and other.ndim == self.ndim:
            return VarArrayType(self.ndim, "A")  # u = xs.copy(); u = u[1:]: a view of either layout
        return None


class VarArrayIterType(types.SimpleIteratorType):
    """``iter(a)`` of a Var array: the next one's position."""

    def __init__(self, array: VarArrayType):
        self.array = array
        item = var_type if array.ndim == 1 else VarArrayType(array.ndim - 1, "C" if array.layout == "C" else "A")
        super().__init__(f"tape.VarArrayIter({array.name})", item)


class VarDTypeType(types.Type):
    """``xs.dtype`` of a Var array: what np.empty/zeros/ones/full take to make one (on xs's tape)."""

    def __init__(self):
        super().__init__(name="tape.VarDType")


class ArrayConditionType(types.Type):
    """``x <op> y`` with a Var array among x and y (tape/compiled/conditions.py): its operands, not yet recorded."""

    def __init__(self, op: str, x, y):
        self.op, self.x, self.y = op, x, y
        super().__init__(name=f"tape.ArrayCondition({op}, {x}, {y})")


register_model(ArrayConditionType)(lambda dmm, fe_type: models.StructModel(dmm, fe_type, [("x", fe_type.x),
                                                                                           ("y", fe_type.y)]))
make_attribute_wrapper(ArrayConditionType, "x", "x")
make_attribute_wrapper(ArrayConditionType, "y", "y")
var_type, condition_type, var_dtype_type = VarType(), ConditionType(), VarDTypeType()
# A Var's tape is its meminfo pointer, borrowed: no reference counts on copies (the driver and the
# inputs hold the tape; Vars never outlive the call). Records are read and appended through it below.
VAR_MEMBERS = [("tape", types.voidptr), ("index", types.int64), ("c", types.float64)]  # c: the value
# mode: 0 two records (code, i, j), 1 a record and a constant (code, i, c), 2 known (outcome)
CONDITION_MEMBERS = [("tape", types.voidptr), ("code", types.int64), ("i", types.int64), ("j", types.int64),
                     ("c", types.float64), ("mode", types.int64), ("outcome", types.boolean)]


for _typ, _members in ((VarType, VAR_MEMBERS), (ConditionType, CONDITION_MEMBERS),
                       (VarDTypeType, [("tape", types.voidptr)])):
    register_model(_typ)(lambda dmm, fe_type, m=_members: models.StructModel(dmm, fe_type, m))
    for _name, _ in _members:
        make_attribute_wrapper(_typ, _name, _name)


@register_model(VarArrayType)
class VarArrayModel(models.StructModel):
    """A Var array: its tape pointer, its two arrays' data pointers, their shape and strides (shared: see make_array).
    ``a.rows``/``a.vals`` are arrays over them without a meminfo: it borrows its elements (the call's arena, or
    the inputs the driver holds), so copies touch no reference count, and an op gets 5 words per 1-d operand."""

    def __init__(self, dmm, fe_type):
        shape = types.UniTuple(types.intp, fe_type.ndim)
        super().__init__(dmm, fe_type, [("tape", types.voidptr), ("rows", types.CPointer(types.int64)),
                                        ("vals", types.CPointer(types.float64)), ("shape", shape), ("strides", shape)])


make_attribute_wrapper(VarArrayType, "tape", "tape")


@infer_getattr
class _VarArrayParts(AttributeTemplate):
    key = VarArrayType

    def generic_resolve(self, typ, attr):
        return {"rows": typ.rows_type, "vals": typ.vals_type}.get(attr)


def _part(name: str):
    """``a.rows``/``a.vals``: an array over the Var array's pointer, shape and strides, no meminfo."""
    @lower_getattr(VarArrayType, name)
    def part(context, builder, typ, value):
        proxy = cgutils.create_struct_proxy(typ)(context, builder, value=value)
        ary = context.make_array(getattr(typ, f"{name}_type"))(context, builder)
        populate_array(ary, data=getattr(proxy, name), shape=cgutils.unpack_tuple(builder, proxy.shape),
                       strides=cgutils.unpack_tuple(builder, proxy.strides),
                       itemsize=context.get_constant(types.intp, 8), meminfo=None)
        return ary._getvalue()
    return part


LOWER_PARTS = {name: _part(name) for name in ("rows", "vals")}  # registered by lower_getattr as they are made


register_model(VarArrayIterType)(lambda dmm, fe_type: models.StructModel(
    dmm, fe_type, [("xs", fe_type.array), ("k", types.EphemeralPointer(types.int64))]))


@lower_builtin("getiter", VarArrayType)
def _array_iter(context, builder, sig, args):
    it = context.make_helper(builder, sig.return_type)
    it.xs = args[0]
    it.k = cgutils.alloca_once_value(builder, context.get_constant(types.int64, 0))
    context.nrt.incref(builder, sig.args[0], args[0])
    return impl_ret_new_ref(context, builder, sig.return_type, it._getvalue())


@lower_builtin("iternext", VarArrayIterType)
@iternext_impl(RefType.NEW)
def _array_next(context, builder, sig, args, result):
    typ = sig.args[0]
    it = context.make_helper(builder, typ, value=args[0])
    k = builder.load(it.k)
    n = context.compile_internal(builder, lambda xs: len(xs), types.int64(typ.array), [it.xs])
    valid = builder.icmp_signed("<", k, n)
    result.set_valid(valid)
    with builder.if_then(valid):
        result.yield_(context.compile_internal(builder, lambda xs, k: xs[k], typ.yield_type(typ.array, types.int64),
                                               [it.xs, k]))
        builder.store(builder.add(k, context.get_constant(types.int64, 1)), it.k)


def _struct(context, builder, typ, values: dict):
    """A struct value of typ with the given members (the rest zero), holding new references."""
    proxy = cgutils.create_struct_proxy(typ)(context, builder)
    for name, (value, vtype) in values.items():
        setattr(proxy, name, value)
        if vtype is not None and context.enable_nrt:
            context.nrt.incref(builder, vtype, value)
    return proxy._getvalue()


@intrinsic
def make_var(typingctx, p, index, value):
    """Var(p, index, value): record ``index`` of the tape whose pointer is p, and its value."""
    def codegen(context, builder, sig, args):
        return _struct(context, builder, var_type, {"tape": (args[0], None), "index": (args[1], None),
                                                    "c": (args[2], None)})
    return var_type(types.voidptr, types.int64, types.float64), codegen


@intrinsic
def unbound(typingctx, c):
    """A number as a Var that is not recorded (yet): index -1, no tape."""
    def codegen(context, builder, sig, args):
        value = context.cast(builder, args[0], sig.args[0], types.float64)
        return _struct(context, builder, var_type, {"index": (context.get_constant(types.int64, -1), None),
                                                    "c": (value, None)})
    return var_type(c), codegen


@intrinsic
def make_condition(typingctx, t, code, i, j, c, mode, outcome):
    """A Condition (see CONDITION_MEMBERS)."""
    def codegen(context, builder, sig, args):
        names = [name for name, _ in CONDITION_MEMBERS]
        values = {name: (arg, None) for name, arg in zip(names, args, strict=True)}
        return _struct(context, builder, condition_type, values)
    i64 = types.int64
    return condition_type(types.voidptr, i64, i64, i64, types.float64, i64, types.boolean), codegen


@intrinsic
def known_condition(typingctx, outcome):
    """A comparison of two numbers: no tape, just the outcome."""
    def codegen(context, builder, sig, args):
        return _struct(context, builder, condition_type, {"mode": (context.get_constant(types.int64, 2), None),
                                                          "outcome": (args[0], None)})
    return condition_type(types.boolean), codegen


@intrinsic
def make_array(typingctx, p, rows, vals):
    """A Var array over record indices ``rows`` and values ``vals`` (arrays of one type) of the tape p points to,
    borrowed (VarArrayModel): arrays of the call's arena, views of them, or the inputs. vals has rows' strides
    (both are made in one block, or are the driver's contiguous arrays, and viewed by the same indices)."""
    if not (isinstance(rows, types.Array) and rows.dtype == types.int64 and isinstance(vals, types.Array)
            and vals.dtype == types.float64 and (rows.ndim, rows.layout) == (vals.ndim, vals.layout)):
        return None
    typ = VarArrayType(rows.ndim, rows.layout)

    def codegen(context, builder, sig, args):
        r, v = (context.make_array(t)(context, builder, value=a) for t, a in zip(sig.args[1:], args[1:], strict=True))
        return _struct(context, builder, typ, {"tape": (args[0], None), "rows": (r.data, None), "vals": (v.data, None),
                                               "shape": (r.shape, None), "strides": (r.strides, None)})
    return typ(types.voidptr, rows, vals), codegen


@intrinsic
def make_dtype(typingctx, p):
    """``xs.dtype``: the tape p points to, for the Var arrays np.empty and friends make."""
    def codegen(context, builder, sig, args):
        return _struct(context, builder, var_dtype_type, {"tape": (args[0], None)})
    return var_dtype_type(types.voidptr), codegen


@intrinsic
def make_array_condition(typingctx, op, x, y):
    """An ArrayCondition ``x <op> y`` (op a string literal: a name of COMPARISONS)."""
    if not isinstance(op, types.StringLiteral):
        return None
    typ = ArrayConditionType(op.literal_value, x, y)

    def codegen(context, builder, sig, args):
        return _struct(context, builder, typ, {"x": (args[1], x), "y": (args[2], y)})
    return typ(op, x, y), codegen


def _borrow(context, builder, typ, value):
    """value with the meminfos of its arrays null (other members as they are, a new reference)."""
    if isinstance(typ, types.Array):
        ary = context.make_array(typ)(context, builder, value=value)
        ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
        return ary._getvalue()
    if isinstance(typ, types.BaseTuple):
        items = [_borrow(context, builder, t, builder.extract_value(value, k)) for k, t in enumerate(typ)]
        return context.make_tuple(builder, typ, items)
    context.nrt.incref(builder, typ, value)
    return value


@intrinsic
def borrowed(typingctx, x):
    """x (the inputs, the data: tuples of arrays) with its arrays' meminfos null: the caller holds them for
    the call, and copies inside touch no reference count (an atomic add and subtract per array per call
    of an op: RK4's coefficient arrays cost ~30% of its recording time)."""
    def codegen(context, builder, sig, args):
        return _borrow(context, builder, sig.args[0], args[0])
    return x(x), codegen


@lower_cast(VarArrayType, VarArrayType)
def _array_to_array(context, builder, fromty, toty, val):
    """A Var array as one of another layout (VarArrayType.unify): the same members."""
    return val


@lower_cast(types.Float, var_type)
@lower_cast(types.Integer, var_type)
def _number_to_var(context, builder, fromty, toty, val):
    value = context.cast(builder, val, fromty, types.float64)
    return _struct(context, builder, var_type, {"index": (context.get_constant(types.int64, -1), None),
                                                "c": (value, None)})


@intrinsic
def make_block(typingctx, p, data, shape):
    """A C-contiguous Var array of ``shape`` (a tuple of one or two) over the 2 * size elements carved at ``data``:
    rows, then values. No array on the way (its meminfo would cost reference-count calls per op)."""
    def codegen(context, builder, sig, args):
        dims, item = cgutils.unpack_tuple(builder, args[2]), context.get_constant(types.intp, 8)
        vals = builder.gep(args[1], [dims[0] if len(dims) == 1 else builder.mul(*dims)])
        strides = context.make_tuple(builder, sig.args[2], [builder.mul(item, d) for d in dims[1:]] + [item])
        vals = builder.bitcast(vals, context.get_value_type(types.CPointer(types.float64)))
        return _struct(context, builder, sig.return_type, {"tape": (args[0], None), "rows": (args[1], None),
                       "vals": (vals, None), "shape": (args[2], None), "strides": (strides, None)})
    return VarArrayType(len(shape), "C")(types.voidptr, types.CPointer(types.int64), shape), codegen


# --- array records (tape/compiled/array_records.py) ---------------------------------------------------------------


@structref.register
class ArraysType(types.StructRef):
    """The array records' side of a call: plan rows, the value arena, scratch for the driver's rows."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


@structref.register
class ReleasedType(types.StructRef):
    """The rows of the array records f can no longer reach, as their lives' destructors append them (array_lives.py)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


released_type = ReleasedType([("rows", types.int64[::1]), ("n", types.int64)])
LIFE = types.MemInfoPointer(types.voidptr)  # an array record's life: a meminfo shared by its views (null: never freed)
ARRAYS_FIELDS = [("plans", types.int64[:, ::1]), ("np", types.int64), ("aval", types.float64[::1]),
                 ("na", types.int64), ("scratch", types.float64[:, ::1]), ("row", types.int64[:, ::1]),
                 ("first", types.int64), ("recycle", types.int64), ("heads", types.int64[::1]),
                 ("busy", types.int64[::1]), ("recorded", types.int64), ("released", released_type),
                 ("pinned", types.int64), ("free", types.int64)]
arrays_type = ArraysType(ARRAYS_FIELDS)


class ArrayRecordType(types.Type):
    """A view of an array record of the tape (1-4 axes): the tape's and the arrays' pointers (borrowed, as a Var's),
    its record, its region's offset in the arena, the view's offset in the region, shape and strides, and the record's
    life (LIFE: reference counted by Numba with every copy, so its region is given away once nothing holds it)."""

    def __init__(self, ndim: int):
        self.ndim, self.dtype = ndim, types.float64  # (its elements': Numba's np.argmax and others read a.dtype of
        # whatever they are given: an AttributeError escaped typing, where a refusal was due)
        super().__init__(name=f"tape.ArrayRecord({ndim}d)")


@register_model(ArrayRecordType)
class ArrayRecordModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        axes = types.UniTuple(types.int64, fe_type.ndim)
        super().__init__(dmm, fe_type, [("tape", types.voidptr), ("arrays", types.voidptr), ("record", types.int64),
                                        ("offset", types.int64), ("start", types.int64), ("shape", axes),
                                        ("strides", axes), ("life", LIFE)])


for _name in ("tape", "arrays", "record", "offset", "start", "shape", "strides", "life"):
    make_attribute_wrapper(ArrayRecordType, _name, _name)


@intrinsic
def make_array_record(typingctx, p, q, record, offset, start, shape, strides, life):
    """A view of array record ``record`` (region at ``offset``; the view at ``start`` in it, ``shape`` and ``strides``
    tuples of one or two) of tape p, arrays q, holding the record's ``life`` (a new reference)."""
    typ = ArrayRecordType(len(shape))
    axes = types.UniTuple(types.int64, len(shape))

    def codegen(context, builder, sig, args):
        names = ("tape", "arrays", "record", "offset", "start", "shape", "strides", "life")
        return _struct(context, builder, typ, {name: (arg, LIFE if name == "life" else None)
                                               for name, arg in zip(names, args, strict=True)})
    return typ(types.voidptr, types.voidptr, types.int64, types.int64, types.int64, axes, axes, LIFE), codegen


@intrinsic
def no_life(typingctx):
    """The life of a record never given away (xs): a null meminfo, which Numba's reference counts skip."""
    def codegen(context, builder, sig, args):
        return cgutils.get_null_value(context.get_value_type(LIFE))
    return LIFE(), codegen


@intrinsic
def address(typingctx, a):
    """The address of an array's first element (for a C function called by symbol)."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(context.make_array(sig.args[0])(context, builder, value=args[0]).data,
                               cgutils.voidptr_t)
    return types.voidptr(a), codegen


__all__ = ["TESTED", "NUMBA_VERSION", "TypingError", "types", "tape_type", "TAPE_FIELDS", "new_struct", "var_type",
           "condition_type", "VarType", "ConditionType", "VarArrayType", "var_dtype_type", "make_var", "unbound",
           "make_condition", "known_condition", "make_array", "make_dtype", "where_of", "file_id", "make_block",
           "borrowed", "ArrayConditionType", "make_array_condition", "ArraysType", "arrays_type",
           "ARRAYS_FIELDS", "ArrayRecordType", "make_array_record", "address", "LIFE", "no_life", "released_type"]
