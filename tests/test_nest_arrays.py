"""Nested transforms take what the outer one hands f: VarArrays of any size (either form), NumPy arrays,
and pytrees of them. Checked against hand-derived Hessians and central differences of the gradient."""

import numpy as np
import pytest

import tape

RNG = np.random.default_rng(250)


def f(z):
    return np.sum(np.sin(z) * z) + np.sum(z) ** 2


def hessian_of_f(x):
    """d²/dz² [Σ sin(z) z + (Σ z)²] = diag(2 cos z - z sin z) + 2."""
    return np.diag(2 * np.cos(x) - x * np.sin(x)) + 2.0


@pytest.mark.parametrize("n", [3, 1100])  # scalar records, array records
def test_the_hvp_idiom(n):
    """tape.grad(lambda z: (tape.grad(f)(z) * v).sum())(x): JAX's Hessian-vector product."""
    x, v = RNG.normal(size=n), RNG.normal(size=n)
    hv = tape.grad(lambda z: (tape.grad(f)(z) * v).sum())(x)
    assert isinstance(hv, np.ndarray) and hv.shape == (n,)
    expected = (2 * np.cos(x) - x * np.sin(x)) * v + 2 * v.sum()
    np.testing.assert_allclose(hv, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [4, 1100])
def test_jvp_of_grad_and_jacobian_of_grad(n):
    x, v = RNG.normal(size=n), RNG.normal(size=n)
    g, t = tape.jvp(tape.grad(f), (x,), (v,))
    np.testing.assert_allclose(np.asarray(g), np.sin(x) + x * np.cos(x) + 2 * x.sum(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(t), hessian_of_f(x) @ v, rtol=1e-12, atol=1e-11)
    if n < 10:
        np.testing.assert_allclose(tape.jacobian(tape.grad(f))(x), hessian_of_f(x), rtol=1e-12, atol=1e-12)


def test_dicts_and_data_arguments():
    """d/da of (d/da Σ exp(a b)) with b an array in a dict, and an array passed as data (not differentiated)."""
    b = RNG.normal(size=1200) * 0.1

    def g(p, scale):
        return np.sum(np.exp(p["a"] * p["b"])) * scale

    d2 = tape.grad(lambda p: tape.grad(g)(p, 2.0)["a"])({"a": 0.3, "b": b})
    np.testing.assert_allclose(d2["a"], 2.0 * np.sum(b * b * np.exp(0.3 * b)), rtol=1e-12)
    np.testing.assert_allclose(d2["b"], 2.0 * (1 + 0.3 * b) * np.exp(0.3 * b), rtol=1e-12)
    w = RNG.normal(size=1200)
    inner = lambda z, data: np.sum(np.tanh(z) * data)  # noqa: E731
    outer = tape.grad(lambda z: np.sum(tape.grad(inner)(z, w)))(b)
    t = np.tanh(b)
    np.testing.assert_allclose(outer, -2 * t * (1 - t * t) * w, rtol=1e-12, atol=1e-14)


def test_a_traced_nested_derivative_replays():
    G = tape.trace(lambda z: (tape.grad(f)(z) * z).sum(), RNG.normal(size=1100))
    for _ in range(3):
        z = RNG.normal(size=1100)
        np.testing.assert_allclose(G(z), np.sum((np.sin(z) + z * np.cos(z) + 2 * z.sum()) * z), rtol=1e-12)
        h = 1e-6
        e = np.zeros(1100)
        e[7] = h
        np.testing.assert_allclose(G.gradient(z)[7], (G(z + e) - G(z - e)) / (2 * h), rtol=1e-6)


def test_vjp_inside_grad_takes_arrays():
    x = RNG.normal(size=1100)

    def outer(z):
        y, pullback = tape.vjp(lambda u: np.tanh(u) * u, z)
        (gz,) = pullback(np.ones(1100))
        return np.sum(gz * gz)

    t = np.tanh(x)
    d = t + x * (1 - t * t)  # d/dx [tanh(x) x]
    dd = 2 * (1 - t * t) - 2 * x * t * (1 - t * t)  # its derivative
    np.testing.assert_allclose(tape.grad(outer)(x), 2 * d * dd, rtol=1e-11, atol=1e-12)
