"""Calls by reference: the driver of a tape.jit f (cache=False) calls f through a pointer to its machine code.

Numba links the code of every function a jitted function calls into the caller's module and compiles it to
machine code again there: f's driver compiled all of f a second time (and the recorders LLVM inlined into f). A
function whose compile marks its library (``MarkByReference``, for the Python functions in ``CALLERS``) instead
calls each compiled callee (already machine code in this process) through a global ``tape.by_reference.<address>``
(``llvmlite.binding.add_symbol``) holding the callee's address: the same machine code runs, nothing is compiled
twice. Such machine code is valid in this process only: a marked library must never be saved to disk or linked into
another (a driver is neither; a cache=True f's driver links f as Numba does). f itself links what it calls (LLVM
inlines the recorders there: by reference, recording was 1.5x slower). Numba internals:
``numba.core.base.user_function`` (how a call to a compiled function is lowered), a library's ``_finalized`` and the
call convention of ``context.call_conv``.
"""

from __future__ import annotations

import ctypes
import weakref

import llvmlite.binding as llvm
from llvmlite import ir as llvm_ir
from numba.core import base, cgutils
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.imputils import fix_returning_optional, impl_ret_new_ref

PREFIX = "tape.by_reference."
CALLERS: weakref.WeakSet = weakref.WeakSet()  # Python functions whose compiles call by reference
_CELLS: dict[str, ctypes.c_void_p] = {}  # symbol -> the cell holding a callee's address (code is never unloaded)
_linking = base.user_function


@register_pass(mutates_CFG=False, analysis_only=True)
class MarkByReference(FunctionPass):
    """Mark the library of a function in CALLERS: its calls to compiled functions go by reference."""

    _name = "tape_mark_by_reference"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        if state.library is None:  # made here as NativeLowering would make it
            state.library = state.targetctx.codegen().create_library(state.func_id.func_qualname)
            state.library.enable_object_caching()
        state.library.tape_by_reference = state.func_id.func in CALLERS
        return False


def _symbol(library, name: str) -> str:
    """The global holding the address of function ``name`` of a finalized library (made once per callee)."""
    address = library.get_pointer_to_function(name)
    symbol = f"{PREFIX}{address:x}"
    if symbol not in _CELLS:
        _CELLS[symbol] = ctypes.c_void_p(address)
        llvm.add_symbol(symbol, ctypes.addressof(_CELLS[symbol]))
    return symbol


class _Call:
    """Numba's lowering of a call to compiled ``fndesc`` (``user_function``), by reference where the caller's
    library is marked: ``libs`` (what Numba links into the caller) is read after each call."""

    def __init__(self, fndesc, libs):
        self.fndesc, self.linked, self.libs = fndesc, _linking(fndesc, libs), tuple(libs)
        self.signature = self.linked.signature

    def __call__(self, context, builder, sig, args, loc=None):
        libs = self.linked.libs
        if not (getattr(context.active_code_library, "tape_by_reference", False) and len(libs) == 1
                and libs[0]._finalized):  # a recursive call: the callee is still being compiled
            self.libs = self.linked.libs
            return self.linked(context, builder, sig, args)
        self.libs = ()
        fndesc = self.fndesc
        fnty = context.call_conv.get_function_type(fndesc.restype, fndesc.argtypes)
        symbol = _symbol(libs[0], fndesc.mangled_name)
        try:
            cell = builder.module.get_global(symbol)
        except KeyError:
            cell = llvm_ir.GlobalVariable(builder.module, llvm_ir.IntType(8).as_pointer(), name=symbol)
            cell.linkage = "external"
        fn = builder.bitcast(builder.load(cell), fnty.as_pointer())
        status, value = context.call_conv.call_function(builder, fn, fndesc.restype, fndesc.argtypes, args)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        value = fix_returning_optional(context, builder, sig, status, value)
        return impl_ret_new_ref(context, builder, fndesc.restype, value)


base.user_function = _Call

__all__ = ["CALLERS", "MarkByReference", "PREFIX"]
