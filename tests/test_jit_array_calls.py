"""tape.jit's array records' C functions made when first needed (tape/compiled/array_calls.py): a row's kernel and the
driver's forward only once a row needs them and they are cached or NumPy's rule has stood in long enough, only the
kernels of the ops f writes, the same bits either way, and never a call at address 0 (in a subprocess: a miss would
crash)."""

import os
import subprocess
import sys

import pytest

MADE = """
import numpy as np
import tape
from tape.compiled import array_calls
from tape.kernels import _array_driver as d, array_kernels
from tape.kernels.ops import OPCODE

@tape.jit
def by_element(x):  # (np.zeros(n, dtype=x.dtype) fails to type with an array record x)
    u = np.zeros(len(x), dtype=x.dtype)
    for i in range(1, len(x)):
        u[i] = x[i] * x[i - 1]
    return u.sum()

x = np.linspace(-1.0, 1.0, 2048)
value, grad = tape.value_and_grad(by_element)(x)
by_hand = np.zeros(2048)
by_hand[1:] += x[:-1]  # d/dx_i sum x_i x_(i-1): x_(i-1) + x_(i+1)
by_hand[:-1] += x[1:]
print("scalar", by_element._arrays, d.KERNELS[d.WRITE_AT], np.isclose(value, (x[1:] * x[:-1]).sum(), rtol=1e-14)
      and np.allclose(grad, by_hand, rtol=1e-14, atol=0))

@tape.jit
def f(x, y):
    r = np.tanh(x) - y
    return (r * r).sum()

x, y = np.linspace(-1.0, 1.0, 2048), np.linspace(0.0, 1.0, 2048)
h = np.tanh(x)

def run():
    value, grad = tape.value_and_grad(f)(x, y)
    assert f._arrays and np.isclose(value, ((h - y) ** 2).sum(), rtol=1e-14)
    assert np.allclose(grad, 2 * (h - y) * (1 - h * h), rtol=1e-13, atol=0)  # d/dx sum((tanh x - y)^2), by hand
    return value, grad

array_kernels.wanted = lambda slots: set(slots)  # (as if no kernel were cached: NumPy's rule stands in)
array_calls.PAYBACK = 1e9

@tape.jit
def undriven(x):  # a max: no driver row runs it (array_rows.SLOT -1), so NumPy's rule is not standing in
    return x.max()

value, grad = tape.value_and_grad(undriven)(x)
print("undriven", d.KERNELS[d.FORWARD_AT], array_calls.CLOCK.spent, sorted(array_calls._far),
      value == 1.0 and np.array_equal(grad, (x == 1.0) * 1.0))
first = run()
print("standing", sorted(array_kernels._made), d.KERNELS[d.FORWARD_AT], array_calls.CLOCK.spent > 0)
array_calls.PAYBACK = 0.0  # paid back: the next rows make the forward and their kernels, only theirs
again = run()
ops = [d.VALUES + OPCODE[name] for name in ("tanh", "sub", "mul")]
print("made", sorted(array_kernels._made) == sorted([d.SUM, *ops]), d.KERNELS[d.FORWARD_AT] != 0)
print("same", first[0] == again[0] and np.array_equal(first[1], again[1]))
slot = d.VALUES + OPCODE["tanh"]  # a row whose kernel is not made, the forward made: NumPy's rule, not address 0
array_kernels._made.pop(slot)
d.KERNELS[slot], array_calls.PAYBACK, array_calls._far, spent = 0, 1e9, set(), array_calls.CLOCK.spent
third = run()
print("missing", d.KERNELS[slot], array_calls.CLOCK.spent > spent, third[0] == first[0] and np.array_equal(third[1],
                                                                                                           first[1]))
"""


def test_array_records_make_only_their_kernels_and_never_call_address_0():
    """An f that does not type with an array record: scalar records, write_record never made. A row no driver row
    runs (a max): NumPy's rule, off the clock, no kernel asked for. Standing in (nothing cached, not paid back): no
    kernel made, the forward's cell 0, NumPy's rule on the clock;
    paid back: the forward and exactly f's kernels (tanh, sub, mul's values, a sum's), the same bits as NumPy's rule;
    a kernel then lost (its slot 0): NumPy's rule stands in for its rows, not a call at 0 (no crash, the same bits)."""
    result = subprocess.run([sys.executable, "-c", MADE], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[:6] == ["scalar False 0 True", "undriven 0 0.0 [] True", "standing [] 0 True",
                                             "made True True", "same True", "missing 0 True True"], (
        result.stdout + result.stderr)


COLD = """
import numpy as np
from numba.core import event
import tape
from tape.kernels import _array_driver as d

compiled = set()
class Compiles(event.Listener):
    def on_start(self, ev):
        fn = ev.data["dispatcher"].py_func
        compiled.add(f"{fn.__module__}.{fn.__qualname__}")
    def on_end(self, ev):
        pass
event.register("numba:compile", Compiles())

@tape.jit
def layer(W, X, y):  # docs/jit.md's first array example
    r = np.tanh(X @ W) - y
    return (r * r).sum()

rng = np.random.default_rng(1)
W, X, y = 0.1 * rng.normal(size=(40, 30)), rng.normal(size=(8, 40)), rng.normal(size=(8, 30))
value, grad = tape.value_and_grad(layer)(W, X, y)
h = np.tanh(X @ W)
rows = {f"tape.compiled.array_rows.{name}" for name in ("encode", "by_driver", "_coalesced", "_block")}
print(layer._arrays, "tape.compiled.array_records.write_record" in compiled, sorted(compiled & rows),
      d.KERNELS[d.FORWARD_AT], np.isclose(value, ((h - y) ** 2).sum(), rtol=1e-13)
      and np.allclose(grad, X.T @ (2 * (h - y) * (1 - h * h)), rtol=1e-12, atol=1e-14))
"""


@pytest.mark.slow  # a fresh process on empty caches: f's driver and write_record compiled, about 4 CPU-s
def test_a_first_gradient_compiles_no_row_encoding(tmp_path):
    """On empty caches a first gradient's rows are NumPy's (the driver's forward not made): write_record compiles,
    but not a row's encoding for the forward nor the check that it gives NumPy's bits (array_rows.encode, by_driver:
    the forward's C function's); the gradient is the hand one."""
    env = dict(os.environ, TAPE_CACHE_DIR=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    result = subprocess.run([sys.executable, "-c", COLD], capture_output=True, text=True, timeout=600, env=env,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[0] == "True True [] 0 True", result.stdout + result.stderr


def test_array_records_by_default_scalar_records_by_arrays_false():
    """By default an x0 of SMALL elements or more is an array record and f's whole-array ops write array records;
    ``arrays=False`` records one scalar record per element (an elem record each, from the input's array record); both
    give the hand gradient of sum(sin(x) * x)."""
    import numpy as np

    import tape
    from tape.records.array_records import SMALL

    def f(x):
        return (np.sin(x) * x).sum()

    x = np.linspace(-2.0, 2.0, SMALL)
    for jitted, arrays in ((tape.jit(f), True), (tape.jit(f, arrays=False), False)):
        value, grad = tape.value_and_grad(jitted)(x)
        assert np.isclose(value, (np.sin(x) * x).sum(), rtol=1e-13) and jitted._arrays is arrays
        assert np.allclose(grad, np.cos(x) * x + np.sin(x), rtol=1e-13, atol=1e-15)
        t = tape.Tape()
        jitted(t.array(x))
        assert (t.n_arrays, len(t) < 10) == ((4, True) if arrays else (1, False))  # x, sin, *, sum (+ its elem)


WRITERS = """
import numpy as np
import tape
from tape.compiled import array_calls, array_records
from tape.kernels import _array_driver as d

@tape.jit(cache=False)
def f(x):
    return (np.sin(x) * x).sum()

@tape.jit(cache=False)
def g(x):
    p = np.pad(x, 2, mode="edge")
    return (np.roll(x, 3) * x).sum() + (p * p).sum()

x = np.linspace(-1.0, 1.0, 2048)
value, grad = tape.value_and_grad(f)(x)
print("f", f._arrays, np.isclose(value, (np.sin(x) * x).sum(), rtol=1e-13)
      and np.allclose(grad, np.cos(x) * x + np.sin(x), rtol=1e-13, atol=1e-15),
      d.WRITE_AT in array_calls._made, d.KERNELS[d.MOVE_AT], d.MOVE_AT in array_calls._made)
value, grad = tape.value_and_grad(g)(x)
by_hand = np.roll(x, 3) + np.roll(x, -3) + 2 * x  # d/dx of sum(roll(x, 3) x) + sum(pad(x, 2, edge)^2)
by_hand[0] += 4 * x[0]
by_hand[-1] += 4 * x[-1]
p = np.pad(x, 2, mode="edge")
print("g", g._arrays, np.isclose(value, (np.roll(x, 3) * x).sum() + (p * p).sum(), rtol=1e-13)
      and np.allclose(grad, by_hand, rtol=1e-13, atol=1e-15), d.KERNELS[d.MOVE_AT] != 0, d.MOVE_AT in array_calls._made)
print("signatures", *(len(fn._cache._cache_file._load_index())  # (entries of its index in the jit cache)
                      for fn in (array_records.written, array_records.written3)))
print("lives", d.LIVES_AT in array_calls._made, d.KERNELS[d.LIVES_AT])

@tape.jit(cache=False)
def heat(u, steps):
    for _ in range(steps):
        u = u + 0.2 * (np.roll(u, 1) + np.roll(u, -1) - 2.0 * u)
    return 0.5 * (u * u).sum()

tapes = []
def outer(u):
    tapes.append(u.tape)
    return heat(u, 60)
value, grad = tape.value_and_grad(outer)(x)
by_hand = x  # heat's step is A u, A symmetric: the gradient of |A^60 x|^2 / 2 is A^120 x
for _ in range(120):
    by_hand = by_hand + 0.2 * (np.roll(by_hand, 1) + np.roll(by_hand, -1) - 2.0 * by_hand)
print("heat", heat._arrays, np.allclose(grad, by_hand, rtol=1e-12, atol=1e-14), d.LIVES_AT in array_calls._made,
      len(tapes[0]._freed) > 100)
"""


def test_an_f_that_joins_nothing_never_makes_write_moved():
    """write_record writes every record but a join's and a gather's, which write_moved writes: an f of elementwise ops
    and a sum makes write_record only (its cell of KERNELS 0 for write_moved); np.roll (a join) and np.pad's edge mode
    (a gather) make write_moved when first written; both give the hand gradients. written and written3 compile once,
    for every op and operand (their literal numbers taken as their types), not once per op code and literal: one
    entry each in the jit cache's index. Neither gives a region away (a few records): the lives' C function is not
    made until a loop of records does (the heat equation's, its hand gradient)."""
    result = subprocess.run([sys.executable, "-c", WRITERS], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[:5] == ["f True True True 0 False", "g True True True True", "signatures 1 1",
                                             "lives False 0", "heat True True True True"], result.stdout + result.stderr


FAILS = """
import numpy as np
import tape
from tape.compiled import array_calls, array_records
from tape.kernels import _array_driver as d

class Forced(Exception):
    pass

@tape.jit(cache=False)
def heat(u, steps):
    for _ in range(steps):
        u = u + 0.2 * (np.roll(u, 1) + np.roll(u, -1) - 2.0 * u)
    return 0.5 * (u * u).sum()

x = np.linspace(-1.0, 1.0, 2048)
real = array_calls._cfunc
for cell in (d.WRITE_AT, d.MOVE_AT, d.LIVES_AT):
    def failing(made, cell=cell):  # (the cell's compile forced to fail, as if it had never been made)
        if made == cell:
            raise Forced("no room on the device (forced)")
        return real(made)
    array_calls._made.pop(cell, None)
    d.KERNELS[cell], array_calls._cfunc = 0, failing
    try:
        tape.value_and_grad(heat)(x, 60)
        print("no failure")
    except array_records.WriterFailed as e:
        print(cell - d.WRITE_AT, "no room on the device" in str(e), type(e.__cause__).__name__,
              cell in array_calls._made, d.KERNELS[cell])
    array_calls._cfunc = real
value, grad = tape.value_and_grad(heat)(x, 60)
by_hand = x
for _ in range(120):
    by_hand = by_hand + 0.2 * (np.roll(by_hand, 1) + np.roll(by_hand, -1) - 2.0 * by_hand)
print(heat._arrays, np.allclose(grad, by_hand, rtol=1e-12, atol=1e-14))
"""


def test_a_writer_that_fails_to_compile_raises_its_cause():
    """A C function array records call that fails to compile (write_record, write_moved, the lives', each forced to
    fail in turn) makes f raise WriterFailed, its message and __cause__ the compile's error, not out of memory;
    nothing is kept of it, and once it compiles the gradient is the hand one."""
    result = subprocess.run([sys.executable, "-c", FAILS], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[:4] == ["0 True Forced False 0", "2 True Forced False 0", "3 True Forced False 0",
                                             "True True"], result.stdout + result.stderr


REFUSED = """
import glob, os, sys
import numpy as np
from numba.core import event
import tape

compiles = []
class Typed(event.Listener):  # the array driver's compiles (typing f with an array record xs)
    def on_start(self, ev):
        compiles.append(ev.data["dispatcher"].py_func.__qualname__ == "_array_driver.<locals>.drive")
    def on_end(self, ev):
        pass
event.register("numba:compile", Typed())

@tape.jit
def f(x):  # np.zeros(n, dtype=x.dtype) written by element: fails to type with an array record x
    u = np.zeros(len(x), dtype=x.dtype)
    for i in range(1, len(x)):
        u[i] = x[i] - 0.5 * x[i - 1]
    return (u * u).sum()

refused = os.path.join(os.environ["TAPE_CACHE_DIR"], "jit", "*", "refused", "*")
x, c = np.linspace(0.0, 1.0, 2048) ** 2, 0.5
before = len(glob.glob(refused))
value, grad = tape.value_and_grad(f)(x)
u = np.zeros_like(x)
u[1:] = x[1:] - c * x[:-1]
by_hand = 2 * u  # d/dx_j of sum (x_i - c x_(i-1))^2: 2 u_j - 2 c u_(j+1)
by_hand[:-1] -= 2 * c * u[1:]
print(f._arrays, np.isclose(value, (u * u).sum(), rtol=1e-13) and np.allclose(grad, by_hand, rtol=1e-12, atol=0),
      before, len(glob.glob(refused)), sum(compiles))
"""


@pytest.mark.slow  # four fresh processes, the first on an empty cache
def test_an_f_refused_by_array_typing_is_not_typed_again_until_it_changes(tmp_path):
    """A cached f that fails to type with an array record xs leaves its refusal in the jit cache: the next process
    records scalar records at once, with no array typing; an edit of f types it again (and keeps that refusal too);
    every process gives the hand gradient."""
    script = tmp_path / "refused_f.py"
    script.write_text(REFUSED)
    env = dict(os.environ, TAPE_CACHE_DIR=str(tmp_path / "cache"))
    def run():
        return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True, env=env,
                              cwd=tmp_path).stdout.split()
    first, second = run(), run()
    script.write_text(REFUSED.replace("0.5", "0.25"))
    edited, again = run(), run()
    assert first == ["False", "True", "0", "1", "1"] and second == ["False", "True", "1", "1", "0"]
    assert edited == ["False", "True", "1", "2", "1"] and again == ["False", "True", "2", "2", "0"]
