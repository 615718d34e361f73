"""tape.value_and_grad of a jitted f on an array x that f records as an array record: the direct path
(JitFunction._array_value_and_grad: no handles, trees or checks of f's Python) against the general path and the Python
recorder bit for bit, and against gradients by hand; shapes and dtypes that change between calls; the tape's plans
made from tape.jit's rows (array_plans.Pending) once per row, sized and compared by their rows."""

from __future__ import annotations

import numpy as np
import pytest
from test_jit_arrays import namespace

import tape
from tape.compiled import array_plans
from tape.records import array_records
from tape.sweeps import compiled

SOURCE = '''
def f(x, W, m):                      # a layer: 2-d x (or 1-d, reshaped), a product, tanh, a weighted sum
    n = W.shape[0]
    v = x.reshape(n * n)
    h = np.tanh(v.reshape(n, n) @ W)
    return (h * m).sum() + v[3] * v[5]
'''
ELEMENTS = '''
def f(x, c):                         # elements of a record f wrote, read twice (elem records back to one region)
    y = np.tanh(x * c)
    return y[0] * y[7] + y[7] * y[2] - y[1]
'''
SINES = '''
def f(x, k):
    v = x[k:]
    return (np.sin(v) * v).sum()
'''
COSINES = SINES.replace("sin", "cos")
NUMBER = '''
def f(x):
    return 2.5
'''
ARRAY = '''
def f(x):
    return x * 2.0
'''


@pytest.fixture(autouse=True)
def arrays_from_64(monkeypatch):
    """x of 64 elements and more as one array record; the reverse sweep's tables ready and made for a structure's
    second tape (tests/test_small_tables.py's), so that a tape takes those of its structure only where they fit."""
    monkeypatch.setattr(array_records, "SMALL", 64)
    monkeypatch.setattr(compiled._gate, "ready", lambda: True)
    monkeypatch.setattr(compiled, "_made", {})
    monkeypatch.setattr(compiled, "MAKE", 0.0)


def layer(x, W, m):
    """SOURCE's value and gradient by hand."""
    n = W.shape[0]
    X = x.reshape(n, n)
    h = np.tanh(X @ W)
    grad = ((m * (1 - h * h)) @ W.T).reshape(x.shape)
    grad.flat[3] += x.flat[5]
    grad.flat[5] += x.flat[3]
    return float((h * m).sum() + x.flat[3] * x.flat[5]), grad


def both_paths(jf, x, *data):
    """value_and_grad of jitted jf at x: (direct path, general path), each called twice (the second on the tape the
    first renewed)."""
    out = {}
    for direct in (True, False):
        jf._arrays_direct = direct
        vg = tape.value_and_grad(jf)
        first, again = vg(x, *data), vg(x, *data)
        assert first[0] == again[0] and np.array_equal(first[1], again[1], equal_nan=True)
        out[direct] = first
    jf._arrays_direct = True
    return out[True], out[False]


def same(a, b):
    assert a[0] == b[0] or (a[0] != a[0] and b[0] != b[0])
    assert a[1].shape == b[1].shape and np.array_equal(a[1], b[1], equal_nan=True)


@pytest.fixture(scope="module")
def layers():
    return namespace(SOURCE, arrays=True)


def test_the_direct_path_is_the_general_path_bit_for_bit(layers):
    """Values and gradients of both paths and of the Python recorder equal, and the hand gradient, for 2-d and 1-d x,
    two sizes of x in turn on one wrapper (the plans of the last call never replayed for another shape)."""
    py, jn = layers
    rng = np.random.default_rng(0)
    vg = tape.value_and_grad(jn["f"])
    for n, shape in [(9, (9, 9)), (12, (12, 12)), (9, (81,)), (9, (9, 9))]:
        x, W, m = rng.normal(size=shape), rng.normal(size=(n, n)) / n, rng.normal(size=(n, n))
        direct, general = both_paths(jn["f"], x, W, m)
        same(direct, general)
        same(direct, tape.value_and_grad(py["f"])(x, W, m))
        same(direct, vg(x, W, m))
        want = layer(x, W, m)
        assert direct[0] == pytest.approx(want[0], rel=1e-13)
        np.testing.assert_allclose(direct[1], want[1], rtol=1e-12, atol=1e-14)
    assert jn["f"]._arrays is True


def test_other_dtypes_and_layouts_of_x(layers):
    """An int array takes the general path, a Fortran-ordered or strided one the direct path: the same numbers."""
    py, jn = layers
    rng = np.random.default_rng(1)
    W, m = rng.normal(size=(9, 9)) / 9, rng.normal(size=(9, 9))
    ints = rng.integers(-3, 4, size=(9, 9))
    want = tape.value_and_grad(py["f"])(ints.astype(float), W, m)
    same(tape.value_and_grad(jn["f"])(ints, W, m), want)
    x = rng.normal(size=(18, 18))
    for strided in (np.asfortranarray(x[:9, :9]), x[::2, ::2]):
        same(tape.value_and_grad(jn["f"])(strided, W, m), tape.value_and_grad(py["f"])(np.array(strided), W, m))


def test_a_nan_of_an_unchecked_product_is_swept_again_checked(layers):
    """W holds inf where the weights m are 0: the products back unchecked give 0 * inf = NaN, the sweep again checked
    gives the general path's numbers (those of the Python recorder)."""
    py, jn = layers
    rng = np.random.default_rng(2)
    x, W, m = rng.normal(size=(9, 9)), rng.normal(size=(9, 9)), rng.normal(size=(9, 9))
    W[:, 4], m[:, 4] = np.inf, 0.0
    x[:, :] = np.abs(x) + 0.1
    direct, general = both_paths(jn["f"], x, W, m)
    same(direct, general)
    same(direct, tape.value_and_grad(py["f"])(x, W, m))


def test_elements_of_a_record_f_wrote_send_their_adjoints_to_its_zeroed_region():
    """y[0] * y[7] + y[7] * y[2] - y[1]: four elem records of one region, zeroed once a call (the region's previous
    adjoints would add in), by hand, call after call."""
    py, jn = namespace(ELEMENTS, arrays=True)
    rng = np.random.default_rng(3)
    vg = tape.value_and_grad(jn["f"])
    for c in (0.5, -1.5, 0.5):
        x = rng.normal(size=100)
        y, d = np.tanh(x * c), c * (1 - np.tanh(x * c) ** 2)
        want = np.zeros(100)
        want[[0, 7, 2, 1]] = [y[7] * d[0], (y[0] + y[2]) * d[7], y[7] * d[2], -d[1]]
        direct, general = both_paths(jn["f"], x, c)
        same(direct, general)
        got = vg(x, c)
        same(got, direct)
        assert got[0] == pytest.approx(y[0] * y[7] + y[7] * y[2] - y[1], rel=1e-14)
        np.testing.assert_allclose(got[1], want, rtol=1e-13, atol=0.0)


def test_programs_of_one_structure_keep_their_own_sweeps():
    """sin and cos, of x[k:] for two k: the same records, plan rows that differ in an op or in shapes and offsets only;
    alternated, each its own gradient (a kept reverse sweep of another's would give the other's)."""
    (_, sin), (_, cos) = namespace(SINES, arrays=True), namespace(COSINES, arrays=True)
    x = np.random.default_rng(4).normal(size=100)
    vs, vc = tape.value_and_grad(sin["f"]), tape.value_and_grad(cos["f"])
    for k, vg in [(2, vs), (3, vs), (2, vs), (3, vs), (3, vc), (3, vs), (2, vc), (2, vc), (2, vs)]:
        want = np.zeros(100)
        want[k:] = np.sin(x[k:]) + x[k:] * np.cos(x[k:]) if vg is vs else np.cos(x[k:]) - x[k:] * np.sin(x[k:])
        np.testing.assert_allclose(vg(x, k)[1], want, rtol=1e-13, atol=0.0)


BRANCHES = '''
def f(x, k, c):                      # the records f writes hang on its data: k elements squared, a branch on c
    y = np.tanh(x * 2.0)
    s = (y[:k] * y[:k]).sum()
    if c > 0.0:
        s = s + (np.exp(y) * c).sum()
    return s + y[3] * y[k]
'''


def branches(x, k, c):
    """f of BRANCHES and its gradient, by hand."""
    y, d = np.tanh(x * 2.0), 2.0 * (1.0 - np.tanh(x * 2.0) ** 2)
    g = np.zeros_like(x)
    g[:k] = 2.0 * y[:k]
    if c > 0.0:
        g += c * np.exp(y)
    g[3] += y[k]
    g[k] += y[3]
    value = (y[:k] ** 2).sum() + (c * np.exp(y).sum() if c > 0.0 else 0.0) + y[3] * y[k]
    return value, g * d


@pytest.fixture
def held(monkeypatch):
    """[calls whose tape held (f wrote what it wrote in the last call), calls whose tape was renewed first]."""
    from tape.compiled.jit_gradients import Again

    counts, drove = [0, 0], Again.drove

    def counted(self, *args):
        was = self.args is not None
        got = drove(self, *args)
        counts[0 if got else 1] += was
        return got
    monkeypatch.setattr(Again, "drove", counted)
    return counts


@pytest.mark.parametrize("size", [100, 20_000])  # (the second recycles regions: arenas.CHECK fills freed with NaN)
def test_a_tape_kept_as_the_last_call_left_it_is_renewed_where_f_writes_otherwise(size, held, monkeypatch):
    """The direct path keeps its tape as a call left it (jit_gradients.Again): where the next call writes the same
    records and plans, nothing is made again; where it writes others (another k, the branch on c taken or not, a
    raised IndexError), the tape is renewed keeping what f wrote. Each call the Python recorder's numbers bit for
    bit, and the hand gradient. (Any arena is kept: one of 8 MB or more would not be, and a spare one an earlier
    test left can be up to 4 times what a tape asks.)"""
    import importlib

    from tape.sweeps import arenas

    monkeypatch.setattr(arenas, "CHECK", True)
    monkeypatch.setattr(importlib.import_module("tape.tape"), "RENEWED", 2**62)
    py, jn = namespace(BRANCHES, arrays=True)
    rng = np.random.default_rng(6)
    vg, calls = tape.value_and_grad(jn["f"]), [(5, 1.0), (5, 1.0), (5, 1.0), (7, 1.0), (7, 1.0), (7, -1.0),
                                                  (5, 1.0), (size, 1.0), (5, 1.0), (5, -1.0), (5, -1.0)]
    for k, c in calls:
        x = rng.normal(size=size) * 0.5
        if k >= size:
            with pytest.raises(IndexError):
                vg(x, k, c)
            continue
        got = vg(x, k, c)
        same(got, tape.value_and_grad(py["f"])(x, k, c))
        want = branches(x, k, c)
        assert got[0] == pytest.approx(want[0], rel=1e-13)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-15)
    assert held == [4, 4]  # (renewed: k 7, c -1, k 5 twice, and the raise drops the tape)


def test_what_f_returns():
    """A number: its value, a zero gradient; an array: the general path's TypeError, the direct path kept."""
    (_, number), (_, array) = namespace(NUMBER, arrays=True), namespace(ARRAY, arrays=True)
    x = np.arange(100.0)
    value, grad = tape.value_and_grad(number["f"])(x)
    assert value == 2.5 and type(value) is float and np.array_equal(grad, np.zeros(100))
    for _ in range(2):
        with pytest.raises(TypeError, match="f must return a Var or a real number"):
            tape.value_and_grad(array["f"])(x)
    assert number["f"]._arrays and array["f"]._arrays and array["f"]._arrays_direct


def test_plans_of_equal_rows_are_made_once(layers):
    """Tapes of one call: each row's Plan (not a gather's) made once, the same object; two tapes' plans equal by their
    rows until one is cut, or one records again."""
    _, jn = layers
    rng = np.random.default_rng(5)
    W, m = rng.normal(size=(9, 9)) / 9, rng.normal(size=(9, 9))
    array_plans._MADE.clear()
    tapes = [tape.Tape() for _ in range(4)]
    for t in tapes:
        jn["f"](t.array(rng.normal(size=(9, 9))), W, m)
    t1, t2, t3, t4 = tapes
    t4.rewind(t4._plan_rows[-1])
    assert type(t1._plans) is array_plans.Pending and not t1._plans.listed
    assert all(t1._plans[k] is t3._plans[k] for k in range(1, len(t1._plans)))
    assert t1._plans == t3._plans and t3._plans == t1._plans and t1._plans.key is not None
    t3.rewind(t3._plan_rows[-1])
    assert t1._plans != t3._plans and t3._plans == t4._plans and t4._plans == t3._plans
    t1.rewind(t1._plan_rows[-1])
    assert t1._plans == t3._plans
    for t in (t1, t2):  # a second call on one tape: its rows, compared anew
        jn["f"](t.array(rng.normal(size=(9, 9))), W, m)
    assert t1._plans != t2._plans and len(t1._plans) < len(t2._plans)
    t5, t6 = tape.Tape(), tape.Tape()
    for t in (t5, t6):
        jn["f"](t.array(rng.normal(size=(9, 9))), W, m)
    assert t5._plans == t5._plans and t5._plans.key is not None and t6._plans.key is None
    for t in (t5, t6):
        jn["f"](t.array(rng.normal(size=(9, 9))), W, m)
    assert t5._plans == t6._plans  # (t5's key made anew)
