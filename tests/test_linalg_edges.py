"""Linear algebra records at singular matrices, where the functions are smooth but the usual formulas divide by 0.

det is a polynomial: its second derivatives exist at every matrix. References: exact mixed central differences of
NumPy's det (for a 2x2 or 3x3 det, a polynomial of degree 2 or 3, they have no truncation error, only rounding, at any
step). The SVD of a square matrix with one zero singular value, the others distinct, is smooth (up to the signs of a
column of U and its row of Vh, which squares hide), and so is the QR of a square matrix whose first n - 1 columns are
independent: reference, central differences of NumPy's svd and qr.
"""

import numpy as np
import pytest

import tape

SINGULAR = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])  # rank 2: its last singular value ~1e-16


def mixed_hessian(f, x, h=0.25):
    """H of f at x by mixed central differences, exact for a polynomial of degree 3 or less."""
    n, eye = len(x), np.eye(len(x)) * h
    return np.array([[(f(x + eye[i] + eye[j]) - f(x + eye[i] - eye[j]) - f(x - eye[i] + eye[j])
                       + f(x - eye[i] - eye[j])) / (4 * h * h) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("a", [SINGULAR, np.zeros((3, 3)), np.zeros((2, 2)), np.zeros((1, 1)),
                               np.array([[2.0, 1.0], [4.0, 2.0]])], ids=["rank2", "zero3", "zero2", "zero1", "rank1"])
def test_det_second_order_at_singular_matrices(a):
    """hvp and value_grad_hvp of det at singular matrices: the Hessian of the polynomial (was 2.5 off at the rank-2
    3x3, through det(A) A⁻ᵀ's tangent; LinAlgError at a zero matrix); value_grad_hvp's gradient the gradient's bits."""
    n = a.shape[0]
    x = a.ravel()
    F = tape.trace(lambda u: np.linalg.det(u.reshape(n, n)) * 1.5, x + np.eye(n).ravel())
    hessian = mixed_hessian(lambda u: np.linalg.det(u.reshape(n, n)) * 1.5, x)
    v = np.random.default_rng(4).normal(size=n * n)
    np.testing.assert_allclose(F.hvp(x, v), hessian @ v, rtol=1e-12, atol=1e-12)
    value, grad, hv = F.value_grad_hvp(x, v)
    np.testing.assert_array_equal(grad, F.gradient(x))
    np.testing.assert_allclose(hv, hessian @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F.hessian(x), hessian, rtol=1e-12, atol=1e-12)


FACTORS = {"svd": lambda a: (np.linalg.svd(a)[0], np.linalg.svd(a)[2]), "qr": np.linalg.qr}


@pytest.mark.parametrize("name", sorted(FACTORS))
def test_factors_of_a_square_singular_matrix(name):
    """svd's U² and Vh², qr's Q² and R² of a square matrix of rank n - 1 (smooth there): the gradient, tangent and
    Hessian products against central differences (the terms (I - U Uᵀ) G S⁻¹ and (I - Q Qᵀ) G R⁻ᵀ of a tall U or
    Q, 0 for a square one, were rounding over s, r_nn ~ 1e-16: O(1) errors; so was qr's Q R' Rᵀ R⁻ᵀ)."""
    rng = np.random.default_rng(12)
    wu, wv = rng.normal(size=(2, 3, 3))

    def f(u):
        left, right = FACTORS[name](u.reshape(3, 3))
        return np.sum(left ** 2 * wu) + np.sum(right ** 2 * wv)

    x = SINGULAR.ravel()
    F = tape.trace(f, x + 0.1)
    h, eye = 1e-6, np.eye(9)
    central = np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in eye])
    g = F.gradient(x)
    np.testing.assert_allclose(g, central, rtol=1e-6, atol=1e-6)
    v = rng.normal(size=9)
    assert F.jvp(x, v) == pytest.approx(g @ v, rel=1e-9)
    second = (F.gradient(x + 1e-5 * v) - F.gradient(x - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(F.hvp(x, v), second, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.grad_function()(x), g, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("order", [2, -2])
def test_matrix_norms_at_equal_singular_values_share_them(order):
    """np.linalg.norm(A, ±2) where k singular values tie for the largest (smallest): the gradient is Σ uᵢ vᵢᵀ / k
    over the tied ones, whatever basis LAPACK picks inside them (as maximum's tie; JAX's too), not the first's."""
    q = np.eye(4)[[2, 0, 3, 1]] * [1.0, -1.0, 1.0, -1.0]  # signed permutations: the ties exact in floating point
    r = np.eye(4)[[1, 3, 0, 2]] * [-1.0, 1.0, 1.0, 1.0]
    s = np.array([2.0, 2.0, 1.0, 0.5]) if order == 2 else np.array([3.0, 2.0, 0.5, 0.5])
    a = (q * s) @ r.T
    tied = [0, 1] if order == 2 else [2, 3]
    F = tape.trace(lambda x: np.linalg.norm(x.reshape(4, 4), order), a.ravel() + 0.1)
    expected = q[:, tied] @ r[:, tied].T / 2
    np.testing.assert_allclose(F.gradient(a.ravel()).reshape(4, 4), expected, atol=1e-12)
    G = tape.trace(lambda x: np.linalg.norm(x.reshape(3, 3), order), np.ones(9))
    np.testing.assert_allclose(G.gradient(np.eye(3).ravel() * 2).reshape(3, 3), np.eye(3) / 3, atol=1e-15)
