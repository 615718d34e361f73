"""Second order where a scalar meets an array record: a scalar Var (or an element of an array) broadcast
into every binary array op, on either side, checked against central differences of the gradient and
against hand-derived Hessian blocks, in both array forms.

A scalar record that an array record reads goes through a 0-d pack; its tangent once came out of
``times`` as a NumPy scalar, which the second-order reverse sweep took for the number 0, so the
cross partials H[A, s] were lost (sum(s*A) gave 0.5 where the Hessian is 1, symmetrized from 0 and 1).
"""

import numpy as np
import pytest

import tape
from tape.records import array_records

N = 6
RNG = np.random.default_rng(25)
S0 = 0.7
A0 = RNG.uniform(0.5, 1.5, N)  # positive: pow's base, log's argument; no ties with S0 for max/min
W = RNG.normal(size=N)
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
          "maximum": np.maximum, "minimum": np.minimum, "arctan2": np.arctan2, "hypot": np.hypot,
          "logaddexp": np.logaddexp, "fmax": np.fmax, "fmin": np.fmin}


@pytest.fixture(params=["array", "scalar"])
def form(request, monkeypatch):
    """Array records at every size, then scalar records at every size (the reference engine)."""
    monkeypatch.setattr(array_records, "SMALL", 1 if request.param == "array" else 10**12)
    return request.param


def program(op, side):
    """A nonlinear program where s enters op on one side, then once more outside it."""
    fn = BINARY[op]

    def f(p):
        s, A = p
        y = fn(s, A) if side == "left" else fn(A, s)
        return np.sum(np.sin(y) * W) + np.sum(np.log(A) * A) * s
    return f


def flat(tree):
    return np.concatenate([np.ravel(leaf) for leaf in tree]) if isinstance(tree, tuple) else np.ravel(tree)


def full_hessian(H):
    """The (1 + N) x (1 + N) matrix of tape.hessian's blocks for the input (s, A)."""
    (ss, sA), (As, AA) = H
    return np.block([[np.reshape(ss, (1, 1)), np.reshape(sA, (1, N))],
                     [np.reshape(As, (N, 1)), np.reshape(AA, (N, N))]])


def central_hessian(F, z, h=1e-6):
    """Columns of central differences of F's gradient (first order, checked elsewhere against JAX)."""
    def grad(z):
        return flat(F.gradient((z[0], z[1:])))
    cols = []
    for j in range(z.size):
        e = np.zeros(z.size)
        e[j] = h
        cols.append((grad(z + e) - grad(z - e)) / (2 * h))
    return np.array(cols).T


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_a_scalar_on_either_side_of_a_binary_array_op(form, op, side):
    f = program(op, side)
    x0 = (S0, A0)
    F = tape.trace(f, x0)
    if form == "array":
        assert any(name.startswith("array ") for name in F.stats()["by_op"])
    reference = central_hessian(F, flat(x0))
    assert np.allclose(reference, reference.T, rtol=1e-6, atol=1e-6)
    H = full_hessian(F.hessian(x0))
    np.testing.assert_allclose(H, reference, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(full_hessian(tape.hessian(f)(x0)), reference, rtol=1e-6, atol=1e-6)
    for _ in range(3):
        v = RNG.normal(size=N + 1)
        hv = F.hvp(x0, (v[0], v[1:]))
        np.testing.assert_allclose(flat(hv), reference @ v, rtol=1e-6, atol=1e-6)
        _, _, hv2 = F.value_grad_hvp(x0, (v[0], v[1:]))
        np.testing.assert_allclose(flat(hv2), reference @ v, rtol=1e-6, atol=1e-6)


def _element_program(z):
    """s is an element of the input array, read as a scalar record and broadcast back."""
    s, A = z[0] * 1.0, z[1:]
    return np.sum(np.sin(s * A) * W) + np.sum(A / s)


def test_an_element_read_back_into_the_array(form):
    z0 = np.concatenate([[S0], A0])
    F = tape.trace(_element_program, z0)
    h = 1e-6
    reference = np.array([(F.gradient(z0 + h * e) - F.gradient(z0 - h * e)) / (2 * h) for e in np.eye(N + 1)]).T
    np.testing.assert_allclose(F.hessian(z0), reference, rtol=1e-6, atol=1e-6)
    V = RNG.normal(size=(4, N + 1))
    np.testing.assert_allclose(F.map_hvp(np.tile(z0, (4, 1)), V), V @ reference.T, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", [10, 1100])
def test_the_three_hessians_of_the_report(n):
    """Hand-derived: for f = Σ g(s A_i), H[A_i, s] = d/dA_i (Σ_k A_k g'(s A_k)) = g'(s A_i) + s A_i g''(s A_i)."""
    A = np.linspace(-1.3, 1.1, n)
    s = 0.7
    cases = {"sum(s*A*A)": (lambda p: np.sum(p[0] * p[1] * p[1]), 2 * A),
             "sum(s*A)": (lambda p: np.sum(p[0] * p[1]), np.ones(n)),
             "sum(sin(s*A))": (lambda p: np.sum(np.sin(p[0] * p[1])), np.cos(s * A) - s * A * np.sin(s * A))}
    for name, (f, expected) in cases.items():
        H = tape.hessian(f)((s, A))
        np.testing.assert_allclose(np.ravel(H[1][0]), expected, rtol=1e-13, atol=1e-13, err_msg=name)
        np.testing.assert_allclose(np.ravel(H[0][1]), expected, rtol=1e-13, atol=1e-13, err_msg=name)
        hv = tape.trace(f, (s, A)).hvp((s, A), (1.0, np.zeros(n)))
        np.testing.assert_allclose(np.ravel(hv[1]), expected, rtol=1e-13, atol=1e-13, err_msg=name)


def test_an_hvp_sends_nothing_to_a_constant_and_multiplies_none_of_its_zeros(monkeypatch):
    """GradBench's k-means: P a constant matrix on one side of a matmul and of every elementwise op. The tangent of a
    constant is None in the second-order sweeps as in vector mode, so the matmul costs three products (its tangent,
    then C's adjoint and that adjoint's tangent), where it once made eight (two with P's zero tangents, three sent to
    P and thrown away); the Hessian product against a hand-derived one: each center's block is 2 I times its
    points, where no point ties."""
    from tape.kernels import array_kinds
    monkeypatch.setattr(array_records, "SMALL", 1)
    P = np.random.default_rng(26).uniform(size=(40, 3))
    c0 = P[-4:].ravel().copy()

    def f(c):
        C = c.reshape(4, 3)
        return ((C * C).sum(axis=1)[None, :] + (P * P).sum(axis=1)[:, None] - 2.0 * (P @ C.T)).min(axis=1).sum()

    F = tape.trace(f, c0)
    products = []
    real = array_kinds.product
    monkeypatch.setattr(array_kinds, "product", lambda *a, **k: products.append(1) or real(*a, **k))
    v = np.random.default_rng(27).normal(size=12)
    hv = F.hvp(c0, v)
    assert len(products) == 3
    C = c0.reshape(4, 3)
    nearest = np.argmin(((P[:, None, :] - C[None]) ** 2).sum(axis=2), axis=1)
    counts = np.bincount(nearest, minlength=4)
    np.testing.assert_allclose(hv, (2.0 * counts[:, None] * v.reshape(4, 3)).ravel(), rtol=1e-13, atol=1e-13)
