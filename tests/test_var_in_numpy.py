"""The NumPy face (issue 12): a Var as a 0-d array wherever NumPy is involved."""

import math
import operator

import numpy as np
import pytest
from reference import central

import tape

T = np.linspace(0.0, 2.0, 40)


def decay_fit(p):
    """The issue's first line: a scalar Var with a NumPy array."""
    a, k = p
    return ((a * np.exp(-k * T) - 2.0 * np.exp(-0.5 * T)) ** 2).sum()


def test_a_scalar_var_with_an_ndarray_differentiates(form):
    p = np.array([1.3, 0.7])
    value, grad = tape.value_and_grad(decay_fit)(p)
    r = p[0] * np.exp(-p[1] * T) - 2.0 * np.exp(-0.5 * T)
    assert value == pytest.approx(float((r * r).sum()), rel=1e-14)
    by_hand = [float((2 * r * np.exp(-p[1] * T)).sum()), float((2 * r * p[0] * -T * np.exp(-p[1] * T)).sum())]
    np.testing.assert_allclose(grad, by_hand, rtol=1e-12)
    np.testing.assert_allclose(grad, central(decay_fit, p), rtol=1e-7)
    F = tape.trace(decay_fit, p)  # replayed at another point
    q = np.array([0.4, 2.0])
    np.testing.assert_allclose(F.gradient(q), central(decay_fit, q), rtol=1e-7)


def test_a_reduction_to_one_element_keeps_working_in_array_code(form):
    def f(x):
        s = x.sum()
        return np.exp(s * 0.1) + s.sum().sum() + np.sum(s) * np.mean(s) + np.sqrt(np.abs(s)).prod()

    x = np.linspace(-1.0, 2.0, 6)
    value, grad = tape.value_and_grad(f)(x)
    s = x.sum()
    assert value == pytest.approx(math.exp(0.1 * s) + s + s * s + math.sqrt(abs(s)), rel=1e-14)
    np.testing.assert_allclose(grad, central(f, x), rtol=1e-7)


def test_a_var_is_0_d():
    x = tape.Tape().var(1.5)
    assert (x.shape, x.ndim, x.size) == ((), 0, 1) and np.shape(x) == () and np.ndim(x) == 0
    with pytest.raises(ValueError, match="0-d"):
        x.sum(axis=0)


ZERO_D = [0.75, 2, np.float64(-1.25), np.array(0.5)]  # what NumPy counts as 0-d, beside a Var
BINARY = [np.add, np.subtract, np.multiply, np.true_divide, np.power, np.maximum, np.minimum, np.arctan2, np.hypot,
          np.logaddexp, np.fmax, np.fmin]


@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
@pytest.mark.parametrize("other", ZERO_D, ids=lambda c: type(c).__name__)
@pytest.mark.parametrize("var_first", [True, False])
def test_numpy_binary_ufuncs_on_a_var_and_a_0_d_number_give_a_var(ufunc, other, var_first):
    a = 1.7
    t = tape.Tape()
    x = t.var(a)
    y = ufunc(x, other) if var_first else ufunc(other, x)
    assert type(y) is tape.Var
    with np.errstate(invalid="ignore"):
        expected = ufunc(a, float(other)) if var_first else ufunc(float(other), a)
    if math.isnan(expected):  # a negative number to a fractional power
        assert math.isnan(y.value)
        return
    assert y.value == expected
    fd = central(lambda v: ufunc(v[0], float(other)) if var_first else ufunc(float(other), v[0]), [a])
    assert t.gradient(y, x) == pytest.approx(fd[0], rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "negative", "absolute"])
def test_numpy_unary_ufuncs_on_a_var_give_the_tape_functions_record(name):
    a = 0.6
    t = tape.Tape()
    x = t.var(a)
    y = getattr(np, name)(x)
    assert type(y) is tape.Var and y.value == pytest.approx(getattr(np, name)(a), rel=4e-16)  # the C library's
    fd = central(lambda v: getattr(np, name)(v[0]), [a])
    assert t.gradient(y, x) == pytest.approx(fd[0], rel=1e-7)


@pytest.mark.parametrize("compare", [np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal],
                         ids=lambda u: u.__name__)
def test_numpy_comparisons_of_a_var_are_checked_conditions(compare):
    x = tape.Tape().var(1.0)
    c = compare(x, np.float64(1.0))
    assert isinstance(c, tape.Condition) and bool(c) == bool(compare(1.0, 1.0))


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
@pytest.mark.parametrize("spell", ["operator", "ufunc"])
@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
def test_a_var_with_an_ndarray_on_either_side_broadcasts(form, shape, spell, ufunc):
    arr = np.random.default_rng(1).uniform(0.5, 2.0, shape)
    ops = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
           np.true_divide: operator.truediv, np.power: operator.pow}
    apply = ops[ufunc] if spell == "operator" and ufunc in ops else ufunc

    def f(v):
        a = v[0]
        return (apply(a, arr) * 1.5 + apply(arr, a)).sum()

    x = np.array([1.3])
    value, grad = tape.value_and_grad(f)(x)
    assert value == pytest.approx(float((ufunc(1.3, arr) * 1.5 + ufunc(arr, 1.3)).sum()), rel=1e-13)
    np.testing.assert_allclose(grad, central(f, x), rtol=1e-7)


def test_a_var_with_an_ndarray_gives_a_vararray_of_its_shape():
    t = tape.Tape()
    x = t.var(2.0)
    for y in (x * np.ones((2, 3)), np.ones((2, 3)) * x, np.exp(x * np.ones(4)), np.maximum(x, np.zeros(5))):
        assert isinstance(y, tape.VarArray)
    assert (np.ones((2, 3)) - x).shape == (2, 3)


# -- one rule for what f receives: the structure it is given (tape.grad, tape.value_and_grad) --------


def mlp_loss(params, X, y):
    """A dict of parameters, data as further arguments: the call shape users bring from JAX."""
    h = tape.tanh(X @ params["W"] + params["b"])
    z = h @ params["v"] + params["c"]
    return ((z - y) ** 2).mean()


def test_a_dict_of_arrays_and_numbers_comes_back_in_its_structure(form):
    rng = np.random.default_rng(3)
    params = {"W": rng.normal(size=(4, 3)), "b": rng.normal(size=3), "v": rng.normal(size=3), "c": 0.25}
    X, y = rng.normal(size=(6, 4)), rng.normal(size=6)
    value, g = tape.value_and_grad(mlp_loss)(params, X, y)
    assert set(g) == set(params) and g["W"].shape == (4, 3) and g["b"].shape == (3,) and type(g["c"]) is float

    def at(flat):
        p = {"W": flat[:12].reshape(4, 3), "b": flat[12:15], "v": flat[15:18], "c": flat[18]}
        h = np.tanh(X @ p["W"] + p["b"])
        return float((((h @ p["v"] + p["c"]) - y) ** 2).mean())

    flat = np.concatenate([params["W"].ravel(), params["b"], params["v"], [params["c"]]])
    assert value == pytest.approx(at(flat), rel=1e-13)
    fd = central(at, flat)
    got = np.concatenate([g["W"].ravel(), g["b"], g["v"], [g["c"]]])
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-9)


def test_lists_and_tuples_keep_their_kind_and_n_d_arrays_their_shape():
    def f(point):
        (a, b), M = point
        return a * b + (M * M).sum() * a

    g = tape.grad(f)(((2.0, 3.0), np.ones((2, 2))))
    assert isinstance(g, tuple) and isinstance(g[0], tuple) and g[1].shape == (2, 2)
    assert g[0] == (3.0 + 4.0, 2.0) and np.all(g[1] == 2.0 * 2.0)
    assert tape.grad(lambda v: v[0] * v[1])([3.0, 4.0]) == [4.0, 3.0]  # a list gives a list


def test_argnums_picks_the_arguments_and_has_aux_returns_the_rest():
    def f(a, b, c):
        y = a * b * b + c
        return y, {"y": y, "twice": 2.0 * y}

    (value, aux), (ga, gb) = tape.value_and_grad(f, argnums=(0, 1), has_aux=True)(2.0, 3.0, 1.0)
    assert value == 19.0 and aux == {"y": 19.0, "twice": 38.0}
    assert (ga, gb) == (9.0, 12.0)
    g, aux = tape.grad(f, argnums=2, has_aux=True)(2.0, 3.0, 1.0)
    assert g == 1.0 and aux["y"] == 19.0
    with pytest.raises(ValueError, match="argnums"):
        tape.grad(f, argnums=3)(2.0, 3.0, 1.0)
    with pytest.raises(TypeError, match="pair"):
        tape.grad(lambda a: a * 2.0, has_aux=True)(1.0)


def test_what_is_not_a_tree_of_real_numbers_is_named():
    with pytest.raises(TypeError, match=r"argument 0\['k'\] must be real numbers"):
        tape.grad(lambda p: p["k"])({"k": "1.0"})
    with pytest.raises(TypeError, match="real numbers"):
        tape.grad(lambda p: p[0])([None, 1.0])


def test_stop_gradient_keeps_the_value_at_every_replay_and_no_derivative(form):
    def f(v):
        s = tape.stop_gradient(v[0] * v[1])
        return s * v[0] + v[1]

    F = tape.trace(f, [2.0, 3.0])
    for x in ([2.0, 3.0], [1.0, 5.0], [-0.5, 4.0]):
        assert F(x) == x[0] * x[1] * x[0] + x[1]
        np.testing.assert_array_equal(F.gradient(x), [x[0] * x[1], 1.0])
        np.testing.assert_array_equal(F.hessian(x), np.zeros((2, 2)))
    assert tape.grad(f)([2.0, 3.0]) == [6.0, 1.0] and tape.stop_gradient(2.5) == 2.5
    X = np.linspace(-1.0, 1.0, 3000)
    np.testing.assert_array_equal(tape.grad(lambda x: (tape.stop_gradient(x) * x).sum())(X), X)


# -- the ML staples, made of recorded ops ------------------------------------------------------------


def test_softplus_is_stable_and_its_slope_is_the_sigmoid(form):
    x = np.array([-800.0, -30.0, -1.0, 0.0, 1e-8, 2.0, 40.0, 800.0] * 200)  # 1600 elements
    value, g = tape.value_and_grad(lambda v: tape.softplus(v).sum())(x)
    assert value == pytest.approx(float(np.logaddexp(0.0, x).sum()), rel=1e-14)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(g, 1.0 / (1.0 + np.exp(-x)), rtol=1e-14, atol=1e-300)
    assert tape.softplus(0.0) == math.log(2.0)


@pytest.mark.parametrize("jit", [False, True])
def test_softplus_second_derivative_is_the_sigmoid_s_slope_at_zero_too(jit):
    """softplus'' = sigmoid (1 - sigmoid): 1/4 at 0 and -0.0 (as JAX's logaddexp(x, 0)), where the form
    max(x, 0) + log1p(exp(-|x|)) gave 0 (the kinks' rules: |x|' = 0 at 0), in a Hessian, an hvp, a Var's and
    a VarArray's (scalar records and an array record), and under tape.jit."""
    x = np.array([0.0, -0.0, 1e-300, -1.5, 2.0, 40.0, -40.0])
    e = np.exp(-np.abs(x))
    slope = e / (1.0 + e) ** 2  # (sigmoid (1 - sigmoid), accurate in both tails)
    for size in (len(x), 1400):  # an array record past 1,024 elements
        X = np.resize(x, size)
        f = (lambda v: tape.softplus(v).sum()) if not jit else tape.jit(lambda v: tape.softplus(v).sum())
        F = tape.trace(f, X)
        np.testing.assert_allclose(F.hvp(X, np.ones(size))[:len(x)], slope, rtol=1e-14, atol=1e-300)
        if size < 100:
            np.testing.assert_allclose(np.diag(tape.hessian(f)(X)), slope, rtol=1e-14, atol=1e-300)
    H = tape.hessian(lambda v: tape.softplus(v[0]) * 2.0 + v[1])([0.0, 1.0])
    assert H[0][0] == 0.5 and H[1][1] == 0.0


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_and_log_softmax_against_differences(form, axis):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(40, 30)) * 30.0  # large logits: exp would overflow unshifted
    w = rng.normal(size=x.shape)
    small, ws = x[:3, :4] / 30.0, w[:3, :4]  # differences: on a small block, where they are accurate
    for log, fn in ((True, tape.log_softmax), (False, tape.softmax)):
        value, g = tape.value_and_grad(lambda v, fn=fn: (fn(v, axis=axis) * w).sum())(x)
        assert value == pytest.approx(_weighted(x, w, log, axis), rel=1e-12, abs=1e-12)
        g_small = tape.grad(lambda v, fn=fn: (fn(v, axis=axis) * ws).sum())(small)
        fd = central(lambda z, log=log: _weighted(z, ws, log, axis), small)
        np.testing.assert_allclose(g_small, fd, rtol=1e-6, atol=1e-8)
        assert np.all(np.isfinite(g))


def _weighted(z, w, log, axis):
    """sum(w * log_softmax(z)) (or of softmax) by NumPy, shifted by the largest element."""
    s = z - z.max(axis=axis, keepdims=True)
    lp = s - np.log(np.exp(s).sum(axis=axis, keepdims=True))
    return float(((lp if log else np.exp(lp)) * w).sum())


def test_clip_square_and_reciprocal(form):
    x = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0] * 200)
    g = tape.grad(lambda v: (tape.clip(v, -1.0, 1.0) * 3.0).sum())(x)
    np.testing.assert_array_equal(g, np.where(np.abs(x) < 1.0, 3.0, np.where(np.abs(x) == 1.0, 1.5, 0.0)))
    np.testing.assert_array_equal(tape.grad(lambda v: (np.clip(v, -1.0, 1.0) * 3.0).sum())(x), g)  # numpy.clip
    g = tape.grad(lambda v: (np.square(v) + tape.square(v) + np.reciprocal(v + 5.0)).sum())(x)
    np.testing.assert_allclose(g, 4.0 * x - 1.0 / (x + 5.0) ** 2, rtol=1e-14)


def test_value_and_grad_leaves_no_tape_for_the_garbage_collector():
    """Its tape dies with the call, or with the wrapper that keeps it for its next call (by reference counting), so
    the next call reuses its arenas: a reference cycle holding a handle once made every call map fresh pages (12 ->
    190 ms here)."""
    import gc

    vg = tape.value_and_grad(lambda p: (p["x"] ** 2).sum() * p["k"] + p["k"])
    point = {"x": np.linspace(0.0, 1.0, 5000), "k": 2.0}
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            vg(point)
        del vg
        alive = [o for o in gc.get_objects() if type(o) is tape.Tape]  # (isinstance would touch dead proxies)
    finally:
        gc.enable()
    assert not alive


SHAPE_FUNCTIONS = {  # name: the same call on a VarArray or an ndarray
    "swapaxes": lambda a: np.swapaxes(a, 0, 2),
    "method swapaxes": lambda a: a.swapaxes(-1, 1),
    "expand_dims": lambda a: np.expand_dims(a, (0, -1)),
    "squeeze": lambda a: np.squeeze(a.reshape(2, 1, 12, 1), axis=(1, 3)),
    "flip": lambda a: np.flip(a, 1),
    "flip all": lambda a: np.flip(a),
    "moveaxis": lambda a: np.moveaxis(a, 0, -1),
    "ravel": lambda a: np.ravel(a),
    "flatten": lambda a: a.flatten(),
    "copy": lambda a: np.copy(a),
    # gathers and compositions
    "roll": lambda a: np.roll(a, 2, 1),
    "roll flat": lambda a: np.roll(a, -5),
    "tile": lambda a: np.tile(a, (2, 1, 1)),
    "repeat": lambda a: np.repeat(a, 2, axis=2),
    "broadcast_to": lambda a: np.broadcast_to(a[0], (5, 3, 4)),
    "diagonal": lambda a: np.diagonal(a[1, :, :3]),
    "trace": lambda a: np.trace(a[0, :, 1:]),
    "outer": lambda a: np.outer(a[0, 0], a[1, 2]),
    "norm": lambda a: np.linalg.norm(a),
    "norm 1": lambda a: np.linalg.norm(a, 1, axis=2),
    "norm inf": lambda a: np.linalg.norm(a, np.inf, axis=2, keepdims=True),
    "norm fro": lambda a: np.linalg.norm(a[0], "fro"),
    "var": lambda a: np.var(a, axis=1),
    "std": lambda a: a.std(axis=(0, 2), ddof=1, keepdims=True),
    "std all": lambda a: np.std(a),
}


@pytest.mark.parametrize("name", SHAPE_FUNCTIONS)
def test_shape_functions_are_numpys_and_send_adjoints_back(form, name):
    rng = np.random.default_rng(11)
    x = rng.normal(size=(2, 3, 4))
    fn = SHAPE_FUNCTIONS[name]
    w = rng.normal(size=fn(x).shape)
    t = tape.Tape()
    X = t.array(x)
    Y = fn(X)
    assert Y.shape == fn(x).shape
    np.testing.assert_allclose(np.asarray(Y.value), fn(x), rtol=1e-14)
    g = t.gradient((Y * w).sum() if np.ndim(fn(x)) else Y * float(w), X)
    np.testing.assert_allclose(g, central(lambda z: float((fn(z) * w).sum()), x), rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="size not equal to one"):
        X.squeeze(0)
    with pytest.raises(ValueError, match="vector norms"):
        np.linalg.norm(X[0], np.inf)  # a matrix norm NumPy has and tape does not


# -- max and min reductions ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), (0, True), ((0, 1), True)])
def test_max_and_min_are_numpys_and_split_ties_equally(form, name, axis, keepdims):
    x = np.array([[1.0, 3.0, 3.0, -2.0], [2.0, -1.0, 2.0, 2.0], [0.5, 0.5, 0.5, 0.5]])
    w = np.arange(1.0, 1.0 + np.size(getattr(x, name)(axis=axis, keepdims=keepdims))).reshape(
        np.shape(getattr(x, name)(axis=axis, keepdims=keepdims)))
    t = tape.Tape()
    X = t.array(x)
    Y = getattr(X, name)(axis=axis, keepdims=keepdims)
    expected = getattr(x, name)(axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(np.asarray(Y.value), expected)
    g = t.gradient((Y * w).sum() if np.ndim(expected) else Y * w, X)
    # by hand: each result's weight, shared equally by the elements equal to it
    axes = tuple(range(x.ndim)) if axis is None else np.atleast_1d(axis).tolist()
    result = getattr(x, name)(axis=tuple(axes), keepdims=True)
    hit = x == result
    by_hand = np.broadcast_to(np.reshape(w, result.shape), x.shape) * hit / hit.sum(axis=tuple(axes), keepdims=True)
    np.testing.assert_allclose(g, by_hand, rtol=1e-15)


def test_max_away_from_ties_against_differences_and_in_every_sweep(form):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(30, 40))
    w = rng.normal(size=30)

    def f(X):
        return (X.max(axis=1) * w).sum() + (np.min(X, axis=0) ** 2).sum()

    F = tape.trace(f, x)
    value, grad = F.value_and_grad(x)
    ref = lambda z: float((z.max(axis=1) * w).sum() + (z.min(axis=0) ** 2).sum())  # noqa: E731
    assert value == pytest.approx(ref(x), rel=1e-14)
    np.testing.assert_allclose(grad, central(ref, x), rtol=1e-6, atol=1e-8)
    v = rng.normal(size=x.shape)
    assert F.jvp(x, v) == pytest.approx(float(np.sum(grad * v)), rel=1e-12)
    hv = F.hvp(x, v)  # the min's square curves: 2 v at each column's minimum
    mins = x == x.min(axis=0, keepdims=True)
    np.testing.assert_allclose(hv, 2.0 * np.where(mins, v, 0.0).sum(axis=0, keepdims=True) * mins, atol=1e-12)
    y = rng.normal(size=x.shape)
    np.testing.assert_allclose(F.gradient(y), central(ref, y), rtol=1e-6, atol=1e-8)  # replayed elsewhere


def test_min_sends_an_infinite_adjoint_to_its_extremes_alone(form):
    """sqrt at a row's minimum 0 sends inf back: to that element (to each of two tied ones: inf / 2), 0 to the rest of
    its row by the structural-zero rule, not inf * 0; an infinite tangent off a row's minimum adds nothing either
    (a share cast to 0.0 times inf is masked)."""
    x = np.array([[0.0, 2.0, 3.0], [1.0, 0.0, 0.0], [4.0, 0.5, 2.0]])
    F = tape.trace(lambda X: np.sqrt(X.min(axis=1)).sum() + (X.min(axis=1) * np.array([1.0, 2.0, 3.0])).sum(), x)
    value, grad = F.value_and_grad(x)
    assert value == np.sqrt(0.5) + 0.0 + 1.5
    by_hand = [[np.inf, 0.0, 0.0], [0.0, np.inf, np.inf], [0.0, 3.0 + 0.5 / np.sqrt(0.5), 0.0]]
    np.testing.assert_array_equal(grad, by_hand)
    v = np.array([[1.0, np.inf, -np.inf], [np.inf, 1.0, 1.0], [np.nan, 2.0, np.inf]])
    G = tape.trace(lambda X: (X.min(axis=1) * np.array([1.0, 2.0, 3.0])).sum(), x)
    assert G.jvp(x, v) == 1.0 + 2.0 * 1.0 + 3.0 * 2.0


def test_max_with_nan_and_empty_axes():
    t = tape.Tape()
    X = t.array(np.array([1.0, np.nan, 3.0, np.nan]))
    m = X.max()
    assert math.isnan(m.value)
    np.testing.assert_array_equal(t.gradient(m, X), [0.0, 0.5, 0.0, 0.5])  # the NaNs share the slope
    with pytest.raises(ValueError, match="empty axis"):
        t.array(np.zeros((3, 0))).max(axis=1)


def test_a_stable_softmax_written_by_hand_differentiates_as_log_softmax(form):
    z = np.random.default_rng(4).normal(size=(8, 5)) * 50.0

    def by_hand(v):
        s = v - v.max(axis=1, keepdims=True)
        return (s - tape.log(tape.exp(s).sum(axis=1, keepdims=True)))[:, 0].sum()

    g1 = tape.grad(by_hand)(z)
    g2 = tape.grad(lambda v: tape.log_softmax(v, axis=1)[:, 0].sum())(z)
    np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-14)


def test_a_function_with_max_records_saves_and_loads(tmp_path):
    F = tape.trace(lambda X: X.max(axis=0).sum(), np.arange(4000.0).reshape(40, 100) % 7)
    F.save(tmp_path / "f.tape")
    G = tape.load(tmp_path / "f.tape")
    x = np.random.default_rng(0).normal(size=(40, 100))
    assert G(x) == F(x)
    np.testing.assert_array_equal(G.gradient(x), F.gradient(x))


def test_std_and_norm_at_zero_spread_have_slope_0_not_nan(form):
    """sqrt'(0) = inf times an adjoint path through 0 adds nothing (the structural-zero rule)."""
    for fn in (lambda v: v.std(), lambda v: np.linalg.norm(v - 2.0)):
        g = tape.grad(fn)(np.full(6, 2.0))
        np.testing.assert_array_equal(g, np.zeros(6))


def test_where_takes_a_numpy_mask_and_never_sends_to_the_unselected_side(form):
    rng = np.random.default_rng(9)
    x = rng.uniform(-1.0, 1.0, 2000)
    mask = x > 0.2  # data: fixed when recorded

    def f(v):
        return (tape.where(mask, tape.sqrt(v), -1.0) * 3.0).sum()  # sqrt(negative) only where unselected

    value, g = tape.value_and_grad(f)(x)
    assert value == pytest.approx(float((np.where(mask, np.sqrt(np.abs(x)), -1.0) * 3.0).sum()), rel=1e-13)
    np.testing.assert_allclose(g, np.where(mask, 1.5 / np.sqrt(np.abs(x)), 0.0), rtol=1e-14)
    F = tape.trace(f, x)
    y = np.abs(x) + 0.1  # the mask stays the recorded one, as any data does
    np.testing.assert_allclose(F.gradient(y), np.where(mask, 1.5 / np.sqrt(y), 0.0), rtol=1e-14)
    t = tape.Tape()
    v = t.var(2.0)
    r = tape.where(np.array([True, False, True]), v, t.array(np.array([5.0, 6.0, 7.0])))
    assert r.value.tolist() == [2.0, 6.0, 2.0] and t.gradient(r.sum(), v) == 2.0
    plain = tape.where(np.array([True, False]), 1.0, np.array([2.0, 3.0]))  # no recorded branch: NumPy's
    assert type(plain) is np.ndarray and plain.tolist() == [1.0, 3.0]


def test_concatenate_and_stack_take_numbers_and_arrays_as_constants(form):
    x = np.linspace(0.0, 1.0, 3000)

    def f(v):
        joined = np.concatenate([v[:3], [10.0, 20.0], np.ones(2), v[-2:]])
        return (joined * np.arange(9.0)).sum() + np.stack([v[:2], np.zeros(2)]).sum()

    value, g = tape.value_and_grad(f)(x)
    assert value == pytest.approx(float(x[:3] @ np.arange(3.0) + 30.0 + 80.0 + 5.0 + 6.0
                                        + x[-2:] @ np.arange(7.0, 9.0) + x[:2].sum()), rel=1e-14)
    expected = np.zeros_like(x)
    expected[:3] += np.arange(3.0)
    expected[-2:] += np.arange(7.0, 9.0)
    expected[:2] += 1.0
    np.testing.assert_array_equal(g, expected)
    with pytest.raises(TypeError, match="joins VarArrays of one tape, and numbers"):
        tape.concatenate([np.ones(2), [1.0]])


@pytest.mark.parametrize("size", [12, 2000])  # scalar records, an array record
def test_likes_are_constants_and_stacks_join_as_numpy(size):
    """np.zeros_like, ones_like, empty_like and full_like of a VarArray are NumPy arrays of its shape (no derivative
    reaches them: they were a TypeError); np.hstack and np.vstack join as NumPy joins (1-d pieces as rows, NumPy arrays
    among them). Value and gradient against NumPy's own value and central differences."""
    w = np.linspace(-1.0, 1.0, size)

    def f(x):
        a = x.reshape(2, -1)
        acc = np.zeros_like(a)  # (not empty_like here: NumPy's own is garbage, NaN * 0 too; it is checked below)
        for k in range(1, 3):
            acc = acc + np.sin(a * k) * np.full_like(a, 0.5 * k)
        h = np.hstack((a, np.ones_like(a) * 3.0, a[:, :2] ** 2))
        v = np.vstack((x[:4], w[:4], x[-4:] * x[:4]))
        return (acc * acc).sum() + (h * h).sum() * 0.1 + (np.vstack((a, a[:1] * 2.0)) * 0.2).sum() + (v * v).sum()

    x = np.random.default_rng(size).normal(size=size)
    value, grad = tape.value_and_grad(f)(x)
    assert np.isclose(value, f(x), rtol=1e-13) and np.allclose(grad, central(f, x), rtol=1e-6, atol=1e-6)
    t = tape.Tape()
    xs = t.array(x)
    for like in (np.zeros_like(xs), np.empty_like(xs), np.ones_like(xs), np.full_like(xs, 2.5)):
        assert type(like) is np.ndarray and like.shape == (size,) and np.all(like == like[0])
