"""VarArray: NumPy-style recording, one block of ordinary records per operation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tape
from tape.records import array_records

RNG = np.random.default_rng(9)


def test_the_articles_broadcast_example():
    """(2,3) + (3,): the gradient of b sums back over the broadcast axis: dY -> db = [4, 1, 2]."""
    t = tape.Tape()
    X = t.array([[10.0, 20, 30], [40, 50, 60]])
    b = t.array([1.0, 2, 3])
    Y = X + b
    np.testing.assert_array_equal(Y.value, [[11, 22, 33], [41, 52, 63]])
    dY = np.array([[1.0, 0, 2], [3, 1, 0]])
    L = (Y * dY).sum()
    np.testing.assert_array_equal(t.gradient(L, b), [4, 1, 2])
    np.testing.assert_array_equal(t.gradient(L, X), dY)
    assert b.grad.shape == (3,) and X.grad.shape == (2, 3)


def test_views_record_nothing_and_indexing_follows_numpy():
    t = tape.Tape()
    X = t.array(np.arange(24.0).reshape(2, 3, 4))
    n = len(t)
    views = [X[1], X[:, 1:], X[..., ::2], X.T, X.reshape(6, 4), X[X.value > 10], X[[0, 1], [2, 0]], X[None, 0],
             X.transpose(2, 0, 1), X.ravel()]
    assert len(t) == n
    for v, expected in zip(views, [X.value[1], X.value[:, 1:], X.value[..., ::2], X.value.T,
                                   X.value.reshape(6, 4), X.value[X.value > 10], X.value[[0, 1], [2, 0]],
                                   X.value[None, 0], X.value.transpose(2, 0, 1), X.value.ravel()], strict=True):
        np.testing.assert_array_equal(v.value, expected)
    x = X[1, 2, 3]
    assert isinstance(x, tape.Var) and x.value == 23.0
    assert [v.value for v in X[0, 0]] == [0, 1, 2, 3]


def scalar_program(xs, ys):
    return [tape.sin(x) * y + x / (1.0 + y * y) - 2.0 ** x for x, y in zip(xs, ys, strict=True)]


def test_array_program_equals_the_scalar_program_bit_for_bit():
    x, y = RNG.uniform(-2, 2, 50), RNG.uniform(-2, 2, 50)
    t1 = tape.Tape()
    X, Y = t1.array(x), t1.array(y)
    Z = (np.sin(X) * Y + X / (1.0 + Y * Y) - 2.0 ** X)
    L1 = Z.sum()
    t2 = tape.Tape()
    xs, ys = t2.vars(x), t2.vars(y)
    zs = scalar_program(xs, ys)
    np.testing.assert_array_equal(Z.value, [z.value for z in zs])
    g1 = t1.gradient(L1, X)
    # the same derivative, element by element, from the scalar tape
    g2 = np.array([t2.gradient(z, xs[k]) for k, z in enumerate(zs)])
    np.testing.assert_array_equal(g1, g2)


def test_one_element_arrays_record_the_same_rows_as_scalars():
    t1, t2 = tape.Tape(), tape.Tape()
    X = t1.array([0.7])
    x = t2.var(0.7)
    _ = np.tanh(X * 3.0 - X) + X ** 2
    _ = tape.tanh(x * 3.0 - x) + x ** 2
    for name in ("_op", "_in0", "_in1", "_val"):
        np.testing.assert_array_equal(getattr(t1, name)[: len(t1)], getattr(t2, name)[: len(t2)])


def test_ufuncs_and_numpy_functions():
    t = tape.Tape()
    a = RNG.uniform(0.5, 2.0, (3, 4))
    X = t.array(a)
    for ufunc in (np.exp, np.log, np.sqrt, np.sin, np.cos, np.tan, np.tanh, np.negative, np.absolute):
        np.testing.assert_allclose(ufunc(X).value, ufunc(a), rtol=1e-15)
    for ufunc in (np.add, np.subtract, np.multiply, np.true_divide, np.power, np.maximum, np.minimum):
        np.testing.assert_allclose(ufunc(X, 1.5).value, ufunc(a, 1.5), rtol=1e-15)
        np.testing.assert_allclose(ufunc(1.5, X).value, ufunc(1.5, a), rtol=1e-15)
        np.testing.assert_allclose(ufunc(X, X[0]).value, ufunc(a, a[0]), rtol=1e-15)
    assert np.sum(X).value == pytest.approx(a.sum(), rel=1e-15)
    np.testing.assert_allclose(np.mean(X, axis=0).value, a.mean(axis=0), rtol=1e-15)
    np.testing.assert_allclose(X.prod(axis=1).value, a.prod(axis=1), rtol=1e-14)
    np.testing.assert_array_equal(np.concatenate([X, X[:1]]).value, np.concatenate([a, a[:1]]))
    np.testing.assert_array_equal(tape.stack([X[0], X[1]], axis=1).value, np.stack([a[0], a[1]], axis=1))
    np.testing.assert_allclose((np.float64(2.0) * X).value, 2.0 * a)


def test_matmul_gradients_are_the_articles_rules():
    """Y = A B: A' = Y' B^T and B' = A^T Y'."""
    t = tape.Tape()
    a, b, dY = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2)), RNG.normal(size=(3, 2))
    A, B = t.array(a), t.array(b)
    Y = A @ B
    np.testing.assert_allclose(Y.value, a @ b, rtol=1e-14)
    L = (Y * dY).sum()
    np.testing.assert_allclose(t.gradient(L, A), dY @ b.T, rtol=1e-13)
    np.testing.assert_allclose(t.gradient(L, B), a.T @ dY, rtol=1e-13)
    v = t.array(RNG.normal(size=4))
    assert isinstance(v @ v, tape.Var) and (A @ v).shape == (3,) and (v @ B).shape == (2,)
    np.testing.assert_allclose(np.dot(A, b).value, a @ b, rtol=1e-14)


def test_reductions_are_pairwise_trees(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 10**6)  # scalar records, whatever the size
    t = tape.Tape()
    X = t.array(np.ones(1000))
    start = len(t)
    total = X.sum()
    assert len(t) - start == 999 and total.value == 1000.0
    depth = np.zeros(len(t), int)
    for i in range(start, len(t)):
        rec = t.record(i)
        depth[i] = 1 + max(depth[j] for j in rec.inputs)
    assert depth.max() == math.ceil(math.log2(1000))


def test_large_arrays_are_array_records():
    t = tape.Tape()
    X = t.array(np.ones(array_records.SMALL))
    start = len(t)
    total = X.sum()
    assert len(t) - start == 2 and total.value == array_records.SMALL  # one sum record, one elem record reading it
    assert t.record(start).op == "array sum"


def test_two_layer_network_gradient_shapes():
    """The articles' table: every gradient has its parameter's shape."""
    t = tape.Tape()
    B, d, h = 5, 3, 4
    x = RNG.normal(size=(B, d))
    W1, b1 = t.array(RNG.normal(size=(d, h))), t.array(np.zeros(h))
    W2, b2 = t.array(RNG.normal(size=(h, 1))), t.array(np.zeros(1))
    hidden = np.maximum(x @ W1 + b1, 0.0)
    out = hidden @ W2 + b2
    loss = ((out - 1.0) ** 2).mean()
    for p in (W1, b1, W2, b2):
        assert t.gradient(loss, p).shape == p.shape


def test_tiny_mlp_trained_with_sgd_loss_falls():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (64, 2))
    y = (X[:, :1] * X[:, 1:] > 0).astype(float)  # XOR-like quadrants
    t = tape.Tape()
    params = [t.array(rng.normal(0, 1, (2, 16))), t.array(np.zeros(16)),
              t.array(rng.normal(0, 0.5, (16, 1))), t.array(np.zeros(1))]
    mark = len(t)
    losses = []
    for _ in range(300):
        W1, b1, W2, b2 = params
        loss = ((tape.sigmoid(np.tanh(X @ W1 + b1) @ W2 + b2) - y) ** 2).mean()
        loss.backward()
        losses.append(loss.value)
        values = [p.value - 0.5 * p.grad for p in params]
        t.rewind(0)
        params = [t.array(v) for v in values]
        mark = len(t)
    assert mark > 0 and losses[-1] < 0.5 * losses[0]


def test_array_conditions_where_and_branch_checks():
    t = tape.Tape()
    X = t.array([-2.0, 0.0, 3.0])
    Y = tape.where(X > 0.0, X * 2.0, -X)
    np.testing.assert_array_equal(Y.value, [2.0, 0.0, 6.0])
    np.testing.assert_array_equal(t.gradient(Y.sum(), X), [-1.0, -1.0, 2.0])
    assert t._checks == []
    assert (X > -5.0).all() and (X > 2.0).any() and not (X > 5.0).any()
    assert len(t._checks) == 9
    np.testing.assert_array_equal(np.asarray(X < 1.0), [True, True, False])
    with pytest.raises(ValueError, match="ambiguous"):
        bool(X > 0.0)
    Z = tape.where(X >= X[1], 1.0, np.array([5.0, 6.0, 7.0]))
    np.testing.assert_array_equal(Z.value, [5.0, 1.0, 1.0])


def test_traced_array_function_and_its_branches():
    def rosenbrock(x):
        return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum()

    F = tape.trace(rosenbrock, np.zeros(50))
    x = RNG.uniform(-1, 1, 50)
    value, grad = F.value_and_grad(x)
    a, b = x[1:] - x[:-1] ** 2, 1 - x[:-1]
    expected = np.zeros(50)
    expected[:-1] = -400 * a * x[:-1] - 2 * b
    expected[1:] += 200 * a
    assert value == pytest.approx(np.sum(100 * a * a + b * b), rel=1e-13)
    np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-12)

    def clipped(x):
        if (x > 0.0).all():
            return (x * x).sum()
        return x.sum()

    G = tape.trace(clipped, np.ones(4))
    assert G(np.full(4, 2.0)) == 16.0
    with pytest.raises(tape.BranchChanged):
        G(np.array([1.0, -1.0, 1.0, 1.0]))


def test_clear_errors():
    t, u = tape.Tape(), tape.Tape()
    X, Y = t.array(np.ones((2, 3))), u.array(np.ones(3))
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(2,\)"):
        X + np.ones(2)
    with pytest.raises(tape.ForeignHandleError):
        X + Y
    with pytest.raises(TypeError, match="numpy.copysign is not supported"):
        np.copysign(X, X)
    with pytest.raises(TypeError, match="numpy.heaviside is not supported"):
        np.heaviside(X, 0.5)
    with pytest.raises(TypeError, match="use .value"):
        np.asarray(X)
    with pytest.raises(TypeError, match="use .value"):
        np.array(X, dtype=float)
    with pytest.raises(TypeError, match="numpy.gradient is not supported"):
        np.gradient(X)
    with pytest.raises(np.exceptions.AxisError):
        np.diff(X, axis=2)
    with pytest.raises(TypeError, match="not defined"):
        bool(X)
    with pytest.raises(TypeError, match="real numbers"):
        t.array(["a"])
    with pytest.raises(ValueError, match="inner dimensions"):
        X @ np.ones((2, 2))
    t.rewind(0)
    with pytest.raises(tape.StaleHandleError):
        _ = X.value
