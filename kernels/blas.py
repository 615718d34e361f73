"""NumPy's own BLAS for the Numba kernels: the CBLAS routines np.matmul calls, from the OpenBLAS NumPy bundles.

kernels/_array_driver.py declares them by their symbol names (NumPy's scipy-openblas64 build: the
``scipy_`` prefix and ``64_`` suffix, 64-bit integers); ``bind`` points those names at the library
NumPy itself loaded, so a driven matmul makes NumPy's call and gets its bits. Where NumPy has another
BLAS (MKL, Accelerate, a 32-bit OpenBLAS) the names point at a function that is never called, and
tape/sweeps/compiled.py leaves every matmul to NumPy's step.
"""

from __future__ import annotations

import ctypes
import glob
import os

import llvmlite.binding as ll
import numpy as np

_never = ctypes.CFUNCTYPE(None)(lambda: None)  # what the names link to where NumPy's OpenBLAS is not found


def _library() -> str | None:
    """The path of the OpenBLAS NumPy's matmul calls, or None where NumPy was built with another BLAS."""
    blas = getattr(np.__config__, "CONFIG", {}).get("Build Dependencies", {}).get("blas", {})
    if blas.get("name") != "scipy-openblas" or "USE64BITINT" not in str(blas.get("openblas configuration")):
        return None
    root = os.path.dirname(np.__file__)
    found = [*glob.glob(root + ".libs/*scipy_openblas64_*"), *glob.glob(root + "/.dylibs/*scipy_openblas64_*")]
    return found[0] if len(found) == 1 else None


def bind(symbols: tuple[str, ...]) -> bool:
    """Point each symbol name, for Numba's linker, at NumPy's OpenBLAS; whether it was found (checked once)."""
    path = _library()
    try:
        library = ctypes.CDLL(path) if path else None  # the copy NumPy loaded: the same file is opened once
        addresses = [ctypes.cast(getattr(library, name), ctypes.c_void_p).value for name in symbols]
    except (OSError, AttributeError):
        addresses = []
    found = len(addresses) == len(symbols) and all(addresses)
    never = ctypes.cast(_never, ctypes.c_void_p).value
    for name, address in zip(symbols, addresses if found else [never] * len(symbols), strict=True):
        ll.add_symbol(name, address)
    return found
