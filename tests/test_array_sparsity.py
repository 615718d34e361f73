"""Sparse Jacobians and Hessians of programs written with NumPy arrays (array records, mixed tapes, calls).

Every array record here is one (array_records.SMALL = 1). References: the nonzeros of the dense
F.jacobian / F.hessian, unioned over random points (a pattern is structural: it holds every entry
that can be nonzero on the recorded branch); their values against central differences of the same
program run on plain NumPy arrays; sparse values against the dense ones.
"""

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse
import scipy.special

import tape
from tape.records import array_records

RNG = np.random.default_rng(27)


@pytest.fixture(autouse=True)
def array_records_only(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)


def _logsumexp(x, axis):
    return scipy.special.logsumexp(x, axis=axis) if isinstance(x, np.ndarray) else tape.logsumexp(x, axis=axis)


def _matmul(x):
    return x[:12].reshape(3, 4) @ x[12:].reshape(4, 2)


# name: (program on a flat x, n[, points to union the dense nonzeros over])
JACOBIAN_PROGRAMS = {
    "elementwise": (lambda x: np.exp(x) * x - np.sin(x) / (1.0 + x * x), 7),
    "floor carries nothing": (lambda x: np.floor(x) * 2.0 + x[::-1], 5),
    "broadcast a row": (lambda x: x.reshape(3, 4) * x.reshape(3, 4)[0], 12),
    "broadcast a column, left": (lambda x: x.reshape(3, 4)[:, :1] - np.tanh(x.reshape(3, 4)), 12),
    "outer": (lambda x: x[:, None] * np.sin(x)[None, :], 5),
    "scalar constant both sides": (lambda x: 2.0 / (1.5 + x) - x ** 3.0, 6),
    "sum over axis 0": (lambda x: np.sum(x.reshape(3, 4) ** 2, axis=0), 12),
    "sum over axis 1 kept": (lambda x: np.sum(np.exp(x.reshape(3, 4)), axis=1, keepdims=True) * x.reshape(3, 4), 12),
    "sum of all": (lambda x: np.sum(x * x) * x, 6),
    "logsumexp": (lambda x: _logsumexp(x.reshape(2, 3, 2), axis=(0, 2)), 12),
    "max and min": (lambda x: x.reshape(3, 4).max(axis=1) - x.reshape(3, 4).min(axis=0)[:3], 12),
    "views, slices, transposes": (lambda x: np.sin(x.reshape(3, 4).T[::2, 1:]) * x.reshape(3, 4)[1:, ::-2].T, 12),
    "reshape of a transpose (a gather)": (lambda x: np.cos(x.reshape(3, 4).T.reshape(-1)) * x, 12),
    "fancy index": (lambda x: x[[2, 0, 0, 4]] * x[[1, 1, 3, 0]], 5),
    "join": (lambda x: np.concatenate([x[1:], x[:1] * 2.0, np.exp(x[:2])]), 6),
    "join along axis 1": (lambda x: np.concatenate([x.reshape(3, 4)[:, 2:], np.sin(x.reshape(3, 4))], axis=1), 12),
    "matmul": (_matmul, 20),
    "matrix times vector": (lambda x: x[:12].reshape(3, 4) @ np.exp(x[12:]), 16),
    "vector times matrix": (lambda x: x[12:] @ x[:12].reshape(4, 3), 16),
    "batch matmul, broadcast": (lambda x: x[:16].reshape(2, 2, 4) @ x[16:].reshape(4, 1), 20),
    "where (its condition carries nothing)": (lambda x: np.where(x[::-1] > 0.0, x * x, np.sin(x[1:] ** 2)[0]), 8),
    "cumsum": (lambda x: np.cumsum(x.reshape(3, 4) ** 2, axis=1), 12),
    "cumprod": (lambda x: np.cumprod(x.reshape(3, 4), axis=0), 12),
    "sort": (lambda x: np.sort(x.reshape(3, 4) * 1.5, axis=1), 12, 60),  # each place of a line, over 60 points
    "read again after a loop": (lambda x: _looped(x)[::-1] * np.exp(x)[2], 6),
}


def _looped(x):
    """A value read again long after it is made (a skip connection, an element read at the end): the sets' rows
    freed after their last reader must wait for it."""
    first = np.exp(0.3 * x)
    y = x
    for _ in range(4):
        y = np.sin(y[::-1]) * 0.5 + y * first
    return y + first[1] * first


def _points(n, count=12):
    return [RNG.uniform(-1.5, 1.5, n) for _ in range(count)]


def _central(f, x, h=1e-6):
    return np.array([(np.ravel(f(x + h * e)) - np.ravel(f(x - h * e))) / (2 * h) for e in np.eye(len(x))]).T


@pytest.mark.parametrize("name", sorted(JACOBIAN_PROGRAMS))
def test_jacobian_pattern_and_values_per_kind(name):
    f, n, *count = JACOBIAN_PROGRAMS[name]
    points = _points(n, *count)
    F = tape.trace(f, points[0])
    assert F._plans and not any(F._op[F._input_rows] < 64)  # array records only
    P = F.jacobian_sparsity().toarray() != 0
    seen = np.zeros_like(P)
    for x in points:
        J = F.jacobian(x)
        np.testing.assert_allclose(J.reshape(P.shape), _central(f, x), rtol=1e-6, atol=1e-6)
        nonzero = J.reshape(P.shape) != 0
        assert not (nonzero & ~P).any(), f"a nonzero outside the pattern at {x}"
        seen |= nonzero
        S = F.sparse_jacobian(x)
        np.testing.assert_allclose(S.toarray(), J.reshape(P.shape), rtol=1e-13, atol=0)
    assert np.array_equal(seen, P), "the pattern holds entries never nonzero at any point"
    colors = F.jacobian_colors()
    for c in range(colors.max() + 1):  # structurally orthogonal columns
        assert P[:, colors == c].sum(axis=1).max() <= 1


HESSIAN_PROGRAMS = {
    "elementwise, reversed": (lambda x: np.sum(np.exp(x) * x[::-1]) + np.sum(x[:-1] * x[1:]), 7),
    "broadcast row": (lambda x: np.sum(x.reshape(3, 4) * np.sin(x.reshape(3, 4)[0])), 12),
    "matmul": (lambda x: np.sum(_matmul(x) ** 2), 20),
    "logsumexp": (lambda x: np.sum(_logsumexp(x.reshape(3, 4), axis=1) * x[:3]), 12),
    "cumprod": (lambda x: np.sum(np.cumprod(x.reshape(4, 3), axis=0)), 12),
    "where": (lambda x: np.sum(np.where(x > 0.0, x * x, x[::-1] ** 3)), 8),
    "sort and cumsum (linear)": (lambda x: np.sum(np.cumsum(np.sort(x), axis=0) * x), 6, 40),
    "join and gather": (lambda x: np.sum(np.concatenate([x[[0, 3]], x[1:]]) ** 3), 5),
    "division over a sum": (lambda x: np.sum(x[:3]) / np.sum(x[3:] ** 2) + x[0] * x[5], 6),
    "rosenbrock": (lambda x: np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2), 9),
    "read again after a loop": (lambda x: np.sum(_looped(x[:4]) * x[4:]) + np.exp(x)[1] * x[0], 8),
    "a stencil loop": (lambda x: np.sum(_heat(x, 3) ** 2), 16),
}


def _heat(u, steps):
    """An explicit periodic heat equation (np.pad 'wrap'): after t steps an element reads the inputs within t."""
    for _ in range(steps):
        w = np.pad(u, 1, mode="wrap")
        u = u + 0.2 * (w[2:] + w[:-2] - 2.0 * u)
    return u


def _second_central(f, x, h=1e-4):
    n = len(x)
    H = np.empty((n, n))
    E = np.eye(n) * h
    for i in range(n):
        for j in range(n):
            H[i, j] = (f(x + E[i] + E[j]) - f(x + E[i] - E[j]) - f(x - E[i] + E[j]) + f(x - E[i] - E[j])) / (4 * h * h)
    return H


@pytest.mark.parametrize("name", sorted(HESSIAN_PROGRAMS))
def test_hessian_pattern_and_values_per_kind(name):
    f, n, *count = HESSIAN_PROGRAMS[name]
    points = [RNG.uniform(0.3, 1.5, n) * RNG.choice([-1.0, 1.0], n) for _ in range(*count or [8])]
    F = tape.trace(f, points[0])
    assert F._plans
    P = F.hessian_sparsity().toarray() != 0
    assert np.array_equal(P, P.T)
    seen = np.zeros_like(P)
    for x in points:
        H = F.hessian(x)
        np.testing.assert_allclose(H, _second_central(f, x), rtol=1e-4, atol=1e-4 * max(1.0, np.abs(H).max()))
        assert not ((H != 0) & ~P).any()
        seen |= H != 0
        np.testing.assert_allclose(F.sparse_hessian(x).toarray(), H, rtol=1e-12, atol=1e-12)
    assert np.array_equal(seen, P)


def test_max_is_piecewise_linear_its_pattern_the_group():
    F = tape.trace(lambda x: np.max(x.reshape(2, 3) ** 2, axis=1).sum(), RNG.normal(size=6))
    assert np.array_equal(F.hessian_sparsity().toarray(), np.eye(6))
    assert np.array_equal(F.jacobian_sparsity().toarray(), np.ones((1, 6)))


def test_mixed_scalar_and_array_records():
    def f(p, stack=tape.stack):
        s, A = p
        t = s * s + np.sum(A[:2])  # scalar records and a 0-d array record read by elem
        return np.concatenate([A * t, stack([t * A[3], s]) * 2.0])

    x0 = (0.7, RNG.normal(size=5))
    F = tape.trace(f, x0)
    z = np.concatenate([[0.7], x0[1]])
    J = F.jacobian(z)
    np.testing.assert_allclose(J, _central(lambda z: f((z[0], z[1:]), np.stack), z), rtol=1e-6, atol=1e-7)
    assert np.array_equal(F.jacobian_sparsity().toarray(), J != 0)
    np.testing.assert_allclose(F.sparse_jacobian(z).toarray(), J, rtol=1e-14)
    G = tape.trace(lambda p: np.sum(f(p) ** 2), x0)
    H = G.hessian(z)
    assert np.array_equal(G.hessian_sparsity().toarray(), H != 0)
    np.testing.assert_allclose(G.sparse_hessian(z).toarray(), H, rtol=1e-12)


def test_calls_use_the_callees_pattern():
    inner = tape.trace(lambda u: np.sin(u) * u[::-1] + u[0], np.ones(5))  # array records inside
    scalar_inner = tape.trace(lambda u: [u[0] * u[1], u[2] ** 3, u[3] + u[4]], [1.0] * 5)

    def f(x):
        return np.concatenate([inner(x * 2.0), np.exp(x) * 1.0]) + np.concatenate([x, x])

    def g(x):
        return np.sum(inner(x) * x) + np.sum(scalar_inner(x) ** 2)

    x = RNG.uniform(0.5, 1.5, 5)
    F, G = tape.trace(f, x), tape.trace(g, x)
    J = F.jacobian(x)
    assert np.array_equal(F.jacobian_sparsity().toarray(), J != 0)
    np.testing.assert_allclose(F.sparse_jacobian(x).toarray(), J, rtol=1e-14)
    H = G.hessian(x)
    assert np.array_equal(G.hessian_sparsity().toarray(), H != 0)
    np.testing.assert_allclose(G.sparse_hessian(x).toarray(), H, rtol=1e-12)


def test_array_outputs_of_any_shape_rows_in_c_order():
    F = tape.trace(lambda x: np.exp(x.reshape(2, 3)).T * 2.0, np.arange(6.0))
    J = F.sparse_jacobian(np.arange(6.0))
    expected = np.zeros((6, 6))
    for i in range(3):
        for j in range(2):
            expected[2 * i + j, 3 * j + i] = 2.0 * np.exp(3 * j + i)
    np.testing.assert_allclose(J.toarray(), expected, rtol=1e-15)


def _residual(u):
    up, lo = np.concatenate([u[1:], [0.0]]), np.concatenate([[0.0], u[:-1]])
    return up - 2.0 * u + lo + 0.1 * np.exp(u) - 1.0 / u.size


def _hand_jacobian(u):
    n = u.size
    return scipy.sparse.diags([np.ones(n - 1), -2.0 + 0.1 * np.exp(u), np.ones(n - 1)], [-1, 0, 1], format="csr")


def test_the_residual_takes_three_colors_and_the_hand_jacobian():
    u = RNG.uniform(0.0, 1.0, 3000)
    F = tape.trace(_residual, u)
    assert F.jacobian_colors().max() + 1 == 3
    J = F.sparse_jacobian(u)
    assert (J != _hand_jacobian(u)).nnz == 0 and J.nnz == 3 * 3000 - 2


def _bvp(u):
    """u'' = u³ + u - 1 on a grid of step h = ε, u = 0 at both ends (a reaction-dominated BVP)."""
    up, lo = np.concatenate([u[1:], [0.0]]), np.concatenate([[0.0], u[:-1]])
    return up - 2.0 * u + lo - u ** 3 - u + 1.0


def _bvp_jacobian(u):
    n = u.size
    return scipy.sparse.diags([np.ones(n - 1), -3.0 - 3.0 * u * u, np.ones(n - 1)], [-1, 0, 1], format="csr")


def test_least_squares_on_a_bvp_takes_the_hand_jacobians_iterations():
    u0 = np.zeros(400)
    F = tape.trace(_bvp, u0)
    fits = [scipy.optimize.least_squares(F, u0, jac=jac, method="trf", tr_solver="lsmr")
            for jac in (F.sparse_jacobian, _bvp_jacobian)]
    assert fits[0].success and fits[0].cost < 1e-15
    assert (fits[0].nfev, fits[0].njev) == (fits[1].nfev, fits[1].njev)
    np.testing.assert_allclose(fits[0].x, fits[1].x, rtol=1e-10, atol=1e-12)


def test_transforms_trace_once_and_keep_pattern_and_coloring():
    calls = []

    def f(u):
        calls.append(1)
        return _residual(u) if u[0] > 0 else np.exp(u) * u[::-1]

    jac = tape.sparse_jacobian(f)
    u = RNG.uniform(0.1, 1.0, 50)
    first = jac(u)
    assert (first != _hand_jacobian(u)).nnz == 0 and len(calls) == 1
    second = jac(u * 0.5)
    assert (second != _hand_jacobian(u * 0.5)).nnz == 0 and len(calls) == 1  # replayed, pattern kept
    other = jac(-u)  # the other branch: f recorded again, its pattern made again
    x = -u
    assert len(calls) == 2 and other.nnz == 100
    np.testing.assert_allclose(other.toarray(), np.diag(np.exp(x) * x[::-1]) + np.diag(np.exp(x)) @ np.eye(50)[::-1],
                               rtol=1e-14)
    assert jac(RNG.uniform(0.1, 1.0, 60)).shape == (60, 60)  # another shape: traced for it
    rosenbrock = HESSIAN_PROGRAMS["rosenbrock"][0]
    x = RNG.uniform(-1.0, 1.0, 30)
    H = tape.sparse_hessian(rosenbrock)(x).toarray()
    assert np.array_equal(H != 0, np.abs(np.subtract.outer(np.arange(30), np.arange(30))) <= 1)
    np.testing.assert_allclose(H, tape.hessian(rosenbrock)(x), rtol=1e-13)


def test_jacobian_of_a_gradient_tape_is_the_hessian():
    """A gradient tape of an array program holds its adjoints as records (scatter, sort_as, mul_nz...)."""
    def f(x):
        y = np.sort(x.reshape(3, 4) ** 2, axis=1)
        return np.sum(np.cumsum(y, axis=1) * x.reshape(3, 4)[::-1]) + np.sum(x[[0, 5, 5]] ** 3)

    x = RNG.uniform(0.5, 1.5, 12)
    F = tape.trace(f, x)
    G = F.grad_function()
    H = F.hessian(x)
    P = G.jacobian_sparsity().toarray() != 0
    assert not ((H != 0) & ~P).any()
    np.testing.assert_allclose(G.sparse_jacobian(x).toarray(), H, rtol=1e-12, atol=1e-12)


BOUNDED = """
import resource, sys
import numpy as np
import tape
from tape.records import array_records
array_records.SMALL = 1
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
n, steps = 10_000, 60
F = tape.trace(lambda u: np.sum(HEAT(u, steps) ** 2), np.zeros(n))
P = F.hessian_sparsity().tocoo()
distance = np.abs(P.row - P.col)
print(P.nnz, int(np.minimum(distance, n - distance).max()))
rng = np.random.default_rng(3)
batch, hidden = 8, 32
xs = rng.normal(scale=0.5, size=(3, 4, batch, hidden))
def gru(th):
    Uz, Ur, Un = (th[k * hidden * hidden:(k + 1) * hidden * hidden].reshape(hidden, hidden) for k in range(3))
    h = np.zeros((batch, hidden))
    for t in range(4):
        z = tape.sigmoid(xs[0, t] + h @ Uz)
        r = tape.sigmoid(xs[1, t] + h @ Ur)
        h = (1.0 - z) * np.tanh(xs[2, t] + (r * h) @ Un) + z * h
    return 0.5 * (h * h).sum()
G = tape.trace(gru, rng.normal(scale=0.3, size=3 * hidden * hidden))
print(G.hessian_sparsity().nnz)
"""


def test_patterns_of_time_loops_hold_the_live_steps_only():
    """The heat equation over 10^4 points and 60 steps (each final element reads 121 inputs: a band of 241 in the
    Hessian) and a GRU's recurrent weights over 4 steps (3,072 inputs: every pair meets) under a 3 GB limit: each
    array record's rows were kept to the end (the heat's 3 GB at 40 steps, the GRU's 23 GB at 3 steps: a MemoryError
    here) and every pair of sets listed (the GRU's 10^10). The band by the stencil's reach, the GRU's pattern full."""
    import inspect
    import subprocess
    import sys

    source = "import numpy as np\n" + inspect.getsource(_heat).replace("_heat", "HEAT") + BOUNDED
    out = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    heat, reach, gru = map(int, out.stdout.split())
    assert (heat, reach, gru) == (10_000 * 241, 120, 3072 * 3072)
