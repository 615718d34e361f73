"""Link-only code: while tape.jit compiles, functions that are only ever linked into a caller get no machine code.

Numba compiles every function to machine code of its own, then links its optimized LLVM module into each caller,
whose machine code holds it again. An ``@overload`` implementation (and ``compile_subroutine``'s helpers) has no
CPython wrapper: nothing calls it but the callers it is linked into, so its own machine code is never run. During a
compile of tape's ``Pipeline`` (``compiling``) such a library (``no_cpython_wrapper``) is linked and optimized as
before, and callers link that module, but it is not handed to the execution engine; that happens if its address is
ever asked for (``get_pointer_to_function`` of a symbol it defines) or it is saved to a cache
(tape/compiled/overload_cache.py). f's machine code differs somewhat (f links the optimized IR as it is, where the
callee's own machine-code generation had apparently changed it: rk4-array's f makes 94 calls instead of 102); the
records do not. Its environment (what a raise with runtime values reads) is set once a module defining that global
is machine code. Numba internals: ``BaseNativeLowering.run_pass``, ``CPUContext.get_executable``, a library's
``_finalize_final_module``, ``_final_module`` and ``serialize_using_object_code``, ``JitEngine.is_symbol_defined``
and ``set_env``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from numba.core import codegen, cpu, typed_passes
from numba.core.compiler_lock import global_compiler_lock

_PENDING: dict = {}  # environment global -> the environment of a link-only function, set when the global exists
_active = 0  # tape Pipeline compiles in progress (under Numba's compiler lock)
_lowering = typed_passes.BaseNativeLowering.run_pass
_executable = cpu.CPUContext.get_executable
_finalize = codegen.CPUCodeLibrary._finalize_final_module
_pointer = codegen.JITCodeLibrary.get_pointer_to_function
_serialize = codegen.CPUCodeLibrary.serialize_using_object_code


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """Within: libraries without a CPython wrapper are link-only (tape's Pipeline compiles in it)."""
    global _active
    with global_compiler_lock:
        _active += 1
        try:
            yield
        finally:
            _active -= 1


def _run_lowering(self, state):
    if _active and state.flags.no_cpython_wrapper:
        if state.library is None:  # made here as NativeLowering would make it
            state.library = state.targetctx.codegen().create_library(state.func_id.func_qualname)
            state.library.enable_object_caching()
        state.library.tape_link_only = True
    return _lowering(self, state)


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
    _finalize_final_module(self)


def _get_pointer_to_function(self, name):
    if getattr(self, "tape_link_only", False) and _defines(self._final_module, name):
        _machine_code(self)
    return _pointer(self, name)


def _serialize_using_object_code(self):
    if getattr(self, "tape_link_only", False):
        _machine_code(self)
    return _serialize(self)


def _defines(module, name: str) -> bool:
    try:
        return not module.get_function(name).is_declaration
    except NameError:
        return False


typed_passes.BaseNativeLowering.run_pass = _run_lowering  # type: ignore[method-assign]
cpu.CPUContext.get_executable = _get_executable  # type: ignore[method-assign]
codegen.CPUCodeLibrary._finalize_final_module = _finalize_final_module  # type: ignore[method-assign]
codegen.JITCodeLibrary.get_pointer_to_function = _get_pointer_to_function  # type: ignore[method-assign]
codegen.CPUCodeLibrary.serialize_using_object_code = _serialize_using_object_code  # type: ignore[method-assign]

__all__ = ["compiling"]
