"""Reverse mode of Functions whose output is an array of any rank (issue 29): every reverse
entry point (F.vjp, F.jacobian in each mode, F.map_vjp, tape.vjp, tape.jacobian, a call
record's reverse; F.vjp_function on scalar records) for outputs of rank 0 to 3, views,
transposes and slices of array records, in both array forms, against central differences of the same program
written in NumPy and against results derived by hand."""

import numpy as np
import pytest

import tape
from tape.records import array_records

RNG = np.random.default_rng(29)


@pytest.fixture(params=["array", "scalar"])
def form(request, monkeypatch):
    """Array records for every size, then scalar records for every size (as test_array_records.py)."""
    monkeypatch.setattr(array_records, "SMALL", 1 if request.param == "array" else 10**12)
    return request.param


# (name, program on a (4, 3) X, for a VarArray and for a NumPy array alike)
PROGRAMS = [
    ("0-d", lambda X: (X * X).sum()),
    ("1-d", lambda X: np.tanh(X).sum(axis=1)),
    ("2-d", lambda X: X * 2.0),
    ("2-d max", lambda X: X - X.max(axis=1, keepdims=True)),
    ("2-d matmul", lambda X: np.tanh(X @ X.T)),
    ("3-d", lambda X: (X * X).reshape(2, 2, 3) + 1.0),
    ("transpose", lambda X: (np.sin(X) * X).T),
    ("slice", lambda X: (X * X)[1:, ::2]),
    ("reversed", lambda X: np.exp(X)[::-1, ::-1]),
    ("row", lambda X: (X * 3.0)[2]),
    ("3-d view", lambda X: (X * X).reshape(2, 2, 3).transpose(2, 0, 1)[:, 1:]),
]
IDS = [name for name, _ in PROGRAMS]


def central_jacobian(f, x, h=1e-6):
    """(out.size, x.size) by central differences of the NumPy program."""
    x = np.asarray(x, float)
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = h
        cols.append((np.asarray(f(x + e.reshape(x.shape)), float) - np.asarray(f(x - e.reshape(x.shape)), float))
                    .reshape(-1) / (2 * h))
    return np.stack(cols, axis=1)


def point():
    return RNG.uniform(-1.5, 1.5, (4, 3))


@pytest.mark.parametrize("program", [p for _, p in PROGRAMS], ids=IDS)
def test_every_reverse_entry_point(form, program):
    x0, x = point(), point()
    shape = np.shape(program(x))
    J = central_jacobian(program, x)                       # (m, n)
    F = tape.trace(program, x0)
    assert np.shape(F(x)) == shape
    w = RNG.standard_normal(shape)
    want = (w.reshape(-1) @ J).reshape(x.shape)
    tol = dict(rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(F.vjp(x, w), want, **tol)                   # w in the output's shape
    np.testing.assert_allclose(F.vjp(x, w.reshape(-1)), want, **tol)       # or flat
    for mode in ("reverse", "auto", "forward"):
        np.testing.assert_allclose(F.jacobian(x, mode=mode), J.reshape(shape + x.shape), **tol)
    X, W = np.stack([x, point()]), RNG.standard_normal((2,) + shape)
    wants = [(W[p].reshape(-1) @ central_jacobian(program, X[p])).reshape(-1) for p in range(2)]
    np.testing.assert_allclose(F.map_vjp(X.reshape(2, -1), W.reshape(2, -1)), wants, **tol)
    np.testing.assert_allclose(F.map_vjp(X.reshape(2, -1), W), wants, **tol)  # rows in the output's shape
    np.testing.assert_allclose(np.reshape(F.vjp_function()((x, w)), x.shape), want, **tol)  # either form
    value, vjp_fn = tape.vjp(program, x)
    np.testing.assert_allclose(value, program(x), rtol=1e-15)
    (cot,) = vjp_fn(w)
    np.testing.assert_allclose(cot, want, **tol)
    np.testing.assert_allclose(tape.jacobian(program)(x), J.reshape(shape + x.shape), **tol)


@pytest.mark.parametrize("program", [p for _, p in PROGRAMS], ids=IDS)
def test_call_record_reverse(form, program):
    """F called on a VarArray is one call record; its reverse sends F.vjp of the output adjoints."""
    x0, x = point(), point()
    F = tape.trace(program, x0)
    c = RNG.standard_normal(np.shape(program(x)))
    outer = tape.trace(lambda X: (F(X) * c).sum(), x0)
    want = (c.reshape(-1) @ central_jacobian(program, x)).reshape(x.shape)
    np.testing.assert_allclose(outer.gradient(x), want, rtol=1e-6, atol=1e-7)


def test_hand_derived(form):
    """X * 2: w^T J = 2 w; X - max(X, axis=1): w - onehot(argmax) * row sums of w; X.T: w.T."""
    x = np.array([[1.0, -2.0], [3.0, 5.0], [0.5, 0.25], [-1.0, -3.0], [7.0, 2.0], [0.0, 1.0]])
    w = RNG.standard_normal((6, 2))
    assert np.array_equal(tape.trace(lambda X: X * 2.0, x).vjp(x, w), 2.0 * w)
    argmax = np.zeros_like(x)
    argmax[np.arange(6), x.argmax(axis=1)] = 1.0
    got = tape.trace(lambda X: X - X.max(axis=1, keepdims=True), x).vjp(x, w)
    np.testing.assert_allclose(got, w - argmax * w.sum(axis=1, keepdims=True), rtol=1e-15, atol=1e-15)
    assert np.array_equal(tape.trace(lambda X: (X * 1.0).T, x).vjp(x, w.T), w)
    big = np.ones((400, 3))  # the example, 1,200 elements: an array record in the default form
    assert np.array_equal(tape.trace(lambda X: X * 2.0, big).vjp(big, big), 2.0 * big)


@pytest.mark.parametrize("shape", [(400, 3), (6, 2)])
def test_wrong_cotangent_shape_is_named(shape):
    x = np.ones(shape)
    F = tape.trace(lambda X: X * 2.0, x)
    with pytest.raises(ValueError, match="output weights"):
        F.vjp(x, np.ones((shape[1], shape[0])))
