"""numpy.linalg and tape.linalg (scipy.linalg's) on VarArrays: one array record per factorization or solve.

Every op is checked in every sweep (value, reverse, tangent, second order) against references written
without the rules of kernels/linalg.py: central differences of NumPy's own function, mpmath at 30 digits
(mpmath.diff of mpmath's lu_solve, inverse, det, cholesky, eigsy: an independent implementation), and
closed forms (d log det A = tr(A⁻¹ dA), d² log det A [U, V] = -tr(A⁻¹ U A⁻¹ V), the cofactors of a 2x2).
Small matrices (scalar records, packed into one record) and large ones (40x40: array records), batched,
well and ill conditioned. cholesky and eigh read the lower triangle as NumPy does: the upper gets zero.
"""

import io

import mpmath
import numpy as np
import pytest
import scipy.linalg

import tape

H = 1e-6


def general(rng, shape, cond=None):
    """Matrices of this shape (..., n, n): well conditioned, or with singular values 1 down to 1/cond."""
    n = shape[-1]
    if cond is None:
        return rng.normal(size=shape) + n ** 0.5 * np.eye(n) * 2
    u, _ = np.linalg.qr(rng.normal(size=shape))
    v, _ = np.linalg.qr(rng.normal(size=shape))
    return (u * np.logspace(0, -np.log10(cond), n)) @ v.mT


def spd(rng, shape, cond=None):
    a = general(rng, shape, cond)
    if cond is None:
        return a @ a.mT / shape[-1] + np.eye(shape[-1])
    u, _ = np.linalg.qr(rng.normal(size=shape))
    return (u * np.logspace(0, -np.log10(cond), shape[-1])) @ u.mT


def tall(rng, shape, cond=None):
    """(..., n + 2, n) matrices: singular values 1 down to 1/cond, or well spread."""
    *batch, n, _ = shape
    u, _ = np.linalg.qr(rng.normal(size=(*batch, n + 2, n)))
    v, _ = np.linalg.qr(rng.normal(size=(*batch, n, n)))
    return (u * (np.logspace(0, -np.log10(cond), n) if cond else np.linspace(2.0, 1.0, n) * n ** 0.5)) @ v.mT


def wide(rng, shape, cond=None):
    return tall(rng, shape, cond).mT


def svd_terms(a):
    """Sign-free functions of the SVD (a column of U and its row of Vh may both flip sign)."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return u ** 2, s, vh ** 2


# op: (matrix kind, right-hand side columns or None, the function of (A, B) or (A,))
OPS = {
    "solve": (general, 2, lambda a, b: np.linalg.solve(a, b)),
    "solve_vector": (general, 0, lambda a, b: np.linalg.solve(a, b)),
    "inv": (general, None, lambda a: np.linalg.inv(a)),
    "det": (general, None, lambda a: np.linalg.det(a)),
    "slogdet": (general, None, lambda a: np.linalg.slogdet(a)[1]),
    "cholesky": (spd, None, lambda a: np.linalg.cholesky(a)),
    "eigh_values": (spd, None, lambda a: np.linalg.eigh(a)[0]),
    "eigh_vectors": (spd, None, lambda a: np.linalg.eigh(a)[1] ** 2),  # squared: the sign of each is free
    "solve_lower": (general, 2, lambda a, b: tape.linalg.solve_triangular(a, b, lower=True)),
    "solve_upper_t": (general, 0, lambda a, b: tape.linalg.solve_triangular(a, b, trans="T")),
    "cho_solve": (spd, 2, lambda a, b: tape.linalg.cho_solve(tape.linalg.cho_factor(a), b)),
    "cho_solve_lower": (spd, 0, lambda a, b: tape.linalg.cho_solve(tape.linalg.cho_factor(a, lower=True), b)),
    "matrix_power": (general, None, lambda a: np.linalg.matrix_power(a / a.shape[-1], 3)),
    "matrix_power_inv": (general, None, lambda a: np.linalg.matrix_power(a, -2)),
    "qr": (tall, None, lambda a: np.linalg.qr(a)[0] ** 2),  # squared: a column of Q and its row of R may flip
    "qr_r": (tall, None, lambda a: np.linalg.qr(a, mode="r") ** 2),
    "svd_u": (tall, None, lambda a: svd_terms(a)[0]),
    "svd_s": (wide, None, lambda a: svd_terms(a)[1]),
    "svd_vh": (wide, None, lambda a: svd_terms(a)[2]),
    "norm_2": (tall, None, lambda a: np.linalg.norm(a, 2, axis=(-2, -1))),
    "norm_nuc": (wide, None, lambda a: np.linalg.norm(a, "nuc", axis=(-2, -1))),
    "lstsq": (tall, 0, lambda a, b: np.linalg.lstsq(a, b)[0]),
    "lstsq_residuals": (tall, 2, lambda a, b: np.linalg.lstsq(a, b)[1]),
    "lstsq_least_norm": (wide, 0, lambda a, b: np.linalg.lstsq(a, b)[0]),
    "lu_solve": (general, 2, lambda a, b: tape.linalg.lu_solve(tape.linalg.lu_factor(a), b)),
    "lu_solve_t": (general, 0, lambda a, b: tape.linalg.lu_solve(tape.linalg.lu_factor(a), b, trans=1)),
    "lu_factor": (general, None, lambda a: tape.linalg.lu_factor(a)[0]),
}
SCIPY = {"solve_lower", "solve_upper_t", "cho_solve", "cho_solve_lower", "lstsq", "lstsq_residuals",
         "lstsq_least_norm", "lu_solve", "lu_solve_t", "lu_factor"}  # one matrix at a time


def case(op, n, batch=(), cond=None, seed=0):
    """(f, x0): f of one flat vector, a weighted sum of op's output (batched over ``batch``)."""
    kind, columns, fn = OPS[op]
    rng = np.random.default_rng(seed)
    if op in SCIPY:
        batch = ()  # SciPy's functions take one matrix
    a0 = kind(rng, (*batch, n, n), cond)
    if op in ("solve_lower", "solve_upper_t"):  # the triangle read well conditioned too
        a0 = a0 + 3 * n ** 0.5 * np.eye(n)
    if op == "det":  # |det| = 1: a 40x40's is 1e40 otherwise, past what central differences resolve
        a0 = a0 / np.abs(np.linalg.det(a0))[..., None, None] ** (1 / n)
    rows = a0.shape[-2]
    shapes = [a0.shape] + ([] if columns is None else [(*batch, rows, columns) if columns else (rows,)])
    x0 = np.concatenate([a0.ravel()] + [rng.normal(size=s).ravel() for s in shapes[1:]])
    w = rng.normal(size=np.shape(fn(*split(x0, shapes))))

    def f(x):
        return np.sum(fn(*split(x, shapes)) * w)
    return f, x0, shapes, w


def split(x, shapes):
    out, at = [], 0
    for s in shapes:
        size = int(np.prod(s))
        out.append(x[at:at + size].reshape(s))
        at += size
    return out


def central(f, x0, directions):
    return np.array([(f(x0 + H * d) - f(x0 - H * d)) / (2 * H) for d in directions])


def coordinates(x0, count, rng):
    """Up to count coordinate directions (all of them for small x)."""
    picked = np.arange(x0.size) if x0.size <= count else rng.choice(x0.size, count, replace=False)
    return picked, np.eye(x0.size)[picked]


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("n,batch,seed", [(3, (), 0), (3, (), 7), (4, (2,), 0), (40, (), 0)],
                         ids=["3x3", "3x3-again", "batched", "40x40"])
def test_value_gradient_tangent_against_central_differences(op, n, batch, seed):
    f, x0, _, _ = case(op, n, batch, seed=seed)
    F = tape.trace(f, x0)
    assert F(x0) == pytest.approx(f(x0), rel=1e-12, abs=1e-12)
    rng = np.random.default_rng(1)
    picked, directions = coordinates(x0, 24, rng)
    g = F.gradient(x0)
    np.testing.assert_allclose(g[picked], central(f, x0, directions), rtol=1e-5, atol=1e-6)
    v = rng.normal(size=x0.size)
    assert F.jvp(x0, v) == pytest.approx(g @ v, rel=1e-9, abs=1e-9)
    assert F.jvp(x0, v) == pytest.approx(central(f, x0, [v])[0], rel=1e-5, abs=1e-6)
    x1 = x0 + 1e-3 * rng.normal(size=x0.size)  # replayed at another point
    assert F(x1) == pytest.approx(f(x1), rel=1e-11, abs=1e-11)


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("n,batch,cond,seed", [(3, (), None, 2), (3, (), None, 5), (3, (), 1e3, 6), (3, (2,), None, 2),
                                               (40, (), None, 2)],
                         ids=["3x3", "3x3-again", "3x3-ill", "batched", "40x40"])
def test_second_order_against_central_differences_of_the_gradient(op, n, batch, cond, seed):
    f, x0, _, _ = case(op, n, batch, cond, seed=seed)
    F = tape.trace(f, x0)
    rng = np.random.default_rng(3)
    v = rng.normal(size=x0.size)

    def difference(h):
        return (F.gradient(x0 + h * v) - F.gradient(x0 - h * v)) / (2 * h)
    h = 1e-5 if cond is None else 1e-6 / cond ** 0.5
    reference = (4 * difference(h / 2) - difference(h)) / 3  # Richardson: the h² error cancels
    scale = np.max(np.abs(reference))
    np.testing.assert_allclose(F.hvp(x0, v), reference, rtol=1e-5, atol=1e-5 * scale)
    if x0.size <= 30:
        hessian = F.hessian(x0)
        np.testing.assert_allclose(hessian @ v, reference, rtol=1e-5, atol=1e-5 * scale)
        np.testing.assert_allclose(hessian, hessian.T, atol=1e-8 * scale)


# -- mpmath at 30 digits: an independent implementation of each op, differentiated numerically ---------

def mp_lower(a):
    """The symmetric matrix NumPy's cholesky and eigh read from a's lower triangle."""
    n = a.rows
    return mpmath.matrix([[a[max(i, j), min(i, j)] for j in range(n)] for i in range(n)])


def mp_op(op, a, b):
    if op in ("solve", "lu_solve"):
        return mpmath.lu_solve(a, b)  # column by column below
    if op == "inv":
        return mpmath.inverse(a)
    if op == "det":
        return mpmath.det(a)
    if op == "slogdet":
        return mpmath.log(abs(mpmath.det(a)))
    if op == "cholesky":
        return mpmath.cholesky(mp_lower(a))
    if op == "eigh_values":
        return mpmath.matrix(sorted(mpmath.eigsy(mp_lower(a))[0]))
    if op == "qr":
        return mpmath.qr(a)[0][:, :a.cols].apply(lambda c: c * c)
    if op == "svd_s":
        return mpmath.matrix(sorted(mpmath.svd_r(a, compute_uv=False), reverse=True))
    if op == "solve_lower":
        lower = mpmath.matrix([[a[i, j] if i >= j else 0 for j in range(a.cols)] for i in range(a.rows)])
        return mpmath.lu_solve(lower, b)
    raise KeyError(op)


def mp_value(op, x, shapes, w):
    m, n = shapes[0][-2:]
    a = mpmath.matrix([[x[i * n + j] for j in range(n)] for i in range(m)])
    if len(shapes) == 1:
        y = mp_op(op, a, None)
        values = [y] if not isinstance(y, mpmath.matrix) else [y[k] for k in range(len(y))] if y.cols == 1 else \
            [y[i, j] for i in range(y.rows) for j in range(y.cols)]
    else:
        k = shapes[1][-1]
        b = [x[m * n + i * k + j] for i in range(m) for j in range(k)]
        columns = [mp_op(op, a, mpmath.matrix([b[i * k + j] for i in range(m)])) for j in range(k)]
        values = [columns[j][i] for i in range(n) for j in range(k)]
    return mpmath.fsum(mpmath.mpf(float(c)) * v for c, v in zip(np.ravel(w), values, strict=True))


@pytest.mark.parametrize("op", ["solve", "inv", "det", "slogdet", "cholesky", "eigh_values", "solve_lower", "qr",
                                "svd_s", "lu_solve"])
@pytest.mark.parametrize("cond", [None, 1e6], ids=["well", "ill"])
def test_gradient_against_mpmath_at_30_digits(op, cond):
    f, x0, shapes, w = case(op, 3, cond=cond, seed=4)
    F = tape.trace(f, x0)
    with mpmath.workdps(30):
        x = [mpmath.mpf(float(c)) for c in x0]
        reference = np.array([float(mpmath.diff(lambda t, k=k: mp_value(op, x[:k] + [x[k] + t] + x[k + 1:],
                                                                          shapes, w), 0))
                              for k in range(x0.size)])
    scale = np.max(np.abs(reference))
    np.testing.assert_allclose(F.gradient(x0), reference, rtol=1e-8 if cond is None else 1e-4,
                               atol=1e-10 * scale if cond is None else 1e-6 * scale)


# -- closed forms -------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [3, 40])
def test_logdet_closed_forms_first_and_second_order(n):
    """d log det A = tr(A⁻¹ dA): the gradient A⁻ᵀ; d² [U, V] = -tr(A⁻¹ U A⁻¹ V)."""
    rng = np.random.default_rng(5)
    a0 = general(rng, (n, n))
    F = tape.trace(lambda x: np.linalg.slogdet(x.reshape(n, n))[1], a0.ravel())
    inverse = np.linalg.inv(a0)
    np.testing.assert_allclose(F.gradient(a0.ravel()).reshape(n, n), inverse.T, rtol=1e-10, atol=1e-12)
    u, v = rng.normal(size=(2, n, n))
    assert F.jvp(a0.ravel(), u.ravel()) == pytest.approx(np.trace(inverse @ u), rel=1e-10)
    hv = F.hvp(a0.ravel(), v.ravel()).reshape(n, n)
    assert np.sum(hv * u) == pytest.approx(-np.trace(inverse @ u @ inverse @ v), rel=1e-9)


def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix():
    """2x2: d det / dA = [[d, -c], [-b, a]], finite where A⁻¹ is not (by SVD, not by A⁻ᵀ det A)."""
    a, b, c, d = 1.0, 2.0, 2.0, 4.0  # rank 1
    F = tape.trace(lambda x: np.linalg.det(x.reshape(2, 2)), np.array([a, b, c, d]))
    np.testing.assert_allclose(F.gradient(np.array([a, b, c, d])), [d, -c, -b, a], atol=1e-12)
    big = np.diag([0.0, *np.arange(1.0, 40.0)])  # 40x40, singular: the gradient is det of the minor at [0, 0]
    G = tape.trace(lambda x: np.linalg.det(x.reshape(40, 40) / 10), big.ravel())
    expected = np.zeros((40, 40))
    expected[0, 0] = np.prod(np.arange(1.0, 40.0) / 10) / 10
    np.testing.assert_allclose(G.gradient(big.ravel()).reshape(40, 40), expected, rtol=1e-10,
                               atol=1e-12 * expected[0, 0])


def test_eigh_at_equal_eigenvalues_differentiates_what_the_basis_does_not_change():
    """sum(w²) = ‖A_sym‖²: at A = I (all eigenvalues equal) its gradient on the lower triangle read is
    2 A_ii on the diagonal and 4 A_ij below; a projector's trace too. Finite, never NaN."""
    n = 4
    x0 = np.eye(n).ravel()
    F = tape.trace(lambda x: np.sum(np.linalg.eigvalsh(x.reshape(n, n)) ** 2), x0)
    np.testing.assert_allclose(F.gradient(x0).reshape(n, n), 2 * np.eye(n), atol=1e-12)
    rng = np.random.default_rng(6)
    a = rng.normal(size=(n, n))
    a = np.tril(a) + np.tril(a, -1).T
    np.testing.assert_allclose(F.gradient(a.ravel()).reshape(n, n), 4 * np.tril(a, -1) + 2 * np.diag(np.diag(a)),
                               rtol=1e-10)
    G = tape.trace(lambda x: np.sum(np.linalg.eigh(x.reshape(n, n))[1] ** 2), x0)  # ‖V‖² = n at every A
    assert np.all(G.gradient(x0) == 0.0)


def test_cholesky_adjoint_by_blocks():
    """The reverse of a Cholesky record is Murray's blocked algorithm, blocks of 64 rows: at n = 150 (three
    blocks, the last short), batched, the gradient against central differences of NumPy's cholesky; and the
    blocked form at every block size against the formula low(L⁻ᵀ Φ(Lᵀ G) L⁻¹) in one block."""
    from tape.kernels.linalg_forms import cholesky_adjoint

    rng = np.random.default_rng(13)
    n = 150
    a0 = spd(rng, (2, n, n))
    w = rng.normal(size=(2, n, n))
    F = tape.trace(lambda x: np.sum(np.linalg.cholesky(x.reshape(2, n, n)) * w), a0.ravel())
    picked = rng.choice(a0.size, 12, replace=False)
    picked[:4] = [n * n - 1, n * n + (n - 1) * n, 5 * n + 2, n * n + 70 * n + 65]  # the last row, across blocks
    directions = np.zeros((len(picked), a0.size))
    directions[np.arange(len(picked)), picked] = 1.0
    central_differences = central(lambda x: np.sum(np.linalg.cholesky(x.reshape(2, n, n)) * w), a0.ravel(),
                                  directions)
    np.testing.assert_allclose(F.gradient(a0.ravel())[picked], central_differences, rtol=1e-6, atol=1e-8)
    factor, g = np.linalg.cholesky(a0[:, :9, :9]), rng.normal(size=(2, 9, 9))
    whole = cholesky_adjoint(factor, g, block=9)
    for block in range(1, 9):
        np.testing.assert_allclose(cholesky_adjoint(factor, g, block=block), whole, rtol=1e-12, atol=1e-12)


def test_cholesky_reads_the_lower_triangle_as_numpy_does():
    rng = np.random.default_rng(7)
    a0 = spd(rng, (3, 3))
    a0[0, 2] = 100.0  # NumPy ignores the upper triangle
    F = tape.trace(lambda x: np.sum(np.linalg.cholesky(x.reshape(3, 3)) ** 2), a0.ravel())
    assert F(a0.ravel()) == pytest.approx(np.sum(np.linalg.cholesky(a0) ** 2))
    g = F.gradient(a0.ravel()).reshape(3, 3)
    assert np.all(np.triu(g, 1) == 0.0)
    # sum(L²) = tr(L Lᵀ) = tr(A): the gradient is the identity
    np.testing.assert_allclose(g, np.eye(3), atol=1e-12)


@pytest.mark.parametrize("upper", [False, True])
def test_upper_forms(upper):
    """cholesky(upper=True) and eigh(UPLO='U') read the upper triangle, as NumPy."""
    rng = np.random.default_rng(8)
    a0 = spd(rng, (3, 3))
    x0 = (np.triu(a0) if upper else np.tril(a0)).ravel()
    uplo = "U" if upper else "L"

    def f(x):
        a = x.reshape(3, 3)
        return np.sum(np.linalg.cholesky(a, upper=upper) ** 3) + \
            np.sum(np.linalg.eigvalsh(a, UPLO=uplo) ** 3)
    F = tape.trace(f, x0)
    assert F(x0) == pytest.approx(f(x0), rel=1e-12)
    np.testing.assert_allclose(F.gradient(x0), central(f, x0, np.eye(9)), rtol=1e-6, atol=1e-7)


def test_broadcast_solve_sums_the_adjoint_back_over_the_batch():
    rng = np.random.default_rng(9)
    a0, b0 = general(rng, (3, 3)), rng.normal(size=(2, 3, 2))
    x0 = np.concatenate([a0.ravel(), b0.ravel()])

    def f(x):
        return np.sum(np.linalg.solve(x[:9].reshape(3, 3), x[9:].reshape(2, 3, 2)) ** 2)
    F = tape.trace(f, x0)
    np.testing.assert_allclose(F.gradient(x0), central(f, x0, np.eye(x0.size)), rtol=1e-6, atol=1e-7)


# -- errors: NumPy's, before anything is recorded ---------------------------------------------------------

@pytest.mark.parametrize("n", [2, 40])
def test_bad_input_raises_numpy_errors_and_records_nothing(n):
    t = tape.Tape()
    singular = t.array(np.ones((n, n)))
    before = len(t)
    with pytest.raises(np.linalg.LinAlgError, match="[Ss]ingular"):
        np.linalg.solve(singular, np.ones(n))
    with pytest.raises(np.linalg.LinAlgError, match="[Ss]ingular"):
        np.linalg.inv(singular)
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        np.linalg.cholesky(singular - 2 * np.eye(n))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        np.linalg.det(t.array(np.ones((n, n + 1))))
    with pytest.raises(np.linalg.LinAlgError, match="two-dimensional"):
        np.linalg.inv(t.array(np.ones(n)))
    with pytest.raises(ValueError):
        np.linalg.solve(t.array(np.eye(n)), np.ones(n + 1))
    with pytest.raises(np.linalg.LinAlgError):
        tape.linalg.solve_triangular(t.array(np.zeros((n, n))), np.ones(n))
    recorded = {tape.kernels.array_ops.NAME[code] for code in t._op[before:len(t)]}
    assert not recorded & {f"array {name}" for name in ("solve", "inv", "cholesky", "det", "solve_upper")}


def test_replay_at_a_matrix_not_positive_definite_raises_numpy_error():
    F = tape.trace(lambda x: np.sum(np.linalg.cholesky(x.reshape(2, 2))), np.eye(2).ravel())
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        F(-np.eye(2).ravel())
    with pytest.raises(np.linalg.LinAlgError):
        F.gradient(-np.eye(2).ravel())


def test_plain_arrays_pass_on_to_scipy():
    rng = np.random.default_rng(10)
    a, b = spd(rng, (3, 3)), rng.normal(size=3)
    np.testing.assert_array_equal(tape.linalg.solve_triangular(a, b, lower=True),
                                  scipy.linalg.solve_triangular(a, b, lower=True))
    np.testing.assert_allclose(tape.linalg.cho_solve(tape.linalg.cho_factor(a), b), np.linalg.solve(a, b))
    lu, piv = tape.linalg.lu_factor(a)
    np.testing.assert_array_equal(piv, scipy.linalg.lu_factor(a)[1])  # SciPy's own pivot indices
    np.testing.assert_allclose(tape.linalg.lu_solve((lu, piv), b), np.linalg.solve(a, b))


def test_lu_factor_pivots_again_at_replay():
    """lu_factor's P is a view of its record: a replay where the pivot rows change solves right (the pivots
    of recording would not); batched, P L U gives A back; SciPy's pivot indices with a VarArray are refused."""
    rng = np.random.default_rng(12)
    b = rng.normal(size=3)
    F = tape.trace(lambda x: tape.linalg.lu_solve(tape.linalg.lu_factor(x.reshape(3, 3)), b), np.eye(3).ravel())
    a1 = np.array([[0.1, 2.0, 0.3], [3.0, 0.2, 1.0], [0.5, 1.0, 4.0]])  # pivots rows 1, 0, 2 (the eye: none)
    assert list(scipy.linalg.lu_factor(a1)[1]) != [0, 1, 2]
    np.testing.assert_allclose(F(a1.ravel()), np.linalg.solve(a1, b), rtol=1e-13)
    w = rng.normal(size=3)
    directions = np.eye(9)
    expected = central(lambda x: np.linalg.solve(x.reshape(3, 3), b) @ w, a1.ravel(), directions)
    np.testing.assert_allclose(F.vjp(a1.ravel(), w), expected, rtol=1e-7, atol=1e-9)
    t = tape.Tape()
    a = rng.normal(size=(2, 4, 4))
    lu, perm = tape.linalg.lu_factor(t.array(a))
    lower, upper = np.tril(lu.value, -1) + np.eye(4), np.triu(lu.value)
    np.testing.assert_allclose(perm.value @ lower @ upper, a, rtol=1e-13, atol=1e-13)
    with pytest.raises(TypeError, match="pivot indices"):
        tape.linalg.lu_solve((lu[0], scipy.linalg.lu_factor(a[0])[1]), np.ones(4))


# -- replay, files, maps -------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [3, 40])
def test_save_load_and_map(n):
    rng = np.random.default_rng(11)
    a0 = spd(rng, (n, n))

    def f(x):
        k = x.reshape(n, n)
        low = np.linalg.cholesky(k)
        return np.sum(np.log(low[np.arange(n), np.arange(n)])) + \
            np.linalg.slogdet(k)[1] + np.sum(np.linalg.solve(k, np.ones(n))) + np.sum(np.linalg.eigvalsh(k)) + \
            np.sum(np.linalg.inv(k)) + np.linalg.det(k / 2) + np.sum(tape.linalg.solve_triangular(low, np.ones(n),
                                                                                                   lower=True)) + \
            np.sum(tape.linalg.lu_solve(tape.linalg.lu_factor(k), np.ones(n)) ** 2) + np.sum(np.linalg.qr(k)[1] ** 2)
    F = tape.trace(f, a0.ravel())
    buffer = io.BytesIO()
    F.save(buffer)
    buffer.seek(0)
    G = tape.load(buffer)
    x1 = (a0 + 0.01 * np.eye(n)).ravel()
    assert G(x1) == pytest.approx(f(x1), rel=1e-12)
    np.testing.assert_allclose(G.gradient(x1), F.gradient(x1), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(G.hvp(x1, x1), F.hvp(x1, x1), rtol=1e-12)
    X = np.stack([a0.ravel() + 0.01 * k * np.eye(n).ravel() for k in range(3)])
    np.testing.assert_allclose(F.map(X), [f(x) for x in X], rtol=1e-12)
    gradient_tape = F.grad_function()  # the records of the adjoints saved and loaded too
    buffer = io.BytesIO()
    gradient_tape.save(buffer)
    buffer.seek(0)
    expected = F.gradient(x1)
    np.testing.assert_allclose(tape.load(buffer)(x1), expected, rtol=1e-12, atol=1e-13 * np.abs(expected).max())


def test_factorizations_without_a_derivative_are_refused_by_name():
    t = tape.Tape()
    wide_matrix, tall_matrix = t.array(np.arange(6.0).reshape(2, 3)), t.array(np.arange(6.0).reshape(3, 2) ** 2)
    with pytest.raises(NotImplementedError, match="tall matrix"):
        np.linalg.qr(wide_matrix)
    with pytest.raises(NotImplementedError, match="not unique"):
        np.linalg.qr(tall_matrix, mode="complete")
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        np.linalg.svd(tall_matrix)
    with pytest.raises(NotImplementedError, match="rank-deficient"):
        np.linalg.lstsq(t.array(np.ones((3, 2))), np.ones(3))
    with pytest.raises(ValueError, match="Frobenius, 2, -2 and nuclear"):
        np.linalg.norm(tall_matrix, 1)
    u, s, vh = np.linalg.svd(t.array(np.diag([3.0, 2.0])))  # square: full_matrices is the reduced SVD
    assert np.allclose(s.value, [3.0, 2.0]) and u.shape == vh.shape == (2, 2)


def test_load_checks_a_linalg_record_against_its_rule(tmp_path):
    """A file whose cholesky reads a non-square view, or claims another shape, is refused before anything runs."""
    from tape.kernels.array_ops import ARRAY_OPCODE
    from tape.sweeps import plans

    F = tape.trace(lambda x: np.sum(np.linalg.cholesky(x.reshape(3, 3))), np.eye(3).ravel())
    path = tmp_path / "f.npz"
    F.save(path)
    with np.load(path, allow_pickle=False) as npz:
        good = {k: npz[k].copy() for k in npz.files}
    row = int(np.flatnonzero(good["plans"][:, 0] == ARRAY_OPCODE["cholesky"])[0])
    view = plans._HEAD + 2 * plans._SHAPE  # the first view: record, offset, ndim, sizes, strides
    shape_at = plans._HEAD
    for column, value, match in ((view + 4, 2, "square"), (shape_at + 2, 2, "cannot have shape")):
        bad = {k: v.copy() for k, v in good.items()}
        bad["plans"][row, column] = value
        np.savez(tmp_path / "bad.npz", **bad)
        with pytest.raises(tape.TapeFormatError, match=match):
            tape.load(tmp_path / "bad.npz")


def test_results_are_numpys_named_tuples():
    t = tape.Tape()
    a = t.array(np.array([[2.0, 1.0], [1.0, 3.0]]))
    result = np.linalg.eigh(a)
    assert type(result) is type(np.linalg.eigh(np.eye(1)))
    np.testing.assert_allclose(result.eigenvalues.value, np.linalg.eigvalsh(a.value))
    assert np.linalg.slogdet(a).logabsdet.value == pytest.approx(np.log(5.0))
    assert np.linalg.qr(a).R.shape == (2, 2) and np.linalg.svd(a).Vh.shape == (2, 2)


def test_sparse_jacobians_and_hessians_through_linear_algebra():
    """A factorization's pattern is a dense block per batch place (issue 27's sparsity, issue 30's records):
    the sparse Jacobian and Hessian equal the dense ones, and a batch of two stays two blocks."""
    rng = np.random.default_rng(27)
    n = 6
    M = rng.normal(size=(n, n))
    A = M @ M.T + n * np.eye(n)
    b = rng.normal(size=(2, n, 3))
    X = np.stack([A, A + np.eye(n)])
    F = tape.trace(lambda X: np.linalg.solve(X, b).reshape(-1), X)
    J = F.sparse_jacobian(X)
    np.testing.assert_allclose(J.toarray(), np.reshape(F.jacobian(X), J.shape), rtol=1e-12, atol=1e-15)
    assert J.nnz <= 2 * (n * 3) * (n * n)  # the batch's two places do not mix
    for f in (lambda A: np.sum(np.linalg.cholesky(A) ** 3) + np.linalg.slogdet(A)[1],
              lambda A: np.sum(np.linalg.inv(A) * A),
              lambda A: np.linalg.det(A / n) + np.sum(np.linalg.eigvalsh(A) ** 3) + np.sum(np.linalg.qr(A)[1] ** 2)
              + np.sum(np.linalg.svd(A, compute_uv=False) ** 3)
              + np.sum(tape.linalg.lu_solve(tape.linalg.lu_factor(A), b[0]) ** 2)):
        G = tape.trace(f, A)
        H = G.sparse_hessian(A)
        np.testing.assert_allclose(H.toarray(), np.reshape(G.hessian(A), H.shape), rtol=1e-12, atol=1e-12)
