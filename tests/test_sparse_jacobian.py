"""Sparse Jacobians: F.jacobian_sparsity, F.jacobian_colors, F.jacobian(x, seeds=S), F.sparse_jacobian.

References: each random program tracks, in plain Python next to its recording, the set of inputs
every value depends on (the rules of kernels/sparsity.py, applied to the program, not the records);
the dense Jacobian's nonzeros at random points; central differences; block structures known by
construction (stencils, bundle adjustment).
"""

import math

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse

import tape
from tape.bench.sparse import bundle_residuals
from tape.function import sparse_jacobian
from tape.function.sparse_jacobian import coloring

UNARY = [("sin", tape.sin), ("exp", lambda a: tape.exp(a * 0.1)), ("tanh", tape.tanh), ("neg", lambda a: -a),
         ("square", lambda a: a * a), ("scale", lambda a: a * 1.7 + 0.3)]
BINARY = [("add", lambda a, b: a + b), ("sub", lambda a, b: a - b), ("mul", lambda a, b: a * b),
          ("div", lambda a, b: a / (b * b + 1.0)), ("hypot", tape.hypot)]


def random_program(seed: int, n: int, generic: bool):
    """f(x) -> outputs, and the dependency sets of the outputs (frozensets of input positions).
    generic: no floor, stop_gradient, where (entries structurally present, numerically nonzero
    at random points); otherwise those too (the pattern then holds more than the nonzeros)."""
    rng = np.random.default_rng(seed)
    steps = []
    count = n
    for _ in range(int(rng.integers(n, 4 * n))):
        window = max(1, min(count, 6))
        a = int(count - 1 - rng.integers(window))
        b = int(rng.integers(count))  # sometimes far away: denser columns
        kind = rng.integers(10 if generic else 13)
        steps.append((int(kind), a, b, int(rng.integers(len(UNARY))), int(rng.integers(len(BINARY)))))
        count += 1
    outputs = sorted(set(rng.integers(n, count, size=max(1, n // 2)).tolist()) | {count - 1})

    def run(values, sets):
        values, sets = list(values), list(sets)
        for kind, a, b, u, bi in steps:
            if kind < 4:
                values.append(UNARY[u][1](values[a]))
                sets.append(sets[a])
            elif kind < 10:
                values.append(BINARY[bi][1](values[a], values[b]))
                sets.append(sets[a] | sets[b])
            elif kind == 10:  # floor: no dependence, whatever it feeds
                values.append(tape.floor(values[a]) + values[b])
                sets.append(sets[b])
            elif kind == 11:
                values.append(tape.stop_gradient(values[a]) * 2.0)
                sets.append(frozenset())
            else:  # where: both sides, not the condition
                values.append(tape.where(values[b] > 0.2, values[a] * 3.0, tape.sin(values[b])))
                sets.append(sets[a] | sets[b])
        return [values[o] for o in outputs], [sets[o] for o in outputs]

    def f(x):
        return run([x[i] for i in range(n)], [frozenset()] * n)[0]

    return f, outputs, run


def expected_pattern(run, n: int) -> np.ndarray:
    """The dependency sets the program says, as a dense 0/1 matrix."""
    t = tape.Tape()  # a throwaway tape: only the sets are wanted
    values = [t.var(0.5) for _ in range(n)]
    _, sets = run(values, [frozenset([i]) for i in range(n)])
    P = np.zeros((len(sets), n), np.int8)
    for i, s in enumerate(sets):
        P[i, sorted(s)] = 1
    return P


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.all(a.view(np.int64) == b.view(np.int64)))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("generic", [True, False])
def test_pattern_matches_the_programs_sets_and_holds_every_nonzero(seed, generic):
    n = 5 + seed % 7 * 3
    f, outputs, run = random_program(seed, n, generic)
    rng = np.random.default_rng(100 + seed)
    x0 = rng.uniform(0.3, 1.2, n)
    F = tape.trace(f, x0, on_branch_change="ignore")
    P = F.jacobian_sparsity()
    assert isinstance(P, scipy.sparse.csr_matrix) and P.shape == (len(outputs), n)
    assert np.array_equal(P.toarray(), expected_pattern(run, n))
    seen = np.zeros(P.shape, bool)
    for _ in range(5):
        J = F.jacobian(rng.uniform(0.3, 1.2, n), mode="forward")
        seen |= J != 0
        assert not np.any((J != 0) & (P.toarray() == 0))  # every nonzero inside the pattern
    if generic:
        assert np.array_equal(seen, P.toarray() != 0)


def valid_coloring(P: scipy.sparse.csr_matrix, colors: np.ndarray) -> bool:
    """No two columns of one color share a row."""
    for c in np.unique(colors):
        if np.any(np.asarray(P[:, colors == c].sum(axis=1)) > 1):
            return False
    return True


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("order", ["natural", "largest_first"])
def test_colorings_are_structurally_orthogonal(seed, order):
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 40)), int(rng.integers(1, 40))
    P = scipy.sparse.random(m, n, density=float(rng.uniform(0.02, 0.4)), format="csr", random_state=seed)
    P.data[:] = 1.0
    colors = coloring(n, P.indptr.astype(np.int64), P.indices.astype(np.int32), order)
    assert colors.shape == (n,) and colors.min() >= 0
    assert valid_coloring(P, colors)
    assert colors.max() + 1 >= max(1, int(np.diff(P.indptr).max(initial=0)))  # a row's columns: all distinct
    # a mutation of the coloring is caught: two columns of one row given one color
    row = int(np.argmax(np.diff(P.indptr)))
    if P.indptr[row + 1] - P.indptr[row] >= 2:
        bad = colors.copy()
        j, k = P.indices[P.indptr[row]:P.indptr[row] + 2]
        bad[k] = bad[j]
        assert not valid_coloring(P, bad)
    with pytest.raises(ValueError, match="order must be"):
        coloring(n, P.indptr.astype(np.int64), P.indices.astype(np.int32), "random")


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("generic", [True, False])
def test_sparse_jacobian_equals_dense_forward_bit_for_bit(seed, generic):
    n = 4 + seed % 5 * 4
    f, outputs, _ = random_program(1000 + seed, n, generic)
    rng = np.random.default_rng(seed)
    F = tape.trace(f, rng.uniform(0.3, 1.2, n), on_branch_change="ignore")
    P, colors = F.jacobian_sparsity(), F.jacobian_colors()
    assert valid_coloring(P, colors)
    for _ in range(4):
        x = rng.uniform(0.3, 1.2, n)
        S = F.sparse_jacobian(x)
        assert np.array_equal(S.indptr, P.indptr) and np.array_equal(S.indices, P.indices)
        D = F.jacobian(x, mode="forward")
        assert same_bits(S.toarray(), D)
        np.testing.assert_allclose(S.toarray(), F.jacobian(x, mode="reverse"), rtol=1e-13, atol=1e-300)
        if generic:  # every entry against central differences
            h = 1e-6
            for j in range(n):
                e = np.zeros(n)
                e[j] = h
                col = (np.asarray(F(x + e)) - np.asarray(F(x - e))) / (2 * h)
                np.testing.assert_allclose(S[:, [j]].toarray()[:, 0], col, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_edge_values_give_the_dense_entries(seed):
    n = 10
    f, outputs, _ = random_program(2000 + seed, n, generic=True)
    F = tape.trace(f, np.full(n, 0.5))
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, 1.0]
    rng = np.random.default_rng(seed)
    for _ in range(6):
        x = rng.choice(edges, n)
        with np.errstate(all="ignore"):
            assert same_bits(F.sparse_jacobian(x).toarray(), F.jacobian(x, mode="forward"))


def tridiagonal(x):
    n = len(x)
    return [(x[i - 1] if i else 0.0) - 2.0 * x[i] + (x[i + 1] if i < n - 1 else 0.0) + 0.1 * tape.exp(x[i])
            for i in range(n)]


def test_tridiagonal_takes_three_colors_and_the_hand_derived_jacobian():
    n = 50
    x = np.random.default_rng(0).uniform(-1, 1, n)
    F = tape.trace(tridiagonal, x)
    assert F.jacobian_colors().max() + 1 == 3
    hand = np.diag(-2.0 + 0.1 * np.exp(x)) + np.eye(n, k=1) + np.eye(n, k=-1)
    S = F.sparse_jacobian(x)
    assert S.nnz == 3 * n - 2
    np.testing.assert_allclose(S.toarray(), hand, rtol=1e-15, atol=0)


def stencil(x):  # 2-D five-point Laplacian with a nonlinearity, on a k x k grid
    k = int(round(math.sqrt(len(x))))
    out = []
    for i in range(k):
        for j in range(k):
            c = x[i * k + j]
            r = -4.0 * c + tape.sin(c)
            for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                if 0 <= i + di < k and 0 <= j + dj < k:
                    r = r + x[(i + di) * k + j + dj] * c
            out.append(r)
    return out


def test_five_point_stencil():
    k = 7
    x = np.random.default_rng(1).uniform(0.1, 1, k * k)
    F = tape.trace(stencil, x)
    P = F.jacobian_sparsity().toarray()
    grid = np.arange(k * k).reshape(k, k)
    for i in range(k):
        for j in range(k):
            near = {grid[a, b] for a, b in ((i, j), (i + 1, j), (i - 1, j), (i, j + 1), (i, j - 1))
                    if 0 <= a < k and 0 <= b < k}
            assert set(np.flatnonzero(P[grid[i, j]])) == near
    assert 5 <= F.jacobian_colors().max() + 1 <= 8  # 5 is optimal ((i + 2j) mod 5); greedy gets 7 here
    assert same_bits(F.sparse_jacobian(x).toarray(), F.jacobian(x, mode="forward"))
    assert same_bits(F.sparse_jacobian(x, block=2).toarray(), F.jacobian(x, mode="forward"))  # 4 blocks of sweeps


def test_block_sparse_bundle_adjustment_shape():
    rng = np.random.default_rng(3)
    cameras, points = 4, 9
    obs = sorted({(int(rng.integers(cameras)), int(rng.integers(points))) for _ in range(25)})
    n = 12 * cameras + 3 * points
    x = rng.uniform(0.2, 1.0, n)
    F = tape.trace(bundle_residuals(cameras, obs), x)
    P = F.jacobian_sparsity()
    expected = np.zeros((2 * len(obs), n), np.int8)
    for b, (c, p) in enumerate(obs):
        expected[2 * b:2 * b + 2, 12 * c:12 * c + 12] = 1
        expected[2 * b:2 * b + 2, 12 * cameras + 3 * p:12 * cameras + 3 * p + 3] = 1
    assert np.array_equal(P.toarray(), expected) and set(np.diff(P.indptr)) == {15}
    colors = F.jacobian_colors()
    assert valid_coloring(P, colors) and colors.max() + 1 < n
    S = F.sparse_jacobian(x)
    assert same_bits(S.toarray(), F.jacobian(x, mode="forward"))


def test_seeds_give_J_times_S():
    n = 9
    x = np.random.default_rng(4).uniform(-1, 1, n)
    F = tape.trace(tridiagonal, x)
    S = np.random.default_rng(5).normal(size=(n, 20))  # more columns than one block of 16
    hand = np.diag(-2.0 + 0.1 * np.exp(x)) + np.eye(n, k=1) + np.eye(n, k=-1)
    JS = F.jacobian(x, seeds=S)
    assert JS.shape == (n, 20)
    np.testing.assert_allclose(JS, hand @ S, rtol=1e-13, atol=1e-14)
    assert same_bits(F.jacobian(x, seeds=np.eye(n)), F.jacobian(x, mode="forward"))
    assert same_bits(F.jacobian(x, seeds=S, block=3), JS)
    G = tape.trace(lambda v: tape.sin(v[0]) * v[1], np.array([0.3, 0.7]))  # a scalar output: (k,)
    np.testing.assert_allclose(G.jacobian([0.3, 0.7], seeds=np.eye(2)), [math.cos(0.3) * 0.7, math.sin(0.3)])
    with pytest.raises(ValueError, match=r"seeds must be an \(n_inputs, k\) = \(9, k\)"):
        F.jacobian(x, seeds=np.ones((8, 2)))
    with pytest.raises(ValueError, match="seeds take mode auto or forward"):
        F.jacobian(x, seeds=S, mode="reverse")


def test_seeds_and_sparsity_with_array_records():
    x = np.linspace(0.1, 1.0, 2000)
    F = tape.trace(lambda X: tape.sin(X) * X, x)
    S = np.random.default_rng(6).normal(size=(2000, 2))
    np.testing.assert_allclose(F.jacobian(x, seeds=S), (np.cos(x) * x + np.sin(x))[:, None] * S, rtol=1e-12)
    assert np.array_equal(F.jacobian_sparsity().toarray(), np.eye(2000)) and F.jacobian_colors().max() == 0
    np.testing.assert_allclose(F.sparse_jacobian(x).diagonal(), np.cos(x) * x + np.sin(x), rtol=1e-15)
    assert np.array_equal(tape.trace(lambda X: X, x).jacobian_sparsity().toarray(), np.eye(2000))


def test_elements_of_an_array_input():
    n = 1500  # over tape's per-element limit: x is one array input record, x[i] its elements
    x = np.random.default_rng(7).uniform(-1, 1, n)
    F = tape.trace(tridiagonal, x)
    assert F._plans
    hand = np.diag(-2.0 + 0.1 * np.exp(x)) + np.eye(n, k=1) + np.eye(n, k=-1)
    P = F.jacobian_sparsity()
    assert np.array_equal(P.toarray(), hand != 0) and F.jacobian_colors().max() + 1 == 3
    S = F.sparse_jacobian(x)
    np.testing.assert_allclose(S.toarray(), hand, rtol=1e-15, atol=0)
    assert same_bits(S[:, :40].toarray(), F.jacobian(x, seeds=np.eye(n)[:, :40]))


def test_pattern_and_coloring_are_kept_and_remade_after_a_retrace():
    def f(x):
        if x[0] > 0:
            return [x[0] * x[1], x[2]]
        return [x[0], x[1] * x[2]]
    F = tape.trace(f, np.array([1.0, 2.0, 3.0]), on_branch_change="retrace")
    first = sparse_jacobian.structure(F)
    assert sparse_jacobian.structure(F)[0] is first[0]  # kept
    assert np.array_equal(F.jacobian_sparsity().toarray(), [[1, 1, 0], [0, 0, 1]])
    S = F.sparse_jacobian(np.array([-1.0, 2.0, 3.0]))  # retraces: the other branch's pattern
    assert np.array_equal(S.toarray(), [[1, 0, 0], [0, 3, 2]])
    assert np.array_equal(F.jacobian_sparsity().toarray(), [[1, 0, 0], [0, 1, 1]])


def test_least_squares_with_the_sparse_jacobian():
    n = 30

    def residuals(x):  # the extended Rosenbrock function as least squares
        return [10.0 * (x[i + 1] - x[i] * x[i]) for i in range(n - 1)] + [1.0 - x[i] for i in range(n)]

    x0 = np.full(n, -0.5)
    F = tape.trace(residuals, x0)
    fun = lambda x: np.asarray(F(x))  # noqa: E731
    sparse = scipy.optimize.least_squares(fun, x0, jac=F.sparse_jacobian, tr_solver="lsmr", xtol=1e-14)
    np.testing.assert_allclose(sparse.x, np.ones(n), atol=1e-8)
    fd = scipy.optimize.least_squares(fun, x0, jac_sparsity=F.jacobian_sparsity(), xtol=1e-14)
    np.testing.assert_allclose(fd.x, np.ones(n), atol=1e-6)
    assert sparse.njev <= fd.njev + 5


def test_params_constants_repeated_and_input_outputs():
    def f(x, p):
        y = x[0] * p[0] + tape.sin(x[2])
        return [y, x[1], y, x[0] * 0.0, tape.stop_gradient(x[1]) + p[1], tape.where(x[2] > x[0], 1.0, 2.0)]
    x0, p0 = np.array([0.5, -1.0, 2.0]), np.array([3.0, 4.0])
    F = tape.trace(f, x0, params=p0)
    expected = [[1, 0, 1], [0, 1, 0], [1, 0, 1], [1, 0, 0], [0, 0, 0], [0, 0, 0]]  # x * 0.0: structural
    assert np.array_equal(F.jacobian_sparsity().toarray(), expected)
    S = F.sparse_jacobian(x0, params=np.array([-2.0, 1.0]))
    assert S.nnz == 6 and same_bits(S.toarray(), F.jacobian(x0, params=np.array([-2.0, 1.0]), mode="forward"))
    assert S[0, 0] == -2.0 and S[3, 0] == 0.0  # stored: the pattern's entries, zero or not


def test_an_array_param_carries_no_dependence():
    n = 1500  # over tape's per-element limit: p is one array param record, p[i] its elements
    def f(x, p):
        return [x[0] * p[0] + x[1], p[n - 1] * x[1], p[2] + 1.0]
    p0 = np.linspace(1.0, 2.0, n)
    F = tape.trace(f, [0.3, 0.7], params=p0)
    assert np.array_equal(F.jacobian_sparsity().toarray(), [[1, 1], [0, 1], [0, 0]])
    x, p = np.array([0.4, -0.2]), p0[::-1].copy()
    assert same_bits(F.sparse_jacobian(x, params=p).toarray(), F.jacobian(x, params=p, mode="forward"))
