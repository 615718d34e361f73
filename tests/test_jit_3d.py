"""tape.jit writes array records of three and four axes (issue 26): the 1-d convolution of bench/user_programs.py, a
3-d record broadcast against each side, sums over each axis, views, a per-channel normalisation, batched matmul, 4-d
data. Each as the
Python recorder's tape bit for bit, gradients against JAX float64 (tests/jit_3d_references.json) and central
differences (tests/test_jit_array_records.py's checks on tests/jit_3d_programs.py's cases); bad shapes raise NumPy's
errors; five axes, which array records lack, raise tape.jit's."""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import test_jit_array_records as on_2d
from jit_3d_programs import cases, directions
from test_jit_arrays import namespace

import tape
from tape.records import array_records

with open(os.path.join(os.path.dirname(__file__), "jit_3d_references.json")) as _file:
    REFERENCES = json.load(_file)
CASES = cases()


@pytest.fixture
def on_3d(monkeypatch):
    """tests/test_jit_array_records.py's checks read this file's cases, directions and JAX references."""
    for name, value in (("CASES", CASES), ("REFERENCES", REFERENCES), ("directions", directions)):
        monkeypatch.setattr(on_2d, name, value)


@pytest.fixture(scope="module", params=sorted(CASES))
def program(request):
    """(name, the Python recorder's f, tape.jit's f, x0, data) of a case."""
    source, x0, data = CASES[request.param]
    return (request.param, *(ns["f"] for ns in namespace(source, arrays=True)), x0, data)


def test_programs_of_three_and_four_axes_record_as_python(program):
    name, f, jf, x0, data = program
    tj, _ = on_2d.same_tapes(f, jf, x0, data)
    assert len(tj._plans) >= 5 and len(tj) < x0.size / 4  # a record per array op, not per element
    four = ("four", "batched", "joins", "arranged")  # (arranged: np.repeat of a 3-d record spreads a 4-d view)
    assert max(len(p.shape) for p in tj._plans) == (4 if name in four else 3)


def test_gradients_as_python_jax_and_central_differences(program, on_3d):
    on_2d.test_gradients_as_python_jax_and_central_differences(program)


def test_hvp_and_replay_as_python_and_jax(program, on_3d):
    on_2d.test_hvp_and_replay_as_python_and_jax(program)


@pytest.mark.parametrize("name", sorted(CASES))
def test_edge_values_record_as_python(name):
    """0, -0.0, ±inf, NaN, huge and tiny numbers in xs: the Python recorder's tape, value and gradient (any NaN one)."""
    source, x0, data = CASES[name]
    py, jn = namespace(source, arrays=True)
    x = x0.copy()
    x.flat[:len(on_2d.EDGES)] = on_2d.EDGES
    x.flat[-len(on_2d.EDGES):] = on_2d.EDGES[::-1]
    on_2d.same_tapes(py["f"], jn["f"], x, data, nans=True)
    (vp, gp), (vj, gj) = (tape.value_and_grad(f, argnums=0)(x, *data) for f in (py["f"], jn["f"]))
    assert np.array_equal(*(on_2d.canonical(np.float64(v).view(np.uint64)) for v in (vp, vj)))
    assert np.array_equal(on_2d.canonical(gp.view(np.uint64)), on_2d.canonical(gj.view(np.uint64)))
    assert np.isnan(gj).any()


@pytest.mark.slow  # (f compiled afresh: 10 CPU-s)
def test_the_benchmark_s_convolution_writes_array_records(monkeypatch):
    """bench/user_programs.py's conv1d, its 64 params recorded as array records (as tape.value_and_grad records
    an array from SMALL elements: here from 1), against its hand gradient and the Python recorder's bit for bit."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
    try:
        import user_programs
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(array_records, "SMALL", 1)
    th0, f, hand, _ = user_programs.conv1d(SimpleNamespace(xp=np), batch=4, length=64)
    jf = tape.jit(f)
    (vj, gj), (vp, gp), (vh, gh) = tape.value_and_grad(jf)(th0), tape.value_and_grad(f)(th0), hand(th0)
    assert jf._arrays is True and vj == vp and np.array_equal(gj, gp)
    assert np.isclose(vj, vh, rtol=1e-13) and np.allclose(gj, gh, rtol=1e-12, atol=1e-14)


BAD = '''
def f(a, k):                         # bad shapes of 3-d records, by k (one compile for all)
    if k == 0:
        return (a * np.ones((3, 16, 20))).sum()
    if k == 1:
        return (a[:, :, :5] + a[:, :4, :]).sum()
    if k == 2:
        return np.where(a > 0.0, a, np.ones((3, 1, 20))).sum()
    if k == 3:
        return np.where(a > np.ones((4, 2, 1)), a, 0.0).sum()
    if k == 4:
        return a.reshape(3, 3, -1).sum()
    if k == 5:
        return a.reshape(2, -1, -1).sum()
    if k == 6:
        return a.reshape(4, 0, -1).sum()
    if k == 7:
        return a[4].sum()
    if k == 8:
        return a[1, 2, -21]
    if k == 9:
        return a[:, 16].sum()
    if k == 10:
        return a.sum(axis=3).sum()
    if k == 11:
        return a.max(axis=-4).sum()
    if k == 12:
        return (a @ np.ones((3, 20, 2))).sum()
    if k == 13:
        return (a @ np.ones((5, 2))).sum()
    return (a * a).sum()
'''
SIZE, BOUNDS = (ValueError, "its size differs"), (IndexError, "out of bounds")
ERRORS = [(ValueError, "could not be broadcast")] * 3 + [(ValueError, "a comparison of array records"), SIZE,
                                                         (ValueError, "negative length"), SIZE] + [BOUNDS] * 3 + [
    (np.exceptions.AxisError, "out of bounds")] * 2 + [(ValueError, "could not be broadcast"), (ValueError, "inner")]


def test_bad_shapes_raise_numpy_s_errors():
    _, jn = namespace(BAD, arrays=True)
    A = np.random.default_rng(4).normal(size=(4, 16, 20))
    for k, (error, message) in enumerate(ERRORS):
        with pytest.raises(error, match=message):
            tape.value_and_grad(jn["f"], argnums=0)(A, k)
    value, grad = tape.value_and_grad(jn["f"], argnums=0)(A, len(ERRORS))
    assert jn["f"]._arrays is True and value == (A * A).sum() and np.array_equal(grad, 2.0 * A)


def test_five_axes_raise_tape_jit_s_error():
    """Array records have at most four axes (the driver's rows'): five fail typing, then scalar records refuse."""
    W = np.ones((32, 40))
    with pytest.raises(tape.JitError, match="5d"):
        tape.value_and_grad(tape.jit(lambda w: (w * np.ones((1, 1, 1, 1, 40))).sum()))(W)
    with pytest.raises(TypeError, match="pass 1-d or 2-d arrays"):
        tape.value_and_grad(tape.jit(lambda a: (a * 2.0).sum()))(np.ones((1, 2, 2, 16, 20)))


def test_a_refusal_of_both_tries_names_each():
    """f that neither array records (np.pad's 'wrap' of 3 axes) nor Var arrays (3 axes) take: the JitError's first
    line is the Var arrays' refusal, its second the array records', each with f's file and line."""
    f = namespace("def f(x):\n    return np.pad(x.reshape((4, 16, 20)), 1, 'wrap').sum()\n")[0]["f"]
    for _ in range(2):  # (the second tape.jit of f reads the array records' refusal from the cache's file)
        with pytest.raises(tape.JitError) as caught:
            tape.value_and_grad(tape.jit(f))(np.ones(1280))
        first, second = str(caught.value).splitlines()[:2]
        assert first.startswith("tape.jit: Var arrays are 1-d or 2-d") and f.__code__.co_filename in first
        assert second.startswith("(with xs an array record: pad(tape.ArrayRecord(3d)") and ":2 " in second
        assert "is not supported on array records" in second
