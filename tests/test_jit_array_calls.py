"""tape.jit's array records' C functions made when first needed (tape/compiled/array_calls.py): a row's kernel and the
driver's forward only once a row needs them and they are cached or NumPy's rule has stood in long enough, only the
kernels of the ops f writes, the same bits either way, and never a call at address 0 (in a subprocess: a miss would
crash)."""

import subprocess
import sys

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
    """An f that does not type with an array record: scalar records, write_record never made. Standing in (nothing
    cached, not paid back): no kernel made, the forward's cell 0, NumPy's rule on the clock;
    paid back: the forward and exactly f's kernels (tanh, sub, mul's values, a sum's), the same bits as NumPy's rule;
    a kernel then lost (its slot 0): NumPy's rule stands in for its rows, not a call at 0 (no crash, the same bits)."""
    result = subprocess.run([sys.executable, "-c", MADE], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[:5] == ["scalar False 0 True", "standing [] 0 True", "made True True", "same True",
                                             "missing 0 True True"], result.stdout + result.stderr


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
