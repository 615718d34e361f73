"""Nested derivatives inside Python code (tape/symbolic/nest.py): tape.grad, value_and_grad, jvp and vjp
called on Vars of an outer transform's tape record the inner derivative onto it, as records.

References: tape.hessian's dedicated sweep (forward-over-reverse), closed forms, and the classic
perturbation-confusion examples (Siskind and Pearlmutter), which a confused nesting gets wrong.
"""

import math

import numpy as np
import pytest

import tape


def f(x):
    return tape.sin(x[0]) * x[1] ** 3 + tape.exp(x[0] * x[1]) + tape.where(x[0] > x[1], x[0] * x[0], x[1])


X, V, U = [0.3, 0.7], [1.0, -2.0], [0.5, 0.25]
H = np.array(tape.hessian(f)(X))


def test_reverse_over_reverse():
    np.testing.assert_allclose(np.array(tape.jacobian(tape.grad(f))(X)), H, rtol=1e-13)
    np.testing.assert_allclose(tape.grad(lambda x: tape.grad(f)(x)[0] * 2.0 + tape.grad(f)(x)[1])(X),
                               2.0 * H[0] + H[1], rtol=1e-13)


def test_forward_over_reverse():
    np.testing.assert_allclose(tape.jvp(tape.grad(f), (X,), (V,))[1], H @ V, rtol=1e-13)


def test_reverse_over_forward():
    np.testing.assert_allclose(tape.grad(lambda x: tape.jvp(f, (x,), (V,))[1])(X), H @ V, rtol=1e-13)


def test_forward_over_forward():
    inner = lambda x: tape.jvp(f, (x,), (V,))[1]  # noqa: E731
    assert math.isclose(tape.jvp(inner, (X,), (U,))[1], np.array(U) @ H @ V, rel_tol=1e-13)


def test_vjp_and_value_and_grad_inside():
    def g(x):
        y, pull = tape.vjp(lambda a: [a[0] * a[1], tape.sin(a[1])], x)
        (cot,) = pull([1.0, x[0]])  # a weight that is a Var of the outer tape
        value, grad = tape.value_and_grad(f)(x)
        return cot[0] * cot[1] + value * grad[0] + y[1]

    def reference(x):  # the same function, derivatives written out
        a0, a1 = x
        cot0, cot1 = a1, a0 + a0 * math.cos(a1)
        fx = math.sin(a0) * a1 ** 3 + math.exp(a0 * a1) + a1
        f0 = math.cos(a0) * a1 ** 3 + a1 * math.exp(a0 * a1)
        return cot0 * cot1 + fx * f0 + math.sin(a1)

    value, grad = tape.value_and_grad(g)(X)
    assert math.isclose(value, reference(X), rel_tol=1e-14)
    h = 1e-6
    central = [(reference([X[0] + h, X[1]]) - reference([X[0] - h, X[1]])) / (2 * h),
               (reference([X[0], X[1] + h]) - reference([X[0], X[1] - h])) / (2 * h)]
    np.testing.assert_allclose(grad, central, rtol=1e-7)


def test_no_perturbation_confusion_reverse():
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1; a confused nesting gives 2
    assert tape.grad(lambda x: x * tape.grad(lambda y: x + y)(1.0))(1.0) == 1.0
    assert tape.grad(lambda x: x * tape.grad(lambda y: x + y)(x))(1.0) == 1.0


def test_no_perturbation_confusion_forward():
    inner = lambda x: x * tape.jvp(lambda y: x + y, (1.0,), (1.0,))[1]  # noqa: E731
    assert tape.jvp(inner, (1.0,), (1.0,))[1] == 1.0
    inner_on_var = lambda x: x * tape.jvp(lambda y: x + y, (x,), (1.0,))[1]  # noqa: E731
    assert tape.jvp(inner_on_var, (1.0,), (1.0,))[1] == 1.0


def test_a_closure_over_an_outer_var():
    # inner: d/dy (x y^2) = 2 x y, at y = x: 2 x^2; outer: d/dx 2 x^2 = 4 x
    assert tape.grad(lambda x: tape.grad(lambda y: x * y * y)(x))(2.0) == 8.0
    assert tape.jvp(lambda x: tape.grad(lambda y: x * y * y)(x), (2.0,), (1.0,))[1] == 8.0
    assert tape.grad(lambda x: tape.jvp(lambda y: x * y * y, (x,), (1.0,))[1])(2.0) == 8.0


def test_a_traced_nested_derivative_replays_at_other_points():
    G = tape.trace(lambda x: tape.grad(f)(x), X)
    for x in ([1.0, 2.0], [-0.5, 0.4], [2.0, 1.0]):
        if (x[0] > x[1]) == (X[0] > X[1]):
            np.testing.assert_array_equal(G(x), tape.grad(f)(x))
    Hf = G.jacobian([1.0, 2.0])  # the Hessian, by differentiating the traced inner gradient
    np.testing.assert_allclose(Hf, np.array(tape.hessian(f)([1.0, 2.0])), rtol=1e-13)


def test_checked_branches_inside_the_inner_function_stay_checked():
    def inner(y):
        return y * y * y if y > 0 else -y

    G = tape.trace(lambda x: tape.grad(inner)(x[0]), [1.0])
    assert G([2.0]) == 12.0
    with pytest.raises(tape.BranchChanged):
        G([-1.0])


def test_third_derivative_by_three_nested_grads():
    d3 = tape.grad(tape.grad(tape.grad(lambda x: tape.sin(x) * x ** 4)))
    x = 0.8
    expected = (-math.cos(x) * x ** 4 - 12 * math.sin(x) * x ** 3 + 36 * math.cos(x) * x ** 2
                + 24 * math.sin(x) * x)
    assert math.isclose(d3(x), expected, rel_tol=1e-12)


def test_numbers_inside_still_record_on_a_tape_of_their_own():
    seen = []

    def g(x):
        value, grad = tape.value_and_grad(lambda y: y * y)(3.0)  # no outer Var reached: numbers
        seen.append((type(value), type(grad)))
        return x * grad

    assert tape.grad(g)(2.0) == 6.0
    assert seen == [(float, float)]


def test_has_aux_inside():
    def g(x):
        grad, aux = tape.grad(lambda y: (y * y * x, y + 1.0), has_aux=True)(x)
        return grad * aux

    # grad = 2 x^2 (y = x), aux = x + 1: d/dx 2 x^2 (x + 1) = 6 x^2 + 4 x
    assert math.isclose(tape.grad(g)(1.5), 6 * 2.25 + 6.0, rel_tol=1e-15)


def test_a_traced_inner_gradient_is_a_function_like_any_other():
    # the Hessian's first row by a gradient tape of a traced inner gradient (symbolic over symbolic)
    G = tape.trace(lambda x: tape.grad(f)(x)[0], X)
    row = G.grad_function()
    np.testing.assert_allclose(row(X), H[0], rtol=1e-13)
    np.testing.assert_allclose(G.hessian(X), row.jacobian(X), rtol=1e-12, atol=1e-12)  # two routes to d3 f


def test_jacobian_and_hessian_on_vars_say_what_to_use():
    with pytest.raises(TypeError, match="tape.jacobian of Vars"):
        tape.grad(lambda x: tape.jacobian(f)(x)[0][0])(X)


@pytest.mark.parametrize("seed", range(6))
def test_the_four_pairings_on_random_programs(seed):
    rng = np.random.default_rng(seed)
    ops = [tape.sin, tape.tanh, lambda u: u * u, lambda u: tape.exp(0.3 * u), lambda u: tape.sqrt(u * u + 1.0),
           lambda u: tape.maximum(u, 0.2), abs]
    steps = [(ops[int(rng.integers(len(ops)))], int(rng.integers(2)), float(rng.normal())) for _ in range(8)]

    def g(x):
        y = x[0] * x[1]
        for op, k, c in steps:
            y = op(y + c * x[k]) + x[1 - k] * y
        return y

    x, v, u = rng.normal(0, 0.5, (3, 2)).tolist()
    Hg = np.array(tape.hessian(g)(x))
    np.testing.assert_allclose(np.array(tape.jacobian(tape.grad(g))(x)), Hg, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tape.jvp(tape.grad(g), (x,), (v,))[1], Hg @ v, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tape.grad(lambda x: tape.jvp(g, (x,), (v,))[1])(x), Hg @ v, rtol=1e-10, atol=1e-10)
    both = tape.jvp(lambda x: tape.jvp(g, (x,), (v,))[1], (x,), (u,))[1]
    assert math.isclose(both, np.array(u) @ Hg @ np.array(v), rel_tol=1e-10, abs_tol=1e-10)
