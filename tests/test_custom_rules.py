"""tape.custom_vjp, tape.custom_jvp and tape.custom_root: derivative rules a user gives, one call record each.

References: derivatives by hand (softplus' is the logistic function), central differences, and for
custom_root the same program with the root found by unrolled Newton steps recorded by tape (every
step's records differentiated, np.linalg.solve included), which must agree to rounding in value,
gradient, tangent and Hessian; scipy.optimize.root is the solver differentiated through.
"""

import io
import pickle

import numpy as np
import pytest
import scipy.optimize

import tape

RNG = np.random.default_rng(30)


@tape.custom_vjp
def scaled_sin(x, y):
    return np.sin(x) * y


def _fwd(x, y):
    return np.sin(x) * y, (np.cos(x), np.sin(x), y)


def _bwd(residuals, g):
    cos, sin, y = residuals
    return cos * y * g, sin * g


scaled_sin.defvjp(_fwd, _bwd)


@tape.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1.0 + np.exp(-x))


def central(f, x0, v, h=1e-6):
    return (f(x0 + h * v) - f(x0 - h * v)) / (2 * h)


@pytest.mark.parametrize("n", [3, 2000], ids=["scalar-records", "array-records"])
def test_custom_vjp_in_reverse_replay_and_maps(n):
    x0 = RNG.normal(size=2 * n)

    def loss(z):
        return np.sum(scaled_sin(z[:n], z[n:]) ** 2)
    F = tape.trace(loss, x0)
    assert "array call" in F.stats()["by_op"]
    s, c, y = np.sin(x0[:n]), np.cos(x0[:n]), x0[n:]
    expected = np.concatenate([2 * s * y * c * y, 2 * s * y * s])  # by hand
    np.testing.assert_allclose(F.gradient(x0), expected, rtol=1e-13)
    v = RNG.normal(size=2 * n)
    assert F.gradient(x0) @ v == pytest.approx(central(loss, x0, v), rel=1e-6)
    x1 = x0 + 0.1
    assert F(x1) == pytest.approx(loss(x1), rel=1e-13)
    np.testing.assert_allclose(F.map(np.stack([x0, x1])), [loss(x0), loss(x1)], rtol=1e-13)
    assert scaled_sin(0.5, 2.0) == np.sin(0.5) * 2.0  # on numbers: the plain function


def test_custom_vjp_refuses_forward_mode_second_order_and_save_by_name():
    F = tape.trace(lambda z: np.sum(scaled_sin(z[:2], z[2:])), np.ones(4))
    with pytest.raises(tape.TapeError, match="custom_vjp.*reverse rule only"):
        F.jvp(np.ones(4), np.ones(4))
    with pytest.raises(tape.TapeError, match="custom_vjp"):
        F.hessian(np.ones(4))
    with pytest.raises(TypeError, match="cannot be saved"):
        F.save(io.BytesIO())


def test_a_rule_not_given_or_malformed_is_named():
    bare = tape.custom_vjp(lambda x: x * 2.0)
    with pytest.raises(tape.TapeError, match="defvjp"):
        tape.trace(lambda z: np.sum(bare(z)), np.ones(3))
    bad = tape.custom_vjp(lambda x: x * 2.0)
    bad.defvjp(lambda x: (x * 2.0, None), lambda res, g: g * 2.0)  # not a tuple
    F = tape.trace(lambda z: np.sum(bad(z)), np.ones(3))
    with pytest.raises(TypeError, match="tuple of one cotangent per argument"):
        F.gradient(np.ones(3))
    wrong = tape.custom_vjp(lambda x: x * 2.0)
    wrong.defvjp(lambda x: (x * 2.0, None), lambda res, g: (g[:2],))
    G = tape.trace(lambda z: np.sum(wrong(z)), np.ones(3))
    with pytest.raises(ValueError, match="bwd gives shapes"):
        G.gradient(np.ones(3))
    no_jvp = tape.custom_jvp(np.sin)
    with pytest.raises(tape.TapeError, match="defjvp"):
        tape.trace(lambda z: np.sum(no_jvp(z)), np.ones(3))


@pytest.mark.parametrize("n", [5, 1500], ids=["scalar-records", "array-records"])
def test_custom_jvp_in_tangent_and_reverse(n):
    x0 = RNG.normal(size=n)
    weights = np.linspace(-1.0, 2.0, n)

    def loss(z):
        return np.sum(softplus(z) * weights)
    F = tape.trace(loss, x0)
    logistic = 1.0 / (1.0 + np.exp(-x0))
    v = RNG.normal(size=n)
    assert F.jvp(x0, v) == pytest.approx(np.sum(logistic * weights * v), rel=1e-12)
    np.testing.assert_allclose(F.gradient(x0), logistic * weights, rtol=1e-12)  # the rule linearized
    assert F.gradient(x0) @ v == pytest.approx(central(loss, x0, v), rel=1e-6)
    # second order from the linearized rule: softplus'' = σ (1 - σ), by hand
    np.testing.assert_allclose(F.hvp(x0, v), weights * logistic * (1 - logistic) * v, rtol=1e-10)


def test_custom_jvp_of_two_arguments_in_second_order():
    @tape.custom_jvp
    def f(x, y):
        return x * np.sin(y)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), (dx, dy) = primals, tangents
        return f(x, y), dx * np.sin(y) + x * np.cos(y) * dy

    z0 = np.array([1.0, 2.0, 0.3, 0.7])
    G = tape.trace(lambda z: np.sum(f(z[:2], z[2:]) ** 2), z0)
    inline = tape.trace(lambda z: np.sum((z[:2] * np.sin(z[2:])) ** 2), z0)  # the same function without a rule
    np.testing.assert_allclose(G.gradient(z0), inline.gradient(z0), rtol=1e-13)
    np.testing.assert_allclose(G.hessian(z0), inline.hessian(z0), rtol=1e-12, atol=1e-14)


def test_custom_jvp_whose_rule_tape_cannot_trace():
    """A rule through SciPy: the reverse takes one jvp per input, second order is refused by name."""
    import scipy.special

    @tape.custom_jvp
    def logistic(x):
        return scipy.special.expit(x)

    @logistic.defjvp
    def logistic_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        e = scipy.special.expit(np.asarray(x))
        return e, t * e * (1 - e)

    x0 = np.array([-1.0, 0.5, 2.0])
    F = tape.trace(lambda z: np.sum(logistic(z * 1.0)), x0)
    s = 1 / (1 + np.exp(-x0))
    np.testing.assert_allclose(F.gradient(x0), s * (1 - s), rtol=1e-13)
    with pytest.raises(tape.TapeError, match="could not trace its jvp rule"):
        F.hessian(x0)


def test_functions_with_importable_rules_pickle():
    F = tape.trace(lambda z: np.sum(softplus(z)), np.ones(3))
    G = pickle.loads(pickle.dumps(F))
    np.testing.assert_allclose(G.gradient(np.zeros(3)), 0.5)
    R = tape.trace(objective(lambda th: ROOT(th, np.zeros(N))), np.array([1.5, 0.1, 0.2, 0.3]))
    S = pickle.loads(pickle.dumps(R))
    np.testing.assert_allclose(S.gradient(np.array([1.5, 0.1, 0.2, 0.3])), R.gradient(np.array([1.5, 0.1, 0.2, 0.3])))
    for held in (F, R):  # a .npz holds no Python function: save says so (pickle stores the rules by name)
        with pytest.raises(TypeError, match="cannot be saved"):
            held.save(io.BytesIO())


# -- custom_root: differentiating through scipy.optimize.root ------------------------------------------

N = 3


def residual(x, theta):
    """x³ + θ₀ x + 0.1 Σx - θ[1:] = 0: a coupled monotone system, one root."""
    return x ** 3 + theta[0] * x + 0.1 * np.sum(x) - theta[1:]


def scipy_solve(g, x0):
    return scipy.optimize.root(g, x0, tol=1e-13).x


ROOT = tape.custom_root(residual, scipy_solve)


def newton(theta, steps=40):
    """The root by unrolled Newton steps, every one recorded when theta holds Vars."""
    x = np.zeros(N)
    for _ in range(steps):
        jacobian = np.eye(N) * (3 * x ** 2 + theta[0]) + 0.1
        x = x - np.linalg.solve(jacobian, residual(x, theta))
    return x


def objective(solver):
    def loss(theta):
        x = solver(theta)
        return np.sum(np.sin(x) * np.arange(1.0, N + 1)) + theta[0] * x[0] ** 2
    return loss


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_custom_root_matches_unrolled_newton_in_every_order(seed):
    theta0 = np.array([1.5, *np.random.default_rng(seed).normal(size=N)])
    F = tape.trace(objective(lambda th: ROOT(th, np.zeros(N))), theta0)
    G = tape.trace(objective(newton), theta0)
    assert len(F) < len(G) / 20  # one call record instead of 40 steps
    assert F(theta0) == pytest.approx(G(theta0), rel=1e-12)
    np.testing.assert_allclose(F.gradient(theta0), G.gradient(theta0), rtol=1e-9, atol=1e-12)
    v = np.random.default_rng(seed + 10).normal(size=N + 1)
    assert F.jvp(theta0, v) == pytest.approx(G.jvp(theta0, v), rel=1e-9)
    np.testing.assert_allclose(F.hessian(theta0), G.hessian(theta0), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(F.gradient(theta0) @ v, central(objective(newton), theta0, v), rtol=1e-6)
    theta1 = theta0 + 0.2  # replayed: solved again
    assert F(theta1) == pytest.approx(objective(newton)(theta1), rel=1e-12)


def test_custom_root_scalar_closed_form():
    """x² = θ: x* = √θ, dx*/dθ = 1/(2√θ), d²x*/dθ² = -1/(4 θ^1.5)."""
    root = tape.custom_root(lambda x, th: x * x - th, lambda g, x0: scipy.optimize.brentq(g, 0.0, 10.0))
    F = tape.trace(lambda th: root(th[0], 1.0) * 1.0, np.array([2.0]))
    assert F(np.array([2.0])) == pytest.approx(np.sqrt(2.0), rel=1e-12)
    assert F.gradient(np.array([2.0]))[0] == pytest.approx(1 / (2 * np.sqrt(2.0)), rel=1e-9)
    assert F.hessian(np.array([2.0]))[0, 0] == pytest.approx(-1 / (4 * 2.0 ** 1.5), rel=1e-8)


def test_custom_root_refuses_a_solve_off_the_root_and_a_singular_jacobian():
    lazy = tape.custom_root(residual, lambda g, x0: x0)  # returns the guess
    with pytest.raises(tape.TapeError, match="off the root"):
        tape.trace(lambda th: np.sum(lazy(th, np.zeros(N))), np.array([1.5, 1.0, 2.0, 3.0]))
    double = tape.custom_root(lambda x, th: (x - th) ** 2, lambda g, x0: np.array(1.0))  # a double root
    F = tape.trace(lambda th: double(th[0], 0.0) * 1.0, np.array([1.0]))
    with pytest.raises(np.linalg.LinAlgError, match="singular at the root"):
        F.gradient(np.array([1.0]))


def test_derivatives_as_records_through_a_custom_rule_say_so():
    F = tape.trace(lambda v: scaled_sin(v[0], v[1]) * v[0], [0.3, 0.7])
    with pytest.raises(NotImplementedError, match="through .* is not supported yet"):
        F.grad_function()
    with pytest.raises(NotImplementedError, match="through .* is not supported yet"):
        tape.grad(lambda v: tape.grad(lambda w: scaled_sin(w[0], w[1]))(v)[0])([0.3, 0.7])


def test_sparsity_through_a_custom_rule_is_dense_and_right():
    """A user's rule says nothing of which outputs read which inputs: its call is a dense block in the sparse
    Jacobian and Hessian patterns (never a missing entry), and the values are the dense ones."""
    x = np.linspace(0.2, 1.1, 5)
    F = tape.trace(lambda v: softplus(v) * v[0], x)
    J = F.sparse_jacobian(x)
    np.testing.assert_allclose(J.toarray(), F.jacobian(x), rtol=1e-14, atol=1e-15)
    G = tape.trace(lambda v: np.sum(softplus(v) * v), x)
    H = G.sparse_hessian(x)
    np.testing.assert_allclose(H.toarray(), G.hessian(x), rtol=1e-12, atol=1e-14)
