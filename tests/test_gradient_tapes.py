"""The gradient of a tape is a tape: Function.grad_function, vjp_function, jvp_function.

References: the Function's own sweeps (the gradient bit for bit; F.hessian, F.jvp, F.vjp to
rounding) and sympy on random expressions, up to the fourth derivative.
"""

import io
import math

import numpy as np
import pytest

import tape

sympy = pytest.importorskip("sympy")


def f_mixed(x):
    y = tape.sin(x[0]) * x[1] ** 2 + tape.exp(x[0] * x[1]) / (1.0 + x[1] * x[1])
    z = tape.where(x[0] > 0.5, y, -y) + tape.maximum(x[0], x[1]) + abs(x[2] - x[0])
    return z * tape.tanh(x[2]) + tape.sqrt(x[2] * x[2] + 1.0) ** 1.5 + tape.logaddexp(x[0], x[2])


POINTS = np.random.default_rng(3).normal(0, 1.2, (25, 3))


def test_the_gradient_function_gives_the_gradient_bit_for_bit():
    F = tape.trace(f_mixed, [0.3, 1.2, -0.4])
    G = F.grad_function()
    for x in POINTS:
        assert np.array_equal(G(x), F.gradient(x))
    V = F.grad_function(value=True)
    value, grad = F.value_and_grad(POINTS[0])
    assert np.array_equal(V(POINTS[0]), np.concatenate([[value], grad]))


def test_the_new_tape_begins_with_the_original_records(monkeypatch):
    F = tape.trace(f_mixed, [0.3, 1.2, -0.4])
    pruned = F.grad_function()
    monkeypatch.setattr(tape.analyses.prune, "run",
                        lambda a, lines, wanted, plans, callees, *_: (a, lines, plans, callees, (0, 0, "off")))
    G = F.grad_function()
    n = len(F)
    for name in ("_op", "_in0", "_in1"):
        assert np.array_equal(getattr(G, name)[:n], getattr(F, name))
    assert len(G) > n and np.array_equal(G._input_rows, F._input_rows)
    assert len(pruned) < len(G) and np.array_equal(pruned._input_rows, F._input_rows)  # F's output value: dead


def test_hessian_is_the_jacobian_of_the_gradient_function():
    F = tape.trace(f_mixed, [0.3, 1.2, -0.4])
    G = F.grad_function()
    for x in POINTS[:10]:
        np.testing.assert_allclose(G.jacobian(x), F.hessian(x), rtol=1e-12, atol=1e-12)
        v = np.array([0.3, -1.0, 2.0])
        np.testing.assert_allclose(G.jvp(x, v), F.hvp(x, v), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(G.jvp_function()((x, v)), F.hvp(x, v), rtol=1e-12, atol=1e-12)


def test_vjp_and_jvp_functions():
    def g(x):
        return [x[0] * x[1], tape.sin(x[0]) + x[2] ** 3, tape.exp(x[1] - x[2])]

    F = tape.trace(g, np.array([0.5, 0.2, 0.1]))
    V, J = F.vjp_function(), F.jvp_function()
    rng = np.random.default_rng(1)
    for x in POINTS[:8]:
        w, v = rng.normal(size=3), rng.normal(size=3)
        np.testing.assert_array_equal(V((x, w)), F.vjp(x, w))
        np.testing.assert_array_equal(V(np.concatenate([x, w])), F.vjp(x, w))
        np.testing.assert_array_equal(V((x.tolist(), w.tolist())), F.vjp(x, w))
        np.testing.assert_array_equal(V([*x.tolist(), *w.tolist()]), F.vjp(x, w))
        np.testing.assert_allclose(J((x, v)), F.jvp(x, v), rtol=1e-15, atol=1e-15)
    both = F.jvp_function(value=True)(np.concatenate([x, v]))
    np.testing.assert_allclose(both, np.concatenate([F(x), F.jvp(x, v)]), rtol=1e-15)


ZEROS_MEET_INFINITIES = [  # programs whose partials are inf or NaN at points where what they multiply is 0
    lambda x: [x[0] * tape.sqrt(x[1]), x[1] * tape.log(x[0])],  # adjoint 0 (arithmetic) times sqrt'(0) = inf
    lambda x: [tape.sqrt(x[0] * x[1]) * x[0], tape.arcsin(x[1]) * (x[0] - x[0])],  # 0 * arcsin'(1) = 0 * inf
    lambda x: [tape.where(x[0] > 0.0, x[0] * tape.sqrt(x[1]), 0.0), x[0] ** 0.5 * x[1]],  # a select's zero
    lambda x: [tape.log(x[0]) * 0.0 + x[1], tape.sqrt(x[1]) * tape.sqrt(x[0])],  # a product with the number 0
]
EDGES = [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [-0.0, 1.0], [0.0, np.inf], [np.inf, 0.0], [np.nan, 0.0], [0.5, 1.0]]


@pytest.mark.parametrize("k", range(len(ZEROS_MEET_INFINITIES)))
def test_a_zero_times_an_infinite_partial_is_zero_as_in_the_sweeps(k):
    # every product of a gradient tape is a mul_nz record: 0 where a factor is 0, as the numeric sweeps
    # skip it, whatever made the zero (arithmetic, a select, a zero seed)
    f = ZEROS_MEET_INFINITIES[k]
    F = tape.trace(f, [0.5, 0.5], on_branch_change="retrace")
    S = tape.trace(lambda x: f(x)[0] + f(x)[1] * 2.0, [0.5, 0.5], on_branch_change="retrace")
    V, J, G = F.vjp_function(), F.jvp_function(), S.grad_function()
    for x in EDGES:
        for w in ([1.0, 1.0], [0.0, 1.0], [1.0, 0.0], [0.0, 0.0]):
            with np.errstate(all="ignore"):
                np.testing.assert_array_equal(V((x, w)), F.vjp(x, w), err_msg=f"vjp at {x}, {w}")
                np.testing.assert_array_equal(J((x, w)), F.jvp(x, w), err_msg=f"jvp at {x}, {w}")
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(G(x), S.gradient(x), err_msg=f"gradient at {x}")
    assert S.gradient([0.0, 0.0]).tolist() == G([0.0, 0.0]).tolist()
    assert "mul_nz" in G.stats()["by_op"]


def test_the_old_nan_at_a_zero_adjoint_is_gone():
    F = tape.trace(lambda x: x[0] * tape.sqrt(x[1]), [1.0, 1.0])
    assert F.gradient([0.0, 0.0]).tolist() == F.grad_function()([0.0, 0.0]).tolist() == [0.0, 0.0]
    H = F.grad_function().jacobian([0.0, 0.0])  # the second derivative, where sqrt'' is -inf
    np.testing.assert_array_equal(H, F.hessian([0.0, 0.0]))


def test_derivative_functions_replay_save_load_and_map():
    F = tape.trace(f_mixed, [0.3, 1.2, -0.4])
    G = F.grad_function()
    buffer = io.BytesIO()
    G.save(buffer)
    buffer.seek(0)
    L = tape.load(buffer)
    np.testing.assert_array_equal(L(POINTS[1]), G(POINTS[1]))
    np.testing.assert_array_equal(G.map(POINTS), np.array([F.gradient(x) for x in POINTS]))


def test_checked_branches_stay_checked():
    def f(x):
        if x[0] > 0:
            return x[0] * x[0] * x[1]
        return -x[0] * x[1] ** 3

    F = tape.trace(f, [1.0, 2.0])
    G = F.grad_function()
    np.testing.assert_array_equal(G([0.5, 3.0]), [3.0, 0.25])
    with pytest.raises(tape.BranchChanged):
        G([-0.5, 3.0])
    R = tape.trace(f, [1.0, 2.0], on_branch_change="retrace").grad_function()
    assert R.on_branch_change == "retrace"
    np.testing.assert_allclose(R([-0.5, 3.0]), [-27.0, -0.5 * 3 * 9.0 * -1])
    np.testing.assert_allclose(R.jacobian([-0.5, 3.0]), [[-27.0 * 0, -27.0], [-27.0, 9.0]])
    assert R.retraces == 1


def test_the_unchosen_side_of_a_select_stays_out():
    def f(x):
        return tape.where(x[1] > 1.0, x[0] / x[1], 0.0) + tape.where(x[0] > 0.0, tape.sqrt(x[0]), x[0])

    F = tape.trace(f, [1.0, 2.0])
    G = F.grad_function()
    for x in ([1.0, 0.0], [0.0, 3.0], [-1.0, 0.0], [2.0, 2.0]):
        np.testing.assert_array_equal(G(x), F.gradient(x))
        assert np.all(np.isfinite(G.jacobian(x)))
        np.testing.assert_array_equal(G.jacobian(x), F.hessian(x))


def test_params_stay_params():
    F = tape.trace(lambda x, p: p[0] * x[0] ** 3 + x[1] * p[1], [1.0, 2.0], params=[2.0, 5.0])
    G = F.grad_function()
    assert G.n_params == 2
    np.testing.assert_array_equal(G([1.5, 1.0], params=[3.0, 7.0]), F.gradient([1.5, 1.0], params=[3.0, 7.0]))


# -- random expressions against sympy ---------------------------------------------------------------

UNARY = [
    (tape.sin, sympy.sin), (tape.cos, sympy.cos), (tape.tanh, sympy.tanh), (tape.arctan, sympy.atan),
    (lambda u: tape.exp(u * 0.3), lambda u: sympy.exp(u * 0.3)),
    (lambda u: tape.log(u * u + 1.0), lambda u: sympy.log(u * u + 1)),
    (lambda u: tape.sqrt(u * u + 2.0), lambda u: sympy.sqrt(u * u + 2)),
    (tape.sigmoid, lambda u: 1 / (1 + sympy.exp(-u))),
    (lambda u: u ** 3, lambda u: u ** 3),
    (lambda u: 1.0 / (u * u + 1.0), lambda u: 1 / (u * u + 1)),
    (tape.erf, sympy.erf), (tape.sinh, sympy.sinh),
    (lambda u: tape.cbrt(u * u + 1.0), lambda u: (u * u + 1) ** sympy.Rational(1, 3)),
]
BINARY = [
    (lambda u, v: u + v, lambda u, v: u + v), (lambda u, v: u * v, lambda u, v: u * v),
    (lambda u, v: u - 2.0 * v, lambda u, v: u - 2 * v),
    (lambda u, v: u / (v * v + 1.0), lambda u, v: u / (v * v + 1)),
    (lambda u, v: tape.hypot(u, v + 3.0), lambda u, v: sympy.sqrt(u * u + (v + 3) ** 2)),
    (lambda u, v: tape.arctan2(u, v * v + 1.0), lambda u, v: sympy.atan2(u, v * v + 1)),
    (lambda u, v: tape.logaddexp(u, v), lambda u, v: sympy.log(sympy.exp(u) + sympy.exp(v))),
]


def random_expression(rng, depth):
    """(tape function of x, sympy expression) of a random tree over x0, x1."""
    if depth == 0 or rng.random() < 0.15:
        k = int(rng.integers(2))
        return (lambda x: x[k]), sympy.Symbol(f"x{k}")
    if rng.random() < 0.5:
        (f, s), (g, e) = UNARY[int(rng.integers(len(UNARY)))], random_expression(rng, depth - 1)
        return (lambda x: f(g(x))), s(e)
    (f, s) = BINARY[int(rng.integers(len(BINARY)))]
    (g1, e1), (g2, e2) = random_expression(rng, depth - 1), random_expression(rng, depth - 1)
    return (lambda x: f(g1(x), g2(x))), s(e1, e2)


@pytest.mark.parametrize("seed", range(12))
def test_derivatives_of_any_order_against_sympy(seed):
    rng = np.random.default_rng(seed)
    f, expression = random_expression(rng, 3)
    symbols = sympy.symbols("x0 x1")
    F = tape.trace(lambda x: f(x) + 0.0 * x[0] + 0.0 * x[1], [0.4, -0.3])
    G = F.grad_function()
    H = G.jvp_function()  # (x, v) -> H v
    for x in rng.normal(0, 0.8, (2, 2)):
        at = dict(zip(symbols, x.tolist(), strict=True))
        assert np.array_equal(G(x), F.gradient(x), equal_nan=True)  # the numeric sweep's bits
        assert np.array_equal(F.jvp_function()((x, [0.7, -1.3])), F.jvp(x, [0.7, -1.3]), equal_nan=True)
        grad = [float(sympy.diff(expression, s).evalf(subs=at)) for s in symbols]
        np.testing.assert_allclose(G(x), grad, rtol=1e-9, atol=1e-12)
        hessian = [[float(sympy.diff(expression, s, r).evalf(subs=at)) for r in symbols] for s in symbols]
        np.testing.assert_allclose(G.jacobian(x), hessian, rtol=1e-8, atol=1e-10)
        # third derivatives: d(H v)/dx = sum_j T[:, j, :] v_j, the Jacobian of the H v Function
        v = np.array([0.7, -1.3])
        third = np.array([[sum(float(sympy.diff(expression, s, symbols[j], r).evalf(subs=at)) * v[j]
                                for j in range(2)) for r in symbols] for s in symbols])
        np.testing.assert_allclose(H.jacobian(np.concatenate([x, v]))[:, :2], third, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_repeated_grad_functions_of_one_variable(seed):
    rng = np.random.default_rng(100 + seed)
    f, expression = random_expression(rng, 3)
    x0 = sympy.Symbol("x0")
    expression = expression.subs(sympy.Symbol("x1"), 0.5 * x0 + 0.25)
    F = tape.trace(lambda x: f([x[0], 0.5 * x[0] + 0.25]) + 0.0 * x[0], [0.1])
    at = float(rng.normal(0, 0.7))
    D = F
    for order in range(1, 5):
        D = D.grad_function()
        expected = float(sympy.diff(expression, x0, order).evalf(subs={x0: at}))
        assert math.isclose(float(D([at])[0]), expected, rel_tol=1e-7, abs_tol=1e-9), order


def test_tangents_through_selects_and_retraced_pairs():
    def f(x):
        return tape.where(x[1] > 1.0, x[0] / x[1], 0.0) + tape.where(x[0] > 0.0, tape.sqrt(x[0]), x[0])

    F = tape.trace(f, [1.0, 2.0])
    J = F.jvp_function()
    for x in ([1.0, 0.0], [0.0, 3.0], [-1.0, 0.0], [2.0, 2.0]):
        assert J((x, [0.0, 1.0])) == F.jvp(x, [0.0, 1.0])
        assert J((x, [1.0, 0.5])) == F.jvp(x, [1.0, 0.5]) or not np.isfinite(F.jvp(x, [1.0, 0.5]))

    def g(x):
        return x[0] ** 3 * x[1] if x[0] > 0 else x[0] * x[1] ** 2

    R = tape.trace(g, [1.0, 2.0], on_branch_change="retrace")
    J, V = R.jvp_function(), R.vjp_function()
    assert J(([-1.0, 3.0], [1.0, 0.0])) == 9.0  # g = x0 x1^2 there: d/dx0 = x1^2
    np.testing.assert_array_equal(V(([-1.0, 3.0], 1.0)), [9.0, -6.0])
    assert J.retraces == V.retraces == 1


def test_a_call_record_differentiates_as_a_call_of_the_callee_derivative():
    F = tape.trace(lambda x: x[0] * tape.sin(x[1]), [0.3, 0.7])
    G = tape.trace(lambda x: F([x[0], x[1] * 2.0]) + x[0], [0.3, 0.7])
    x = np.array([0.4, -0.9])
    np.testing.assert_allclose(G.grad_function()(x), [np.sin(2 * x[1]) + 1, 2 * x[0] * np.cos(2 * x[1])], rtol=1e-15)
    d2 = tape.grad(lambda x: tape.grad(lambda y: F([y[0], y[1]]))(x)[0])(x)  # d/dx of cos... : [0, cos(x1)]
    np.testing.assert_allclose(np.asarray(d2, float), [0.0, np.cos(x[1])], rtol=1e-15)


# -- the same bits as the numeric sweeps at edge points, signed zeros included (issue 29) ------------

EDGE_NUMBERS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 1e-300, -5e-324, 1.0, -2.0]


def bits(a):
    """The bits of float64 numbers, every NaN one NaN (a NaN's sign and payload are not promised)."""
    a = np.array(a, np.float64, ndmin=1)
    a[np.isnan(a)] = np.nan
    return a.view(np.uint64).tolist()


def test_a_zero_partial_passed_through_keeps_the_numeric_sign():
    """d/dy [x + y * -x] at (0, 1) is -x = -0.0 as a partial, a product the numeric sweep skips
    (its adjoint stays +0.0); the gradient tape passed the -0.0 through: [0., -0.] against [0., 0.]."""
    for f, x in [(lambda v: v[0] + v[1] * -v[0], [0.0, 1.0]), (lambda v: v[1] * tape.sin(-v[0]), [0.0, 1.0])]:
        F = tape.trace(f, [1.0, 1.0])
        assert bits(F.grad_function()(x)) == bits(F.gradient(x)) == bits([F.gradient(x)[0], 0.0])
        assert bits(F.vjp_function()((x, 1.0))) == bits(F.vjp(x, 1.0))
    J = tape.trace(lambda v: [v[0] * 1.0, v[0] * -v[1]], [1.0, 1.0]).jvp_function()  # tangents too
    assert bits(J(([1.0, 0.0], [0.0, 1.0]))) == bits([0.0, -1.0])


@pytest.mark.parametrize("seed", range(12))
def test_gradient_tapes_give_the_numeric_bits_at_edge_points(seed):
    """grad_function, vjp_function and jvp_function against F.gradient, F.vjp and F.jvp on random
    programs at every pair of edge numbers (0, -0.0, ±inf, NaN, huge, tiny): the same bits."""
    rng = np.random.default_rng(500 + seed)
    f, _ = random_expression(rng, 3)
    F = tape.trace(lambda x: [f(x) * 1.0, f([x[1], x[0]]) - x[0]], [0.4, -0.3])
    S = tape.trace(lambda x: f(x) * 1.0, [0.4, -0.3])
    G, V, J = S.grad_function(), F.vjp_function(), F.jvp_function()
    points = rng.choice(EDGE_NUMBERS, (40, 2)).tolist() + [[0.0, 1.0], [-0.0, 1.0], [1.0, -0.0]]
    with np.errstate(all="ignore"):
        for x in points:
            assert bits(G(x)) == bits(S.gradient(x)), x
            for w in ([1.0, -1.5], [-0.0, 1.0], [1e-300, 1e-300]):
                assert bits(V((x, w))) == bits(F.vjp(x, w)), (x, w)
                assert bits(J((x, w))) == bits(F.jvp(x, w)), (x, w)
