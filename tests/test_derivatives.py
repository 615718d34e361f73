"""JVP, Jacobians (forward, reverse, vector mode), Hessian-vector products and Hessians."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference import BINARY, OPS_ON_HANDLES, SECOND, UNARY, domain_of, second_pair

import tape

RNG = np.random.default_rng(44)


def vector_function(x):
    a, b, c = x
    return [a * b + tape.sin(c), tape.exp(-a * a) / (1.0 + b * b), c ** 3 - 2.0 * a, tape.tanh(a * c) * b, 4.0,
            tape.maximum(a, b) * tape.sqrt(1.0 + c * c)]


def central_jacobian(f, x, h=1e-6):
    cols = []
    for i in range(len(x)):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        cols.append((np.asarray(f(up)) - np.asarray(f(down))) / (2 * h))
    return np.array(cols).T


def test_jvp_and_vjp_satisfy_the_dot_product_test():
    F = tape.trace(vector_function, [0.3, -0.4, 0.8])
    for _ in range(50):
        x, v, w = RNG.uniform(-1.5, 1.5, 3), RNG.normal(size=3), RNG.normal(size=6)
        assert w @ F.jvp(x, v) == pytest.approx(F.vjp(x, w) @ v, rel=1e-12, abs=1e-13)


@pytest.mark.parametrize("block", [1, 2, 3, 16])
def test_jacobian_modes_agree_with_single_sweeps_bit_for_bit(block):
    F = tape.trace(vector_function, [0.3, -0.4, 0.8])
    x = RNG.uniform(-1.5, 1.5, 3)
    forward = F.jacobian(x, mode="forward", block=block)
    reverse = F.jacobian(x, mode="reverse", block=block)
    for i, e in enumerate(np.eye(3)):
        np.testing.assert_array_equal(forward[:, i], F.jvp(x, e))
    for j, e in enumerate(np.eye(6)):
        np.testing.assert_array_equal(reverse[j], F.vjp(x, e))
    np.testing.assert_allclose(forward, reverse, rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(F.jacobian(x), forward)  # 3 inputs < 6 outputs: forward mode


def test_jacobian_against_central_differences_and_shapes():
    F = tape.trace(vector_function, [0.3, -0.4, 0.8])
    x = np.array([0.7, 0.2, -0.9])
    np.testing.assert_allclose(F.jacobian(x), central_jacobian(F, x), rtol=1e-6, atol=1e-8)
    wide = tape.trace(lambda v: [sum(v[i] * v[i + 1] for i in range(len(v) - 1))], np.ones(40))
    y = RNG.uniform(-1, 1, 40)
    J = wide.jacobian(y)  # 40 inputs > 1 output: reverse mode
    assert J.shape == (1, 40)
    np.testing.assert_array_equal(J[0], wide.gradient(y))
    with pytest.raises(ValueError, match="mode"):
        F.jacobian(x, mode="sideways")
    with pytest.raises(ValueError, match="3 tangent entries"):
        F.jvp(x, [1.0, 2.0])


# Second derivatives written independently of the op table.
SECOND_UNARY = {
    "neg": lambda a: 0.0,
    "abs": lambda a: 0.0,
    "exp": math.exp,
    "log": lambda a: -1.0 / a**2,
    "sqrt": lambda a: -0.25 * a ** -1.5,
    "sin": lambda a: -math.sin(a),
    "cos": lambda a: -math.cos(a),
    "tan": lambda a: 2.0 * math.sin(a) / math.cos(a) ** 3,
    "tanh": lambda a: -2.0 * math.tanh(a) / math.cosh(a) ** 2,
    "sigmoid": lambda a: math.exp(-a) * (math.exp(-a) - 1.0) / (1.0 + math.exp(-a)) ** 3,
    "relu": lambda a: 0.0,
    **SECOND,  # the rarer ops' (tests/reference.py)
}


def second_binary(name, a, b):
    """The 2x2 Hessian of op(a, b)."""
    if name in ("mul", "mul_nz"):
        return [[0, 1], [1, 0]]
    if name == "div":
        return [[0, -1 / b**2], [-1 / b**2, 2 * a / b**3]]
    if name == "pow":
        cross = a ** (b - 1) * (1 + b * math.log(a))
        return [[b * (b - 1) * a ** (b - 2), cross], [cross, a**b * math.log(a) ** 2]]
    if name in ("arctan2", "hypot", "logaddexp", "fmax", "fmin"):
        return second_pair(name, a, b)
    return [[0, 0], [0, 0]]  # add, sub, maximum, minimum away from ties


def hessian_by_differences(F, x, h=1e-5):
    return central_jacobian(F.gradient, x, h)


@pytest.mark.parametrize("name", UNARY)
def test_second_derivative_of_every_unary_op(name):
    F = tape.trace(lambda v: OPS_ON_HANDLES[name](v[0]), [0.5])
    points = np.exp(RNG.uniform(-2, 1.5, 25)) if name in ("log", "sqrt") else RNG.uniform(-1.3, 1.3, 25)
    if domain_of(name):
        points = RNG.uniform(*domain_of(name), 25)
    for a in points:
        a = a + (0.1 if abs(a - round(a)) < 0.05 and name in ("lgamma", "floor", "ceil", "trunc", "rint") else 0.0)
        a = a + (0.1 if abs(a) < 0.05 else 0.0)
        H = F.hessian([a])
        rel = 1e-10 if name == "lgamma" else 1e-12  # trigamma's reflection below 1/2 cancels a few digits
        assert H[0, 0] == pytest.approx(SECOND_UNARY[name](a), rel=rel, abs=1e-14)
        assert H[0, 0] == pytest.approx(hessian_by_differences(F, np.array([a]))[0, 0], rel=1e-5, abs=1e-6)
        assert F.hvp([a], [2.0])[0] == pytest.approx(2.0 * H[0, 0], rel=1e-15)


@pytest.mark.parametrize("name", BINARY)
def test_second_derivatives_of_every_binary_op(name):
    fn = OPS_ON_HANDLES[name]
    both = tape.trace(lambda v: fn(v[0], v[1]), [0.5, 0.7])
    left = tape.trace(lambda v: fn(v[0], 1.7), [0.5])
    right = tape.trace(lambda v: fn(1.7, v[0]), [0.5])
    for _ in range(20):
        a, b = RNG.uniform(0.2, 2.0, 2)
        if name in ("maximum", "minimum", "fmax", "fmin") and abs(a - b) < 1e-3:
            continue
        expected = np.array(second_binary(name, a, b), float)
        np.testing.assert_allclose(both.hessian([a, b]), expected, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(both.hessian([a, b]), hessian_by_differences(both, np.array([a, b])),
                                   rtol=1e-5, atol=1e-5)
        assert left.hessian([a])[0, 0] == pytest.approx(second_binary(name, a, 1.7)[0][0], rel=1e-12, abs=1e-13)
        assert right.hessian([b])[0, 0] == pytest.approx(second_binary(name, 1.7, b)[1][1], rel=1e-12, abs=1e-13)


def test_rosenbrock_hessian_and_hvp():
    def rosenbrock(x):
        return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2 for i in range(len(x) - 1))

    F = tape.trace(rosenbrock, np.zeros(6))
    x = RNG.uniform(-1, 1, 6)
    H = F.hessian(x)
    expected = np.zeros((6, 6))
    for i in range(5):
        expected[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        expected[i + 1, i + 1] += 200
        expected[i, i + 1] = expected[i + 1, i] = -400 * x[i]
    np.testing.assert_allclose(H, expected, rtol=1e-13, atol=1e-11)
    assert np.array_equal(H, H.T)
    v = RNG.normal(size=6)
    np.testing.assert_allclose(F.hvp(x, v), expected @ v, rtol=1e-12, atol=1e-10)


def test_hessian_through_a_grouped_op_between_plain_ones():
    """forward_second hands the grouped record to forward_second_from (tape/function/derivatives.py),
    which computes it and every record after: f = log1p(x y) y + x^2, with u = 1 + x y."""
    F = tape.trace(lambda v: tape.log1p(v[0] * v[1]) * v[1] + v[0] * v[0], [0.5, 0.5])
    for x, y in RNG.uniform(0.2, 2.0, (5, 2)):
        u = 1.0 + x * y
        expected = [[2.0 - y**3 / u**2, 2 * y / u - x * y**2 / u**2], [2 * y / u - x * y**2 / u**2, x / u + x / u**2]]
        np.testing.assert_allclose(F.hessian([x, y]), expected, rtol=1e-13)
        np.testing.assert_allclose(F.hvp([x, y], [1.0, -2.0]), np.array(expected) @ [1.0, -2.0], rtol=1e-13)


KINKS_SECOND = [
    ("sqrt''(0) = -inf", tape.sqrt, 0.0, -math.inf),
    ("(x**2)'' at 0 = 2", lambda x: x**2, 0.0, 2.0),
    ("(x**3)'' at 0 = 0", lambda x: x**3, 0.0, 0.0),
    ("(x**1)'' at 0 = 0", lambda x: x**1, 0.0, 0.0),
    ("(x**0)'' at 0 = 0", lambda x: x**0, 0.0, 0.0),
    ("(x**0.5)'' at 0 = -inf", lambda x: x**0.5, 0.0, -math.inf),
    ("abs'' = 0 everywhere", abs, 0.0, 0.0),
    ("relu'' = 0 everywhere", tape.relu, 0.0, 0.0),
    ("maximum'' at a tie = 0", lambda x: tape.maximum(x, 1.0), 1.0, 0.0),
    ("(2**x)'' = 2**x log(2)**2", lambda x: 2.0**x, 1.0, 2.0 * math.log(2.0) ** 2),
    ("(0**x)'' in x at 0 base = 0", lambda x: 0.0**x, 2.0, 0.0),
]


@pytest.mark.parametrize("label, fn, x, expected", KINKS_SECOND, ids=[k[0] for k in KINKS_SECOND])
def test_second_order_kink_conventions(label, fn, x, expected):
    F = tape.trace(lambda v: fn(v[0]), [x + 0.5])
    assert F.hessian([x])[0, 0] == expected, label


def test_hvp_through_where_does_not_visit_the_other_side():
    F = tape.trace(lambda v: tape.where(v[1] > 1.0, v[0] / v[1], v[0] * v[0]), [1.0, 2.0])
    H = F.hessian([3.0, 0.0])
    np.testing.assert_array_equal(H, [[2.0, 0.0], [0.0, 0.0]])


def test_hvp_errors_and_branches():
    F = tape.trace(vector_function, [0.3, -0.4, 0.8])
    with pytest.raises(ValueError, match="one output"):
        F.hvp([0.1, 0.2, 0.3], [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="one output"):
        F.hessian([0.1, 0.2, 0.3])

    def branchy(v):
        return v[0] * v[0] if v[0] > 0.0 else -v[0] * v[0] * v[0]

    G = tape.trace(branchy, [1.0])
    with pytest.raises(tape.BranchChanged):
        G.hvp([-1.0], [1.0])
    with pytest.raises(tape.BranchChanged):
        G.jvp([-1.0], [1.0])
    R = tape.trace(branchy, [1.0], on_branch_change="retrace")
    assert R.hessian([-2.0])[0, 0] == 12.0 and R.retraces == 1


def test_trust_region_newton_with_hessp():
    optimize = pytest.importorskip("scipy.optimize")

    def rosenbrock(x):
        return sum(100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2 for i in range(len(x) - 1))

    x0 = np.array([-1.2, 1.0, -0.5, 0.8, 1.3, 0.1])
    F = tape.trace(rosenbrock, x0)
    for method in ("trust-ncg", "trust-krylov"):
        result = optimize.minimize(F.value_and_grad, x0, jac=True, hessp=F.hvp, method=method,
                                   options={"gtol": 1e-8})
        assert result.success, (method, result.message)
        np.testing.assert_allclose(result.x, np.ones(6), atol=1e-7)


PAIR_SECOND = [  # Hessians of the binary ops at their edges (docs/design.md "Conventions at kinks")
    (tape.hypot, 0.0, 0.0, [[0.0, 0.0], [0.0, 0.0]]),  # as abs'' = 0 at the kink
    (tape.arctan2, 0.0, 0.0, [[0.0, 0.0], [0.0, 0.0]]),
    (tape.hypot, 1e300, 0.0, [[0.0, 0.0], [0.0, 1e-300]]),  # b²/y³, a²/y³ scaled: no overflow
    (tape.arctan2, 3.0, 4.0, [[-24 / 625, -7 / 625], [-7 / 625, 24 / 625]]),
    (tape.arctan2, 3e150, 4e150, [[-24 / 625 * 1e-300, -7 / 625 * 1e-300], [-7 / 625 * 1e-300, 24 / 625 * 1e-300]]),
    (tape.logaddexp, -math.inf, -math.inf, [[0.25, -0.25], [-0.25, 0.25]]),  # a tie, as logaddexp(t, t)
    (tape.fmax, 1.0, 1.0, [[0.0, 0.0], [0.0, 0.0]]),
]


@pytest.mark.parametrize("fn, a, b, expected", PAIR_SECOND, ids=[f"{k[0].__name__}{k[1:3]}" for k in PAIR_SECOND])
def test_second_order_conventions_of_the_binary_ops(fn, a, b, expected):
    F = tape.trace(lambda v: fn(v[0], v[1]), [0.5, 0.25])
    np.testing.assert_allclose(F.hessian([a, b]), expected, rtol=1e-14, atol=0)


# -- derivatives beyond the gradient straight from a recorded tape ------------------------------


def _programs():
    def scalar(t):
        xs = t.vars([0.5, 1.2, -0.3, 2.0])
        y = tape.sin(xs[0] * xs[1]) + xs[2] ** 3 * xs[0] + tape.where(xs[3] > 1.0, xs[3] * xs[1], xs[0])
        return xs, y, [y, xs[0] * xs[3], tape.exp(xs[2])]

    def arrays(t):
        X = t.array(np.linspace(-1.0, 1.0, 40))
        y = (np.tanh(X * 1.5) ** 2).sum() + (X * X).sum() * X[3]
        return X, y, np.tanh(X[:5] * X[5:10])

    return {"scalar records": scalar, "array records": arrays}


@pytest.mark.parametrize("kind", ["scalar records", "array records"])
def test_a_tapes_own_derivatives_equal_its_functions_bit_for_bit(kind):
    t = tape.Tape()
    xs, y, outs = _programs()[kind](t)
    n = xs.size if isinstance(xs, tape.VarArray) else len(xs)
    v = np.random.default_rng(3).normal(size=n)
    point = (xs.value if isinstance(xs, tape.VarArray) else np.array([x.value for x in xs])).ravel()
    F, G = t.function(xs, y), t.function(xs, outs)
    assert np.array_equal(t.hvp(y, xs, v), np.ravel(F.hvp(point, v)))
    assert np.array_equal(t.hessian(y, xs), np.reshape(F.hessian(point), (n, n)))
    assert np.array_equal(t.jacobian(outs, xs), np.reshape(G.jacobian(point), (-1, n)))
    assert np.array_equal(t.jvp(outs, xs, v), np.ravel(G.jvp(point, v)))
    assert t.jvp(y, xs, v) == F.jvp(point, v)
    value, grad, hv = t.value_grad_hvp(y, xs, v)
    F_value, F_grad = F.value_and_grad(point)
    assert value == F_value and np.array_equal(grad, np.ravel(F_grad)) and np.array_equal(hv, t.hvp(y, xs, v))
    assert np.array_equal(grad, np.ravel(t.gradient(y, xs)))
    value2, grad2, hv2 = F.value_grad_hvp(point, v)  # the Function's one-pass form too
    assert value2 == value and np.array_equal(np.ravel(grad2), grad) and np.array_equal(np.ravel(hv2), hv)


def test_a_tape_of_scalar_records_lends_its_records_and_keeps_its_working_memory():
    import gc
    import tracemalloc
    import weakref

    t = tape.Tape()
    xs = t.vars(np.linspace(0.1, 1.0, 50))
    y = xs[0] * 0.0
    for k in range(2000):
        y = y + tape.sin(xs[k % 50] * xs[(k * 7) % 50])
    v = np.ones(50)
    first = t.hvp(y, xs, v)
    F = t._derivatives[1]
    assert np.shares_memory(F._op, t._op) and np.shares_memory(F._val, t._val)  # no copy of the records
    tracemalloc.start()
    again = t.hvp(y, xs, v)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert np.array_equal(first, again) and t._derivatives[1] is F
    assert peak < 8 * 1024  # the working memory of the first call, reused (8 KiB: a few small arrays)
    z = y * 2.0  # the tape changed: a new Function of its records, at the same numbers
    assert np.array_equal(t.hvp(z, xs, v), 2.0 * first) and t._derivatives[1] is not F
    t.forward(xs, np.linspace(0.2, 2.0, 50))  # derivatives where the tape stands now
    G = t.function(xs, y, cse=False)  # (the tape's own records are not merged)
    assert np.array_equal(t.hvp(y, xs, v), G.hvp(np.linspace(0.2, 2.0, 50), v))
    ref = weakref.ref(t)
    del t, xs, y, z, F, G
    gc.disable()
    try:
        assert ref() is None  # freed by reference counting: the cache holds no handle
    finally:
        gc.enable()
