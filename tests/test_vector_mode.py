"""Vector mode on array records (tape/sweeps/vectors.py): k tangent directions in one sweep.

Every array record here is one (array_records.SMALL = 1). The reference is k separate array tangent
sweeps (F.jvp's, one direction each), which must agree bit for bit, including where a partial is
infinite and the structural-zero rule keeps it out; and, independently, central differences of the
same program run on NumPy arrays.
"""

import numpy as np
import pytest

import tape
from tape.function import derivatives
from tape.records import array_records
from tape.sweeps import vectors

RNG = np.random.default_rng(126)
W = RNG.normal(size=(4, 6))


@pytest.fixture(autouse=True)
def array_records_only(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)


def _near(x):
    return x.reshape(3, 3) + 4.0 * np.eye(3)


@tape.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


softplus.defjvp(lambda primals, tangents: (softplus(primals[0]), tangents[0] / (1.0 + np.exp(-primals[0]))))

INNER = tape.trace(lambda u: np.sin(u) * u[::-1] + u[0], np.ones(6))  # a called Function with array records

# name: (program on a flat x, n): one or more of each kind of record the sweep meets
PROGRAMS = {
    "elementwise": (lambda x: np.exp(x) * x - np.sin(x) / (1.0 + x * x), 6),
    "0-d constants on either side": (lambda x: 2.0 / (1.5 + x) - x ** 3.0 * 0.5, 6),
    "broadcast row and column": (lambda x: x.reshape(2, 3) * x[:3] - np.tanh(x.reshape(2, 3)[:, :1]), 6),
    "outer": (lambda x: x[:, None] * np.cos(x)[None, :], 5),
    "sum over axes": (lambda x: np.sum(x.reshape(2, 3, 2) ** 2, axis=(0, 2)) * np.sum(x), 12),
    "logsumexp": (lambda x: tape.logsumexp(x.reshape(3, 4), axis=1) if not isinstance(x, np.ndarray) else
                  np.log(np.sum(np.exp(x.reshape(3, 4)), axis=1)), 12),
    "max and min": (lambda x: x.reshape(3, 4).max(axis=1) - x.reshape(3, 4).min(axis=0)[:3], 12),
    "views and a gather": (lambda x: np.cos(x.reshape(3, 4).T.reshape(-1)) * x[[2, 0, 0, 11] * 3], 12),
    "join with a constant": (lambda x: np.concatenate([x[1:], [0.0]]) - 2.0 * x + np.concatenate([[0.0], x[:-1]]), 7),
    "join along axis 1": (lambda x: np.concatenate([x.reshape(3, 4)[:, 2:], np.sin(x.reshape(3, 4))], axis=1), 12),
    "matmul": (lambda x: x[:12].reshape(3, 4) @ x[12:].reshape(4, 2), 20),
    "batch matmul, broadcast": (lambda x: x[:16].reshape(2, 2, 4) @ np.exp(x[16:].reshape(4, 1)), 20),
    "constant matrix times": (lambda x: W @ np.tanh(x.reshape(6, 2)), 12),
    "matrix times vector": (lambda x: x[:12].reshape(3, 4) @ x[12:], 16),
    "where, a constant branch": (lambda x: np.where(x > 0.0, x * x, 0.5) + np.where(x < 0.3, 1.0, np.sin(x)), 8),
    "cumsum and cumprod": (lambda x: np.cumsum(x.reshape(3, 4) ** 2, axis=1) * np.cumprod(x.reshape(3, 4), axis=0), 12),
    "sort": (lambda x: np.sort(x.reshape(3, 4) * 1.5, axis=1), 12),
    "solve": (lambda x: np.linalg.solve(_near(x[:9]), x[9:] ** 2), 12),
    "inv and det": (lambda x: np.linalg.inv(_near(x)).reshape(-1) * np.linalg.det(_near(x)), 9),
    "a call record": (lambda x: INNER(x * 2.0) * x + INNER(np.cos(x)), 6),
    "a custom jvp": (lambda x: softplus(x[::-1] * x), 5),
}


def _central(f, x, v, h=1e-6):
    return (np.asarray(f(x + h * v)) - np.asarray(f(x - h * v))).reshape(-1) / (2.0 * h)


def _directions(n, k=5):
    D = RNG.normal(size=(k, n))
    D[1] = 0.0  # a zero direction
    D[3] = np.eye(n)[n // 2]  # a unit one
    return D


def _separate(F, x, D):
    derivatives.at(F, np.asarray(x, float))
    return np.stack([derivatives.array_jvp(F, d) for d in D])


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_one_sweep_of_k_directions_is_k_sweeps_bit_for_bit(name):
    f, n = PROGRAMS[name]
    x = RNG.uniform(0.2, 1.0, n)
    F = tape.trace(f, x)
    assert F._plans
    D = _directions(n)
    separate = _separate(F, x, D)
    for block in (16, 2):
        assert np.array_equal(vectors.jacobian_times(F, D, block), separate)
    seeded = F.jacobian(x, seeds=D.T)
    assert np.array_equal(seeded.reshape(-1, len(D)), separate.T)
    if name not in ("a call record", "a custom jvp"):  # a Function does not run on NumPy arrays
        for q in (0, 2, 3):
            np.testing.assert_allclose(separate[q], _central(f, x, D[q]), rtol=1e-6, atol=1e-7)


def test_dense_jacobian_columns_by_vector_sweeps():
    f, n = PROGRAMS["matmul"]
    x = RNG.uniform(0.2, 1.0, n)
    F = tape.trace(f, x)
    J = F.jacobian(x, mode="forward", block=3)
    assert np.array_equal(J.reshape(-1, n), _separate(F, x, np.eye(n)).T)
    np.testing.assert_allclose(J.reshape(-1, n), F.jacobian(x, mode="reverse").reshape(-1, n), rtol=1e-14)


def test_structural_zero_rule_per_direction():
    f = lambda x: np.sqrt(x) * x[::-1] + np.log(x) * 0.0  # noqa: E731  infinite partials at x = 0
    x = np.array([0.0, 1.0, 4.0, 2.0])
    F = tape.trace(f, np.ones(4))
    D = np.array([[0.0, 1.0, 2.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 3.0]])
    separate = _separate(F, x, D)
    assert np.isfinite(separate[0]).all() and not np.isfinite(separate[1]).all()
    assert np.array_equal(vectors.jacobian_times(F, D), separate, equal_nan=True)


def test_mixed_tapes_packs_and_elem_reads():
    def f(p, stack=tape.stack):
        s, A = p
        m = np.max(A) * s + A[1]  # elem reads of array records, scalar records
        packed = stack([m, s * s, np.sum(A * A) / s])  # a pack of scalar records
        return np.concatenate([np.exp(A[:3]) * packed, A * m, stack([np.tanh(m)])])

    x0 = (0.7, RNG.normal(size=5))
    F = tape.trace(f, x0)
    z = np.concatenate([[0.7], x0[1]])
    D = _directions(6)
    separate = _separate(F, z, D)  # (the value pass first: it stores the scalar records' partials)
    assert np.array_equal(vectors.jacobian_times(F, D, 2), separate)
    for q in (0, 3):
        np.testing.assert_allclose(separate[q], _central(lambda z: f((z[0], z[1:]), np.stack), z, D[q]),
                                   rtol=1e-6, atol=1e-7)


def test_a_gradient_tape_scatters_and_permutes():
    f = lambda x: np.sum(np.sort(x.reshape(2, 4), axis=1)[:, ::-1] * np.cumsum(x.reshape(2, 4) ** 2, axis=1))  # noqa
    x = RNG.uniform(-1.0, 1.0, 8)
    G = tape.trace(f, x).grad_function()
    D = _directions(8)
    separate = _separate(G, x, D)
    assert np.array_equal(vectors.jacobian_times(G, D, 3), separate)
    grad = lambda x: tape.grad(f)(x)  # noqa: E731
    np.testing.assert_allclose(separate[0], _central(grad, x, D[0]), rtol=1e-6, atol=1e-7)


def test_sparse_hessian_of_an_array_program_by_its_gradient_tape():
    f = lambda x: np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)  # noqa: E731
    x = RNG.uniform(-1.0, 1.0, 30)
    F = tape.trace(f, x)
    H = F.sparse_hessian(x).toarray()
    i = np.arange(29)
    hand = np.zeros((30, 30))
    hand[i, i] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    hand[i + 1, i + 1] += 200.0
    hand[i, i + 1] = hand[i + 1, i] = -400.0 * x[:-1]
    np.testing.assert_allclose(H, hand, rtol=1e-12, atol=1e-12)
    assert F.__dict__["_gradient_tape"][1] is not None


def test_kept_buffers_across_calls_and_a_retrace():
    def f(x):  # a branch: the retrace's records start from zero tangents
        y = np.where(x > 0.5, np.exp(x), 0.0) + np.sin(x) * x[::-1]
        return y * 2.0 if np.sum(x) > 0.0 else np.concatenate([y[1:], [1.0]]) * y

    jac = tape.sparse_jacobian(f)
    for x in (RNG.uniform(0.2, 1.0, 6), RNG.uniform(0.2, 1.0, 6), -RNG.uniform(0.2, 1.0, 6), RNG.uniform(-1, 1, 6)):
        J = jac(x).toarray()
        np.testing.assert_array_equal(J, tape.trace(f, x).jacobian(x, mode="forward"))
        for q in range(6):
            np.testing.assert_allclose(J[:, q], _central(f, x, np.eye(6)[q]), rtol=1e-6, atol=1e-7)
