"""Array records: one record per array op, checked against central differences, hand-derived
references written here (not read from kernels/array_ops.py), and the same program on scalar records."""

import io
import math
import operator
import subprocess
import sys
import warnings

import numpy as np
import pytest
from reference import central, digamma, second_pair

import tape
from tape.arrays import small as _small
from tape.records import array_records
from tape.sweeps import compiled

RNG = np.random.default_rng(11)


@pytest.fixture(params=["array", "scalar"])
def form(request, monkeypatch):
    """Every test runs with array records for every size, then with scalar records for every size."""
    monkeypatch.setattr(array_records, "SMALL", 1 if request.param == "array" else 10**12)
    return request.param


@pytest.fixture
def arrays(monkeypatch):
    monkeypatch.setattr(array_records, "SMALL", 1)


def n_arrays(F):
    return sum(c for name, c in F.stats()["by_op"].items() if name.startswith("array "))


def test_articles_broadcast_example(form):
    """Y = X + b with X (2, 3), b (3,), upstream gradient Ȳ: b̄ = [4, 1, 2], X̄ = Ȳ."""
    t = tape.Tape()
    X, b = t.array([[10.0, 20, 30], [40, 50, 60]]), t.array([1.0, 2, 3])
    Ybar = np.array([[1.0, 0, 2], [3, 1, 0]])
    Y = X + b
    assert Y.value.tolist() == [[11, 22, 33], [41, 52, 63]]
    loss = (Y * Ybar).sum()
    assert t.gradient(loss, b).tolist() == [4, 1, 2]
    assert t.gradient(loss, X).tolist() == Ybar.tolist()


UNARY = {  # name: (numpy forward, derivative written by hand, domain)
    "exp": (np.exp, np.exp, (-3, 3)),
    "log": (np.log, lambda x: 1 / x, (0.1, 3)),
    "sqrt": (np.sqrt, lambda x: 0.5 / np.sqrt(x), (0.1, 3)),
    "sin": (np.sin, np.cos, (-3, 3)),
    "cos": (np.cos, lambda x: -np.sin(x), (-3, 3)),
    "tan": (np.tan, lambda x: 1 / np.cos(x) ** 2, (-1.2, 1.2)),
    "tanh": (np.tanh, lambda x: 1 / np.cosh(x) ** 2, (-3, 3)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2, (-5, 5)),
    "relu": (lambda x: np.maximum(x, 0), lambda x: (x > 0) * 1.0, (-3, 3)),
    "abs": (np.abs, np.sign, (-3, 3)),
    # the rarer ops: NumPy's forward, derivatives by hand (erf and lgamma through Python's math)
    "log1p": (np.log1p, lambda x: 1 / (1 + x), (-0.9, 3)),
    "expm1": (np.expm1, np.exp, (-3, 3)),
    "exp2": (np.exp2, lambda x: np.log(2) * np.exp2(x), (-3, 3)),
    "log2": (np.log2, lambda x: 1 / (x * np.log(2)), (0.1, 3)),
    "log10": (np.log10, lambda x: 1 / (x * np.log(10)), (0.1, 3)),
    "cbrt": (np.cbrt, lambda x: np.abs(x) ** (-2 / 3) / 3, (0.2, 3)),
    "arcsin": (np.arcsin, lambda x: 1 / np.sqrt(1 - x * x), (-0.9, 0.9)),
    "arccos": (np.arccos, lambda x: -1 / np.sqrt(1 - x * x), (-0.9, 0.9)),
    "arctan": (np.arctan, lambda x: 1 / (1 + x * x), (-3, 3)),
    "sinh": (np.sinh, np.cosh, (-3, 3)),
    "cosh": (np.cosh, np.sinh, (-3, 3)),
    "arcsinh": (np.arcsinh, lambda x: 1 / np.sqrt(1 + x * x), (-3, 3)),
    "arccosh": (np.arccosh, lambda x: 1 / np.sqrt(x * x - 1), (1.1, 4)),
    "arctanh": (np.arctanh, lambda x: 1 / (1 - x * x), (-0.9, 0.9)),
    "erf": (np.vectorize(math.erf), lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x), (-2, 2)),
    "erfc": (np.vectorize(math.erfc), lambda x: -2 / np.sqrt(np.pi) * np.exp(-x * x), (-2, 2)),
    "lgamma": (np.vectorize(math.lgamma), np.vectorize(digamma), (0.3, 6)),
    **{name: (getattr(np, name), lambda x: 0 * x, (-3, 3)) for name in ("floor", "ceil", "trunc", "rint", "sign")},
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_against_references(name, form):
    forward, derivative, (lo, hi) = UNARY[name]
    x = RNG.uniform(lo, hi, (3, 5))
    w = RNG.normal(size=(3, 5))
    fn = getattr(tape, name) if hasattr(tape, name) else getattr(np, {"abs": "abs"}[name])
    F = tape.trace(lambda X: (fn(X) * w).sum(), x)
    assert (n_arrays(F) > 0) == (form == "array")
    value, grad = F.value_and_grad(x)
    assert value == pytest.approx(np.sum(forward(x) * w), rel=1e-12)
    np.testing.assert_allclose(grad, w * derivative(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad, central(lambda z: np.sum(forward(z) * w), x), rtol=1e-5, atol=1e-6)
    v = RNG.normal(size=x.shape)
    assert F.jvp(x, v) == pytest.approx(np.sum(grad * v), rel=1e-10, abs=1e-12)
    hv = F.hvp(x, v)  # d/dh of the reference gradient along v
    ref = (w * derivative(x + 1e-5 * v) - w * derivative(x - 1e-5 * v)) / 2e-5
    if name not in ("relu", "abs"):
        np.testing.assert_allclose(hv, ref, rtol=1e-4, atol=1e-5)


BINARY = {  # name: (numpy forward, d/da, d/db)
    "add": (np.add, lambda a, b: np.ones_like(a + b), lambda a, b: np.ones_like(a + b)),
    "sub": (np.subtract, lambda a, b: np.ones_like(a + b), lambda a, b: -np.ones_like(a + b)),
    "mul": (np.multiply, lambda a, b: b + 0 * a, lambda a, b: a + 0 * b),
    "div": (np.divide, lambda a, b: 1 / b + 0 * a, lambda a, b: -a / b**2),
    "pow": (np.power, lambda a, b: b * a ** (b - 1), lambda a, b: a**b * np.log(a)),
    "maximum": (np.maximum, lambda a, b: (a > b) * 1.0, lambda a, b: (b > a) * 1.0),
    "minimum": (np.minimum, lambda a, b: (a < b) * 1.0, lambda a, b: (b < a) * 1.0),
    "arctan2": (np.arctan2, lambda a, b: b / (a * a + b * b), lambda a, b: -a / (a * a + b * b)),
    "hypot": (np.hypot, lambda a, b: a / np.sqrt(a * a + b * b), lambda a, b: b / np.sqrt(a * a + b * b)),
    "logaddexp": (np.logaddexp, lambda a, b: 1 / (1 + np.exp(b - a)), lambda a, b: 1 / (1 + np.exp(a - b))),
    "fmax": (np.fmax, lambda a, b: (a > b) * 1.0, lambda a, b: (b > a) * 1.0),
    "fmin": (np.fmin, lambda a, b: (a < b) * 1.0, lambda a, b: (b < a) * 1.0),
}
UFUNC = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide, "pow": np.power,
         **{name: getattr(np, name) for name in BINARY if hasattr(np, name)}}
SHAPES = [((4, 3), (3,)), ((3,), (4, 3)), ((4, 1), (1, 3)), ((2, 1, 3), (4, 1)), ((), (5,)), ((5,), ())]


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_binary_ops_broadcast_and_sum_back(name, shapes, form):
    forward, da, db = BINARY[name]
    a, b = RNG.uniform(0.5, 2, shapes[0]), RNG.uniform(0.5, 2, shapes[1])
    out_shape = np.broadcast_shapes(*shapes)
    w = RNG.normal(size=out_shape)
    t = tape.Tape()
    A, B = t.array(a), t.array(b)
    y = (UFUNC[name](A, B) * w).sum()
    ga, gb = t.gradient(y, A), t.gradient(y, B)
    assert np.shape(ga) == a.shape and np.shape(gb) == b.shape  # summed back to each input's shape
    full_a, full_b = w * da(a, b), w * db(a, b)
    np.testing.assert_allclose(ga, _sum_to(full_a, a.shape), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gb, _sum_to(full_b, b.shape), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ga, central(lambda z: np.sum(forward(z, b) * w), a), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["arctan2", "hypot", "logaddexp", "fmax", "fmin"])
def test_grouped_binary_ops_tangents_and_hessians(name, form):
    """The ops of ops.GROUPED_PAIRS (array records: by the scalar kernel, pair_rule): gradient, jvp
    and hvp against the partials and Hessians written out in the tests."""
    x = np.stack([RNG.uniform(0.3, 2, 6), RNG.uniform(-2, -0.3, 6)])  # no ties
    w, v = RNG.normal(size=6), RNG.normal(size=x.shape)
    F = tape.trace(lambda X: (getattr(tape, name)(X[0], X[1]) * w).sum(), x)
    assert (n_arrays(F) > 0) == (form == "array")
    _, da, db = BINARY[name]
    grad = F.gradient(x)
    np.testing.assert_allclose(grad, [w * da(*x), w * db(*x)], rtol=1e-12, atol=1e-15)
    assert F.jvp(x, v) == pytest.approx(np.sum(grad * v), rel=1e-12)
    H = np.array([second_pair(name, a, b) for a, b in x.T]) * w[:, None, None]  # one 2x2 block per element
    np.testing.assert_allclose(F.hvp(x, v), np.einsum("kij,jk->ik", H, v), rtol=1e-12, atol=1e-15)


def _sum_to(c, shape):
    """Written here without the library's helper: sum c over axes until it has ``shape``."""
    while c.ndim > len(shape):
        c = c.sum(axis=0)
    for k, n in enumerate(shape):
        if n == 1 and c.shape[k] != 1:
            c = c.sum(axis=k, keepdims=True)
    return c


@pytest.mark.parametrize("shapes", [((4, 3), (3, 5)), ((3,), (3, 5)), ((4, 3), (3,)), ((3,), (3,)),
                                    ((2, 4, 3), (3, 5)), ((2, 4, 3), (2, 3, 5)), ((1, 4, 3), (2, 3, 5))], ids=str)
def test_matmul_rules(shapes, form):
    """A' = Ȳ Bᵀ and B' = Aᵀ Ȳ (batch axes summed back), for 1-d, 2-d and batched operands."""
    a, b = RNG.normal(size=shapes[0]), RNG.normal(size=shapes[1])
    y = a @ b
    w = RNG.normal(size=np.shape(y))
    t = tape.Tape()
    A, B = t.array(a), t.array(b)
    out = A @ B
    loss = (out * w).sum() if np.ndim(y) else out * float(w)
    np.testing.assert_allclose(np.asarray(out.value), y, rtol=1e-12)
    ga, gb = t.gradient(loss, A), t.gradient(loss, B)
    A2 = a.reshape(1, -1) if a.ndim == 1 else a
    B2 = b.reshape(-1, 1) if b.ndim == 1 else b
    W2 = np.reshape(w, np.broadcast_shapes(A2.shape[:-2], B2.shape[:-2]) + (A2.shape[-2], B2.shape[-1]))
    np.testing.assert_allclose(ga, _sum_to(W2 @ np.swapaxes(B2, -1, -2), A2.shape).reshape(a.shape), rtol=1e-10)
    np.testing.assert_allclose(gb, _sum_to(np.swapaxes(A2, -1, -2) @ W2, B2.shape).reshape(b.shape), rtol=1e-10)


def test_reductions_views_and_gathers(arrays):
    x = RNG.normal(size=(4, 5, 3))
    w = RNG.normal(size=(5,))

    def f(X):
        s = X.sum(axis=(0, 2)) * w  # (5,)
        m = X.mean(axis=1, keepdims=True)  # (4, 1, 3)
        v = X[1:, ::2, 0].T  # a view: (3, 3)
        g = X[[0, 2, 2], 1]  # a gather with a repeated row: (3, 3)
        r = X.reshape(20, 3)[5:9]  # reshape of a contiguous record: a view
        return s.sum() + (m * m).sum() + (v * g).sum() + tape.logsumexp(r, axis=1).sum()

    def reference(z):
        s = z.sum(axis=(0, 2)) * w
        m = z.mean(axis=1, keepdims=True)
        v, g = z[1:, ::2, 0].T, z[[0, 2, 2], 1]
        r = z.reshape(20, 3)[5:9]
        return s.sum() + (m * m).sum() + (v * g).sum() + np.log(np.exp(r).sum(axis=1)).sum()

    F = tape.trace(f, x)
    stats = F.stats()["by_op"]
    assert stats.get("array gather", 0) == 1 and "array logsumexp" in stats
    value, grad = F.value_and_grad(x)
    assert value == pytest.approx(reference(x), rel=1e-12)
    np.testing.assert_allclose(grad, central(reference, x), rtol=1e-6, atol=1e-7)
    v = RNG.normal(size=x.shape)
    H = central(lambda z: F.gradient(z).ravel() @ v.ravel(), x, 1e-5)
    np.testing.assert_allclose(F.hvp(x, v), H, rtol=1e-4, atol=1e-6)


def test_logsumexp_does_not_overflow(arrays):
    x = np.array([1000.0, 1000.0, -np.inf, 999.0])
    t = tape.Tape()
    X = t.array(x)
    y = tape.logsumexp(X)
    assert y.value == pytest.approx(1000 + np.log(2 + np.exp(-1)))
    g = t.gradient(y, X)
    np.testing.assert_allclose(g, np.exp(x - y.value))
    assert g[2] == 0.0


@pytest.mark.parametrize("shape, axis", [((100, 3), 1), ((3, 100), 0), ((8, 100), 1), ((5, 40, 3), 2)])
def test_logsumexp_along_an_axis_at_edge_rows(arrays, shape, axis):
    """Lines of NaN, ±inf, all -inf, ±0 and huge numbers: y bit for bit log Σ exp(a - max) + max (max 0 where not
    finite), whether the max is found line by line or element by element (many short lines); the gradient's
    finite lines by central differences."""
    lines = RNG.normal(size=(math.prod(shape) // shape[axis], shape[axis]))
    for k, row in enumerate(([np.nan], [np.inf], [-np.inf] * shape[axis], [0.0, -0.0], [-0.0, 0.0], [1e308, 1e308])):
        lines[k, :len(row)] = row
    a = np.moveaxis(lines.reshape(*np.delete(shape, axis), shape[axis]), -1, axis)
    with np.errstate(all="ignore"):
        top = np.max(a, axis=axis, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        want = np.log(np.sum(np.exp(a - top), axis=axis, keepdims=True)) + top
        assert tape.trace(lambda x: tape.logsumexp(x, axis=axis, keepdims=True), a)(a).tobytes() == want.tobytes()
    b, weights = RNG.normal(size=shape), np.linspace(0.5, 1.5, math.prod(shape) // shape[axis])
    G = tape.trace(lambda x: (tape.logsumexp(x, axis=axis) * weights.reshape(np.delete(shape, axis))).sum(), b)
    np.testing.assert_allclose(G.gradient(b), central(lambda x: float(G(x)), b), rtol=1e-6, atol=1e-7)


def test_logsumexp_adjoint_keeps_structural_zeros(arrays):
    """An inf adjoint times a softmax of 0 (an element at -inf) sends 0, not NaN; inf to the others."""
    x = np.array([[0.0, -np.inf, 1.0], [2.0, 2.0, -np.inf]])
    F = tape.trace(lambda X: (tape.logsumexp(X, axis=1) * np.inf).sum(), x)
    with np.errstate(all="ignore"):
        _, g = F.value_and_grad(x)
    assert g.tolist() == [[np.inf, 0.0, np.inf], [np.inf, np.inf, 0.0]]


def test_where_never_leaks_nan_from_the_unselected_side(arrays):
    """where(x > 0, sqrt(x), 0) at [-1, 0, 4]: gradient [0, 0, 0.25] (JAX gives [nan, nan, 0.25])."""
    x = np.tile([-1.0, 0.0, 4.0], 30)
    F = tape.trace(lambda X: tape.where(X > 0, tape.sqrt(X), 0.0).sum(), x)
    assert n_arrays(F) > 0
    assert F.gradient(x)[:3].tolist() == [0.0, 0.0, 0.25]
    t = tape.Tape()
    X = t.array(x)
    y = (tape.where(X > 1, X / (X - 4.0), 0.0) * 0.0 + X).sum()  # 0 * inf partials: never NaN
    assert np.all(np.isfinite(t.gradient(y, X)))


@pytest.mark.parametrize("driven", [True, False])
def test_a_zero_adjoint_through_a_matmul_sends_nothing_where_a_factor_is_inf(arrays, monkeypatch, driven):
    """(W @ v)[0] with an inf in W's second row, whose adjoint is 0: the products the matmul sends go unchecked for
    0 * inf, and a gradient with a NaN is swept again, checked: dL/dv is W's first row, dL/dW [v, 0] (by hand)."""
    monkeypatch.setattr(compiled, "ready", lambda s, runs: driven)
    f = lambda x: (x[:6].reshape(2, 3) @ x[6:9])[0]  # noqa: E731
    F = tape.trace(f, np.arange(1.0, 10.0))
    for W in ([1.0, 2.0, 3.0, np.inf, 5.0, 6.0], [0.5, -0.0, 7.0, 1.0, -np.inf, np.inf]):
        x = np.array([*W, 0.25, -2.0, 3.0])
        for value, grad in (F.value_and_grad(x), tape.value_and_grad(f)(x)):
            assert value == x[0] * 0.25 + x[1] * -2.0 + x[2] * 3.0
            assert grad.tolist() == [0.25, -2.0, 3.0, 0.0, 0.0, 0.0, *W[:3]]


@pytest.mark.parametrize("driven", [True, False])
def test_huge_gradients_warn_of_nothing(arrays, monkeypatch, driven):
    """A gradient of 1e300s (its squares overflow) replayed and afresh: exact, and no RuntimeWarning reaches the
    user (the unchecked sweep's NaN test must not overflow)."""
    monkeypatch.setattr(compiled, "ready", lambda s, runs: driven)
    f = lambda x: (x * 1e300).sum()  # noqa: E731
    F = tape.trace(f, np.ones(3000))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for value, grad in (F.value_and_grad(np.ones(3000)), tape.value_and_grad(f)(np.ones(3000))):
            assert value == pytest.approx(3e303, rel=1e-13) and np.all(grad == 1e300)


def test_array_records_and_scalar_records_give_the_same_numbers(monkeypatch):
    x = RNG.uniform(0.2, 2.0, (6, 7))
    W = RNG.normal(size=(7, 4))

    def f(X):
        h = tape.tanh(X @ W) * tape.exp(-X[:, :4] ** 2)
        return (tape.sigmoid(h) / (1.0 + X[:, 1:5])).sum() + tape.maximum(X, 1.0).sum()

    results = []
    for small in (1, 10**12):
        monkeypatch.setattr(array_records, "SMALL", small)
        F = tape.trace(f, x)
        v = RNG.normal(size=x.shape)
        results.append((F(x), F.gradient(x), F.hvp(x, x * 0 + 1.0), F.jvp(x, v), v))
    (v1, g1, h1, j1, _), (v2, g2, h2, j2, _) = results
    assert v1 == pytest.approx(v2, rel=1e-14)  # sums are added in another order: the last bits may differ
    np.testing.assert_allclose(g1, g2, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(h1, h2, rtol=1e-12, atol=1e-14)


EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 1e-300, 2.0, 2.0, -1.5, 0.5])


@pytest.mark.parametrize("name", sorted(set(UNARY) | set(BINARY)))
def test_edge_values_agree_with_scalar_records(name, monkeypatch):
    """At 0, -0.0, ±inf, NaN, huge, tiny and ties, an array record gives the scalar records' values
    and gradients: the same NaNs, infinities and signed zeros, the other numbers within 4 ulp of
    max(|x|, 1) (NumPy's transcendental loops and the C library's differ in the last bit, and
    tanh' = 1 - y² carries y's last bit)."""
    a = EDGES
    b = np.roll(EDGES, 3)
    b[-3:-1] = a[-3:-1]  # ties

    def f(X):
        A, B = X[0], X[1]
        if name in BINARY:
            return UFUNC[name](A, B)
        return getattr(tape, name)(A) if hasattr(tape, name) else abs(A)

    out = []
    for small in (1, 10**12):
        monkeypatch.setattr(array_records, "SMALL", small)
        t = tape.Tape()
        X = t.array(np.stack([a, b]))
        Y = f(X)
        grads = [t.gradient(Y[k], X) for k in range(len(a))]
        out.append((Y.value, np.stack(grads)))
    for array, scalar in zip(out[0], out[1], strict=True):
        assert np.array_equal(np.isnan(array), np.isnan(scalar))
        exact = ~np.isfinite(scalar) | (scalar == 0)
        assert np.array_equal(array[exact & ~np.isnan(scalar)], scalar[exact & ~np.isnan(scalar)])
        assert np.array_equal(np.signbit(array[scalar == 0]), np.signbit(scalar[scalar == 0]))
        close = ~exact
        assert np.all(np.abs(array[close] - scalar[close]) <= 4 * np.spacing(np.maximum(np.abs(scalar[close]), 1.0)))


def test_mixing_scalar_and_array_records_in_one_gradient(arrays, monkeypatch):
    t = tape.Tape()
    s = t.var(1.5)
    X = t.array(RNG.normal(size=100))
    y = (X * s).sum() * s + tape.sin(X[3]) * s  # array record * Var, elem of an array, Var arithmetic
    xs = X.value
    assert t.gradient(y, s) == pytest.approx(2 * 1.5 * xs.sum() + np.sin(xs[3]))
    expected = np.full(100, 1.5 ** 2)
    expected[3] += np.cos(xs[3]) * 1.5
    np.testing.assert_allclose(t.gradient(y, X), expected)
    monkeypatch.setattr(array_records, "SMALL", 64)
    small = t.array([1.0, 2.0, 3.0])  # scalar records, packed into an array record when mixed
    z = (small * X[:3]).sum()
    np.testing.assert_allclose(t.gradient(z, small), xs[:3])


def test_generations_and_accumulation_on_array_leaves(arrays):
    t = tape.Tape()
    X = t.array(np.arange(1.0, 101.0))
    y = (X * X).sum()
    g = t.gradient(y, X)
    assert np.array_equal(t.gradient(y, X), g)  # a second pass: same numbers, no stale adjoints
    t.backward(y, accumulate=True)
    np.testing.assert_array_equal(X.grad, 2 * g)
    mark = len(t)
    z = X.sum()
    t.rewind(mark)
    with pytest.raises(tape.StaleHandleError):
        _ = z.value
    assert np.array_equal(t.gradient((X * 3.0).sum(), X), np.full(100, 3.0))


def test_trace_with_nd_inputs_and_the_function_api(arrays, tmp_path):
    W0 = RNG.normal(size=(8, 5))
    x_batch = RNG.normal(size=(16, 8))
    F = tape.trace(lambda W: tape.logsumexp(x_batch @ W, axis=1).mean(), W0)
    assert F.input_shape == (8, 5)
    value, grad = F.value_and_grad(W0)
    assert grad.shape == (8, 5)

    def reference(W):
        return np.log(np.exp(x_batch @ W).sum(axis=1)).mean()

    np.testing.assert_allclose(grad, central(reference, W0), rtol=1e-6, atol=1e-8)
    assert F.jacobian(W0).shape == (8, 5) and F.hessian(W0).shape == (8, 5, 8, 5)  # JAX's shapes
    np.testing.assert_allclose(F.jacobian(W0), grad, rtol=1e-12)
    np.testing.assert_allclose(F.jacobian(W0, mode="reverse"), grad, rtol=1e-12)
    H = F.hessian(W0).reshape(40, 40)
    v = RNG.normal(size=(8, 5))
    np.testing.assert_allclose(H @ v.ravel(), F.hvp(W0, v).ravel(), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(H @ v.ravel(), central(lambda W: F.gradient(W).ravel() @ v.ravel(), W0, 1e-5).ravel(),
                               rtol=1e-4, atol=1e-7)
    points = RNG.normal(size=(3, 40))
    values, grads = F.map_value_and_grad(points)
    assert np.allclose(grads[1], F.gradient(points[1].reshape(8, 5)).ravel())
    F.save(tmp_path / "f.npz")
    G = tape.load(tmp_path / "f.npz")
    assert G.value_and_grad(W0)[0] == value and np.array_equal(G.value_and_grad(W0)[1], grad)
    assert "array matmul (16, 5)" in G.to_dot() and "array logsumexp" in G.table()


def test_params_of_array_shape(arrays):
    x0, p0 = RNG.normal(size=50), RNG.normal(size=50)
    F = tape.trace(lambda x, p: (x * p).sum(), x0, params=p0)
    p1 = RNG.normal(size=50)
    assert np.allclose(F.gradient(x0, params=p1), p1)


def test_branch_checks_on_array_comparisons(arrays):
    def f(X):
        return (X * X).sum() if (X > 0).all() else X.sum()

    F = tape.trace(f, np.ones(100))
    assert F.value_and_grad(np.full(100, 2.0))[0] == 400.0
    with pytest.raises(tape.BranchChanged):
        F(-np.ones(100))
    F.on_branch_change = "retrace"
    assert F(-np.ones(100)) == -100.0


def test_a_big_matmul_is_one_record():
    t = tape.Tape()
    A, B = t.array(RNG.normal(size=(300, 200))), t.array(RNG.normal(size=(200, 100)))
    y = tape.tanh(A @ B).sum()
    assert len(t) < 10
    g = t.gradient(y, A)
    np.testing.assert_allclose(g, (1 - np.tanh(A.value @ B.value) ** 2) @ B.value.T, rtol=1e-10)


def hostile(F, tmp_path, **changes):
    buffer = io.BytesIO()
    F.save(buffer)
    buffer.seek(0)
    with np.load(buffer) as npz:
        arrays = {name: npz[name] for name in npz.files}
    for name, change in changes.items():
        arrays[name] = change(arrays[name].copy())
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    return path


def _put(index, value):
    def change(a):
        a[index] = value
        return a
    return change


@pytest.mark.parametrize("what, changes, match", [
    ("view past its record", {"plans": _put((3, 6 + 18 + 1), 10**6)}, "reaches elements"),
    ("view of a later record", {"plans": _put((3, 6 + 18), 7)}, "earlier array record"),
    ("negative shape", {"plans": _put((3, 7), -4)}, "bad shape"),
    ("output shape that the inputs do not give", {"plans": _put((2, 7), 2)}, "cannot have shape"),
    ("regions out of order", {"plans": _put((2, 2), 0)}, "region starts"),
    ("arena too short", {"arena": lambda a: a[:-1]}, "arena"),
    ("gather place outside", {"plan_places": _put(0, 10**9)}, "place outside"),
    ("unknown array opcode", {"op": _put(3, 250)}, "unknown opcode|does not match"),
    ("elem past its array", {"in1": _put(5, 10**6)}, "elem"),
    ("elem of itself", {"in0": _put(5, 5)}, r"record 5 \(elem\)"),
    ("elem of a scalar record", {"in0": _put(5, 4)}, r"record 5 \(elem\)"),
    ("too many dimensions", {"plans": _put((3, 6), 30)}, "dimensions"),
    ("input shape not the inputs", {"input_shape": lambda a: a * 2}, "input_shape"),
])
def test_hostile_files_of_the_new_version(what, changes, match, tmp_path, arrays):
    x0 = RNG.normal(size=(6, 4))
    F = tape.trace(lambda X: (X[[0, 1, 1]] * X[:3]).sum() + X[1, 2] * 2.0, x0)
    with pytest.raises(tape.TapeFormatError, match=match):
        tape.load(hostile(F, tmp_path, **changes))
    assert what


def test_a_hostile_plan_in_a_subprocess_raises_not_crashes(tmp_path, arrays):
    F = tape.trace(lambda X: (X[1:] * X[:-1]).sum(), RNG.normal(size=200))
    path = hostile(F, tmp_path, plans=_put((1, 6 + 18 + 1), 2**40))
    code = (f"import tape\ntry:\n    tape.load({str(path)!r})\n"
            "except tape.TapeFormatError as e:\n    print('refused', e)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "refused" in result.stdout, result.stderr


def test_memory_per_array_record():
    t = tape.Tape()
    X = t.array(np.ones(10**5))
    before = t.nbytes
    for _ in range(10):
        X = X * 1.5
    assert (t.nbytes - before) / (10 * 10**5) <= 16 * 2.1  # value + adjoint per element, arenas double
    assert math.isfinite(X.sum().value)


def test_debug_nans_names_the_array_record_the_element_and_the_line(arrays):
    x = np.linspace(-1.0, 1.0, 100)
    with tape.debug_nans():
        t = tape.Tape()
        X = t.array(x)
        y = tape.log(X * 1.0).sum()  # this line
        with pytest.raises(tape.NonFiniteError, match=r"element \(0,\) of record #3 \(array log.*test_array_rec"):
            t.backward(y)
    F = tape.trace(lambda X: tape.sqrt(X).sum(), np.abs(x) + 1.0)
    F.check_finite = True
    with pytest.raises(tape.NonFiniteError, match=r"element \(0,\) of record #1 \(array sqrt"):
        F(x)


def _without_runs(F):
    """The same Function with its fused runs switched off: every record by NumPy."""
    F._runs_first, F._runs_last = {}, {}
    return F


@pytest.mark.parametrize("program", ["rosenbrock", "stencil", "live members", "mixed", "every op", "short rows"])
def test_fused_runs_give_the_unfused_numbers(program, monkeypatch):
    monkeypatch.setattr(compiled, "kept", lambda s, runs: runs)  # (every run fused, none rows: compiled.kept)
    rng = np.random.default_rng(5)
    if program == "rosenbrock":
        x = rng.uniform(-1.0, 1.0, 12_295)

        def f(X):
            return (100.0 * (X[1:] - X[:-1] ** 2) ** 2 + (1.0 - X[:-1]) ** 2).sum()
    elif program == "stencil":
        x = rng.normal(size=(90, 70))

        def f(X):
            r = 4.0 * X[1:-1, 1:-1] - X[2:, 1:-1] - X[:-2, 1:-1] - X[1:-1, 2:] - X[1:-1, :-2] - 1.0
            return 0.5 * (r * r).sum()
    elif program == "live members":  # members read after the run: written, and their adjoints come back
        x = rng.uniform(0.5, 2.0, 5000)

        def f(X):
            a = X * X - X / 3.0
            b = tape.maximum(a, 0.7) * X
            return tape.exp(a).sum() + (b * b).sum() + b[17] * a[3]
    elif program == "every op":  # numbers on either side, one member on both sides, a length not of 8
        x = rng.uniform(0.5, 2.0, 5003)

        def f(X):
            y = 1.5 - X / 3.0
            z = y * y + 2.0 / X - -X
            w = tape.sqrt(z) ** 1.7 + X ** y - y ** 2
            return (w * z - 0.5 * w).sum()
    elif program == "short rows":  # 2-d members and inputs whose rows follow one another: run as one long row
        x = rng.uniform(0.5, 2.0, (700, 9))

        def f(X):
            a = X * X - X / 3.0 + tape.exp(X) * 0.5
            return (a * X - 2.0 * a).sum() + a[3, 4]
    else:  # a transcendental between arithmetic: two runs around one NumPy record
        x = rng.uniform(0.1, 2.0, 5000)

        def f(X):
            u = tape.sqrt(X * 2.0 + 1.0) - X
            return (tape.tanh(u) * u + abs(u)).sum()

    F = tape.trace(f, x)
    assert F._runs_first, "a run was found"
    if program == "short rows":
        assert {run.rows_cols for run in F._runs_first.values()} == {(1, x.size)}
    G = _without_runs(tape.trace(f, x))
    v1, g1 = F.value_and_grad(x)
    v2, g2 = G.value_and_grad(x)
    assert v1 == pytest.approx(v2, rel=1e-13)  # the run's sum adds in blocks: the last bits may differ
    np.testing.assert_allclose(g1, g2, rtol=1e-13, atol=1e-13)
    assert F(x) == pytest.approx(v2, rel=1e-13)
    np.testing.assert_allclose(F.hvp(x, np.ones_like(x)), G.hvp(x, np.ones_like(x)), rtol=1e-12, atol=1e-12)


def test_fused_runs_keep_the_structural_zero_rule():
    """sqrt'(0) = inf, times an adjoint of 0, adds nothing in the fused kernel either."""
    x = np.zeros(5000)
    x[::2] = 4.0
    F = tape.trace(lambda X: (tape.sqrt(X) * 0.0 + X * 2.0).sum(), x)
    assert F._runs_first
    assert np.all(F.gradient(x) == 2.0)


def test_tape_forward_sets_an_array_input(arrays):
    t = tape.Tape()
    X = t.array(np.arange(5.0))
    y = (X * X).sum()
    t.forward(X, np.ones(5))
    assert y.value == 5.0 and np.array_equal(t.gradient(y, X), np.full(5, 2.0))
    with pytest.raises(ValueError, match="whole arrays"):
        t.forward(X[1:], np.ones(4))


def test_maps_of_array_records_in_threads_equal_single_calls(monkeypatch):
    from tape.function import maps

    monkeypatch.setattr(maps, "THREADED_ELEMENTS", 0)  # threads whatever the size
    X = RNG.uniform(0.5, 1.5, (7, 2000))
    F = tape.trace(lambda x, p: (tape.tanh(x[1:] * x[:-1]) * p).sum(), X[0], params=np.full(1999, 2.0))
    values, grads = F.map_value_and_grad(X, params=np.full(1999, 3.0))
    for k in range(len(X)):
        v, g = F.value_and_grad(X[k], params=np.full(1999, 3.0))
        assert values[k] == v and np.array_equal(grads[k], g)
    np.testing.assert_array_equal(F.map(X), [F(x) for x in X])
    V = RNG.normal(size=X.shape)
    np.testing.assert_allclose(F.map_jvp(X, V), [F.jvp(x, v) for x, v in zip(X, V, strict=True)])


def test_empty_arrays_and_odd_keys_as_numpy_has_them(form):
    t = tape.Tape()
    E, X = t.array(np.zeros((0, 3))), t.array(np.arange(6.0).reshape(2, 3))
    assert E.sum().value == 0.0 and E.prod().value == 1.0  # NumPy's empty sum and product
    assert t.gradient(E.sum() + X.sum(), E).shape == (0, 3)
    assert (t.array(np.zeros((2, 0))) @ t.array(np.zeros((0, 4)))).value.tolist() == [[0.0] * 4] * 2
    assert X[[]].shape == (0, 3) and X[:, None, :].shape == (2, 1, 3) and X[..., 1].value.tolist() == [1, 4]
    assert X[X.value > 2].value.tolist() == [3, 4, 5]  # a boolean mask: a gather
    w = np.arange(6.0)
    assert t.gradient((X[:, ::-1].reshape(6) * w).sum(), X).tolist() == [[2, 1, 0], [5, 4, 3]]
    assert t.gradient((X.T.reshape(6) * w).sum(), X).tolist() == [[0, 2, 4], [1, 3, 5]]


def test_value_and_grad_borrows_big_constants_and_a_function_owns_them(monkeypatch):
    from tape.sweeps import arenas

    monkeypatch.setattr(arenas, "BORROWED", 10)
    data = RNG.normal(size=(500, 3))
    w0 = RNG.normal(size=(3, 400))

    def f(W):
        return tape.tanh(data @ W).sum()

    value, grad = tape.value_and_grad(f)(w0)
    F = tape.trace(f, w0)
    data_before = data.copy()
    data[:] = 0.0  # F copied the numbers it replays with
    v, g = F.value_and_grad(w0)
    assert v == pytest.approx(value, rel=1e-13) and np.allclose(g, grad, rtol=1e-12)
    np.testing.assert_allclose(grad, data_before.T @ (1 - np.tanh(data_before @ w0) ** 2), rtol=1e-10)


def test_tapes_in_threads_share_the_spare_arenas_safely():
    import threading

    failures = []

    def work(k):
        x = np.full(200_000, float(k + 1))
        for _ in range(10):
            value, grad = tape.value_and_grad(lambda X: (X * X).sum())(x)
            if value != 200_000 * (k + 1) ** 2 or not np.all(grad == 2.0 * (k + 1)):
                failures.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not failures


EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, 5e-324, -2.5, 3.0, 0.5, -1.0, 7.0])


def _record_every_small_op():
    """One tape with every elementwise operation on small VarArrays (length 12 and 3 x 4) of edge
    values, with arrays, Vars, Python and NumPy numbers on either side."""
    t = tape.Tape()
    X = t.array(EDGES)
    Y = t.array(EDGES[::-1].copy())
    M, v = t.array(EDGES.reshape(3, 4)), t.var(-0.0)
    pairs = [(X, Y), (X, v), (v, X), (X, 2.0), (-3.0, X), (X, 2), (np.float64(0.5), X), (M, 1.5), (M, M.T.T)]
    for operation in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, tape.maximum,
                      tape.minimum):
        for a, b in pairs:
            operation(a, b)
    for name in tape.kernels.ops.UNARY:
        if name not in tape.kernels.ops.UNARY_OPERATORS:
            getattr(tape, name)(X)
    for recorded in (lambda: -X, lambda: abs(M), X.sum, M.prod, X[:5].sum, X[:1].sum):
        recorded()
    return t


def test_small_arrays_record_the_same_in_the_loop_as_through_numpy(monkeypatch):
    """tape/arrays/small.py's loop writes the records, values and constants NumPy's path writes."""
    loop = _record_every_small_op()
    monkeypatch.setattr(_small, "LOOP", 0)
    numpy = _record_every_small_op()
    n = len(numpy)
    assert len(loop) == n > 400 and loop.n_consts == numpy.n_consts
    for column in ("_op", "_in0"):
        np.testing.assert_array_equal(getattr(loop, column)[:n], getattr(numpy, column)[:n])
    binary = np.isin(numpy._op[:n], [code for code, op in enumerate(tape.kernels.ops.OPS) if op.kind != "unary"])
    np.testing.assert_array_equal(loop._in1[:n][binary], numpy._in1[:n][binary])
    np.testing.assert_array_equal(loop._val[:n], numpy._val[:n])  # NaN where NaN
    np.testing.assert_array_equal(np.signbit(loop._val[:n]), np.signbit(numpy._val[:n]))
    np.testing.assert_array_equal(loop._consts[:loop.n_consts], numpy._consts[:numpy.n_consts])


def _by_driver(monkeypatch):
    """A Function's calls swept by tape/sweeps/driver.py, looking everything up per record (as before
    tape/sweeps/steps.py)."""
    from types import SimpleNamespace

    from tape.function import array_replay
    from tape.sweeps import driver
    monkeypatch.setattr(array_replay, "steps", SimpleNamespace(
        forward=lambda s, runs: driver.forward(s, 0, len(s._op), runs),
        reverse=lambda s, top, gen, keep, check, runs: driver.reverse(s, top, gen, keep, check, runs)))


STEP_PROGRAMS = {  # every kind of array record, broadcasting, views, params, elem and pack records
    "elementwise": lambda X, p: (tape.sqrt(X * X + p) * X[::-1] - 2.0 / (X + 3.0) + abs(X) ** 1.5).sum(),
    "broadcast": lambda X, p: (X.reshape(30, 20) * X[:20] + X[40:70].reshape(30, 1) - p).max(axis=0).sum(),
    "matmul": lambda X, p: tape.logsumexp(np.tanh(X.reshape(20, 30) @ X[:30].reshape(30, 1) * p), axis=0).sum(),
    "select": lambda X, p: tape.where(X > 0.1, X * p, np.exp(X)).sum(),
    "scans": lambda X, p: (np.cumsum(X) * np.cumprod(X[:10] * p).sum() + np.sort(X)).sum(),
    "join and gather": lambda X, p: (np.concatenate([X[5:], X[:5] * p]) * np.roll(X, 3) * np.pad(X, 2)[2:-2]).sum(),
    "elem and pack": lambda X, p: (X * (X[3] * X[7] + p)).sum() + np.stack([X[0] * X[1], X[2]]).sum(),
    "reductions": lambda X, p: (X.reshape(20, 30).sum(axis=1) ** 2).mean() + X.reshape(20, 30).min(axis=0).sum(),
}


@pytest.mark.parametrize("program", STEP_PROGRAMS)
def test_steps_give_the_driver_sweeps_bit_for_bit(program, arrays, monkeypatch):
    """A Function's steps (tape/sweeps/steps.py) are decided at its first call; every later call, with other
    inputs and params, gives what the driver's per-record lookups give, bit for bit: values, gradients, the
    second order (which sweeps by the driver still) and the NaN-checked reverse. (The compiled sweeps, whose
    math is Numba's, are compared in tests/test_array_driver.py.)"""
    monkeypatch.setattr(compiled, "ready", lambda s, runs: False)
    f = STEP_PROGRAMS[program]
    x = np.random.default_rng(8).uniform(0.2, 1.5, 600)
    points = [(x, 0.7), (x[::-1] - 0.3, 1.3), (np.where(x > 1.0, 0.0, x), 0.5)]
    results = []
    for driver_only in (False, True):
        if driver_only:
            _by_driver(monkeypatch)
        F = tape.trace(f, x, params=0.7)
        got = []
        for point, param in points:
            got += [*F.value_and_grad(point, params=param), F.hvp(point, np.ones_like(point), params=param)]
            F.check_finite = True  # the checked sweeps, without fused runs
        results.append(got)
    for a, b in zip(*results, strict=True):
        assert np.array_equal(a, b, equal_nan=True)


def test_integer_keys_read_numpys_element(arrays):
    """v[i, j] of an array record's view (its place found without NumPy) is NumPy's element, IndexError alike."""
    x = RNG.normal(size=(5, 7))
    t = tape.Tape()
    X = t.array(x)
    for view, plain in ((X, x), (X.T[::-1, 1:], x.T[::-1, 1:]), (X[::2, -3:], x[::2, -3:])):
        for key in ((0, 0), (1, -1), (-1, 2), (view.shape[0] - 1, 0)):
            assert view[key].value == plain[key]
        for key in ((view.shape[0], 0), (0, -view.shape[1] - 1)):
            with pytest.raises(IndexError) as got:
                view[key]
            with pytest.raises(IndexError, match=str(got.value)):
                plain[key]
    want = np.zeros_like(x)
    want[1, 6], want[3, 2] = x[3, 2], x[1, 6]
    assert np.array_equal(t.gradient(X[1, -1] * X.T[2, 3], X), want)
