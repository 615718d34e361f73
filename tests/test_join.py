"""np.concatenate and np.stack of array records: one join record (a row of kernels/array_ops.py), checked
against NumPy's values, central differences of the program in plain NumPy, and the scalar-record form."""

import io

import numpy as np
import pytest

import tape
from tape.records import array_records

RNG = np.random.default_rng(27)


def central(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])


PROGRAMS = {
    "shift (the heat equation's)": lambda u: np.concatenate([u[1:], [0.0]]) - 2.0 * u + np.concatenate([[0.0], u[:-1]]),
    "three pieces": lambda u: np.concatenate([np.sin(u[:3]), u[3:] * u[3:], u[:2]]),
    "five pieces (chained)": lambda u: np.concatenate([u[:2], np.exp(u[2:4]), u[:1], u[4:], [1.0, 2.0]]),
    "2-d along axis 1": lambda u: np.concatenate([u.reshape(2, -1), np.tanh(u.reshape(2, -1))], axis=1),
    "2-d along axis -2, a transpose": lambda u: np.concatenate([u.reshape(2, -1).T, u.reshape(2, -1).T * 3.0],
                                                               axis=-2),
    "stack along a new axis": lambda u: np.stack([u, u * u, np.cos(u)], axis=1),
    "stack at the front": lambda u: np.stack([u[:4], u[4:8]]),
}


@pytest.mark.parametrize("form", ["array", "scalar"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_values_and_derivatives(name, form, monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1 if form == "array" else 10**12)
    program = PROGRAMS[name]
    w = RNG.normal(size=program(np.ones(8)).shape)

    def f(u):
        return np.sum(program(u) ** 2 * w)

    x = RNG.normal(size=8)
    F = tape.trace(f, x)
    if form == "array":
        assert F.stats()["by_op"].get("array join", 0) >= 1
    y = RNG.normal(size=8)
    np.testing.assert_allclose(F(y), f(y), rtol=1e-13)
    reference = central(f, y)
    np.testing.assert_allclose(F.gradient(y), reference, rtol=1e-6, atol=1e-7)
    v = RNG.normal(size=8)
    np.testing.assert_allclose(F.jvp(y, v), reference @ v, rtol=1e-6, atol=1e-7)
    hessian = central(F.gradient, y)
    np.testing.assert_allclose(F.hvp(y, v), hessian @ v, rtol=1e-6, atol=1e-6)
    G = tape.trace(lambda u: program(u), x)  # an array output: its vjp sends each slice back
    np.testing.assert_allclose(G.vjp(y, w), central(lambda u: np.sum(program(u) * w), y), rtol=1e-6, atol=1e-7)


def test_a_large_residual_is_a_few_records():
    """The issue's residual at 10^5: 16 records (element reads made 10^5 before), same numbers as NumPy."""
    n = 10**5
    u0 = RNG.normal(size=n)

    def residual(u):
        up, lo = np.concatenate([u[1:], [0.0]]), np.concatenate([[0.0], u[:-1]])
        return up - 2.0 * u + lo + 0.1 * np.exp(u) - 1.0 / u.size

    F = tape.trace(residual, u0)
    assert len(F) < 30
    np.testing.assert_array_equal(F(u0), residual(u0))
    w = RNG.normal(size=n)
    expected = -2.0 * w + 0.1 * np.exp(u0) * w + np.concatenate([[0.0], w[:-1]]) + np.concatenate([w[1:], [0.0]])
    np.testing.assert_allclose(F.vjp(u0, w), expected, rtol=1e-13, atol=1e-13)


def test_joins_save_load_and_are_checked():
    F = tape.trace(lambda u: np.sum(np.concatenate([u[1:], u[:1] * 2.0]) ** 3), RNG.normal(size=1500))
    buffer = io.BytesIO()
    F.save(buffer)
    G = tape.load(io.BytesIO(buffer.getvalue()))
    x = RNG.normal(size=1500)
    np.testing.assert_array_equal(G.gradient(x), F.gradient(x))


def test_bad_joins_raise_numpys_errors():
    t = tape.Tape()
    a, b = t.array(np.ones((1100, 2))), t.array(np.ones((1100, 3)))
    with pytest.raises(ValueError, match="other axes differ"):
        np.concatenate([a, b], axis=0)
    with pytest.raises(ValueError, match="same shape to stack"):
        np.stack([a, b])
    assert np.concatenate([a, b], axis=1).shape == (1100, 5)
