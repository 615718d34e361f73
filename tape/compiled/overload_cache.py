"""tape's overloads of Var arrays and arithmetic, cached across processes as tape's recorders are.

Each implementation an overload returns (one per op and operand types: ``y + 0.5 * h * k`` of Var arrays took
~0.5 s of CPU each to compile) is kept in tape's jit cache (tape/compiled/jit_cache.py: a folder per hash of
every source of tape and Numba's version). Numba keys a closure on a pickle of its cells, and a pickled dispatcher
holds a fresh uuid in every process: it would never load again; and it keys code on its bytecode alone, the same
for ``lambda: max(a, b)`` and ``lambda: min(a, b)``. The key of a function of tape/compiled here is its code and
what its cells are: functions and dispatchers by module, name, bytecode, constants and options (and their own
cells), anything else by repr; a cell without a stable repr (an object's address) keeps Numba's key.
A file of tape's jit cache that cannot be loaded is a miss (``kernels.compiling.OWN``: compiled and saved again).
A typer may return a jitted function of the same arguments (``vv`` for ``lambda x, y: vv(x, y)``): the call goes to it
directly, with no forwarding function of its own for Numba to compile (``direct``).
Numba internals: ``FunctionCache._index_key``, ``_OverloadFunctionTemplate._get_jit_decorator``.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from types import CodeType
from typing import Any

from numba import extending
from numba.core import caching
from numba.core.dispatcher import Dispatcher
from numba.core.typing import templates

from tape.compiled.jit_cache import JitCacheLocator
from tape.kernels.compiling import OWN

# tape.jit's own functions are called from jitted code only: no wrappers for Python or C callers (less to compile)
NO_WRAPPERS: Any = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}
CACHED: Any = {"jit_options": {"cache": True, **NO_WRAPPERS}}
_numba_key = caching.FunctionCache._index_key


def _named(register: Any) -> Any:
    """register(typer), each implementation the typer returns named by what it is (``described``): closures of one
    factory (one per op) get their own cache files and symbols, never another's code from another process."""
    def registered(typer: Any) -> Any:
        @functools.wraps(typer)
        def typed(*args: Any, **kwargs: Any) -> Any:
            impl = typer(*args, **kwargs)
            return direct(impl, typer) if isinstance(impl, Dispatcher) else own_name(impl)
        return register(typed)
    return registered


def direct(dispatcher: Any, typer: Any) -> Any:
    """A stand-in implementation that Numba takes as ``dispatcher`` itself (``_get_jit_decorator``): a call of the
    overload is a call of it, where a forwarding lambda was a compile of its own each (n-body's cold first gradient:
    ~0.015 CPU-s each, 8 of its 79 compiles)."""
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("never called: Numba calls the dispatcher")
    stand_in.__signature__ = inspect.signature(typer)  # type: ignore[attr-defined]  # as Numba's check wants
    stand_in._tape_direct = dispatcher  # type: ignore[attr-defined]
    return stand_in


_numba_jitter = templates._OverloadFunctionTemplate._get_jit_decorator


def _get_jit_decorator(self: Any) -> Any:
    """Numba's decorator of an overload's implementation, but a ``direct`` stand-in's dispatcher is taken as is."""
    jitter = _numba_jitter(self)
    return lambda **options: lambda fn: getattr(fn, "_tape_direct", None) or jitter(**options)(fn)


def own_name(fn: Any) -> Any:
    """fn, a closure of tape/compiled, named by what it is (a hash of ``described`` appended to its qualified name):
    closures of one factory get their own cache files and symbols, never another's code from another process."""
    if getattr(fn, "__closure__", None) and (fn.__module__ or "").startswith("tape.compiled."):
        what = described(fn)
        if " at 0x" not in what and not getattr(fn, "_tape_named", False):
            fn.__qualname__ = f"{fn.__qualname__}_{hashlib.sha256(what.encode()).hexdigest()[:16]}"
            fn._tape_named = True
    return fn


def _options(forceinline: bool) -> Any:
    """The jit options of an overload's implementations; ``forceinline``: inlined where called (alwaysinline)."""
    return {"jit_options": {**CACHED["jit_options"], "forceinline": True}} if forceinline else CACHED


def overload(fn: Any, forceinline: bool = False, **options: Any) -> Any:
    return _named(extending.overload(fn, **_options(forceinline), **options))


def overload_method(typ: Any, name: str, forceinline: bool = False, **options: Any) -> Any:
    return _named(extending.overload_method(typ, name, **_options(forceinline), **options))


def overload_attribute(typ: Any, name: str, **options: Any) -> Any:
    return _named(extending.overload_attribute(typ, name, **CACHED, **options))


def _code(code: CodeType) -> str:
    """A code object by its bytecode, names and constants (nested code objects likewise)."""
    consts = [_code(c) if isinstance(c, CodeType) else repr(c) for c in code.co_consts]
    return f"{code.co_code.hex()}|{code.co_names}|{consts}"


def described(value: Any, depth: int = 0) -> str:
    """What a closure cell is, the same in every process: a function or dispatcher by its code and cells."""
    fn = getattr(value, "py_func", value)
    code = getattr(fn, "__code__", None)
    if not isinstance(code, CodeType) or depth > 8:
        return repr(value)
    cells = ",".join(described(c.cell_contents, depth + 1) for c in fn.__closure__ or ())
    return f"{fn.__module__}.{fn.__qualname__}:{_code(code)}:{getattr(value, 'targetoptions', '')}({cells})"


def _index_key(self, sig, codegen):
    fn = self._py_func
    if not (fn.__module__ or "").startswith("tape.compiled."):
        return _numba_key(self, sig, codegen)
    what = described(fn)
    if " at 0x" in what:  # an address: not the same in the next process
        return _numba_key(self, sig, codegen)
    return sig, codegen.magic_tuple(), (hashlib.sha256(what.encode()).hexdigest(),)


caching.FunctionCache._index_key = _index_key  # type: ignore[method-assign]
templates._OverloadFunctionTemplate._get_jit_decorator = _get_jit_decorator  # type: ignore[method-assign]
OWN.append(JitCacheLocator)

__all__ = ["overload", "overload_method", "overload_attribute", "described", "own_name", "NO_WRAPPERS"]
