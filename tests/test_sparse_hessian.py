"""Sparse Hessians: F.hessian_sparsity, F.hessian_colors, F.sparse_hessian.

References: each random program tracks, in plain Python next to its recording, every value's
dependency set and Hessian pattern, propagated forward by the rules of calculus (a sum unites
the patterns, a product adds the cross pairs, a nonlinear unary function its input's set with
itself): a different scheme from the records' reverse pass. Also the dense Hessian's nonzeros at
random points, a brute-force check of the star property, a recovery written here in Python from
F.hvp's products, central differences of the gradient, and hand-derived banded and arrow Hessians.
"""

import itertools
import math

import numpy as np
import pytest
import scipy.sparse

import tape
from tape.function import sparse_hessian
from tape.function.sparse_hessian import symmetric_coloring
from tape.kernels.hessian_sparsity import recover

LINEAR = [("neg", lambda a: -a), ("scale", lambda a: a * 1.7 + 0.3)]
CURVED = [("sin", tape.sin), ("exp", lambda a: tape.exp(a * 0.1)), ("tanh", tape.tanh), ("square", lambda a: a * a)]
BINARY = [("add", lambda a, b: a + b, False), ("sub", lambda a, b: a - b, False), ("mul", lambda a, b: a * b, True),
          ("div", lambda a, b: a / (b * b + 1.0), True), ("hypot", tape.hypot, True)]


def random_program(seed: int, n: int, generic: bool):
    """f(x) -> one output, and run(values, sets, pairs) -> (output, its dependency set, its pattern)."""
    rng = np.random.default_rng(seed)
    steps = []
    count = n
    for _ in range(int(rng.integers(n, 3 * n))):
        a = int(count - 1 - rng.integers(max(1, min(count, 5))))
        b = int(rng.integers(count))
        if generic and b == a:  # x - x is zero, and so is its whole column of the Hessian
            b = (a + 1) % count
        steps.append((int(rng.integers(11 if generic else 14)), a, b, int(rng.integers(12))))
        count += 1
    summed = sorted(set(rng.integers(n, count, size=max(1, n // 3)).tolist()) | {count - 1})

    def run(values, sets, pairs):
        values, sets, pairs = list(values), list(sets), list(pairs)
        for kind, a, b, u in steps:
            sa, sb, pa, pb = sets[a], sets[b], pairs[a], pairs[b]
            if kind < 2:
                values.append(LINEAR[u % 2][1](values[a]))
                sets.append(sa)
                pairs.append(pa)
            elif kind < 5:
                values.append(CURVED[u % 4][1](values[a]))
                sets.append(sa)
                pairs.append(pa | {(i, j) for i in sa for j in sa})
            elif kind < 11:
                _, op, cross = BINARY[u % 5]
                values.append(op(values[a], values[b]))
                sets.append(sa | sb)
                made = {(i, j) for i in sa for j in sb} if cross else set()
                if u % 5 >= 3:  # div (by b * b + 1), hypot: b with itself too
                    made |= {(i, j) for i in sb for j in sb}
                if u % 5 == 4:  # hypot: a with itself
                    made |= {(i, j) for i in sa for j in sa}
                pairs.append(pa | pb | made | {(j, i) for i, j in made})
            elif kind == 11:  # floor: no dependence, whatever it feeds
                values.append(tape.floor(values[a]) * values[b])
                sets.append(sb)
                pairs.append(pb)
            elif kind == 12:
                values.append(tape.stop_gradient(values[a]) * 2.0)
                sets.append(frozenset())
                pairs.append(frozenset())
            else:  # where: both sides, not the condition
                values.append(tape.where(values[b] > 0.2, values[a] * 3.0, tape.sin(values[b])))
                sets.append(sa | sb)
                pairs.append(pa | pb | {(i, j) for i in sb for j in sb})
        out = values[summed[0]]
        for s in summed[1:]:
            out = out + values[s]
        return out, frozenset().union(*(pairs[s] for s in summed))

    def f(x):
        return run([x[i] for i in range(n)], [frozenset()] * n, [frozenset()] * n)[0]

    return f, run


def expected_pattern(run, n: int) -> np.ndarray:
    t = tape.Tape()  # a throwaway tape: only the pattern is wanted
    _, pairs = run([t.var(0.5) for _ in range(n)], [frozenset([i]) for i in range(n)], [frozenset()] * n)
    P = np.zeros((n, n), np.int8)
    for i, j in pairs:
        P[i, j] = 1
    return P


def same_bits(a, b) -> bool:
    """The same numbers bit for bit (-0.0 is not 0.0), NaN matching any NaN (its sign and payload
    follow the operands' order, which the compiler may swap in a + b)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(np.all((a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b))))


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("generic", [True, False])
def test_pattern_matches_the_programs_pairs_and_holds_every_nonzero(seed, generic):
    n = 4 + seed % 6 * 3
    f, run = random_program(seed, n, generic)
    rng = np.random.default_rng(100 + seed)
    F = tape.trace(f, rng.uniform(0.3, 1.2, n), on_branch_change="ignore")
    P = F.hessian_sparsity()
    assert isinstance(P, scipy.sparse.csr_matrix) and P.shape == (n, n) and P.has_sorted_indices
    assert np.array_equal(P.toarray(), expected_pattern(run, n))
    assert (P != P.T).nnz == 0
    seen = np.zeros(P.shape, bool)
    for _ in range(5):
        H = F.hessian(rng.uniform(0.3, 1.2, n))
        seen |= H != 0
        assert not np.any((H != 0) & (P.toarray() == 0))  # every nonzero inside the pattern
    if generic:
        assert np.array_equal(seen, P.toarray() != 0)


def star_violation(P: scipy.sparse.csr_matrix, colors: np.ndarray):
    """The first edge with equal colors, or path on four vertices with two colors; None if a star coloring."""
    near = [set(P.indices[P.indptr[i]:P.indptr[i + 1]].tolist()) - {i} for i in range(P.shape[0])]
    for b in range(P.shape[0]):
        for c in near[b]:
            if colors[b] == colors[c]:
                return (b, c)
            for a, d in itertools.product(near[b] - {c}, near[c] - {b}):
                if a != d and len({colors[a], colors[b], colors[c], colors[d]}) < 3:
                    return (a, b, c, d)
    return None


def random_symmetric(seed: int) -> scipy.sparse.csr_matrix:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    A = scipy.sparse.random(n, n, density=float(rng.uniform(0.02, 0.3)), format="csr", random_state=seed)
    A = (A + A.T + scipy.sparse.eye(n) * (seed % 2)).tocsr()
    A.data[:] = 1.0
    A.sort_indices()
    return A


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("order", ["natural", "largest_first"])
def test_star_colorings_are_star_colorings(seed, order):
    P = random_symmetric(seed)
    n = P.shape[0]
    colors = symmetric_coloring(n, P.indptr.astype(np.int64), P.indices.astype(np.int32), order)
    assert colors.shape == (n,) and colors.min() >= 0
    assert star_violation(P, colors) is None
    data = np.empty(P.nnz)
    compressed = np.zeros((n, colors.max() + 1))
    assert recover(*csr(P), colors, compressed, data, *scratch(P, colors)) == -1
    with pytest.raises(ValueError, match="order must be"):
        symmetric_coloring(n, P.indptr.astype(np.int64), P.indices.astype(np.int32), "random")


def test_a_distance_1_coloring_is_caught():
    P = scipy.sparse.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(6, 6), format="csr")  # a path
    two = np.array([0, 1, 0, 1, 0, 1])  # proper, but 0-1-2-3 has two colors
    assert star_violation(P, two) is not None and star_violation(P, np.array([0, 1, 0, 2, 0, 1])) is None
    data = np.empty(P.nnz)
    assert recover(*csr(P), two, np.zeros((6, 2)), data, *scratch(P, two)) >= 0


def csr(P):
    """A pattern's (indptr, indices) as the kernels take them."""
    return P.indptr.astype(np.int64), P.indices.astype(np.int32)


def scratch(P, colors):
    """recover's scratch: a count per color (+ 1), zeros; a flag per entry."""
    return np.zeros(colors.max() + 2, np.int64), np.empty(P.nnz, np.bool_)


def python_recovery(P: scipy.sparse.csr_matrix, colors: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The entries, read directly from B[:, c] = H (sum of the unit vectors of color c), written out here."""
    n = P.shape[0]
    near = [P.indices[P.indptr[i]:P.indptr[i + 1]].tolist() for i in range(n)]

    def direct(i, j):  # j is i's only neighbor (not i) of its color
        return i == j or sum(1 for q in near[i] if q != i and colors[q] == colors[j]) == 1

    H = np.zeros((n, n))
    for i in range(n):
        for j in near[i]:
            a, b = B[i, colors[j]], B[j, colors[i]]
            H[i, j] = 0.5 * (a + b) if direct(i, j) and direct(j, i) else a if direct(i, j) else b
    return H


def check_against_dense(F, x, generic=True):
    """sparse_hessian at x: the recovery of F.hvp's products bit for bit; F.hessian's entries bit for bit
    where both sides are direct, else one side's hvp entry bit for bit; central differences of the gradient."""
    n = F.n_inputs
    P, colors = F.hessian_sparsity(), F.hessian_colors()
    S = F.sparse_hessian(x)
    assert isinstance(S, scipy.sparse.csr_matrix)
    assert np.array_equal(S.indptr, P.indptr) and np.array_equal(S.indices, P.indices)
    seeds = np.eye(colors.max() + 1)[colors] if n else np.zeros((0, 0))
    B = np.stack([np.asarray(F.hvp(x, seeds[:, q]), float) for q in range(seeds.shape[1])], axis=1)
    mask = P.toarray() != 0
    assert same_bits(S.toarray()[mask], python_recovery(P, colors, B)[mask])
    D = F.hessian(x)
    raw = np.stack([np.asarray(F.hvp(x, e), float) for e in np.eye(n)], axis=1)  # column j: H e_j
    got = S.toarray()
    for i, j in np.argwhere(mask):
        assert same_bits(got[i, j], D[i, j]) or same_bits(got[i, j], raw[i, j]) or same_bits(got[i, j], raw[j, i])
    assert np.all(D[~mask] == 0)
    if generic:
        np.testing.assert_allclose(got, D, rtol=1e-13, atol=1e-13)
        h = 1e-6
        for j in range(n):
            e = np.zeros(n)
            e[j] = h
            fd = (np.asarray(F.value_and_grad(x + e)[1]) - np.asarray(F.value_and_grad(x - e)[1])) / (2 * h)
            np.testing.assert_allclose(got[:, j], fd, rtol=1e-5, atol=1e-6)
    return S


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("generic", [True, False])
def test_sparse_hessian_equals_the_dense_one(seed, generic):
    n = 4 + seed % 5 * 4
    f, _ = random_program(1000 + seed, n, generic)
    rng = np.random.default_rng(seed)
    F = tape.trace(f, rng.uniform(0.3, 1.2, n), on_branch_change="ignore")
    assert star_violation(F.hessian_sparsity(), F.hessian_colors()) is None
    for _ in range(3):
        check_against_dense(F, rng.uniform(0.3, 1.2, n), generic)


@pytest.mark.parametrize("seed", range(6))
def test_edge_values(seed):
    n = 10
    f, _ = random_program(2000 + seed, n, generic=True)
    F = tape.trace(f, np.full(n, 0.5), on_branch_change="ignore")
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, 1.0]
    rng = np.random.default_rng(seed)
    for _ in range(5):
        with np.errstate(all="ignore"):
            check_against_dense(F, rng.choice(edges, n), generic=False)


def banded(x):
    return sum((x[i + 1] - x[i] * x[i]) ** 2 for i in range(len(x) - 1))


def banded_hessian(x: np.ndarray) -> np.ndarray:
    """By hand: f = sum t_i^2, t_i = x_{i+1} - x_i^2."""
    n = len(x)
    t = x[1:] - x[:-1] ** 2
    diag = np.zeros(n)
    diag[1:] += 2.0
    diag[:-1] += -4.0 * t + 8.0 * x[:-1] ** 2
    off = -4.0 * x[:-1]
    return np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)


def test_banded_problem_takes_three_colors_and_the_hand_derived_hessian():
    n = 60
    x = np.random.default_rng(0).uniform(-1, 1, n)
    F = tape.trace(banded, x)
    P = F.hessian_sparsity()
    assert np.array_equal(P.toarray(), np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1)
    assert F.hessian_colors().max() + 1 == 3  # a path needs 3 colors for a star coloring
    S = check_against_dense(F, x)
    np.testing.assert_allclose(S.toarray(), banded_hessian(x), rtol=1e-14, atol=1e-14)
    assert same_bits(S.toarray(), F.hessian(x))  # colors 0 1 2 0 1 2 ...: every entry direct from both sides


def arrow(x):
    return sum(tape.sin(x[0] + x[i]) + x[i] * x[i] for i in range(1, len(x)))


def test_arrow_takes_two_colors_in_natural_order():
    n = 25
    x = np.random.default_rng(1).uniform(-1, 1, n)
    F = tape.trace(arrow, x)
    hand = np.zeros((n, n))
    s = np.sin(x[0] + x[1:])
    hand[0, 0] = -s.sum()
    hand[0, 1:] = hand[1:, 0] = -s
    hand[np.arange(1, n), np.arange(1, n)] = 2.0 - s
    assert np.array_equal(F.hessian_sparsity().toarray(), hand != 0)
    assert F.hessian_colors().max() + 1 == 2  # the hub first, then every leaf shares one color
    S = check_against_dense(F, x)
    np.testing.assert_allclose(S.toarray(), hand, rtol=1e-13, atol=1e-15)
    P = F.hessian_sparsity()
    last = symmetric_coloring(n, P.indptr, P.indices.astype(np.int32), "largest_first")
    assert last.max() + 1 == 2 and star_violation(P, last) is None


def test_elements_of_an_array_input():
    n = 1500  # over tape's per-element limit: x is one array input record, x[i] its elements
    x = np.random.default_rng(2).uniform(-1, 1, n)
    F = tape.trace(banded, x)
    assert F._plans and F.hessian_colors().max() + 1 == 3
    S = F.sparse_hessian(x)
    np.testing.assert_allclose(S.toarray(), banded_hessian(x), rtol=1e-14, atol=1e-14)
    assert np.array_equal(F.hessian_sparsity().toarray(), banded_hessian(x) != 0)


def test_refusals():
    F = tape.trace(lambda v: [v[0] * v[1], v[1]], [1.0, 2.0])
    with pytest.raises(ValueError, match="a Hessian needs one output, this Function has 2"):
        F.hessian_sparsity()
    with pytest.raises(ValueError, match="a Hessian needs one output"):
        F.sparse_hessian([1.0, 2.0])


def test_kept_and_remade_after_a_retrace_with_params_and_constants():
    def f(x, p):
        if x[0] > 0:
            return x[0] * x[1] * p[0] + tape.stop_gradient(x[2] * x[2]) + x[2] * 0.0
        return tape.exp(x[2]) + x[1] + p[1] * x[0]
    F = tape.trace(f, np.array([1.0, 2.0, 3.0]), params=np.array([2.0, 5.0]), on_branch_change="retrace")
    first = sparse_hessian.hessian_structure(F)
    assert sparse_hessian.hessian_structure(F)[0] is first[0]  # kept
    assert np.array_equal(F.hessian_sparsity().toarray(), [[0, 1, 0], [1, 0, 0], [0, 0, 0]])
    S = F.sparse_hessian(np.array([1.0, 2.0, 3.0]), params=np.array([3.0, 5.0]))
    assert S.nnz == 2 and S[0, 1] == 3.0 and S[1, 0] == 3.0
    S = F.sparse_hessian(np.array([-1.0, 2.0, 3.0]), params=np.array([3.0, 5.0]))  # retraces: exp(x2)
    assert np.array_equal(F.hessian_sparsity().toarray(), [[0, 0, 0], [0, 0, 0], [0, 0, 1]])
    assert S.nnz == 1 and S[2, 2] == math.exp(3.0)


def test_linear_ops_make_no_pairs_and_products_do():
    def f(x):
        linear = x[0] * 2.0 - x[1] / 4.0 + (-x[2]) + (x[3] + 1.0) - 3.0 * x[4]
        return linear + (x[0] * x[1]) * 0.0 + tape.floor(x[2] * x[3]) + tape.sin(x[4])
    F = tape.trace(f, np.full(5, 0.5))
    expected = np.zeros((5, 5), np.int8)
    expected[0, 1] = expected[1, 0] = expected[4, 4] = 1  # x0 x1 * 0.0: structural; floor cuts x2 x3
    assert np.array_equal(F.hessian_sparsity().toarray(), expected)
    x = np.array([0.3, -0.2, 0.7, 1.1, 0.4])
    S = F.sparse_hessian(x)
    assert S[0, 1] == 0.0 and S[4, 4] == -math.sin(0.4) and S.nnz == 3
    G = tape.trace(lambda v: v[0] * 3.0 + v[1] - 1.0, [1.0, 2.0])  # no second derivative at all
    assert G.hessian_sparsity().nnz == 0 and G.sparse_hessian([0.5, 0.5]).nnz == 0
    assert G.hessian_colors().tolist() == [0, 0]


def test_an_array_param_carries_no_dependence():
    n = 1500  # over tape's per-element limit: p is one array param record, p[i] its elements
    def f(x, p):
        return x[0] * x[1] * p[0] + tape.sin(x[1]) * p[n - 1] + p[2] * p[3]
    p0 = np.linspace(1.0, 2.0, n)
    F = tape.trace(f, [0.3, 0.7], params=p0)
    assert np.array_equal(F.hessian_sparsity().toarray(), [[0, 1], [1, 1]])
    x, p = np.array([0.4, -0.2]), p0[::-1].copy()
    S = F.sparse_hessian(x, params=p)
    assert same_bits(S.toarray(), F.hessian(x, params=p))
    np.testing.assert_allclose(S.toarray(), [[0.0, p[0]], [p[0], -math.sin(-0.2) * p[n - 1]]], rtol=1e-15)


def test_five_point_grid_energy():
    k = 8  # f = sum over grid edges (x_a - x_b)^2 + sum exp(x_i): H = 2 (graph Laplacian) + diag(exp(x))
    edges = [(i * k + j, i * k + j + 1) for i in range(k) for j in range(k - 1)]
    edges += [(i * k + j, (i + 1) * k + j) for i in range(k - 1) for j in range(k)]

    def f(x):
        return sum((x[a] - x[b]) ** 2 for a, b in edges) + sum(tape.exp(x[i]) for i in range(k * k))
    x = np.random.default_rng(3).uniform(-1, 1, k * k)
    F = tape.trace(f, x)
    hand = np.diag(np.exp(x))
    for a, b in edges:
        hand[a, a] += 2.0
        hand[b, b] += 2.0
        hand[a, b] -= 2.0
        hand[b, a] -= 2.0
    assert np.array_equal(F.hessian_sparsity().toarray(), hand != 0)
    assert 5 <= F.hessian_colors().max() + 1 <= 7  # 5 is the grid's star chromatic number; greedy: 6
    assert star_violation(F.hessian_sparsity(), F.hessian_colors()) is None
    np.testing.assert_allclose(check_against_dense(F, x).toarray(), hand, rtol=1e-14, atol=1e-14)


def test_long_rows_come_sorted():
    """Rows of more than 32 columns (sorted by NumPy after the kernel), their pairs made out of order: the dense
    Hessian's nonzeros, each row's columns in order."""
    order = np.random.default_rng(8).permutation(np.arange(1, 45))  # row 0: 45 columns

    def f(x):
        chain = sum(x[int(j)] * x[int(k)] for j, k in zip(order, order[1:], strict=False))
        return sum(x[0] * x[int(j)] for j in order) + chain

    x = np.random.default_rng(9).uniform(0.5, 1.5, 45)
    F = tape.trace(f, x)
    P = F.hessian_sparsity()
    assert P.has_sorted_indices and all(np.all(np.diff(P.indices[P.indptr[i]:P.indptr[i + 1]]) > 0)
                                        for i in range(45))
    assert np.array_equal(P.toarray() != 0, F.hessian(x) != 0)


def test_index_sets_do_not_depend_on_the_pool_it_starts_with():
    """extend_sets grows its pool between its kernel's calls: from one slot, the sets a plain Python union gives."""
    from tape.kernels.sparsity import DEPENDS_A, DEPENDS_B, extend_sets

    F = tape.trace(lambda x: sum(x[i] * x[(i * 7) % 40] + x[i] for i in range(40)), np.ones(40))
    column = np.full(len(F._op), -1, np.int64)
    column[F._input_rows] = np.arange(40)
    n = len(F._op)
    start, size = np.zeros(n, np.int64), np.zeros(n, np.int64)
    pool, used = extend_sets(F._op, F._in0, F._in1, DEPENDS_A, DEPENDS_B, column, np.ones(n, np.bool_), start, size,
                             np.empty(1, np.int64), 0, 0, n)
    sets: list[set] = []
    for i in range(n):
        k = F._op[i]
        sets.append({int(column[i])} if column[i] >= 0 else
                    (sets[F._in0[i]] if DEPENDS_A[k] else set()) | (sets[F._in1[i]] if DEPENDS_B[k] else set()))
        assert pool[start[i]:start[i] + size[i]].tolist() == sorted(sets[i])
    assert used <= len(pool)


FIRST_USE = """
import numpy as np
from numba.core import event
from tape.kernels import hessian_sparsity as h, sparsity as s

names = []
class Compiles(event.Listener):
    def on_start(self, ev):
        names.append(ev.data["dispatcher"].py_func.__module__ + "." + ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Compiles())
i, i32, x = np.zeros(3, np.int64), np.zeros(3, np.int32), np.zeros(3)
indptr, b, full = np.array([0, 1, 2, 3]), np.zeros(3, np.bool_), np.full(3, -1, np.int64)
s.gather_rows(i, i, i, i, indptr, i32)
s.color_columns(3, indptr, i32, indptr, i, i, full.copy(), np.full(4, -1, np.int64))
s.decompress(indptr, i32, i, 0, np.zeros((3, 1)), i, x)
s._extend_sets(i, i, i, b, b, i, b, i, i, i, 0, 0, 3)
h.reach(i, i, i, b, b, b, b, b, b, b, 0, 3)
h.star_coloring(3, indptr, i32, i, full.copy(), np.full(4, -1, np.int64))
h.recover(indptr, i32, i, np.zeros((3, 1)), x, np.zeros(2, np.int64), b.copy())
h._set_hashes(indptr, i, i.copy())
h._same_sets(indptr, i, i, i.copy())
print(" ".join(names))
"""


def test_the_sparsity_kernels_compile_no_numpy_function(tmp_path):
    """A sparse Jacobian's or Hessian's first use compiles its kernels and no NumPy function into them: np.zeros,
    np.full, np.empty, np.searchsorted came with Numba's overloads, 1.2 of 3.8 CPU-s in a cold first sparse_jacobian
    and sparse_hessian (their allocations are NumPy's, in the callers)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TAPE_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", FIRST_USE], env=env, check=True, capture_output=True, text=True)
    names = out.stdout.split()
    assert len(names) >= 9 and all(name.startswith("tape.kernels.") for name in names), names


@pytest.mark.parametrize("seed", range(4))
def test_pairs_of_one_pair_of_sets_are_made_once(seed, monkeypatch):
    """distinct_pairs past DISTINCT entries maps each pair of rows to the first rows of their sets: the products of
    the sets are the same entries as every pair's (random CSR rows of a few sets, repeated, in pairs), from fewer
    distinct pairs; rows whose hashes meet by chance (every row given row 0 as its candidate) each keep their own
    set."""
    from tape.kernels import hessian_sparsity

    rng = np.random.default_rng(seed)
    sets = [np.sort(rng.choice(40, size=rng.integers(0, 7), replace=False)) for _ in range(9)]
    rows = [sets[k] for k in rng.integers(0, len(sets), 300)]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    indices = np.concatenate(rows).astype(np.int64)
    u, w = rng.integers(0, len(rows), 2000), rng.integers(0, len(rows), 2000)
    want = {(i, j) for a, b in zip(u.tolist(), w.tolist(), strict=True) for i in rows[a] for j in rows[b]}
    every = hessian_sparsity.distinct_pairs(indptr, indices, u, w)
    monkeypatch.setattr(hessian_sparsity, "DISTINCT", 0)
    once = hessian_sparsity.distinct_pairs(indptr, indices, u, w)
    for a, b in (every, once):
        assert {(i, j) for s, t in zip(a.tolist(), b.tolist(), strict=True) for i in rows[s] for j in rows[t]} == want
    assert np.array_equal(every[0], u) and len(set(zip(*once, strict=True))) < len(set(zip(u, w, strict=True)))
    first = np.arange(len(rows))
    hessian_sparsity._same_sets(indptr, indices, np.zeros(len(rows), np.int64), first)
    assert all((first[r] == 0) == (np.array_equal(rows[r], rows[0]) and r > 0) or r == 0 for r in range(len(rows)))


MANY_POINTS = """
import resource, sys
import numpy as np
import tape
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
points, k = 10_000, 16
x = np.random.default_rng(4).normal(size=(points, 1))
def f(th):
    mu, logs, logits = th[:k], th[k:2 * k], th[2 * k:]
    z = (x - mu) * np.exp(-logs)
    return tape.logsumexp(logits - tape.logsumexp(logits) - 0.5 * z * z - logs, axis=1).sum()
th = np.random.default_rng(5).normal(size=3 * k) * 0.3
F = tape.trace(f, th)
S = F.sparse_hessian(th).toarray()
H = F.hessian(th)
e = 1e-6
D = np.array([(F.value_and_grad(th + e * d)[1] - F.value_and_grad(th - e * d)[1]) / (2 * e) for d in np.eye(3 * k)])
print(np.abs(S - H).max() / np.abs(H).max(), np.abs(S - D).max() / np.abs(H).max(), np.count_nonzero(S))
"""


def test_a_dense_hessian_of_many_points_takes_little_memory():
    """A Gaussian mixture's 48 parameters over 10^4 points (a logsumexp of 16 components a point): its sparse Hessian
    enumerated 829 million pairs of one set (6.2 GB: killed where memory ran out, a MemoryError under this 4 GB
    limit); it equals the dense one, and central differences of the gradient, and holds 48 x 48 entries."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", MANY_POINTS], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    dense, differences, count = out.stdout.split()
    assert float(dense) <= 1e-12 and float(differences) <= 1e-6 and int(count) == 48 * 48


SCALAR_LOOP = """
import resource
import numpy as np
import tape
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
n, steps = 1000, 120
def f(u):
    u = list(u)
    for _ in range(steps):
        u = [u[i] + 0.2 * (u[i - 1] + u[(i + 1) % n] - 2.0 * u[i]) for i in range(n)]
    return sum(v * v for v in u)
P = tape.trace(f, np.zeros(n).tolist()).hessian_sparsity().tocoo()
distance = np.abs(P.row - P.col)
print(P.nnz, int(np.minimum(distance, n - distance).max()))
"""


def test_a_scalar_time_loop_takes_little_memory():
    """A heat equation of scalar records (1,000 points, 120 steps: 603,000 records), its Hessian a band of 481: each
    pair of sets was listed (the final squares' 2.3 x 10^8 pairs), 1.8 GB at 80 steps, a MemoryError under this
    2 GB limit; the band by the stencil's reach."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", SCALAR_LOOP], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert list(map(int, out.stdout.split())) == [1000 * 481, 240]


def test_a_dense_pattern_is_not_colored(monkeypatch):
    """Where every input meets every other (a softmax's log-likelihood over 300 inputs), each input takes its own
    color without the star coloring, whose steps (n^3 here) cost more than the n sweeps it could save; a banded
    pattern is still colored. Both sparse Hessians equal the dense ones."""
    from tape.function import sparse_hessian as module

    calls = []
    monkeypatch.setattr(module, "symmetric_coloring", lambda *args, real=module.symmetric_coloring: calls.append(1)
                        or real(*args))
    x = np.random.default_rng(3).normal(size=300)
    F = tape.trace(lambda x: tape.logsumexp(x * np.linspace(0.5, 1.5, 300)) - x[7] + (x * x).sum() * 0.01, x)
    assert np.array_equal(F.hessian_colors(), np.arange(300)) and not calls
    assert np.allclose(F.sparse_hessian(x).toarray(), F.hessian(x), rtol=1e-13, atol=1e-15)
    G = tape.trace(lambda x: (tape.sin(x[1:] * x[:-1])).sum(), x)
    assert G.hessian_colors().max() + 1 <= 4 and calls
    assert np.allclose(G.sparse_hessian(x).toarray(), G.hessian(x), rtol=1e-13, atol=1e-15)
