"""tape.jit on an array record xs writes array records (issue 26, landing 1): the Python recorder's records, plans and
arena bit for bit; gradients and Hessian-vector products as the Python recorder's, JAX float64's
(tests/jit_array_references.json) and central differences; what landing 1 lacks records as scalar records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from jit_array_programs import cases, directions
from test_jit import records
from test_jit_arrays import namespace

import tape

with open(os.path.join(os.path.dirname(__file__), "jit_array_references.json")) as _file:
    REFERENCES = json.load(_file)
CASES = cases()


def canonical(bits):
    """uint64 bits of float64s with every NaN one NaN: the driver's maximum, minimum and sums give NaN with another sign
    bit than NumPy's loops (LLVM may swap an add's operands; IEEE leaves a NaN's sign and payload open)."""
    values = np.asarray(bits, np.uint64).view(np.float64).copy()
    values[np.isnan(values)] = np.nan
    return values.view(np.uint64)


def plans(t):
    """Every plan of t, comparable (places as lists)."""
    return [(*p[:6], p.places.tolist(), p.wide) for p in t._plans]


def arena(t):
    """The bits of every plan's region, in plan order."""
    return [t._aval[p.offset:p.offset + p.size].view(np.uint64).tolist() for p in t._plans]


def recorded(f, x0, data):
    t = tape.Tape()
    return t, f(t.array(x0), *data)


def same_tapes(f, jf, x0, data, nans=False):
    """The Python recorder's and tape.jit's tapes of f at x0 are one tape: records, constants, plans, arena (with
    ``nans``, any NaN equal to any NaN)."""
    (tp, yp), (tj, yj) = recorded(f, x0, data), recorded(jf, x0, data)
    assert jf._arrays is True  # written by the array records' driver, not element by element
    for k, (a, b) in enumerate(zip(records(tp), records(tj), strict=True)):
        if nans and k in (3, 4):  # values and constants
            a, b = canonical(a), canonical(b)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
    assert plans(tp) == plans(tj)
    if nans:
        assert all(np.array_equal(canonical(a), canonical(b)) for a, b in zip(arena(tp), arena(tj), strict=True))
    else:
        assert arena(tp) == arena(tj)
    assert type(yp) is type(yj)
    return tj, yj


@pytest.fixture(scope="module", params=sorted(CASES))
def program(request):
    source, x0, data = CASES[request.param]
    py, jn = namespace(source, arrays=True)
    return request.param, py["f"], jn["f"], x0, data


def test_array_programs_record_as_python(program):
    name, f, jf, x0, data = program
    tj, _ = same_tapes(f, jf, x0, data)
    assert len(tj._plans) >= 5 and len(tj) < x0.size / 4  # a record per array op, not per element


def test_gradients_as_python_jax_and_central_differences(program):
    name, f, jf, x0, data = program
    vp, gp = tape.value_and_grad(f, argnums=0)(x0, *data)
    vj, gj = tape.value_and_grad(jf, argnums=0)(x0, *data)
    assert vp == vj and np.array_equal(gp.view(np.uint64), gj.view(np.uint64)) and gj.shape == x0.shape
    ref, V = REFERENCES[name], directions(name, x0.shape)
    assert np.isclose(vj, ref["value"], rtol=1e-12, atol=0)
    assert np.allclose(V @ gj.ravel(), ref["grad"], rtol=1e-10, atol=1e-10)
    h = 1e-6
    for d, slope in zip(V, V @ gj.ravel(), strict=True):
        up, down = (tape.value_and_grad(jf, argnums=0)(x0 + s * h * d.reshape(x0.shape), *data)[0] for s in (1, -1))
        assert np.isclose((up - down) / (2 * h), slope, rtol=1e-5, atol=1e-6)


def test_hvp_and_replay_as_python_and_jax(program):
    name, f, jf, x0, data = program
    Fp, Fj = tape.trace(f, x0, data=data), tape.trace(jf, x0, data=data)
    V = directions(name, x0.shape)
    hp, hj = Fp.hvp(x0, V[0].reshape(x0.shape)), Fj.hvp(x0, V[0].reshape(x0.shape))
    assert np.array_equal(np.asarray(hp).view(np.uint64), np.asarray(hj).view(np.uint64))
    assert np.allclose(V @ np.ravel(hj), REFERENCES[name]["hvp"], rtol=1e-9, atol=1e-9)
    x1 = x0 * 1.01
    vr, gr = Fj.value_and_grad(x1)
    vf, gf = tape.value_and_grad(jf, argnums=0)(x1, *data)
    assert np.isclose(vr, vf, rtol=1e-13, atol=0) and np.allclose(gr, gf, rtol=1e-11, atol=1e-12)


EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 1e-300, 5e-324, 1.0])


@pytest.mark.parametrize("name", ["chain", "sums", "matmul", "mlp", "filter", "powers", "joins", "rolls", "pads",
                                  "wheres", "composed", "scans", "heads", "axes", "einsum"])
def test_edge_values_record_as_python(name):
    source, x0, data = CASES[name]
    py, jn = namespace(source, arrays=True)
    x = x0.copy()
    x.flat[:len(EDGES)] = EDGES
    x.flat[-len(EDGES):] = EDGES[::-1]
    same_tapes(py["f"], jn["f"], x, data, nans=True)
    vp, gp = tape.value_and_grad(py["f"], argnums=0)(x, *data)
    vj, gj = tape.value_and_grad(jn["f"], argnums=0)(x, *data)
    assert np.array_equal(canonical(np.float64(vp).view(np.uint64)), canonical(np.float64(vj).view(np.uint64)))
    assert np.array_equal(canonical(gp.view(np.uint64)), canonical(gj.view(np.uint64)))
    assert np.isnan(gj).any() and (np.isfinite(gj).any() or name in ("filter", "joins", "pads", "scans"))  # (NaN
    # spreads over u: a cumsum of all of it too)


RETURNS = '''
def f(A, b):                         # returns an array record: a VarArray of its region
    return np.tanh(A * 2.0 + b) - A
'''


def test_a_returned_array_record_is_the_python_recorder_s_vararray():
    py, jn = namespace(RETURNS, arrays=True)
    x0, b = np.random.default_rng(1).normal(size=(32, 40)), np.linspace(-1, 1, 40)
    _, yj = same_tapes(py["f"], jn["f"], x0, (b,))
    assert isinstance(yj, tape.VarArray) and yj.shape == (32, 40)
    assert np.array_equal(yj.value, np.tanh(x0 * 2.0 + b) - x0)  # NumPy's own bits
    w = np.random.default_rng(2).normal(size=(32, 40))
    g = tape.grad(lambda A: (jn["f"](A, b) * w).sum())(x0)
    assert np.allclose(g, w * (2.0 * (1.0 - np.tanh(x0 * 2.0 + b) ** 2) - 1.0), rtol=1e-13, atol=1e-13)
    view = RETURNS.replace("return np.tanh(A * 2.0 + b) - A", "return (np.tanh(A * 2.0 + b) - A)[1::2, ::-1].T")
    py, jn = namespace(view, arrays=True)
    yp, (_, yj) = recorded(py["f"], x0, (b,))[1], same_tapes(py["f"], jn["f"], x0, (b,))
    assert yj._view == yp._view and yj.shape == (40, 16)  # a view of the record, as the Python recorder's
    assert np.array_equal(yj.value, (np.tanh(x0 * 2.0 + b) - x0)[1::2, ::-1].T)


def test_xs_made_by_python_code_keeps_its_values_for_the_reverse_sweep(monkeypatch):
    """xs a record Python code made, its handle dropped after the call: a recycling tape (tape.value_and_grad's) keeps
    its region while the jitted records' reverse reads it (arenas.CHECK: freed regions filled with NaN at once)."""
    from tape.sweeps import arenas

    source, x0, data = CASES["sums"]  # A * A: its reverse reads A
    _, jn = namespace(source, arrays=True)
    expected = tape.value_and_grad(jn["f"], argnums=0)(2.0 * x0, *data)
    monkeypatch.setattr(arenas, "CHECK", True)

    def outer(x):
        y = jn["f"](x * 2.0, *data)
        for _ in range(3):
            (x * 3.0).sum()  # later records, which may take freed regions
        return y

    value, grad = tape.value_and_grad(outer)(x0)
    assert value == expected[0] and np.array_equal(grad, 2.0 * expected[1])


CONSTANTS = '''
def f(A, C):                         # a NumPy array an op reads: a constant record of its values, copied in C order
    return (A * C).sum() + (C @ A[:, :8]).sum()
'''


def test_numpy_arrays_of_every_layout_are_constants_as_python():
    """The constant's values of a C-ordered array (copied as one block), a transpose, a strided and a reversed view
    (copied element by element in C order): the Python recorder's records and arena; the gradient reads them."""
    py, jn = namespace(CONSTANTS, arrays=True)
    rng = np.random.default_rng(4)
    A, big = rng.normal(size=(40, 40)), rng.normal(size=(80, 80))
    for C in (big[:40, :40].copy(), big[:40, :40].T, big[::2, 1::2], big[40:, 40:][::-1, ::-1]):
        same_tapes(py["f"], jn["f"], A, (C,))
        _, g = tape.value_and_grad(jn["f"], argnums=0)(A, C)
        expected = C.copy()
        expected[:, :8] += C.sum(axis=0)[:, None]
        assert np.allclose(g, expected, rtol=1e-13, atol=1e-13)


FALLBACK = '''
def f(x, m):                         # an array of Vars made by np.zeros: not an array record (scalar records)
    y = np.zeros(5, dtype=x.dtype)
    for i in range(5):
        y[i] = x[i]
    return x[0] * x[1] + y.prod() * m[0] + (x[-5:] * m[5:]).sum()
'''
UNFIT = '''
def f(A, k):                         # an empty slice (k 0): NumPy's view starts at 0, the call is scalar records
    return (A[3:3 + k] * 2.0).sum() + (A * A).sum()
'''


def test_what_array_records_lack_records_as_scalar_records():
    py, jn = namespace(FALLBACK, arrays=True)
    x0, m = np.random.default_rng(3).normal(size=1100), np.arange(1.0, 11.0)
    vj, gj = tape.value_and_grad(jn["f"])(x0, m)
    assert jn["f"]._arrays is False  # its typing failed once: not tried again
    expected = np.zeros(1100)
    expected[:5], expected[-5:] = [m[0] * np.prod(np.delete(x0[:5], k)) for k in range(5)], m[5:]
    expected[0], expected[1] = expected[0] + x0[1], expected[1] + x0[0]
    assert np.isclose(vj, x0[0] * x0[1] + np.prod(x0[:5]) * m[0] + x0[-5:] @ m[5:], rtol=1e-12)
    assert np.allclose(gj, expected, rtol=1e-13, atol=0)
    py, jn = namespace(UNFIT, arrays=True)
    A = np.random.default_rng(5).normal(size=(33, 33))
    t = tape.Tape()
    jn["f"](t.array(A), 0)
    assert t.n_arrays == 1 and len(t) > 33 * 33  # A's record, then elem and scalar records only
    assert jn["f"]._arrays is None  # (tried again at the next call: its typing held)
    vj, gj = tape.value_and_grad(jn["f"], argnums=0)(A, 2)
    assert jn["f"]._arrays is True and np.isclose(vj, 2.0 * A[3:5].sum() + (A * A).sum(), rtol=1e-12)
    expected = 2.0 * A
    expected[3:5] += 2.0
    assert np.allclose(gj, expected, rtol=1e-15, atol=0)


def test_ops_the_driver_lacks_are_numpy_s_called_back():
    """Values the driver's rows cannot give NumPy's bits for come from NumPy's rule (array_calls.by_numpy): pow,
    sin, arctan2, A.T @ A (NumPy's syrk), exp of a strided view, a sum of a transpose, a matmul of column slices."""
    _, x0, data = CASES["powers"]
    py, jn = namespace('''
def f(x, w):
    A = x[:1024].reshape(32, 32)
    B = (A[:, 2:9].T @ A[:, 1:5]).sum() + (A.T @ A).sum() + (A @ A.T).sum() + A.T.sum(axis=1).sum()
    B = B + np.exp(x[::2]).sum()
    return B + (np.sin(x) * x ** 2.5).sum() + (w ** x).sum()
''', arrays=True)
    same_tapes(py["f"], jn["f"], x0, data)


@pytest.fixture
def called(monkeypatch):
    """The plans whose values NumPy's rule computes (array_calls.by_numpy reads each), the rows' kernels made at
    once."""
    from tape.compiled import array_calls

    monkeypatch.setattr(array_calls, "PAYBACK", 0.0)
    plans, plan_of = [], array_calls.plan_of
    monkeypatch.setattr(array_calls, "plan_of", lambda row: plans.append(row[0]) or plan_of(row))
    return plans


def test_looped_ops_of_column_slices_are_the_driver_s(called):
    """A looped op (NumPy's loop: tanh, exp) of a view of lines of unit steps (the LSTM's gates, column slices), and
    sigmoid of any view (its loop reads scratch), are the driver's rows with NumPy's bits, edge values too; of a view
    stepping by 2 NumPy's rule is called back."""
    py, jn = namespace('''
def f(x):
    G = x[:2048].reshape(32, 64)
    i, g, o = tape.sigmoid(G[:, :32]), np.tanh(G[:, 32:]), tape.sigmoid(G[::2, 1::2])
    return (i * g).sum() + o.sum() + np.exp(G[1::2, ::2]).sum()
''', arrays=True)
    x0 = np.random.default_rng(6).normal(size=2100)
    x0[40:40 + len(EDGES)], x0[2000:2000 + len(EDGES)] = EDGES, EDGES[::-1]
    for x in (x0, np.nan_to_num(x0, nan=0.5, posinf=30.0, neginf=-30.0)):
        called.clear()
        same_tapes(py["f"], jn["f"], x, (), nans=True)
        assert len(called) == 1  # the exp of G[1::2, ::2]'s lines stepping by 2


def test_comparisons_and_selects_are_the_driver_s(called):
    """Comparisons of array records (each spelling, a number on either side) and np.where's selects (two rows each:
    array_rows.rows) are the driver's rows with NumPy's bits, NaN, infinities and ties too, a branch broadcast or a
    number: no call of NumPy's rule back."""
    py, jn = namespace('''
def f(x):
    a, b = x[:1000], x[1000:2000]
    y = np.where(a < b, a, b) + np.where(a <= 0.5, b, 1.5) + np.where(0.25 > b, a, 2.0) + np.where(a >= b, a * b, b)
    z = np.where(a.reshape(20, 50) > 0.0, b[:50], a[::-1].reshape(50, 20).T)  # (a row broadcast, a transpose)
    return (y * np.where(a == b, 3.0, a) * np.where(b != 0.0, b, 3.5)).sum() + (z * z).sum()
''', arrays=True)
    x0 = np.random.default_rng(8).normal(size=2000)
    x0[1000:1100] = x0[:100]  # (ties)
    x0[200:200 + len(EDGES)], x0[1300:1300 + len(EDGES)] = EDGES, EDGES[::-1]
    x0[1500:1510], x0[500:510] = 0.0, 0.5
    for x in (x0, np.nan_to_num(x0, nan=0.5, posinf=30.0, neginf=-30.0)):
        called.clear()
        same_tapes(py["f"], jn["f"], x, (), nans=True)
        assert not called


def test_logsumexp_of_lines_is_the_driver_s(called):
    """A logsumexp along the last axis of a view in C order (the mixtures' logsumexp over components, one over all
    elements) is the driver's row with NumPy's bits, edge values and rows of all -inf too; along the first axis NumPy's
    rule is called back."""
    py, jn = namespace('''
def f(x):
    A = x[:2048].reshape(128, 16)
    B = x[2048:2240].reshape(4, 3, 16)
    return (tape.logsumexp(A * 0.5, axis=1).sum() + tape.logsumexp(x[:100]) + tape.logsumexp(B, axis=2).sum()
            + tape.logsumexp(A, axis=0).sum())
''', arrays=True)
    x0 = np.random.default_rng(8).normal(size=2300) * 30.0
    x0[:len(EDGES)], x0[2048 - len(EDGES):2048] = EDGES, EDGES[::-1]
    x0[160:176] = -np.inf  # a line of all -inf: -inf
    for x in (x0, np.nan_to_num(x0, nan=0.5, posinf=700.0, neginf=-700.0)):
        called.clear()
        same_tapes(py["f"], jn["f"], x, (), nans=True)
        assert len(called) == 1  # the logsumexp along axis 0
        gp, gj = tape.grad(py["f"])(x), tape.grad(jn["f"])(x)
        assert np.array_equal(canonical(gp.view(np.uint64)), canonical(gj.view(np.uint64)))


DEFAULT = '''
def f(x):
    return (np.exp(x) * 2.0).sum()
'''


def test_array_records_are_asked_for():
    """Without arrays=True an x0 of 1,024 or more is an elem record per element, as before: no array driver compiles."""
    py, jn = namespace(DEFAULT)
    x0 = np.random.default_rng(6).normal(size=1100)
    t = tape.Tape()
    jn["f"](t.array(x0))
    assert jn["f"]._arrays is False and t.n_arrays == 1 and len(t) > 1100
    gj, gp = tape.value_and_grad(jn["f"])(x0)[1], tape.value_and_grad(py["f"])(x0)[1]
    assert np.allclose(gj, 2.0 * np.exp(x0), rtol=1e-15, atol=0) and np.allclose(gj, gp, rtol=1e-15, atol=0)

INDICES = textwrap.dedent('''
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from test_jit_arrays import namespace
    import tape
    py, jn = namespace("""
    def f(A, i, j, step, n):
        if n == 0:
            return A[i].sum()
        if n == 1:
            return A[i, j] * 1.0
        if n == 2:
            return A[::step].sum()
        if n == 3:
            return np.concatenate((A, A[:, :5])).sum()
        return A.reshape(n, -1).sum()
    """, arrays=True)
    A = np.ones((40, 30))
    for i, j, step, n in ((40, 0, 1, 0), (-41, 0, 1, 0), (2, 30, 1, 1), (0, -31, 1, 1), (0, 0, 0, 2), (0, 0, 1, 3),
                          (0, 0, 1, 7)):
        for g in (py["f"], jn["f"]):
            try:
                g(tape.Tape().array(A), i, j, step, n)
                print("no error")
            except (IndexError, ValueError) as e:
                print(type(e).__name__)
    print(jn["f"]._arrays, "done")
''')


def test_bad_indices_raise_as_python():
    """Ints out of bounds, a slice step of 0, a join of other lengths and a bad reshape raise NumPy's IndexError or
    ValueError as the Python recorder does, never a read outside the region (in a subprocess: a crash would take the
    test run with it)."""
    run = subprocess.run([sys.executable, "-c", INDICES.format(tests=os.path.dirname(__file__))], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[-1] == "None done" and len(lines) == 15  # (never fell back to scalar records: each call raised)
    assert lines[:-1] == ["IndexError"] * 8 + ["ValueError"] * 6


BAD = textwrap.dedent('''
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from test_jit_arrays import namespace
    import tape
    py, jn = namespace("""
    def f(A, B, mode):
        if mode == 0:
            return (A @ B).sum()
        return (A + B).sum()
    """, arrays=True)
    A = np.ones((40, 30))
    for B, mode in ((np.ones((20, 5)), 0), (np.ones(29), 1), (np.ones((39, 1)), 1)):
        for g in (py["f"], jn["f"]):
            try:
                g(tape.Tape().array(A), B, mode)
            except ValueError as e:
                print(type(e).__name__, str(e).split(" (")[0])
    print("done")
''')


def test_bad_shapes_raise_value_errors_as_python():
    """Mismatched matmul and broadcast shapes: NumPy's ValueError, as the Python recorder raises, never a crash (in a
    subprocess: a crash would take the test run with it)."""
    run = subprocess.run([sys.executable, "-c", BAD.format(tests=os.path.dirname(__file__))], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[-1] == "done" and len(lines) == 7
    assert lines[1] == "ValueError matmul: inner dimensions differ"
    assert all(line.startswith("ValueError operands could not be broadcast together") for line in lines[3:6:2])
    assert all(line.startswith("ValueError") for line in lines[:6])


RAISES = textwrap.dedent('''
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from test_jit_arrays import namespace
    import tape
    py, jn = namespace({source!r}, arrays=True)
    for n, k in {calls!r}:
        for g in (py["f"], jn["f"]):
            try:
                g(tape.Tape().array(np.ones(1200)), n, k)
                print("no error")
            except (IndexError, ValueError) as e:
                print(type(e).__name__)
    print(jn["f"]._arrays, "done")
''')


def raised(source: str, calls: tuple) -> list[str]:
    """What f(u, n, k) of ``source`` raised at each (n, k) of ``calls``, the Python recorder's then tape.jit's (u 1,200
    ones, an array record), and last whether tape.jit's f wrote array records: in a subprocess (a crash would take the
    test run with it)."""
    script = RAISES.format(tests=os.path.dirname(__file__), source=textwrap.dedent(source), calls=calls)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


JOINS_BAD = """
    def f(u, n, k):
        if n == 0:
            return np.roll(u, 3, k).sum()
        if n == 1:
            return np.stack((u, u[1:]), 0).sum()
        if n == 2:
            return np.stack((u, u), k).sum()
        if n == 3:
            return np.pad(u, (k, 2)).sum()
        if n == 4:
            return np.pad(u, k, "wrap").sum()
        if n == 5:
            return np.pad(u, 1, "mean" if k else "edge").sum()
        if n == 6:
            return u @ u[k:]
        if n == 7:
            c = u > u[k:]  # (never used: NumPy's error all the same)
            return u.sum()
        if n == 8:
            return np.where(u > 0.0, u, u[k:]).sum()
        if n == 10:
            return np.stack((u.reshape(4, 300), u.reshape(4, 300)[k % 3:]), k).sum()
        if n == 11:
            return np.concatenate((u.reshape(2, 3, 200), u.reshape(2, 3, 200)[:, 1:]), k).sum()
        if n == 12:
            return np.concatenate((np.ones((2, 3, 5)), u.reshape(2, 3, 200), np.ones((3, 200))), k).sum()
        return u.max(axis=k)
"""


def test_bad_joins_raise_as_python():
    """np.roll, np.stack, np.concatenate and max along an axis out of bounds (NumPy's AxisError), a stack of other
    shapes, joins of 2-d and 3-d records (and NumPy arrays) whose other axes or ndims differ, a negative pad width, a
    pad mode tape lacks, a dot of vectors of two lengths, a comparison and a where of shapes that do not broadcast:
    the Python recorder's exceptions."""
    lines = raised(JOINS_BAD, ((0, 1), (0, -2), (1, 0), (2, 2), (2, -3), (3, -1), (4, -2), (5, 1), (6, 1), (7, 1),
                               (8, 1), (9, 1), (10, 1), (10, 3), (11, 0), (11, -4), (12, 2), (12, 1)))
    assert lines[-1] == "None done" and len(lines) == 37  # (never fell back to scalar records: each call raised)
    assert lines[:-1] == [name for name in ["AxisError", "AxisError", "ValueError", "AxisError", "AxisError",
                                            "ValueError", "ValueError", "ValueError", "ValueError", "ValueError",
                                            "ValueError", "AxisError", "ValueError", "AxisError", "ValueError",
                                            "AxisError", "ValueError", "ValueError"] for _ in "pj"]


def test_sums_of_all_of_a_view_s_elements_have_numpys_bits(monkeypatch):
    """A sum over all the elements (or the trailing axes) of a view that is not one block, written by the driver's
    forward (its kernels made at once): NumPy's bits, where NumPy 2.4 adds copies of the view in its buffer (the
    driver's rows added line by line: old code 1-2 ulp off)."""
    from tape.compiled import array_calls
    monkeypatch.setattr(array_calls, "PAYBACK", 0.0)
    sums = ["B[:, 1:].sum()", "B[1::3, 1::2].sum()", "B[::2].sum(axis=(0, 1))", "C[1:, ::2, 1::2].sum()",
            "(C[:, 1:, ::3].sum(axis=(1, 2)) ** 2).sum()", "C[::-1][1:].sum()"]
    py, jn = namespace("def f(x, k):\n    B, C = x.reshape(48, 30) * 1.5, x[:1440].reshape(8, 9, 20) * 0.5\n" + "".join(
        f"    if k == {k}:\n        return {s} * 1.0\n" for k, s in enumerate(sums)) + "    return x.sum()\n",
        arrays=True)
    x = np.random.default_rng(32).normal(size=1440)
    for k in range(len(sums)):
        want = py["f"](x, k)  # (f on an ndarray: NumPy's own value)
        assert tape.value_and_grad(jn["f"], argnums=0)(x, k)[0] == want == tape.value_and_grad(py["f"], argnums=0)(
            x, k)[0]
        assert jn["f"]._arrays is True


def test_an_accumulator_made_by_zeros_like_is_array_records():
    """``acc = np.zeros_like(x)`` then a loop adding to it: array records (it fell back to Var arrays, scalar records
    one per element), the Python recorder's value and gradient bit for bit (its records in another order: tape.jit
    records the zeros as a constant where the loop starts, the Python recorder at the first add)."""
    py, jn = namespace("def f(x):\n    acc = np.zeros_like(x)\n    for i in range(3):\n"
                       "        acc = acc + np.sin(x * i) * np.full_like(x, 0.5) + np.ones_like(x)\n"
                       "    return (acc * acc).sum()\n", arrays=True)
    x = np.random.default_rng(33).normal(size=2000)
    (vp, gp), (vj, gj) = (tape.value_and_grad(f)(x) for f in (py["f"], jn["f"]))
    assert jn["f"]._arrays is True and vp == vj and np.array_equal(gp, gj)
    assert len(recorded(jn["f"], x, ())[0]) < 50  # (one record per op: 6,000 per step as scalar records)
