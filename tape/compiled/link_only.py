"""Link-only code: while tape.jit compiles, functions that are only ever linked into a caller get no machine code.

Numba compiles every function to machine code of its own, then links its optimized LLVM module into each caller,
whose machine code holds it again. An ``@overload`` implementation (and ``compile_subroutine``'s helpers) has no
CPython wrapper: nothing calls it but the callers it is linked into, so its own machine code is never run. During a
compile of tape's ``Pipeline`` (``compiling``) such a library (``no_cpython_wrapper``) is linked as before, and
callers link that module, but it is not handed to the execution engine; that happens if its address is ever asked
for (``get_pointer_to_function`` of a symbol it defines). Nor is it optimized as a module (O3): a caller that is
machine code (the driver) links it with everything else and optimizes the whole once, where Numba ran O3 at every
level of the call tree over all a library links (n-body's cold first gradient 6.2-6.4 -> 5.5-5.6 CPU-s; the
drivers' machine code makes the same calls, instructions within 1%); its per-function passes still run.
Cached (tape/compiled/overload_cache.py), it is saved as its module (bitcode, its definitions external, so that
O3 keeps them if it becomes machine code) and loaded link-only again: no machine code is made or loaded for it.
A cached tape.jit f compiled for Vars (``LINKED``) is one too: no Python or C caller can pass a Var, so it gets
no wrappers; never a recursive f (not cached: its driver calls it by address). Its environment (what a raise with
runtime values reads) is set once a module defining that global is machine code. While tape compiles, Numba's
"numba:llvm_lock" events at every LLVM call are off (a timer of the lock's hold; 28,000 calls in n-body's first
gradient, 0.2-0.4 CPU-s).
Numba internals: ``BaseNativeLowering.run_pass``, ``CPUContext.get_executable``, a library's
``_finalize_final_module``, ``_final_module``, ``serialize_using_object_code`` and ``_unserialize``,
``JitEngine.is_symbol_defined``, ``JITCPUCodegen.set_env`` and ``_optimize_final_module``; llvmlite's
``ffi.lib._lock``.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator

import llvmlite.binding as llvm
from llvmlite.binding import ffi
from numba.core import codegen, cpu, typed_passes
from numba.core.compiler_lock import global_compiler_lock

from tape.compiled.numba_internals import VarArrayType, VarType

_PENDING: dict = {}  # environment global -> the environment of a link-only function, set when the global exists
_active = 0  # tape Pipeline compiles in progress (under Numba's compiler lock)
_lowering = typed_passes.BaseNativeLowering.run_pass
_executable = cpu.CPUContext.get_executable
_finalize = codegen.CPUCodeLibrary._finalize_final_module
_optimize = codegen.CPUCodeLibrary._optimize_final_module
_pointer = codegen.JITCodeLibrary.get_pointer_to_function
_serialize = codegen.CPUCodeLibrary.serialize_using_object_code
_unserialize_numba = codegen.CPUCodeLibrary._unserialize
_set_env_numba = codegen.JITCPUCodegen.set_env
LINKED: weakref.WeakSet = weakref.WeakSet()  # Python functions (cached tape.jit fs) link-only where typed for Vars
LINK_ONLY = "tape-link-only"  # how a link-only library is cached: the bitcode its callers link


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """Within: libraries without a CPython wrapper are link-only (tape's Pipeline compiles in it)."""
    global _active
    with global_compiler_lock:
        if not _active:
            callbacks = _lock_callbacks([])
        _active += 1
        try:
            yield
        finally:
            _active -= 1
            if not _active:
                _lock_callbacks(callbacks)


def _lock_callbacks(callbacks: list) -> list:
    """Set llvmlite's callbacks at every LLVM call (Numba's llvm_lock events); the ones before. Swapped under the
    lock they run under, so no call sees half of a pair."""
    lock = ffi.lib._lock
    with lock._lock:
        before, lock._cblist = lock._cblist, callbacks
    return before


def _run_lowering(self, state):
    linked = _active and state.func_id.func in LINKED and any(isinstance(a, (VarType, VarArrayType))
                                                                for a in state.args)
    if linked:
        state.flags.no_cpython_wrapper = state.flags.no_cfunc_wrapper = True  # no Python or C caller has a Var
    if _active and state.flags.no_cpython_wrapper:
        if state.library is None:  # made here as NativeLowering would make it
            state.library = state.targetctx.codegen().create_library(state.func_id.func_qualname)
            state.library.enable_object_caching()
        state.library.tape_link_only = state.library.tape_unoptimized = True
    return _lowering(self, state)


def _optimize_final_module(self):
    if not getattr(self, "tape_unoptimized", False):
        _optimize(self)


def _get_executable(self, library, fndesc, env):
    if not getattr(library, "tape_link_only", False):
        return _executable(self, library, fndesc, env)
    library._ensure_finalized()  # linked and optimized (for its callers), no machine code
    _PENDING[self.get_env_name(fndesc)] = env
    return cpu._dynfunc.make_function(fndesc.lookup_module(), fndesc.qualname.split(".")[-1],
                                      f"compiled wrapper for {fndesc.qualname!r}", 0, env, (library,))


def _finalize_final_module(self):
    if getattr(self, "tape_link_only", False):
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        self._finalized = True
        return
    _finalize(self)
    engine = self._codegen._engine
    for name in [name for name in _PENDING if engine.is_symbol_defined(name)]:
        self._codegen.set_env(name, _PENDING.pop(name))


def _machine_code(self):
    """Machine code after all (its address is asked for, or it is saved to a cache): handed to the engine now."""
    self.tape_link_only = False
    if self.tape_unoptimized:  # optimized as its callers would have
        self.tape_unoptimized = False
        _optimize(self)
    _finalize_final_module(self)


def _get_pointer_to_function(self, name):
    if getattr(self, "tape_link_only", False) and _defines(self._final_module, name):
        _machine_code(self)
    return _pointer(self, name)


def _serialize_using_object_code(self):
    if getattr(self, "tape_link_only", False):  # its IR alone: no machine code made or loaded
        return self.name, LINK_ONLY, self._final_module.as_bitcode()
    return _serialize(self)


def _set_env(self, name, env):
    if not self._engine.is_symbol_defined(name):  # a link-only library's, loaded: set once its callers are code
        _PENDING[name] = env
        return
    _set_env_numba(self, name, env)


def _unserialize(cls, codegen, state):
    name, kind, data = state
    if kind != LINK_ONLY:
        return _unserialize_numba(codegen, state)
    self = codegen.create_library(name)
    self.tape_link_only = self.tape_unoptimized = True
    self._final_module = llvm.parse_bitcode(data)  # its definitions external: O3 keeps them (_machine_code)
    self._finalize_final_module()
    return self


def _defines(module, name: str) -> bool:
    try:
        return not module.get_function(name).is_declaration
    except NameError:
        return False


typed_passes.BaseNativeLowering.run_pass = _run_lowering  # type: ignore[method-assign]
cpu.CPUContext.get_executable = _get_executable  # type: ignore[method-assign]
codegen.CPUCodeLibrary._finalize_final_module = _finalize_final_module  # type: ignore[method-assign]
codegen.CPUCodeLibrary._optimize_final_module = _optimize_final_module  # type: ignore[method-assign]
codegen.JITCodeLibrary.get_pointer_to_function = _get_pointer_to_function  # type: ignore[method-assign]
codegen.CPUCodeLibrary.serialize_using_object_code = _serialize_using_object_code  # type: ignore[method-assign]
codegen.JITCPUCodegen.set_env = _set_env  # type: ignore[method-assign]
codegen.CPUCodeLibrary._unserialize = classmethod(_unserialize)  # type: ignore[method-assign,assignment]

__all__ = ["compiling", "LINKED"]
