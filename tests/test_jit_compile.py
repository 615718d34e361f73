"""tape.jit's compiles: the driver of a cache=False f calls f by reference (f is not compiled twice), a cache=True
f's driver links f as Numba does (its machine code is saved for other processes)."""

import importlib.util
import shutil

import numpy as np
import pytest

import tape
from tape.compiled.by_reference import PREFIX


def f(xs):
    s = 0.0
    for i in range(xs.shape[0]):
        s += xs[i] * xs[i]
    return s


def by_reference(library) -> bool:
    return any(g.name.startswith(PREFIX) for g in library._final_module.global_variables)


def defined(library) -> set:
    return {fn.name for fn in library._final_module.functions if not fn.is_declaration}


def compiled(jf):
    """(f's compile, its driver's) after a first gradient."""
    assert tape.grad(jf)(np.array([1.0, 2.0])).tolist() == [2.0, 4.0]
    (user,), (drive,) = jf.dispatcher.overloads.values(), jf._drive.overloads.values()
    return user, drive


def test_the_driver_of_a_cache_false_f_calls_f_by_reference():
    user, drive = compiled(tape.jit(f))
    assert user.fndesc.mangled_name not in defined(drive.library) and by_reference(drive.library)
    assert not by_reference(user.library)  # f links the recorders (LLVM inlines them)


CACHED = """
import tape

@tape.jit(cache=True)
def f(xs):
    s = 0.0
    for i in range(xs.shape[0]):
        s += xs[i] * xs[i]
    return s
"""


@pytest.fixture
def module(tmp_path):
    (tmp_path / "cached_f.py").write_text(CACHED)
    spec = importlib.util.spec_from_file_location("cached_f", tmp_path / "cached_f.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield mod
    shutil.rmtree(mod.f.dispatcher._cache._cache_path, ignore_errors=True)  # this test's entries only


def test_a_cache_true_f_links_what_it_calls(module):
    user, drive = compiled(module.f)
    assert not by_reference(drive.library) and not by_reference(user.library)  # f linked in (and inlined there)
