"""cumsum, cumprod, sort, einsum, pad, item assignment and np.where on VarArrays, in both array forms.

Each is checked against NumPy on the values, against central differences and an
independently derived formula for the derivatives (first and second order), and through
a replayed tape.trace Function at other points.
"""

import math
import zlib

import numpy as np
import pytest
from reference import central

import tape
from tape.records import array_records
from tape.sweeps import plans


def _assigned(a):
    """Item assignment of every kind of key and value, the same code on an ndarray."""
    y = a.copy()
    y[1, 2] = a[0, 0] * 3.0  # an int key, a Var
    y[:, 0] = a[:, 3] * 2.0  # a slice, a VarArray
    y[np.array([0, 2]), np.array([1, 1])] = 0.5  # integer arrays, a number
    y[2, 1:3] = np.array([4.0, 5.0])  # a NumPy array
    y[np.eye(3, 4, dtype=bool)] = a[0, 1] * y[0, 3]  # a mask
    return y


FUNCTIONS = {  # name: (the same call on a VarArray or an ndarray, the shape of x)
    "cumsum": (lambda a: np.cumsum(a), (3, 4)),
    "cumsum axis 0": (lambda a: np.cumsum(a, axis=0), (3, 4)),
    "cumsum method axis -1": (lambda a: a.cumsum(-1), (3, 4)),
    "cumprod": (lambda a: np.cumprod(a), (3, 4)),
    "cumprod axis 1": (lambda a: a.cumprod(axis=1), (3, 4)),
    "cumprod axis 0 of 3-d": (lambda a: np.cumprod(a, 0), (3, 2, 2)),
    "sort": (lambda a: np.sort(a), (3, 4)),
    "sort axis 0": (lambda a: np.sort(a, axis=0), (3, 4)),
    "sort flat": (lambda a: np.sort(a, axis=None), (3, 4)),
    "einsum ij,jk->ik": (lambda a: np.einsum("ij,jk->ik", a, a.T), (3, 4)),
    "einsum ij,ij->": (lambda a: np.einsum("ij,ij->", a, a), (3, 4)),
    "einsum i,i->": (lambda a: np.einsum("i,i->", a[0], a[1]), (3, 4)),
    "einsum ij->ji": (lambda a: np.einsum("ij->ji", a), (3, 4)),
    "einsum ii->": (lambda a: np.einsum("ii->", a[:, :3] * a[:, 1:]), (3, 4)),
    "einsum ii->i": (lambda a: np.einsum("ii->i", a[:, 1:]), (3, 4)),
    "einsum ij->i": (lambda a: np.einsum("ij->i", a), (3, 4)),
    "einsum ij->j": (lambda a: np.einsum("ij->j", a * a), (3, 4)),
    "einsum bij,bjk->bik": (lambda a: np.einsum("bij,bjk->bik", a, np.swapaxes(a, 1, 2)), (2, 3, 2)),
    "einsum i,j->ij": (lambda a: np.einsum("i,j->ij", a[0], a[1]), (3, 4)),
    "einsum ij,j->i": (lambda a: np.einsum("ij,j->i", a, a[0]), (3, 4)),
    "einsum implicit ij,jk": (lambda a: np.einsum("ij,jk", a, a.T), (3, 4)),
    "einsum three operands": (lambda a: np.einsum("ij,jk,kl->il", a, a.T, a), (3, 4)),
    "einsum with an ndarray": (lambda a: np.einsum("ij,jk->ik", a, np.arange(8.0).reshape(4, 2)), (3, 4)),
    "pad constant": (lambda a: np.pad(a, 1), (3, 4)),
    "pad constant values": (lambda a: np.pad(a, ((1, 0), (2, 1)), constant_values=((-1.0, 2.0), (3.0, 4.0))), (3, 4)),
    "pad edge": (lambda a: np.pad(a, (2, 1), mode="edge"), (3, 4)),
    "pad reflect": (lambda a: np.pad(a, ((1, 2), (3, 0)), mode="reflect"), (3, 4)),
    "pad wrap": (lambda a: np.pad(a, 2, mode="wrap"), (3, 4)),
    "where": (lambda a: np.where(a > 0.0, a * a, -a), (3, 4)),
    "assigned": (_assigned, (3, 4)),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_array_functions_are_numpys_and_differentiate_in_every_sweep(form, name):
    fn, shape = FUNCTIONS[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))  # (hash() of a str changes with every process)
    x = rng.normal(size=shape)
    ref = np.asarray(fn(x))
    w = rng.normal(size=ref.shape)

    def loss(z):  # linear and quadratic terms: the hessian sees the function's own curvature too
        y = fn(z)
        return (y * w).sum() + 0.25 * (y * y).sum() if np.ndim(ref) else y * 1.5 + 0.25 * y * y

    def by_numpy(z):
        return float(loss(z))

    t = tape.Tape()
    X = t.array(x)
    Y = fn(X)
    assert np.shape(Y) == ref.shape
    np.testing.assert_allclose(np.asarray(Y.value), ref, rtol=1e-13, atol=1e-15)
    F = tape.trace(loss, x)
    value, g = F.value_and_grad(x)
    assert value == pytest.approx(by_numpy(x), rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(g, central(by_numpy, x), rtol=1e-6, atol=1e-8)
    v = rng.normal(size=shape)
    assert F.jvp(x, v) == pytest.approx(float(np.sum(g * v)), rel=1e-11, abs=1e-12)
    hv = F.hvp(x, v)
    np.testing.assert_allclose(hv, (F.gradient(x + 1e-6 * v) - F.gradient(x - 1e-6 * v)) / 2e-6, rtol=1e-5,
                               atol=1e-7)
    H = F.hessian(x)
    np.testing.assert_allclose(H.reshape(x.size, x.size) @ v.ravel(), hv.ravel(), rtol=1e-10, atol=1e-10)
    y = rng.normal(size=shape)  # replayed elsewhere: sort orders, where picks and pads read the new values
    assert F(y) == pytest.approx(by_numpy(y), rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(F.gradient(y), central(by_numpy, y), rtol=1e-6, atol=1e-8)


# -- the scans: formulas derived by hand ------------------------------------------------------------


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_a_scan_of_one_element_or_none(form, name):
    t = tape.Tape()
    X = t.array(np.array([[2.5], [1.5]]))
    np.testing.assert_array_equal(getattr(X, name)(axis=1).value, [[2.5], [1.5]])
    np.testing.assert_array_equal(t.gradient(getattr(np, name)(X, 1).sum(), X), [[1.0], [1.0]])
    assert getattr(np, name)(t.array(np.zeros((2, 0))), axis=1).shape == (2, 0)


def test_cumsums_jacobian_is_a_triangle_of_ones(form):
    F = tape.trace(lambda v: np.cumsum(v), np.zeros(6))
    for mode in ("forward", "reverse"):
        np.testing.assert_array_equal(F.jacobian(np.arange(6.0), mode=mode), np.tril(np.ones((6, 6))))
    G = tape.trace(lambda v: v.cumsum(axis=0), np.zeros((3, 2)))  # along axis 0: a triangle per column
    np.testing.assert_array_equal(G.jacobian(np.ones((3, 2))).reshape(6, 6), np.kron(np.tril(np.ones((3, 3))),
                                                                                      np.eye(2)))
    H = tape.trace(lambda v: (np.cumsum(v) ** 2).sum(), np.zeros(5))  # Σ_k (Σ_{j<=k} x_j)^2
    np.testing.assert_array_equal(H.hessian(np.ones(5)), 2.0 * (5 - np.maximum.outer(np.arange(5), np.arange(5))))
    values = np.array([1.0, np.inf, 2.0, -np.inf])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(tape.Tape().array(values).cumsum().value, np.cumsum(values))


def _cumprod_derivatives(a, w):
    """The gradient and hessian of Σ_k w_k Π_{m<=k} a_m by products over the index sets themselves."""
    n = len(a)
    g, H = np.zeros(n), np.zeros((n, n))
    for k in range(n):
        for i in range(k + 1):
            g[i] += w[k] * math.prod(a[m] for m in range(k + 1) if m != i)
            for j in range(k + 1):
                if j != i:
                    H[i, j] += w[k] * math.prod(a[m] for m in range(k + 1) if m not in (i, j))
    return g, H


ZEROS = [[2.0, 0.0, 3.0, -1.5, 5.0], [0.0, 2.0, 3.0], [2.0, 0.0, 3.0, 0.0, 5.0], [1.5, -0.0, 2.0, 0.0],
         [0.0, 0.0, 0.0], [2.0, 3.0, 0.0], [0.5, -2.0, 3.0]]


@pytest.mark.parametrize("a", ZEROS, ids=str)
def test_cumprods_derivatives_are_exact_with_zeros(form, a):
    a = np.array(a)
    w = np.arange(1.0, 1.0 + len(a))
    g, H = _cumprod_derivatives(a, w)
    F = tape.trace(lambda v: (np.cumprod(v) * w).sum(), np.ones(len(a)))
    assert F(a) == float((np.cumprod(a) * w).sum())
    np.testing.assert_allclose(F.gradient(a), g, rtol=1e-15, atol=0)
    np.testing.assert_allclose(F.hessian(a), H, rtol=1e-15, atol=0)
    np.testing.assert_allclose(F.jacobian(a, mode="forward"), g, rtol=1e-15, atol=0)
    J = tape.trace(lambda v: v.cumprod(), a).jacobian(a)  # row k: Π_{m<=k, m!=j} a_m for j <= k
    by_hand = [[math.prod(a[m] for m in range(k + 1) if m != j) if j <= k else 0.0 for j in range(len(a))]
               for k in range(len(a))]
    np.testing.assert_allclose(J, by_hand, rtol=1e-15, atol=0)
    assert not np.any(np.isnan(J))


def test_cumprod_along_an_axis_of_a_large_array_with_zeros():
    rng = np.random.default_rng(5)
    x = rng.uniform(0.5, 1.5, (300, 8))
    x[rng.random(x.shape) < 0.2] = 0.0
    w = rng.normal(size=x.shape)
    g = tape.grad(lambda v: (np.cumprod(v, axis=1) * w).sum())(x)  # 2,400 elements: array records
    for row in range(0, 300, 37):
        np.testing.assert_allclose(g[row], _cumprod_derivatives(x[row], w[row])[0], rtol=1e-14, atol=1e-300)


# -- sort --------------------------------------------------------------------------------------------


def test_sort_sends_each_adjoint_to_the_element_sorted_there_and_ties_keep_their_order(form):
    x = np.array([3.0, 1.0, 2.0, 1.0, -0.0, 0.0])
    w = np.arange(1.0, 7.0)
    F = tape.trace(lambda v: (np.sort(v) * w).sum(), x)
    np.testing.assert_array_equal(F.gradient(x), [6.0, 3.0, 5.0, 4.0, 1.0, 2.0])  # stable: first 1 first
    for y in (np.array([0.0, 5.0, -1.0, 2.0, 7.0, -3.0]), np.array([9.0, 8.0, 7.0, 6.0, 5.0, 4.0])):
        assert F(y) == float((np.sort(y) * w).sum())  # the permutation is recomputed: not the recorded one
        by_hand = np.empty(6)
        by_hand[np.argsort(y, kind="stable")] = w
        np.testing.assert_array_equal(F.gradient(y), by_hand)
        np.testing.assert_array_equal(F.jacobian(y, mode="forward"), by_hand)
    S = tape.trace(lambda v: (np.sort(v) ** 2 * w).sum(), x)  # curvature: 2 w at each element's rank
    y = np.array([0.5, -1.0, 2.0, 0.25, 3.0, -2.0])
    rank = np.empty(6, int)
    rank[np.argsort(y, kind="stable")] = np.arange(6)
    np.testing.assert_array_equal(S.hessian(y), np.diag(2.0 * w[rank]))
    points = np.stack([y, -y, y[::-1]])
    values, grads = S.map_value_and_grad(points)
    for p, value, grad in zip(points, values, grads, strict=True):
        assert value == S(p)
        np.testing.assert_array_equal(grad, S.gradient(p))


def test_sort_puts_nan_last_and_argsort_argmax_and_argmin_answer_plain_ints(form):
    t = tape.Tape()
    X = t.array(np.array([2.0, np.nan, -1.0, np.inf]))
    Y = np.sort(X)
    np.testing.assert_array_equal(Y.value, [-1.0, 2.0, np.inf, np.nan])
    np.testing.assert_array_equal(t.gradient((Y * np.array([1.0, 2.0, 3.0, 4.0])).sum(), X), [2.0, 4.0, 1.0, 3.0])
    order = np.argsort(X)
    assert order.dtype.kind == "i" and order.tolist() == [2, 0, 3, 1]
    M = t.array(np.array([[3.0, 1.0], [0.0, 2.0]]))
    assert np.argsort(M, axis=0).tolist() == [[1, 0], [0, 1]] and M.argsort(axis=None).tolist() == [2, 1, 3, 0]
    assert np.argmax(X) == np.argmin(X) == 1 and isinstance(np.argmax(X), np.integer)  # (NumPy's: a NaN first)
    assert np.argmax(M, axis=0).tolist() == [0, 1] and M.argmin(axis=1, keepdims=True).tolist() == [[1], [0]]
    u = t.array(np.array([0.5, 3.0, -2.0, 3.0]))
    np.testing.assert_array_equal(t.gradient(u[np.argmax(u)] * 2.0 + u[u.argmin()], u), [0.0, 2.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="out"):
        np.argmax(u, out=np.empty((), np.intp))
    M.sort(axis=0)  # in place, as ndarray.sort
    np.testing.assert_array_equal(M.value, [[0.0, 1.0], [3.0, 2.0]])
    with pytest.raises(ValueError, match="order"):
        np.sort(M, order="x")
    with pytest.raises(ValueError, match="0-d"):
        np.sort(t.array(np.array(1.0)), axis=0)


# -- item assignment ---------------------------------------------------------------------------------


def test_item_assignment_is_functional_and_sends_adjoints_to_kept_elements_and_values(form):
    t = tape.Tape()
    x = np.arange(12.0).reshape(3, 4)
    X = t.array(x)
    v = t.var(10.0)
    Y = X.copy()
    before = Y[0]  # a view taken before: keeps the old records (NumPy would write through)
    Y[0, 1] = v
    Y[1] = np.array([1.0, 2.0, 3.0, 4.0])
    Y[:, 3] = v * 2.0
    np.testing.assert_array_equal(X.value, x)  # the copied array is unchanged
    np.testing.assert_array_equal(before.value, x[0])
    expected = x.copy()
    expected[0, 1], expected[1], expected[:, 3] = 10.0, [1.0, 2.0, 3.0, 4.0], 20.0
    np.testing.assert_array_equal(Y.value, expected)
    w = np.arange(1.0, 13.0).reshape(3, 4)
    s = (Y * w).sum()
    kept = np.ones((3, 4))
    kept[0, 1] = kept[1] = kept[:, 3] = 0.0
    np.testing.assert_array_equal(t.gradient(s, X), w * kept)
    assert t.gradient(s, v) == w[0, 1] + 2.0 * (w[0, 3] + w[1, 3] + w[2, 3])
    Z = Y.copy()
    Z[0, 0] = 99.0
    assert Y.value[0, 0] == 0.0 and Z.value[0, 0] == 99.0  # copies share nothing


def test_item_assignment_replays_in_a_traced_function(form):
    def f(v):
        y = v * 1.0
        y[::2] = v[1::2] ** 2
        y[np.array([1, 1])] = 3.0  # a repeated integer index: the last write, as NumPy
        return (y * np.arange(1.0, 7.0)).sum()

    x = np.array([0.5, -1.0, 2.0, 0.25, 3.0, 1.5])
    F = tape.trace(f, x)
    for p in (x, -x, x[::-1]):
        ref = lambda z: float((np.concatenate([[z[1] ** 2, 3.0, z[3] ** 2, z[3], z[5] ** 2, z[5]]])  # noqa: E731
                               * np.arange(1.0, 7.0)).sum())
        assert F(p) == pytest.approx(ref(p), rel=1e-14)
        np.testing.assert_allclose(F.gradient(p), central(ref, p), rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(F.hessian(p), np.diag([0.0, 2.0, 0.0, 6.0, 0.0, 10.0]), atol=1e-12)


def test_item_assignment_errors(form):
    t = tape.Tape()
    X = t.array(np.zeros((2, 3)))
    with pytest.raises(TypeError, match="not with recorded values"):
        X[X > 0] = 1.0
    with pytest.raises(ValueError, match="broadcast"):
        X[0] = np.ones(2)
    with pytest.raises(TypeError, match="not str"):
        X[0, 0] = "1"
    with pytest.raises(tape.ForeignHandleError):
        X[0, 0] = tape.Tape().var(1.0)
    with pytest.raises(IndexError):
        X[5] = 1.0


# -- np.where, einsum and pad refusals, the NumPy functions tape has not -----------------------------


def test_numpy_where_is_tape_where_for_vars_and_arrays(form):
    t = tape.Tape()
    a, b = t.var(2.0), t.var(-1.0)
    z = np.where(a > b, a * b, b)
    assert type(z) is tape.Var and z.value == -2.0 and t.gradient(z, [a, b]).tolist() == [-1.0, 2.0]
    X = t.array(np.array([1.0, -2.0, 3.0]))
    W = np.where(X > 0.0, X ** 2, 0.0)
    np.testing.assert_array_equal(W.value, [1.0, 0.0, 9.0])
    np.testing.assert_array_equal(t.gradient(W.sum(), X), [2.0, 0.0, 6.0])
    with pytest.raises(TypeError, match="np.nonzero"):
        np.where(X)
    with pytest.raises(TypeError, match="np.nonzero"):
        np.where(a)
    assert np.sum(a) is a and np.shape(a) == ()  # other NumPy functions of a Var: NumPy's own


@pytest.mark.parametrize("call, error, match", [
    (lambda X: np.einsum("...ij->ji", X), ValueError, "ellipsis"),
    (lambda X: np.einsum("ij,jk->ik", X), ValueError, "do not fit"),
    (lambda X: np.einsum("ij->k", X), ValueError, "not among the inputs"),
    (lambda X: np.einsum("ijk->i", X), ValueError, "dimensions"),
    (lambda X: np.einsum("ij,ij->", X, X.T), ValueError, "sizes"),
    (lambda X: np.einsum(X, [0, 1]), TypeError, "interleaved"),
    (lambda X: np.pad(X, 1, mode="mean"), ValueError, "mode 'mean'"),
    (lambda X: np.pad(X, 1, mode="reflect", reflect_type="odd"), ValueError, "reflect_type"),
    (lambda X: np.pad(X, 1, constant_values=X[0, 0]), TypeError, "numbers"),
    (lambda X: np.cumsum(X, dtype=np.int64), ValueError, "dtype"),
    (lambda X: np.fft.fft(X), TypeError, "numpy.fft is not supported"),
    (lambda X: np.linalg.eig(X), TypeError, "numpy.eig is not supported"),
    (lambda X: np.convolve(X[0], X[1]), TypeError, "numpy.convolve is not supported"),
])
def test_what_is_refused_names_itself(form, call, error, match):
    X = tape.Tape().array(np.ones((2, 3)))
    with pytest.raises(error, match=match):
        call(X)


# -- the file format ---------------------------------------------------------------------------------


def test_scan_and_sort_records_save_load_and_are_checked(tmp_path):
    def f(v):
        return (np.sort(v, axis=0) * np.cumprod(v, axis=1)).sum() + (np.cumsum(v) ** 2).sum()

    x = np.random.default_rng(8).normal(size=(40, 30))
    F = tape.trace(f, x)
    F.save(tmp_path / "f.tape")
    G = tape.load(tmp_path / "f.tape")
    y = np.random.default_rng(9).normal(size=x.shape)
    assert G(y) == F(y)
    np.testing.assert_array_equal(G.gradient(y), F.gradient(y))
    table, places = plans.encode(F._plans)
    row = next(k for k, p in enumerate(F._plans) if p.name == "sort")
    for mask in (0, 0b11, 1 << 5):  # no axis, two axes, an axis past the dimensions
        broken = table.copy()
        broken[row, 3] = mask
        with pytest.raises(tape.TapeFormatError, match="sort along axes"):
            plans.decode(broken, places, F._op, F._in0, F._in1)


def test_a_constant_pad_of_an_array_record_is_a_join_per_padded_axis(monkeypatch):
    """Not a constant of the padded size, a mask and a select: a join per axis that has a pad, its constant
    slabs spanning the pads of the axes before it (corners take the later axis's number, as NumPy's)."""
    monkeypatch.setattr(array_records, "SMALL", 1)
    x = np.arange(12.0).reshape(3, 4)
    F = tape.trace(lambda a: np.pad(a, ((1, 2), (0, 1)), constant_values=((5.0, 6.0), (7.0, 8.0))), x)
    ops = F.stats()["by_op"]
    assert ops["array join"] == 2 and "array select" not in ops and "array gather" not in ops
    np.testing.assert_array_equal(F(x), np.pad(x, ((1, 2), (0, 1)), constant_values=((5.0, 6.0), (7.0, 8.0))))
