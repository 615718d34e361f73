"""tape.jit's compiles: the driver of a cache=False f calls f by reference (f is not compiled twice), a cache=True
f's driver links f as Numba does (its machine code is saved for other processes); overloads get no machine code of
their own."""

import ctypes
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import numba
import numpy as np
import pytest
from llvmlite.binding import ffi
from numba.extending import overload

import tape
from tape.compiled import link_only
from tape.compiled.by_reference import PREFIX
from tape.compiled.link_only import compiling
from tape.compiled.overload_cache import described


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
    user, drive = compiled(tape.jit(f, cache=False))  # f has a file: cached by default
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


def test_a_cache_true_f_of_vars_is_linked_into_its_driver_only(module, monkeypatch):
    """No machine code, no wrappers, no module optimization of its own: the driver optimizes f with what it links."""
    optimized: list = []
    optimize = link_only._optimize
    monkeypatch.setattr(link_only, "_optimize", lambda library: (optimized.append(library), optimize(library)))
    user, drive = compiled(module.f)
    assert user.library.tape_link_only and user.library not in optimized and drive.library in optimized
    assert user.fndesc.llvm_cpython_wrapper_name not in defined(user.library)
    assert user.fndesc.mangled_name in defined(drive.library)
    assert tape.grad(module.f)(np.array([1.0, 2.0, 3.0])).tolist() == [2.0, 4.0, 6.0]


def test_a_cache_false_f_has_machine_code_of_its_own():  # its driver calls it by address (a recursive f too)
    user, _ = compiled(tape.jit(f, cache=False))
    assert not getattr(user.library, "tape_link_only", False) and not getattr(user.library, "tape_unoptimized", False)


def checked(n):
    """A function whose overload raises with a runtime value (the message boxes it through the environment)."""


@overload(checked)
def _checked(n):
    def impl(n):
        if n > 2:
            raise ValueError("too many", n)
        return n
    return impl


@tape.jit(cache=False)  # compiled in this process: its libraries are read
def counts(xs):
    return xs[0] * checked(len(xs))


def test_an_overload_of_a_tape_jit_f_is_link_only():
    assert tape.grad(counts)(np.array([1.0, 2.0])).tolist() == [2.0, 0.0]
    (user,) = counts.dispatcher.overloads.values()
    impl = next(lib for lib in user.library._linking_libraries if "_checked" in lib.name)
    assert impl.tape_link_only and not getattr(user.library, "tape_link_only", False)


def test_link_only_code_is_optimized_once_by_the_machine_code_that_links_it(monkeypatch):
    """An overload's library skips its own module optimization; f (machine code: cache=False) optimizes it with
    itself, and the records are those of the Python recorder."""
    optimized: list = []
    optimize = link_only._optimize
    monkeypatch.setattr(link_only, "_optimize", lambda library: (optimized.append(library), optimize(library)))

    @tape.jit(cache=False)
    def g(xs):
        return xs[1] * checked(len(xs)) + xs[0]

    assert tape.grad(g)(np.array([1.0, 2.0])).tolist() == [1.0, 2.0]
    (user,) = g.dispatcher.overloads.values()
    impl = next(lib for lib in user.library._linking_libraries if "_checked" in lib.name)
    assert impl.tape_unoptimized and impl not in optimized and user.library in optimized
    tapes = tape.Tape(), tape.Tape()
    g(tapes[0].vars([1.0, 2.0]))
    xs = tapes[1].vars([1.0, 2.0])
    xs[1] * 2.0 + xs[0]
    jitted, python = ((t._op[:len(t)].tolist(), t._in0[:len(t)].tolist(), t._in1[:len(t)].tolist(),
                       t._val[:len(t)].tolist()) for t in tapes)
    assert jitted == python and jitted[0] == [0, 0, 10, 1] and jitted[3] == [1.0, 2.0, 4.0, 5.0]


def test_a_link_only_overload_raises_with_its_runtime_values():
    with pytest.raises(ValueError, match="too many") as info:
        tape.grad(counts)(np.array([1.0, 2.0, 3.0]))
    assert info.value.args == ("too many", 3)


def test_a_link_only_library_gets_machine_code_once_asked_for_an_address(monkeypatch):
    twice = numba.njit(no_cpython_wrapper=True)(lambda x: 2.0 * x)
    with compiling():
        twice.compile((numba.float64,))
    (result,) = twice.overloads.values()
    name, engine = result.fndesc.llvm_cfunc_wrapper_name, result.library._codegen._engine
    assert result.library.tape_link_only and result.library.tape_unoptimized and not engine.is_symbol_defined(name)
    optimized: list = []
    optimize = link_only._optimize
    monkeypatch.setattr(link_only, "_optimize", lambda library: (optimized.append(library), optimize(library)))
    address = result.library.get_pointer_to_function(name)
    assert engine.is_symbol_defined(name) and optimized == [result.library]  # optimized as its callers would
    assert ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(address)(1.5) == 3.0


def test_a_link_only_library_loaded_from_a_cache_is_optimized_where_it_becomes_machine_code():
    thrice = numba.njit(no_cpython_wrapper=True)(lambda x: 3.0 * x)
    with compiling():
        thrice.compile((numba.float64,))
    (result,) = thrice.overloads.values()
    state = result.library.serialize_using_object_code()
    loaded = type(result.library)._unserialize(result.library.codegen, state)
    assert state[1] == link_only.LINK_ONLY and loaded.tape_link_only and loaded.tape_unoptimized
    address = loaded.get_pointer_to_function(result.fndesc.llvm_cfunc_wrapper_name)  # O3 kept what was asked for
    assert address and not loaded.tape_unoptimized
    assert ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(address)(1.5) == 4.5


def test_llvm_lock_events_are_off_while_tape_compiles_and_back_after():
    lock = ffi.lib._lock
    before = list(lock._cblist)
    assert before  # Numba's llvm_lock events (numba/core/base.py)
    with compiling():
        with compiling():
            assert lock._cblist == []
        assert lock._cblist == []
    assert lock._cblist == before


LOWERED = """
import numpy as np
from numba.core import event
import tape

lowered = []
class Lowered(event.Listener):
    def on_start(self, ev):
        if "native_lowering" in ev.data["name"] and "binary_array" in ev.data["name"]:
            lowered.append(ev.data["name"])
    def on_end(self, ev):
        pass

event.register("numba:run_pass", Lowered())
f = tape.jit(lambda xs: (xs * 2.0 + xs).sum())
print(tape.grad(f)(np.array([1.0, 2.0])).tolist(), len(lowered))
"""


def test_an_array_op_compiled_in_one_process_is_loaded_in_the_next():
    runs = [subprocess.run([sys.executable, "-c", LOWERED], capture_output=True, text=True, check=True).stdout.split()
            for _ in range(2)]
    assert runs[0][:2] == runs[1][:2] == ["[3.0,", "3.0]"]
    assert runs[1][2] == "0"  # nothing of binary_array compiled again: loaded from tape's cache


HOT = """
import tape
from tape.compiled.recording import push

@tape.jit(cache=False)
def g(xs):
    return tape.sin(xs[0] * xs[1] + 2.0) - xs[0] / 3.0

print(tape.grad(g)([1.0, 2.0]), list(push.overloads))
"""


def test_a_hot_layer_compiles_once_for_the_literal_numbers_of_its_callers(tmp_path):
    """push(p, 3, ...) and push(p, 9, ...) compile one push (recording.Hot), LLVM inlining it into each op's entry."""
    env = {**os.environ, "TAPE_CACHE_DIR": str(tmp_path)}  # the recorders compile here (push with them)
    out = subprocess.run([sys.executable, "-c", HOT], capture_output=True, text=True, check=True, env=env).stdout
    assert out.strip().endswith("[(void*, int64, int64, int64, float64)]"), out


def test_cached_closures_are_keyed_on_what_their_cells_do():
    def cell(fn):
        return (lambda a: fn(a)).__closure__[0].cell_contents

    keys = {described(cell(v)) for v in (lambda a: max(a, 1), lambda a: min(a, 1), lambda a: max(a, 2))}
    assert len(keys) == 3 and described(cell(lambda a: max(a, 1))) in keys


COLD = """
import json, sys
import numpy as np
from numba.core import event
import tape

@tape.jit
def f(xs, v):
    a, b = xs[0], xs[1]  # two 1-d rows: sub and mul of the same operand types; dots of the same result type
    d = (b - a) * (b - a) + v
    m = np.empty((2, 2), dtype=xs.dtype)
    m[0], m[1] = a, b
    return d.sum() + np.dot(m, v).sum() + np.dot(m, a).sum() + 2.0 * a[0] - 1.0 / b[1]

seen = []
class Compiles(event.Listener):
    def on_start(self, ev):
        fn = ev.data["dispatcher"].py_func
        seen.append([fn.__module__, fn.__qualname__, fn.__code__.co_code.hex(), str(ev.data["args"])])
    def on_end(self, ev):
        pass

with event.install_listener("numba:compile", Compiles()):
    g = tape.grad(f)(np.array([[1.0, 2.0], [3.0, 5.0]]), np.array([0.5, -1.0]))
print(json.dumps([g.tolist(), seen, "scipy.linalg" in sys.modules]))
"""


def test_a_cold_first_call_compiles_each_of_tapes_functions_once_per_type_and_no_value_layers(tmp_path):
    """A fresh process, an empty cache: no function of tape is compiled twice for the same types (a dispatcher made
    per overload, as tape_of_pair's and np.dot's layers were, compiles again for each), and the forward expressions
    and spellings are written into the recorders (kernels/codegen/jit.py), not layers of their own."""
    env = {**os.environ, "TAPE_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", COLD], capture_output=True, text=True, check=True, env=env).stdout
    grad, seen, linalg = json.loads(out.splitlines()[-1])
    assert not linalg  # numba.np.arraymath imported without it (tape/compiled/numba_internals.py)
    x, v = np.array([[1.0, 2.0], [3.0, 5.0]]), np.array([0.5, -1.0])
    a, b = x
    expected = np.array([-2 * (b - a) + v + 2 * a + b, 2 * (b - a) + v + a])  # d.sum(), the dots' sums
    expected[0, 0] += 2.0
    expected[1, 1] += 1.0 / b[1] ** 2
    assert np.allclose(grad, expected, rtol=0, atol=1e-12)
    ours = [(name, code, args) for module, name, code, args in seen if module.startswith("tape.")]
    twice = {k for k in ours if ours.count(k) > 1}  # the same code for the same types
    assert not twice, twice
    layers = [name for name, _, _ in ours if name.startswith(("value_", "var_c_", "c_var_"))]
    assert not layers and len(ours) > 20, (layers, len(ours))


BLAS = """
import json, sys
import numba
import numpy as np
import tape.compiled.jit
numba.njit(lambda x: x + 1)(1)  # Numba's first compile
from numba.np import arraymath, linalg
before = "scipy.linalg" in sys.modules
dot = numba.njit(lambda a, b: np.dot(a, b))(np.arange(6.0).reshape(2, 3), np.arange(3.0))
print(json.dumps([before, arraymath._HAVE_BLAS, arraymath.ensure_blas is linalg.ensure_blas,
                  linalg.ensure_blas.__name__, dot.tolist(), "scipy.linalg" in sys.modules]))
"""


def test_numba_imports_scipy_linalg_where_it_compiles_blas_code_not_at_its_first_compile():
    """With tape.compiled imported, Numba's first compile imports numba.np.arraymath without scipy.linalg (0.15 CPU-s
    of a cold first call); Numba's BLAS check is put back, and np.dot on float arrays imports and calls it."""
    out = subprocess.run([sys.executable, "-c", BLAS], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [False, True, True, "ensure_blas", [5.0, 14.0], True]


def test_a_reduction_overload_returns_its_implementation_itself():
    """``a.sum()`` calls the sums (no layer of its own to compile per type); ``a.sum(axis)`` of a 1-d one checks
    the axis first."""
    from tape.compiled.numba_internals import VarArrayType
    from tape.compiled.reductions import REDUCTIONS, _reduction

    for whole, along in REDUCTIONS.values():
        typer = _reduction(whole, along)
        one, two = VarArrayType(1, "C"), VarArrayType(2, "C")
        assert typer(one) is whole and typer(two, numba.types.int64) is along
        assert typer(one, numba.types.int64) not in (whole, along, None)


INLINE = """
import json
import numba
import numpy as np
import tape
from tape.compiled._recorders import ARITHMETIC
from tape.compiled.arrays import spill

mul = ARITHMETIC["mul"][0]

@numba.njit
def product(x, y):  # mul's first caller, itself not inlined
    return mul(x, y)

@tape.jit
def f(xs):
    return product(xs[0], xs[1]) + (xs + xs).sum()  # a Var array made: take, which calls spill

def inlined(compiled):
    fn = compiled.library.get_function(compiled.fndesc.llvm_func_name)
    return "alwaysinline" in str(list(fn.attributes))

g = tape.grad(f)(np.array([3.0, 5.0]))
print(json.dumps([g.tolist(), [inlined(c) for c in (*mul.overloads.values(), *spill.overloads.values())]]))
"""


def test_the_ops_entries_are_inlined_and_a_full_arenas_spill_is_not_whoever_calls_them_first(tmp_path):
    """Numba's flags inherit forceinline from the compile that calls a function first: an op's entry is inlined even
    where its first caller is not (recording.entry), and spill (where the arena is full) is out of line though its
    caller, take, is inlined (n-body's driver: a fifth less LLVM IR to optimize)."""
    env = {**os.environ, "TAPE_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", INLINE], capture_output=True, text=True, check=True, env=env).stdout
    assert json.loads(out.splitlines()[-1]) == [[5.0 + 2.0, 3.0 + 2.0], [True, False]]


DIRECT = """
import json
import numpy as np
from numba.core import event
import tape

@tape.jit
def f(xs):
    x, y = xs[0], xs[1]
    z = tape.exp(x * y) + x * 2.0 - 2.0 * y
    if z > y:
        return z
    return y

names = []
class Named(event.Listener):
    def on_start(self, ev):
        names.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass

with event.install_listener("numba:compile", Named()):
    g = tape.grad(f)(np.array([0.5, 0.25]))
print(json.dumps([g.tolist(), names]))
"""


def test_an_overload_that_forwards_to_a_jitted_function_compiles_no_function_of_its_own(tmp_path):
    """A typer returning a jitted function of its arguments (overload_cache.direct) is a call of it: the ops on Vars
    and floats, a branch's check and f's Var output compile no forwarding lambda of their own."""
    env = {**os.environ, "TAPE_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", DIRECT], capture_output=True, text=True, check=True, env=env).stdout
    g, names = json.loads(out.splitlines()[-1])
    z = np.exp(0.125) + 1.0 - 0.5
    assert g == pytest.approx([0.25 * np.exp(0.125) + 2.0, 0.5 * np.exp(0.125) - 2.0]) and z > 0.25
    assert {"mul_vv", "mul_vc", "mul_cv", "sub_vv", "add_vv", "check", "one_output"} <= set(names)
    forwarding = [n for n in names if "typer.<locals>.<lambda>" in n or n.startswith(("_branch.", "_outputs_impl."))]
    assert forwarding == []
