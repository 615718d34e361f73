"""Every Numba API tape.jit relies on beyond ``njit`` and ``overload``, in one place.

Tested with Numba 0.68.1 (pyproject.toml pins the range). What is internal or experimental:
``numba.experimental.structref`` (the tape inside jitted code), ``numba.core.cgutils``
and meminfo pointers (the tape handed to out-of-line growth cfuncs by ``llvmlite.binding.add_symbol``),
struct proxies (building Var values in intrinsics), ``Type.unify`` plus ``lower_cast``
(a float meeting a Var), a compiler pass keyed to the ``bool()`` call Numba's interpreter
inserts before every branch (``$bool<offset>`` globals), and the pass-manager API used to
add it. A Numba release that changes one of these breaks tape.jit here, and only here.
"""

from __future__ import annotations

import hashlib
import os
import zlib

import llvmlite.binding as llvm
import numba
from numba import types
from numba.core import cgutils, ir
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.errors import TypingError
from numba.core.untyped_passes import TranslateByteCode
from numba.experimental import structref
from numba.extending import intrinsic, lower_cast, make_attribute_wrapper, models, register_model

from tape.kernels._numba import _CacheImpl, _UserWide, cache_dir

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


# --- the cache of tape.jit's own functions: keyed on their sources, as Numba keys only on a file's stamp ----

_HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCES = sorted(os.path.join(_HERE, name) for name in os.listdir(_HERE) if name.startswith("_jit"))
_DIGEST = hashlib.sha256(numba.__version__.encode())
for _path in _SOURCES:
    with open(_path, "rb") as _file:
        _DIGEST.update(_file.read())
SOURCE_KEY = _DIGEST.hexdigest()[:16]
USER_CACHED: set = set()  # code objects of tape.jit(cache=True) functions


class JitCacheLocator(_UserWide):  # type: ignore[misc]
    """Numba's user-wide locator for tape/_jit*.py and tape.jit(cache=True) functions, in a folder per hash of
    tape/_jit*.py, the op table they are generated from, and Numba's version: machine code made by other
    recorders is never loaded."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        user = getattr(py_func, "__code__", None) in USER_CACHED
        where = self.get_suitable_cache_subpath(py_file) if user else ""
        self._cache_path = os.path.join(cache_dir(), "jit", SOURCE_KEY, where)

    @classmethod
    def from_function(cls, py_func, py_file):
        if os.path.abspath(py_file) not in _SOURCES and getattr(py_func, "__code__", None) not in USER_CACHED:
            return None
        return super().from_function(py_func, py_file)


if JitCacheLocator not in _CacheImpl._locator_classes:
    _CacheImpl._locator_classes.insert(0, JitCacheLocator)


# --- the tape inside jitted code -------------------------------------------------------------


@structref.register
class TapeType(types.StructRef):
    """The record arrays, counts and checked branches, in jitted code."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


TAPE_FIELDS = [("op", types.uint8[::1]), ("in0", types.uint32[::1]), ("in1", types.uint32[::1]),
               ("val", types.float64[::1]), ("consts", types.float64[::1]), ("n", types.int64), ("nc", types.int64),
               ("rows", types.int64[::1]), ("outs", types.uint8[::1]), ("wheres", types.int64[::1]),
               ("nchk", types.int64)]
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


class VarsType(types.Type):
    """The inputs handed to f: a sequence of Vars indexable by int."""

    def __init__(self):
        super().__init__(name="tape.Vars")


var_type, condition_type, vars_type = VarType(), ConditionType(), VarsType()
VAR_MEMBERS = [("tape", tape_type), ("index", types.int64), ("c", types.float64)]
# mode: 0 two records (code, i, j), 1 a record and a constant (code, i, c), 2 known (outcome)
CONDITION_MEMBERS = [("tape", tape_type), ("code", types.int64), ("i", types.int64), ("j", types.int64),
                     ("c", types.float64), ("mode", types.int64), ("outcome", types.boolean)]
VARS_MEMBERS = [("tape", tape_type), ("rows", types.int64[::1])]


for _typ, _members in ((VarType, VAR_MEMBERS), (ConditionType, CONDITION_MEMBERS), (VarsType, VARS_MEMBERS)):
    register_model(_typ)(lambda dmm, fe_type, m=_members: models.StructModel(dmm, fe_type, m))
    for _name, _ in _members:
        make_attribute_wrapper(_typ, _name, _name)


def _struct(context, builder, typ, values: dict):
    """A struct value of typ with the given members (the rest zero), holding new references."""
    proxy = cgutils.create_struct_proxy(typ)(context, builder)
    members = dict(VAR_MEMBERS + CONDITION_MEMBERS + VARS_MEMBERS)
    for name, (value, vtype) in values.items():
        setattr(proxy, name, value)
        if vtype is not None and context.enable_nrt:
            context.nrt.incref(builder, members[name] if vtype == "member" else vtype, value)
    return proxy._getvalue()


@intrinsic
def make_var(typingctx, t, index):
    """Var(t, index): record ``index`` of tape t."""
    def codegen(context, builder, sig, args):
        return _struct(context, builder, var_type, {"tape": (args[0], sig.args[0]), "index": (args[1], None),
                                                    "c": (context.get_constant(types.float64, 0.0), None)})
    return var_type(t, types.int64), codegen


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
        values = {name: (arg, sig.args[0] if name == "tape" else None) for name, arg in zip(names, args, strict=True)}
        return _struct(context, builder, condition_type, values)
    return condition_type(t, types.int64, types.int64, types.int64, types.float64, types.int64, types.boolean), codegen


@intrinsic
def known_condition(typingctx, outcome):
    """A comparison of two numbers: no tape, just the outcome."""
    def codegen(context, builder, sig, args):
        return _struct(context, builder, condition_type, {"mode": (context.get_constant(types.int64, 2), None),
                                                          "outcome": (args[0], None)})
    return condition_type(types.boolean), codegen


@intrinsic
def make_vars(typingctx, t, rows):
    """The inputs: records ``rows`` of tape t."""
    def codegen(context, builder, sig, args):
        return _struct(context, builder, vars_type, {"tape": (args[0], sig.args[0]), "rows": (args[1], sig.args[1])})
    return vars_type(t, rows), codegen


@lower_cast(types.Float, var_type)
@lower_cast(types.Integer, var_type)
def _number_to_var(context, builder, fromty, toty, val):
    value = context.cast(builder, val, fromty, types.float64)
    return _struct(context, builder, var_type, {"index": (context.get_constant(types.int64, -1), None),
                                                "c": (value, None)})


@intrinsic
def tape_pointer(typingctx, t):
    """The tape's meminfo pointer, borrowed: for the out-of-line growth functions."""
    def codegen(context, builder, sig, args):
        st = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
        return builder.bitcast(st.meminfo, cgutils.voidptr_t)
    return types.voidptr(t), codegen


@intrinsic
def tape_from_pointer(typingctx, p):
    """The tape of a meminfo pointer (a new reference)."""
    def codegen(context, builder, sig, args):
        st = cgutils.create_struct_proxy(tape_type)(context, builder)
        st.meminfo = builder.bitcast(args[0], st.meminfo.type)
        context.nrt.incref(builder, tape_type, st._getvalue())
        return st._getvalue()
    return tape_type(types.voidptr), codegen


def external(name: str, address: int, signature) -> types.ExternalFunction:
    """A C function (a cfunc's address) that jitted code calls by symbol, not linked into its module."""
    llvm.add_symbol(name, address)
    return types.ExternalFunction(name, signature)


# --- the compiler pass: every branch on a Condition records where it is ----------------------


def branch(condition, where):
    """What ``if c:`` becomes in a tape.jit function: bool(c), told file:line (overloaded in tape._jit)."""
    return bool(condition)


@register_pass(mutates_CFG=False, analysis_only=False)
class BranchLines(FunctionPass):
    """Rewrite the interpreter's ``$bool<offset> = global(bool); $pred = $bool(x)`` before each
    branch into ``branch(x, file_id << 24 | line)``."""

    _name = "tape_branch_lines"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        changed = False
        for block in state.func_ir.blocks.values():
            renamed: set[str] = set()
            body = []
            for stmt in block.body:
                if (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Global) and stmt.value.value is bool
                        and stmt.target.name.startswith("$bool")):
                    stmt = ir.Assign(ir.Global("branch", branch, stmt.loc), stmt.target, stmt.loc)
                    renamed.add(stmt.target.name)
                elif (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call"
                      and stmt.value.func.name in renamed and len(stmt.value.args) == 1):
                    loc = stmt.loc
                    code = file_id(loc.filename) << 24 | min(loc.line or 0, 0xFFFFFF)
                    where = ir.Var(block.scope, f"$where{len(body)}_{stmt.target.name}", loc)
                    body.append(ir.Assign(ir.Const(code, loc), where, loc))
                    stmt.value.args = [stmt.value.args[0], where]
                    changed = True
                body.append(stmt)
            block.body = body
        return changed


class Pipeline(CompilerBase):
    """Numba's nopython pipeline with BranchLines after the bytecode is translated."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.add_pass_after(BranchLines, TranslateByteCode)
        pm.finalize()
        return [pm]


__all__ = ["TESTED", "NUMBA_VERSION", "TypingError", "types", "tape_type", "new_struct", "var_type", "condition_type",
           "vars_type", "VarType", "ConditionType", "VarsType", "make_var", "unbound", "make_condition",
           "known_condition", "make_vars", "tape_pointer", "tape_from_pointer", "external", "branch", "Pipeline",
           "where_of", "file_id", "USER_CACHED"]
