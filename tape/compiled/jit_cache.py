"""The cache of tape.jit's own functions and of tape.jit(cache=True) functions: keyed on their sources, as Numba
keys only on a file's stamp. Numba internals: ``FunctionCache`` (its ``_index_key``) with ``IndexDataCacheFile`` set
as a dispatcher's ``_cache``, and the kernels' locator classes (tape/kernels/compiling.py)."""

from __future__ import annotations

import hashlib
import os
from types import CodeType, ModuleType

import numba
import numpy as np
from numba.core.caching import FunctionCache, IndexDataCacheFile

from tape import kernels
from tape.kernels.compiling import _CacheImpl, _UserWide, cache_dir

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = [os.path.dirname(_HERE), os.path.dirname(os.path.abspath(kernels.__file__))]  # tape/, and
# kernels/ (tape/kernels/ once installed)


def _package_sources() -> list[str]:
    """Every Python file of tape (tape.kernels' too), in order: compiled code inlines what its callees read anywhere in
    the package (Numba checks only a function's own file's stamp)."""
    found = {os.path.join(root, name) for top in _PACKAGE for root, _, names in os.walk(top) for name in names
             if name.endswith(".py")}
    return sorted(found)


_DIGEST = hashlib.sha256(numba.__version__.encode())
for _path in _package_sources():
    with open(_path, "rb") as _file:
        _DIGEST.update(_path.encode() + b"\0" + _file.read())  # (its path: another install's folder, another key)
SOURCE_KEY = _DIGEST.hexdigest()[:16]  # (~4 ms, at a process's first tape.jit)
_SOURCES = {path for path in _package_sources() if not path.startswith(_PACKAGE[1] + os.sep)}  # tape's, not the
# kernels' (their own cache): tape.jit compiles functions of tape/api and tape/arrays too (composed.py's), which Numba
# kept in their own file's __pycache__, keyed by that file alone (machine code inlining callees edited since)
USER_CACHED: set = set()  # code objects of tape.jit(cache=True) functions
THROUGH = 3  # attributes read through at most (``ns.xp.maximum``: the object ns, the module xp, its maximum)


class JitCacheLocator(_UserWide):  # type: ignore[misc]
    """Numba's user-wide locator for tape's functions and tape.jit(cache=True) functions, in a folder per hash of
    Numba's version, tape's folder and every Python file of tape (SOURCE_KEY): machine code made by other sources is
    never loaded, nor another install's (two checkouts' processes at once overwrote each other's index and data
    files: Numba names them by module and function, not path)."""

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


class UserCache(FunctionCache):  # type: ignore[misc]
    """The cache of a tape.jit(cache=True) function f (``index`` ""), or of f's driver ("-driver", which links f in):
    f's folder and file stamp, and f's code and closure in every key, as Numba keys f, plus what Numba freezes into
    machine code and never checks on a load (a global that differs in the next run): ``frozen``."""

    def __init__(self, user, index: str):
        super().__init__(user)
        self._cache_file = IndexDataCacheFile(self._cache_path, self._impl.filename_base + index,
                                              self._impl.locator.get_source_stamp())

    def _index_key(self, sig, codegen):
        return *super()._index_key(sig, codegen), frozen(self._py_func.__code__, self._py_func.__globals__, set())


def frozen(code: CodeType, space: dict, seen: set) -> str:
    """A digest of what code compiled by Numba holds as constants: its own, and the values it reads from the globals
    ``space`` (each global it names, and each name it reads of a global module or object, THROUGH deep): data by
    value, jitted callees (a dispatcher's or JitFunction's py_func) and plain functions by their bytecode and
    ``frozen``."""
    values = level = [space[name] for name in code.co_names if name in space]
    for _ in range(THROUGH):
        level = [getattr(m, name) for m in level if _read_through(m) for name in code.co_names if hasattr(m, name)]
        values = values + level
    digest = hashlib.sha256()
    for v in (*code.co_consts, *values):
        fn = getattr(v, "py_func", v)  # a dispatcher's or JitFunction's f, or a plain function (read_through.py)
        callee = getattr(fn, "__code__", None)
        if isinstance(v, CodeType):
            v = frozen(v, space, seen)
        elif isinstance(callee, CodeType):  # (one met before: its bytecode)
            known = callee in seen
            seen.add(callee)
            v = callee.co_code.hex() + ("" if known else frozen(callee, fn.__globals__, seen))
        digest.update(_value(v).encode())
    return digest.hexdigest()


def _read_through(v) -> bool:
    """Whether f reads attributes of v as constants: a module's (Numba) or an object's (tape/compiled/read_through.py:
    not a function, class, number, array or tuple)."""
    return isinstance(v, ModuleType) or not (callable(v) or isinstance(v, (np.ndarray, tuple, int, float, complex, str,
                                                                               bytes, np.generic, type(None))))


def _value(v) -> str:
    """A value for ``frozen``: data by value (an array's repr elides most of its numbers), anything else its type."""
    if isinstance(v, np.ndarray):
        return f"{v.dtype.str}{v.shape}{hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()}"
    if isinstance(v, tuple):
        return "(" + ",".join(map(_value, v)) + ")"
    return repr(v) if isinstance(v, (int, float, complex, str, bytes, np.generic, type(None))) else type(v).__qualname__


def refusal(user, kinds: tuple) -> str:
    """The file whose presence says f (``user``, cached) does not type with array records for the array driver's
    argument types ``kinds`` (tape/compiled/jit.py), kept so that a later process does not type it again (0.2 CPU-s):
    keyed as f's cache entries are (its file and name, its code, ``frozen``) and on tape.jit's sources (the folder),
    so a changed f or a changed tape tries again."""
    code = user.__code__
    digest = hashlib.sha256(f"{code.co_filename}:{user.__qualname__}:{kinds}".encode() + code.co_code)
    digest.update(frozen(code, user.__globals__, set()).encode())
    return os.path.join(cache_dir(), "jit", SOURCE_KEY, "refused", digest.hexdigest()[:32])


def refuse(path: str, why: str) -> None:
    """Write a refusal's file, holding why (where the cache cannot be written, the next process types f again)."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as file:
            file.write(why)
    except OSError:
        pass


def refused_why(path: str) -> str | None:
    """What a refusal's file holds (why f did not type), or None where there is none."""
    try:
        with open(path) as file:
            return file.read()
    except OSError:
        return None


def cache_as(dispatcher, user, index: str) -> None:
    """Let ``dispatcher`` (f = ``user`` compiled, or its driver) load and save its machine code in a UserCache."""
    dispatcher._cache = UserCache(user, index)


__all__ = [
    "SOURCE_KEY", "USER_CACHED", "JitCacheLocator", "UserCache", "frozen", "cache_as", "refusal", "refuse",
    "refused_why"]
